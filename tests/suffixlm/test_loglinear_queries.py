"""A log-linear model's KenLM queries in compiled code: the next-word distribution in one
pass (``_lm_kernels.score_all_words``) is what ``BaseScore`` gives every word, and a
sentence in one call (``_lm_kernels.kenlm_sentence``) is ``kenlm_step`` word after word,
bit for bit, on the suffix trie and on the collapsed tree at unbounded order (contexts
that end inside an edge), with and without a base measure and ``<unk>``."""

from __future__ import annotations

import random

import numpy as np
import pytest

from suffixlm.corpus import Corpus
from suffixlm.io import split_words
from suffixlm.model import LogLinearLM
from suffixlm.query import KenLMInterface, State

from .test_kenlm_api import TRAIN, _walks, thread_counts


def _random_text(seed, n=60, vocab=9):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    return [" ".join(rng.choice(words[:rng.randrange(2, vocab)]) for _ in range(rng.randrange(1, 12)))
            for _ in range(n)]


CASES = {
    "order 1": dict(order=1, lam=0.02, max_iter=40),
    "order 2, kn base": dict(order=2, lam=0.02, max_iter=40, base="kn"),
    "trie, no base": dict(order=3, lam=0.02, max_iter=60),
    "trie, kn base, signed": dict(order=4, lam=0.01, max_iter=60, base="kn", positive=False),
    "max, no base": dict(order=None, lam=0.01, max_iter=60),
    "max, kn base, signed": dict(order=None, lam=0.005, max_iter=80, base="kn", positive=False),
}


def _fit(case, seed, unk):
    lines = TRAIN + _random_text(seed)
    corpus = Corpus.from_strings(lines, unk=unk) if unk else Corpus.from_strings(lines)
    return lines, LogLinearLM(**CASES[case]).fit(corpus)


@pytest.mark.parametrize("unk", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("seed", [0, 1])
def test_distribution_is_base_score_of_every_word(case, seed, unk):
    lines, m = _fit(case, seed, unk)
    words = list(m.vocab.words) + ["zebra"]
    states, _ = _walks(m, words, n=40, seed=seed)
    long = State()
    m.BeginSentenceWrite(long)
    for w in (lines[3] + " " + lines[7]).split():  # a long history (unbounded order: inside edges)
        nxt = State()
        m.BaseScore(long, w, nxt)
        long = nxt
        states.append(long)
    got = m.distributions(states)
    want = KenLMInterface.distributions(m, states)  # word by word through kenlm_step
    assert got.dtype == np.float32 and got.shape == (len(states), len(m.vocab))
    assert np.array_equal(got, want)
    assert np.array_equal(m.distribution(states[-1]), want[-1])
    # a distribution over the words that can be predicted (not <s>)
    p = 10.0 ** got.astype(np.float64)
    p[:, 0] = 0.0
    if not m.vocab.has_unk:
        p[:, 2] = 0.0
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=1e-5)
    top = m.top_k(states[-1], 3)
    assert [w for w, _ in top][0] == m.vocab.words[int(np.argmax(np.where(p[-1] > 0, got[-1], -np.inf)))]


@pytest.mark.parametrize("unk", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_sentence_in_one_call_is_kenlm_step_word_after_word(case, unk):
    lines, m = _fit(case, 2, unk)
    rng = random.Random(5)
    words = list(m.vocab.words) + ["zebra", "w99"]
    sentences = lines[:30] + ["", "<s>", "w1 <s> w2", "zebra w1 zebra", "</s> w1", " w1\tw2  w3 ", "w1\x0bw2\x0c",
                              "w1\u00a0w2 w1", "w\u00e9 w1", "w1 \ud800 w2", "<unk> w1 <unk>", "w1 w1 w1 w1",
                              "x y z", "a"] + \
        [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 30))) for _ in range(40)]
    for s in sentences:
        for bos in (True, False):
            for eos in (True, False):
                got = list(m.full_scores(s, bos=bos, eos=eos))
                want = list(KenLMInterface.full_scores(m, s, bos=bos, eos=eos))
                assert got == want
                total = 0.0
                for lp, _, _ in want:  # KenLMInterface.score's float64 sum, in order
                    total += lp
                assert m.score(s, bos=bos, eos=eos) == total
    # batches in one call: score_batch (lines as bytes) and score_ids (word ids) are score
    for bos in (True, False):
        for eos in (True, False):
            want = [m.score(s, bos=bos, eos=eos) for s in sentences]
            got = m.score_batch(sentences, bos=bos, eos=eos)
            assert got.dtype == np.float64 and got.tolist() == want
            assert KenLMInterface.score_batch(m, sentences, bos=bos, eos=eos).tolist() == want
            ids, offsets = [], [0]
            for s in sentences:
                ids += [m.vocab.id(w) for w in split_words(s)] + ([m.vocab.id("</s>")] if eos else [])
                offsets.append(len(ids))
            assert m.score_ids(np.array(ids), np.array(offsets), bos=bos).tolist() == want
            assert KenLMInterface.score_ids(m, ids, offsets, bos=bos).tolist() == want
    assert m.score_batch([]).shape == (0,)
    assert m.score_batch(["w1\nw2", "w1"]).tolist() == [m.score("w1\nw2"), m.score("w1")]  # a line end inside
    assert m.score_ids([m.vocab.id("w1"), 1]).tolist() == [m.score("w1")]
    for bad in ([len(m.vocab)], [-1]):
        with pytest.raises(ValueError, match="outside the vocabulary"):
            m.score_ids(bad)
    with pytest.raises(ValueError, match="offsets"):
        m.score_ids([3, 4], [0, 3])


