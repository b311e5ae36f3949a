"""numba kernels of the log-linear LM: scores, normalisers, loss and gradient.

Notation (Nelakanti et al. 2013, §2). Parameters live at (context node j, word v)
pairs of the suffix tree ("params" q); ``param_parent[q]`` is (parent(j), v). A tree
node j stands for ``collapsed[j]`` trie nodes that share one weight, so a context
that covers node j fully adds ``collapsed[j] * w[q]`` to the score of v.

Because the path from the root to a node is unique, the score of every word after a
context that ends exactly at node j is a function of j alone:

    S[q] = S[param_parent[q]] + collapsed[j] * w[q]       (S = 0 above the root)
    Z[j] = Z[parent(j)] + sum_{q of j} (exp S[q] - exp S[param_parent[q]])
    Z[root] = sum_{q of root} exp S[q] + n_unseen          (words never predicted: score 0)

so one top-down pass over the params gives every normaliser, and one bottom-up pass
gives the whole gradient: with alpha_d = n_d / Z[d] (n_d = positions whose context
ends at d) and A(j) = sum of alpha over the subtree of j,

    E[q] = exp(S[q]) * (A(j) - sum_{child params q'} A(node q')) + sum_{child params} E[q']
    d loss / d w_coord[q] = E[q] - emp[q]

(per trie coordinate; the collapsed weight's derivative is collapsed[j] times that).
A pass costs O(params + nodes), independent of the corpus length: this is what makes
an epoch over PTB take a fraction of a second. Training contexts always end on a
whole tree node (a trie leaf: depth m or a sentence start), so this is exact there;
unseen text may stop inside an edge and is scored by ``score_positions``.

All arrays are int64 / float64, ``topo`` lists nodes parents-first.
"""

from __future__ import annotations

import numpy as np

from ._jit import njit, prange
from ._address import array_at, prefetch
from ._text_kernels import line_starts, longest_span, text_ids
from .backoff._kn_tree_kernels import edge_base
from ._contexts_kernels import (SEED, TABLE_META, is_trie, node_word, node_word_at, node_word_param, prefetch_walk,
                               seq_mix, slot_of, walk_hashed, walk_trie)
from ._tree_kernels import find_sorted

LN10 = np.log(10.0)  # model.LN10 (math.log(10.0)): the same double

#: Fixed blocks of the parallel sums: the result does not depend on the thread count.
_BLOCKS = 64
#: A tree level of fewer nodes runs serially (no parallel region: the root's level is one
#: node, and a region costs a wake-up and a barrier; docs/threads.md). Each node's values
#: are computed alone either way, so the result is the same.
_MIN_LEVEL = 256


@njit(cache=True)
def _forward_node(t, w, topo, node_parent, collapsed, succ_offsets, param_parent, lnB, gamma, u0, S, expS, Z):
    """``forward_pass`` at node topo[t] (its parent's values are final)."""
    j = topo[t]
    pj = node_parent[j]
    c = collapsed[j]
    if pj < 0:
        z = u0
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            s = c * w[q]
            S[q] = s
            e = np.exp(s + lnB[q])
            expS[q] = e
            z += e
    else:
        g = gamma[j]
        z = g * Z[pj]
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            pq = param_parent[q]
            s = S[pq] + c * w[q]
            S[q] = s
            e = np.exp(s + lnB[q])
            expS[q] = e
            z += e - g * expS[pq]
    Z[j] = z


@njit(cache=True, parallel=True)
def forward_pass(w, topo, level_start, node_parent, collapsed, succ_offsets, param_parent, lnB, gamma, u0,
                 S, expS, Z):
    """Fill S, expS (float64[n_params]) and Z (float64[n_nodes]) for weights w.

    topo, level_start: the breadth-first schedule (``_tree_kernels.bfs_levels``); the
    nodes of one level are independent given their parents', so each level of at least
    ``_MIN_LEVEL`` nodes runs in parallel (every node's values are computed alone: the
    result is the same for any thread count).
    With a base measure (module docstring of ``suffixlm.base_measure``): lnB[q] = ln B(v | j) of
    each param, gamma[j] the base's interpolation weight of node j's edge, u0 the base
    mass of the words that are no root param; expS[q] then holds B(v | j) exp(S[q]).
    Without one: lnB = 0, gamma = 1, u0 = the number of such words."""
    for d in range(level_start.shape[0] - 1):
        lo = level_start[d]
        hi = level_start[d + 1]
        if hi - lo < _MIN_LEVEL:
            for t in range(lo, hi):
                _forward_node(t, w, topo, node_parent, collapsed, succ_offsets, param_parent, lnB, gamma, u0,
                              S, expS, Z)
        else:
            for t in prange(lo, hi):
                _forward_node(t, w, topo, node_parent, collapsed, succ_offsets, param_parent, lnB, gamma, u0,
                              S, expS, Z)


