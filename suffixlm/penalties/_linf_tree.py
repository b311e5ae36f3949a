"""Tree-structured l-infinity norm with k-best heaps: Algorithm 4 (paper §4.5).

The proximal step of kappa * sum_x eta_x ||w_subtree(x)||_inf is the composition,
children before parents, of the proximal steps of each group (Jenatton et al.,
2011); the prox of r ||.||_inf clips the group at the threshold t where the l1
mass above t equals r (residual of the l1-ball projection, eq. 11), or zeroes the
group when its l1 norm is <= r. A collapsed node of count c is c equal trie
coordinates and its c nested groups act as one clip with r = kappa * eta_x, eta_x
the sum of their weights (Propositions 1-2: c * kappa with unit weights).

Post-order traversal; every node melds its children's max-heaps of (value, count)
entries with its own entry, pops only the entries above the threshold (k of them)
and pushes them back as one entry (threshold, total count). Heaps are pairing
heaps in flat arrays (meld O(1), pop amortised O(log d)), so the step is
O(d k log d). The clips are nested, so the final value of a node is its value
clipped at the smallest threshold on its path to the root: one downward pass.
"""

import numpy as np
from numba import njit

from ._structure import gather_post, scatter_post


@njit(cache=True, inline="always")
def _link(a, b, hval, hchild, hsib):
    """Meld two pairing-heap roots (either may be -1); returns the new root."""
    if a < 0:
        return b
    if b < 0:
        return a
    if hval[a] >= hval[b]:
        hsib[b] = hchild[a]
        hchild[a] = b
        return a
    hsib[a] = hchild[b]
    hchild[b] = a
    return b


@njit(cache=True)
def _pop(root, hval, hchild, hsib):
    """Delete the max of a pairing heap (two-pass pairing); returns the new root."""
    a = hchild[root]
    acc = -1
    while a >= 0:  # first pass: link pairs left to right, stack them via hsib
        b = hsib[a]
        if b < 0:
            hsib[a] = acc
            acc = a
            break
        nxt = hsib[b]
        m = _link(a, b, hval, hchild, hsib)
        hsib[m] = acc
        acc = m
        a = nxt
    if acc < 0:
        return -1
    res = acc  # second pass: meld right to left
    nxt = hsib[res]
    while nxt >= 0:
        t = nxt
        nxt = hsib[t]
        res = _link(res, t, hval, hchild, hsib)
    return res


@njit(cache=True)
def linf_tree_post(a, parent_post, counts_post, weights_post, kappa,
                   hval, hcnt, hchild, hsib, hroot, tau, thr):
    """Algorithm 4 on a vector already in post-order (in place).

    a float64[n] magnitudes in post-order; parent_post int64[n]; counts_post,
    weights_post float64[n]. Scratch: hval, hcnt, tau, thr float64[n]; hchild,
    hsib, hroot int64[n]. Heap entry ids are post positions (an entry merged from
    popped ones reuses the id of the first popped).
    """
    n = a.shape[0]
    inf = np.inf
    for i in range(n):
        hroot[i] = -1
        tau[i] = 0.0
    for i in range(n):
        root = hroot[i]
        mass = tau[i]  # l1 norm of the (already clipped) subtree: tau of Alg. 4
        if a[i] > 0.0:  # zero entries never reach a threshold: keep them out
            hval[i] = a[i]
            hcnt[i] = counts_post[i]
            hchild[i] = -1
            root = _link(root, i, hval, hchild, hsib)
            mass += counts_post[i] * a[i]
        radius = kappa * weights_post[i]
        t = inf
        if root >= 0 and radius > 0.0:
            if mass <= radius:
                t = 0.0
                root = -1
                mass = 0.0
            else:
                s = 0.0
                c = 0.0
                first = -1
                while root >= 0:
                    v = hval[root]
                    if s - c * v >= radius:
                        break
                    if first < 0:
                        first = root
                    s += v * hcnt[root]
                    c += hcnt[root]
                    root = _pop(root, hval, hchild, hsib)
                t = (s - radius) / c
                if t < 0.0:  # rounding when mass ~ radius
                    t = 0.0
                hval[first] = t
                hcnt[first] = c
                hchild[first] = -1
                root = _link(root, first, hval, hchild, hsib)
                mass -= radius
        thr[i] = t
        p = parent_post[i]
        if p >= 0:
            hroot[p] = _link(hroot[p], root, hval, hchild, hsib)
            tau[p] += mass
    for i in range(n - 1, -1, -1):
        p = parent_post[i]
        t = thr[i]
        if p >= 0 and thr[p] < t:
            t = thr[p]
            thr[i] = t
        if a[i] > t:
            a[i] = t


@njit(cache=True)
def prox_linf_tree(values, order, parent_post, counts_post, weights_post, kappa, nonneg,
                   a, hval, hcnt, hchild, hsib, hroot, tau, thr):
    """In place on values float64[n] (node order); the other arrays as above."""
    gather_post(values, order, nonneg, a)
    linf_tree_post(a, parent_post, counts_post, weights_post, kappa,
                   hval, hcnt, hchild, hsib, hroot, tau, thr)
    scatter_post(a, order, nonneg, values)
