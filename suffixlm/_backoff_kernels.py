"""Numba kernel of the back-off query of an ARPA model (SRILM's ``wordProbBO``)."""

from __future__ import annotations

import numpy as np
from numba import njit

from ._hash_kernels import hash_find


@njit(cache=True)
def backoff_query(tokens, starts, positions, order, vocab_size, node_keys, node_vals,
                         node_shift, node_bow, prob_keys, prob_vals, prob_shift, prob_lp):
    """log10 p(w | context) by the ARPA back-off rule, walked like SRILM's
    ``Ngram::wordProbBO`` (reversed-context trie, float32 sums).

    tokens    : int64[n_tokens]  model word ids
    starts    : int64[n_tokens]  index of the sentence start (<s>) of each token
    positions : int64[n]         positions to score
    node map  : key parent_node * V + word -> node id (root 0; parent = the context one
                word shorter on the left); node_bow float32[n_nodes + 1]
    prob map  : key context_node * V + word -> index into prob_lp float32
    Returns (log10 probability float64[n], length of the n-gram used int64[n]; 0 = none).
    """
    n = positions.shape[0]
    out = np.empty(n, dtype=np.float64)
    hit = np.zeros(n, dtype=np.int64)
    for i in range(n):
        p = positions[i]
        w = tokens[p]
        logp = np.float32(-np.inf)
        k = hash_find(prob_keys, prob_vals, prob_shift, w)
        if k >= 0:
            logp = prob_lp[k]
            hit[i] = 1
        bow = np.float32(0.0)
        node = 0
        depth = min(order - 1, p - starts[p])
        for d in range(1, depth + 1):
            nxt = hash_find(node_keys, node_vals, node_shift, node * vocab_size + tokens[p - d])
            if nxt < 0:
                break
            node = nxt
            bow = bow + node_bow[node]
            k = hash_find(prob_keys, prob_vals, prob_shift, node * vocab_size + w)
            if k >= 0:
                logp = prob_lp[k]
                bow = np.float32(0.0)
                hit[i] = d + 1
        out[i] = np.float64(logp + bow)
    return out, hit
