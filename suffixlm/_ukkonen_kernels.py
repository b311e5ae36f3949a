"""Ukkonen's online suffix tree construction, and the suffix tree of contexts derived
from it (``SuffixTree.build(..., method="ukkonen")``).

The text is the reversed training stream: for each sentence ``<s> w1 .. wn </s>`` the
reversed context symbols ``wn .. w1 <s>`` followed by a terminator unique to the
sentence (symbol ``n_symbols + s``), so contexts never cross a sentence start. Sentence
``s`` occupies text indices ``offsets[s] .. offsets[s+1] - 1``, like its tokens, and the
suffix starting at text index ``q`` (not a terminator) is the context of the prediction
at token index ``offsets[s] + offsets[s+1] - 1 - q``.

1. ``ukkonen``: the generalized suffix tree (GST) of that text (Ukkonen 1995: active
   point, suffix links, open leaf edges), children in one open-addressing hash table
   keyed by ``node * alphabet + symbol``. O(n) expected.
2. ``gst_children``: child lists sorted by the first symbol of their edge, two
   counting sorts, O(n + alphabet); a depth-first walk then meets the suffixes in
   lexicographic order.
3. ``capped_preorder``: capping at depth ``m``. A node's effective depth is its string
   depth, limited by ``m`` and, on a leaf edge, by the sentence end; the nodes of the
   suffix tree of contexts are the root and every GST node whose effective depth exceeds
   its parent's (it stands for the context made of the first ``effective depth``
   symbols of its string). The depth-first walk of step 2 numbers them in preorder,
   children by first symbol, O(n). They are already the collapsed tree T: a chain of
   trie nodes with one child each lies inside one GST edge. (The trie S, for
   ``collapse=False``, is T expanded by the same ``expand_to_trie`` as the sorting
   build's.)
4. ``leaf_ranges``: the predictions sorted by leaf (in preorder), then target word, and
   each node's range of leaves: what the sorting build's ``successors`` kernel reads, so
   both constructions aggregate the successor lists with the same code.

``cap_tree`` is the older node-set-and-counts-only capping, kept for the test that
cross-checks it.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ._tree_kernels import bfs_order, children_csr

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


@njit(cache=True, inline="always")
def _slot(tab, key, bits):
    """Slot of ``key`` in the interleaved table ``tab`` (``tab[2 h]`` the key of slot h,
    -1 if empty, ``tab[2 h + 1]`` its value): the key's slot or the empty one where it
    goes (linear probing)."""
    mask = (1 << bits) - 1
    h = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
    while tab[2 * h] != -1 and tab[2 * h] != key:
        h = (h + 1) & mask
    return h


@njit(cache=True)
def ukkonen(text, alphabet):
    """Generalized suffix tree of ``text`` (int64, every sentence ended by a unique
    terminator). Returns start, end (int64[n_nodes], edge label text[start:end], end
    = len(text) on leaves), link, and the child hash table (keys, values, bits).

    While building, the root's children live in an array indexed by symbol (most
    lookups start at the root, and that array stays in cache), the other nodes' in the
    hash table with key and value side by side, and each node's start and end side by
    side: one cache line per lookup instead of two (measured at depth 83 on PTB: 0.22
    s against 0.25 s with separate arrays). The root's children join the table at the
    end, so the returned table is the whole tree's."""
    n = text.shape[0]
    cap = 2 * n + 2
    se = np.empty(2 * cap, np.int64)  # se[2 u], se[2 u + 1]: start and end of node u's edge
    link = np.zeros(cap, np.int64)
    bits = 1
    while (1 << bits) < 2 * cap:
        bits += 1
    tab = np.full(2 << bits, -1, np.int64)
    root = np.full(alphabet, -1, np.int64)
    inf = n + 1
    se[0] = 0
    se[1] = 0
    n_nodes = 1
    active_node = 0
    active_edge = 0
    active_length = 0
    remainder = 0
    for pos in range(n):
        remainder += 1
        last_new = -1
        tp = text[pos]
        while remainder > 0:
            if active_length == 0:
                active_edge = pos
            c = text[active_edge]
            key = active_node * alphabet + c
            if active_node == 0:
                h = -1
                nxt = root[c]
            else:
                h = _slot(tab, key, bits)
                nxt = tab[2 * h + 1] if tab[2 * h] != -1 else -1
            if nxt == -1:
                leaf = n_nodes
                n_nodes += 1
                se[2 * leaf] = pos
                se[2 * leaf + 1] = inf
                if h < 0:
                    root[c] = leaf
                else:
                    tab[2 * h] = key
                    tab[2 * h + 1] = leaf
                if last_new != -1:
                    link[last_new] = active_node
                    last_new = -1
            else:
                s0 = se[2 * nxt]
                elen = min(se[2 * nxt + 1], pos + 1) - s0
                if active_length >= elen:
                    active_edge += elen
                    active_length -= elen
                    active_node = nxt
                    continue
                if text[s0 + active_length] == tp:
                    if last_new != -1 and active_node != 0:
                        link[last_new] = active_node
                        last_new = -1
                    active_length += 1
                    break
                split = n_nodes
                n_nodes += 1
                se[2 * split] = s0
                se[2 * split + 1] = s0 + active_length
                if h < 0:
                    root[c] = split
                else:
                    tab[2 * h + 1] = split
                leaf = n_nodes
                n_nodes += 1
                se[2 * leaf] = pos
                se[2 * leaf + 1] = inf
                k2 = split * alphabet + tp
                h2 = _slot(tab, k2, bits)
                tab[2 * h2] = k2
                tab[2 * h2 + 1] = leaf
                ns = s0 + active_length
                se[2 * nxt] = ns
                k3 = split * alphabet + text[ns]
                h3 = _slot(tab, k3, bits)
                tab[2 * h3] = k3
                tab[2 * h3 + 1] = nxt
                if last_new != -1:
                    link[last_new] = split
                last_new = split
            remainder -= 1
            if active_node == 0 and active_length > 0:
                active_length -= 1
                active_edge = pos - remainder + 1
            elif active_node != 0:
                active_node = link[active_node]
    for c in range(alphabet):
        if root[c] != -1:
            h = _slot(tab, c, bits)
            tab[2 * h] = c
            tab[2 * h + 1] = root[c]
    start = np.empty(n_nodes, np.int64)
    end = np.empty(n_nodes, np.int64)
    for j in range(n_nodes):
        start[j] = se[2 * j]
        e = se[2 * j + 1]
        end[j] = n if e == inf else e
    return start, end, link[:n_nodes].copy(), tab[0::2], tab[1::2], bits


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
    order = bfs_order(parent)  # parents before children
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