@njit(cache=True, parallel=True)
def _loss_terms(w, collapsed, param_node, gcum, Z, n_end, emp, A, fill_A):
    """sum_j n_end[j] ln Z[j] - sum_q emp[q] collapsed[node q] w[q], in fixed blocks;
    with fill_A also A[j] = n_end[j] gcum[j] / Z[j] (alpha of the module docstring)."""
    n_nodes = n_end.shape[0]
    n_params = w.shape[0]
    part = np.zeros(_BLOCKS)
    for b in prange(_BLOCKS):
        s = 0.0
        for j in range(b * n_nodes // _BLOCKS, (b + 1) * n_nodes // _BLOCKS):
            a = n_end[j]
            if a != 0.0:
                s += a * np.log(Z[j])
                if fill_A:
                    A[j] = a * gcum[j] / Z[j]
            elif fill_A:
                A[j] = 0.0
        for q in range(b * n_params // _BLOCKS, (b + 1) * n_params // _BLOCKS):
            if emp[q] != 0.0:
                s -= emp[q] * collapsed[param_node[q]] * w[q]
        part[b] = s
    loss = 0.0
    for b in range(_BLOCKS):
        loss += part[b]
    return loss


@njit(cache=True, parallel=True)
def loss_and_gradient(
    w, topo, level_start, child_start, collapsed, succ_offsets, param_parent, param_node, gcum,
    S, expS, Z, n_end, emp, A, grad,
):
    """Loss sum_i -ln p(y_i | x_i) and its gradient per trie coordinate (into ``grad``).

    n_end : float64[n_nodes]  positions whose context ends at each node
    emp   : float64[n_params] positions through node(q) predicting word(q)
    A     : float64[n_nodes]  scratch
    gcum  : float64[n_nodes]  product of the base measure's gamma from the root to each
                              node (1 without a base measure): a word whose deepest param
                              q is at node j has base B(v | j) gcum[e] / gcum[j] at node e
    topo, level_start, child_start: the breadth-first schedule (``bfs_levels``).
    Requires ``forward_pass`` to have filled S, expS, Z for the same w.
    Returns the summed loss (not divided by the number of positions), without the
    constant - sum ln B(y | x) of a base measure.

    One bottom-up pass, a level at a time (deepest first), each node in parallel (levels
    of at least ``_MIN_LEVEL`` nodes): a node gathers from its children (whose values
    are final) the subtree sum A and, for each of its params, sum over child params of
    E[q'] - r[q] A(node q'), with r[q] = expS[q] / gcum[j]; then adds r[q] A(j); a child
    param's E is read there for the last time, so the node also subtracts its emp (the
    root level's params after the pass). A node writes only its own and its children's
    values, so the result is the same for any thread count.
    """
    loss = _loss_terms(w, collapsed, param_node, gcum, Z, n_end, emp, A, True)
    for d in range(level_start.shape[0] - 2, -1, -1):
        lo = level_start[d]
        hi = level_start[d + 1]
        if hi - lo < _MIN_LEVEL:
            for t in range(lo, hi):
                _gradient_node(t, topo, child_start, succ_offsets, param_parent, gcum, expS, emp, A, grad)
        else:
            for t in prange(lo, hi):
                _gradient_node(t, topo, child_start, succ_offsets, param_parent, gcum, expS, emp, A, grad)
    for t in range(level_start[0], level_start[1]):
        j = topo[t]
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            grad[q] -= emp[q]
    return loss


@njit(cache=True)
def _gradient_node(t, topo, child_start, succ_offsets, param_parent, gcum, expS, emp, A, grad):
    """``loss_and_gradient``'s bottom-up step at node topo[t] (its children's values are
    final); ends its children's params (E - emp)."""
    j = topo[t]
    lo = succ_offsets[j]
    hi = succ_offsets[j + 1]
    for q in range(lo, hi):
        grad[q] = 0.0
    gj = gcum[j]
    a = A[j]
    for tc in range(child_start[t], child_start[t + 1]):
        c = topo[tc]
        ac = A[c]
        a += ac
        for qc in range(succ_offsets[c], succ_offsets[c + 1]):
            pq = param_parent[qc]
            grad[pq] += grad[qc] - expS[pq] / gj * ac
            grad[qc] -= emp[qc]
    A[j] = a
    for q in range(lo, hi):
        grad[q] += expS[q] / gj * a


@njit(cache=True)
def _add_event(end, q, param_parent, n_end, emp, c):
    """Add ``c`` events ending at node ``end`` with param ``q``: at the node, at the param
    and at every param above it."""
    n_end[end] += c
    while q >= 0:
        emp[q] += c
        q = param_parent[q]


@njit(cache=True)
def accumulate_batch(batch, end_node, target_param, param_parent, n_end, emp, sign):
    """Add (sign=+1) or remove (sign=-1) the statistics of positions ``batch``
    (indices into end_node / target_param) to n_end and emp."""
    for b in range(batch.shape[0]):
        i = batch[b]
        _add_event(end_node[i], target_param[i], param_parent, n_end, emp, sign)


@njit(cache=True)
def accumulate_counts(end_node, target_param, count, param_parent, n_end, emp):
    """Add the statistics of counted events to n_end and emp: each event's count
    (int64, or integer-valued float64) at its end node, at its param and every param above it.
    Sums of integers, exact: ``accumulate_batch`` over the positions they stand for,
    without any temporary array."""
    for i in range(end_node.shape[0]):
        _add_event(end_node[i], target_param[i], param_parent, n_end, emp, count[i])


@njit(cache=True, inline="always")
def find_param(succ_offsets, succ_words, node, word):
    """Index of param (node, word) by binary search, or -1."""
    return find_sorted(succ_words, succ_offsets[node], succ_offsets[node + 1], word)


@njit(cache=True, inline="always")
def param_of(H, succ_offsets, succ_words, node, word):
    """``find_param`` through the ``node_word_table`` ``H`` (empty: the binary search)."""
    if H.shape[0] > 0:
        return node_word_param(H, node, word)
    return find_param(succ_offsets, succ_words, node, word)


@njit(cache=True)
def training_statistics(ctx_offsets, ctx_nodes, targets, keep, succ_offsets, succ_words, end_node, target_param):
    """For each kept training position: the node where its context ends and the
    deepest param (node on its path, its target). Returns False if some kept target
    is missing from the tree (inconsistent input)."""
    ok = True
    for p in range(targets.shape[0]):
        if not keep[p]:
            end_node[p] = -1
            target_param[p] = -1
            continue
        last = ctx_offsets[p + 1] - 1
        end_node[p] = ctx_nodes[last]
        q = -1
        k = last
        while k >= ctx_offsets[p] and q < 0:
            q = find_param(succ_offsets, succ_words, ctx_nodes[k], targets[p])
            k -= 1
        if q < 0:
            ok = False
        target_param[p] = q
    return ok


@njit(cache=True, inline="always")
def _context_end(w, node_parent, collapsed, succ_offsets, succ_words, param_parent, lnB, gcum, S, expS, Z, j, k,
                 depth, ln_d1_cum, n_events, nonevent):
    """(partial, g_end, inner, inv_s, z) of a context that ends at node j with cover k
    (``score_positions``): whether it ends inside j's edge, the product of back-off
    factors there, the base's closed form inside the edge (``inner``, ``inv_s``) and the
    normaliser."""
    edges = ln_d1_cum.shape[0] > 0
    partial = k != collapsed[j]
    g_end = gcum[j]
    inner = 1.0
    inv_s = 0.0
    if not partial:
        z = Z[j]
    else:
        pj = node_parent[j]
        if edges:
            inner = np.exp(ln_d1_cum[depth[pj] + k] - ln_d1_cum[depth[pj]])
            g_end = gcum[pj] * inner
            if n_events[j] > 0:
                inv_s = 1.0 / n_events[j]
        z = inner * Z[pj]
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            pq = param_parent[q]
            b = edge_base(np.exp(lnB[pq]), inner, inv_s, edges and not nonevent[succ_words[q]])
            z += b * np.exp(S[pq] + k * w[q]) - inner * expS[pq]
    return partial, g_end, inner, inv_s, z


@njit(cache=True)
def score_terms(param_node, lnB, gcum, S, Z, Q, Nn):
    """The scoring terms of contexts that end at their node, for the current weights
    (after ``forward_pass``): ``Q[q] = S[q] + lnB[q] - ln gcum[node of q]`` per param and
    ``Nn[j] = ln gcum[j] - ln Z[j]`` per node, so ln p(y | context ending at j) is
    ``Q[q] + Nn[j]`` for the deepest param q of y on the path (``ln_unseen + Nn[j]``
    for none)."""
    for q in range(Q.shape[0]):
        Q[q] = S[q] + lnB[q] - np.log(gcum[param_node[q]])
    for j in range(Nn.shape[0]):
        Nn[j] = np.log(gcum[j]) - np.log(Z[j])


@njit(cache=True)
def score_all_words(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
    child_first_word, tree_tokens, H, max_depth, x, i, nodes, cover, out,
):
    """``score_positions`` of every word y (``out[y]``, float64[V]) after the context
    ``x[:i]`` (``kenlm_step``'s arguments), walked once into ``nodes``, ``cover``: the
    same operations for each word, so the same numbers, in O(V + the params of the
    path's nodes) instead of V walks. A word takes the param of the deepest node that
    has it (nodes taken shallow to deep, each overriding), else the unseen score."""
    edges = ln_d1_cum.shape[0] > 0
    last = walk_hashed(x, i, i, depth, context_position, child_offsets, children, child_first_word, tree_tokens, H,
                       nodes, cover, 0, True) - 1
    j = nodes[last]
    k = cover[last]
    partial, g_end, inner, inv_s, z = _context_end(w, node_parent, collapsed, succ_offsets, succ_words, param_parent,
                                                   lnB, gcum, S, expS, Z, j, k, depth, ln_d1_cum, n_events, nonevent)
    if not partial:  # the precomputed terms, as _score_one reads them
        nj = Nn[j]
        unseen = ln_unseen + nj
        for y in range(out.shape[0]):
            out[y] = unseen
        for t in range(last + 1):
            node = nodes[t]
            for q in range(succ_offsets[node], succ_offsets[node + 1]):
                out[succ_words[q]] = Q[q] + nj
        return
    unseen = ln_unseen + np.log(g_end)
    for y in range(out.shape[0]):
        out[y] = unseen
    for t in range(last + 1):
        node = nodes[t]
        for q in range(succ_offsets[node], succ_offsets[node + 1]):
            y = succ_words[q]
            if t == last:
                pq = param_parent[q]
                b = edge_base(np.exp(lnB[pq]), inner, inv_s, edges and not nonevent[y])
                out[y] = np.log(b) + S[pq] + k * w[q]
            else:
                out[y] = S[q] + lnB[q] + np.log(g_end / gcum[param_node[q]])
    lz = np.log(z)
    for y in range(out.shape[0]):
        out[y] = out[y] - lz


@njit(cache=True)
def score_positions(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, ctx_offsets, ctx_nodes, ctx_cover, targets, out, depth, ln_d1_cum, n_events, nonevent,
):
    """Natural-log probability of each position's target (any text, contexts may end
    inside an edge: cover < collapsed). Targets never seen after any context score
    ln_unseen (0 without a base measure) before normalisation. ``out`` float64[n_pos].

    Inside an edge a base measure needs its closed form there (``suffixlm.base_measure``):
    ln_d1_cum (summed ln D1 by depth), n_events (events per node) and nonevent (bool[V]);
    empty arrays for no base measure (the base is then 1 at every depth)."""
    H = np.zeros(0, dtype=np.int64)  # binary searches (no node_word_table)
    for p in range(targets.shape[0]):
        out[p], _ = _score_one(w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB,
                               gcum, ln_unseen, S, expS, Z, Q, Nn, ctx_nodes, ctx_cover, ctx_offsets[p],
                               ctx_offsets[p + 1] - 1, targets[p], depth, ln_d1_cum, n_events, nonevent, H)


@njit(cache=True, inline="always")
def _score_at_node(succ_offsets, succ_words, H, Q, Nn, ln_unseen, ctx_nodes, first, last, y):
    """``_score_one`` of a context that ends at its node ``ctx_nodes[last]`` (its cover
    is the whole edge), from the precomputed terms alone."""
    nn = Nn[ctx_nodes[last]]
    s = ln_unseen
    if H.shape[0] > 0:
        # every node's lookup, none waiting on another (their cache misses overlap), the
        # deepest hit kept: about twice as fast as stopping at the first hit from below
        e = first - 1
        q = -1
        for t in range(first, last + 1):
            qt = node_word_param(H, ctx_nodes[t], y)
            if qt >= 0:
                e = t
                q = qt
        if q >= 0:
            s = Q[q]
        return s + nn, e
    t = last
    while t >= first:
        q = find_param(succ_offsets, succ_words, ctx_nodes[t], y)
        if q >= 0:
            s = Q[q]
            break
        t -= 1
    return s + nn, t


@njit(cache=True, inline="always")
def prefetch_position(H, x, i, avail):
    """Prefetch the home slots of ``_trie_position(H, ..., x, i, avail, ...)``'s lookups."""
    y = x[i]
    h = SEED
    prefetch(H, 2 * slot_of(H, seq_mix(h, y)))
    for d in range(1, avail + 1):
        h = seq_mix(h, x[i - d])
        prefetch(H, 2 * slot_of(H, h))
        prefetch(H, 2 * slot_of(H, seq_mix(h, y)))


@njit(cache=True, inline="always")
def _trie_position(H, Q, Nn, ln_unseen, x, i, avail, nodes, cover, hs):
    """``_score_at_node`` of the word ``x[i]`` after its context walked with ``avail``
    words, on a trie's ``node_word_table`` (``is_trie(H)``): (ln p, n-gram length, the
    walk's length, its path left in ``nodes``, ``cover``). Every home slot of the walk
    and of the word's params along it comes from the words' sequence hashes (the slots
    kept in ``hs``, int64[2 (max_depth + 2)] of work space) and is prefetched before the
    first lookup, so the lookups' misses overlap instead of each waiting on the one
    before."""
    V = H[H.shape[0] - TABLE_META + 1]
    y = x[i]
    h = SEED
    a = hs.shape[0] // 2  # hs[d]: the slot of the walk's d-th child, hs[a + d]: of the d-th node's param
    hs[a] = slot_of(H, seq_mix(h, y))
    prefetch(H, 2 * hs[a])
    for d in range(1, avail + 1):
        h = seq_mix(h, x[i - d])
        hs[d] = slot_of(H, h)
        hs[a + d] = slot_of(H, seq_mix(h, y))
        prefetch(H, 2 * hs[d])
        prefetch(H, 2 * hs[a + d])
    node = 0
    n = 1
    nodes[0] = 0
    cover[0] = 1
    e = -1  # the deepest node with the word's param (the search from below stops at the same)
    q = np.int64(-1)
    for d in range(avail + 1):  # each node's param as soon as the node is known, then its child
        qt = node_word_at(H, hs[a + d], node * V + y) & np.int64(0xFFFFFFFF)
        if qt != 0xFFFFFFFF:
            e = d
            q = qt
        if d == avail:
            break
        w = x[i - d - 1]
        child = node_word_at(H, hs[d + 1], node * V + w) >> 32
        if child < 0:
            break
        nodes[n] = child
        cover[n] = 1
        n += 1
        node = child
    s = ln_unseen
    if q >= 0:
        s = Q[q]
    return s + Nn[nodes[n - 1]], (e + 1 if e > 0 else 1), n


@njit(cache=True, inline="always")
def _step_at_node(succ_offsets, succ_words, Q, Nn, ln_unseen, collapsed, depth, context_position, child_offsets,
                  children, child_first_word, tree_tokens, H, max_depth, x, i, k, n, nodes, cover):
    """``_kenlm_position`` of the word ``x[i]`` (not ``<s>``, nor a missing ``<unk>``)
    after its ``k`` kept words, whose walk ``nodes[:n]``, ``cover`` ends at its node:
    (ln p, n-gram length, words kept, the kept context's walk length, left in
    ``nodes``, ``cover``). The decoder's common case, without the arrays the general
    form needs."""
    lp, e = _score_at_node(succ_offsets, succ_words, H, Q, Nn, ln_unseen, nodes, 0, n - 1, x[i])
    ngram = depth[nodes[e]] + 1 if e > 0 else 1
    n = walk_hashed(x, i + 1, min(max_depth, k + 1), depth, context_position, child_offsets, children,
                    child_first_word, tree_tokens, H, nodes, cover, 0, True)
    keep = depth[nodes[n - 1]] - collapsed[nodes[n - 1]] + cover[n - 1] if n > 1 else 0
    return lp, ngram, keep, n


@njit(cache=True)
def _score_one(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, ctx_nodes, ctx_cover, first, last, y, depth, ln_d1_cum, n_events, nonevent, H,
):
    """``score_positions`` of the target ``y`` after the context walked in
    ``ctx_nodes[first:last + 1]``, ``ctx_cover``: (its natural-log probability, the
    index of the deepest node on the walk where ``y`` has a param, or first - 1).

    A context that ends at its node (not inside the edge) reads the precomputed
    ``Q[q] + Nn[j]`` (``score_terms``): two loads where the general form takes six and
    two logarithms."""
    edges = ln_d1_cum.shape[0] > 0
    j = ctx_nodes[last]
    k = ctx_cover[last]
    if k == collapsed[j]:
        return _score_at_node(succ_offsets, succ_words, H, Q, Nn, ln_unseen, ctx_nodes, first, last, y)
    partial, g_end, inner, inv_s, z = _context_end(w, node_parent, collapsed, succ_offsets, succ_words,
                                                   param_parent, lnB, gcum, S, expS, Z, j, k, depth, ln_d1_cum,
                                                   n_events, nonevent)
    s = ln_unseen + np.log(g_end)
    t = last
    while t >= first:
        q = param_of(H, succ_offsets, succ_words, ctx_nodes[t], y)
        if q >= 0:
            if t == last and partial:
                pq = param_parent[q]
                b = edge_base(np.exp(lnB[pq]), inner, inv_s, edges and not nonevent[y])
                s = np.log(b) + S[pq] + k * w[q]
            else:
                s = S[q] + lnB[q] + np.log(g_end / gcum[param_node[q]])
            break
        t -= 1
    return s - np.log(z), t


@njit(cache=True)
def _kenlm_position(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
    child_first_word, tree_tokens, H, max_depth, x, i, avail, walked, need_root, nodes, cover,
):
    """``kenlm_step`` of the word ``x[i]`` after its ``avail`` words before it (at most
    ``max_depth``), with the walk's buffers passed in: (ln p, ln p after the root when
    ``need_root`` (else 0), n-gram length, words kept, the length of the walk of the
    kept context left in ``nodes``, ``cover``). ``walked`` > 0: that walk of the
    context is in ``nodes[:walked]`` already (the one this function left for the
    position before, whose kept words are this position's context)."""
    word = x[i]
    n = walked
    if n == 0:
        n = walk_hashed(x, i, avail, depth, context_position, child_offsets, children, child_first_word,
                        tree_tokens, H, nodes, cover, 0, True)
    lp, e = _score_one(w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum,
                       ln_unseen, S, expS, Z, Q, Nn, nodes, cover, 0, n - 1, word, depth, ln_d1_cum, n_events, nonevent,
                       H)
    root = 0.0
    if need_root:
        root, _ = _score_one(w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB,
                             gcum, ln_unseen, S, expS, Z, Q, Nn, nodes, cover, 0, 0, word, depth, ln_d1_cum, n_events,
                             nonevent, H)
    ngram = 1  # the deepest node below the root where the word has a param
    if e > 0:
        ngram = depth[nodes[e]] - (collapsed[nodes[e]] - cover[e] if e == n - 1 else 0) + 1
    n = walk_hashed(x, i + 1, min(max_depth, avail + 1), depth, context_position, child_offsets, children,
                    child_first_word, tree_tokens, H, nodes, cover, 0, True)
    keep = depth[nodes[n - 1]] - collapsed[nodes[n - 1]] + cover[n - 1] if n > 1 else 0
    return lp, root, ngram, keep, n


@njit(cache=True)
def kenlm_step(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
    child_first_word, tree_tokens, H, max_depth, x, i, need_root, nodes, cover,
):
    """KenLM's step on a log-linear model in one call: the word ``x[i]`` after the
    context ``x[:i]`` (int32, at most ``max_depth`` words, then the word and a spare
    slot; ``nodes``, ``cover`` int64 buffers of ``max_depth + 2``). Returns (ln p of the
    word, ln p of the word after the empty context (the root; 0 unless ``need_root``),
    the n-gram length: one more than the depth of the deepest context on the path where
    the word has a param, the number of words kept as the next context: the part of
    ``x[:i + 1]`` the tree matches). The probabilities are ``score_positions``' for
    this one position."""
    lp, root, ngram, keep, _ = _kenlm_position(
        w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen, S, expS,
        Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children, child_first_word,
        tree_tokens, H, max_depth, x, i, i, 0, need_root, nodes, cover)
    return lp, root, ngram, keep


@njit(cache=True)
def kenlm_sentence(
    w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
    S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
    child_first_word, tree_tokens, H, max_depth, x, first, bos_id, unk_state, out_lp, out_root, out_len,
):
    """``kenlm_step`` word after word along ``x`` (int32 word ids, then a spare slot),
    from position ``first`` (1 after a leading ``<s>``, whose context is kept; else 0)
    to ``x.shape[0] - 2``, each word's context the words the step before kept (its
    walk too); into ``out_lp``, ``out_root`` (for ``bos_id`` and ``unk_state`` only),
    ``out_len`` at the word's position. ``unk_state``: the id of a word after which the
    context is that word alone (``<unk>`` in a model without it, as
    ``LogLinearLM.kenlm_step`` keeps it; -1 for none)."""
    nodes = np.empty(max_depth + 2, dtype=np.int64)
    cover = np.empty(max_depth + 2, dtype=np.int64)
    k = min(first, max_depth)
    walked = 0
    if is_trie(H):  # each word's context walked again by _trie_position, its lookups prefetched
        hs = np.empty(2 * (max_depth + 2), dtype=np.int64)
        fresh = True  # the word's context is walked with avail k (else: k is set below from its walk)
        avail = k
        for i in range(first, x.shape[0] - 1):
            word = x[i]
            if i + 2 < x.shape[0]:  # the next word's lookups (its context as long as it can be) on their way
                prefetch_position(H, x, i + 1, min(max_depth, avail + 1))
            if word != bos_id and word != unk_state:
                out_lp[i], out_len[i], n = _trie_position(H, Q, Nn, ln_unseen, x, i, avail, nodes, cover, hs)
                out_root[i] = 0.0
                if not fresh:
                    k = n - 1  # the context kept (what the step before walked)
                avail = min(max_depth, k + 1)
                fresh = False
                continue
            walked = 0
            if not fresh:
                walked = walk_trie(x, i, avail, H, nodes, cover, 0)
                k = walked - 1
            lp, root, ngram, keep, walked = _kenlm_position(
                w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen,
                S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
                child_first_word, tree_tokens, H, max_depth, x, i, k, walked, True, nodes, cover)
            out_lp[i] = lp
            out_root[i] = root
            out_len[i] = ngram
            avail = min(max_depth, k + 1)
            fresh = False
            if word == unk_state:
                out_len[i] = 1
                k = min(1, max_depth)
                avail = k
                fresh = True
        return
    for i in range(first, x.shape[0] - 1):
        word = x[i]
        special = word == bos_id or word == unk_state
        if not special:
            # the common case inline (a call with all the arrays costs as much as the
            # work): the walk ends at its node, so the precomputed terms score the word
            n = walked
            if n == 0:
                n = walk_hashed(x, i, k, depth, context_position, child_offsets, children, child_first_word,
                                tree_tokens, H, nodes, cover, 0, True)
            walked = n
            if cover[n - 1] == collapsed[nodes[n - 1]]:
                out_lp[i], out_len[i], k, walked = _step_at_node(
                    succ_offsets, succ_words, Q, Nn, ln_unseen, collapsed, depth, context_position, child_offsets,
                    children, child_first_word, tree_tokens, H, max_depth, x, i, k, n, nodes, cover)
                out_root[i] = 0.0
                continue
        lp, root, ngram, keep, walked = _kenlm_position(
            w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen, S,
            expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children,
            child_first_word, tree_tokens, H, max_depth, x, i, k, walked, special, nodes, cover)
        out_lp[i] = lp
        out_root[i] = root
        out_len[i] = ngram
        k = keep
        if word == unk_state:
            out_len[i] = 1
            k = min(1, max_depth)
            walked = 0  # the kept context is not the one walked


#: The arrays of ``kenlm_step`` (its arguments but the two numbers ``ln_unseen`` and
#: ``max_depth``, in its order) as ``kenlm_state_step`` reads them by address.
STEP_DTYPES = (np.float64, np.int64, np.int64, np.int64, np.int32, np.int64, np.int64, np.float64, np.float64,
               np.float64, np.float64, np.float64, np.float64, np.float64, np.int64, np.float64, np.int64, np.bool_,
               np.int64, np.int64, np.int64, np.int32, np.int32, np.int64)
#: The state of the context ``<unk>`` alone, in a model without ``<unk>``.
UNK_STATE = -1
#: The work space of ``kenlm_state_step`` after the arrays in its ``desc``: (dtype, size
#: as a function of ``max_depth``) of each.
STATE_SCRATCH = ((np.int64, lambda m: 2 * (m + 2)), (np.int32, lambda m: max(m + 2, 3)),
                 (np.int64, lambda m: 2 * (m + 2)))
#: ``kenlm_state_step``'s parameters after the work space in its ``desc`` (int64 words;
#: the last three hold float64 bits)
STATE_PARAMS = ("max_depth", "radix", "null", "unk_state", "ln_unseen", "bos_log10", "unk_log10")
#: Where ``desc`` holds the address and length of the trie's ``forward_table`` (after the
#: work space; length 0: none yet, the sentence walks look every context up)
STATE_FORWARD = 2 * len(STEP_DTYPES) + 2 * len(STATE_SCRATCH)
STATE_PARAMS_AT = STATE_FORWARD + 2


@njit(cache=True, inline="always")
def step_arrays(desc):
    """The arrays of ``kenlm_step`` (``STEP_DTYPES``) at the addresses and lengths
    ``desc`` points to (int64 pairs)."""
    D = array_at(desc, 2 * len(STEP_DTYPES), np.int64)
    w = array_at(D[0], D[1], np.float64)
    node_parent = array_at(D[2], D[3], np.int64)
    collapsed = array_at(D[4], D[5], np.int64)
    succ_offsets = array_at(D[6], D[7], np.int64)
    succ_words = array_at(D[8], D[9], np.int32)
    param_parent = array_at(D[10], D[11], np.int64)
    param_node = array_at(D[12], D[13], np.int64)
    lnB = array_at(D[14], D[15], np.float64)
    gcum = array_at(D[16], D[17], np.float64)
    S = array_at(D[18], D[19], np.float64)
    expS = array_at(D[20], D[21], np.float64)
    Z = array_at(D[22], D[23], np.float64)
    Q = array_at(D[24], D[25], np.float64)
    Nn = array_at(D[26], D[27], np.float64)
    depth = array_at(D[28], D[29], np.int64)
    ln_d1_cum = array_at(D[30], D[31], np.float64)
    n_events = array_at(D[32], D[33], np.int64)
    nonevent = array_at(D[34], D[35], np.bool_)
    context_position = array_at(D[36], D[37], np.int64)
    child_offsets = array_at(D[38], D[39], np.int64)
    children = array_at(D[40], D[41], np.int64)
    child_first_word = array_at(D[42], D[43], np.int32)
    tree_tokens = array_at(D[44], D[45], np.int32)
    H = array_at(D[46], D[47], np.int64)
    return (w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, S, expS, Z, Q,
            Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children, child_first_word,
            tree_tokens, H)


@njit(cache=True, inline="always")
def _log10_of(word, lp, root, unk_state, bos_log10, unk_log10):
    """log10 of the natural-log probability ``lp`` of ``word``; ``<s>`` and ``unk_state``
    (``<unk>`` in a model without it; -1 for none) get ``bos_log10`` / ``unk_log10``
    times the back-off of their context (``root``: ln p of the word after the empty
    context), as ``model._special_log10`` gives them."""
    v = lp / LN10
    if word == 0 or word == unk_state:  # BOS_ID
        v = ((bos_log10 if word == 0 else unk_log10) + v) - root / LN10
    return v


@njit(cache=True, inline="always")
def _sentence_work(n, max_depth):
    """``_sentence_sum_into``'s work arrays for sentences of up to ``n`` positions."""
    return np.empty(n), np.empty(n), np.empty(n, dtype=np.int64), np.empty(2 * (max_depth + 2), dtype=np.int64)


@njit(cache=True, inline="always")
def _plain_words(x, first, n, unk_state):
    """Whether none of ``x[first:n]`` is ``<s>`` or ``unk_state``."""
    for p in range(first, n):
        if x[p] == 0 or x[p] == unk_state:  # BOS_ID
            return False
    return True


@njit(cache=True, inline="always")
def _prefetch_homes(F, x, i, depth):
    """Prefetch the home slots of the word ``x[i]``'s pairs along its context's walk,
    ``depth`` + 1 of them (``forward_sentence``'s lookups): the words give them."""
    h = SEED
    z = x[i]
    prefetch(F, 2 * slot_of(F, seq_mix(h, z)))
    for d in range(1, depth + 1):
        h = seq_mix(h, x[i - d])
        prefetch(F, 2 * slot_of(F, seq_mix(h, z)))


@njit(cache=True, inline="always")
def forward_sentence(F, Q, Nn, ln_unseen, max_depth, x, first, n, out_lp, out_root, out_len, walk):
    """``kenlm_sentence`` of ``x[first:n]`` on a trie, none of them ``<s>`` nor a
    missing ``<unk>``, through the trie's ``forward_table`` ``F``: the same ``out_lp``,
    ``out_root``, ``out_len``. Each word's params are looked up along its context's walk,
    from the empty context on, up to the first pair missing (no longer context has one:
    ``forward_table``'s closure), and the same lookups give the next word's walk (the
    right extensions), which ``_trie_position`` looks up again: half the lookups or
    fewer, the same nodes (the walk of a context of ``avail`` words is the chain of
    extensions cut at ``avail``, as every left part of a context is one), the same sums.
    The home slots come from the words alone and are prefetched two words ahead; a
    word's ``Q`` and ``Nn`` terms are read after the next word's lookups (prefetched
    meanwhile). ``walk``: int64[2 (max_depth + 2)] of work space."""
    V = F[F.shape[0] - TABLE_META + 1]
    half = walk.shape[0] // 2
    k = min(first, max_depth)
    walk[0] = 0
    n_path = 1
    if k > 0:
        r = node_word(F, 0, x[first - 1]) >> 32
        if r >= 0:
            walk[1] = r
            n_path = 2
    if first < n:
        _prefetch_homes(F, x, first, n_path - 1)
    if first + 1 < n:
        _prefetch_homes(F, x, first + 1, min(max_depth, n_path))
    path = 0  # the word's walk is walk[path:path + n_path], the next one's is made at the other half
    fresh = True
    last = -1  # the word before, its terms pending: its param (-1: none) and its context's node
    last_q = np.int64(-1)
    last_node = np.int64(0)
    for i in range(first, n):
        y = x[i]
        node = walk[path + n_path - 1]
        prefetch(Nn, node)
        if i + 2 < n:  # the lookups of the word after next on their way
            _prefetch_homes(F, x, i + 2, min(max_depth, n_path + 1))
        nxt = half - path
        walk[nxt] = 0
        m = 1
        chain = True
        e = -1
        q = np.int64(-1)
        h = SEED
        for d in range(n_path):
            if d > 0:
                h = seq_mix(h, x[i - d])
            rec = node_word_at(F, slot_of(F, seq_mix(h, y)), walk[path + d] * V + y)
            if rec == -1:  # nor has any longer context a pair of y (forward_table's closure)
                break
            qt = rec & np.int64(0xFFFFFFFF)
            if qt != 0xFFFFFFFF:
                e = d
                q = qt
            r = rec >> 32
            if chain and r >= 0:
                walk[nxt + m] = r
                m += 1
            else:
                chain = False
        if q >= 0:
            prefetch(Q, q)
        if last >= 0:
            out_lp[last] = (Q[last_q] if last_q >= 0 else ln_unseen) + Nn[last_node]
        last, last_q, last_node = i, q, node
        out_root[i] = 0.0
        out_len[i] = e + 1 if e > 0 else 1
        if not fresh:
            k = n_path - 1
        fresh = False
        n_path = min(m, min(max_depth, k + 1) + 1)
        path = nxt
    if last >= 0:
        out_lp[last] = (Q[last_q] if last_q >= 0 else ln_unseen) + Nn[last_node]


@njit(cache=True, inline="always")
def _sentence_sum_into(desc, ln_unseen, max_depth, x, n, first, unk_state, bos_log10, unk_log10, lp, root, ngram,
                       walk):
    """The sum of ``kenlm_sentence``'s log10 probabilities of the words ``x[first:n]``
    (int32 word ids, ``x[0]`` = ``<s>`` when ``first`` is 1, room for a spare slot at
    ``x[n]``), in order, as ``LogLinearLM.score`` adds them: ``<s>`` and ``unk_state``
    (``<unk>`` in a model without it; -1 for none) given ``bos_log10`` / ``unk_log10``
    times the back-off of their context, as ``model._special_log10`` does; the arrays
    read at ``desc`` (``kenlm_state_step``); ``lp``, ``root``, ``ngram`` work space of
    ``n`` or more, ``walk`` of 2 (max_depth + 2). Through the trie's ``forward_table``
    where ``desc`` has one (``STATE_FORWARD``) and the words are plain (``forward_sentence``)."""
    (w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, S, expS, Z, Q, Nn,
     depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children, child_first_word,
     tree_tokens, H) = step_arrays(desc)
    x[n] = 0
    D = array_at(desc, STATE_FORWARD + 2, np.int64)
    if D[STATE_FORWARD + 1] > 0 and _plain_words(x, first, n, unk_state):
        forward_sentence(array_at(D[STATE_FORWARD], D[STATE_FORWARD + 1], np.int64), Q, Nn, ln_unseen, max_depth, x,
                         first, n, lp, root, ngram, walk)
    else:
        kenlm_sentence(w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum,
                       ln_unseen, S, expS, Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position,
                       child_offsets, children, child_first_word, tree_tokens, H, max_depth, x[:n + 1], first, 0,
                       unk_state, lp, root, ngram)
    total = 0.0
    for p in range(first, n):
        total += _log10_of(x[p], lp[p], root[p], unk_state, bos_log10, unk_log10)
    return total


@njit(cache=True)
def _line_sums(desc, ln_unseen, max_depth, W, blob, text, starts, first, last, bos, eos, unk_state, bos_log10,
               unk_log10, sums):
    """``kenlm_score_lines`` of lines ``first .. last - 1`` (``starts``:
    ``_text_kernels.line_starts``) into ``sums``."""
    ids = np.empty(longest_span(starts, first, last) // 2 + 4, dtype=np.int32)  # <s>, words, </s>, a spare slot
    lp, root, ngram, walk = _sentence_work(ids.shape[0], max_depth)
    begin = 1 if bos else 0
    ids[0] = 0  # BOS_ID
    for s in range(first, last):
        n = text_ids(W, blob, text, starts[s], starts[s + 1] - 1, eos, 2, 1, ids, begin)  # <unk>, </s>
        sums[s] = _sentence_sum_into(desc, ln_unseen, max_depth, ids, n, begin, unk_state, bos_log10, unk_log10, lp,
                                     root, ngram, walk)


@njit(cache=True)
def kenlm_score_lines(desc, ln_unseen, max_depth, W, blob, text, bos, eos, unk_state, bos_log10, unk_log10, sums):
    """KenLM's ``score`` of each line of ``text`` (UTF-8 bytes, lines ended by a line
    feed, the last one optionally) into ``sums``, in one call (``LogLinearLM.score``,
    ``score_batch``): the words made ids with the vocabulary's word table
    (``_text_kernels.word_table_of``; a word outside it is ``<unk>``), then
    ``_sentence_sum``."""
    starts = line_starts(text, sums.shape[0])
    _line_sums(desc, ln_unseen, max_depth, W, blob, text, starts, 0, sums.shape[0], bos, eos, unk_state, bos_log10,
               unk_log10, sums)


#: The slots of ``kenlm_score_line_at``'s block (int64): ``desc`` (``kenlm_state_step``'s),
#: the word table's and its blob's address and length, the addresses of its work arrays
#: (int32 ids, float64 lp and root, int64 n-gram lengths, ``LINE_WORK_WORDS`` each).
LINE_BLOCK = ("desc", "W", "W_len", "blob", "blob_len", "ids", "lp", "root", "ngram")
#: The longest line (in words, about: its bytes / 2) ``kenlm_score_line_at`` scores in its
#: work space; a longer one gets arrays of its own (``kenlm_score_lines``).
LINE_WORK_WORDS = 1024


@njit(cache=True)
def kenlm_score_line_at(block, text):
    """``kenlm_score_lines`` of one line (UTF-8 bytes without a line feed), ``bos`` and
    ``eos`` true, on the model and word table the block at the address ``block``
    describes (``LINE_BLOCK``): the per-line path of ``LogLinearLM.score``, which passes
    no array but the text and allocates no work array (numba's dispatch costs about
    0.1 µs per array argument; the caller holds the GIL, so one call at a time uses the
    work space). The same sum."""
    B = array_at(block, len(LINE_BLOCK), np.int64)
    desc = B[0]
    P = array_at(desc, STATE_PARAMS_AT + len(STATE_PARAMS), np.int64)
    F = array_at(desc, STATE_PARAMS_AT + len(STATE_PARAMS), np.float64)  # the same words, as doubles
    max_depth, unk_state = P[STATE_PARAMS_AT], P[STATE_PARAMS_AT + 3]
    ln_unseen, bos_log10, unk_log10 = F[STATE_PARAMS_AT + 4], F[STATE_PARAMS_AT + 5], F[STATE_PARAMS_AT + 6]
    W = array_at(B[1], B[2], np.int64)
    blob = array_at(B[3], B[4], np.uint8)
    if len(text) // 2 + 4 > LINE_WORK_WORDS:
        sums = np.empty(1)
        kenlm_score_lines(desc, ln_unseen, max_depth, W, blob, text, True, True, unk_state, bos_log10, unk_log10,
                          sums)
        return sums[0]
    ids = array_at(B[5], LINE_WORK_WORDS, np.int32)
    ids[0] = 0  # BOS_ID
    n = text_ids(W, blob, text, 0, len(text), True, 2, 1, ids, 1)  # <unk>, </s>
    D = array_at(desc, STATE_PARAMS_AT, np.int64)
    walk = array_at(D[2 * len(STEP_DTYPES)], 2 * (max_depth + 2), np.int64)  # the state step's work (STATE_SCRATCH)
    return _sentence_sum_into(desc, ln_unseen, max_depth, ids, n, 1, unk_state, bos_log10, unk_log10,
                              array_at(B[6], LINE_WORK_WORDS, np.float64), array_at(B[7], LINE_WORK_WORDS, np.float64),
                              array_at(B[8], LINE_WORK_WORDS, np.int64), walk)


@njit(cache=True, parallel=True)
def kenlm_score_lines_parallel(desc, ln_unseen, max_depth, W, blob, text, starts, bos, eos, unk_state, bos_log10,
                               unk_log10, sums, bounds):
    """``kenlm_score_lines`` of the lines at ``starts`` (``_text_kernels.line_starts``),
    the lines ``bounds[c] .. bounds[c + 1] - 1`` of each chunk c on a thread of their own
    (``_sentence_sum`` uses no shared work space): the same sums."""
    for c in prange(bounds.shape[0] - 1):
        _line_sums(desc, ln_unseen, max_depth, W, blob, text, starts, bounds[c], bounds[c + 1], bos, eos, unk_state,
                   bos_log10, unk_log10, sums)


@njit(cache=True)
def _id_sums(desc, ln_unseen, max_depth, ids, offsets, first, last, bos, unk_state, bos_log10, unk_log10, sums):
    """``kenlm_score_ids`` of sentences ``first .. last - 1``."""
    x = np.empty(longest_span(offsets, first, last) + 2, dtype=np.int32)
    lp, root, ngram, walk = _sentence_work(x.shape[0], max_depth)
    begin = 1 if bos else 0
    x[0] = 0  # BOS_ID
    for s in range(first, last):
        n = begin
        for t in range(offsets[s], offsets[s + 1]):
            x[n] = ids[t]
            n += 1
        sums[s] = _sentence_sum_into(desc, ln_unseen, max_depth, x, n, begin, unk_state, bos_log10, unk_log10, lp,
                                     root, ngram, walk)


@njit(cache=True)
def kenlm_score_ids(desc, ln_unseen, max_depth, ids, offsets, bos, unk_state, bos_log10, unk_log10, sums):
    """``_sentence_sum`` of each sentence ``ids[offsets[i]:offsets[i + 1]]`` (word ids,
    ``</s>`` included where it is to be scored; checked by the caller to be ids of the
    model's vocabulary) into ``sums`` (``LogLinearLM.score_ids``)."""
    _id_sums(desc, ln_unseen, max_depth, ids, offsets, 0, sums.shape[0], bos, unk_state, bos_log10, unk_log10, sums)


@njit(cache=True, parallel=True)
def kenlm_score_ids_parallel(desc, ln_unseen, max_depth, ids, offsets, bos, unk_state, bos_log10, unk_log10, sums,
                             bounds):
    """``kenlm_score_ids`` with the sentences ``bounds[c] .. bounds[c + 1] - 1`` of each
    chunk c on a thread of their own: the same sums."""
    for c in prange(bounds.shape[0] - 1):
        _id_sums(desc, ln_unseen, max_depth, ids, offsets, bounds[c], bounds[c + 1], bos, unk_state, bos_log10,
                 unk_log10, sums)


@njit(cache=True)
def _state_step(desc, ln_unseen, max_depth, radix, state, word, need_root):
    """``kenlm_step`` of ``word`` after a context given as a tree position, the
    decoder's per-call path: ``state = node * radix + cover`` (the last node of the
    context's walk and how much of its edge it covers; ``UNK_STATE``: ``<unk>`` alone),
    the arrays at the addresses and lengths ``desc`` points to (int64 pairs, in
    ``STEP_DTYPES``' order). The context's words are the training tokens before the
    node's ``context_position``; a state that is no tree position of this model (another
    model's) is the empty context, as a binary model reads one. ``desc`` also points to
    the call's work space after the arrays (``STATE_SCRATCH``: int64[2 (max_depth + 2)],
    int32[max_depth + 2], int64[2 (max_depth + 2)]; the caller holds the GIL, so one call at a time
    uses it).
    Returns (ln p, ln p after the root, n-gram length, the state after the word)."""
    (w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, S, expS, Z, Q, Nn,
     depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children, child_first_word,
     tree_tokens, H) = step_arrays(desc)
    D = array_at(desc, STATE_PARAMS_AT, np.int64)  # the arrays and the work space
    work = array_at(D[2 * len(STEP_DTYPES)], 2 * (max_depth + 2), np.int64)
    nodes = work[:max_depth + 2]
    cover = work[max_depth + 2:]
    j = state // radix
    k = state - j * radix
    if state == UNK_STATE:
        n_ctx = 1
        x = array_at(D[2 * len(STEP_DTYPES) + 2], 3, np.int32)
        x[0] = 2  # UNK_ID
    elif state < 0 or j >= collapsed.shape[0] or k < 1 or k > collapsed[j]:  # another model's: no context
        n_ctx = 0
        x = array_at(D[2 * len(STEP_DTYPES) + 2], 2, np.int32)
    else:
        n_ctx = min(depth[j] - collapsed[j] + k, max_depth)
        x = array_at(D[2 * len(STEP_DTYPES) + 2], n_ctx + 2, np.int32)
        end = context_position[j]
        for t in range(n_ctx):
            x[t] = tree_tokens[end - n_ctx + t]
    x[n_ctx] = word
    x[n_ctx + 1] = 0
    if state != UNK_STATE and not need_root and is_trie(H):  # the context walked again, its lookups prefetched
        hs = array_at(D[2 * len(STEP_DTYPES) + 4], 2 * (max_depth + 2), np.int64)
        prefetch_walk(x, n_ctx + 1, min(max_depth, n_ctx + 1), H)  # the next state's walk, meanwhile
        lp, ngram, _ = _trie_position(H, Q, Nn, ln_unseen, x, n_ctx, n_ctx, nodes, cover, hs)
        n = walk_trie(x, n_ctx + 1, min(max_depth, n_ctx + 1), H, nodes, cover, 0)
        return lp, 0.0, ngram, nodes[n - 1] * radix + cover[n - 1]
    walked = 0
    if state != UNK_STATE and n_ctx > 0 and n_ctx == depth[j] - collapsed[j] + k:
        # the context's walk is the node's path from the root: read it up the parents
        walked = 1
        a = j
        while node_parent[a] >= 0 and walked <= max_depth:
            a = node_parent[a]
            walked += 1
        if node_parent[a] >= 0:  # not a tree of this model's: walk the words
            walked = 0
        else:
            a = j
            for t in range(walked - 1, -1, -1):
                nodes[t] = a
                cover[t] = collapsed[a] if t > 0 else 1
                a = node_parent[a]
            cover[walked - 1] = k
            if not need_root and k == collapsed[j]:
                lp, ngram, _, n = _step_at_node(succ_offsets, succ_words, Q, Nn, ln_unseen, collapsed, depth,
                                                context_position, child_offsets, children, child_first_word,
                                                tree_tokens, H, max_depth, x, n_ctx, n_ctx, walked, nodes, cover)
                return lp, 0.0, ngram, nodes[n - 1] * radix + cover[n - 1]
    lp, root, ngram, keep, n = _kenlm_position(
        w, node_parent, collapsed, succ_offsets, succ_words, param_parent, param_node, lnB, gcum, ln_unseen, S, expS,
        Z, Q, Nn, depth, ln_d1_cum, n_events, nonevent, context_position, child_offsets, children, child_first_word,
        tree_tokens, H, max_depth, x, n_ctx, n_ctx, walked, need_root, nodes, cover)
    return lp, root, ngram, nodes[n - 1] * radix + cover[n - 1]


@njit(cache=True)
def kenlm_state_step(desc, state, word):
    """KenLM's ``BaseScore`` on a log-linear model in one call, the decoder's per-call
    path: (log10 p of ``word`` after the context ``state``, the n-gram length, the state
    after the word), as ``LogLinearLM.kenlm_step`` gives them. ``state = node * radix +
    cover`` (the last node of the context's walk and how much of its edge it covers;
    ``UNK_STATE``: ``<unk>`` alone). ``desc`` points to the arrays' addresses and lengths
    (int64 pairs, in ``STEP_DTYPES``' order), the work space (``STATE_SCRATCH``) and the
    parameters (``STATE_PARAMS``, at ``STATE_PARAMS_AT``): ``null``, the state of the empty
    context; ``unk_state``, ``<unk>``'s id in a model without it (-1 for none), after
    which the state is ``UNK_STATE``; ``<s>`` and that ``<unk>`` get ``bos_log10`` /
    ``unk_log10`` times the back-off of their context (``model._special_log10``). The
    context's words are the training tokens before the node's ``context_position``; a
    state that is no tree position of this model (another model's) is the empty context,
    as a binary model reads one. Three integers a call: numba's dispatch costs some
    0.01 µs per number, 0.1 µs per array."""
    P = array_at(desc, STATE_PARAMS_AT + len(STATE_PARAMS), np.int64)
    F = array_at(desc, STATE_PARAMS_AT + len(STATE_PARAMS), np.float64)  # the same words, as doubles
    max_depth, radix, null, unk_state = P[STATE_PARAMS_AT], P[STATE_PARAMS_AT + 1], P[STATE_PARAMS_AT + 2], \
        P[STATE_PARAMS_AT + 3]
    ln_unseen, bos_log10, unk_log10 = F[STATE_PARAMS_AT + 4], F[STATE_PARAMS_AT + 5], F[STATE_PARAMS_AT + 6]
    special = word == 0 or word == unk_state  # BOS_ID
    lp, root, ngram, nxt = _state_step(desc, ln_unseen, max_depth, radix, state, word, special)
    lp10 = _log10_of(word, lp, root, unk_state, bos_log10, unk_log10)
    if word == unk_state:  # KenLM keeps that <unk> in the state
        return lp10, 1, UNK_STATE if max_depth > 0 else null
    return lp10, ngram, nxt


@njit(cache=True)
def context_state(depth, context_position, child_offsets, children, child_first_word, tree_tokens, H, max_depth, radix,
                  x):
    """The state (``kenlm_state_step``) of the context ``x`` (int32 word ids, oldest
    first, then a spare slot): the tree position of its longest suffix the tree
    matches, at most ``max_depth`` words."""
    n_ctx = x.shape[0] - 1
    nodes = np.empty(max_depth + 2, dtype=np.int64)
    cover = np.empty(max_depth + 2, dtype=np.int64)
    n = walk_hashed(x, n_ctx, min(max_depth, n_ctx), depth, context_position, child_offsets, children,
                    child_first_word, tree_tokens, H, nodes, cover, 0, True)
    return nodes[n - 1] * radix + cover[n - 1]


def loss_value(w, collapsed, param_node, gcum, Z, n_end, emp):
    """The summed loss alone (after ``forward_pass``)."""
    return _loss_terms(w, collapsed, param_node, gcum, Z, n_end, emp, Z, False)


@njit(cache=True)
def smoothed_initial_weights(topo, node_parent, collapsed, succ_offsets, succ_counts, param_parent,
                             n_unseen, discount, w, S, expS, Z):
    """A starting point close to the optimum for small penalties: the weights that make
    the log-linear model equal an interpolated absolute-discounting n-gram model.

    Root: w[v] = ln(count(v) + 1) (unseen words keep 0: add-one smoothing). Node j with
    parent distribution P(v | parent) = exp(S[param_parent]) / Z[parent]:
        P(v | j) = (c(j, v) - D) / c(j) + gamma_j P(v | parent),  gamma_j = D |succ(j)| / c(j)
    and since a word that never followed j gets gamma_j P(v | parent), the model matches
    this exactly when collapsed[j] * w[j, v] = ln(P(v | j) / (gamma_j P(v | parent))) > 0.
    Fills w, and S, expS, Z as ``forward_pass`` would for it.
    """
    for t in range(topo.shape[0]):
        j = topo[t]
        pj = node_parent[j]
        c = collapsed[j]
        a = succ_offsets[j]
        b = succ_offsets[j + 1]
        if pj < 0:
            z = float(n_unseen)
            for q in range(a, b):
                w[q] = np.log(succ_counts[q] + 1.0)
                S[q] = w[q]
                expS[q] = np.exp(S[q])
                z += expS[q]
        else:
            total = 0.0
            for q in range(a, b):
                total += succ_counts[q]
            gamma_total = discount * (b - a)
            z = Z[pj]
            for q in range(a, b):
                pq = param_parent[q]
                p_par = expS[pq] / Z[pj]
                ratio = 1.0 + (succ_counts[q] - discount) / (gamma_total * p_par)
                w[q] = np.log(ratio) / c if ratio > 1.0 else 0.0
                S[q] = S[pq] + c * w[q]
                expS[q] = np.exp(S[q])
                z += expS[q] - expS[pq]
        Z[j] = z



@njit(cache=True)
def novel_context_events(end_node, target_param, node_parent, node_count, param_node, param_parent,
                         out_end, out_param):
    """Leave-one-out events for novel contexts. A training prediction whose context ends
    at a node seen once (a singleton: take that occurrence out and the context is novel)
    is predicted again from the deepest context that stays seen, the node's parent: the
    event (parent, target). Its param is the deepest one of the target at or above the
    parent. Fills out_end / out_param (int64, >= len(end_node)); returns how many."""
    k = 0
    for p in range(end_node.shape[0]):
        e = end_node[p]
        if e < 0 or node_count[e] != 1:
            continue
        d = node_parent[e]
        if d < 0:
            continue
        q = target_param[p]
        if param_node[q] == e:
            q = param_parent[q]
        out_end[k] = d
        out_param[k] = q
        k += 1
    return k
