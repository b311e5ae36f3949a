"""Numba kernel of n-gram counting: the distinct n-grams of a corpus, order by order."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from ._address import prefetch
from ._tree_kernels import sort_prefix


@njit(cache=True, nogil=True)
def _runs(count, m):
    """int32[m + 1]: where each of the first m n-grams' run of positions starts in the
    positions listed by n-gram (the counts' prefix sums)."""
    runs = np.empty(m + 1, dtype=np.int32)
    runs[0] = 0
    for j in range(m):
        runs[j + 1] = runs[j] + count[j]
    return runs


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
    (id of the (n-1)-gram ending at the same position) and count, all int32[m]; then
    the positions where an n-gram ends, by n-gram (int32[n_valid]), and where each
    n-gram's run of them starts (int32[m + 1]): what ``next_order_runs`` starts from.
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
    # views: the tails past m were never written, so they take no memory (count, zeroed
    # whole, is copied)
    return ids, prefix[:m], word[:m], suffix[:m], count[:m].copy(), order, _runs(count, m)


@njit(cache=True, nogil=True)
def ids_in_range(tokens, lo, hi):
    """int32[T]: each token where it lies in ``[lo, hi)``, else -1 (``count_ngrams``'s
    unigram ids with ``first_words``: one pass where numpy's masks make four)."""
    out = np.empty(tokens.shape[0], dtype=np.int32)
    for p in range(tokens.shape[0]):
        t = tokens[p]
        out[p] = t if lo <= t and t < hi else -1
    return out


@njit(cache=True, nogil=True)
def rows_column(out, j, word, prefix, g):
    """Column ``j`` of ``NgramCounts.rows``: the word of each n-gram ``g`` of its order,
    then ``g`` becomes each one's prefix one order down (in place)."""
    for i in range(g.shape[0]):
        q = g[i]
        out[i, j] = word[q]
        g[i] = prefix[q]


@njit(cache=True, nogil=True)
def extend_rows(prev, prefix, base, word):
    """int32[m, k + 1]: the rows (word ids) of m n-grams, each its prefix's row one order
    down, ``prev[prefix[i] - base]`` (int32[*, k]), then its word ``word[i]``
    (``ngrams.rows_by_order``). ValueError for a prefix outside ``prev`` or a ``word`` of
    another length."""
    m = prefix.shape[0]
    k = prev.shape[1]
    if word.shape[0] != m:
        raise ValueError("extend_rows: prefix and word differ in length")
    out = np.empty((m, k + 1), dtype=np.int32)
    for i in range(m):
        p = prefix[i] - base
        if p < 0 or p >= prev.shape[0]:
            raise ValueError("extend_rows: a prefix outside the rows one order down")
        for j in range(k):
            out[i, j] = prev[p, j]
        out[i, k] = word[i]
    return out


#: How many positions ahead ``next_order_runs`` prefetches what it reads at a position.
GATHER_AHEAD = 16


@njit(cache=True, nogil=True)
def next_tokens(tokens, sentence_start):
    """int32[T]: the token after each position in its sentence (-1 at a sentence's last
    position): what ``next_order_runs`` reads, one array instead of two."""
    T = tokens.shape[0]
    out = np.empty(T, dtype=np.int32)
    for q in range(T - 1):
        out[q] = -1 if sentence_start[q + 1] else tokens[q + 1]
    if T:
        out[T - 1] = -1
    return out


@njit(cache=True, nogil=True)
def next_order_runs(ids_prev, prev_order, prev_runs, nxt_tok, top=False, first_pos=False):
    """``next_order``'s arrays, from the level below as ``next_order`` returns it: the
    positions where an (n-1)-gram ends, by (n-1)-gram (``prev_order``, the run of
    (n-1)-gram j at ``prev_runs[j] .. prev_runs[j + 1]``). The n-gram ending at p + 1
    extends the (n-1)-gram ending at p by ``nxt_tok[p]`` (``next_tokens``), so a run read
    in order lists the n-grams of one prefix; sorted by word, it gives them in (prefix,
    word) order, the trie's, without a sort by prefix: one random read a position
    (``nxt_tok``) and one write (``ids``) where ``next_order``'s two counting sorts make
    five. The same arrays, element for element. ``top``: no level comes above, so the
    ids, the positions and the runs it would start from are not made (empty arrays).
    Last, where the first occurrence of each n-gram ends (int32[m], in the order of the
    list) when ``first_pos``, else an empty array."""
    T = nxt_tok.shape[0]
    n_prev = prev_runs.shape[0] - 1
    n_valid = prev_runs[n_prev]  # at most: every (n-1)-gram's position extended
    longest = 0
    for j in range(n_prev):
        longest = max(longest, prev_runs[j + 1] - prev_runs[j])
    buf = np.empty(longest, dtype=np.int64)  # (word << 32) | position of one run
    ids = np.full(0 if top else T, -1, dtype=np.int32)
    order = np.empty(0 if top else n_valid, dtype=np.int32)
    prefix = np.empty(n_valid, dtype=np.int32)
    word = np.empty(n_valid, dtype=np.int32)
    suffix = np.empty(n_valid, dtype=np.int32)
    count = np.empty(n_valid, dtype=np.int32)
    first = np.empty(n_valid if first_pos else 0, dtype=np.int32)
    m = 0
    k = 0
    for j in range(n_prev):
        g = 0
        for i in range(prev_runs[j], prev_runs[j + 1]):
            if i + GATHER_AHEAD < n_valid:  # the next token of a position further on, read soon
                prefetch(nxt_tok, prev_order[i + GATHER_AHEAD])
                prefetch(ids_prev, prev_order[i + GATHER_AHEAD] + 1)
                if not top:
                    prefetch(ids, prev_order[i + GATHER_AHEAD] + 1)
            q = prev_order[i]
            w = nxt_tok[q]
            if w >= 0:
                buf[g] = (np.int64(w) << 32) | (q + 1)
                g += 1
        if g == 0:
            continue
        sort_prefix(buf, g)
        last = -1
        for u in range(g):
            w = np.int32(buf[u] >> 32)
            p = np.int32(buf[u] & 0xFFFFFFFF)
            if w != last:
                prefix[m] = j
                word[m] = w
                suffix[m] = ids_prev[p]
                count[m] = 0
                if first_pos:
                    first[m] = p
                m += 1
                last = w
            count[m - 1] += 1
            if not top:
                ids[p] = m - 1
                order[k] = p
                k += 1
    runs = np.zeros(0, dtype=np.int32) if top else _runs(count, m)
    # views: the tails past m were never written, so they take no memory; a copy would
    # hold both at once
    return ids, prefix[:m], word[:m], suffix[:m], count[:m], order[:k], runs, first[:m]
