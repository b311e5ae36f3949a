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


@njit(cache=True)
def backoff_step(context, word, order, vocab_size, node_keys, node_vals, node_shift, node_bow,
                 prob_keys, prob_vals, prob_shift, prob_lp, part_keys, part_vals, part_shift, extends, missing_lp):
    """One query of KenLM's ``BaseFullScore``. Returns the log10 probability of ``word``
    after ``context`` (the back-off weights added one by one in KenLM's order, shortest
    context first, each onto the probability, in float32), the n-gram length as KenLM
    counts it, and how many of the last tokens of ``context + word`` KenLM's state keeps.

    context : int64[n] model word ids, oldest first, n <= order - 1.
    node and prob maps: ``backoff_query``'s. part map: every contiguous part of an
    explicit n-gram (KenLM stores them all), key ``part one word shorter on the left *
    V + word``; ``extends[part]``: some explicit n-gram continues it, or it has a
    non-zero back-off weight. The n-gram length is the longest part of the history
    ending with ``word``; the state the longest such part that extends (at most
    ``order - 1`` words).
    missing_lp: the unigram log10 probability of a word the model does not list (KenLM
    gives ``<unk>`` -100 when the file has none, and keeps it in the state).
    """
    n = context.shape[0]
    logp = np.float32(-np.inf)
    k = hash_find(prob_keys, prob_vals, prob_shift, word)
    missing = not (k >= 0 and prob_lp[k] > -np.inf)
    if not missing:
        logp = prob_lp[k]
    else:
        logp = np.float32(missing_lp)
    path = np.zeros(n + 1, dtype=np.int64)
    hit = 1
    node = 0
    reached = 0
    for d in range(1, n + 1):
        nxt = hash_find(node_keys, node_vals, node_shift, node * vocab_size + context[n - d])
        if nxt < 0:
            break
        node = nxt
        path[d] = node
        reached = d
        k = hash_find(prob_keys, prob_vals, prob_shift, node * vocab_size + word)
        if k >= 0:
            logp = prob_lp[k]
            hit = d + 1
    for d in range(hit, reached + 1):
        logp = logp + node_bow[path[d]]
    if missing:
        return np.float64(logp), 1, 1 if order > 1 else 0
    length = 0
    keep = 0
    part = hash_find(part_keys, part_vals, part_shift, word)
    while part >= 0:
        length += 1
        if extends[part] and length <= order - 1:
            keep = length
        if length > n:
            break
        part = hash_find(part_keys, part_vals, part_shift, part * vocab_size + context[n - length])
    return np.float64(logp), length, keep