@pytest.mark.parametrize("unk", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_states_are_tree_positions(case, unk):
    """``BaseScore``'s states are ints, the tree position of the kept context
    (``_lm_kernels.kenlm_state_step``): word after word they give ``kenlm_step``'s numbers
    and contexts on word tuples, bit for bit; equal contexts are equal states; an int of
    another model is the empty context; a word tuple is read as a history."""
    lines, m = _fit(case, 3, unk)
    words = list(m.vocab.words) + ["zebra"]
    rng = random.Random(11)
    for _ in range(150):
        s = State()
        (m.BeginSentenceWrite if rng.random() < 0.7 else m.NullContextWrite)(s)
        assert isinstance(s.words, int)
        context = m._context_of(s.words)
        for _ in range(rng.randrange(1, 9)):
            w = rng.choice(words)
            o = State()
            got = tuple(m.BaseFullScore(s, w, o))
            lp, n, nxt = m.kenlm_step(context, m.vocab.id(w))
            assert got == (lp, n, m.vocab.id(w) == 2)
            assert m._context_of(o.words) == nxt
            assert m._stepper().to_state(nxt) == o.words  # one state per context
            s, context = o, nxt
    a, b = State(), State()
    m.NullContextWrite(a)
    m.BeginSentenceWrite(b)
    for w in lines[0].split():  # the same last words after other histories: the same state
        o = State()
        m.BaseScore(b, w, o)
        b = o
    c = State()
    c.words = m._stepper().to_state(m._context_of(b.words))
    assert c == b and hash(c) == hash(b)
    empty = [m.BaseScore(a, w, State()) for w in words]
    for bogus in (-5, 10 ** 12, 2 ** 40, len(m.tree_.parent) * 1000 + 1):
        s = State()
        s.words = bogus
        assert [m.BaseScore(s, w, State()) for w in words] == empty
        assert m._context_of(bogus) == ()
    s = State()
    s.words = (0,) + tuple(m.vocab.id(w) for w in lines[1].split()[:3])  # a word tuple: a history
    o = State()
    assert m.BaseScore(s, words[3], o) == m.kenlm_step(s.words, 3)[0]
    assert isinstance(o.words, int)


@pytest.mark.parametrize("case", ["trie, kn base, signed", "max, no base"])
def test_large_batches_on_threads_are_the_serial_numbers(case, monkeypatch):
    """``score_batch`` / ``score_ids`` of PARALLEL_MIN_TOKENS words or more run a chunk of
    whole sentences per numba thread (``kenlm_score_lines_parallel``,
    ``kenlm_score_ids_parallel``): the sums of one thread, bit for bit."""
    from suffixlm import query

    lines, m = _fit(case, 3, True)
    rng = random.Random(11)
    words = list(m.vocab.words) + ["zebra"]
    sentences = lines + ["", "w1 \u00e9", ""] + [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 25)))
                                                 for _ in range(150)]
    ids, offsets = [], [0]
    for s in sentences:
        ids += [m.vocab.id(w) for w in split_words(s)] + [m.vocab.id("</s>")]
        offsets.append(len(ids))
    ids, offsets = np.array(ids), np.array(offsets)
    monkeypatch.setattr(query, "PARALLEL_MIN_TOKENS", 10 ** 12)
    want = {bos: m.score_batch(sentences, bos=bos).tolist() for bos in (True, False)}
    want_ids = m.score_ids(ids, offsets).tolist()
    assert want_ids == want[True]
    monkeypatch.setattr(query, "PARALLEL_MIN_TOKENS", 1)
    for _ in thread_counts():
        assert query.sentence_chunks(offsets, len(ids)) is not None
        for bos in (True, False):
            assert m.score_batch(sentences, bos=bos).tolist() == want[bos]
        assert m.score_ids(ids, offsets).tolist() == want_ids
        assert m.score(sentences[5]) == want[True][5]  # one line: one thread


