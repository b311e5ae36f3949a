"""Numba kernels of relative-entropy pruning (:mod:`suffixlm.backoff.prune`): the pruning and
back-off weight passes over SRILM's context trie, the model's back-off index
(:mod:`suffixlm.backoff.index`: nodes, their parents and words, the probability map),
with flags for the nodes and n-grams still alive. Numbers follow SRILM's types: ``LogP``
is float32 (log10), ``Prob`` float64.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ._backoff_kernels import word_prob_bo

LN10 = 2.30258509299404568402  # M_LN10
PROB_EPSILON = 3e-06  # SRILM's Prob_Epsilon


@njit(cache=True)
def _to_prob(lp):
    """SRILM's ``LogPtoProb``: 10^lp in double, 0 for log 0."""
    if lp == -np.inf:
        return 0.0
    return np.exp(np.float64(lp) * LN10)


@njit(cache=True)
def _reversed_context(node, d, parent, word, ctx):
    """Fill ``ctx[:d]`` with the context of ``node`` (depth d), most recent word first."""
    nd = node
    for k in range(d - 1, -1, -1):
        ctx[k] = word[nd]
        nd = parent[nd]


@njit(cache=True)
def _context_prob(ctx, clen, order, bos, eos, unk, unk_nonevent, V, nkeys, nvals, nshift, node_alive,
                  node_bow, pkeys, pvals, pshift, prob_alive, lp):
    """SRILM's ``LM::contextProb``: log10 P(h) of the context ``ctx[:clen]`` (most recent
    word first) as the product of its words' probabilities, oldest first, the oldest
    ``<s>`` scored as ``</s>``; a non-event of probability 0 is skipped. float32 sum."""
    joint = np.float32(0.0)
    for k in range(clen, 0, -1):
        w = ctx[k - 1]
        if k == clen and w == bos:
            w = eos
        cl = clen - k
        if cl > order - 1:
            cl = order - 1
        wp, _ = word_prob_bo(w, ctx, k, 1, cl, V, nkeys, nvals, nshift, node_alive, node_bow,
                             pkeys, pvals, pshift, prob_alive, lp)
        nonevent = w == bos or (unk_nonevent and w == unk)
        if wp != -np.inf or not nonevent:
            joint = np.float32(joint + wp)
    return joint


@njit(cache=True)
def _bow_fixups(num, den, lp, probs, a, b, prob_alive):
    """The end of SRILM's ``Ngram::computeBOW`` (no minimum back-off mass): rounding
    fixes and sanity checks. A context whose back-off distribution has no mass left
    gets its probabilities scaled to sum to 1 (in ``lp``, as SRILM does). Returns
    (valid, numerator, denominator)."""
    if abs(num) < PROB_EPSILON:
        num = 0.0
    if abs(den) < PROB_EPSILON:
        den = 0.0
    if den < PROB_EPSILON and num > PROB_EPSILON:
        scale = np.float32(-np.log10(1.0 - num))
        for j in range(a, b):
            g = probs[j]
            if prob_alive[g]:
                lp[g] = np.float32(lp[g] + scale)
        return True, 0.0, 0.0
    if num < 0.0:
        return False, num, den
    if den <= 0.0:
        if num > PROB_EPSILON:
            return False, num, den
        return True, 0.0, 0.0
    return True, num, den


@njit(cache=True)
def _context_masses(nd, d, V, nkeys, nvals, nshift, parent, word, node_alive, node_bow, probs_start, probs, pkeys,
                    pvals, pshift, prob_alive, lp, last_word, ctx, bo):
    """SRILM's ``computeBOW`` for context node ``nd`` of depth ``d``: its words go to
    ``ctx`` (most recent first); numerator 1 - sum p(w | h) and denominator 1 - sum
    p_BO(w | h') over its live n-grams, each p_BO (log10) left in ``bo`` at the n-gram's
    slot; then ``_bow_fixups``. Returns (valid, numerator, denominator)."""
    _reversed_context(nd, d, parent, word, ctx)
    num = 1.0
    den = 1.0
    for j in range(probs_start[nd], probs_start[nd + 1]):
        g = probs[j]
        if not prob_alive[g]:
            continue
        num -= _to_prob(lp[g])
        bo[j], _ = word_prob_bo(last_word[g], ctx, 0, 1, d - 1, V, nkeys, nvals, nshift, node_alive, node_bow,
                                pkeys, pvals, pshift, prob_alive, lp)
        den -= _to_prob(bo[j])
    return _bow_fixups(num, den, lp, probs, probs_start[nd], probs_start[nd + 1], prob_alive)


