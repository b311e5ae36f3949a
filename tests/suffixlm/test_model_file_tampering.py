"""Log-linear model files tampered with one field at a time.

Every tampered file here is otherwise well formed: the arrays and the header are
written back with ``suffixlm.io.save_container``, as an attacker would (a model file
has no checksum to recompute; the zip's CRCs are rewritten). The loader must refuse
each with ``ModelFormatError`` naming the file and the field; the untampered file,
rewritten the same way, loads and scores exactly as the model that was saved.
"""

import json
import re
import warnings

import numpy as np
import pytest

from suffixlm.corpus import Corpus
from suffixlm.events import context_events
from suffixlm.io import save_container
from suffixlm.backoff.kn import DiscountWarning
from suffixlm.model import FORMAT, LogLinearLM, ModelFormatError

TRAIN = ["a b a b c", "b a a", "c c a b", "a b c a b c", "b b", "d a b c a b c d"]
TEST = ["a b b c", "c a x b", "b", "d a b c a b"]


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Five saved models: the suffix tree (linf-tree), the suffix trie (l2-tree) and a
    Kneser-Ney base measure with signed weights (on the trie; an open vocabulary whose
    <unk> is never seen, so the base leaves mass to an unseen word); and the tree and
    the trie built from the text's counted events (``suffixlm.events``: the file stores
    the events and their counts instead of the text)."""
    d = tmp_path_factory.mktemp("models")
    out = {}
    for name, kw in (("tree", {}), ("trie", {"penalty": "l2-tree"}), ("kn", {"base": "kn", "positive": False})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DiscountWarning)  # too few counts for modified KN's three discounts
            lm = LogLinearLM(order=4, lam=1e-3, max_iter=40, **kw).fit(
                Corpus.from_strings(TRAIN, unk=name == "kn"))
        p = d / f"{name}.lm"
        lm.save(p)
        out[name] = (lm, p)
    for name, kw in (("events", {}), ("events-trie", {"penalty": "l2-tree"})):
        lm = LogLinearLM(order=4, lam=1e-3, max_iter=40, **kw).fit(context_events(Corpus.from_strings(TRAIN), 4))
        p = d / f"{name}.lm"
        lm.save(p)
        out[name] = (lm, p)
    assert np.any(out["tree"][0].tree_.collapsed > 1)  # the tree really collapses chains
    return out


def read(path):
    """(arrays, header) of a model file, the header without the container's own entries."""
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k].copy() for k in z.files}
    meta = json.loads(arrays.pop("meta_json").tobytes())
    assert meta.pop("format") == FORMAT
    return arrays, meta, meta.pop("version")


def rewritten(tmp_path, src, edit, name="tampered.lm"):
    arrays, meta, version = read(src)
    edit(arrays, meta)
    out = tmp_path / name
    save_container(out, arrays, meta, FORMAT, version)
    return out


def scores(lm):
    return lm.log10_probs(Corpus.from_strings(TEST, vocab=lm.vocab_))


def assert_refused(tmp_path, src, edit, field):
    """``field``: the text the message must name after the file (a compiled pattern: a regex)."""
    bad = rewritten(tmp_path, src, edit)
    field = field.pattern if isinstance(field, re.Pattern) else re.escape(field)
    with pytest.raises(ModelFormatError, match=re.escape(str(bad)) + ": .*" + field):
        LogLinearLM.load(bad)


@pytest.mark.parametrize("name", ["tree", "trie", "kn", "events", "events-trie"])
def test_untampered_file_rewritten_loads_and_scores_identically(models, tmp_path, name):
    lm, p = models[name]
    back = LogLinearLM.load(rewritten(tmp_path, p, lambda a, m: None))
    np.testing.assert_array_equal(scores(back), scores(lm))
    np.testing.assert_array_equal(back.weights_, lm.weights_)
    assert back.score("a b c d") == lm.score("a b c d")
    for k in ("parent", "depth", "collapsed", "children", "succ_words", "succ_counts"):
        np.testing.assert_array_equal(getattr(back.tree_, k), getattr(lm.tree_, k))


# ---------------------------------------------------------------- the suffix tree
def _root_children(a):
    return slice(0, int(a["tree.child_offsets"][1]))


