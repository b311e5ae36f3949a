"""Tree proximal operators against SPAMS (optional: ``pip install spams-bin``).

spams.proximalTree solves argmin_w 1/2 ||w - u||^2 + lambda1 sum_g eta_g ||w_g||
(regul 'tree-l2' / 'tree-linf', pos=True for w >= 0) on a tree of groups whose
variables are numbered in depth-first pre-order. Trees here are single-rooted:
a forest would need a virtual root group of weight 0, for which SPAMS 2.6 tree-l2
returns NaN (0/0) whenever the forest is zeroed.
"""

import numpy as np
import pytest

from suffixlm.penalties import prox

spams = pytest.importorskip("spams")
ssp = pytest.importorskip("scipy.sparse")


def spams_tree(parent, eta):
    """SPAMS tree dict for one tree; returns (tree, pre) with pre = pre-order nodes.

    Group k is node pre[k] and owns variable k (its own value).
    """
    n = len(parent)
    children = [[] for _ in range(n)]
    roots = []
    for x, p in enumerate(parent):
        (roots if p < 0 else children[p]).append(x)
    assert len(roots) == 1
    pre = []
    stack = roots
    while stack:
        x = stack.pop()
        pre.append(x)
        stack.extend(reversed(children[x]))
    group = {x: k for k, x in enumerate(pre)}
    own = np.arange(n, dtype=np.int32)
    n_own = np.ones(n, dtype=np.int32)
    eta_g = np.asarray(eta, dtype=float)[pre]
    inclusion = np.zeros((n, n), dtype=bool)  # [child group, parent group]
    for x in pre:
        if parent[x] >= 0:
            inclusion[group[x], group[parent[x]]] = True
    tree = {"eta_g": eta_g, "groups": ssp.csc_matrix(inclusion, dtype=bool),
            "own_variables": own, "N_own_variables": n_own}
    return tree, np.array(pre)


@pytest.mark.parametrize("name,regul", [("l2-tree", "tree-l2"), ("linf-tree", "tree-linf"),
                                        ("linf-tree-pivot", "tree-linf")])
@pytest.mark.parametrize("pos", [True, False])
def test_against_spams(name, regul, pos):
    rng = np.random.default_rng(11)
    for trial in range(10):
        n = int(rng.integers(1, 150))
        parent = np.array([-1] + [int(rng.integers(0, x)) if rng.random() < 0.3
                                  else int(rng.integers(max(0, x - 5), x)) for x in range(1, n)])
        perm = rng.permutation(n)  # unordered numbering
        parent = np.where(parent >= 0, perm[np.maximum(parent, 0)], -1)[np.argsort(perm)]
        v = rng.normal(size=n) * 2
        eta = rng.uniform(0.1, 2.0, size=n)
        kappa = float(rng.choice([0.05, 0.3, 1.5]))
        tree, pre = spams_tree(parent, eta)
        u = np.asfortranarray(v[pre].reshape(-1, 1))
        out = spams.proximalTree(u, tree, lambda1=kappa, regul=regul, pos=pos, numThreads=1)
        want = np.empty(n)
        want[pre] = out[:, 0]
        got = prox(name, v, parent, kappa, weights=eta, nonneg=pos)
        np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-9)
