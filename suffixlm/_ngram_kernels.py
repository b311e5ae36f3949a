"""Numba kernel of n-gram counting: the distinct n-grams of a corpus, order by order."""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def next_order(ids_prev, tokens, sentence_start, n_prev, vocab_size):
    """Distinct n-grams from the (n-1)-grams: the n-gram ending at position p is
    ((n-1)-gram ending at p-1, token p), present where ids_prev[p-1] >= 0 and p does
    not start a sentence.

    ids_prev : int32[T]  id of the (n-1)-gram ending at each position (-1: none)
    tokens   : int32[T]
    sentence_start : bool[T]
    Two stable counting sorts (by word, then by prefix id) list the n-grams in
    (prefix, word) order, i.e. as one level of a trie. Returns ids int32[T] (id of the
    n-gram ending at each position, -1: none), and per n-gram prefix, word, suffix
    (id of the (n-1)-gram ending at the same position) and count, all int32[m].
    """
    T = tokens.shape[0]
    n_valid = 0
    for p in range(1, T):
        if ids_prev[p - 1] >= 0 and not sentence_start[p]:
            n_valid += 1
    pos = np.empty(n_valid, dtype=np.int32)
    k = 0
    for p in range(1, T):
        if ids_prev[p - 1] >= 0 and not sentence_start[p]:
            pos[k] = p
            k += 1
    # pass 1: by word
    start = np.zeros(vocab_size + 1, dtype=np.int64)
    for i in range(n_valid):
        start[tokens[pos[i]] + 1] += 1
    for w in range(vocab_size):
        start[w + 1] += start[w]
    by_word = np.empty(n_valid, dtype=np.int32)
    for i in range(n_valid):
        w = tokens[pos[i]]
        by_word[start[w]] = pos[i]
        start[w] += 1
    # pass 2: by prefix id, stable
    start2 = np.zeros(n_prev + 1, dtype=np.int64)
    for i in range(n_valid):
        start2[ids_prev[pos[i] - 1] + 1] += 1
    for j in range(n_prev):
        start2[j + 1] += start2[j]
    order = pos  # reuse
    for i in range(n_valid):
        p = by_word[i]
        j = ids_prev[p - 1]
        order[start2[j]] = p
        start2[j] += 1
    # runs of equal (prefix, word) are the distinct n-grams
    ids = np.full(T, -1, dtype=np.int32)
    prefix = np.empty(n_valid, dtype=np.int32)
    word = np.empty(n_valid, dtype=np.int32)
    suffix = np.empty(n_valid, dtype=np.int32)
    count = np.zeros(n_valid, dtype=np.int32)
    m = -1
    last_prefix = -1
    last_word = -1
    for i in range(n_valid):
        p = order[i]
        a = ids_prev[p - 1]
        w = tokens[p]
        if a != last_prefix or w != last_word:
            m += 1
            prefix[m] = a
            word[m] = w
            suffix[m] = ids_prev[p]
            last_prefix = a
            last_word = w
        count[m] += 1
        ids[p] = m
    m += 1
    return ids, prefix[:m].copy(), word[:m].copy(), suffix[:m].copy(), count[:m].copy()


@njit(cache=True, nogil=True)
def rows_column(out, j, word, prefix, g):
    """Column ``j`` of ``NgramCounts.rows``: the word of each n-gram ``g`` of its order,
    then ``g`` becomes each one's prefix one order down (in place)."""
    for i in range(g.shape[0]):
        q = g[i]
        out[i, j] = word[q]
        g[i] = prefix[q]