def _node_with_children(a, k=2):
    """A non-root node with at least k children."""
    n_children = np.diff(a["tree.child_offsets"])
    return int(np.flatnonzero((n_children >= k) & (np.arange(len(n_children)) > 0))[0])


def child_listed_under_itself(a, m):
    j = _node_with_children(a, 1)
    a["tree.children"][a["tree.child_offsets"][j]] = j


def child_listed_twice(a, m):
    c = a["tree.children"]
    c[-1] = c[-2]


def root_children_reversed(a, m):
    r = _root_children(a)
    for k in ("tree.children", "tree.child_first_word"):
        a[k][r] = a[k][r][::-1].copy()


def inner_children_reversed(a, m):
    j = _node_with_children(a)
    r = slice(a["tree.child_offsets"][j], a["tree.child_offsets"][j + 1])
    for k in ("tree.children", "tree.child_first_word"):
        a[k][r] = a[k][r][::-1].copy()


def child_first_word_changed(a, m):
    a["tree.child_first_word"][0] += 1


def child_offsets_shifted(a, m):
    a["tree.child_offsets"][1] -= 1


def child_offsets_past_the_end(a, m):
    a["tree.child_offsets"][-1] += 5


def root_collapsed_2(a, m):
    a["tree.collapsed"][0] = 2


def root_depth_1(a, m):
    a["tree.depth"][0] = 1
    a["tree.depth"][1:] += 1


def collapsed_zero(a, m):
    a["tree.collapsed"][-1] = 0


def depth_not_parent_depth_plus_collapsed(a, m):
    a["tree.depth"][-1] += 1


def second_root(a, m):
    a["tree.parent"][-1] = -1


def parent_cycle(a, m):
    a["tree.parent"][1] = len(a["tree.parent"]) - 1


def parent_after_child(a, m):
    a["tree.parent"][1] = 2


def context_position_out_of_range(a, m):
    a["tree.context_position"][-1] = len(a["tree.tokens"]) + 5


def context_position_negative(a, m):
    a["tree.context_position"][-1] = -3


def context_position_elsewhere(a, m):
    cp = a["tree.context_position"]
    cp[-1] = cp[np.flatnonzero(cp != cp[-1])[-1]]  # another prediction's position


def succ_offsets_not_monotone(a, m):
    o = a["tree.succ_offsets"]
    o[1], o[2] = o[2], o[1]


def succ_offsets_past_the_end(a, m):
    a["tree.succ_offsets"][-1] += 1


def succ_words_unsorted(a, m):
    o = a["tree.succ_offsets"]
    w = a["tree.succ_words"]
    w[o[0]], w[o[0] + 1] = w[o[0] + 1], w[o[0]]


def succ_words_outside_vocabulary(a, m):
    a["tree.succ_words"][-1] = m["vocab_size"] + 10


def succ_counts_zero(a, m):
    a["tree.succ_counts"][-1] = 0


def succ_counts_changed(a, m):
    a["tree.succ_counts"][0] += 1


def count_changed(a, m):
    a["tree.count"][0] += 1


def children_truncated(a, m):
    a["tree.children"] = a["tree.children"][:-1].copy()
    a["tree.child_first_word"] = a["tree.child_first_word"][:-1].copy()


TREE_EDITS = [
    (child_listed_under_itself, "tree.children"),
    (child_listed_twice, "tree.children"),
    (root_children_reversed, "tree.children"),
    (inner_children_reversed, "tree.children"),
    (child_first_word_changed, "tree.child_first_word"),
    (child_offsets_shifted, "tree.child_offsets"),
    (child_offsets_past_the_end, "tree.child_offsets"),
    (root_collapsed_2, "tree.collapsed"),
    (root_depth_1, "tree.depth"),
    (collapsed_zero, "tree.collapsed"),
    (depth_not_parent_depth_plus_collapsed, "tree.depth"),
    (second_root, "tree.parent"),
    (parent_cycle, "tree.parent"),
    (parent_after_child, "tree.parent"),
    (context_position_out_of_range, "tree.context_position"),
    (context_position_negative, "tree.context_position"),
    (context_position_elsewhere, "tree.context_position"),
    (succ_offsets_not_monotone, "tree.succ_offsets"),
    (succ_offsets_past_the_end, "tree.succ_offsets"),
    (succ_words_unsorted, "tree.succ_words"),
    (succ_words_outside_vocabulary, "tree.succ_words"),
    (succ_counts_zero, "tree.succ_counts"),
    (succ_counts_changed, "tree.succ_counts"),
    (count_changed, "tree.count"),
    (children_truncated, "tree.children"),
]


