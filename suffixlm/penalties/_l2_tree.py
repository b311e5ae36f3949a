"""Tree-structured l2 norm: proximal step of Algorithm 2 (paper §4.3).

Solves argmin_w 1/2 ||w - v||^2 + kappa * sum_x eta_x ||w_subtree(x)||_2 on the
trie (counts all 1): an upward pass (post-order) computes the shrink factor of
every group from the already shrunk squared norm of its subtree, a downward pass
(pre-order) multiplies the factors of all ancestors (Jenatton et al., 2011).
Linear time. Works on magnitudes; signs are kept (nonneg: on max(v, 0)).
"""

import numpy as np
from numba import njit

from ._structure import gather_post, scatter_post


@njit(cache=True)
def l2_tree_post(a, parent_post, weights_post, kappa, gamma, shrink):
    """Algorithm 2 on a vector already in post-order (in place).

    a float64[n] (magnitudes, post-order); parent_post int64[n]; weights_post
    float64[n]; gamma, shrink float64[n] scratch.
    """
    n = a.shape[0]
    for i in range(n):
        gamma[i] = 0.0
    # UpwardPass
    for i in range(n):
        g = gamma[i] + a[i] * a[i]
        s = 0.0
        if g > 0.0:
            s = 1.0 - kappa * weights_post[i] / np.sqrt(g)
            if s < 0.0:
                s = 0.0
        shrink[i] = s
        p = parent_post[i]
        if p >= 0:
            gamma[p] += s * s * g
    # DownwardPass
    for i in range(n - 1, -1, -1):
        p = parent_post[i]
        if p >= 0:
            shrink[i] *= shrink[p]
        a[i] *= shrink[i]


@njit(cache=True)
def prox_l2_tree(values, order, parent_post, weights_post, kappa, nonneg, a, gamma, shrink):
    """In place on values float64[n] (node order); a, gamma, shrink: scratch."""
    gather_post(values, order, nonneg, a)
    l2_tree_post(a, parent_post, weights_post, kappa, gamma, shrink)
    scatter_post(a, order, nonneg, values)
