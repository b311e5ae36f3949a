"""Kneser-Ney on the suffix tree (``suffixlm.backoff.kn_tree``) and the log-linear model at
unbounded order (``LogLinearLM(order=None)``): against a brute-force interpolated KN that
runs every context back to its sentence start, against the n-gram estimator at finite
orders, the collapsed-edge closed forms against the expanded trie, and the KenLM-shaped
State walk against full rescoring."""

from __future__ import annotations

import math
import warnings
from collections import defaultdict

import numpy as np
import pytest

from suffixlm.corpora import sample_path
from suffixlm.corpus import BOS_ID, EOS_ID, UNK_ID, Corpus, load_training_corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.backoff.kn_tree import UNBOUNDED_OWN_ORDERS, depth_discounts, estimate_tree_kn
from suffixlm.model import LogLinearLM
from suffixlm.suffixtree import SuffixTree

pytestmark = pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")
TINY = str(sample_path("tiny_lm.train.txt"))
TINY_TEST = str(sample_path("tiny_lm.test.txt"))


def random_corpus(rng, n_sent=40, vocab=5, max_len=9, repeat=0.3):
    """Sentences over a small vocabulary, some repeated whole or in part (long shared
    contexts: collapsed edges many words long)."""
    words = [f"w{i}" for i in range(vocab)]
    sents = []
    for _ in range(n_sent):
        if sents and rng.random() < repeat:
            base = sents[rng.integers(len(sents))].split()
            cut = int(rng.integers(1, len(base) + 1))
            extra = [words[i] for i in rng.integers(0, vocab, size=int(rng.integers(0, 3)))]
            sents.append(" ".join(base[:cut] + extra))
        else:
            n = int(rng.integers(1, max_len + 1))
            sents.append(" ".join(words[i] for i in rng.integers(0, vocab, size=n)))
    return sents


class BruteKN:
    """Interpolated modified KN written from the definitions, over explicit n-gram tuples:
    every n-gram of every order of ``<s> w1 .. wn </s>``; raw counts for the n-grams of
    the highest order N (None: unbounded, so none) and those starting with ``<s>``,
    continuation counts for the rest; discounts per order by ``depth_discounts`` from
    the counts-of-counts counted here (at unbounded order, orders beyond
    ``UNBOUNDED_OWN_ORDERS`` sharing the last of them)."""

    def __init__(self, corpus: Corpus, order: int | None):
        self.V = len(corpus.vocab) - 1  # every word but <s> can be predicted (open vocabulary)
        raw: dict[tuple, int] = defaultdict(int)
        for s in range(corpus.n_sentences):
            toks = tuple(int(x) for x in corpus.tokens[corpus.offsets[s]:corpus.offsets[s + 1]])
            for i in range(1, len(toks)):
                lo = 0 if order is None else max(0, i - order + 1)
                for a in range(lo, i + 1):
                    raw[toks[a:i + 1]] += 1
        left = defaultdict(set)
        for g in raw:
            if len(g) > 1:
                left[g[1:]].add(g[0])
        self.count = {}
        for g, c in raw.items():
            top = order is not None and len(g) == order
            self.count[g] = c if (top or g[0] == BOS_ID) else len(left[g])
        n_orders = max(len(g) for g in raw)
        coc = np.zeros((n_orders, 5), dtype=np.int64)
        for g, c in self.count.items():
            if 1 <= c <= 4:
                coc[len(g) - 1, c] += 1
        self.coc = coc
        self.disc, _ = depth_discounts(coc, own_orders=UNBOUNDED_OWN_ORDERS if order is None else None)
        self.succ = defaultdict(dict)
        for g, c in self.count.items():
            self.succ[g[:-1]][g[-1]] = c

    def prob(self, context: tuple, w: int) -> float:
        """P(w | context), context oldest word first."""
        lower = 1.0 / self.V if not context else self.prob(context[1:], w)
        succ = self.succ.get(context)
        if not succ:
            return lower
        d = self.disc[len(context)]
        total = sum(succ.values())
        nk = [sum(1 for c in succ.values() if c == 1), sum(1 for c in succ.values() if c == 2),
              sum(1 for c in succ.values() if c >= 3)]
        gamma = (d[0] * nk[0] + d[1] * nk[1] + d[2] * nk[2]) / total
        c = succ.get(w, 0)
        own = (c - d[min(c, 3) - 1]) / total if c else 0.0
        return own + gamma * lower