@pytest.mark.parametrize("case", sorted(CASES))
def test_node_word_table_is_the_binary_searches(case):
    """The query kernels' hash table of (node, word) pairs (``node_word_table``) gives
    every child and param the sorted lists give, and -1 for pairs the tree lacks."""
    from suffixlm._contexts_kernels import node_word, node_word_param

    _, m = _fit(case, 4, True)
    t = m.tree_
    H = m._node_words()
    assert H.shape[0] > 0 and m._node_words() is H  # made once per tree
    V = len(m.vocab)
    rng = np.random.default_rng(0)
    for j in range(t.n_nodes):
        kids = dict(zip(t.child_first_word[t.child_offsets[j]:t.child_offsets[j + 1]].tolist(),
                        t.children[t.child_offsets[j]:t.child_offsets[j + 1]].tolist()))
        params = {int(v): q for q, v in enumerate(t.succ_words[t.succ_offsets[j]:t.succ_offsets[j + 1]].tolist(),
                                                   start=int(t.succ_offsets[j]))}
        for v in set(kids) | set(params) | set(rng.integers(0, V, 4).tolist()):
            assert node_word(H, j, v) >> 32 == kids.get(v, -1)
            assert node_word_param(H, j, v) == params.get(v, -1)
    assert node_word(H, t.n_nodes, 0) == -1  # a node past the tree


