"""Proximal operators against slow references written plainly here.

References: soft-thresholding / rescaling coordinate by coordinate; for the tree
norms the composition of the group proximal steps children before parents
(Jenatton et al., 2011), each the residual of an l2-ball or l1-ball projection
(the l1 one by sorting, Duchi et al. 2008); collapsed trees by expanding every
node into a chain of c trie nodes; a generic solver (scipy SLSQP) on tiny
problems; the variational inequality characterising a proximal point.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import minimize

from suffixlm.penalties import (
    NAMES,
    ForestStructure,
    PenaltyError,
    depth_weights,
    penalty_value,
    penalty_value_fast,
    prox,
    prox_inplace,
)

TREE = ("l2-tree", "linf-tree", "linf-tree-pivot")
COLLAPSIBLE = ("l1", "l2sq", "linf-tree", "linf-tree-pivot")


# ---------------------------------------------------------------- random forests
def random_forest(rng, n, n_roots=1, heavy=True):
    """Random forest, nodes numbered in a random order (parent ids not sorted)."""
    parent = np.full(n, -1, dtype=np.int64)
    n_roots = max(1, min(n_roots, n))
    for x in range(n_roots, n):
        if heavy and rng.random() < 0.5:
            parent[x] = rng.integers(0, min(x, n_roots + 2))  # hubs: heavy-tailed branching
        else:
            parent[x] = rng.integers(max(0, x - 4), x)  # chains: deep paths
    perm = rng.permutation(n)
    relabelled = np.full(n, -1, dtype=np.int64)
    relabelled[perm] = np.where(parent >= 0, perm[np.maximum(parent, 0)], -1)
    return relabelled


def random_values(rng, n, zeros=0.2):
    v = rng.normal(size=n) * rng.choice([0.3, 1.0, 3.0], size=n)
    v[rng.random(n) < zeros] = 0.0
    return v


def descendants(parent):
    """subtree[x] = sorted array of x and all its descendants (by climbing)."""
    n = len(parent)
    members = [[] for _ in range(n)]
    for y in range(n):
        x = y
        while x >= 0:
            members[x].append(y)
            x = parent[x]
    return [np.array(sorted(m)) for m in members]


def depths(parent):
    d = np.zeros(len(parent), dtype=np.int64)
    for y in range(len(parent)):
        x = parent[y]
        while x >= 0:
            d[y] += 1
            x = parent[x]
    return d


# ---------------------------------------------------------------- references
def l1_ball_projection(u, r):
    """Projection of u on {||z||_1 <= r}, by sorting (Duchi et al., 2008)."""
    a = np.abs(u)
    if a.sum() <= r:
        return u.copy()
    if r <= 0:
        return np.zeros_like(u)
    s = np.sort(a)[::-1]
    cs = np.cumsum(s)
    j = np.arange(1, len(s) + 1)
    rho = np.nonzero(s - (cs - r) / j > 0)[0][-1]
    theta = (cs[rho] - r) / (rho + 1)
    return np.sign(u) * np.maximum(a - theta, 0)


def l2_ball_projection(u, r):
    norm = np.linalg.norm(u)
    return u.copy() if norm <= r else u * (r / norm)


def reference_prox(name, v, parent, kappa, weights, nonneg):
    """Unit-metric prox on the trie (counts 1)."""
    w = np.maximum(v, 0.0) if nonneg else v.astype(float).copy()
    if name == "l1":
        return np.sign(w) * np.maximum(np.abs(w) - kappa * weights, 0.0)
    if name == "l2sq":
        return w / (1.0 + kappa * weights)
    groups = descendants(parent)
    for x in np.argsort(-depths(parent), kind="stable"):  # children before parents
        g = groups[x]
        # prox of r||.|| = residual of the projection on the dual-norm ball
        if name == "l2-tree":
            w[g] = w[g] - l2_ball_projection(w[g], kappa * weights[x])
        else:
            w[g] = w[g] - l1_ball_projection(w[g], kappa * weights[x])
    return w


def reference_omega(name, w, parent, weights):
    groups = descendants(parent)
    if name == "l1":
        return float(np.sum(weights * np.abs(w)))
    if name == "l2sq":
        return float(0.5 * np.sum(weights * w * w))
    if name == "l2-tree":
        return float(sum(weights[x] * np.linalg.norm(w[g]) for x, g in enumerate(groups)))
    return float(sum(weights[x] * np.abs(w[g]).max() for x, g in enumerate(groups)))


def expand(parent, counts):
    """Trie of a collapsed forest: node x -> chain of counts[x] trie nodes.

    Returns (trie_parent, top, bottom): trie ids of the chain ends of every node.
    """
    n = len(parent)
    top = np.zeros(n, dtype=np.int64)
    bottom = np.zeros(n, dtype=np.int64)
    nxt = 0
    for x in range(n):
        top[x] = nxt
        bottom[x] = nxt + counts[x] - 1
        nxt += counts[x]
    trie_parent = np.empty(nxt, dtype=np.int64)
    for x in range(n):
        trie_parent[top[x]] = bottom[parent[x]] if parent[x] >= 0 else -1
        for k in range(1, counts[x]):
            trie_parent[top[x] + k] = top[x] + k - 1
    return trie_parent, top, bottom


def objective(name, w, v, parent, kappa, counts, weights):
    c = np.ones_like(v) if counts is None else counts
    return 0.5 * np.sum(c * (w - v) ** 2) + kappa * reference_omega(name, w, parent, weights)


# ---------------------------------------------------------------- tests
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nonneg", [True, False])
def test_prox_matches_reference(name, nonneg):
    rng = np.random.default_rng(1)
    for trial in range(12):
        n = int(rng.integers(1, 80))
        parent = random_forest(rng, n, n_roots=int(rng.integers(1, 4)))
        v = random_values(rng, n)
        weights = rng.uniform(0.0, 2.0, size=n) if trial % 2 else np.ones(n)
        kappa = float(rng.choice([0.0, 0.05, 0.3, 1.0, 4.0]))
        got = prox(name, v, parent, kappa, weights=weights, nonneg=nonneg)
        want = reference_prox(name, v, parent, kappa, weights, nonneg)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)
        assert penalty_value(name, got, parent, weights=weights) == pytest.approx(
            reference_omega(name, got, parent, weights), rel=1e-12, abs=1e-12)
        if nonneg:
            assert got.min() >= 0.0


@pytest.mark.parametrize("name", TREE)
def test_deep_chain_and_wide_star(name):
    """Long pops from big heaps: a chain of 600 under a star of 600 leaves."""
    rng = np.random.default_rng(2)
    n = 1200
    parent = np.concatenate([[-1], np.zeros(599, dtype=np.int64), np.arange(599, 1199)])
    perm = rng.permutation(n)
    parent_perm = np.full(n, -1)
    parent_perm[perm] = np.where(parent >= 0, perm[np.maximum(parent, 0)], -1)
    v = rng.exponential(size=n)
    for kappa in (0.01, 0.2):
        got = prox(name, v, parent_perm, kappa)
        want = reference_prox(name, v, parent_perm, kappa, np.ones(n), True)
        np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", COLLAPSIBLE)
@pytest.mark.parametrize("weighting", ["unit", "alpha"])
def test_collapsed_equals_expanded(name, weighting):
    """Propositions 1-2: a node of count c acts as c equal trie coordinates."""
    rng = np.random.default_rng(3)
    for trial in range(10):
        n = int(rng.integers(1, 50))
        parent = random_forest(rng, n, n_roots=int(rng.integers(1, 3)))
        counts = rng.integers(1, 5, size=n)
        trie_parent, top, bottom = expand(parent, counts)
        m = len(trie_parent)
        v = random_values(rng, n)
        v_trie = np.empty(m)
        for x in range(n):
            v_trie[top[x]:bottom[x] + 1] = v[x]
        if weighting == "unit" or name in ("l1", "l2sq"):
            # equal trie weights inside a collapsed node
            per = rng.uniform(0.2, 2.0, size=n) if weighting == "alpha" else np.ones(n)
            w_trie = np.empty(m)
            for x in range(n):
                w_trie[top[x]:bottom[x] + 1] = per[x]
            weights = per * counts
        else:
            alpha = float(rng.choice([0.5, 0.85, 1.0]))
            trie_depth = depths(trie_parent)
            w_trie = alpha ** trie_depth.astype(float)
            weights = depth_weights(trie_depth[bottom], counts, alpha)
        kappa = float(rng.choice([0.05, 0.3, 1.0]))
        for nonneg in (True, False):
            got = prox(name, v, parent, kappa, counts=counts, weights=weights, nonneg=nonneg)
            trie = prox(name, v_trie, trie_parent, kappa, weights=w_trie, nonneg=nonneg)
            want = reference_prox(name, v_trie, trie_parent, kappa, w_trie, nonneg)
            np.testing.assert_allclose(trie, want, rtol=1e-10, atol=1e-12)
            for x in range(n):  # Proposition 1: chains stay constant, equal to collapsed
                np.testing.assert_allclose(trie[top[x]:bottom[x] + 1], got[x], rtol=1e-10, atol=1e-12)
            assert penalty_value(name, got, parent, counts=counts, weights=weights) == pytest.approx(
                penalty_value(name, trie, trie_parent, weights=w_trie), rel=1e-10, abs=1e-12)
        if weighting == "unit":  # default weights are the counts
            np.testing.assert_allclose(prox(name, v, parent, kappa, counts=counts),
                                       prox(name, v_trie, trie_parent, kappa)[bottom],
                                       rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("nonneg", [True, False])
def test_variational_inequality(name, nonneg):
    """p = prox(v) iff <C(v - p), w - p> <= kappa (Omega(w) - Omega(p)) for feasible w.

    With counts (metric C = diag(c)) for the collapsible penalties; also p beats
    random feasible perturbations of itself on the objective.
    """
    rng = np.random.default_rng(4)
    for trial in range(8):
        n = int(rng.integers(2, 40))
        parent = random_forest(rng, n, n_roots=int(rng.integers(1, 3)))
        counts = np.ones(n, dtype=np.int64) if name == "l2-tree" else rng.integers(1, 4, size=n)
        weights = rng.uniform(0.0, 2.0, size=n)
        v = random_values(rng, n)
        kappa = float(rng.choice([0.1, 0.5, 2.0]))
        p = prox(name, v, parent, kappa, counts=counts, weights=weights, nonneg=nonneg)
        assert_is_prox(rng, name, p, v, parent, kappa, counts, weights, nonneg)


def assert_is_prox(rng, name, p, v, parent, kappa, metric, weights, nonneg):
    """p = argmin 1/2 sum metric (w - v)^2 + kappa Omega(w) (w >= 0 if nonneg) iff
    <metric (v - p), w - p> <= kappa (Omega(w) - Omega(p)) for every feasible w; also p
    beats random feasible perturbations of itself."""
    n = len(v)
    omega_p = reference_omega(name, p, parent, weights)

    def f(w):
        return 0.5 * np.sum(metric * (w - v) ** 2) + kappa * reference_omega(name, w, parent, weights)

    f_p = f(p)
    for _ in range(30):
        w = rng.normal(size=n) * rng.choice([0.1, 1.0, 3.0])
        w[rng.random(n) < 0.3] = 0.0
        if nonneg:
            w = np.abs(w)
        lhs = np.sum(metric * (v - p) * (w - p))
        rhs = kappa * (reference_omega(name, w, parent, weights) - omega_p)
        assert lhs <= rhs + 1e-9 * (1 + abs(rhs))
        for eps in (1e-6, 1e-3, 0.1):
            q = p + eps * rng.normal(size=n)
            if nonneg:
                q = np.maximum(q, 0.0)
            assert f_p <= f(q) + 1e-12


@pytest.mark.parametrize("name", ["l1", "l2sq", "linf-tree", "linf-tree-pivot"])
@pytest.mark.parametrize("nonneg", [True, False])
def test_prox_in_a_real_diagonal_metric(name, nonneg):
    """``in_metric`` with a scale varying inside the groups (the LM's per-param
    preconditioner) gives the prox in the metric diag(counts * scale)."""
    from suffixlm.penalties import make_penalty

    rng = np.random.default_rng(14)
    for trial in range(10):
        n = int(rng.integers(2, 40))
        parent = random_forest(rng, n, n_roots=int(rng.integers(1, 3)))
        counts = rng.integers(1, 4, size=n)
        weights = rng.uniform(0.0, 2.0, size=n)
        scale = np.exp(rng.uniform(-3.0, 3.0, size=n))
        metric = counts * scale
        v = random_values(rng, n)
        kappa = float(rng.choice([0.1, 0.5, 2.0, 8.0]))
        pen = make_penalty(name, ForestStructure.from_parent(parent, counts=counts, weights=weights), 1.0,
                           nonneg=nonneg).in_metric(scale)
        p, omega = pen.prox_value(v.copy(), kappa)
        assert omega == pytest.approx(reference_omega(name, p, parent, weights), rel=1e-9, abs=1e-12)
        assert_is_prox(rng, name, p, v, parent, kappa, metric, weights, nonneg)


def test_l2_tree_metric_must_be_constant_per_tree():
    from suffixlm.penalties import PenaltyError, make_penalty

    parent = np.array([-1, 0, 0, -1, 3])
    pen = make_penalty("l2-tree", ForestStructure.from_parent(parent), 1.0)
    pen.in_metric(np.array([2.0, 2.0, 2.0, 0.5, 0.5]))  # constant on each tree: fine
    with pytest.raises(PenaltyError, match="constant on every tree"):
        pen.in_metric(np.array([2.0, 1.0, 2.0, 0.5, 0.5]))


def slsqp_prox(name, v, parent, kappa, weights, nonneg):
    """Generic solver: epigraph form, w >= 0 as bounds (the constrained problem)."""
    n = len(v)
    groups = descendants(parent)
    if name == "l2sq":
        fun = lambda z: 0.5 * np.sum((z - v) ** 2) + kappa * 0.5 * np.sum(weights * z * z)
        jac = lambda z: (z - v) + kappa * weights * z
        res = minimize(fun, np.zeros(n), jac=jac, method="SLSQP",
                       bounds=[(0, None) if nonneg else (None, None)] * n,
                       options={"ftol": 1e-15, "maxiter": 1000})
        return res.x
    # z = (w, s): s_x >= norm of group x (l1: of coordinate x)
    def fun(z):
        return 0.5 * np.sum((z[:n] - v) ** 2) + kappa * np.dot(weights, z[n:])

    def jac(z):
        return np.concatenate([z[:n] - v, kappa * weights])

    cons = []
    for x in range(n):
        g = [x] if name == "l1" else list(groups[x])
        if name == "l2-tree":
            cons.append({"type": "ineq",
                         "fun": lambda z, g=g, x=x: z[n + x] ** 2 - np.sum(z[g] ** 2)})
            cons.append({"type": "ineq", "fun": lambda z, x=x: z[n + x]})
        else:
            for y in g:
                cons.append({"type": "ineq", "fun": lambda z, y=y, x=x: z[n + x] - z[y]})
                cons.append({"type": "ineq", "fun": lambda z, y=y, x=x: z[n + x] + z[y]})
    bounds = [(0, None) if nonneg else (None, None)] * n + [(0, None)] * n
    w0 = np.maximum(v, 0) if nonneg else v  # away from w = 0, where s^2 >= |w|^2 degenerates
    z0 = np.concatenate([w0, [np.abs(w0[g]).sum() + 1.0 for g in groups]])
    res = minimize(fun, z0, jac=jac, method="SLSQP", constraints=cons, bounds=bounds,
                   options={"ftol": 1e-15, "maxiter": 1000})
    return res.x[:n]


@pytest.mark.parametrize("name", ["l1", "l2sq", "l2-tree", "linf-tree"])
@pytest.mark.parametrize("nonneg", [True, False])
def test_generic_solver(name, nonneg):
    """On tiny problems, prox (projection on w >= 0 then prox when nonneg) matches the
    constrained problem solved by SLSQP."""
    rng = np.random.default_rng(5)
    for trial in range(6):
        n = int(rng.integers(1, 6))
        parent = random_forest(rng, n, n_roots=1 + trial % 2)
        v = rng.normal(size=n) * 2
        weights = rng.uniform(0.3, 1.5, size=n)
        kappa = float(rng.choice([0.2, 0.7]))
        got = prox(name, v, parent, kappa, weights=weights, nonneg=nonneg)
        generic = slsqp_prox(name, v, parent, kappa, weights, nonneg)
        f_got = objective(name, got, v, parent, kappa, None, weights)
        f_generic = objective(name, generic, v, parent, kappa, None, weights)
        assert f_got <= f_generic + 1e-9
        # 1-strong convexity: ||generic - got||^2 / 2 <= f_generic - f_got
        np.testing.assert_allclose(got, generic, atol=1e-4)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(-1, 40), st.floats(-5, 5), st.integers(1, 3)),
                min_size=1, max_size=40),
       st.floats(0.0, 3.0), st.booleans())
def test_heap_equals_pivot_property(rows, kappa, nonneg):
    parent = np.array([p if p < x else -1 for x, (p, _, _) in enumerate(rows)])
    v = np.array([r[1] for r in rows])
    counts = np.array([r[2] for r in rows])
    heap = prox("linf-tree", v, parent, kappa, counts=counts, nonneg=nonneg)
    pivot = prox("linf-tree-pivot", v, parent, kappa, counts=counts, nonneg=nonneg)
    np.testing.assert_allclose(heap, pivot, rtol=1e-10, atol=1e-12)
    assert np.all(np.abs(heap) <= np.abs(v) + 1e-15)  # clipping never grows a value
    assert np.all(heap * v >= 0)  # nor flips a sign


def test_structure_post_order():
    rng = np.random.default_rng(6)
    parent = random_forest(rng, 200, n_roots=5)
    s = ForestStructure.from_parent(parent)
    assert sorted(s.order) == list(range(200))
    assert np.all(s.position[s.order] == np.arange(200))
    groups = descendants(parent)
    for i in range(200):
        x = s.order[i]
        assert sorted(s.order[i - s.subtree_size[i] + 1: i + 1]) == list(groups[x])
        p = parent[x]
        assert s.parent_post[i] == (-1 if p < 0 else s.position[p])
        assert s.parent_post[i] == -1 or s.parent_post[i] > i
    for x in range(200):
        assert sorted(s.children[s.child_offsets[x]:s.child_offsets[x + 1]]) == \
            sorted(np.flatnonzero(parent == x))
    assert sorted(s.roots) == sorted(np.flatnonzero(parent < 0))


@pytest.mark.parametrize("name", NAMES)
def test_inplace_reuse(name):
    """Repeated in-place calls on one structure (kept scratch) give fresh results."""
    rng = np.random.default_rng(7)
    parent = random_forest(rng, 300, n_roots=3)
    counts = None if name == "l2-tree" else rng.integers(1, 3, size=300)
    s = ForestStructure.from_parent(parent, counts=counts)
    for trial in range(3):
        v = random_values(rng, 300)
        w = v.copy()
        prox_inplace(name, w, s, 0.4, nonneg=bool(trial % 2))
        np.testing.assert_array_equal(w, prox(name, v, parent, 0.4, counts=counts,
                                              nonneg=bool(trial % 2)))
        assert penalty_value_fast(name, w, s) == penalty_value(name, w, parent, counts=counts)


def test_depth_weights():
    rng = np.random.default_rng(8)
    depth = rng.integers(0, 12, size=100)
    counts = np.minimum(rng.integers(1, 6, size=100), depth + 1)
    for alpha in (0.5, 0.85, 1.0, 1.1):
        want = [sum(alpha ** d for d in range(D - c + 1, D + 1)) for D, c in zip(depth, counts)]
        np.testing.assert_allclose(depth_weights(depth, counts, alpha), want, rtol=1e-12)
    assert depth_weights(np.array([0]), np.array([1]), 0.7)[0] == 1.0  # root group kept
    with pytest.raises(PenaltyError):
        depth_weights(np.array([1]), np.array([3]), 0.5)


def test_bad_input():
    v = np.zeros(3)
    cases = [
        (lambda: prox("l3", v, [-1, 0, 0], 1.0), "unknown penalty"),
        (lambda: prox("l1", v, [-1, 0, 5], 1.0), "parent[2] = 5"),
        (lambda: prox("l1", v, [1, 2, 0], 1.0), "cycle"),
        (lambda: prox("l1", v, [-1, 1, 0], 1.0), "own parent"),
        (lambda: prox("l1", v, [-1, 0], 1.0), "values has 3 entries"),
        (lambda: prox("l1", v, [-1, 0, 0], -1.0), "kappa"),
        (lambda: prox("l1", v, [-1, 0, 0], 1.0, counts=[1, 0, 1]), "counts[1]"),
        (lambda: prox("l1", v, [-1, 0, 0], 1.0, weights=[1, -1, 1]), "weights[1]"),
        (lambda: prox("l2-tree", v, [-1, 0, 0], 1.0, counts=[1, 2, 1]), "counts all 1"),
        (lambda: prox("l1", [0, np.nan, 0], [-1, 0, 0], 1.0), "not finite"),
        (lambda: penalty_value("l2-tree", v, [-1, 0, 0], counts=[2, 1, 1]), "counts all 1"),
    ]
    for call, message in cases:
        with pytest.raises(PenaltyError, match=message.replace("[", r"\[").replace("]", r"\]")) as e:
            call()
        assert isinstance(e.value, ValueError) and "\n" not in str(e.value)


def test_empty_and_kappa_zero():
    rng = np.random.default_rng(9)
    for name in NAMES:
        assert prox(name, np.zeros(0), np.zeros(0, dtype=np.int64), 1.0).shape == (0,)
        parent = random_forest(rng, 30)
        v = random_values(rng, 30)
        np.testing.assert_array_equal(prox(name, v, parent, 0.0, nonneg=False), v)
        np.testing.assert_array_equal(prox(name, v, parent, 0.0), np.maximum(v, 0))


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("scaled", [False, True])
def test_prox_value_is_prox_then_value(name, scaled):
    """``prox_value`` (the tree norms compute Omega inside the operator) equals prox then
    value, also for a penalty rescaled to a metric (whose value keeps the true weights),
    on a forest of many trees cut into several parallel chunks."""
    from suffixlm.penalties import make_penalty

    rng = np.random.default_rng(11)
    n = 3000
    parent = random_forest(rng, n, n_roots=200)
    counts = None if name == "l2-tree" else rng.integers(1, 3, size=n)
    s = ForestStructure.from_parent(parent, counts=counts, weights=rng.uniform(0.2, 2.0, size=n))
    assert s.chunks.shape[0] > 3 and s.chunks[-1] == n
    pen = make_penalty(name, s, 0.7, nonneg=False)
    if scaled:
        # a scale constant on every tree (as the LM's per-word preconditioner)
        root = np.arange(n)
        while np.any(parent[root] >= 0):
            root = np.where(parent[root] >= 0, parent[root], root)
        pen = pen.in_metric(rng.uniform(0.5, 2.0, size=n)[root])
    for _ in range(3):
        v = random_values(rng, n)
        a, omega = pen.prox_value(v.copy(), 0.3)
        b = pen.prox(v.copy(), 0.3)
        np.testing.assert_array_equal(a, b)
        assert omega == pytest.approx(pen.value(b), rel=1e-12, abs=1e-300)


@pytest.mark.parametrize("name", ["l2-tree", "linf-tree"])
def test_parallel_prox_independent_of_thread_count(name):
    """The chunked parallel kernels give bit-identical results with 1 and 2 threads."""
    import numba

    from suffixlm.penalties import make_penalty

    rng = np.random.default_rng(5)
    n = 5000
    parent = random_forest(rng, n, n_roots=300)
    s = ForestStructure.from_parent(parent)
    pen = make_penalty(name, s, 0.5)
    v = random_values(rng, n)
    before = numba.get_num_threads()
    out = []
    try:
        for k in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(k)
            out.append(pen.prox_value(v.copy(), 0.2) + (pen.value(v),))
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(out[0][0], out[1][0])
    assert out[0][1:] == out[1][1:]
