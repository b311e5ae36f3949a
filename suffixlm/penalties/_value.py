"""Values of the tree-structured norms (paper eq. 8), for objective monitoring.

l2-tree: sum_x eta_x ||w_subtree(x)||_2 ; linf-tree: sum_x eta_x max_subtree(x) |w|.
For linf-tree on a collapsed tree, eta_x is the sum of the weights of the c_x
groups node x stands for; those groups all have the same infinity norm when the
values on the collapsed path are equal, so the value equals the expanded trie's.
"""

import numpy as np

from .._jit import njit, prange
from ._structure import gather_post


@njit(cache=True)
def value_post(a, parent_post, weights_post, infinity, acc, lo, hi):
    """sum_x eta_x ||a_subtree(x)|| over the post positions lo <= x < hi (whole trees)
    of magnitudes ``a`` already in post-order; acc float64[n] scratch."""
    for i in range(lo, hi):
        acc[i] = 0.0
    s = 0.0
    for i in range(lo, hi):
        v = a[i]
        if infinity:
            g = max(acc[i], v)
            s += weights_post[i] * g
        else:
            g = acc[i] + v * v
            s += weights_post[i] * np.sqrt(g)
        p = parent_post[i]
        if p >= 0:
            if infinity:
                acc[p] = max(acc[p], g)
            else:
                acc[p] += g
    return s


@njit(cache=True)
def sum_parts(part):
    """The parts added in their order (a fixed order: the same for any thread count)."""
    total = 0.0
    for c in range(part.shape[0]):
        total += part[c]
    return total


@njit(cache=True, parallel=True)
def value_tree(values, order, parent_post, weights_post, infinity, acc, a, chunks):
    """sum_x eta_x ||w_subtree(x)|| with the inf-norm if infinity else the 2-norm.

    values float64[n] (node order); order, parent_post int64[n]; weights_post
    float64[n]; acc, a float64[n] scratch; chunks: ranges of whole trees
    (``ForestStructure.chunks``), in parallel.
    """
    part = np.zeros(chunks.shape[0] - 1)
    for c in prange(chunks.shape[0] - 1):
        lo = chunks[c]
        hi = chunks[c + 1]
        gather_post(values, order, False, a, lo, hi)
        part[c] = value_post(a, parent_post, weights_post, infinity, acc, lo, hi)
    return sum_parts(part)