@pytest.mark.parametrize("name", ["tree", "trie", "events", "events-trie"])
@pytest.mark.parametrize("edit, field", TREE_EDITS, ids=[e.__name__ for e, _ in TREE_EDITS])
def test_tampered_tree_is_refused(models, tmp_path, name, edit, field):
    assert_refused(tmp_path, models[name][1], edit, field + ":")


def tokens_outside_vocabulary(a, m):
    a["tree.tokens"][3] = m["vocab_size"]


def tokens_negative(a, m):
    a["tree.tokens"][3] = -1


def token_changed(a, m):
    t = a["tree.tokens"]
    t[2] = 3 if t[2] != 3 else 4  # an interior word of the first sentence, in the vocabulary


def sentence_without_bos(a, m):
    a["tree.tokens"][0] = 3


def sentence_without_eos(a, m):
    a["tree.tokens"][a["tree.offsets"][1] - 1] = 3


def offsets_short_of_the_tokens(a, m):
    a["tree.offsets"][-1] -= 1


def offsets_decreasing(a, m):
    o = a["tree.offsets"]
    o[1], o[2] = o[2], o[1]


def offsets_empty_sentence(a, m):
    o = a["tree.offsets"]
    o[1] = o[0] + 1


def max_depth_huge(a, m):
    a["tree.max_depth"] = np.array(10**12, dtype=np.int64)


def max_depth_negative(a, m):
    a["tree.max_depth"] = np.array(-1, dtype=np.int64)


def max_depth_and_order_lowered(a, m):
    a["tree.max_depth"] = a["tree.max_depth"] - 1
    m["order"] -= 1


def max_depth_not_order(a, m):
    a["tree.max_depth"] = a["tree.max_depth"] + 1


def parent_as_float(a, m):
    a["tree.parent"] = a["tree.parent"].astype(np.float64)


def tree_member_missing(a, m):
    del a["tree.succ_counts"]


TEXT_EDITS = [
    (tokens_outside_vocabulary, "tree.tokens"),
    (tokens_negative, "tree.tokens"),
    (token_changed, re.compile(r"tree\.\w+: .*\(tree\.tokens")),
    (sentence_without_bos, "tree.tokens"),
    (sentence_without_eos, "tree.tokens"),
    (offsets_short_of_the_tokens, "tree.offsets"),
    (offsets_decreasing, "tree.offsets"),
    (offsets_empty_sentence, "tree.offsets"),
    (max_depth_huge, "tree.max_depth"),
    (max_depth_negative, "tree.max_depth"),
    (max_depth_and_order_lowered, re.compile(r"tree\.\w+: .*tree\.max_depth")),
    (max_depth_not_order, "tree.max_depth"),
    (parent_as_float, "tree.parent"),
    (tree_member_missing, "tree.succ_counts"),
]


@pytest.mark.parametrize("edit, field", TEXT_EDITS, ids=[e.__name__ for e, _ in TEXT_EDITS])
def test_tampered_training_text_or_depth_is_refused(models, tmp_path, edit, field):
    assert_refused(tmp_path, models["tree"][1], edit, field)


def test_tree_and_trie_must_be_the_ones_the_penalty_trains_on(models, tmp_path):
    # a tree model whose header asks for the trie, and a trie model whose header asks for the tree
    assert_refused(tmp_path, models["tree"][1], lambda a, m: m.update(penalty="l2-tree"), "tree.")
    assert_refused(tmp_path, models["trie"][1], lambda a, m: m.update(penalty="linf-tree"), "tree.")


# ---------------------------------------------------------------- weights, vocabulary, header
def weight_nan(a, m):
    a["weights"][0] = np.nan


def weight_inf(a, m):
    a["weights"][-1] = np.inf


def weight_negative(a, m):
    a["weights"][0] = -1.0


