"""Numba kernels of the Dask shuffle and joins on n-gram rows (``distributed.kn_counts``,
``distributed.kn_estimate``): rows are int32[m, n] word ids, sorted lexicographically."""

from __future__ import annotations

import numpy as np

from .._address import prefetch
from .._jit import njit

#: How many rows ahead the hashed joins prefetch (``row_slots``, ``find_rows_hashed``,
#: ``gather``, ``ids_at``): their probes land in tables far larger than the caches, so each
#: waits on memory unless its line was asked for some rows before.
AHEAD = 16


@njit(cache=True, nogil=True)
def _compare(a, i, b, j):
    """-1, 0 or 1 as row i of ``a`` is below, equal to or above row j of ``b``."""
    for c in range(a.shape[1]):
        x = a[i, c]
        y = b[j, c]
        if x != y:
            return -1 if x < y else 1
    return 0


@njit(cache=True, nogil=True)
def _merge_two(rows, counts, a, ea, b, eb, out_rows, out_counts, k):
    """Merge the sorted runs of distinct rows ``a:ea`` and ``b:eb`` of ``rows`` into
    ``out_rows`` from row k on, summing the counts of rows in both; returns the end."""
    while a < ea or b < eb:
        if b >= eb:
            c = -1
        elif a >= ea:
            c = 1
        else:
            c = _compare(rows, a, rows, b)
        if c <= 0:
            out_rows[k, :] = rows[a, :]
            out_counts[k] = counts[a]
            if c == 0:
                out_counts[k] += counts[b]
                b += 1
            a += 1
        else:
            out_rows[k, :] = rows[b, :]
            out_counts[k] = counts[b]
            b += 1
        k += 1
    return k


@njit(cache=True, nogil=True)
def merge_runs(rows, counts, starts, rows2, counts2):
    """Merge the sorted runs of distinct rows ``rows[starts[r]:starts[r + 1]]`` (with
    their ``counts``), summing the counts of equal rows: two by two, round after round,
    between the two buffers (``rows2``, ``counts2``: room for them all; both are
    overwritten). Returns (0 or 1: the result is in the first or the second buffer,
    the number of its rows, from the first)."""
    bounds = starts.copy()
    R = bounds.shape[0] - 1
    src = 0
    while R > 1:
        k = 0
        m = 0
        for q in range(0, R, 2):  # runs q and q + 1 (an odd last run is copied as it is)
            a, ea = bounds[q], bounds[q + 1]
            b, eb = (ea, bounds[q + 2]) if q + 1 < R else (ea, ea)
            bounds[m] = k
            if src == 0:
                k = _merge_two(rows, counts, a, ea, b, eb, rows2, counts2, k)
            else:
                k = _merge_two(rows2, counts2, a, ea, b, eb, rows, counts, k)
            m += 1
        bounds[m] = k
        R = m
        src = 1 - src
    return src, bounds[R] - bounds[0]


@njit(cache=True, nogil=True)
def count_into(counts, idx):
    """``counts[i] += 1`` for every i of ``idx`` (each in ``[0, len(counts))``, as
    ``np.bincount`` would count them; checked: ValueError otherwise)."""
    n = counts.shape[0]
    for j in range(idx.shape[0]):
        i = idx[j]
        if i < 0 or i >= n:
            raise ValueError("count_into: an index is outside the counts")
        counts[i] += 1


@njit(cache=True, nogil=True)
def find_rows(table, queries):
    """Index in ``table`` (sorted, distinct rows) of every row of ``queries`` (same width);
    -1 where a query is absent. Queries are mostly runs in ascending order (the prefixes
    of sorted rows, the suffixes of the rows of one first word): a query not below the
    one before gallops forward from where that one landed, any other is binary-searched
    over the whole table, so a sorted run costs about one pass over the table."""
    m = table.shape[0]
    out = np.empty(queries.shape[0], dtype=np.int32)
    pos = 0  # insertion point of the previous query
    for q in range(queries.shape[0]):
        lo = 0
        hi = m
        if q > 0 and _compare(queries, q - 1, queries, q) <= 0:
            # gallop from the previous insertion point: table[lo - 1] < query for lo = pos
            lo = pos
            step = 1
            while lo + step - 1 < m and _compare(table, lo + step - 1, queries, q) < 0:
                lo += step
                step <<= 1
            hi = min(lo + step - 1, m)
        while lo < hi:
            mid = (lo + hi) >> 1
            if _compare(table, mid, queries, q) < 0:
                lo = mid + 1
            else:
                hi = mid
        pos = lo
        out[q] = lo if lo < m and _compare(table, lo, queries, q) == 0 else -1
    return out


