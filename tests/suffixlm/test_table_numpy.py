"""The binary model's batch queries in numpy (suffixlm.backoff._table_numpy), which a process
uses before numba has started: the compiled kernels' numbers bit for bit, every query
of the API through them, the tier rule, and a fresh process that scores a text and runs
``suffixlm ppl`` without starting numba."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from suffixlm.backoff import _binary_kernels as K
from suffixlm.backoff import _table_numpy as T
from suffixlm.backoff import table
from suffixlm.backoff.binary import BinaryLM, write_binary
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.backoff.prune import prune_entropy
from suffixlm.corpus import Corpus

from .test_binary import _assert_same, _random_corpus
from .test_kenlm_api import TINY_ARPA


def _model(tmp_path, seed, order):
    corpus = Corpus.from_strings(_random_corpus(seed))
    arpa = KneserNeyLM(order=order, min_counts=[1, 1, 2] if seed % 2 else [1]).fit(corpus).model_
    if seed >= 2 and order > 1:
        arpa = prune_entropy(arpa, 0.02)  # blanks
    write_binary(arpa, tmp_path / "m.bin")
    return arpa, BinaryLM(tmp_path / "m.bin")


def _text(rng, V, n_sent=300, bad=True):
    lengths = rng.integers(0, 14, n_sent)
    lengths[:3] = 0
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    ids = rng.integers(-2 if bad else 0, V + 2 if bad else V, offsets[-1]).astype(np.int64)
    return ids, offsets


def _same_as_kernels(m, ids, offsets):
    """The numpy walk, the kernels' walk of one sentence at a time and their walk of
    ``LANES`` at a time (``_walk_lanes``) give the same numbers bit for bit."""
    D, V, S, order, missing = m._D, m._V, m._S, m.order, m._missing
    for bos in (True, False):
        lp, n, sums = T.score_sentences(D, V, S, order, ids, offsets, bos, missing)
        assert lp.dtype == np.float32 and sums.dtype == np.float32
        for lanes in (False, True):
            lp_k = np.empty(len(ids))
            n_k = np.empty(len(ids), dtype=np.int64)
            sums_k = K.score_sentences(D, V, S, order, ids, offsets, bos, missing, lp_k, n_k, lanes)
            assert np.array_equal(lp.astype(np.float64), lp_k)
            assert np.array_equal(n, n_k)
            assert sums.tobytes() == sums_k.tobytes()  # bit for bit: the same additions in the same order
            no_lp, no_n = np.empty(0), np.empty(0, dtype=np.int64)
            assert K.score_sentences(D, V, S, order, ids, offsets, bos, missing, no_lp, no_n, lanes).tobytes() == \
                sums.tobytes()


@pytest.mark.parametrize("seed", range(3))
def test_lanes_walk_the_sentences_of_a_batch_as_one_walk_does(tmp_path, seed, monkeypatch):
    """``_walk_lanes`` (a batch ``LANES`` sentences at a time, each lane's probes
    interleaved with the others') against the walk of one sentence at a time, on batches
    whose sentences end at every point of the lanes' turns: fewer sentences than lanes,
    empty ones in runs, one long sentence among short ones, words outside the
    vocabulary; through ``score_batch`` (text split in blocks of ``LINE_BLOCK`` lines)
    and ``score_ids`` too."""
    _, m = _model(tmp_path, seed + 1, [3, 5, 4][seed])
    rng = np.random.default_rng(seed)
    V = m._V
    for n_sent in (0, 1, K.LANES - 1, K.LANES + 1, 3 * K.LANES + 2):
        _same_as_kernels(m, *_text(rng, V, n_sent=n_sent))
    lengths = np.concatenate([[0, 0, 0, 200], rng.integers(0, 4, 40), [0] * 20, [1, 1, 90]])
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    _same_as_kernels(m, rng.integers(-1, V + 1, offsets[-1]).astype(np.int64), offsets)
    words = m.vocab.words
    lines = [" ".join(words[i] for i in rng.integers(0, len(words), k)) for k in rng.integers(0, 12, 600)]
    lines[5:9] = ["", "  ", "unseen-word", " ".join(["x"] * 70)]
    monkeypatch.setattr(table, "TIER", "compiled")
    want = {}
    for lanes in (False, True):
        monkeypatch.setattr(table, "LANES", lanes)
        got = (m.score_batch(lines).tobytes(), m.score_batch(lines, bos=False, eos=False).tobytes(),
               m.score_ids(*_text(np.random.default_rng(9), V, n_sent=50)).tobytes())
        want.setdefault("v", got)
        assert got == want["v"]


def test_lanes_pay_on_tables_larger_than_the_cache(monkeypatch):
    monkeypatch.setattr(table, "LANES", "auto")
    big = np.empty(table.last_level_cache_bytes() // 8 + 1, dtype=np.int64)
    assert table.lanes_pay(big) and not table.lanes_pay(big[:1000])
    monkeypatch.setattr(table, "LANES", False)
    assert not table.lanes_pay(big)
    monkeypatch.setattr(table, "LANES", True)
    assert table.lanes_pay(big[:10])
    assert table.last_level_cache_bytes() >= 1 << 16


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_numpy_queries_are_the_kernels_bit_for_bit(tmp_path, seed, order):
    _, m = _model(tmp_path, seed, order)
    rng = np.random.default_rng(seed)
    V = m._V
    _same_as_kernels(m, *_text(rng, V))  # ids outside the vocabulary too
    # SRILM's statistics: <s> at every sentence start, every other position predicted
    ids, offsets = _text(rng, V, bad=False)
    sent = np.repeat(np.arange(len(offsets) - 1), np.diff(offsets))
    tokens = np.insert(ids, offsets[:-1], 0)
    starts_of = offsets[:-1] + np.arange(len(offsets) - 1)
    starts = np.zeros(len(tokens), dtype=np.int64)
    starts[starts_of] = starts_of
    starts = np.maximum.accumulate(starts)
    positions = np.setdiff1d(np.arange(len(tokens)), starts_of)
    assert len(positions) == len(sent)
    want = K.srilm_query(m._D, V, m._S, order, tokens, starts, positions)
    got = T.srilm_query(m._D, V, m._S, order, tokens, starts, positions)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1])
    # find_many is find, present keys and absent ones
    for L in range(2, order + 1):
        B, n = T.region(m._D, V, m._S, L)
        present = m._D[2 * (V + B):2 * (V + B + n):2]
        keys = np.concatenate([present[present != -1] & T.KEY_MASK, rng.integers(0, V * (V + m._S), 500)])
        assert np.array_equal(T.find_many(m._D, V, m._S, L, keys), K.records_of(m._D, V, m._S, L, keys))


def test_sentence_sums_add_word_after_word():
    rng = np.random.default_rng(0)
    lengths = rng.integers(0, 40, 250)
    offsets = np.concatenate([[0], np.cumsum(lengths)])
    lp = (rng.standard_normal(offsets[-1]) * 3).astype(np.float32)
    want = []
    for a, b in zip(offsets[:-1], offsets[1:]):
        t = np.float32(0.0)
        for x in lp[a:b]:
            t = np.float32(t + x)
        want.append(t)
    assert np.array_equal(T._sentence_sums(lp, offsets), np.array(want, dtype=np.float32))


@pytest.fixture
def numpy_tier(monkeypatch):
    monkeypatch.setattr(table, "TIER", "numpy")


@pytest.mark.parametrize("seed,order", [(0, 3), (2, 5), (3, 2), (1, 1)])
def test_every_query_in_the_numpy_tier(tmp_path, numpy_tier, seed, order):
    arpa, m = _model(tmp_path, seed, order)
    _assert_same(arpa, m)
    assert "score" not in m.__dict__  # a bound compiled `score` would have left the numpy tier


def test_tiny_arpa_with_a_blank_in_the_numpy_tier(tmp_path, numpy_tier):
    from suffixlm.backoff.arpa import BackoffLM

    (tmp_path / "tiny.arpa").write_text(TINY_ARPA.lstrip())
    arpa = BackoffLM.read_arpa(tmp_path / "tiny.arpa")
    write_binary(arpa, tmp_path / "tiny.bin")
    b = BinaryLM(tmp_path / "tiny.bin")
    _assert_same(arpa, b)
    assert list(b.full_scores("a b d", eos=False))[-1][1] == 3


def test_a_context_that_does_not_extend_is_solved_exactly(tmp_path):
    """A table (damaged, or hand-made) where a part's context lacks the EXTENDS flag: the
    state then keeps less than the part, and the fixed point follows the kernel's walk."""
    _, m = _model(tmp_path, 0, 4)
    D = m._D.copy()
    V, S = m._V, m._S
    B, n = T.region(D, V, S, 2)
    slots = np.flatnonzero(D[2 * (V + B):2 * (V + B + n):2] != -1)
    D[2 * (V + B + slots)] &= ~T.EXTENDS  # no 2-word part extends
    m._D = D
    rng = np.random.default_rng(5)
    ids, offsets = _text(rng, V, bad=False)
    _same_as_kernels(m, ids, offsets)


def test_unsettled_fixed_point_goes_to_the_kernel(tmp_path, monkeypatch):
    _, m = _model(tmp_path, 0, 4)
    D = m._D.copy()
    V, S = m._V, m._S
    for L in (2, 3):
        B, n = T.region(D, V, S, L)
        slots = np.flatnonzero(D[2 * (V + B):2 * (V + B + n):2] != -1)
        D[2 * (V + B + slots)] &= ~T.EXTENDS
    D[2 * np.arange(V)] &= ~T.EXTENDS
    m._D = D
    ids, offsets = _text(np.random.default_rng(1), V, bad=False)
    monkeypatch.setattr(T, "MAX_ROUNDS", 1)
    assert T.score_sentences(D, V, S, 4, ids, offsets, True, m._missing) is None
    monkeypatch.setattr(table, "TIER", "numpy")
    lp_k = np.empty(len(ids))
    sums = K.score_sentences(D, V, S, 4, ids, offsets, True, m._missing, lp_k, np.empty(len(ids), np.int64))
    assert np.array_equal(m.score_ids(ids, offsets), sums.astype(np.float64))  # the kernel's answer
    monkeypatch.setattr(T, "MAX_ROUNDS", 50)
    _same_as_kernels(m, ids, offsets)


def test_the_tier_rule(monkeypatch):
    monkeypatch.setattr(table, "TIER", "auto")
    monkeypatch.setattr(table, "_numpy_seconds", 0.0)
    # this test process has numba's kernels loaded already: compiled is free
    assert not table.numpy_tier(10)
    monkeypatch.setattr(table, "_KERNELS", "not.a.loaded.module")
    assert table.numpy_tier(10)
    assert not table.numpy_tier(table.NUMPY_MAX_TOKENS + 1)
    monkeypatch.setattr(table, "_numpy_seconds", table.STARTUP_S)
    assert not table.numpy_tier(10)
    monkeypatch.setattr(table, "TIER", "numpy")
    assert table.numpy_tier(10 ** 9)


FRESH = r"""
import sys
import suffixlm
m = suffixlm.Model(sys.argv[1])
print(m.score("w1 w2 w3"), m.perplexity("w2 w2"), sum(x[0] for x in m.full_scores("w1 zebra")),
      m.score_batch(["w1", "w3 w4"]).tolist(), m.score_ids([3, 4, 1]).tolist())
assert "numba" not in sys.modules, "numba started"
assert m.score_file(sys.argv[2]).ppl > 1  # a small text: read in Python (corpus.compiled_reader_pays)
assert "numba" not in sys.modules, "numba started by score_file"
from suffixlm.cli import main
sys.argv = ["suffixlm", "ppl", sys.argv[1], sys.argv[2]]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
assert "numba" not in sys.modules, "numba started by ppl"
"""


def test_a_fresh_process_scores_without_starting_numba(tmp_path):
    arpa, m = _model(tmp_path, 1, 3)
    (tmp_path / "t.txt").write_text("w1 w2 w3\nw4 zebra w1\n\n")
    r = subprocess.run([sys.executable, "-c", FRESH, str(tmp_path / "m.bin"), str(tmp_path / "t.txt")],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    first, *report = r.stdout.splitlines()
    assert first == " ".join(map(str, (m.score("w1 w2 w3"), m.perplexity("w2 w2"),
                                       sum(x[0] for x in m.full_scores("w1 zebra")),
                                       m.score_batch(["w1", "w3 w4"]).tolist(), m.score_ids([3, 4, 1]).tolist())))
    assert "ppl=" in report[-1]


@pytest.mark.parametrize("seed,order", [(0, 3), (2, 5), (3, 2), (1, 1), (1, 4)])
def test_step_from_any_record(tmp_path, seed, order):
    """The decoder's ``step`` from every record taken as a state: a real state scores as
    the sentence that leads to it (its words, scored with the numpy path); a record that
    is no state of the model, or garbage, as the empty context; never a crash."""
    _, m = _model(tmp_path, seed, order)
    D, V, S, missing = m._D, m._V, m._S, m._missing
    rng = np.random.default_rng(seed)
    states = np.concatenate([[-1, -5, V + S, 2 ** 40], np.arange(V + S), rng.integers(-3, V + S + 3, 50)])
    words = np.concatenate([[-1, V, V + 7], rng.integers(0, V, 12)]).astype(np.int64)
    ctxw, crec = np.empty(order, np.int64), np.empty(order, np.int64)
    params = np.array([D.ctypes.data, D.shape[0], V, S, order, 0], dtype=np.int64)  # step_at's STEP_PARAMS
    params[-1:] = np.array([missing], dtype=np.float64).view(np.int64)
    for st in states.tolist():
        k = K.decode_state(D, V, S, order, st, ctxw, crec)
        history = ctxw[:k][::-1].astype(np.int64)  # the context's words, oldest first
        for w in words.tolist():
            lp, n, nxt = K.step(D, V, S, order, st, w, missing)
            assert K.step_at(params.ctypes.data, st, w) == (lp, n, nxt)
            ids = np.append(history, w)
            want_lp, want_n, _ = T.score_sentences(D, V, S, order, ids, np.array([0, len(ids)]), False, missing)
            if k and K.state_of(D, V, S, order, history) != st:
                continue  # a part that is no state: nothing scores from it but step (checked: no crash)
            assert (lp, n) == (np.float64(want_lp[-1]), want_n[-1])
            if not 0 <= w < V:
                assert nxt == -1
            elif (D[2 * w] & T.EXPLICIT) == 0 or D.view(np.float32)[4 * w + 2] == -np.inf:
                assert nxt == (w if order > 1 else -1)  # KenLM keeps a word it does not know
            else:
                assert nxt == K.state_of(D, V, S, order, ids)
