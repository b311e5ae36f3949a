"""Values of the tree-structured norms (paper eq. 8), for objective monitoring.

l2-tree: sum_x eta_x ||w_subtree(x)||_2 ; linf-tree: sum_x eta_x max_subtree(x) |w|.
For linf-tree on a collapsed tree, eta_x is the sum of the weights of the c_x
groups node x stands for; those groups all have the same infinity norm when the
values on the collapsed path are equal, so the value equals the expanded trie's.
"""

import numpy as np
from numba import njit


@njit(cache=True)
def value_tree(values, order, parent_post, weights_post, infinity, acc):
    """sum_x eta_x ||w_subtree(x)|| with the inf-norm if infinity else the 2-norm.

    values float64[n] (node order); order, parent_post int64[n]; weights_post
    float64[n]; acc float64[n] scratch (squared norms or maxima of subtrees).
    """
    n = order.shape[0]
    for i in range(n):
        acc[i] = 0.0
    s = 0.0
    for i in range(n):
        v = abs(values[order[i]])
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
