"""Numba kernels of the Dask shuffle and joins on n-gram rows (``distributed.kn_counts``,
``distributed.kn_estimate``): rows are int32[m, n] word ids, sorted lexicographically."""

from __future__ import annotations

import numpy as np

from .._jit import njit


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
    holding row indices, -1 where empty. For ``find_rows_hashed``."""
    m = table.shape[0]
    cap = 2
    while cap < 2 * m:
        cap <<= 1
    mask = np.uint64(cap - 1)
    slots = np.full(cap, -1, dtype=np.int32)
    for i in range(m):
        h = _row_hash(table, i) & mask
        while slots[h] >= 0:
            h = (h + np.uint64(1)) & mask
        slots[h] = i
    return slots


@njit(cache=True, nogil=True)
def find_rows_hashed(table, slots, queries):
    """``find_rows`` through ``row_slots(table)``: for queries in no useful order (the
    suffixes of sorted rows), where a search would touch a new part of the table at every
    step. One table serves the queries of every partition."""
    mask = np.uint64(slots.shape[0] - 1)
    out = np.full(queries.shape[0], -1, dtype=np.int32)
    for q in range(queries.shape[0]):
        h = _row_hash(queries, q) & mask
        while slots[h] >= 0:
            if _compare(table, slots[h], queries, q) == 0:
                out[q] = slots[h]
                break
            h = (h + np.uint64(1)) & mask
    return out