@njit(cache=True)
def text_tokens(offsets):
    """Token index of the prediction whose context starts at each index of
    ``reversed_text``'s text, -1 at a terminator: int64[n_tok].

    offsets : int64[n_sent+1], ``offsets[0] == 0`` and every sentence >= 1 token.
    """
    n_sent = offsets.shape[0] - 1
    out = np.empty(offsets[n_sent], np.int64)
    for s in range(n_sent):
        a = offsets[s]
        b = offsets[s + 1]
        for q in range(a, b - 1):
            out[q] = a + b - 1 - q
        out[b - 1] = -1
    return out


@njit(cache=True)
def gst_children(text, start, keys, vals, alphabet):
    """Parents and sorted child lists of the GST returned by ``ukkonen``.

    text : int64[n_text]; start : int64[n] (edge of node u is text[start[u]:end[u]]);
    keys, vals : its child hash table. Returns child_offsets int64[n+1] and children
    int64[n-1], every list in increasing order of the first symbol of the edge (a
    counting sort on that symbol, then a stable one on the parent).
    """
    n = start.shape[0]
    parent = np.full(n, -1, np.int64)
    for h in range(keys.shape[0]):
        if keys[h] != -1:
            parent[vals[h]] = keys[h] // alphabet
    bucket = np.zeros(alphabet + 1, np.int64)
    for u in range(1, n):
        bucket[text[start[u]] + 1] += 1
    for c in range(alphabet):
        bucket[c + 1] += bucket[c]
    by_symbol = np.empty(max(n - 1, 0), np.int64)
    for u in range(1, n):
        c = text[start[u]]
        by_symbol[bucket[c]] = u
        bucket[c] += 1
    child_offsets = np.zeros(n + 1, np.int64)
    for u in range(1, n):
        child_offsets[parent[u] + 1] += 1
    for u in range(n):
        child_offsets[u + 1] += child_offsets[u]
    fill = np.empty(n, np.int64)
    for u in range(n):
        fill[u] = child_offsets[u]
    children = np.empty(max(n - 1, 0), np.int64)
    for e in range(n - 1):
        u = by_symbol[e]
        children[fill[parent[u]]] = u
        fill[parent[u]] += 1
    return child_offsets, children