def weights_short(a, m):
    a["weights"] = a["weights"][:-1].copy()


def _vocab(a, words):
    a["vocab_utf8"] = np.frombuffer("\n".join(words).encode("utf-8"), dtype=np.uint8).copy()


def _words(a):
    return a["vocab_utf8"].tobytes().decode("utf-8").split("\n")


def vocab_duplicate_word(a, m):
    w = _words(a)
    _vocab(a, w[:-1] + [w[3]])


def vocab_empty_word(a, m):
    w = _words(a)
    _vocab(a, w[:-1] + [""])


def vocab_word_with_space(a, m):
    w = _words(a)
    _vocab(a, w[:-1] + ["x y"])


def vocab_without_specials(a, m):
    w = _words(a)
    _vocab(a, w[1:] + ["<s>"])


def vocab_not_utf8(a, m):
    a["vocab_utf8"] = np.concatenate([a["vocab_utf8"], np.array([10, 0xFF], dtype=np.uint8)])


def vocab_extra_word(a, m):
    _vocab(a, _words(a) + ["zzz"])


def vocab_extra_word_and_size(a, m):
    _vocab(a, _words(a) + ["zzz"])
    m["vocab_size"] += 1  # one more unseen word: n_unseen no longer matches


HEADER_EDITS = [
    (weight_nan, "weights"),
    (weight_inf, "weights"),
    (weight_negative, "weights"),
    (weights_short, "weights"),
    (vocab_duplicate_word, "vocab_utf8"),
    (vocab_empty_word, "vocab_utf8"),
    (vocab_word_with_space, "vocab_utf8"),
    (vocab_without_specials, "vocab_utf8"),
    (vocab_not_utf8, "vocab_utf8"),
    (vocab_extra_word, "'vocab_size'"),
    (vocab_extra_word_and_size, re.compile("'n_unseen'|vocab_utf8: word 7 .* is never seen")),
    (lambda a, m: m.update(vocab_order="sorted"), "'vocab_order'"),
    (lambda a, m: m.update(order=0), "'order'"),
    (lambda a, m: m.update(order="4"), "'order'"),
    (lambda a, m: m.update(order=4.0), "'order'"),
    (lambda a, m: m.update(order=True), "'order'"),
    (lambda a, m: m.update(order=10**9), "'order'"),
    (lambda a, m: m.update(penalty="l0"), "'penalty'"),
    (lambda a, m: m.update(lam=-1.0), "'lam'"),
    (lambda a, m: m.update(lam=float("nan")), "'lam'"),
    (lambda a, m: m.update(alpha=-0.5), "'alpha'"),
    (lambda a, m: m.update(has_unk="yes"), "'has_unk'"),
    (lambda a, m: m.update(has_unk=not m["has_unk"]), "'n_unseen'"),
    (lambda a, m: m.update(vocab_size=m["vocab_size"] + 1), "'vocab_size'"),
    (lambda a, m: m.update(n_unseen=m["n_unseen"] + 1), "'n_unseen'"),
    (lambda a, m: m.update(n_unseen=-1.0), "'n_unseen'"),
    (lambda a, m: m.update(n_params=m["n_params"] + 1), "'n_params'"),
    (lambda a, m: m.update(objective="low"), "'objective'"),
    (lambda a, m: m.update(base="kenlm"), "'base'"),
    (lambda a, m: m.update(positive=1), "'positive'"),
    (lambda a, m: m.update(base_u0=m["base_u0"] + 1), "'base_u0'"),
    (lambda a, m: m.update(base_ln_unseen=1.0), "'base_ln_unseen'"),
    (lambda a, m: m.update(extra=1), "unexpected entry 'extra'"),
    (lambda a, m: m.pop("lam"), "missing entry 'lam'"),
]


@pytest.mark.parametrize("edit, field", HEADER_EDITS, ids=[f"{i}-{f}" for i, (_, f) in enumerate(HEADER_EDITS)])
def test_tampered_weights_vocabulary_or_header_is_refused(models, tmp_path, edit, field):
    assert_refused(tmp_path, models["tree"][1], edit, field)


