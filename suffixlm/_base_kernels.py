"""numba kernel of the Kneser-Ney base measure of the log-linear LM (``suffixlm.base_measure``)."""

from __future__ import annotations

import numpy as np

from ._jit import njit
from .backoff._hash_kernels import hash_find

LN10 = np.log(10.0)


@njit(cache=True)
def base_from_backoff(tokens, context_position, depth, collapsed, succ_offsets, succ_words, vocab_size,
                      node_keys, node_vals, node_shift, node_bow, prob_keys, prob_vals, prob_shift, prob_lp,
                      lnB, ln_gamma):
    """For every node j of a suffix tree (or trie) and each of its params q = (j, v):
    lnB[q] = ln P(v | context of j) under a back-off model (the ARPA rule, as
    ``_backoff_kernels.backoff_query``), and ln_gamma[j] = the sum of the ln back-off
    weights of the trie contexts on j's edge (depths depth[j] - collapsed[j] + 1 ..
    depth[j]; 0 at the root). The context symbol at depth d of node j is
    ``tokens[context_position[j] - d]``. Returns the number of contexts the model lacks
    (their back-off weight counts as 1, i.e. ln 0)."""
    n_nodes = depth.shape[0]
    max_d = 0
    for j in range(n_nodes):
        max_d = max(max_d, depth[j])
    kn_node = np.empty(max_d + 1, dtype=np.int64)
    missing = 0
    for j in range(n_nodes):
        d = depth[j]
        p = context_position[j]
        kn_node[0] = 0
        found = 0
        for k in range(1, d + 1):
            nxt = hash_find(node_keys, node_vals, node_shift, kn_node[k - 1] * vocab_size + tokens[p - k])
            if nxt < 0:
                break
            kn_node[k] = nxt
            found = k
        if found < d:
            missing += 1
        g = 0.0
        for k in range(d - collapsed[j] + 1, found + 1):
            if k >= 1:
                g += node_bow[kn_node[k]]
        ln_gamma[j] = g * LN10
        for q in range(succ_offsets[j], succ_offsets[j + 1]):
            v = succ_words[q]
            logp = -np.inf
            f = hash_find(prob_keys, prob_vals, prob_shift, v)
            if f >= 0:
                logp = np.float64(prob_lp[f])
            bow = 0.0
            for k in range(1, found + 1):
                bow += node_bow[kn_node[k]]
                f = hash_find(prob_keys, prob_vals, prob_shift, kn_node[k] * vocab_size + v)
                if f >= 0:
                    logp = np.float64(prob_lp[f])
                    bow = 0.0
            lnB[q] = (logp + bow) * LN10
    return missing