@njit(cache=True)
def capped_preorder(text, sent_end, text_token, tokens, start, end, child_offsets, children, max_depth):
    """Cap the GST at depth m and number the nodes of the suffix tree of contexts in
    depth-first preorder, children in increasing order of their first symbol.

    text, sent_end : from ``reversed_text``; text_token : from ``text_tokens``; tokens :
    int32[n_tok]; start, end : the GST's edges (``end == len(text)`` on leaves);
    child_offsets, children : from ``gst_children``.

    A depth-first walk of the GST with sorted children visits strings in lexicographic
    order, a node before its descendants; restricted to the capped nodes (effective
    depth above the parent's) that is the preorder of the tree of contexts. Each
    prediction (a GST leaf not starting at a terminator) lands on the node of its full
    context, a leaf of that tree. The walk's stack carries the parent's string depth,
    effective depth and capped node, so nothing is looked up per GST node.

    context_position follows the sorting build's rule (``suffixtree`` module docstring):
    a leaf takes, of its predictions, the one with the smallest predicted word, ties by
    the smallest token index; an inner node takes its first child's.

    Returns parent, depth, context_position int64[n], first_word int32[n] (first
    symbol of the edge into each node; 0 at the root) and at_token int64[n_tok] (node of
    the full context of the prediction at each token index, -1 at sentence starts).
    """
    n_gst = start.shape[0]
    total = text.shape[0]
    t_parent = np.empty(n_gst, np.int64)
    t_depth = np.empty(n_gst, np.int64)
    t_word = np.empty(n_gst, np.int32)
    rep = np.full(n_gst, -1, np.int64)
    at_token = np.full(total, -1, np.int64)
    # stack entries: GST node, then its parent's string depth, effective depth, capped node
    stack = np.empty((max(n_gst, 1), 4), np.int64)
    t_parent[0] = -1
    t_depth[0] = 0
    t_word[0] = 0
    n = 1
    top = 0
    for e in range(child_offsets[1] - 1, child_offsets[0] - 1, -1):
        stack[top, 0] = children[e]
        stack[top, 1] = 0
        stack[top, 2] = 0
        stack[top, 3] = 0
        top += 1
    while top > 0:
        top -= 1
        u = stack[top, 0]
        sp = stack[top, 1]
        ep = stack[top, 2]
        j = stack[top, 3]
        ss = start[u] - sp  # text index where the string of u starts
        leaf = end[u] == total  # a leaf: its context stops at the sentence's terminator
        su = sp + end[u] - start[u]
        d = min(max_depth, sent_end[ss] - ss if leaf else su)
        if d > ep:
            t_parent[n] = j
            t_depth[n] = d
            t_word[n] = text[ss + ep]
            j = n
            n += 1
        if leaf:
            i = text_token[ss]
            if i >= 0:
                at_token[i] = j
                r = rep[j]
                if r < 0 or tokens[i] < tokens[r] or (tokens[i] == tokens[r] and i < r):
                    rep[j] = i
            continue
        for e in range(child_offsets[u + 1] - 1, child_offsets[u] - 1, -1):
            stack[top, 0] = children[e]
            stack[top, 1] = su
            stack[top, 2] = d
            stack[top, 3] = j
            top += 1
    context_position = np.empty(n, np.int64)
    for j in range(n - 1, -1, -1):
        if j + 1 < n and t_parent[j + 1] == j:  # preorder: j + 1 is j's first child
            context_position[j] = context_position[j + 1]
        else:
            context_position[j] = rep[j]
    return t_parent[:n].copy(), t_depth[:n].copy(), context_position, t_word[:n].copy(), at_token


