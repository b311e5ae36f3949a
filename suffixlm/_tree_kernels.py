"""Small numba kernels on trees and sorted arrays, shared by the suffix tree, the LM, the
penalties and the contexts: children lists, breadth-first order, binary search,
growing and sorting work arrays. One home for each; the other modules import them."""

from __future__ import annotations

import numpy as np

from ._jit import njit


@njit(cache=True)
def children_csr(parent):
    """Children of every node in CSR form (children listed by increasing id).

    parent: int64[n] with values in [-1, n). Returns (child_offsets int64[n+1],
    children int64[n - n_roots], roots int64[n_roots]).
    """
    n = parent.shape[0]
    offsets = np.zeros(n + 1, dtype=np.int64)
    n_roots = 0
    for x in range(n):
        p = parent[x]
        if p < 0:
            n_roots += 1
        else:
            offsets[p + 1] += 1
    for x in range(n):
        offsets[x + 1] += offsets[x]
    fill = offsets[:-1].copy()
    children = np.empty(n - n_roots, dtype=np.int64)
    roots = np.empty(n_roots, dtype=np.int64)
    r = 0
    for x in range(n):
        p = parent[x]
        if p < 0:
            roots[r] = x
            r += 1
        else:
            children[fill[p]] = x
            fill[p] += 1
    return offsets, children, roots


@njit(cache=True)
def bfs_order(parent):
    """Nodes parents-first (breadth-first from the roots, children by increasing id) of
    the forest ``parent`` (int64[n], -1 for roots): int64[n]."""
    child_offsets, children, roots = children_csr(parent)
    n = parent.shape[0]
    order = np.empty(n, dtype=np.int64)
    tail = 0
    for r in range(roots.shape[0]):
        order[tail] = roots[r]
        tail += 1
    head = 0
    while head < tail:
        j = order[head]
        head += 1
        for k in range(child_offsets[j], child_offsets[j + 1]):
            order[tail] = children[k]
            tail += 1
    return order


@njit(cache=True)
def bfs_levels(parent):
    """The breadth-first schedule of a forest for level-parallel passes.

    Returns (topo, level_start, child_start): topo = :func:`bfs_order`; the nodes of
    depth d are topo[level_start[d]:level_start[d + 1]]; the children of topo[t] are
    topo[child_start[t]:child_start[t + 1]] (breadth-first order lists the children of
    each node together, and those of earlier nodes first). Nodes of one level never
    share a child, so a pass may treat them in parallel."""
    topo = bfs_order(parent)
    n = topo.shape[0]
    pos = np.empty(n, dtype=np.int64)
    for t in range(n):
        pos[topo[t]] = t
    depth = np.zeros(n, dtype=np.int64)
    n_roots = 0
    n_levels = 1 if n > 0 else 0
    child_start = np.zeros(n + 1, dtype=np.int64)
    for t in range(n):
        p = parent[topo[t]]
        if p < 0:
            n_roots += 1
        else:
            d = depth[pos[p]] + 1
            depth[t] = d
            if d + 1 > n_levels:
                n_levels = d + 1
            child_start[pos[p] + 1] += 1
    child_start[0] = n_roots
    for t in range(n):
        child_start[t + 1] += child_start[t]
    level_start = np.zeros(n_levels + 1, dtype=np.int64)
    for t in range(n):
        level_start[depth[t] + 1] += 1
    for d in range(n_levels):
        level_start[d + 1] += level_start[d]
    return topo, level_start, child_start


@njit(cache=True, inline="always")
def find_sorted(words, lo, hi, w):
    """Index of ``w`` in the sorted slice words[lo:hi], or -1."""
    while lo < hi:
        mid = (lo + hi) >> 1
        x = words[mid]
        if x < w:
            lo = mid + 1
        elif x > w:
            hi = mid
        else:
            return mid
    return -1


@njit(cache=True)
def grow(a, need):
    """``a`` if it holds ``need`` items, else a copy at least twice as long (the head
    copied, the tail uninitialised). A loop, not ``b[:n] = a``: numba's array-to-array
    slice assignment compiles its shape-mismatch error path, about 2.5 s on a fresh
    cache for every signature."""
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    for i in range(a.shape[0]):
        b[i] = a[i]
    return b


@njit(cache=True)
def sort_prefix(a, n):
    """Sort a[:n] in place, ascending: insertion sort below 16 items, heapsort above.
    Not ``a[:n].sort()``: numba's quicksort takes about 2 s to compile on a fresh cache
    (every signature), this about 0.2 s, and the arrays sorted here are short."""
    if n <= 16:
        for i in range(1, n):
            v = a[i]
            k = i - 1
            while k >= 0 and a[k] > v:
                a[k + 1] = a[k]
                k -= 1
            a[k + 1] = v
        return
    for start in range(n // 2 - 1, -1, -1):
        _sift_down(a, start, n)
    for end in range(n - 1, 0, -1):
        v = a[0]
        a[0] = a[end]
        a[end] = v
        _sift_down(a, 0, end)


@njit(cache=True)
def _sift_down(a, root, n):
    v = a[root]
    while True:
        child = 2 * root + 1
        if child >= n:
            break
        if child + 1 < n and a[child + 1] > a[child]:
            child += 1
        if a[child] <= v:
            break
        a[root] = a[child]
        root = child
    a[root] = v


def warm_up() -> None:
    """Start numba's run time in this process (its typing and lowering registries, and a
    first kernel loaded from the cache): about a second once per process, which a timing
    of one step would otherwise include."""
    children_csr(np.full(1, -1, np.int64))
