"""Numba kernels of interpolated Kneser-Ney on a (collapsed) suffix tree of contexts
(``suffixlm.backoff.kn_tree``): the counts, the counts-of-counts by order, and the probabilities
at every node's deepest context with the closed form along its edge."""

from __future__ import annotations

import numpy as np

from .._jit import njit


@njit(cache=True)
def kn_counts(parent, child_offsets, succ_offsets, succ_counts, param_parent):
    """int64[n_params]: the Kneser-Ney count of every param (the n-gram of the deepest
    context of its node and its word): the raw count at a leaf (the context starts with
    ``<s>``, or is cut at the depth cap: the highest order), else the number of the
    node's children the word follows (distinct words before the n-gram)."""
    n_nodes = parent.shape[0]
    kc = np.zeros(succ_counts.shape[0], dtype=np.int64)
    for j in range(n_nodes):
        if child_offsets[j + 1] == child_offsets[j]:
            for q in range(succ_offsets[j], succ_offsets[j + 1]):
                kc[q] = succ_counts[q]
        if parent[j] >= 0:
            for q in range(succ_offsets[j], succ_offsets[j + 1]):
                kc[param_parent[q]] += 1
    return kc


@njit(cache=True)
def counts_of_counts(depth, collapsed, succ_offsets, succ_words, kc, nonevent, max_order):
    """int64[max_order + 1, 5]: row d holds n_0..n_4 of the n-grams of order d + 1 (their
    context at depth d), n-grams predicting a non-event left out. A node standing for c
    trie contexts adds its bottom context's counts at its own depth and, at each of the
    c - 1 depths above it inside its edge, one n-gram of count 1 per word it predicts
    (each of those contexts has one word before it)."""
    n = np.zeros((max_order + 2, 5), dtype=np.int64)
    ones = np.zeros(max_order + 2, dtype=np.int64)
    for j in range(depth.shape[0]):
        s = 0
        d = depth[j]
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            if nonevent[succ_words[q]]:
                continue
            s += 1
            k = kc[q]
            if 1 <= k <= 4:
                n[d, k] += 1
        if collapsed[j] > 1:
            ones[d - collapsed[j] + 1] += s
            ones[d] -= s
    run = 0
    for d in range(max_order + 1):
        run += ones[d]
        n[d, 1] += run
    return n[:max_order + 1]


@njit(cache=True)
def probabilities(parent, depth, collapsed, succ_offsets, succ_words, param_parent, kc, nonevent, d1, d2, d3,
                  ln_d1_cum, vocab_size, p_out, gamma_out, chain_out, n_events_out):
    """Interpolated (modified) Kneser-Ney at the deepest context of every node, top down.

    d1, d2, d3 : float64[max depth + 1] the discounts of the order d + 1 (index d)
    ln_d1_cum  : float64[max depth + 1] sum of ln d1[1..d] (0 at d = 0)

    Fills p_out[q] = P(word of q | deepest context of its node), gamma_out[j] = the
    interpolation weight of that context, chain_out[j] = the product of the weights of
    all the trie contexts of j's edge (what a word j never predicts is multiplied by
    from the parent's deepest context), n_events_out[j] = the words j predicts that are
    events. Inside an edge every context has one word before it, so every count is 1,
    the weight is d1 of its order and P - 1/s shrinks by that factor per depth (s = the
    node's events): P(v | depth e) = 1/s + prod d1 (P(v | parent's depth) - 1/s).
    Returns the number of contexts with no event to predict (should be 0)."""
    n_nodes = parent.shape[0]
    empty = 0
    for j in range(n_nodes):
        a = succ_offsets[j]
        b = succ_offsets[j + 1]
        d = depth[j]
        total = 0.0
        n1 = 0
        n2 = 0
        n3 = 0
        s = 0
        for q in range(a, b):
            if nonevent[succ_words[q]]:
                continue
            s += 1
            k = kc[q]
            total += k
            if k == 1:
                n1 += 1
            elif k == 2:
                n2 += 1
            else:
                n3 += 1
        n_events_out[j] = s
        p = parent[j]
        # the product of the weights of the contexts inside the edge (above the bottom)
        if p >= 0 and collapsed[j] > 1:
            inner = np.exp(ln_d1_cum[d - 1] - ln_d1_cum[depth[p]])
        else:
            inner = 1.0
        if total <= 0.0:
            empty += 1
            gamma_out[j] = 1.0
            chain_out[j] = inner
            for q in range(a, b):
                p_out[q] = inner * (p_out[param_parent[q]] if p >= 0 else 1.0 / vocab_size)
            continue
        gamma = (d1[d] * n1 + d2[d] * n2 + d3[d] * n3) / total
        gamma_out[j] = gamma
        chain_out[j] = inner * gamma
        inv_s = 1.0 / s
        for q in range(a, b):
            if p >= 0:
                lower = p_out[param_parent[q]]
                if collapsed[j] > 1:
                    lower = edge_base(lower, inner, inv_s, True)
            else:
                lower = 1.0 / vocab_size
            if nonevent[succ_words[q]]:
                p_out[q] = gamma * lower
                continue
            k = kc[q]
            if k == 1:
                disc = d1[d]
            elif k == 2:
                disc = d2[d]
            else:
                disc = d3[d]
            p_out[q] = (k - disc) / total + gamma * lower
    return empty


@njit(cache=True)
def edge_base(b_parent, inner, inv_s, closed_form):
    """P(v | a context inside an edge) from v's probability ``b_parent`` at the parent's
    deepest context and the product ``inner`` of the d1 of the depths covered: for a word
    the edge's node predicts (``closed_form``; inv_s = 1 / its events), the closed form of
    ``probabilities``; for any other word, ``inner`` times the parent's."""
    if closed_form:
        return inv_s + inner * (b_parent - inv_s)
    return inner * b_parent