def _tree_model(order):
    """w = 0 (the model is its base) with the base computed on the collapsed tree, as at
    unbounded order, also at a finite order (whose models otherwise read KN on the trie)."""
    lm = LogLinearLM(order=order, base="kn", lam=1e6, max_iter=2)
    lm._on_trie = lambda: False
    return lm


def _positions(corpus: Corpus, order: int | None):
    for s in range(corpus.n_sentences):
        toks = tuple(int(x) for x in corpus.tokens[corpus.offsets[s]:corpus.offsets[s + 1]])
        for i in range(1, len(toks)):
            lo = 0 if order is None else max(0, i - order + 1)
            yield toks[lo:i], toks[i]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("order", [None, 2, 4])
def test_tree_kn_equals_brute_force(seed, order):
    """Every probability of held-out text (contexts that end inside edges, unseen words
    and contexts) under the collapsed tree's KN equals the brute-force KN's."""
    rng = np.random.default_rng(seed)
    train = Corpus.from_strings(random_corpus(rng), unk=True)
    test = Corpus.from_strings(random_corpus(rng, n_sent=15, vocab=6), train.vocab)
    ref = BruteKN(train, order)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = _tree_model(order).fit(train)
    assert not np.any(lm.weights_)  # w = 0: the model is its base, KN
    if order is None:
        assert lm.tree_.max_depth == int(np.diff(train.offsets).max()) - 1
        assert lm.base_.on_edges and np.any(lm.tree_.collapsed > 1)
    got = lm.log10_probs(test)
    want = [math.log10(ref.prob(h, w)) for h, w in _positions(test, order)]
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-10)


@pytest.mark.parametrize("N", [2, 3, 4, 5, 6])
def test_tree_kn_at_finite_order_is_srilms(N):
    """At a finite order the tree's KN has the n-gram estimator's discounts exactly and its
    probabilities up to the estimator's single precision (SRILM's)."""
    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    kn = KneserNeyLM(N, min_counts=[1]).fit(corpus)
    tk = estimate_tree_kn(SuffixTree.build(corpus, N - 1), corpus.vocab)
    np.testing.assert_array_equal(tk.discounts[:N], np.array(kn.info_["discounts"]))
    lm = _tree_model(N).fit(corpus)
    assert lm.base_.on_edges
    np.testing.assert_allclose(lm.log10_probs(test), kn.log10_probs(test), rtol=0, atol=2e-6)


def test_unbounded_equals_longest_sentence_order():
    """order=None is order = the longest sentence's tokens: the same tree and base, with
    SRILM's discounts for orders 1 .. UNBOUNDED_OWN_ORDERS and the last of them beyond;
    with SRILM's at every order the same tree is SRILM's model of that order."""
    from suffixlm.base_measure import kneser_ney_tree_base

    corpus = load_training_corpus(TINY, unk=True)
    N = int(np.diff(corpus.offsets).max())
    U = UNBOUNDED_OWN_ORDERS
    tree = SuffixTree.build(corpus, N - 1, method="ukkonen")
    a = estimate_tree_kn(tree, corpus.vocab, own_orders=U)
    b = estimate_tree_kn(SuffixTree.build(corpus, N + 5, method="sort"), corpus.vocab, own_orders=U)
    np.testing.assert_array_equal(a.p, b.p)
    np.testing.assert_array_equal(a.chain, b.chain)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = KneserNeyLM(N, min_counts=[1]).fit(corpus)
        lm = LogLinearLM(order=None, base="kn", lam=1e6, max_iter=2).fit(corpus)
    srilm = np.array(ref.info_["discounts"])
    assert srilm.shape[0] > U and np.any(srilm[U:] != srilm[U - 1])  # the rule changes something here
    np.testing.assert_array_equal(a.discounts[:U], srilm[:U])
    np.testing.assert_array_equal(a.discounts[U:], np.broadcast_to(srilm[U - 1], a.discounts[U:].shape))
    np.testing.assert_array_equal(lm.base_.lnB, kneser_ney_tree_base(tree, corpus.vocab, lm.n_unseen_, kn=a).lnB)
    full = estimate_tree_kn(tree, corpus.vocab)
    np.testing.assert_array_equal(full.discounts[:N], srilm)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.testing.assert_allclose(_tree_model(N).fit(corpus).log10_probs(test), ref.log10_probs(test), rtol=0,
                                   atol=2e-6)


