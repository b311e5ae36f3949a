"""SGD-l1, SAG / SAG-NUS* and the averaged perceptron against L-BFGS / OWL-QN and
plain references written here."""

import numpy as np
import pytest

from crf.features import FeatureSpace
from crf.inference import Objective, viterbi
from crf.patterns import parse_patterns
from crf.train import _bcd_kernels as BK
from crf.train import _sequence_kernels as SQ
from crf.train import lbfgs, owlqn
from crf.train.perceptron import averaged_perceptron
from crf.train.sag import sag, sag_memory
from crf.train.sgd_l1 import learning_rates, sgd_l1

from .crf_testutil import PATTERNS, random_corpus


def small_problem(seed=0, n_seq=30, max_len=6, L=3):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    return space, data, Objective(space, data, n_chunks=1)


def objective(obj, x, rho1, rho2):
    v, _ = obj.value_and_gradient(x)
    return v + rho1 * np.abs(x).sum() + 0.5 * rho2 * x @ x


def test_sequence_blocks_are_the_distinct_blocks_of_each_sequence():
    space, data, _ = small_problem(1, n_seq=8)
    ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    for i in range(data.n_sequences):
        s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
        ref = set(data.unigram_base[s:e].ravel()) | set(data.bigram_base[s + 1:e].ravel())
        ref.discard(-1)
        assert list(blocks[ptr[i]:ptr[i + 1]]) == sorted(ref)


def test_per_sequence_gradients_sum_to_the_objective_gradient():
    space, data, obj = small_problem(2, n_seq=10)
    theta = np.random.default_rng(0).normal(size=space.n_params)
    loss_ref, grad_ref = obj.value_and_gradient(theta)
    L = space.n_labels
    ws = SQ.workspace(data.max_length, L)
    pp = np.empty(L * L)
    g = np.zeros(space.n_params)
    loss = 0.0
    for i in range(data.n_sequences):
        s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
        loss += SQ.sequence_loss(theta, data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base,
                                 data.labels, s, e, L, ws)
        SQ.add_gradient(data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base, data.labels, s, e,
                        L, ws, pp, g)
    assert loss == pytest.approx(loss_ref, rel=1e-12)
    np.testing.assert_allclose(g, grad_ref, atol=1e-10)


@pytest.mark.parametrize("nus", [False, True])
def test_sag_reaches_the_lbfgs_optimum(nus):
    space, data, obj = small_problem(0)
    rho2 = 1.0
    ref = lbfgs(obj.value_and_gradient, np.zeros(space.n_params), rho2=rho2, max_iter=2000, gtol=1e-10)
    res = sag(space, data, rho2=rho2, nus=nus, max_iter=300, tol=1e-8)
    assert res.reason == "gradient tolerance"
    f = objective(obj, res.x, 0.0, rho2)
    assert f == pytest.approx(ref.objective, rel=1e-8)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    # the stored-loss estimate is the objective at the optimum too
    assert res.objective == pytest.approx(f, rel=1e-6)
    # one forward-backward per iteration + the line-search trials
    assert res.gradient_evaluations == res.n_iter * data.n_sequences
    assert res.n_evals == res.gradient_evaluations + res.linesearch_evaluations


def test_sag_memory_is_the_marginals_not_the_gradients():
    space, data, _ = small_problem(0)
    mem = sag_memory(space, data)
    L = space.n_labels
    assert mem["unary_marginals"] == data.n_tokens * L * 8
    # PATTERNS has two observation-dependent bigram patterns and B: at most 3 rows per position
    assert data.n_sequences <= mem["n_pairwise_rows"] <= 3 * data.n_tokens
    assert mem["stored_gradients_instead"] == data.n_sequences * space.n_params * 8


def test_sag_rejects_no_l2():
    space, data, _ = small_problem(0, n_seq=5)
    with pytest.raises(ValueError, match="rho2"):
        sag(space, data, rho2=0.0)


@pytest.mark.parametrize("rho1,rho2", [(0.5, 0.1), (0.0, 1.0)])
def test_sgd_l1_with_a_decaying_rate_reaches_the_owlqn_optimum(rho1, rho2):
    space, data, obj = small_problem(0)
    ref = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=rho1, rho2=rho2,
                max_iter=2000, gtol=1e-10)
    # Robbins-Monro schedule eta0 / (1 + k / (5 n)): converges to the optimum; 500
    # passes of 30 sequences bring it within 1e-4 (measured: 1e-5 for rho1 = 0.5)
    res = sgd_l1(space, data, rho1=rho1, rho2=rho2, max_iter=500, eta0=0.5, schedule="inverse", tau=5)
    f = objective(obj, res.x, rho1, rho2)
    assert f >= ref.objective * (1 - 1e-9)
    assert f == pytest.approx(ref.objective, rel=1e-4)
    if rho1 > 0:  # the cumulative penalty zeroes weights: about OWL-QN's support
        big = np.abs(ref.x) > 0.05
        assert np.all(res.x[big] != 0)
        assert np.count_nonzero(res.x) <= np.count_nonzero(ref.x) + 0.1 * space.n_params
        assert np.count_nonzero(res.x) < space.n_params


