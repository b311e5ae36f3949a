"""Numba kernels that build the suffix tree of contexts (see ``suffixtree.py``).

All arrays are flat numpy arrays: ``tokens`` int32, everything else int64 unless
stated. Notation: a *position* is a token index ``i`` of a predicted symbol (every
token except a sentence's ``<s>``); its *context* is ``tokens[i-1], tokens[i-2], ...``
back to the sentence's ``<s>`` included, truncated to ``m`` symbols, so its length is
``min(m, i - sentence_start)``. Distinct contexts are prefix-free (a context shorter
than ``m`` ends with ``<s>``, which no context extends), so they are exactly the
leaves of the suffix trie, and sorting them lexicographically lists the trie's
leaves in depth-first order.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from ._tree_kernels import children_csr
from ._tree_kernels import find_sorted, grow, sort_prefix


@njit(cache=True)
def context_lengths(offsets, max_depth):
    """Predicted positions in corpus order and their context lengths.

    offsets : int64[n_sent+1] sentence boundaries into the token array.
    Returns positions int64[n_pos], lengths int64[n_pos].
    """
    n_sent = offsets.shape[0] - 1
    n_pos = offsets[n_sent] - n_sent
    positions = np.empty(n_pos, np.int64)
    lengths = np.empty(n_pos, np.int64)
    k = 0
    for s in range(n_sent):
        start = offsets[s]
        for i in range(start + 1, offsets[s + 1]):
            positions[k] = i
            lengths[k] = min(max_depth, i - start)
            k += 1
    return positions, lengths


@njit(cache=True)
def sort_contexts(tokens, positions, lengths, n_symbols):
    """Positions ordered by (context, target), contexts compared lexicographically
    (the symbol at depth 1 most significant; a context that has ended sorts first).

    LSD radix sort: a stable counting-sort pass on the target (least significant),
    then one per depth L, L-1, ..., 1 (L the longest context) with key
    ``tokens[i-d] + 1``, or 0 once the context has ended.
    Cost O((L + 1) * (n_pos + n_symbols)).

    tokens : int32[n_tok]; positions, lengths : int64[n_pos]; n_symbols : max id + 1.
    Returns positions int64[n_pos] (the sorted token indices) and their lengths.
    """
    n = positions.shape[0]
    src = positions.copy()
    src_len = lengths.copy()
    dst = np.empty(n, np.int64)
    dst_len = np.empty(n, np.int64)
    keys = np.empty(n, np.int64)
    count = np.empty(n_symbols + 2, np.int64)
    longest = 0
    for k in range(n):
        if lengths[k] > longest:
            longest = lengths[k]
    for step in range(longest + 1):
        d = longest + 1 - step if step > 0 else 0  # 0 = the target, then L .. 1
        count[:] = 0
        for k in range(n):
            i = src[k]
            if d == 0:
                key = tokens[i] + 1
            elif src_len[k] >= d:
                key = tokens[i - d] + 1
            else:
                key = 0
            keys[k] = key
            count[key + 1] += 1
        for b in range(1, n_symbols + 2):
            count[b] += count[b - 1]
        for k in range(n):
            key = keys[k]
            j = count[key]
            dst[j] = src[k]
            dst_len[j] = src_len[k]
            count[key] = j + 1
        src, dst = dst, src
        src_len, dst_len = dst_len, src_len
    return src, src_len


@njit(cache=True)
def group_leaves(tokens, sorted_pos, sorted_len):
    """Group sorted positions into distinct contexts (the trie's leaves).

    Returns
    leaf_start int64[q+1] : leaf k holds sorted positions leaf_start[k]:leaf_start[k+1]
    leaf_len   int64[q]   : its context length (its depth)
    leaf_lcp   int64[q]   : longest common prefix with leaf k-1 (0 for k = 0)
    """
    n = sorted_pos.shape[0]
    leaf_start = np.empty(n + 1, np.int64)
    leaf_len = np.empty(n, np.int64)
    leaf_lcp = np.empty(n, np.int64)
    q = 0
    for k in range(n):
        i = sorted_pos[k]
        b = sorted_len[k]
        if k > 0:
            ip = sorted_pos[k - 1]
            a = sorted_len[k - 1]
            h = 0
            lim = min(a, b)
            while h < lim and tokens[ip - 1 - h] == tokens[i - 1 - h]:
                h += 1
            if h == a and h == b:
                continue  # same context as the previous position
        else:
            h = 0
        leaf_start[q] = k
        leaf_len[q] = b
        leaf_lcp[q] = h
        q += 1
    leaf_start[q] = n
    return leaf_start[: q + 1].copy(), leaf_len[:q].copy(), leaf_lcp[:q].copy()


@njit(cache=True)
def tree_topology(leaf_len, leaf_lcp, max_depth):
    """Nodes of the suffix tree (root, leaves and branching trie nodes) in
    depth-first preorder, children in increasing order of their first symbol.

    The branching nodes are the lcp-intervals of the sorted leaves. A right-to-left
    pass with a stack of running minima of ``leaf_lcp`` finds, for every leaf k, the
    branching nodes whose leftmost leaf is k (their depths are the running minima of
    leaf_lcp[k+1], leaf_lcp[k+2], ... that exceed leaf_lcp[k]); a left-to-right pass
    then numbers them in preorder and links parents.

    Returns parent, depth, first_leaf, last_leaf: int64[n_nodes] (leaf range
    inclusive) and leaf_node int64[q], the node id of each leaf.
    """
    q = leaf_len.shape[0]
    if leaf_len[0] == 0:
        # m = 0: the only context is the empty one, so the root is the only leaf.
        one = np.zeros(1, np.int64)
        return np.full(1, -1, np.int64), one, one.copy(), one.copy(), one.copy()
    stack = np.empty(q + 1, np.int64)
    top = 0
    inner_start = np.empty(q, np.int64)
    inner_count = np.empty(q, np.int64)
    inner_depth = np.empty(max(q, 1), np.int64)
    n_inner = 0
    for k in range(q - 1, -1, -1):
        lk = leaf_lcp[k]
        t = top
        while t > 0 and stack[t - 1] > lk:
            t -= 1
        inner_start[k] = n_inner
        inner_count[k] = top - t
        for e in range(t, top):  # increasing depth
            inner_depth[n_inner] = stack[e]
            n_inner += 1
        top = t
        if k > 0 and not (top > 0 and stack[top - 1] == lk):
            stack[top] = lk
            top += 1
    n_nodes = 1 + q + n_inner
    parent = np.empty(n_nodes, np.int64)
    depth = np.empty(n_nodes, np.int64)
    first_leaf = np.empty(n_nodes, np.int64)
    last_leaf = np.empty(n_nodes, np.int64)
    parent[0] = -1
    depth[0] = 0
    first_leaf[0] = 0
    last_leaf[0] = q - 1
    leaf_node = np.empty(q, np.int64)
    path = np.empty(max_depth + 2, np.int64)
    path[0] = 0
    ptop = 1
    nid = 1
    for k in range(q):
        lk = leaf_lcp[k]
        while depth[path[ptop - 1]] > lk:
            last_leaf[path[ptop - 1]] = k - 1
            ptop -= 1
        for e in range(inner_count[k]):
            parent[nid] = path[ptop - 1]
            depth[nid] = inner_depth[inner_start[k] + e]
            first_leaf[nid] = k
            path[ptop] = nid
            ptop += 1
            nid += 1
        parent[nid] = path[ptop - 1]
        leaf_node[k] = nid
        depth[nid] = leaf_len[k]
        first_leaf[nid] = k
        path[ptop] = nid
        ptop += 1
        nid += 1
    while ptop > 1:
        last_leaf[path[ptop - 1]] = q - 1
        ptop -= 1
    return parent, depth, first_leaf, last_leaf, leaf_node


@njit(cache=True)
def position_nodes(n_tok, offsets, sorted_pos, leaf_start, leaf_node):
    """Node of the full context of every predicted position, in corpus order:
    int64[n_pos]."""
    at_token = np.empty(n_tok, np.int64)
    for k in range(leaf_node.shape[0]):
        for e in range(leaf_start[k], leaf_start[k + 1]):
            at_token[sorted_pos[e]] = leaf_node[k]
    n_sent = offsets.shape[0] - 1
    out = np.empty(n_tok - n_sent, np.int64)
    p = 0
    for s in range(n_sent):
        for i in range(offsets[s] + 1, offsets[s + 1]):
            out[p] = at_token[i]
            p += 1
    return out


@njit(cache=True)
def labelled_children(parent, depth, context_position, tokens):
    """Children of every node in CSR form (``_tree_kernels.children_csr``), in node order
    (which is increasing order of the first symbol of the edge when nodes are in
    lexicographic preorder), with the first word of each child's edge.

    Returns child_offsets int64[n+1], children int64[n-1], child_first_word int32[n-1].
    """
    child_offsets, children, _ = children_csr(parent)
    first_word = np.empty(children.shape[0], np.int32)
    for e in range(children.shape[0]):
        j = children[e]
        first_word[e] = tokens[context_position[j] - depth[parent[j]] - 1]
    return child_offsets, children, first_word


@njit(cache=True)
def successors(tokens, sorted_pos, sorted_count, leaf_start, first_leaf, last_leaf, child_offsets, children,
               n_symbols):
    """Successor words and counts of every node (the parameters).

    A leaf's successors are the runs of targets among its sorted positions (sorted by
    target within a context); an inner node's are the sum of its children's, merged
    with a dense accumulator in reverse preorder (children before parents), so the
    work is O(n_params log) rather than O(sum of subtree sizes).

    sorted_count : int64[n_pos], the predictions each sorted position stands for
    (distinct events with their counts, ``SuffixTree.from_events``); empty: one each
    (a text's positions).

    Returns count int64[n], succ_offsets int64[n+1], succ_words int32[P], succ_counts int64[P].
    """
    n = first_leaf.shape[0]
    cap = sorted_pos.shape[0] + n_symbols + 16
    tw = np.empty(cap, np.int32)
    tc = np.empty(cap, np.int64)
    tstart = np.empty(n, np.int64)
    tlen = np.empty(n, np.int64)
    mark = np.full(n_symbols, -1, np.int64)
    acc = np.zeros(n_symbols, np.int64)
    touched = np.empty(n_symbols, np.int32)
    used = 0
    for j in range(n - 1, -1, -1):
        c0 = child_offsets[j]
        c1 = child_offsets[j + 1]
        if c1 == c0:
            lo = leaf_start[first_leaf[j]]
            hi = leaf_start[last_leaf[j] + 1]
            tw = grow(tw, used + hi - lo)
            tc = grow(tc, used + hi - lo)
            tstart[j] = used
            prev = -1
            for k in range(lo, hi):
                w = tokens[sorted_pos[k]]
                c = sorted_count[k] if sorted_count.shape[0] else 1
                if w != prev:
                    tw[used] = w
                    tc[used] = c
                    used += 1
                    prev = w
                else:
                    tc[used - 1] += c
            tlen[j] = used - tstart[j]
        else:
            nt = 0
            for e in range(c0, c1):
                c = children[e]
                for f in range(tstart[c], tstart[c] + tlen[c]):
                    w = tw[f]
                    if mark[w] != j:
                        mark[w] = j
                        acc[w] = 0
                        touched[nt] = w
                        nt += 1
                    acc[w] += tc[f]
            if c1 - c0 > 1:
                sort_prefix(touched, nt)
            tw = grow(tw, used + nt)
            tc = grow(tc, used + nt)
            tstart[j] = used
            for e in range(nt):
                w = touched[e]
                tw[used] = w
                tc[used] = acc[w]
                used += 1
            tlen[j] = nt
    succ_offsets = np.empty(n + 1, np.int64)
    succ_offsets[0] = 0
    for j in range(n):
        succ_offsets[j + 1] = succ_offsets[j] + tlen[j]
    n_params = succ_offsets[n]
    succ_words = np.empty(n_params, np.int32)
    succ_counts = np.empty(n_params, np.int64)
    count = np.empty(n, np.int64)
    for j in range(n):
        s = tstart[j]
        o = succ_offsets[j]
        total = 0
        for e in range(tlen[j]):
            succ_words[o + e] = tw[s + e]
            succ_counts[o + e] = tc[s + e]
            total += tc[s + e]
        count[j] = total
    return count, succ_offsets, succ_words, succ_counts


@njit(cache=True)
def expand_to_trie(parent, depth, collapsed, count, context_position, child_offsets, children,
                   child_first_word, succ_offsets, succ_words, succ_counts, tokens):
    """The suffix trie of a collapsed tree: tree node j becomes a chain of
    collapsed[j] trie nodes (shallowest first) in place, which keeps depth-first
    preorder; every chain node copies j's count and successors.

    Returns a tuple: trie parent, depth, count, context_position, child_offsets,
    children, child_first_word, succ_offsets, succ_words, succ_counts (same layout as
    the tree's), then tree_node int64[|S|] (tree node of each trie node) and last
    int64[n] (trie id of the deepest trie node of each tree node).
    """
    n = parent.shape[0]
    first = np.empty(n, np.int64)  # trie id of the shallowest node of each chain
    total = 0
    n_params = 0
    for j in range(n):
        first[j] = total
        total += collapsed[j]
        n_params += collapsed[j] * (succ_offsets[j + 1] - succ_offsets[j])
    t_parent = np.empty(total, np.int64)
    t_depth = np.empty(total, np.int64)
    t_count = np.empty(total, np.int64)
    t_pos = np.empty(total, np.int64)
    tree_node = np.empty(total, np.int64)
    t_child_offsets = np.empty(total + 1, np.int64)
    t_children = np.empty(max(total - 1, 0), np.int64)
    t_first_word = np.empty(max(total - 1, 0), np.int32)
    t_succ_offsets = np.empty(total + 1, np.int64)
    t_succ_words = np.empty(n_params, np.int32)
    t_succ_counts = np.empty(n_params, np.int64)
    last = np.empty(n, np.int64)
    t_child_offsets[0] = 0
    t_succ_offsets[0] = 0
    ce = 0
    pe = 0
    for j in range(n):
        c = collapsed[j]
        f = first[j]
        w = context_position[j]
        for r in range(c):
            t = f + r
            if r == 0:
                t_parent[t] = first[parent[j]] + collapsed[parent[j]] - 1 if j > 0 else -1
            else:
                t_parent[t] = t - 1
            d = depth[j] - c + 1 + r
            t_depth[t] = d
            t_count[t] = count[j]
            t_pos[t] = w
            tree_node[t] = j
            if r < c - 1:
                t_children[ce] = t + 1
                t_first_word[ce] = tokens[w - d - 1]
                ce += 1
            else:
                for e in range(child_offsets[j], child_offsets[j + 1]):
                    t_children[ce] = first[children[e]]
                    t_first_word[ce] = child_first_word[e]
                    ce += 1
            t_child_offsets[t + 1] = ce
            for e in range(succ_offsets[j], succ_offsets[j + 1]):
                t_succ_words[pe] = succ_words[e]
                t_succ_counts[pe] = succ_counts[e]
                pe += 1
            t_succ_offsets[t + 1] = pe
        last[j] = f + c - 1
    return (t_parent, t_depth, t_count, t_pos, t_child_offsets, t_children, t_first_word,
            t_succ_offsets, t_succ_words, t_succ_counts, tree_node, last)


@njit(cache=True)
def param_parent(parent, succ_offsets, succ_words):
    """Parameter (parent(j), v) of every parameter (j, v); -1 at the root.

    Returns int64[n_params]; -1 also marks a successor missing from its parent's list,
    which cannot happen in a tree built from text (callers loading a tree from a file
    can check for it).
    """
    n = parent.shape[0]
    out = np.empty(succ_words.shape[0], np.int64)
    for e in range(succ_offsets[0], succ_offsets[1]):
        out[e] = -1
    for j in range(1, n):
        p = parent[j]
        lo = succ_offsets[p]
        hi = succ_offsets[p + 1]
        for e in range(succ_offsets[j], succ_offsets[j + 1]):
            out[e] = find_sorted(succ_words, lo, hi, succ_words[e])
    return out


@njit(cache=True)
def subtree_end(parent):
    """Exclusive end of every node's subtree in preorder numbering: the subtree of
    j is j .. end[j] - 1. int64[n]."""
    n = parent.shape[0]
    end = np.empty(n, np.int64)
    for j in range(n):
        end[j] = j + 1
    for j in range(n - 1, 0, -1):
        if end[j] > end[parent[j]]:
            end[parent[j]] = end[j]
    return end


@njit(cache=True)
def param_node(succ_offsets):
    """Node of every parameter: int64[n_params]."""
    n = succ_offsets.shape[0] - 1
    out = np.empty(succ_offsets[n], np.int64)
    for j in range(n):
        for e in range(succ_offsets[j], succ_offsets[j + 1]):
            out[e] = j
    return out


@njit(cache=True)
def first_unordered_event(tokens, offsets):
    """Index k of the first event that does not come strictly after event k - 1 in
    canonical order, or -1 when the events are sorted and distinct. Canonical order is
    ``sort_contexts``'s: by context, the word at depth 1 most significant, a context that
    has ended before one that goes on; then by target. Event k is
    ``tokens[offsets[k]:offsets[k+1]]``, its context then its target (``from_events``)."""
    n = offsets.shape[0] - 1
    for k in range(1, n):
        a_end = offsets[k] - 1
        b_end = offsets[k + 1] - 1
        la = a_end - offsets[k - 1]
        lb = b_end - offsets[k]
        c = 0
        d = 1
        while True:
            ka = tokens[a_end - d] + 1 if d <= la else 0
            kb = tokens[b_end - d] + 1 if d <= lb else 0
            if ka != kb:
                c = -1 if ka < kb else 1
                break
            if ka == 0:
                break
            d += 1
        if c == 0:
            if tokens[a_end] < tokens[b_end]:
                c = -1
            elif tokens[a_end] > tokens[b_end]:
                c = 1
        if c >= 0:
            return k
    return -1


@njit(cache=True)
def gather_events(tokens, offsets, order):
    """The events ``order`` (a permutation of the event indices) laid out in that order:
    returns tokens int32[len(tokens)], offsets int64[n_events+1]."""
    n = order.shape[0]
    new_offsets = np.empty(n + 1, np.int64)
    new_offsets[0] = 0
    for k in range(n):
        e = order[k]
        new_offsets[k + 1] = new_offsets[k] + offsets[e + 1] - offsets[e]
    out = np.empty(new_offsets[n], np.int32)
    for k in range(n):
        e = order[k]
        a = offsets[e]
        o = new_offsets[k]
        for t in range(offsets[e + 1] - a):
            out[o + t] = tokens[a + t]
    return out, new_offsets