def test_own_orders_apply_on_the_fallback_of_a_tiny_text():
    """A text whose order 1 has no SRILM discounts (each order its own fallback): the
    orders beyond ``own_orders`` still take the last own order's discounts."""
    tiny = np.array([[0, 0, 0, 0, 0], [0, 40, 15, 8, 4], [0, 30, 20, 10, 5], [0, 20, 5, 2, 1]])
    d3, shared3 = depth_discounts(tiny, own_orders=2)
    assert shared3 == 3 and np.all(d3[2:] == d3[1])
    assert not np.all(depth_discounts(tiny)[0][2] == d3[1])


@pytest.mark.parametrize("seed", range(4))
def test_closed_forms_equal_the_expanded_trie(seed):
    """The per-edge closed forms (collapsed tree) against the same estimator on the trie,
    where every edge is one word: equal probabilities at every trie node's deepest
    context, and equal weights multiplied along each edge."""
    rng = np.random.default_rng(100 + seed)
    corpus = Corpus.from_strings(random_corpus(rng, n_sent=60), unk=True)
    m = int(np.diff(corpus.offsets).max()) - 1
    tree = SuffixTree.build(corpus, m)
    trie = SuffixTree.build(corpus, m, collapse=False)
    a = estimate_tree_kn(tree, corpus.vocab)
    b = estimate_tree_kn(trie, corpus.vocab)
    np.testing.assert_array_equal(a.coc, b.coc)
    np.testing.assert_array_equal(a.discounts, b.discounts)
    # each tree node is the deepest trie node of its chain: same params, same values
    of = trie.tree_node_of
    bottom = np.flatnonzero(trie.depth == tree.depth[of])
    assert len(bottom) == tree.n_nodes
    order = np.argsort(of[bottom])
    bottom = bottom[order]
    for j, t in zip(range(tree.n_nodes), bottom):
        pa = a.p[tree.succ_offsets[j]:tree.succ_offsets[j + 1]]
        pb = b.p[trie.succ_offsets[t]:trie.succ_offsets[t + 1]]
        np.testing.assert_allclose(pa, pb, rtol=1e-12, atol=0)
        # the chain's weights: the trie's weights of the same contexts multiplied
        prod, u = 1.0, t
        for _ in range(tree.collapsed[j]):
            prod *= b.gamma[u]
            u = trie.parent[u]
        assert math.isclose(a.chain[j], prod, rel_tol=1e-12), j


def test_shared_discounts_beyond_the_first_unreliable_order():
    coc = np.array([[0, 50, 20, 10, 5], [0, 40, 15, 8, 4], [0, 30, 5, 0, 1], [0, 20, 5, 2, 1]])
    d, shared = depth_discounts(coc)
    assert shared == 3
    np.testing.assert_array_equal(d[2], d[1])
    np.testing.assert_array_equal(d[3], d[1])  # shared even where the order's own would exist