def test_signed_weights_need_the_header_to_say_so(models, tmp_path):
    lm, p = models["kn"]
    assert np.any(lm.weights_ < 0)  # a signed model: its negative weights load
    assert_refused(tmp_path, p, lambda a, m: m.update(positive=True), re.compile("weights: .*negative"))


# ---------------------------------------------------------------- the base measure
def _deepest_path(a):
    """Nodes from the root to a deepest node."""
    parent, depth = a["tree.parent"], a["tree.depth"]
    j = int(np.argmax(depth))
    path = []
    while j >= 0:
        path.append(j)
        j = int(parent[j])
    return path[::-1]


def gamma_overflow(a, m):
    for j in _deepest_path(a)[1:]:
        a["base.gamma"][j] = 1e300


def gamma_underflow(a, m):
    for j in _deepest_path(a)[1:]:
        a["base.gamma"][j] = 1e-300


BASE_EDITS = [
    (lambda a, m: a["base.lnB"].__setitem__(0, np.nan), "base.lnB"),
    (lambda a, m: a["base.lnB"].__setitem__(0, 0.5), "base.lnB"),
    (lambda a, m: a.update({"base.lnB": a["base.lnB"][:-1].copy()}), "base.lnB"),
    (lambda a, m: a["base.gamma"].__setitem__(1, 0.0), "base.gamma"),
    (lambda a, m: a["base.gamma"].__setitem__(1, -1.0), "base.gamma"),
    (lambda a, m: a["base.gamma"].__setitem__(1, np.inf), "base.gamma"),
    (lambda a, m: a.update({"base.gamma": a["base.gamma"][:-1].copy()}), "base.gamma"),
    (gamma_overflow, "base.gamma"),
    (gamma_underflow, "base.gamma"),
    (lambda a, m: a["base.lnB"].__setitem__(0, a["base.lnB"][0] - 1.0), "'base_u0'"),
    (lambda a, m: m.update(base_u0=m["base_u0"] + 0.01), "'base_u0'"),
    (lambda a, m: m.update(base_ln_unseen=m["base_ln_unseen"] - 1.0), "'base_ln_unseen'"),
    (lambda a, m: m.pop("base_u0"), "needs 'base_u0'"),
    (lambda a, m: a.pop("base.gamma"), "missing member 'base.gamma'"),
]


@pytest.mark.parametrize("edit, field", BASE_EDITS, ids=[f"{i}-{f}" for i, (_, f) in enumerate(BASE_EDITS)])
def test_tampered_base_measure_is_refused(models, tmp_path, edit, field):
    lm, p = models["kn"]
    assert lm.n_unseen_ > 0  # so u0 and ln_unseen are both derived from the root's lnB
    assert_refused(tmp_path, p, edit, field)


def test_a_model_without_base_measure_holds_no_base_arrays(models, tmp_path):
    assert_refused(tmp_path, models["tree"][1],
                   lambda a, m: a.update({"base.lnB": np.zeros(3), "base.gamma": np.ones(3)}), "unexpected member")


# ---------------------------------------------------------------- a model built from counted events
def _events(a):
    o = a["tree.offsets"]
    return [a["tree.tokens"][o[k]:o[k + 1]] for k in range(len(o) - 1)]


def _two_events_of_one_length(a):
    lens = np.diff(a["tree.offsets"])
    k = int(np.flatnonzero(lens == lens.max())[0])
    return k, int(np.flatnonzero(lens == lens.max())[1])


def event_count_changed(a, m):
    a["tree.event_counts"][0] += 1


def event_count_zero(a, m):
    a["tree.event_counts"][-1] = 0


def event_count_huge(a, m):
    a["tree.event_counts"][-1] = 2**62


def events_swapped(a, m):
    i, j = _two_events_of_one_length(a)
    o, t = a["tree.offsets"], a["tree.tokens"]
    t[o[i]:o[i + 1]], t[o[j]:o[j + 1]] = t[o[j]:o[j + 1]].copy(), t[o[i]:o[i + 1]].copy()


def event_duplicated(a, m):
    i, j = _two_events_of_one_length(a)
    o, t = a["tree.offsets"], a["tree.tokens"]
    t[o[j]:o[j + 1]] = t[o[i]:o[i + 1]]