@pytest.mark.parametrize("unk", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_queries_without_the_node_word_table_are_the_same_numbers(case, unk, monkeypatch):
    """Every query through the hash table (the default) gives the numbers of the binary
    searches it replaces (an empty table: what a tree too large for its packing gets),
    bit for bit: sums, per-word scores, states and distributions."""
    lines, m = _fit(case, 6, unk)
    rng = random.Random(8)
    words = list(m.vocab.words) + ["zebra"]
    sentences = lines[:20] + ["", "zebra w1", "<s> w2"] + [" ".join(rng.choice(words) for _ in range(rng.randrange(12)))
                                                          for _ in range(40)]

    def everything(model):
        ids = [model.vocab.id(w) for s in sentences for w in split_words(s)]
        states, seen = [], []
        s = State()
        model.BeginSentenceWrite(s)
        for w in " ".join(sentences[:8]).split():
            o = State()
            seen.append(model.BaseFullScore(s, w, o))
            states.append(o)
            s = o
        return (model.score_batch(sentences).tolist(), model.score_ids(np.array(ids)).tolist(),
                [list(model.full_scores(s)) for s in sentences], [st.words for st in states], seen,
                model.distributions(states[:6]).tolist())

    want = everything(m)
    _, plain = _fit(case, 6, unk)
    monkeypatch.setattr(LogLinearLM, "_node_words", lambda self: np.zeros(0, dtype=np.int64))
    assert everything(plain) == want


@pytest.mark.parametrize("case", ["trie, kn base, signed", "max, no base"])
def test_score_line_by_line_through_the_bound_walk(case):
    """``score(line)`` binds a per-model closure over the compiled line walk
    (``kenlm_score_line_at``) on its first call: the same sums as ``kenlm_step`` word
    after word for short, empty, very long (past its work space) and undecodable lines
    and with ``bos`` / ``eos`` off; new weights drop it."""
    from suffixlm import _lm_kernels as K

    lines, m = _fit(case, 7, True)
    long = " ".join(["w1", "w2", "zebra"] * (K.LINE_WORK_WORDS // 2))
    cases = lines[:15] + ["", "zebra", long, "w1 \ud800 w2", "w1\x0bw2"]
    want = [KenLMInterface.score(m, s) for s in cases]
    assert [m.score(s) for s in cases] == want
    assert "score" in m.__dict__  # bound on the first line
    assert [m.score(s) for s in cases] == want
    assert [m.score(s, bos=False) for s in cases] == [KenLMInterface.score(m, s, False, True) for s in cases]
    assert [m.score(s, eos=0) for s in cases] == [KenLMInterface.score(m, s, True, False) for s in cases]
    m.weights_ = m.weights_ * 0.5  # other weights: the closure goes to the method, which binds them
    want2 = [KenLMInterface.score(m, s) for s in cases]
    assert want2 != want and [m.score(s) for s in cases] == want2


@pytest.mark.parametrize("unk", [True, False])
@pytest.mark.parametrize("case", sorted(CASES))
def test_walks_through_the_forward_table_are_the_same_numbers(case, unk, monkeypatch):
    """On a trie, batches and lines are walked through the ``forward_table`` (a word's
    lookups along its context also give the next word's context): the numbers of the
    walks that look every context up, bit for bit, ``<s>`` and ``<unk>`` inside
    sentences included; no such table on a collapsed tree."""
    from suffixlm import _contexts_kernels as C

    lines, m = _fit(case, 9, unk)
    rng = random.Random(12)
    words = list(m.vocab.words) + ["zebra"]
    sentences = lines[:25] + ["", "zebra w1", "w1 <s> w2", "<unk> w3", " ".join(["w1", "w2"] * 40)] + \
        [" ".join(rng.choice(words) for _ in range(rng.randrange(14))) for _ in range(60)]

    def everything(model):
        ids, offsets = [], [0]
        for s in sentences:
            ids += [model.vocab.id(w) for w in split_words(s)] + [1]  # </s>
            offsets.append(len(ids))
        return ([model.score_batch(sentences, bos=bos, eos=eos).tolist() for bos in (True, False)
                 for eos in (True, False)],
                [model.score_ids(np.array(ids), np.array(offsets), bos=bos).tolist() for bos in (True, False)],
                [model.score(s) for s in sentences])

    want = everything(m)
    trie = bool(C.is_trie(m._node_words()))
    assert (m._stepper().forward.shape[0] > 0) == trie
    assert trie or case.startswith("max") or case == "trie, no base"  # the last two collapse edges
    _, plain = _fit(case, 9, unk)
    monkeypatch.setattr(C, "forward_table", lambda *a: np.zeros(0, dtype=np.int64))
    assert everything(plain) == want
    assert plain._stepper().forward.shape[0] == 0


def test_forward_table_holds_the_right_extensions():
    """Each pair (node, word) of the ``forward_table`` has the param of the
    ``node_word_table`` and, as its other half, the node of the node's context followed
    by the word (found here from every node's context, by brute force); a tree whose
    params are not closed under dropping the context's first word gets none."""
    from suffixlm import _contexts_kernels as C

    _, m = _fit("trie, kn base, signed", 10, True)
    t = m.tree_
    H = m._node_words()
    held = m._stepper().hold[0]
    arrays = [held[i] for i in (1, 3, 5, 19, 20, 21)] + [m._topo, m._level_start]  # node_parent, succ_offsets,
    # param_parent, the children, the levels
    F = C.forward_table(H, *arrays)
    assert F.shape == H.shape
    context = {0: ()}  # node: its words, oldest first (a child's edge word is one older)
    stack = [0]
    while stack:
        j = stack.pop()
        for e in range(t.child_offsets[j], t.child_offsets[j + 1]):
            u = int(t.children[e])
            context[u] = (int(t.child_first_word[e]),) + context[j]
            stack.append(u)
    node_of = {c: j for j, c in context.items()}
    n_slots, V = int(H[-C.TABLE_META]), len(m.vocab)
    pairs = 0
    for s in range(n_slots):
        if H[2 * s] == -1:
            continue
        j, v = divmod(int(H[2 * s]), V)
        assert F[2 * s] == H[2 * s] and F[2 * s + 1] & 0xFFFFFFFF == H[2 * s + 1] & 0xFFFFFFFF
        assert F[2 * s + 1] >> 32 == node_of.get(context[j] + (v,), -1)
        pairs += 1
    assert pairs > 50 and sum(F[2 * s + 1] >> 32 >= 0 for s in range(n_slots)) == len(context) - 1
    # a param whose word is no param of its node's parent: the walks could not stop early
    param_parent = arrays[2].copy()
    param_parent[np.flatnonzero(param_parent >= 0)[-1]] = -1
    assert C.forward_table(H, arrays[0], arrays[1], param_parent, *arrays[3:]).shape == (0,)
    # a tree with two roots; no table; another tree's table
    level_start = arrays[-1].copy()
    level_start[1] = 2
    assert C.forward_table(H, *arrays[:-1], level_start).shape == (0,)
    assert C.forward_table(np.zeros(0, dtype=np.int64), *arrays).shape == (0,)
    assert C.forward_table(H, arrays[0][:-1], *arrays[1:]).shape == (0,)
