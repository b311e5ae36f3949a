"""Numba kernels of the Dask shuffle and joins on n-gram rows (``distributed.kn_counts``,
``distributed.kn_estimate``): rows are int32[m, n] word ids, sorted lexicographically."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _compare(a, i, b, j):
    """-1, 0 or 1 as row i of ``a`` is below, equal to or above row j of ``b``."""
    for c in range(a.shape[1]):
        x = a[i, c]
        y = b[j, c]
        if x != y:
            return -1 if x < y else 1
    return 0


@njit(cache=True)
def merge_counted(rows_a, count_a, rows_b, count_b):
    """Merge two sorted lists of distinct rows, summing the counts of rows in both.
    Returns (rows int32[m, n], counts int64[m]), sorted and distinct."""
    na = rows_a.shape[0]
    nb = rows_b.shape[0]
    n = rows_a.shape[1]
    rows = np.empty((na + nb, n), dtype=np.int32)
    counts = np.empty(na + nb, dtype=np.int64)
    i = 0
    j = 0
    k = 0
    while i < na or j < nb:
        if j >= nb:
            c = -1
        elif i >= na:
            c = 1
        else:
            c = _compare(rows_a, i, rows_b, j)
        if c <= 0:
            rows[k, :] = rows_a[i, :]
            counts[k] = count_a[i]
            if c == 0:
                counts[k] += count_b[j]
                j += 1
            i += 1
        else:
            rows[k, :] = rows_b[j, :]
            counts[k] = count_b[j]
            j += 1
        k += 1
    return rows[:k].copy(), counts[:k].copy()


@njit(cache=True)
def find_rows(table, queries):
    """Index in ``table`` (sorted, distinct rows) of every row of ``queries`` (same width),
    by binary search; -1 where a query is absent."""
    m = table.shape[0]
    out = np.empty(queries.shape[0], dtype=np.int32)
    for q in range(queries.shape[0]):
        lo = 0
        hi = m
        while lo < hi:
            mid = (lo + hi) >> 1
            if _compare(table, mid, queries, q) < 0:
                lo = mid + 1
            else:
                hi = mid
        out[q] = lo if lo < m and _compare(table, lo, queries, q) == 0 else -1
    return out