@njit(cache=True, nogil=True)
def _row_hash(a, i):
    h = np.uint64(0x9E3779B97F4A7C15)
    for c in range(a.shape[1]):
        h = (h ^ np.uint64(a[i, c] & 0xFFFFFFFF)) * np.uint64(0xBF58476D1CE4E5B9)
        h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True)
def row_slots(table):
    """A hash table of ``table``'s rows (open addressing, at most half full): int32 slots
    holding row indices, -1 where empty. For ``find_rows_hashed``. The home slot of row
    i + ``AHEAD`` is prefetched while row i is placed (the same table as without; each
    row hashed once, kept in a ring until placed)."""
    m = table.shape[0]
    cap = 2
    while cap < 2 * m:
        cap <<= 1
    mask = np.uint64(cap - 1)
    slots = np.full(cap, -1, dtype=np.int32)
    ring = 2 * AHEAD  # the home slots of rows i .. i + AHEAD, at their index modulo ring
    H = np.empty(ring, dtype=np.uint64)
    for i in range(min(AHEAD, m)):
        H[i] = _row_hash(table, i) & mask
        prefetch(slots, np.int64(H[i]))
    for i in range(m):
        if i + AHEAD < m:
            h = _row_hash(table, i + AHEAD) & mask
            H[(i + AHEAD) % ring] = h
            prefetch(slots, np.int64(h))
        h = H[i % ring]
        while slots[h] >= 0:
            h = (h + np.uint64(1)) & mask
        slots[h] = i
    return slots


@njit(cache=True, nogil=True)
def find_rows_hashed(table, slots, queries):
    """``find_rows`` through ``row_slots(table)``: for queries in no useful order (the
    suffixes of sorted rows), where a search would touch a new part of the table at every
    step. One table serves the queries of every partition.

    A pipeline of two prefetches: query q + 2 ``AHEAD``'s home slot is asked for, and the
    row that query q + ``AHEAD``'s home slot names (its line arrived meanwhile), so the
    probe of query q mostly finds both in cache: the misses of each probe overlap those
    of the next queries instead of following them (the joins' compute at 50M words on
    two workers: benchmarks/dask_kn.md)."""
    mask = np.uint64(slots.shape[0] - 1)
    nq = queries.shape[0]
    width = table.shape[1]
    flat = table.reshape(-1)
    out = np.full(nq, -1, dtype=np.int32)
    ring = 4 * AHEAD  # the hashes of queries q .. q + 2 AHEAD, at their index modulo ring
    H = np.empty(ring, dtype=np.uint64)
    for q in range(min(2 * AHEAD, nq)):
        H[q] = _row_hash(queries, q) & mask
        prefetch(slots, np.int64(H[q]))
    for q in range(nq):
        r = q + 2 * AHEAD
        if r < nq:
            h = _row_hash(queries, r) & mask
            H[r % ring] = h
            prefetch(slots, np.int64(h))
        if q + AHEAD < nq:
            s = slots[H[(q + AHEAD) % ring]]
            if s >= 0:
                prefetch(flat, np.int64(s) * width)
        h = H[q % ring]
        while slots[h] >= 0:
            if _compare(table, slots[h], queries, q) == 0:
                out[q] = slots[h]
                break
            h = (h + np.uint64(1)) & mask
    return out


