"""Tree-structured l-infinity norm with random pivots: Algorithm 3 (paper §4.2-4.3).

Same problem and conventions as ``_linf_tree`` (Algorithm 4): post-order over the
(collapsed) tree; at node x the whole current subtree is clipped at the threshold
of the l1-ball projection of radius kappa * eta_x, found with Bruckner's (1984)
randomised pivoting (expected linear in the subtree size). Every subtree is a
contiguous range of the post-order, so one step costs O(sum of subtree sizes),
O(|T|^2) in the worst case (Table 1). Kept for the comparison of Figure 3.
"""

import numpy as np

from .._jit import njit
from ._structure import gather_post, scatter_post


@njit(cache=True)
def linf_tree_pivot_post(a, subtree_size, counts_post, weights_post, kappa, pv, pc, seed):
    """Algorithm 3 on a vector already in post-order (in place).

    a float64[n] magnitudes; subtree_size int64[n]; counts_post, weights_post
    float64[n]; pv, pc float64[n] scratch; seed: the pivots' random seed. The
    pivoting (procedure pi_linf of Algorithm 3) is written inline, as in
    ``_linf_tree``, so both methods pay the same per-node overhead; a three-way
    partition lets the pivot's ties leave the candidate set at once.
    """
    np.random.seed(seed)
    n = a.shape[0]
    for i in range(n):
        radius = kappa * weights_post[i]
        if radius <= 0.0:
            continue
        if subtree_size[i] == 1:  # fast path for leaves, as in _linf_tree
            c1 = counts_post[i]
            a[i] = max(a[i] - radius / c1, 0.0)
            continue
        lo = i - subtree_size[i] + 1
        m = 0
        mass = 0.0
        for j in range(lo, i + 1):
            if a[j] > 0.0:
                pv[m] = a[j]
                pc[m] = counts_post[j]
                mass += a[j] * counts_post[j]
                m += 1
        if m == 0:
            continue
        if mass <= radius:
            for j in range(lo, i + 1):
                a[j] = 0.0
            continue
        # threshold r with sum pc (pv - r)_+ = radius, by random pivots
        s = 0.0
        c = 0.0
        start = 0
        stop = m  # candidate set I = pv[start:stop]
        while start < stop:
            rho = pv[start + np.random.randint(stop - start)]
            gt = start  # partition I into  > rho | == rho | < rho
            eq = start
            lt = stop
            ds = 0.0
            dc = 0.0
            while eq < lt:
                v = pv[eq]
                if v > rho:
                    ds += v * pc[eq]
                    dc += pc[eq]
                    pv[eq], pv[gt] = pv[gt], v
                    pc[eq], pc[gt] = pc[gt], pc[eq]
                    gt += 1
                    eq += 1
                elif v < rho:
                    lt -= 1
                    pv[eq], pv[lt] = pv[lt], v
                    pc[eq], pc[lt] = pc[lt], pc[eq]
                else:
                    ds += v * pc[eq]
                    dc += pc[eq]
                    eq += 1
            if (s + ds) - (c + dc) * rho < radius:
                s += ds
                c += dc
                start = lt  # I := L
            else:
                stop = gt  # I := U minus the pivot (and its ties)
        t = (s - radius) / c
        if t < 0.0:
            t = 0.0
        for j in range(lo, i + 1):
            if a[j] > t:
                a[j] = t


@njit(cache=True)
def prox_linf_tree_pivot(values, order, subtree_size, counts_post, weights_post, kappa,
                         nonneg, seed, a, pv, pc):
    """In place on values float64[n] (node order); a, pv, pc: scratch."""
    gather_post(values, order, nonneg, a, 0, order.shape[0])
    linf_tree_pivot_post(a, subtree_size, counts_post, weights_post, kappa, pv, pc, seed)
    scatter_post(a, order, nonneg, values, 0, order.shape[0])
