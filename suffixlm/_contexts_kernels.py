"""Numba kernels for context extraction (see ``contexts.py``).

The walk of one position ``i`` of a corpus down a suffix tree: from the root, read the
context symbols ``x[i-1], x[i-2], ...`` (stopping after the sentence's ``<s>`` or after
``m`` symbols); at each node find the child whose edge starts with the next symbol
(binary search in the sorted child list), then compare the rest of the edge label with
the training tokens it points into. A mismatch or the end of the context stops the
walk, possibly inside an edge; ``cover`` records how many of the node's collapsed trie
nodes the context reached.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit
from ._tree_kernels import find_sorted, grow


@njit(cache=True, inline="always")
def walk_context(x, i, avail, depth, context_position, child_offsets, children, child_first_word, tree_tokens, out_nodes, out_cover, o, write):
    """Walk position ``i`` of token array ``x`` with ``avail`` context symbols.
    Writes the path at out[o:] when ``write``; returns the path length."""
    node = 0
    d = 0
    n = 1
    if write:
        out_nodes[o] = 0
        out_cover[o] = 1
    while d < avail:
        s = x[i - d - 1]
        e = find_sorted(child_first_word, child_offsets[node], child_offsets[node + 1], s)
        if e < 0:
            break
        child = children[e]
        dc = depth[child]
        w = context_position[child]
        lim = min(dc, avail)
        matched = d + 1
        while matched < lim and x[i - matched - 1] == tree_tokens[w - matched - 1]:
            matched += 1
        if write:
            out_nodes[o + n] = child
            out_cover[o + n] = matched - d
        n += 1
        if matched < dc:
            break
        node = child
        d = dc
    return n


@njit(cache=True)
def extract(x, offsets, max_depth, depth, context_position, child_offsets, children, child_first_word, tree_tokens):
    """Paths of every predicted position of token array ``x`` (int32) with sentence
    offsets ``offsets`` (int64[n_sent+1]), by walking the tree.

    Returns positions int64[n_pos], path_offsets int64[n_pos+1], nodes int64[nnz],
    cover int64[nnz].
    """
    n_sent = offsets.shape[0] - 1
    n_pos = offsets[n_sent] - n_sent
    positions = np.empty(n_pos, np.int64)
    path_offsets = np.empty(n_pos + 1, np.int64)
    path_offsets[0] = 0
    cap = 4 * n_pos + max_depth + 2
    nodes = np.empty(cap, np.int64)
    cover = np.empty(cap, np.int64)
    o = 0
    k = 0
    for s in range(n_sent):
        start = offsets[s]
        for i in range(start + 1, offsets[s + 1]):
            if o + max_depth + 1 > cap:
                nodes = grow(nodes, 2 * cap)
                cover = grow(cover, 2 * cap)
                cap = nodes.shape[0]
            positions[k] = i
            o += walk_context(x, i, min(max_depth, i - start), depth, context_position, child_offsets, children,
                       child_first_word, tree_tokens, nodes, cover, o, True)
            k += 1
            path_offsets[k] = o
    return positions, path_offsets, nodes[:o].copy(), cover[:o].copy()


@njit(cache=True)
def training_paths(offsets, position_node, parent, collapsed):
    """Paths of the training positions themselves: the root path of the node of each
    position's full context (``position_node``, int64[n_pos]); covers are whole nodes.

    Returns positions, path_offsets, nodes, cover as ``extract``.
    """
    n = parent.shape[0]
    level = np.empty(n, np.int64)  # nodes on the root path, the node included
    level[0] = 1
    for j in range(1, n):
        level[j] = level[parent[j]] + 1  # preorder: parent[j] < j
    n_sent = offsets.shape[0] - 1
    n_pos = position_node.shape[0]
    positions = np.empty(n_pos, np.int64)
    path_offsets = np.empty(n_pos + 1, np.int64)
    path_offsets[0] = 0
    k = 0
    for s in range(n_sent):
        for i in range(offsets[s] + 1, offsets[s + 1]):
            positions[k] = i
            path_offsets[k + 1] = path_offsets[k] + level[position_node[k]]
            k += 1
    nodes = np.empty(path_offsets[n_pos], np.int64)
    cover = np.empty(path_offsets[n_pos], np.int64)
    for k in range(n_pos):
        j = position_node[k]
        for e in range(path_offsets[k + 1] - 1, path_offsets[k] - 1, -1):
            nodes[e] = j
            cover[e] = collapsed[j]
            j = parent[j]
    return positions, path_offsets, nodes, cover


@njit(cache=True)
def lookup_params(succ_offsets, succ_words, nodes, words):
    """Parameter index of each (node, word) pair, or -1: int64[k]."""
    k = nodes.shape[0]
    out = np.empty(k, np.int64)
    for t in range(k):
        j = nodes[t]
        out[t] = find_sorted(succ_words, succ_offsets[j], succ_offsets[j + 1], words[t])
    return out
