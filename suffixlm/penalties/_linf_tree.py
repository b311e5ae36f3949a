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

from .._jit import njit, prange
from ._structure import gather_post, scatter_post
from ._value import sum_parts, value_post


@njit(cache=True)
def _link(hval, hchild, hsib, a, b):
    """Pairing-heap link of the roots a and b; returns the new root (the larger value).
    The loser becomes the winner's first child. Measured with numba 0.68: as fast as
    the links written out inline (``inline="always"`` was 1.4-2x slower)."""
    if hval[a] >= hval[b]:
        hsib[b] = hchild[a]
        hchild[a] = b
        return a
    hsib[a] = hchild[b]
    hchild[b] = a
    return b


@njit(cache=True)
def linf_tree_post(a, parent_post, counts_post, weights_post, kappa,
                   hval, hcnt, hchild, hsib, hroot, tau, lo, hi):
    """Algorithm 4 on a vector already in post-order (in place), on the post positions
    lo <= i < hi (whole trees: a range of ``ForestStructure.chunks``).

    a float64[n] magnitudes in post-order; parent_post int64[n]; counts_post,
    weights_post float64[n]. Scratch: hval, hcnt, tau float64[n]; hchild, hsib,
    hroot int64[n]; after node i, tau[i] holds its threshold (inf: no clip). Heap
    entry ids are post positions (an entry merged from popped ones reuses the id of
    the first popped).
    """
    inf = np.inf
    for i in range(lo, hi):
        hroot[i] = -1
        tau[i] = 0.0
    for i in range(lo, hi):
        root = hroot[i]  # meld of the children's heaps
        mass = tau[i]  # l1 norm of the (already clipped) subtree: tau of Alg. 4
        ai = a[i]
        ci = counts_post[i]
        radius = kappa * weights_post[i]
        t = inf
        leaf = root < 0  # a leaf, or a subtree all zero below: the group is {i}
        if ai > 0.0:
            if leaf:  # fast path: clip i alone
                mass = ci * ai
                if radius > 0.0:
                    if mass <= radius:
                        t = 0.0
                        mass = 0.0
                    else:
                        t = ai - radius / ci
                        mass -= radius
                        ai = t
            else:
                mass += ci * ai
            if mass > 0.0:  # zero entries never reach a threshold: keep them out
                hval[i] = ai
                hcnt[i] = ci
                hchild[i] = -1
                root = i if leaf else _link(hval, hchild, hsib, root, i)
        if leaf or radius <= 0.0:
            pass
        elif mass <= radius:
            t = 0.0
            root = -1
            mass = 0.0
        else:
            s = 0.0
            c = 0.0
            first = -1
            while root >= 0:
                v = hval[root]
                if s - c * v >= radius:  # v is below the threshold: stop
                    break
                if first < 0:
                    first = root
                s += v * hcnt[root]
                c += hcnt[root]
                # delete-max, two-pass pairing: link pairs left to right ...
                x = hchild[root]
                acc = -1
                while x >= 0:
                    y = hsib[x]
                    if y < 0:
                        hsib[x] = acc
                        acc = x
                        break
                    nxt = hsib[y]
                    m = _link(hval, hchild, hsib, x, y)
                    hsib[m] = acc
                    acc = m
                    x = nxt
                # ... then meld them right to left
                root = acc
                if acc >= 0:
                    x = hsib[acc]
                    while x >= 0:
                        nxt = hsib[x]
                        root = _link(hval, hchild, hsib, root, x)
                        x = nxt
            t = (s - radius) / c
            if t < 0.0:  # rounding when mass ~ radius
                t = 0.0
            # the clipped entries come back as one (t, c) entry
            hval[first] = t
            hcnt[first] = c
            hchild[first] = -1
            root = first if root < 0 else _link(hval, hchild, hsib, root, first)
            mass -= radius
        tau[i] = t  # tau[i] is spent: from here on it keeps the threshold
        p = parent_post[i]
        if p >= 0:
            tau[p] += mass
            if root >= 0:
                q = hroot[p]
                hroot[p] = root if q < 0 else _link(hval, hchild, hsib, q, root)
    # clips are nested: a node ends clipped at the smallest threshold above it
    for i in range(hi - 1, lo - 1, -1):
        p = parent_post[i]
        t = tau[i]
        if p >= 0 and tau[p] < t:
            t = tau[p]
            tau[i] = t
        if a[i] > t:
            a[i] = t


@njit(cache=True, parallel=True)
def prox_linf_tree(values, order, parent_post, counts_post, weights_post, kappa, nonneg, chunks, value_weights_post,
                   a, hval, hcnt, hchild, hsib, hroot, tau):
    """In place on values float64[n] (node order); the other arrays as above. The ranges
    of whole trees ``chunks`` (``ForestStructure.chunks``) are independent: in parallel.
    Returns sum_x value_weights_post[x] max_subtree(x) |result| (Omega of the result,
    computed on the post-order magnitudes while they are at hand)."""
    part = np.zeros(chunks.shape[0] - 1)
    for c in prange(chunks.shape[0] - 1):
        lo = chunks[c]
        hi = chunks[c + 1]
        gather_post(values, order, nonneg, a, lo, hi)
        linf_tree_post(a, parent_post, counts_post, weights_post, kappa,
                       hval, hcnt, hchild, hsib, hroot, tau, lo, hi)
        part[c] = value_post(a, parent_post, value_weights_post, True, tau, lo, hi)
        scatter_post(a, order, nonneg, values, lo, hi)
    return sum_parts(part)