def event_predicts_bos(a, m):
    a["tree.tokens"][a["tree.offsets"][1] - 1] = 0


def event_context_holds_eos(a, m):
    o = a["tree.offsets"]
    a["tree.tokens"][o[-1] - 2] = 1


def event_target_changed(a, m):
    t = a["tree.tokens"]
    t[-1] = 3 if t[-1] != 3 else 4


def event_context_too_long_for_the_order(a, m):
    a["tree.max_depth"] = a["tree.max_depth"] - 1
    m["order"] -= 1


def event_counts_missing(a, m):
    del a["tree.event_counts"]


def event_counts_as_float(a, m):
    a["tree.event_counts"] = a["tree.event_counts"].astype(np.float64)


def header_says_text(a, m):
    m["training_text"] = "text"


def header_training_text_unknown(a, m):
    m["training_text"] = "counts"


EVENT_EDITS = [
    (event_count_changed, re.compile(r"tree\.\w+: .*tree\.event_counts")),
    (event_count_zero, "tree.event_counts"),
    (event_count_huge, "tree.event_counts"),
    (events_swapped, "tree.tokens: events not in canonical order"),
    (event_duplicated, "tree.tokens"),
    (event_predicts_bos, "tree.tokens"),
    (event_context_holds_eos, "tree.tokens"),
    (event_target_changed, re.compile(r"tree\.\w+: ")),
    (event_context_too_long_for_the_order, "tree.offsets"),
    (event_counts_missing, "tree.event_counts"),
    (event_counts_as_float, "tree.event_counts"),
    (header_says_text, "tree.event_counts"),
    (header_training_text_unknown, "training_text"),
]


@pytest.mark.parametrize("name", ["events", "events-trie"])
@pytest.mark.parametrize("edit, field", EVENT_EDITS, ids=[e.__name__ for e, _ in EVENT_EDITS])
def test_tampered_events_are_refused(models, tmp_path, name, edit, field):
    assert_refused(tmp_path, models[name][1], edit, field)


def test_text_model_claiming_events_is_refused(models, tmp_path):
    """A model of the text whose header and members say it was built from events: its
    sentences are no events (a context holding </s>, a short one not at <s>...)."""
    def edit(a, m):
        m["training_text"] = "events"
        a["tree.event_counts"] = np.ones(len(a["tree.offsets"]) - 1, dtype=np.int64)

    assert_refused(tmp_path, models["tree"][1], edit, "tree.")


def test_events_model_scores_as_the_text_model(models):
    """The same text, as events: the loaded files score alike (to rounding: the same weights)."""
    for a, b in (("tree", "events"), ("trie", "events-trie")):
        la, lb = LogLinearLM.load(models[a][1]), LogLinearLM.load(models[b][1])
        np.testing.assert_allclose(scores(lb), scores(la), rtol=0, atol=1e-9)


def test_vocabulary_out_of_count_order_is_refused(tmp_path):
    """A vocabulary built from the training text is in the order of its counts (ties in
    code-point order): the file says so (``vocab_order``), and words of equal counts
    swapped are refused (issue 24, item 6)."""
    lm = LogLinearLM(order=2, lam=1e-3, max_iter=20).fit(Corpus.from_strings(["a b c", "b a c", "c"]))
    src = tmp_path / "m.lm"
    lm.save(src)
    arrays, meta, _ = read(src)
    assert meta["vocab_order"] == "counts" and _words(arrays)[3:] == ["c", "a", "b"]
    assert_refused(tmp_path, src, lambda a, m: _vocab(a, _words(a)[:4] + ["b", "a"]), "vocab_utf8: words 4 and 5")
    # a vocabulary given by the user (a vocabulary file) keeps its order: no claim, no check
    from suffixlm.corpus import Vocabulary

    given = Vocabulary(["<s>", "</s>", "<unk>", "b", "a", "c"])
    lm2 = LogLinearLM(order=2, lam=1e-3, max_iter=20).fit(Corpus.from_sentences([["a", "b", "c"], ["c"]], given))
    lm2.save(tmp_path / "given.lm")
    assert "vocab_order" not in read(tmp_path / "given.lm")[1]
    assert LogLinearLM.load(tmp_path / "given.lm").vocab_.words == given.words
