"""Numba kernels for context extraction (see ``contexts.py``).

The walk of one position ``i`` of a corpus down a suffix tree: from the root, read the
context symbols ``x[i-1], x[i-2], ...`` (stopping after the sentence's ``<s>`` or after
``m`` symbols); at each node find the child whose edge starts with the next symbol
(binary search in the sorted child list), then compare the rest of the edge label with
the training tokens it points into. A mismatch or the end of the context stops the
walk, possibly inside an edge; ``cover`` records how many of the node's collapsed trie
nodes the context reached.

The queries of a fitted model (``LogLinearLM``'s KenLM API) walk the same paths through
``node_word_table``, a hash table of the tree's (node, word) pairs giving a child and a
param in one random access each, where the binary searches take several misses of a
tree larger than the processor's caches (``walk_hashed``; on a trie ``walk_trie``, its
slots placed by the words' sequence hashes and prefetched).
"""

from __future__ import annotations

import numpy as np

from ._address import prefetch
from ._jit import njit, prange
from ._tree_kernels import find_sorted, grow


#: ``node_word_table``'s hashing constant (Fibonacci hashing).
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: Its slots per entry (a load of 0.6: a missing key's linear scan is about 3.6 slots).
TABLE_SLOTS_PER_ENTRY = 5 / 3
#: The packed value of an absent half (child or param) of an entry.
_NONE32 = 0xFFFFFFFF
#: ``node_word_table``'s words after its slots (and a trie's sequence hashes): n_slots, V, trie.
TABLE_META = 3
#: The sequence hash of the empty context (the root's).
SEED = np.uint64(0x243F6A8885A308D3)


@njit(cache=True, inline="always")
def _nw_home(key, n):
    """Home slot of ``key`` in a table of ``n`` < 2**32 slots (multiply-shift)."""
    h = np.uint64(key) * _GOLDEN
    return np.int64(((h >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, inline="always")
def seq_mix(h, w):
    """The sequence hash ``h`` of a context extended by the word ``w`` (one older)."""
    h = (h + np.uint64(w) + np.uint64(1)) * _GOLDEN
    return h ^ (h >> np.uint64(29))


@njit(cache=True)
def node_word_table(V, n_slots, succ_offsets, succ_words, child_offsets, children, child_first_word, trie):
    """The query kernels' hash table of the tree's (node, word) pairs: for node j and
    word v (key ``j * V + v``), the child of j whose edge starts with v and the param
    (j, v), either -1 where there is none. int64[2 n_slots (+ N on a trie) + TABLE_META],
    linear probing: slot h holds the key at ``2 h`` (-1: empty) and ``child << 32 |
    param`` at ``2 h + 1`` (an absent half all ones); the last words are ``n_slots``, V
    and ``trie`` (1: every edge is one word long, ``collapsed`` all 1, so a node's depth
    is its place on the path and the walks need not read ``depth``). A lookup is one random
    access where the binary searches of ``walk_context`` and ``find_param`` take several
    (the caller checks that children < 2**31, params < 2**32 - 1 and that the keys fit
    in int64).

    A trie's pair (j, v) has its home slot at the hash of its word sequence, not of its
    key: ``seq_mix(SH[j], v)``, SH[j] the sequence hash of node j's context (the root's
    ``SEED``; a child's is its pair's), kept after the slots. A sentence's walk then
    knows every home of a word's lookups from the words alone, before any lookup
    resolves, and prefetches them all (``_lm_kernels._trie_position``): their misses
    overlap. The key, compared in the slot, stays the exact pair."""
    N = succ_offsets.shape[0] - 1
    m = 2 * n_slots + (N if trie else 0)
    H = np.full(m + TABLE_META, -1, dtype=np.int64)
    H[m] = n_slots
    H[m + 1] = V
    H[m + 2] = 1 if trie else 0
    order = np.empty(max(N, 1), dtype=np.int64)  # parents first (a stack from the root), for SH
    order[0] = 0
    top = 1
    if trie:
        H[2 * n_slots] = np.int64(SEED)
    for r in range(N):
        if trie:
            top -= 1
            j = order[top]
        else:
            j = r
        for half in range(2):
            lo = succ_offsets[j] if half == 0 else child_offsets[j]
            hi = succ_offsets[j + 1] if half == 0 else child_offsets[j + 1]
            for e in range(lo, hi):
                word = succ_words[e] if half == 0 else child_first_word[e]
                key = j * V + word
                if trie:
                    sh = seq_mix(np.uint64(H[2 * n_slots + j]), word)
                    h = _seq_home(sh, n_slots)
                    if half == 1:
                        H[2 * n_slots + children[e]] = np.int64(sh)
                        order[top] = children[e]
                        top += 1
                else:
                    h = _nw_home(key, n_slots)
                while H[2 * h] != -1 and H[2 * h] != key:
                    h += 1
                    if h == n_slots:
                        h = 0
                v = H[2 * h + 1] if H[2 * h] == key else np.int64(-1)
                if half == 0:
                    v = (v & ~np.int64(_NONE32)) | e
                else:
                    v = (np.int64(children[e]) << 32) | (v & np.int64(_NONE32))
                H[2 * h] = key
                H[2 * h + 1] = v
    return H


@njit(cache=True, parallel=True)
def forward_table(H, node_parent, succ_offsets, param_parent, child_offsets, children, child_first_word, topo,
                  level_start):
    """A trie's ``node_word_table`` ``H`` with each entry's child half replaced by the
    pair's *right* extension: for the pair (j, v), the node of j's context followed by
    v (where ``H``'s child is v followed by it), or none (all ones). The params' halves,
    the slots and the sequence hashes are ``H``'s, so a lookup is ``H``'s. A sentence's
    batch walk (``_lm_kernels.forward_sentence``) then reads, in the one lookup of each
    param (node, word) along the word's context, the next word's context node one
    deeper: the next walk is known without lookups of its own, half the lookups of
    ``_lm_kernels._trie_position``.

    The right extension of node u (its context c_1 .. c_d, c_d the last word, which is
    u's first edge) is found at the pair (node of c_1 .. c_(d-1), c_d): u's suffix link
    (the link of u's parent followed, in ``H``, by u's edge word) and first word, made a
    depth at a time on numba's threads (``topo``, ``level_start``: the tree's
    ``_tree_kernels.bfs_levels``). An empty array where ``H`` is no trie's, where the
    tree has another root than node 0, where some node's pair is not in ``H`` (a context
    set not closed under dropping its last word: the walk could not follow the links),
    or where some param's word is no param of its node's parent (``param_parent`` -1
    below the root): with the params so closed, and the extensions too (a trie's), a
    word's lookups along its context can stop at the first missing pair, as no longer
    context has a pair of that word."""
    m = H.shape[0] - TABLE_META
    N = succ_offsets.shape[0] - 1
    if (m < 0 or H[m + 2] != 1 or N < 1 or node_parent.shape[0] != N or topo.shape[0] != N
            or level_start.shape[0] < 2 or level_start[1] != 1 or topo[0] != 0):
        return np.zeros(0, dtype=np.int64)
    for q in range(succ_offsets[1], param_parent.shape[0]):
        if param_parent[q] < 0:
            return np.zeros(0, dtype=np.int64)
    V = H[m + 1]
    word = np.zeros(N, dtype=np.int64)  # each node's edge word
    for j in range(N):
        for e in range(child_offsets[j], child_offsets[j + 1]):
            word[children[e]] = child_first_word[e]
    F = H.copy()
    for s in prange(H[m]):
        if F[2 * s] != -1:
            F[2 * s + 1] |= ~np.int64(_NONE32)
    link = np.zeros(N, dtype=np.int64)  # the suffix link: the context without its last word
    first = np.zeros(N, dtype=np.int64)  # the context's last word (the node's first edge)
    n_levels = level_start.shape[0] - 1
    bad = np.zeros(n_levels, dtype=np.int64)
    for d in range(1, n_levels):
        for t in prange(level_start[d], level_start[d + 1]):
            u = topo[t]
            j = node_parent[u]
            if d == 1:
                link[u] = 0
                first[u] = word[u]
            else:
                c = node_word(H, link[j], word[u]) >> 32
                if c < 0:
                    bad[d] = 1
                    continue
                link[u] = c
                first[u] = first[j]
            h = slot_at(H, _trie_home(H, link[u], first[u]), link[u] * V + first[u])
            if h < 0:
                bad[d] = 1
                continue
            F[2 * h + 1] = (np.int64(u) << 32) | (F[2 * h + 1] & np.int64(_NONE32))
        if bad[d]:
            return np.zeros(0, dtype=np.int64)
    return F


@njit(cache=True, inline="always")
def node_word(H, node, word):
    """The packed entry (``node_word_table``) of (node, word), or -1 (both halves
    absent)."""
    m = H.shape[0] - TABLE_META
    n = H[m]
    key = node * H[m + 1] + word
    if H[m + 2] == 1:  # a trie: the home at the pair's sequence hash
        if node < 0 or node >= m - 2 * n:
            return np.int64(-1)
        return node_word_at(H, _trie_home(H, node, word), key)
    return node_word_at(H, _nw_home(key, n), key)


@njit(cache=True, inline="always")
def _trie_home(H, node, word):
    """The home slot of a trie's pair (node, word) in ``H``: the hash of its word sequence
    (``seq_mix`` of the node's sequence hash, kept after the slots, and the word)."""
    return slot_of(H, seq_mix(np.uint64(H[2 * H[H.shape[0] - TABLE_META] + node]), word))


@njit(cache=True, inline="always")
def slot_of(H, h):
    """The home slot of the sequence hash ``h`` (``seq_mix``'s, mixed already) in the
    ``node_word_table`` ``H``: its top 32 bits onto the slots."""
    return _seq_home(h, H[H.shape[0] - TABLE_META])


@njit(cache=True, inline="always")
def _seq_home(h, n):
    """``slot_of`` in a table of ``n`` < 2**32 slots."""
    return np.int64(((h >> np.uint64(32)) * np.uint64(n)) >> np.uint64(32))


@njit(cache=True, inline="always")
def slot_at(H, h, key):
    """The slot holding ``key``, scanned for from slot ``h``, or -1."""
    n = H[H.shape[0] - TABLE_META]
    for _ in range(n):
        t = H[2 * h]
        if t == key:
            return h
        if t == -1:
            return np.int64(-1)
        h += 1
        if h == n:
            h = 0
    return np.int64(-1)


@njit(cache=True, inline="always")
def node_word_at(H, h, key):
    """The packed entry of ``key`` scanned for from slot ``h``, or -1."""
    s = slot_at(H, h, key)
    return H[2 * s + 1] if s >= 0 else np.int64(-1)


@njit(cache=True, inline="always")
def is_trie(H):
    """Whether ``H`` is a ``node_word_table`` of a tree whose edges are all one word
    long (a node's depth is then its place on a walk's path)."""
    return H.shape[0] > 0 and H[H.shape[0] - 1] == 1


@njit(cache=True, inline="always")
def node_word_param(H, node, word):
    """The param (node, word) from ``node_word_table``, or -1."""
    q = node_word(H, node, word) & np.int64(_NONE32)
    return np.int64(-1) if q == _NONE32 else q


@njit(cache=True, inline="always")
def walk_context(x, i, avail, depth, context_position, child_offsets, children, child_first_word, tree_tokens,
                 out_nodes, out_cover, o, write):
    """Walk position ``i`` of token array ``x`` with ``avail`` context symbols.
    Writes the path at out[o:] when ``write``; returns the path length."""
    return walk_hashed(x, i, avail, depth, context_position, child_offsets, children, child_first_word, tree_tokens,
                       _NO_TABLE, out_nodes, out_cover, o, write)


_NO_TABLE = np.zeros(0, dtype=np.int64)


@njit(cache=True, inline="always")
def prefetch_walk(x, i, avail, H):
    """Prefetch the home slot of every lookup of ``walk_trie(x, i, avail, H, ...)``: the
    sequence hashes of the context's words alone give them."""
    h = SEED
    for d in range(avail):
        h = seq_mix(h, x[i - d - 1])
        prefetch(H, 2 * slot_of(H, h))


@njit(cache=True, inline="always")
def walk_trie(x, i, avail, H, out_nodes, out_cover, o):
    """``walk_hashed`` on a trie (``is_trie(H)``: edges of one word, so a lookup a
    word and nothing to compare; each home slot from the words' sequence hash), the
    path always written. Every home slot is prefetched first (``prefetch_walk``), so the
    lookups' misses overlap."""
    prefetch_walk(x, i, avail, H)
    V = H[H.shape[0] - TABLE_META + 1]
    node = 0
    n = 1
    out_nodes[o] = 0
    out_cover[o] = 1
    h = SEED
    for d in range(avail):
        w = x[i - d - 1]
        h = seq_mix(h, w)
        child = node_word_at(H, slot_of(H, h), node * V + w) >> 32
        if child < 0:
            break
        out_nodes[o + n] = child
        out_cover[o + n] = 1
        n += 1
        node = child
    return n


@njit(cache=True, inline="always")
def walk_hashed(x, i, avail, depth, context_position, child_offsets, children, child_first_word, tree_tokens, H,
                out_nodes, out_cover, o, write):
    """``walk_context``, each child found in the ``node_word_table`` ``H`` (empty: by
    binary search in the sorted child list): the same path."""
    if write and is_trie(H):
        return walk_trie(x, i, avail, H, out_nodes, out_cover, o)
    hashed = H.shape[0] > 0
    node = 0
    d = 0
    n = 1
    if write:
        out_nodes[o] = 0
        out_cover[o] = 1
    while d < avail:
        s = x[i - d - 1]
        if hashed:
            child = node_word(H, node, s) >> 32
            if child < 0:
                break
        else:
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
