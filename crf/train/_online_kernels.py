"""numba kernels of one epoch of CRFsuite's online learners: passive-aggressive (Crammer
et al. 2006) and AROW (Mejer & Crammer 2010), as CRFsuite's train_passive_aggressive.c
and train_arow.c run them (see :mod:`crf.train.online` for the rules).

For every sequence of ``order``: Viterbi with the current weights; when the prediction
differs from the gold labels at d > 0 positions, the difference vector
Delta = phi(x, y_gold) - phi(x, y_pred) is gathered sparsely -- a dense float64 scratch
``dlt`` (n_params,, all zero between sequences) plus the list ``act`` of the indices
touched and the flags ``mark`` (uint8 (n_params,), all zero between sequences) that keep
that list free of duplicates -- the weights are moved along Delta, and the scratch is
cleared again.  Only the positions whose features differ are gathered (label, previous
label, or the one before that for trigram features): the others cancel exactly.
Features that cancel inside those positions stay in the list with Delta_k = 0, as in
CRFsuite (passive-aggressive moves nothing there; AROW skips them, see arow_epoch).

First order runs :func:`crf._inference_kernels.viterbi_sequence`; pair states (second
order, forbidden pairs) :func:`crf._order2_kernels.viterbi_sequence2`, chosen by
``pairwise`` (:func:`crf.train._sequence_kernels.decode`; o2, the pair arguments of
:func:`crf.train._sequence_kernels.pair_args`, are placeholders otherwise).
"""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit

from .. import _inference_kernels as K
from ._sequence_kernels import decode, decode_workspace, differs, errors, longest_sequence


@njit(cache=True, inline="always")
def _touch(dlt, mark, act, na, k, x):
    """dlt[k] += x, appending k to act when met for the first time; the new length of act."""
    if mark[k] == 0:
        mark[k] = 1
        act[na] = k
        na += 1
    dlt[k] += x
    return na


@njit(cache=True)
def _gather(dlt, mark, act, na, ubase, uval, ustates, bbase, tbase, s, t, L, y, y1, y2, v):
    """dlt += v * (the features of labels (y2, y1, y) at position t of the sequence
    starting at token s): unigram (times its value), bigram (t >= 1), trigram (t >= 2);
    every index met for the first time is appended to act.  Returns the new length of act."""
    valued = uval.shape[0] > 0
    i = s + t
    for j in range(ubase.shape[1]):
        b = ubase[i, j]
        if b >= 0:
            k = K.state_index(ustates, b, y)
            if k >= 0:  # seen states: no feature of label y
                na = _touch(dlt, mark, act, na, k, v * uval[i, j] if valued else v)
    if t > 0:
        r = y1 * L + y
        for j in range(bbase.shape[1]):
            b = bbase[i, j]
            if b >= 0:
                na = _touch(dlt, mark, act, na, b + r, v)
    if t > 1:
        r = (y2 * L + y1) * L + y
        for j in range(tbase.shape[1]):
            b = tbase[i, j]
            if b >= 0:
                na = _touch(dlt, mark, act, na, b + r, v)
    return na


@njit(cache=True)
def _difference(dlt, mark, act, ubase, uval, ustates, bbase, tbase, labels, pred, s, e, L):
    """Delta = phi(gold) - phi(pred) of the sequence [s, e) into dlt / act (the gold
    features first, then the predicted ones, as CRFsuite collects them). Returns the
    number of indices in act."""
    trigram = tbase.shape[1] > 0
    na = 0
    for t in range(e - s):
        if differs(labels, pred, s, t, trigram):
            y1 = labels[s + t - 1] if t > 0 else 0
            y2 = labels[s + t - 2] if t > 1 else 0
            na = _gather(dlt, mark, act, na, ubase, uval, ustates, bbase, tbase, s, t, L, labels[s + t], y1, y2, 1.0)
    for t in range(e - s):
        if differs(labels, pred, s, t, trigram):
            y1 = pred[t - 1] if t > 0 else 0
            y2 = pred[t - 2] if t > 1 else 0
            na = _gather(dlt, mark, act, na, ubase, uval, ustates, bbase, tbase, s, t, L, pred[t], y1, y2, -1.0)
    return na


@njit(cache=True)
def _clear(dlt, mark, act, na):
    for j in range(na):
        k = act[j]
        dlt[k] = 0.0
        mark[k] = 0