def test_sgd_l1_exponential_schedule_stops_near_the_optimum():
    space, data, obj = small_problem(0)
    rho1, rho2 = 0.5, 0.1
    ref = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=rho1, rho2=rho2,
                max_iter=2000, gtol=1e-10)
    res = sgd_l1(space, data, rho1=rho1, rho2=rho2, max_iter=60, eta0=0.5)
    f = objective(obj, res.x, rho1, rho2)
    # sum of the steps is finite (eta0 / (1 - 0.85^(1/n)) per sequence): near, not at
    assert 0 <= (f - ref.objective) / ref.objective < 1e-2
    assert [i.n_iter for i in res.history] == list(range(1, 61))
    stopped = sgd_l1(space, data, rho1=rho1, rho2=rho2, max_iter=60, eta0=0.5,
                     callback=lambda info, w: info.n_iter == 3)
    assert stopped.n_iter == 3 and stopped.reason == "stopping criterion"


def test_learning_rates():
    np.testing.assert_allclose(learning_rates("exponential", 0.8, 0, 3, 2, decay=0.5),
                               [0.8, 0.8 * 0.5 ** 0.5, 0.4])
    np.testing.assert_allclose(learning_rates("inverse", 1.0, 4, 1, 2, tau=2.0), [0.5])
    with pytest.raises(ValueError):
        learning_rates("constant", 1.0, 0, 1, 1)


# --------------------------------------------------------------------------- perceptron
def features(data, i, ys, space):
    """phi(x_i, ys) as a dense vector (plain numpy)."""
    L = space.n_labels
    phi = np.zeros(space.n_params)
    s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
    for t in range(e - s):
        for b in data.unigram_base[s + t]:
            if b >= 0:
                phi[b + ys[t]] += 1
        if t > 0:
            for b in data.bigram_base[s + t]:
                if b >= 0:
                    phi[b + ys[t - 1] * L + ys[t]] += 1
    return phi


def reference_perceptron(space, data, epochs):
    """Collins' averaged perceptron written out: dense vectors, average of every iterate."""
    w = np.zeros(space.n_params)
    total = np.zeros(space.n_params)
    count = 0
    off = data.seq_offsets
    for _ in range(epochs):
        for i in range(data.n_sequences):
            pred, _ = viterbi(w, space, data)
            p = pred[off[i]:off[i + 1]]
            gold = data.labels[off[i]:off[i + 1]]
            if np.any(p != gold):
                w = w + features(data, i, gold, space) - features(data, i, p, space)
            total += w
            count += 1
    return total / count, w


def test_averaged_perceptron_matches_the_plain_reference():
    space, data, _ = small_problem(3, n_seq=12, max_len=5)
    res = averaged_perceptron(space, data, max_iter=3, shuffle=False)
    avg, last = reference_perceptron(space, data, 3)
    np.testing.assert_allclose(res.x, avg, atol=1e-12)
    plain = averaged_perceptron(space, data, max_iter=3, shuffle=False, average=False)
    np.testing.assert_array_equal(plain.x, last)


def test_perceptron_learns_a_separable_problem_exactly():
    rng = np.random.default_rng(5)
    # label = f(word, previous word): separable with unigram + bigram-of-words features
    X, y = [], []
    for _ in range(40):
        T = int(rng.integers(2, 7))
        words = [f"w{k}" for k in rng.integers(0, 4, size=T)]
        X.append([[wd] for wd in words])
        y.append(["A" if wd in ("w0", "w1") else ("B" if wd == "w2" else "C") for wd in words])
    space, data = FeatureSpace.build(parse_patterns("u:%x[0,0]\nu:%x[-1,0]/%x[0,0]\nB\n"), X, y)
    res = averaged_perceptron(space, data, max_iter=50)
    assert res.reason == "no mistake"
    pred, _ = viterbi(res.x, space, data)
    np.testing.assert_array_equal(pred, data.labels)


