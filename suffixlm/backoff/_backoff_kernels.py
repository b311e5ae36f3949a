"""Numba kernels of the back-off index (:mod:`suffixlm.backoff.index`): lookups in SRILM's
context trie, and its back-off walk (``Ngram::wordProbBO``), which scoring and pruning
share."""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ._hash_kernels import hash_find


@njit(cache=True)
def find_nodes(rows, ncols, V, keys, vals, shift):
    """int64[m]: the node of each context ``rows[:, :ncols]``, -1 where there is none."""
    m = rows.shape[0]
    out = np.empty(m, dtype=np.int64)
    for i in range(m):
        node = 0
        for j in range(ncols - 1, -1, -1):
            node = hash_find(keys, vals, shift, node * V + rows[i, j])
            if node < 0:
                break
        out[i] = node
    return out


@njit(cache=True)
def word_prob_bo(w, ctx, start, step, clen, V, nkeys, nvals, nshift, node_alive, node_bow,
                 pkeys, pvals, pshift, prob_alive, lp):
    """SRILM's ``Ngram::wordProbBO(w, context, clen)``: the context is ``ctx[start]``,
    ``ctx[start + step]``, ... (``clen`` words, most recent first). ``node_alive`` /
    ``prob_alive``: which nodes and n-grams are still in the model (empty: all).
    float32 sums in SRILM's order. Returns (float32 log10 p, length of the n-gram used:
    0 = none)."""
    logp = np.float32(-np.inf)
    bow = np.float32(0.0)
    hit = 0
    node = 0
    i = 0
    all_probs = prob_alive.shape[0] == 0
    all_nodes = node_alive.shape[0] == 0
    while True:
        g = hash_find(pkeys, pvals, pshift, node * V + w)
        if g >= 0 and (all_probs or prob_alive[g]):
            logp = lp[g]
            bow = np.float32(0.0)
            hit = i + 1
        if i >= clen:
            break
        nxt = hash_find(nkeys, nvals, nshift, node * V + ctx[start + i * step])
        if nxt < 0 or not (all_nodes or node_alive[nxt]):
            break
        bow = np.float32(bow + node_bow[nxt])
        node = nxt
        i += 1
    return np.float32(logp + bow), hit


@njit(cache=True)
def backoff_query(tokens, starts, positions, order, vocab_size, node_keys, node_vals,
                  node_shift, node_bow, prob_keys, prob_vals, prob_shift, prob_lp):
    """log10 p(w | context) by the ARPA back-off rule (``word_prob_bo``) at every
    position of ``positions``: the context of ``tokens[p]`` runs back to its sentence
    start ``starts[p]``, at most ``order - 1`` words. Returns (log10 probability
    float64[n], length of the n-gram used int64[n]; 0 = none)."""
    n = positions.shape[0]
    out = np.empty(n, dtype=np.float64)
    hit = np.zeros(n, dtype=np.int64)
    everything = np.empty(0, dtype=np.bool_)
    for i in range(n):
        p = positions[i]
        lp, h = word_prob_bo(tokens[p], tokens, p - 1, -1, min(order - 1, p - starts[p]), vocab_size, node_keys,
                             node_vals, node_shift, everything, node_bow, prob_keys, prob_vals, prob_shift,
                             everything, prob_lp)
        out[i] = np.float64(lp)
        hit[i] = h
    return out, hit