@njit(cache=True)
def prune_depth(d, nodes, order, threshold, V, nkeys, nvals, nshift, parent, word, node_alive, node_bow,
                n_children, probs_start, probs, pkeys, pvals, pshift, prob_alive, lp, last_word, ngram_node,
                bos, eos, unk, unk_nonevent, score):
    """One pass of SRILM's ``Ngram::pruneProbs``: the contexts ``nodes`` of depth ``d``
    and their (d+1)-grams. Removes the n-grams whose relative perplexity change is
    below ``threshold`` unless the n-gram is itself a live context; then removes the
    contexts left without n-grams and without longer contexts. Writes the criterion of
    every n-gram it scores into ``score``. Returns the number of n-grams removed."""
    ctx = np.empty(order + 1, dtype=np.int64)
    bo = np.empty(probs.shape[0], dtype=np.float32)
    n_pruned = 0
    for t in range(nodes.shape[0]):
        nd = nodes[t]
        ok, num, den = _context_masses(nd, d, V, nkeys, nvals, nshift, parent, word, node_alive, node_bow,
                                       probs_start, probs, pkeys, pvals, pshift, prob_alive, lp, last_word, ctx, bo)
        if not ok:
            continue
        cprob = _context_prob(ctx, d, order, bos, eos, unk, unk_nonevent, V, nkeys, nvals, nshift, node_alive,
                              node_bow, pkeys, pvals, pshift, prob_alive, lp)
        p_h = _to_prob(cprob)
        old_bow = node_bow[nd]
        all_pruned = True
        for j in range(probs_start[nd], probs_start[nd + 1]):
            g = probs[j]
            p = lp[g]
            new_bow = np.float32(np.log10(num + _to_prob(p)) - np.log10(den + _to_prob(bo[j])))
            delta_prob = np.float32(np.float32(bo[j] + new_bow) - p)
            delta_h = -p_h * (_to_prob(p) * np.float64(delta_prob)
                              + num * np.float64(np.float32(new_bow - old_bow)))
            change = _to_prob(delta_h) - 1.0
            score[g] = change
            pruned = threshold > 0 and change < threshold
            if pruned:
                hw = ngram_node[g]
                if hw >= 0 and node_alive[hw]:
                    pruned = False
            if pruned:
                prob_alive[g] = False
                n_pruned += 1
            else:
                all_pruned = False
        if all_pruned and n_children[nd] == 0:
            node_alive[nd] = False
            n_children[parent[nd]] -= 1
    return n_pruned


@njit(cache=True)
def recompute_bows(d, nodes, order, V, nkeys, nvals, nshift, parent, word, node_alive, node_bow, probs_start,
                   probs, pkeys, pvals, pshift, prob_alive, lp, last_word):
    """SRILM's ``Ngram::computeBOWs(d)`` for d >= 1: the back-off weight of every live
    context of depth ``d`` from its live n-grams and the lower orders as they are now.
    Returns the number of contexts whose weight SRILM rejects (set to log 0)."""
    ctx = np.empty(order + 1, dtype=np.int64)
    bo = np.empty(probs.shape[0], dtype=np.float32)
    n_bad = 0
    for t in range(nodes.shape[0]):
        nd = nodes[t]
        if not node_alive[nd]:
            continue
        ok, num, den = _context_masses(nd, d, V, nkeys, nvals, nshift, parent, word, node_alive, node_bow,
                                       probs_start, probs, pkeys, pvals, pshift, prob_alive, lp, last_word, ctx, bo)
        if not ok:
            node_bow[nd] = np.float32(-np.inf)
            n_bad += 1
        elif num < PROB_EPSILON and den < PROB_EPSILON:
            node_bow[nd] = np.float32(0.0)
        else:
            node_bow[nd] = np.float32(np.log10(num) - np.log10(den))
    return n_bad


@njit(cache=True)
def distribute_unigram_mass(lp, event):
    """SRILM's ``computeBOWs(0)``: the mass the unigrams leave (0 below Prob_Epsilon)
    goes to the zero-probability events, or, when there is none, to every event.
    ``event``: bool per unigram row. Returns the mass, NaN when the unigrams sum above
    1 (SRILM then changes nothing)."""
    num = 1.0
    for i in range(lp.shape[0]):
        num -= _to_prob(lp[i])
    if abs(num) < PROB_EPSILON:
        num = 0.0
    if num < 0.0:
        return np.nan
    n_words = 0
    n_zero = 0
    for i in range(lp.shape[0]):
        if event[i]:
            n_words += 1
            if lp[i] == -np.inf:
                n_zero += 1
    if n_zero > 0:
        add = num / n_zero
        for i in range(lp.shape[0]):
            if event[i] and lp[i] == -np.inf:
                lp[i] = np.float32(np.log10(add)) if add > 0 else np.float32(-np.inf)
    elif n_words > 0:
        add = num / n_words
        for i in range(lp.shape[0]):
            if event[i]:
                lp[i] = np.float32(np.log10(_to_prob(lp[i]) + add))
    return num
