"""Forward-backward, Viterbi, n-best and the gradient against exact enumeration."""

import numpy as np
import pytest

from crf.features import FeatureSpace
from crf.inference import Objective, forward_backward_marginals, nbest, viterbi
from crf.patterns import parse_patterns

from .crf_testutil import PATTERNS, enumerate_sequences, logsumexp, random_corpus


def problem(seed, L=3, n_seq=5, max_len=5, zero_fraction=0.6, patterns=PATTERNS):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns)), X, y)
    theta = rng.normal(scale=1.0, size=space.n_params)
    theta[rng.random(space.n_params) < zero_fraction] = 0.0  # sparse M for the sparse recursion
    return X, y, space, data, theta


@pytest.mark.parametrize("seed,L", [(0, 2), (1, 3), (2, 3)])
def test_marginals_logz_viterbi_nbest_match_enumeration(seed, L):
    X, y, space, data, theta = problem(seed, L=L)
    marg_d, logz_d = forward_backward_marginals(theta, space, data, "dense")
    marg_s, logz_s = forward_backward_marginals(theta, space, data, "sparse")
    best, best_score = viterbi(theta, space, data)
    paths, scores = nbest(theta, space, data, 4)
    off = data.seq_offsets
    for i, seq in enumerate(X):
        allseq = enumerate_sequences(space, theta, seq)
        sc = np.array([s for _, s in allseq])
        logz = logsumexp(sc)
        assert logz_d[i] == pytest.approx(logz, abs=1e-9)
        assert logz_s[i] == pytest.approx(logz, abs=1e-9)
        p = np.exp(sc - logz)
        T = len(seq)
        ref = np.zeros((T, space.n_labels))
        for (ys, _), pk in zip(allseq, p):
            ref[np.arange(T), ys] += pk
        np.testing.assert_allclose(marg_d[off[i]:off[i + 1]], ref, atol=1e-10)
        np.testing.assert_allclose(marg_s[off[i]:off[i + 1]], ref, atol=1e-10)
        k = int(np.argmax(sc))
        assert best_score[i] == pytest.approx(sc[k])
        assert tuple(best[off[i]:off[i + 1]]) == allseq[k][0]
        order = np.argsort(-sc, kind="stable")
        n_paths = min(4, len(sc))
        np.testing.assert_allclose(scores[i, :n_paths], sc[order[:n_paths]], atol=1e-9)
        assert np.all(np.isneginf(scores[i, n_paths:]))
        got = {tuple(paths[off[i]:off[i + 1], r]) for r in range(n_paths)}
        assert len(got) == n_paths
        for path in got:  # each returned path has the score it claims (ties may reorder)
            assert any(path == ys for ys, _ in allseq)
        assert {round(s, 9) for s in scores[i, :n_paths]} == {round(s, 9) for s in sc[order[:n_paths]]}


# the second pattern set has one transition matrix per sequence (only the pure
# label-bigram pattern B, with a '*' pattern whose observation is constant)
ONLY_B = ["u:a=%x[0,0]", "u:b=%x[-1,0]/%x[0,1]", "*:d=const", "B"]


@pytest.mark.parametrize("recursion,patterns", [("dense", PATTERNS), ("sparse", PATTERNS), ("dense", ONLY_B)])
def test_loss_matches_enumeration_and_gradient_finite_differences(recursion, patterns):
    X, y, space, data, theta = problem(3, L=3, n_seq=4, max_len=4, patterns=patterns)
    obj = Objective(space, data, n_chunks=2, recursion=recursion)
    rng = np.random.default_rng(7)
    n_bigram = space.n_params - space.bigram_start
    coords = np.concatenate([rng.choice(space.bigram_start, min(30, space.bigram_start), replace=False),
                             space.bigram_start + rng.choice(n_bigram, min(30, n_bigram), replace=False)])
    loss, grad = obj.value_and_gradient(theta)
    grad = grad.copy()
    ref = 0.0
    lab = {l: k for k, l in enumerate(space.labels)}
    for seq, ys in zip(X, y):
        allseq = dict(enumerate_sequences(space, theta, seq, patterns))
        ref += logsumexp(list(allseq.values())) - allseq[tuple(lab[v] for v in ys)]
    assert loss == pytest.approx(ref, rel=1e-10)
    eps = 1e-6
    fd = np.empty(len(coords))
    for j, k in enumerate(coords):
        tp = theta.copy()
        tp[k] += eps
        tm = theta.copy()
        tm[k] -= eps
        fd[j] = (obj.value_and_gradient(tp)[0] - obj.value_and_gradient(tm)[0]) / (2 * eps)
    np.testing.assert_allclose(grad[coords], fd, atol=1e-6)


def test_sparse_and_dense_agree_on_larger_batch():
    X, y, space, data, theta = problem(4, L=3, n_seq=40, max_len=12, zero_fraction=0.8)
    g = {}
    for rec in ("dense", "sparse"):
        obj = Objective(space, data, n_chunks=3, recursion=rec)
        loss, grad = obj.value_and_gradient(theta)
        g[rec] = (loss, grad.copy(), forward_backward_marginals(theta, space, data, rec)[0])
    assert g["dense"][0] == pytest.approx(g["sparse"][0], rel=1e-12)
    np.testing.assert_allclose(g["dense"][1], g["sparse"][1], atol=1e-10)
    np.testing.assert_allclose(g["dense"][2], g["sparse"][2], atol=1e-12)


def test_scaling_survives_long_sequences():
    rng = np.random.default_rng(5)
    X = [[[f"w{rng.integers(3)}", "p"] for _ in range(3000)]]
    y = [[f"L{rng.integers(3)}" for _ in range(3000)]]
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    theta = rng.normal(scale=3.0, size=space.n_params)
    marg, logz = forward_backward_marginals(theta, space, data, "dense")
    assert np.isfinite(logz).all() and np.isfinite(marg).all()
    np.testing.assert_allclose(marg.sum(axis=1), 1.0, atol=1e-9)
    _, best = viterbi(theta, space, data)
    assert best[0] <= logz[0] + 1e-6  # max <= log-sum-exp