def test_unbounded_model_round_trip_and_state_walk(tmp_path):
    """A fitted model at order max (signed weights, KN base on the collapsed tree): saved
    and loaded, the same scores; the KenLM State walk word by word equals full scoring,
    with contexts that end inside edges."""
    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = LogLinearLM(order=None, base="kn", positive=False, max_iter=30).fit(corpus)
    assert np.any(lm.weights_ < 0) and np.any(lm.weights_ > 0)
    path = tmp_path / "m.lm"
    lm.save(path)
    back = LogLinearLM.load(path)
    assert back.order is None and back.order_ == lm.order_
    a = lm.log10_probs(test)
    np.testing.assert_array_equal(back.log10_probs(test), a)
    # the State walk: BeginSentenceWrite, then BaseScore word by word
    from suffixlm import Model
    from suffixlm.query import State

    model = Model(str(path))
    got = []
    for s in range(test.n_sentences):
        words = [test.vocab.words[int(x)] for x in test.tokens[test.offsets[s] + 1:test.offsets[s + 1]]]
        state, out = State(), State()
        model.BeginSentenceWrite(state)
        for word in words:
            got.append(model.BaseScore(state, word, out))
            state, out = out, state
    np.testing.assert_allclose(got, a, rtol=0, atol=1e-9)


def test_unbounded_model_file_checks_its_discounts(tmp_path):
    """A tampered ln_d1_cum (a D1 above 1) is refused by the loader, naming the field."""
    import zipfile

    from suffixlm.model import ModelFormatError

    corpus = load_training_corpus(TINY, unk=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = LogLinearLM(order=None, base="kn", max_iter=3).fit(corpus)
    path = tmp_path / "m.lm"
    lm.save(path)
    bad = tmp_path / "bad.lm"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info.filename)
            if info.filename == "base.ln_d1_cum.npy":
                import io

                arr = np.load(io.BytesIO(data))
                arr[2] = arr[1] + 0.5
                buf = io.BytesIO()
                np.save(buf, arr)
                data = buf.getvalue()
            zout.writestr(info, data)
    with pytest.raises(ModelFormatError, match="ln_d1_cum"):
        LogLinearLM.load(bad)


def test_vocabulary_ids_used_by_the_brute_force_reference():
    """The reference assumes <s> = BOS_ID opens every sentence and an open vocabulary."""
    c = Corpus.from_strings(["a b"], unk=True)
    assert c.tokens[0] == BOS_ID and c.tokens[-1] == EOS_ID and c.vocab.has_unk and UNK_ID < len(c.vocab)


@pytest.mark.parametrize("positive", [True, False])
def test_unbounded_model_exports_an_equivalent_arpa_file(tmp_path, positive):
    """The ARPA file of an unbounded model (order = its deepest context + 1, the base's
    closed form expanded inside every edge) scores held-out text as the model does, to
    the file's precision."""
    from suffixlm.backoff.arpa import BackoffLM

    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = LogLinearLM(order=None, base="kn", positive=positive, max_iter=30).fit(corpus)
    path = tmp_path / "m.arpa"
    lm.write_arpa(path)
    bo = BackoffLM.read_arpa(path)
    assert bo.order == int(lm.tree_.depth.max()) + 1
    np.testing.assert_allclose(bo.log10_probs(test), lm.log10_probs(test), rtol=0, atol=2e-6)


@pytest.mark.parametrize("kw", [{"min_coc": 30}, {"own_orders": 2}])
def test_a_threshold_or_own_orders_share_discounts_earlier(kw):
    """A count-of-counts threshold, or ``own_orders``: the orders from the first one left
    out take the order before's discounts, also where SRILM's rule gives them their own."""
    coc = np.array([[0, 500, 200, 100, 50], [0, 400, 150, 80, 40], [0, 300, 50, 20, 10], [0, 200, 50, 20, 9]])
    d, shared = depth_discounts(coc)
    assert shared is None
    d2, shared2 = depth_discounts(coc, **kw)
    assert shared2 == 3
    np.testing.assert_array_equal(d2[:2], d[:2])
    np.testing.assert_array_equal(d2[2], d[1])
    np.testing.assert_array_equal(d2[3], d[1])