@njit(cache=True, nogil=True)
def gather(a, idx):
    """``a[idx]`` (1-D), each line prefetched ``AHEAD`` positions before (indices checked:
    ValueError for one outside the array)."""
    n = idx.shape[0]
    m = a.shape[0]
    out = np.empty(n, dtype=a.dtype)
    for j in range(min(AHEAD, n)):
        if 0 <= idx[j] < m:
            prefetch(a, idx[j])
    for j in range(n):
        if j + AHEAD < n and 0 <= idx[j + AHEAD] < m:
            prefetch(a, idx[j + AHEAD])
        i = idx[j]
        if i < 0 or i >= m:
            raise ValueError("gather: an index is outside the array")
        out[j] = a[i]
    return out


@njit(cache=True, nogil=True)
def pack_pairs(a, b):
    """float32[m, 2]: ``a`` and ``b`` side by side (lengths checked: ValueError). Made here
    rather than by numpy, which asks the kernel for huge pages for a large array: the
    first touch of a fresh one can then wait on the kernel's compaction of memory."""
    m = a.shape[0]
    if b.shape[0] != m:
        raise ValueError("pack_pairs: the arrays differ in length")
    out = np.empty((m, 2), dtype=np.float32)
    for i in range(m):
        out[i, 0] = a[i]
        out[i, 1] = b[i]
    return out


@njit(cache=True, nogil=True)
def scatter_pairs(out_a, out_b, sel, pairs):
    """``out_a[sel] = pairs[:, 0]`` and ``out_b[sel] = pairs[:, 1]`` in one pass (numpy's
    assignment through an int32 index array makes an int64 copy of it first, then a pass
    per array). ValueError for a position outside the outputs or pairs of another
    length."""
    n = sel.shape[0]
    m = min(out_a.shape[0], out_b.shape[0])
    if pairs.shape[0] != n or pairs.shape[1] != 2:
        raise ValueError("scatter_pairs: the pairs and the positions differ in length")
    for j in range(n):
        i = sel[j]
        if i < 0 or i >= m:
            raise ValueError("scatter_pairs: a position is outside the outputs")
        out_a[i] = pairs[j, 0]
        out_b[i] = pairs[j, 1]


@njit(cache=True, nogil=True)
def ids_at(ends, positions):
    """``ends[positions]``, each line prefetched ``AHEAD`` positions before: the ids of
    the n-grams ending at ``positions`` (``ngrams.count_ngrams(positions=True)``'s
    ``ends``). A position outside the text, or where no n-gram of the level ends:
    ValueError."""
    n = positions.shape[0]
    T = ends.shape[0]
    out = np.empty(n, dtype=np.int32)
    for j in range(min(AHEAD, n)):
        if 0 <= positions[j] < T:
            prefetch(ends, positions[j])
    for j in range(n):
        if j + AHEAD < n and 0 <= positions[j + AHEAD] < T:
            prefetch(ends, positions[j + AHEAD])
        e = positions[j]
        if e < 0 or e >= T:
            raise ValueError("ids_at: a position is outside the text")
        g = ends[e]
        if g < 0:
            raise ValueError("ids_at: no n-gram of the level ends at a position")
        out[j] = g
    return out


@njit(cache=True, nogil=True)
def group_by_range(keys, bounds):
    """The positions of ``keys`` grouped by the range ``[bounds[p], bounds[p + 1])`` each
    lies in, in their order within a group (the order numpy's stable argsort of the range
    numbers gives, by a counting sort: two passes, no sort), and where each group starts
    (int64[P + 1]). Keys outside ``[bounds[0], bounds[-1])``: ValueError."""
    P = bounds.shape[0] - 1
    n = keys.shape[0]
    lo = bounds[0]
    hi = bounds[P]
    part = np.zeros(max(hi - lo, 0), dtype=np.int32)  # the range of every key value
    for p in range(P):
        for v in range(bounds[p], bounds[p + 1]):
            part[v - lo] = p
    start = np.zeros(P + 1, dtype=np.int64)
    for j in range(n):
        v = keys[j]
        if v < lo or v >= hi:
            raise ValueError("group_by_range: a key is outside the ranges")
        start[part[v - lo] + 1] += 1
    for p in range(P):
        start[p + 1] += start[p]
    fill = start[:P].copy()
    out = np.empty(n, dtype=np.int32)
    for j in range(n):
        p = part[keys[j] - lo]
        out[fill[p]] = j
        fill[p] += 1
    return out, start
