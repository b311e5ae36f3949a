"""Numba kernels of Kneser-Ney estimation: the probabilities of one order from its
counts and the lower order (``estimate_order``), and the back-off weights.

Log-probabilities and back-off weights are ``float32`` on purpose: SRILM stores them
as C ``float`` (``LogP``) and does its back-off sums in single precision; reproducing
that makes our ARPA files and perplexities agree with SRILM's to the printed digit.
"""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit

LN10 = math.log(10.0)
PROB_EPSILON = 3e-06  # SRILM's Prob_Epsilon


@njit(cache=True, nogil=True)
def count_of_counts(kn_count, word, nonevent):
    """``kn_steps.count_of_counts`` in one pass, without temporary arrays."""
    out = np.zeros(5, dtype=np.int64)
    for i in range(kn_count.shape[0]):
        c = kn_count[i]
        if c >= 1 and c <= 4 and not nonevent[word[i]]:
            out[c] += 1
    return out


@njit(cache=True, nogil=True)
def context_bounds(prefix, n_ctx):
    """int64[n_ctx + 1]: the n-grams of context c are ``bounds[c]:bounds[c + 1]``
    (``prefix``: their contexts' ids, in order)."""
    bounds = np.zeros(n_ctx + 1, dtype=np.int64)
    for i in range(prefix.shape[0]):
        bounds[prefix[i] + 1] += 1
    for c in range(n_ctx):
        bounds[c + 1] += bounds[c]
    return bounds


@njit(cache=True, nogil=True)
def estimate_order(ctx_start, ctx_end, ctx_skip, count, word, lower_lp, nonevent,
                   min_count, d1, d2, d3, vocab_size, interpolate, unigrams):
    """Interpolated (modified) Kneser-Ney probabilities of one order, as SRILM's
    ``Ngram::estimate`` with ``ModKneserNey``/``KneserNey`` discounts.

    ctx_start, ctx_end : int64[n_ctx]  children of context c are n-grams ctx_start[c]:ctx_end[c]
    ctx_skip  : bool[n_ctx]    contexts that get no probabilities (contain a closed-vocabulary <unk>)
    count     : int64[m]       (KN-modified) counts of the n-grams of this order
    word      : int64[m]       predicted word of each n-gram
    lower_lp  : float32[m]     log10 lower-order (back-off) probability of the same word
    nonevent  : bool[V]        words never predicted (<s>, and <unk> when not a word)
    d1, d2, d3: discounts for counts 1, 2 and 3+ (d1 == d2 == d3 for original KN)

    Returns lp float32[m] (log10 probability), explicit bool[m] (kept in the model) and
    the number of contexts where SRILM's "no back-off mass left" retry was applied.
    """
    m = count.shape[0]
    lp = np.zeros(m, dtype=np.float32)
    explicit = np.zeros(m, dtype=np.bool_)
    n_retry = 0
    for c in range(ctx_start.shape[0]):
        if ctx_skip[c]:
            continue
        a = ctx_start[c]
        b = ctx_end[c]
        total = 0.0
        n_obs = 0
        n_min2 = 0
        n_min3 = 0
        for g in range(a, b):
            k = count[g]
            if k <= 0 or nonevent[word[g]]:
                continue
            total += k
            n_obs += 1
            if k >= 2:
                n_min2 += 1
            if k >= 3:
                n_min3 += 1
        if total == 0:
            continue
        interp = interpolate
        while True:
            if interp:
                weight = (d1 * (n_obs - n_min2) + d2 * (n_min2 - n_min3) + d3 * n_min3) / total
            else:
                weight = 0.0
            total_prob = 0.0
            for g in range(a, b):
                k = count[g]
                w = word[g]
                if k <= 0:
                    continue
                if nonevent[w]:
                    if unigrams and w == 0:  # <s>: probability zero, but listed
                        lp[g] = -np.inf
                        explicit[g] = True
                    continue
                if k < min_count:
                    explicit[g] = False
                    continue
                if k == 1:
                    coef = (k - d1) / k
                elif k == 2:
                    coef = (k - d2) / k
                else:
                    coef = (k - d3) / k
                prob = (coef * k) / total
                if interp:
                    prob += weight * math.exp(np.float64(lower_lp[g]) * LN10)
                lp[g] = np.float32(math.log10(prob)) if prob > 0 else np.float32(-np.inf)
                explicit[g] = True
                total_prob += prob
            if total_prob > 1.0 - PROB_EPSILON and n_obs < vocab_size:
                n_retry += 1
                if interp:
                    interp = False
                else:
                    total += 1
                continue
            break
    return lp, explicit, n_retry