@njit(cache=True)
def _mistake(w, dlt, mark, act, ubase, uval, ustates, bbase, labels, s, e, L, pairwise, o2, dws):
    """Decode the sequence [s, e) at w; returns (d, na, err): d the number of wrong labels,
    and when d > 0 Delta in dlt / act[:na] and err = score(pred) - score(gold) = -w . Delta
    (CRFsuite's sv - sc, at the weights before the update)."""
    decode(w, ubase, uval, ustates, bbase, s, e, L, pairwise, o2, dws)
    pred = dws[6]
    d = errors(pred, labels, s, e)
    if d == 0:
        return 0, 0, 0.0
    na = _difference(dlt, mark, act, ubase, uval, ustates, bbase, o2[0], labels, pred, s, e, L)
    err = 0.0
    for j in range(na):
        k = act[j]
        err -= w[k] * dlt[k]
    return d, na, err


@njit(cache=True)
def _workspace(seq_offsets, ubase, bbase, L, pairwise, o2):
    """(dws, act): the Viterbi's work arrays (``decode_workspace``) and the list of Delta's indices."""
    maxT = longest_sequence(seq_offsets)
    act = np.empty(max(2 * maxT * (ubase.shape[1] + bbase.shape[1] + o2[0].shape[1]), 1), dtype=np.int64)
    return decode_workspace(seq_offsets, L, bbase, pairwise, o2), act


@njit(cache=True)
def pa_epoch(w, ws, dlt, mark, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, pairwise, o2, pa_type, c,
             error_sensitive, u0):
    """One epoch of CRFsuite's passive-aggressive over ``order``; returns (sum of the
    costs, number of sequences with a wrong label).

    u0: CRFsuite's counter u before the epoch (1 at the start; +1 after every sequence,
    right or wrong).  For a sequence with d > 0 wrong labels:
    cost = err + sqrt(d) (``error_sensitive``) or err + 1, with err = score(pred) -
    score(gold); tau = cost / |Delta|^2 (type 0), min(c, cost / |Delta|^2) (type 1) or
    cost / (|Delta|^2 + 1 / (2c)) (type 2); w += tau Delta and ws += tau u Delta.
    A Delta of norm 0 (equal features, e.g. values 0) moves nothing.
    """
    dws, act = _workspace(seq_offsets, ubase, bbase, L, pairwise, o2)
    u = float(u0)
    sum_loss = 0.0
    mistakes = 0
    for n in range(order.shape[0]):
        i = order[n]
        d, na, err = _mistake(w, dlt, mark, act, ubase, uval, ustates, bbase, labels, seq_offsets[i],
                              seq_offsets[i + 1], L, pairwise, o2, dws)
        if d > 0:
            cost = err + (np.sqrt(float(d)) if error_sensitive else 1.0)
            norm2 = 0.0
            for j in range(na):
                k = act[j]
                norm2 += dlt[k] * dlt[k]
            if pa_type == 2:
                tau = cost / (norm2 + 0.5 / c)
            elif norm2 > 0.0:
                tau = cost / norm2
                if pa_type == 1 and c < tau:
                    tau = c
            else:
                tau = 0.0
            tauu = tau * u
            for j in range(na):
                k = act[j]
                w[k] += tau * dlt[k]
                ws[k] += tauu * dlt[k]
            _clear(dlt, mark, act, na)
            sum_loss += cost
            mistakes += 1
        u += 1.0
    return sum_loss, mistakes


@njit(cache=True)
def arow_epoch(mean, cov, dlt, mark, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, pairwise, o2, gamma):
    """One epoch of CRFsuite's AROW over ``order``; returns (sum of the costs, number of
    sequences with a wrong label).

    For a sequence with d > 0 wrong labels: cost = err + d (err = score(pred) -
    score(gold)); alpha = cost / (gamma + sum_k Delta_k^2 cov_k); for every k of Delta:
    mean_k += alpha cov_k Delta_k, then cov_k = 1 / (1 / cov_k + Delta_k^2 / gamma)
    (k with Delta_k = 0 are left alone: that update changes nothing).
    """
    dws, act = _workspace(seq_offsets, ubase, bbase, L, pairwise, o2)
    sum_loss = 0.0
    mistakes = 0
    for n in range(order.shape[0]):
        i = order[n]
        d, na, err = _mistake(mean, dlt, mark, act, ubase, uval, ustates, bbase, labels, seq_offsets[i],
                              seq_offsets[i + 1], L, pairwise, o2, dws)
        if d > 0:
            cost = err + float(d)
            frac = gamma
            for j in range(na):
                k = act[j]
                frac += dlt[k] * dlt[k] * cov[k]
            alpha = cost / frac
            for j in range(na):
                k = act[j]
                dk = dlt[k]
                if dk != 0.0:
                    mean[k] += alpha * cov[k] * dk
                    cov[k] = 1.0 / ((1.0 / cov[k]) + dk * dk / gamma)
            _clear(dlt, mark, act, na)
            sum_loss += cost
            mistakes += 1
    return sum_loss, mistakes
