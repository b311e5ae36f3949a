"""Ukkonen's online suffix tree construction, and the suffix tree of contexts derived
from it (``SuffixTree.build(..., method="ukkonen")``).

The text is the reversed training stream: for each sentence ``<s> w1 .. wn </s>`` the
reversed context symbols ``wn .. w1 <s>`` followed by a terminator unique to the
sentence (symbol ``n_symbols + s``), so contexts never cross a sentence start. Sentence
``s`` occupies text indices ``offsets[s] .. offsets[s+1] - 1``, like its tokens, and the
suffix starting at text index ``q`` (not a terminator) is the context of the prediction
at token index ``offsets[s] + offsets[s+1] - 1 - q``.

1. ``ukkonen``: the generalized suffix tree (GST) of that text (Ukkonen 1995: active
   point, suffix links, open leaf edges), the root's children in an array by symbol,
   the others in one open-addressing hash table keyed by ``node * n_symbols + symbol``,
   and every node's parent. O(n) expected.
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

from ._jit import njit
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
def _find(tab, key, bits, vb, packed):
    """(slot, value) of ``key`` in the open-addressing child table ``tab`` (linear
    probing; -1 marks an empty slot), value -1 if absent (the slot is then where it
    goes). ``packed``: one int64 per slot, ``key << vb | value``; else two, the key then
    the value."""
    mask = (1 << bits) - 1
    h = np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(64 - bits))
    if packed:
        vmask = (1 << vb) - 1
        while True:
            e = tab[h]
            if e == -1:
                return h, -1
            if (e >> vb) == key:
                return h, e & vmask
            h = (h + 1) & mask
    while True:
        e = tab[2 * h]
        if e == -1:
            return h, -1
        if e == key:
            return h, tab[2 * h + 1]
        h = (h + 1) & mask


@njit(cache=True, inline="always")
def _store(tab, h, key, value, vb, packed):
    """Put (``key``, ``value``) in slot ``h`` of the child table (``_find``)."""
    if packed:
        tab[h] = (key << vb) | value
    else:
        tab[2 * h] = key
        tab[2 * h + 1] = value


@njit(cache=True)
def ukkonen(text, n_symbols, pack=True):
    """Generalized suffix tree of ``text`` (int64, every sentence ended by a unique
    terminator, a symbol >= ``n_symbols``). Returns start, end (int64[n_nodes], edge
    label text[start:end], end = len(text) on leaves), link and parent (int64[n_nodes],
    -1 at the root).

    The children are found by (node, first symbol of the edge): the root's in an array
    indexed by symbol (most lookups start there, and it stays in cache), the others in
    a hash table keyed by ``node * n_symbols + symbol``, its key and value packed in one
    int64 where they fit (one cache line a lookup, and half the table: PTB train's GST
    is built in 0.15 s against 0.22 s with 16-byte slots and int64 node arrays). A child whose edge starts
    with a terminator is never looked up (a terminator occurs once in the text, so no
    later suffix follows it), so it goes in ``parent`` only, as every node does.
    ``pack=False``: 16-byte slots even where the packed ones fit (for the tests)."""
    n = text.shape[0]
    cap = 2 * n + 2
    vb = 1
    while (1 << vb) < cap:
        vb += 1
    packed = pack and (cap * n_symbols) >> (63 - vb) == 0  # key << vb | value stays below 2**63
    # int32 (the caller keeps 2 n + 2 below 2**31): less memory for the walk to touch
    se = np.empty(2 * cap, np.int32)  # se[2 u], se[2 u + 1]: start and end of node u's edge
    link = np.zeros(cap, np.int32)
    parent = np.empty(cap, np.int32)
    bits = 1
    while (1 << bits) < 2 * cap:
        bits += 1
    tab = np.full((1 << bits) if packed else (2 << bits), -1, np.int64)
    root = np.full(n_symbols, -1, np.int64)
    inf = n + 1
    se[0] = 0
    se[1] = 0
    parent[0] = -1
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
            key = active_node * n_symbols + c
            h = -1
            nxt = -1
            if c < n_symbols:
                if active_node == 0:
                    nxt = root[c]
                else:
                    h, nxt = _find(tab, key, bits, vb, packed)
            if nxt == -1:
                leaf = n_nodes
                n_nodes += 1
                se[2 * leaf] = pos
                se[2 * leaf + 1] = inf
                parent[leaf] = active_node
                if c < n_symbols:
                    if active_node == 0:
                        root[c] = leaf
                    else:
                        _store(tab, h, key, leaf, vb, packed)
                if last_new != -1:
                    link[last_new] = active_node
                    last_new = -1
            else:
                s0 = np.int64(se[2 * nxt])
                elen = min(np.int64(se[2 * nxt + 1]), pos + 1) - s0
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
                parent[split] = active_node
                if active_node == 0:
                    root[c] = split
                else:
                    _store(tab, h, key, split, vb, packed)
                leaf = n_nodes
                n_nodes += 1
                se[2 * leaf] = pos
                se[2 * leaf + 1] = inf
                parent[leaf] = split
                if tp < n_symbols:
                    k2 = split * n_symbols + tp
                    h2, _ = _find(tab, k2, bits, vb, packed)
                    _store(tab, h2, k2, leaf, vb, packed)
                ns = s0 + active_length
                se[2 * nxt] = ns
                parent[nxt] = split
                if text[ns] < n_symbols:
                    k3 = split * n_symbols + text[ns]
                    h3, _ = _find(tab, k3, bits, vb, packed)
                    _store(tab, h3, k3, nxt, vb, packed)
                if last_new != -1:
                    link[last_new] = split
                last_new = split
            remainder -= 1
            if active_node == 0 and active_length > 0:
                active_length -= 1
                active_edge = pos - remainder + 1
            elif active_node != 0:
                active_node = np.int64(link[active_node])
    start = np.empty(n_nodes, np.int64)
    end = np.empty(n_nodes, np.int64)
    for j in range(n_nodes):
        start[j] = se[2 * j]
        e = se[2 * j + 1]
        end[j] = n if e == inf else e
    return start, end, link[:n_nodes].astype(np.int64), parent[:n_nodes].astype(np.int64)


@njit(cache=True)
def cap_tree(text, sent_end, start, end, parent, max_depth):
    """Cap the generalized suffix tree at depth m and at sentence ends.

    Returns parent int64[n] (-1 at the root), effective depth e int64[n], is_node
    bool[n] (a node of the suffix tree of contexts: the root or e > e(parent)), count
    int64[n] (context occurrences in the subtree: leaves not starting at a
    terminator) and string_start int64[n] (text index where the node's string starts).
    """
    n = start.shape[0]
    total = text.shape[0]
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
def gst_children(text, start, parent, alphabet):
    """Sorted child lists of the GST returned by ``ukkonen``.

    text : int64[n_text]; start : int64[n] (edge of node u is text[start[u]:end[u]]);
    parent : int64[n]; alphabet : symbols and terminators. Returns child_offsets int64[n+1] and children
    int64[n-1], every list in increasing order of the first symbol of the edge (a
    counting sort on that symbol, then a stable one on the parent).
    """
    n = start.shape[0]
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
def capped_preorder(text, sent_end, text_token, start, end, child_offsets, children, max_depth):
    """Cap the GST at depth m and number the nodes of the suffix tree of contexts in
    depth-first preorder, children in increasing order of their first symbol.

    text, sent_end : from ``reversed_text``; text_token : from ``text_tokens``; start,
    end : the GST's edges (``end == len(text)`` on leaves);
    child_offsets, children : from ``gst_children``.

    A depth-first walk of the GST with sorted children visits strings in lexicographic
    order, a node before its descendants; restricted to the capped nodes (effective
    depth above the parent's) that is the preorder of the tree of contexts. Each
    prediction (a GST leaf not starting at a terminator) lands on the node of its full
    context, a leaf of that tree. The walk's stack carries the parent's string depth,
    effective depth and capped node, so nothing is looked up per GST node.

    Returns parent, depth int64[n], first_word int32[n] (first symbol of the edge into
    each node; 0 at the root) and at_token int64[n_tok] (node of the full context of the
    prediction at each token index, -1 at sentence starts). The context positions come
    from ``leaf_ranges``' order, as in the sorting build.
    """
    n_gst = start.shape[0]
    total = text.shape[0]
    t_parent = np.empty(n_gst, np.int64)
    t_depth = np.empty(n_gst, np.int64)
    t_word = np.empty(n_gst, np.int32)
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
            continue
        for e in range(child_offsets[u + 1] - 1, child_offsets[u] - 1, -1):
            stack[top, 0] = children[e]
            stack[top, 1] = su
            stack[top, 2] = d
            stack[top, 3] = j
            top += 1
    return t_parent[:n].copy(), t_depth[:n].copy(), t_word[:n].copy(), at_token


@njit(cache=True)
def leaf_ranges(tokens, offsets, at_token, parent):
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