@njit(cache=True, nogil=True)
def backoff_weights(ctx_start, ctx_end, explicit, lp, lower_lp):
    """Back-off weights of the contexts of one order (SRILM ``computeBOW``):
    bow(h) = (1 - sum p(w|h)) / (1 - sum p_lower(w|h')) over the explicit children.

    Modifies ``lp`` in place in the one case SRILM does (no lower-order mass left:
    the explicit probabilities are scaled to sum to 1). Returns bow float32[n_ctx]
    (0 for contexts without explicit children) and the number of bad contexts
    (negative numerator; bow set to -inf like SRILM's dummy value).
    """
    n_ctx = ctx_start.shape[0]
    bow = np.zeros(n_ctx, dtype=np.float32)
    n_bad = 0
    for c in range(n_ctx):
        num = 1.0
        den = 1.0
        any_child = False
        for g in range(ctx_start[c], ctx_end[c]):
            if explicit[g]:
                any_child = True
                num -= math.exp(np.float64(lp[g]) * LN10)
                den -= math.exp(np.float64(lower_lp[g]) * LN10)
        if not any_child:
            continue
        if num < 0.0 and num > -PROB_EPSILON:
            num = 0.0
        if den < 0.0 and den > -PROB_EPSILON:
            den = 0.0
        if den == 0.0 and num > PROB_EPSILON:
            scale = np.float32(-math.log10(1.0 - num))
            for g in range(ctx_start[c], ctx_end[c]):
                if explicit[g]:
                    lp[g] = lp[g] + scale
            bow[c] = np.float32(0.0)
        elif num < 0.0:
            bow[c] = np.float32(-np.inf)
            n_bad += 1
        elif den <= 0.0:
            if num > PROB_EPSILON:
                bow[c] = np.float32(-np.inf)
                n_bad += 1
            else:
                bow[c] = np.float32(0.0)
        elif num == 0.0:
            bow[c] = np.float32(-np.inf)
        else:
            bow[c] = np.float32(math.log10(num) - math.log10(den))
    return bow, n_bad


@njit(cache=True, nogil=True)
def kneser_ney_order_counts(raw, suffix_next, first, nonevent):
    """``kneser_ney_counts`` of one order below the highest: the number of distinct
    n-grams one order up that end in each n-gram (``suffix_next``: their suffixes), but
    the raw count of an n-gram whose first word is a non-event. int32[len(raw)]."""
    out = np.zeros(raw.shape[0], dtype=np.int32)
    for s in suffix_next:
        out[s] += 1
    for i in range(raw.shape[0]):
        if nonevent[first[i]]:
            out[i] = raw[i]
    return out


@njit(cache=True, nogil=True)
def lower_order_lp(found, acc, suffix):
    """float32: the back-off log probability of each n-gram's word after its context's
    suffix, ``found + acc`` of its suffix n-gram (float32 sums, as SRILM's). ``suffix``:
    each n-gram's suffix in ``found``, ``acc`` (one order down), or None when those are
    already aligned with the n-grams (the Dask path gathers them across partitions)."""
    n = found.shape[0] if suffix is None else suffix.shape[0]
    out = np.empty(n, dtype=np.float32)
    for i in range(n):
        s = i if suffix is None else suffix[i]
        out[i] = found[s] + acc[s]
    return out


@njit(cache=True, nogil=True)
def walk_order(found_prev, acc_prev, bow_prev, suffix, prefix, lp, explicit):
    """The back-off walk of an order (SRILM's summation order): (found, acc) float32 of
    every n-gram, from its suffix's (found, acc) one order down and its prefix's back-off
    weight (``bow_prev[prefix]``): an explicit n-gram finds its own probability, any
    other its suffix's, the back-off weights summed on the way in float32. ``suffix``:
    as ``lower_order_lp``'s (None: ``found_prev``, ``acc_prev`` aligned with the n-grams)."""
    n = prefix.shape[0]
    found = np.empty(n, dtype=np.float32)
    acc = np.empty(n, dtype=np.float32)
    for i in range(n):
        if explicit[i]:
            found[i] = lp[i]
            acc[i] = np.float32(0.0)
        else:
            s = i if suffix is None else suffix[i]
            found[i] = found_prev[s]
            acc[i] = np.float32(acc_prev[s] + bow_prev[prefix[i]])
    return found, acc


@njit(cache=True, nogil=True)
def mark_contexts(node_lower, prefix, explicit, suffix, node):
    """One order of ``estimate_kneser_ney``'s context nodes: mark in ``node_lower`` (the
    order below) the context of every explicit n-gram and, where ``node`` is given (not
    empty), the suffix of every node."""
    for i in range(prefix.shape[0]):
        if explicit[i]:
            node_lower[prefix[i]] = True
    if node.shape[0]:
        for i in range(suffix.shape[0]):
            if node[i]:
                node_lower[suffix[i]] = True

