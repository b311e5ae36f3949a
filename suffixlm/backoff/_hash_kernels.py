"""Open-addressing hash maps int64 key -> int64 value in numba (Fibonacci hashing,
linear probing), as flat arrays: the back-off model's n-gram tables."""

from __future__ import annotations

import numpy as np

from .._jit import njit

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _slot(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@njit(cache=True)
def hash_insert_one(table_keys, table_vals, shift, key, next_id):
    """Value of non-negative ``key``, inserting it with value ``next_id`` when absent
    (empty slot = -1). Returns (value, whether it was new). The caller keeps the load
    below one half."""
    size = table_keys.shape[0]
    h = _slot(key, shift)
    while True:
        t = table_keys[h]
        if t == key:
            return table_vals[h], False
        if t == -1:
            table_keys[h] = key
            table_vals[h] = next_id  # int32 storage in the ARPA maps: fewer than 2^31 entries
            return table_vals[h], True
        h += 1
        if h == size:
            h = 0


@njit(cache=True)
def hash_insert(table_keys, table_vals, shift, keys, next_id):
    """Insert non-negative ``keys`` (``hash_insert_one``); a new key gets value
    ``next_id``, ``next_id + 1``, ... in order of first appearance. Returns (value of
    every key int64[n], next free id)."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        v, new = hash_insert_one(table_keys, table_vals, shift, keys[i], next_id)
        out[i] = v
        if new:
            next_id += 1
    return out, next_id


@njit(cache=True)
def hash_rehash(table_keys, table_vals, new_size, new_shift):
    nk = np.full(new_size, -1, dtype=np.int64)
    nv = np.zeros(new_size, dtype=table_vals.dtype)
    for h in range(table_keys.shape[0]):
        k = table_keys[h]
        if k != -1:
            j = _slot(k, new_shift)
            while nk[j] != -1:
                j += 1
                if j == new_size:
                    j = 0
            nk[j] = k
            nv[j] = table_vals[h]
    return nk, nv


@njit(cache=True)
def hash_find(table_keys, table_vals, shift, key):
    """Value stored for ``key``, or -1."""
    size = table_keys.shape[0]
    h = _slot(key, shift)
    while True:
        t = table_keys[h]
        if t == key:
            return table_vals[h]
        if t == -1:
            return -1
        h += 1
        if h == size:
            h = 0