def test_l2_tree_at_unbounded_order_is_refused_up_front():
    corpus = load_training_corpus(TINY, unk=True)
    with pytest.raises(ValueError, match="l2-tree.*unbounded order"):
        LogLinearLM(order=None, penalty="l2-tree").fit(corpus)


@pytest.mark.parametrize("kw", [{"base": "none"}, {"base": "none", "penalty": "l1", "alpha": 1.5},
                                {"base": "kn", "penalty": "l2sq"}])
def test_other_models_at_unbounded_order_live_on_the_collapsed_tree(tmp_path, kw):
    """The paper's model (no base), depth-weighted l1 and l2sq at order max: trained on the
    collapsed tree, saved and loaded with the same scores."""
    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    lm = LogLinearLM(order=None, max_iter=20, **kw).fit(corpus)
    assert np.any(lm.tree_.collapsed > 1)
    lm.save(tmp_path / "m.lm")
    np.testing.assert_array_equal(LogLinearLM.load(tmp_path / "m.lm").log10_probs(test), lm.log10_probs(test))
    assert np.all(np.isfinite(lm.log10_probs(test)))


def test_unbounded_model_from_cluster_counts_equals_the_single_process_one(killable_client):
    """``fit(path, client=)`` at order max: the order is the text's longest line + 2, the
    events' tree is the text's, and the model the same (the KN base computed on the
    events' tree)."""
    kw = dict(order=None, base="kn", positive=False, max_iter=25)
    ref = LogLinearLM(**kw).fit(TINY)  # the same vocabulary as the cluster's (the path's default)
    got = LogLinearLM(**kw).fit(TINY, client=killable_client)
    assert got.tree_.max_depth == ref.tree_.max_depth
    np.testing.assert_array_equal(got.tree_.succ_counts, ref.tree_.succ_counts)
    np.testing.assert_allclose(got.weights_, ref.weights_, rtol=0, atol=1e-9)


def test_an_unbounded_model_mixes():
    """A mixture with an unbounded model scores as the weighted sum of its parts, and its
    order is the fitted one (one more than the training text's longest context)."""
    from suffixlm.backoff.mix import MixtureLM

    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = LogLinearLM(order=None, base="kn", positive=False, max_iter=20).fit(corpus)
        b = LogLinearLM(order=3, max_iter=20).fit(corpus)
    mix = MixtureLM([a, b], [0.3, 0.7])
    assert mix.order == a.order_ == int(np.diff(corpus.offsets).max())
    want = np.log10(0.3 * 10 ** a.log10_probs(test) + 0.7 * 10 ** b.log10_probs(test))
    np.testing.assert_allclose(mix.log10_probs(test), want, rtol=0, atol=1e-9)


def test_unbounded_default_trains_leave_one_out_events():
    """loo=None: UNBOUNDED_LOO at unbounded order with the KN base and FISTA, else 0; the
    default fit is the fit with that weight given, and differs from the one without."""
    from suffixlm.model import UNBOUNDED_LOO

    assert UNBOUNDED_LOO > 0
    assert LogLinearLM(order=None, base="kn").loo_ == UNBOUNDED_LOO
    for kw in ({"order": 5, "base": "kn"}, {"order": None}, {"order": None, "base": "kn", "solver": "sage"},
               {"order": None, "base": "kn", "loo": 0}):
        assert LogLinearLM(**kw).loo_ == 0.0, kw
    corpus = load_training_corpus(TINY, unk=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = LogLinearLM(order=None, base="kn", positive=False, max_iter=20).fit(corpus)
        b = LogLinearLM(order=None, base="kn", positive=False, max_iter=20, loo=UNBOUNDED_LOO).fit(corpus)
        c = LogLinearLM(order=None, base="kn", positive=False, max_iter=20, loo=0).fit(corpus)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert not np.array_equal(a.weights_, c.weights_)
