"""Ukkonen's online suffix tree construction, kept as a measured alternative.

``SuffixTree.build`` does not use this module (see the ``suffixtree`` module docstring
for why); ``scripts/bench_suffixtree.py`` times it against the sorting construction and
the tests check that it finds the same capped context nodes and counts.

The text is the reversed training stream: for each sentence ``<s> w1 .. wn </s>`` the
reversed context symbols ``wn .. w1 <s>`` followed by a terminator unique to the
sentence (symbol ``n_symbols + s``), so contexts never cross a sentence start. The
generalized suffix tree of that text (Ukkonen 1995: active point, suffix links, open
leaf edges) is then capped at depth ``m``: a node's effective depth is its string
depth, limited by ``m`` and, on a leaf edge, by the sentence end; the nodes of the
suffix tree of contexts are the root and every node whose effective depth exceeds its
parent's. Children are kept in one open-addressing hash table keyed by
``node * alphabet + symbol``.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._suffixtree_kernels import csr_from_parent

_GOLDEN = np.uint64(11400714819323198485)


@njit(cache=True)
def reversed_text(tokens, offsets, n_symbols):
    """Reversed context stream with unique sentence terminators.

    Returns text int64[n_tok] and sent_end int64[n_tok] (index of the terminator that
    ends the sentence each text position belongs to)."""
    n_sent = offsets.shape[0] - 1
    n = tokens.shape[0]
    text = np.empty(n, np.int64)
    sent_end = np.empty(n, np.int64)
    q = 0
    for s in range(n_sent):
        start = offsets[s]
        first = q
        for t in range(offsets[s + 1] - 2, start - 1, -1):
            text[q] = tokens[t]
            q += 1
        text[q] = n_symbols + s
        for r in range(first, q + 1):
            sent_end[r] = q
        q += 1
    return text, sent_end


@njit(cache=True)
def _slot(keys, key, bits):
    mask = (1 << bits) - 1
    h = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
    while keys[h] != -1 and keys[h] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def ukkonen(text, alphabet):
    """Generalized suffix tree of ``text`` (int64, every sentence ended by a unique
    terminator). Returns start, end (int64[n_nodes], edge label text[start:end], end
    = len(text) on leaves), link, and the child hash table (keys, values, bits)."""
    n = text.shape[0]
    cap = 2 * n + 2
    start = np.empty(cap, np.int64)
    end = np.empty(cap, np.int64)
    link = np.zeros(cap, np.int64)
    bits = 1
    while (1 << bits) < 2 * cap:
        bits += 1
    keys = np.full(1 << bits, -1, np.int64)
    vals = np.empty(1 << bits, np.int64)
    inf = n + 1
    start[0] = 0
    end[0] = 0
    n_nodes = 1
    active_node = 0
    active_edge = 0
    active_length = 0
    remainder = 0
    for pos in range(n):
        remainder += 1
        last_new = -1
        while remainder > 0:
            if active_length == 0:
                active_edge = pos
            c = text[active_edge]
            h = _slot(keys, active_node * alphabet + c, bits)
            if keys[h] == -1:
                leaf = n_nodes
                n_nodes += 1
                start[leaf] = pos
                end[leaf] = inf
                keys[h] = active_node * alphabet + c
                vals[h] = leaf
                if last_new != -1:
                    link[last_new] = active_node
                    last_new = -1
            else:
                nxt = vals[h]
                elen = min(end[nxt], pos + 1) - start[nxt]
                if active_length >= elen:
                    active_edge += elen
                    active_length -= elen
                    active_node = nxt
                    continue
                if text[start[nxt] + active_length] == text[pos]:
                    if last_new != -1 and active_node != 0:
                        link[last_new] = active_node
                        last_new = -1
                    active_length += 1
                    break
                split = n_nodes
                n_nodes += 1
                start[split] = start[nxt]
                end[split] = start[nxt] + active_length
                vals[h] = split
                leaf = n_nodes
                n_nodes += 1
                start[leaf] = pos
                end[leaf] = inf
                h2 = _slot(keys, split * alphabet + text[pos], bits)
                keys[h2] = split * alphabet + text[pos]
                vals[h2] = leaf
                start[nxt] += active_length
                h3 = _slot(keys, split * alphabet + text[start[nxt]], bits)
                keys[h3] = split * alphabet + text[start[nxt]]
                vals[h3] = nxt
                if last_new != -1:
                    link[last_new] = split
                last_new = split
            remainder -= 1
            if active_node == 0 and active_length > 0:
                active_length -= 1
                active_edge = pos - remainder + 1
            elif active_node != 0:
                active_node = link[active_node]
    for j in range(n_nodes):
        if end[j] == inf:
            end[j] = n
    return start[:n_nodes].copy(), end[:n_nodes].copy(), link[:n_nodes].copy(), keys, vals, bits


@njit(cache=True)
def cap_tree(text, sent_end, start, end, keys, vals, alphabet, max_depth):
    """Cap the generalized suffix tree at depth m and at sentence ends.

    Returns parent int64[n] (-1 at the root), effective depth e int64[n], is_node
    bool[n] (a node of the suffix tree of contexts: the root or e > e(parent)), count
    int64[n] (context occurrences in the subtree: leaves not starting at a
    terminator) and string_start int64[n] (text index where the node's string starts).
    """
    n = start.shape[0]
    total = text.shape[0]
    parent = np.full(n, -1, np.int64)
    for h in range(keys.shape[0]):
        if keys[h] != -1:
            parent[vals[h]] = keys[h] // alphabet
    off, kids = csr_from_parent(parent)  # then BFS order: parents before children
    order = np.empty(n, np.int64)
    order[0] = 0
    head = 0
    tail = 1
    while head < tail:
        u = order[head]
        head += 1
        for e in range(off[u], off[u + 1]):
            order[tail] = kids[e]
            tail += 1
    sdepth = np.zeros(n, np.int64)
    eff = np.zeros(n, np.int64)
    sstart = np.zeros(n, np.int64)
    count = np.zeros(n, np.int64)
    is_node = np.zeros(n, np.bool_)
    is_node[0] = True
    for r in range(1, n):
        u = order[r]
        p = parent[u]
        sdepth[u] = sdepth[p] + end[u] - start[u]
        sstart[u] = start[u] - sdepth[p]
        if end[u] == total:  # leaf: the context stops at its sentence's terminator
            q = total - sdepth[u]
            sstart[u] = q
            eff[u] = min(max_depth, sent_end[q] - q)
            if sent_end[q] != q:
                count[u] = 1
        else:
            eff[u] = min(max_depth, sdepth[u])
        is_node[u] = eff[u] > eff[p]
    for r in range(n - 1, 0, -1):
        u = order[r]
        count[parent[u]] += count[u]
    return parent, eff, is_node, count, sstart
