"""The probing table of a back-off model (``_binary_kernels``), built from its n-grams:
what the binary model file stores and what ``BackoffLM`` queries its next-word
distributions on; and the growable int64 hash map the ARPA models' indexes use."""

from __future__ import annotations

import math

import numpy as np

from . import _binary_kernels as K

#: the hash table's largest load (records / slots): 16-byte records give about 20 bytes an n-gram
LOAD = 0.8


class Int64Map:
    """Open-addressing hash map int64 key (>= 0) -> int32 value (see ``_hash_kernels.hash_insert``),
    grown so that it stays at most 5/8 full."""

    def __init__(self, capacity: int):
        size, self.shift = self._size(capacity)
        self.keys = np.full(size, -1, dtype=np.int64)
        self.vals = np.zeros(size, dtype=np.int32)
        self.n = 0

    @staticmethod
    def _size(capacity: int) -> tuple[int, int]:
        size = 16
        while size * 5 < capacity * 8 + 8:
            size *= 2
        return size, 64 - (size.bit_length() - 1)

    def insert(self, keys: np.ndarray, next_id: int, chunk: int = 1 << 18) -> tuple[np.ndarray, int]:
        """Values of ``keys``; new keys get ``next_id``, ``next_id + 1``, ... Returns (values, next id)."""
        from . import _hash_kernels as K

        keys = np.ascontiguousarray(keys, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        for a in range(0, len(keys), chunk):
            part = keys[a:a + chunk]
            if (self.n + len(part)) * 8 > len(self.keys) * 5:
                size, shift = self._size(self.n + len(part))
                self.keys, self.vals = K.hash_rehash(self.keys, self.vals, size, shift)
                self.shift = shift
            out[a:a + chunk], new_next = K.hash_insert(self.keys, self.vals, self.shift, part, int(next_id))
            self.n += new_next - next_id
            next_id = new_next
        return out, int(next_id)


def build_table(lm) -> tuple[np.ndarray, int]:
    """(the table int64[2 (V + S + N + 1)], S) of a :class:`suffixlm.arpa.BackoffLM` of
    order N: every contiguous part of every explicit n-gram (KenLM stores them all; a part
    the model does not list is a "blank" carrying the backed-off probability), the parts
    of each length in a region of their own, then the regions' directory."""
    V = len(lm.vocab)
    N = lm.order
    windows = sum(len(rows) * (n - 1) * n // 2 for n, (rows, _, _, _) in enumerate(lm.ngrams, start=1))
    tmp = Int64Map(max(windows, 1))
    next_id = V
    extends, explicit, lengths = [], [], []
    for n, (rows, _, bow, _) in enumerate(lm.ngrams, start=1):
        rows = rows.astype(np.int64)
        for end in range(1, n + 1):
            ids = rows[:, end - 1]
            for start in range(end - 2, -1, -1):
                ids, next_id = tmp.insert(ids * V + rows[:, start], next_id)
                lengths.append((ids, end - start))
                if end < n:
                    extends.append(ids)
            if end < n:
                extends.append(rows[:, end - 1])
        explicit.append(ids)
        if n < N:
            extends.append(ids[bow != 0])
    T = next_id
    H = T - V
    if T >= 2 ** 31 - 1:
        raise ValueError(f"too many n-grams for the binary format ({H} parts)")
    t_key = np.zeros(T, dtype=np.int64)
    t_key[:V] = np.arange(V)
    used = tmp.keys != -1
    t_key[tmp.vals[used].astype(np.int64)] = tmp.keys[used]
    del tmp
    t_len = np.ones(T, dtype=np.int64)
    for ids, L in lengths:
        t_len[ids] = L
    del lengths
    flags = np.zeros(T, dtype=np.int64)
    prob = np.full(T, -np.inf, dtype=np.float32)
    bw = np.zeros(T, dtype=np.float32)
    for ids in extends:
        flags[ids] |= K.EXTENDS
    for ids, (_, lp, bow, hb) in zip(explicit, lm.ngrams):
        flags[ids] |= K.EXPLICIT
        prob[ids] = lp
        bw[ids] = np.where(hb, bow, np.float32(0.0))
    per_len = np.bincount(t_len[V:], minlength=N + 1)
    sizes = [0, 0] + [int(math.ceil(per_len[L] / LOAD)) + (1 if per_len[L] else 0) for L in range(2, N + 1)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    S = int(starts[-1])
    if S >= 2 ** 32 or (V + S) * V >= 2 ** K.KEY_BITS:
        raise ValueError(f"too many n-grams for the binary format ({H} parts, {V} words)")
    D = np.full(2 * (V + S + N + 1), -1, dtype=np.int64)
    D[0:2 * V:2] = np.arange(V, dtype=np.int64) | flags[:V]
    F = D.view(np.float32)
    F[2:4 * V:4] = prob[:V]
    F[3:4 * V:4] = bw[:V]
    directory = D[2 * (V + S):]
    directory[:] = 0
    rec = np.arange(T, dtype=np.int64)  # record of every temporary id (unigrams: themselves)
    for L in range(2, N + 1):
        directory[2 * L], directory[2 * L + 1] = starts[L], sizes[L]
        ts = np.flatnonzero(t_len == L)
        if not len(ts):
            continue
        keys = rec[t_key[ts] // V] * V + t_key[ts] % V
        K.fill_region(D, V, int(starts[L]), int(sizes[L]), keys, flags[ts], prob[ts], bw[ts])
        rec[ts] = K.records_of(D, V, S, L, keys)
    K.fill_blanks(D, V, S, N)
    return D, S