# --------------------------------------------------------------------------- BCD
def test_block_sequences_lists_where_each_observation_occurs():
    space, data, _ = small_problem(4, n_seq=10)
    # the layout block_sequences (and bcd) assume to map a block offset b to the rank of
    # its observation, b // L (unigram) or n_uni + (b - bigram_start) // L^2 (bigram):
    # blocks of consecutive observations, unigram blocks first, then bigram blocks
    L = space.n_labels
    uo, bo = space.unigram_offset, space.bigram_offset
    n_uni, n_bi = int((uo >= 0).sum()), int((bo >= 0).sum())
    assert n_uni > 0 and n_bi > 0 and space.bigram_start == n_uni * L
    np.testing.assert_array_equal(uo[uo >= 0], np.arange(n_uni) * L)
    np.testing.assert_array_equal(bo[bo >= 0], space.bigram_start + np.arange(n_bi) * L * L)
    assert space.n_params == space.bigram_start + n_bi * L * L

    ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    ids = np.arange(len(space.kinds))
    rank = np.concatenate([ids[space.unigram_offset >= 0], ids[space.bigram_offset >= 0]])
    optr, oseq = BK.block_sequences(data.seq_offsets, ptr, blocks, rank, np.int64(space.n_labels),
                                    np.int64(space.bigram_start), np.int64(len(space.kinds)),
                                    np.int64(space.trigram_start), space.uptr)
    for o in range(len(space.kinds)):
        ref = set()
        for i in range(data.n_sequences):
            s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
            if space.unigram_offset[o] >= 0 and (data.unigram_base[s:e] == space.unigram_offset[o]).any():
                ref.add(i)
            if space.bigram_offset[o] >= 0 and (data.bigram_base[s + 1:e] == space.bigram_offset[o]).any():
                ref.add(i)
        assert list(oseq[optr[o]:optr[o + 1]]) == sorted(ref)


@pytest.mark.parametrize("rho1,rho2", [(0.5, 0.1), (0.0, 1.0)])
def test_bcd_reaches_the_owlqn_optimum(rho1, rho2):
    from crf.train.bcd import bcd

    space, data, obj = small_problem(0)
    ref = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=rho1, rho2=rho2,
                max_iter=2000, gtol=1e-10)
    res = bcd(space, data, rho1=rho1, rho2=rho2, max_iter=300)
    f = objective(obj, res.x, rho1, rho2)
    assert res.objective == pytest.approx(f, rel=1e-12)
    assert f == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(res.x, ref.x, atol=2e-3)
    if rho1 > 0:
        assert np.array_equal(res.x == 0, np.abs(ref.x) < 1e-8)
    # every pass is a descent: the objective never goes up
    objs = [i.objective for i in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(objs, objs[1:]))


# --------------------------------------------------------------------------- tree penalties
NESTED = "u:a=%x[0,0]\nu:b=%x[-1,0]/%x[0,0]\nu:c=%x[-1,0]/%x[0,0]/%x[1,0]\nu:p=%x[0,1]\nB\n"


def nested_problem():
    rng = np.random.default_rng(0)
    X, y = random_corpus(rng, 30, 6, 3)
    space, data = FeatureSpace.build(parse_patterns(NESTED), X, y)
    return space, data, Objective(space, data, n_chunks=1)


def test_feature_forest_links_each_window_to_the_window_it_refines():
    from crf.train.proximal import feature_forest, pattern_parents

    assert pattern_parents(parse_patterns(NESTED)) == [-1, 0, 1, -1, -1]
    # two equally large subsets: the more central window wins
    assert pattern_parents(parse_patterns("u:%x[-2,0]\nu:%x[0,0]\nu:%x[-2,0]/%x[0,0]\n")) == [-1, -1, 1]
    space, data, _ = nested_problem()
    parent = feature_forest(space, data)
    L = space.n_labels
    name = {}
    for o, s in enumerate(space.observations):
        if space.unigram_offset[o] >= 0:
            name[space.unigram_offset[o]] = s
    for j in range(space.n_params):
        if j >= space.bigram_start:
            assert parent[j] == -1
            continue
        s = name[j - j % L]
        kind, vals = s.split("=")
        if kind in ("u:a", "u:p"):
            assert parent[j] == -1
            continue
        assert parent[j] >= 0 and parent[j] % L == j % L  # same label
        ps = name[parent[j] - parent[j] % L]
        pkind, pvals = ps.split("=")
        if kind == "u:b":  # x[-1]/x[0] refines x[0]
            assert pkind == "u:a" and vals.split("/")[1] == pvals
        else:  # x[-1]/x[0]/x[1] refines x[-1]/x[0]
            assert pkind == "u:b" and vals.split("/")[:2] == pvals.split("/")


