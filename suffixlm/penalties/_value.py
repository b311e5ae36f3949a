"""Values of the tree-structured norms (paper eq. 8), for objective monitoring.

l2-tree: sum_x eta_x ||w_subtree(x)||_2 ; linf-tree: sum_x eta_x max_subtree(x) |w|.
For linf-tree on a collapsed tree, eta_x is the sum of the weights of the c_x
groups node x stands for; those groups all have the same infinity norm when the
values on the collapsed path are equal, so the value equals the expanded trie's.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def value_l2_tree(values, order, parent_post, weights_post, acc):
    """values float64[n] (node order); acc float64[n] scratch."""
    n = order.shape[0]
    for i in range(n):
        acc[i] = 0.0
    s = 0.0
    for i in range(n):
        v = values[order[i]]
        g = acc[i] + v * v
        s += weights_post[i] * np.sqrt(g)
        p = parent_post[i]
        if p >= 0:
            acc[p] += g
    return s


@njit(cache=True)
def value_linf_tree(values, order, parent_post, weights_post, acc):
    """values float64[n] (node order); acc float64[n] scratch."""
    n = order.shape[0]
    for i in range(n):
        acc[i] = 0.0
    s = 0.0
    for i in range(n):
        m = abs(values[order[i]])
        if acc[i] > m:
            m = acc[i]
        s += weights_post[i] * m
        p = parent_post[i]
        if p >= 0 and m > acc[p]:
            acc[p] = m
    return s
