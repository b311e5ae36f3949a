"""Tree-structured l2 norm: proximal step of Algorithm 2 (paper §4.3).

Solves argmin_w 1/2 ||w - v||^2 + kappa * sum_x eta_x ||w_subtree(x)||_2 on the
trie (counts all 1): an upward pass (post-order) computes the shrink factor of
every group from the already shrunk squared norm of its subtree, a downward pass
(pre-order) multiplies the factors of all ancestors (Jenatton et al., 2011).
Linear time. Works on magnitudes; signs are kept (nonneg: on max(v, 0)).
"""

import numpy as np

from .._jit import njit, prange
from ._structure import gather_post, scatter_post
from ._value import sum_parts, value_post


@njit(cache=True)
def l2_tree_post(a, parent_post, weights_post, kappa, gamma, shrink, lo, hi):
    """Algorithm 2 on a vector already in post-order (in place), on the post positions
    lo <= i < hi (whole trees).

    a float64[n] (magnitudes, post-order); parent_post int64[n]; weights_post
    float64[n]; gamma, shrink float64[n] scratch.
    """
    for i in range(lo, hi):
        gamma[i] = 0.0
    # UpwardPass
    for i in range(lo, hi):
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
    for i in range(hi - 1, lo - 1, -1):
        p = parent_post[i]
        if p >= 0:
            shrink[i] *= shrink[p]
        a[i] *= shrink[i]


@njit(cache=True, parallel=True)
def prox_l2_tree(values, order, parent_post, weights_post, kappa, nonneg, chunks, value_weights_post,
                 a, gamma, shrink):
    """In place on values float64[n] (node order); a, gamma, shrink: scratch. The ranges
    of whole trees ``chunks`` are independent: in parallel. Returns
    sum_x value_weights_post[x] ||result_subtree(x)||_2 (Omega of the result)."""
    part = np.zeros(chunks.shape[0] - 1)
    for c in prange(chunks.shape[0] - 1):
        lo = chunks[c]
        hi = chunks[c + 1]
        gather_post(values, order, nonneg, a, lo, hi)
        l2_tree_post(a, parent_post, weights_post, kappa, gamma, shrink, lo, hi)
        part[c] = value_post(a, parent_post, value_weights_post, False, gamma, lo, hi)
        scatter_post(a, order, nonneg, values, lo, hi)
    return sum_parts(part)