@njit(cache=True)
def leaf_ranges(tokens, offsets, at_token, parent, n_symbols):
    """The predictions in the order of the sorting build's ``sorted_pos`` and the leaf
    ranges its ``_suffixtree_kernels.successors`` reads, from ``capped_preorder``'s
    tree: every prediction lies on a leaf (the node of its full context, capped), the
    leaves in preorder are the sorted contexts, and within a leaf the predictions go by
    target word, then token index (a counting sort by leaf, then a stable sort of each
    leaf's few predictions by word).

    tokens : int32[n_tok]; offsets : int64[n_sent+1]; at_token : int64[n_tok]; parent :
    int64[n] in preorder. Returns sorted_pos int64[n_pos] (token indices of the
    predictions), leaf_start int64[n_leaves + 1], first_leaf and last_leaf int64[n]
    (the first and last leaf, by rank, of each node's subtree)."""
    n = parent.shape[0]
    n_sent = offsets.shape[0] - 1
    n_pos = offsets[n_sent] - offsets[0] - n_sent
    rank = np.full(n, -1, np.int64)
    n_leaves = 0
    for j in range(n):
        if j + 1 >= n or parent[j + 1] != j:  # preorder: j + 1 is j's first child, if any
            rank[j] = n_leaves
            n_leaves += 1
    first_leaf = np.empty(n, np.int64)
    last_leaf = np.full(n, -1, np.int64)
    for j in range(n - 1, -1, -1):
        if rank[j] >= 0:
            first_leaf[j] = rank[j]
            last_leaf[j] = rank[j]
        else:
            first_leaf[j] = first_leaf[j + 1]
        if j > 0 and last_leaf[j] > last_leaf[parent[j]]:
            last_leaf[parent[j]] = last_leaf[j]
    leaf_start = np.zeros(n_leaves + 1, np.int64)
    for s in range(n_sent):
        for i in range(offsets[s] + 1, offsets[s + 1]):
            leaf_start[rank[at_token[i]] + 1] += 1
    for r in range(n_leaves):
        leaf_start[r + 1] += leaf_start[r]
    fill = leaf_start[:n_leaves].copy()
    sorted_pos = np.empty(n_pos, np.int64)
    for s in range(n_sent):  # by leaf, then token index
        for i in range(offsets[s] + 1, offsets[s + 1]):
            r = rank[at_token[i]]
            sorted_pos[fill[r]] = i
            fill[r] += 1
    for r in range(n_leaves):  # then, stably, by target word within each leaf (most hold one prediction)
        lo = leaf_start[r]
        hi = leaf_start[r + 1]
        if hi - lo <= 1:
            continue
        if hi - lo <= 32:
            for k in range(lo + 1, hi):
                i = sorted_pos[k]
                w = tokens[i]
                q = k - 1
                while q >= lo and tokens[sorted_pos[q]] > w:
                    sorted_pos[q + 1] = sorted_pos[q]
                    q -= 1
                sorted_pos[q + 1] = i
        else:
            part = sorted_pos[lo:hi].copy()
            words = np.empty(hi - lo, np.int64)
            for k in range(hi - lo):
                words[k] = tokens[part[k]]
            order = np.argsort(words, kind="mergesort")
            for k in range(hi - lo):
                sorted_pos[lo + k] = part[order[k]]
    return sorted_pos, leaf_start, first_leaf, last_leaf


@njit(cache=True)
def tree_children(parent, first_word):
    """Children CSR of the tree of contexts from ``capped_preorder``'s parent (int64[n],
    preorder) and first_word (int32[n]): child_offsets int64[n+1], children int64[n-1]
    in increasing id (= increasing first symbol), child_first_word int32[n-1]."""
    child_offsets, children, _ = children_csr(parent)
    child_first_word = np.empty(children.shape[0], np.int32)
    for e in range(children.shape[0]):
        child_first_word[e] = first_word[children[e]]
    return child_offsets, children, child_first_word
