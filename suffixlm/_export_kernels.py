"""numba kernels writing a log-linear LM as a back-off model (``suffixlm.export``)."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .backoff._kn_tree_kernels import edge_base

LN10 = np.log(10.0)


@njit(cache=True)
def trie_counts(node_parent, depth, collapsed, succ_offsets, order):
    """(n-grams of each order n = 2..order, trie contexts of each depth d = 1..order-1):
    int64[order + 1] each. A suffix-tree node j of ``collapsed[j]`` trie nodes holds
    the same successor words at each of them."""
    ngrams = np.zeros(order + 1, dtype=np.int64)
    contexts = np.zeros(order + 1, dtype=np.int64)
    for j in range(node_parent.shape[0]):
        if node_parent[j] < 0:
            continue
        c = collapsed[j]
        n_succ = succ_offsets[j + 1] - succ_offsets[j]
        for kk in range(1, c + 1):
            d = depth[j] - c + kk
            ngrams[d + 1] += n_succ
            contexts[d] += 1
    return ngrams, contexts


@njit(cache=True)
def expand(node_parent, depth, collapsed, succ_offsets, succ_words, param_parent, context_position, tokens,
           w, S, Z, lnB, gamma, order, row_off, idx_off, ctx_row_off, ctx_idx_off, rows, logp, ctx_rows, ctx_bow,
           ln_d1_cum, n_events, nonevent):
    """Every (trie context, seen word) pair as an n-gram with its log10 probability, and
    every trie context with its back-off weight log10 (gamma Z_parent / Z).

    The i-th row of order n is written at ``rows[row_off[n] + i * n : ... + n]``
    (context words oldest first, then the word), its probability at
    ``logp[idx_off[n] + i]``; the i-th context of depth d at ``ctx_rows[ctx_row_off[d]
    + i * d : ...]``, its weight at ``ctx_bow[ctx_idx_off[d] + i]``. Inside a collapsed edge
    the trie context at kk of its c words scores S[parent param] + kk w and has the
    normaliser Z[parent] + sum (exp(S[parent param] + kk w) - exp S[parent param]); with a
    base measure on edges (``ln_d1_cum`` not empty, ``suffixlm.base_measure``) the base there is
    B_kk(v) = 1/s + prod d1 (B_parent(v) - 1/s) for the node's s events, prod d1 times the
    parent's for the rest, and each trie context's weight is the d1 of its depth (the
    deepest one's: what is left of gamma[j])."""
    edges = ln_d1_cum.shape[0] > 0
    fill = np.zeros(order + 1, dtype=np.int64)
    cfill = np.zeros(order + 1, dtype=np.int64)
    for j in range(node_parent.shape[0]):
        p = node_parent[j]
        if p < 0:
            continue
        c = collapsed[j]
        a = succ_offsets[j]
        b = succ_offsets[j + 1]
        cp = context_position[j]
        zprev = Z[p]
        inv_s = 1.0 / n_events[j] if edges and n_events[j] > 0 else 0.0
        inner_prev = 1.0
        for kk in range(1, c + 1):
            d = depth[j] - c + kk
            n = d + 1
            inner = 1.0
            if edges and kk < c:
                inner = np.exp(ln_d1_cum[depth[p] + kk] - ln_d1_cum[depth[p]])
            if kk == c:
                z = Z[j]
            else:
                z = inner * Z[p]
                for q in range(a, b):
                    pq = param_parent[q]
                    sp = S[pq]
                    bq = edge_base(np.exp(lnB[pq]), inner, inv_s, edges and not nonevent[succ_words[q]])
                    z += bq * np.exp(sp + kk * w[q]) - inner * np.exp(sp + lnB[pq])
            lz = np.log(z)
            for q in range(a, b):
                if kk == c:
                    s = S[q] + lnB[q]
                else:
                    pq = param_parent[q]
                    bq = edge_base(np.exp(lnB[pq]), inner, inv_s, edges and not nonevent[succ_words[q]])
                    s = np.log(bq) + S[pq] + kk * w[q]
                i = fill[n]
                fill[n] += 1
                base = row_off[n] + i * n
                for t in range(d):
                    rows[base + t] = tokens[cp - d + t]
                rows[base + d] = succ_words[q]
                logp[idx_off[n] + i] = (s - lz) / LN10
            if edges:
                g = inner / inner_prev if kk < c else gamma[j] / inner_prev
                inner_prev = inner
            else:
                g = gamma[j] if kk == 1 else 1.0
            i = cfill[d]
            cfill[d] += 1
            base = ctx_row_off[d] + i * d
            for t in range(d):
                ctx_rows[base + t] = tokens[cp - d + t]
            ctx_bow[ctx_idx_off[d] + i] = np.log(g * zprev / z) / LN10
            zprev = z