@pytest.mark.parametrize("penalty", ["l2-tree", "linf-tree"])
def test_fista_on_singleton_groups_is_the_l1_problem_of_owlqn(penalty):
    from crf.train.proximal import fista

    space, data, obj = nested_problem()
    roots = np.full(space.n_params, -1, dtype=np.int64)
    res = fista(obj.value_and_gradient, np.zeros(space.n_params), roots, penalty, kappa=0.5, rho2=0.1,
                max_iter=3000, tol=1e-12)
    ref = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=0.5, rho2=0.1, max_iter=2000,
                gtol=1e-10)
    assert res.objective == pytest.approx(ref.objective, rel=1e-9)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)


@pytest.mark.parametrize("penalty", ["l2-tree", "linf-tree"])
def test_fista_tree_solution_is_a_fixed_point_and_a_minimum(penalty):
    from crf.train.proximal import feature_forest, fista
    from suffixlm.penalties import penalty_value, prox

    space, data, obj = nested_problem()
    parent = feature_forest(space, data)
    kappa, rho2 = 0.5, 0.1
    res = fista(obj.value_and_gradient, np.zeros(space.n_params), parent, penalty, kappa=kappa, rho2=rho2,
                max_iter=3000, tol=1e-12)

    def F(w):
        v, _ = obj.value_and_gradient(w)
        return v + 0.5 * rho2 * w @ w + kappa * penalty_value(penalty, w, parent)

    x = res.x
    assert res.objective == pytest.approx(F(x), rel=1e-12)
    _, g = obj.value_and_gradient(x)
    step = 0.05
    z = prox(penalty, x - step * (g + rho2 * x), parent, step * kappa, nonneg=False)
    assert np.max(np.abs(z - x)) < 1e-5  # optimality: x = prox(x - step grad)
    rng = np.random.default_rng(1)
    for _ in range(10):
        assert F(x + 1e-3 * rng.normal(size=x.shape)) > res.objective
    # whole subtrees vanish together: a zero node has only zero descendants
    nz = x != 0
    assert not np.any(nz & (parent >= 0) & ~nz[np.maximum(parent, 0)])
    assert 0 < np.count_nonzero(x) < space.n_params


# --------------------------------------------------------------------------- incremental growth
def test_grow_adds_a_refinement_only_where_its_parent_is_active():
    from crf.train.proximal import grow

    rng = np.random.default_rng(2)
    X, y = random_corpus(rng, 40, 6, 3, vocab=6)
    rho1, rho2 = 2.0, 0.1

    def train(space, data, x0):
        obj = Objective(space, data, n_chunks=1)
        return owlqn(obj.value_and_gradient, x0, rho1=rho1, rho2=rho2, max_iter=1000, gtol=1e-10)

    rounds = [parse_patterns("u:a=%x[0,0]\nB\n"), parse_patterns("u:b=%x[-1,0]/%x[0,0]\n")]
    seen = []
    space, theta, log = grow(X, y, rounds, train, callback=seen.append)
    assert [g.round for g in log] == [0, 1] and seen == log
    # round 0 model, trained separately
    s0, d0 = FeatureSpace.build(rounds[0], X, y)
    th0 = train(s0, d0, np.zeros(s0.n_params)).x
    active_a = {s for s, _, _, _ in s0.describe(th0) if s.startswith("u:a=")}
    assert 0 < len(active_a) < sum(o.startswith("u:a=") for o in s0.observations)  # l1 dropped some
    full, _ = FeatureSpace.build(rounds[0] + rounds[1], X, y)
    want_b = {s for s in full.observations if s.startswith("u:b=") and "u:a=" + s.split("/")[-1] in active_a}
    got_b = {s for s in space.observations if s.startswith("u:b=")}
    assert got_b == want_b
    assert {s for s in space.observations if s.startswith("u:a=")} == {
        s for s in full.observations if s.startswith("u:a=")}
    assert log[1].n_features < log[1].n_candidates
    # the last round is the l1 optimum on its (reduced) feature set
    data = space.encode(X, y)
    ref = train(space, data, np.zeros(space.n_params))
    assert log[1].objective == pytest.approx(ref.objective, rel=1e-8)
    # growing a trained model (init) gives the same round
    space2, theta2, log2 = grow(X, y, rounds[1:], train, init=(s0, th0))
    assert space2.observations == space.observations
    assert log2[0].objective == pytest.approx(log[1].objective, rel=1e-8)
