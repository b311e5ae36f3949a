"""numba kernel of one epoch of the averaged structured perceptron (Collins 2002)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import _inference_kernels as K
from .. import _order2_kernels as K2
from ._sequence_kernels import longest_sequence


@njit(cache=True)
def _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, s, t, L, y, yprev, v):
    valued = uval.shape[0] > 0
    for j in range(ubase.shape[1]):
        b = ubase[s + t, j]
        if b >= 0:
            k = K.state_index(ustates, b, y)
            if k < 0:  # seen states: the observation has no feature of label y
                continue
            x = v * uval[s + t, j] if valued else v
            w[k] += x
            wa[k] += c * x
    if t > 0:
        k = yprev * L + y
        for j in range(bbase.shape[1]):
            b = bbase[s + t, j]
            if b >= 0:
                w[b + k] += v
                wa[b + k] += c * v


@njit(cache=True)
def perceptron_epoch(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, c0):
    """One pass of the structured perceptron (Collins 2002) over ``order``.

    For sequence i (the c-th example seen, c = c0 + 1, c0 + 2, ...): Viterbi at w;
    if it differs from the gold labels, w += phi(x, y_gold) - phi(x, y_pred) and
    wa += c (phi_gold - phi_pred).  After N examples the averaged weights
    (1/N) sum_{c=1..N} w_c are ((N + 1) w - wa) / N.  Returns the number of
    sequences with an error.
    """
    maxT = longest_sequence(seq_offsets)
    U = np.empty((maxT, L))
    delta = np.empty((maxT, L))
    back = np.zeros((maxT, L), dtype=np.int64)
    W = np.empty(K.pair_size(L, bbase.shape[1]))
    pred = np.empty(maxT, dtype=np.int64)
    free = np.empty(0, dtype=np.int64)  # nothing forced
    mistakes = 0
    c = float(c0)
    for k in range(order.shape[0]):
        i = order[k]
        c += 1.0
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        K.viterbi_sequence(w, ubase, uval, ustates, bbase, free, s, e, L, U, delta, back, W, pred, 0)
        wrong = False
        for t in range(e - s):
            if pred[t] != labels[s + t]:
                wrong = True
        if not wrong:
            continue
        mistakes += 1
        for t in range(e - s):
            yg = labels[s + t]
            yp = pred[t]
            gp = labels[s + t - 1] if t > 0 else 0
            pprev = pred[t - 1] if t > 0 else 0
            if yg != yp or (t > 0 and gp != pprev):
                _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, s, t, L, yg, gp, 1.0)
                _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, s, t, L, yp, pprev, -1.0)
    return mistakes


@njit(cache=True)
def _perceptron_add2(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, y, yprev, yprev2, v):
    """The features of labels (yprev2, yprev, y) at position t (pair states), times v, into w
    and (weighted by c) into wa: unigram, then bigram (t >= 1), then trigram (t >= 2)."""
    _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, s, t, L, y, yprev, v)
    if t > 1:
        r = (yprev2 * L + yprev) * L + y
        for j in range(tbase.shape[1]):
            b = tbase[s + t, j]
            if b >= 0:
                w[b + r] += v
                wa[b + r] += c * v


@njit(cache=True)
def perceptron_epoch2(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pred_ptr, pred_j,
                      pred_r, c0):
    """:func:`perceptron_epoch` on the pair states of a second-order model (or one with
    forbidden pairs): Viterbi over the allowed pairs, and on a mistake the updates of every
    position whose label, previous label or the one before differs."""
    maxT = longest_sequence(seq_offsets)
    P = max(pairs.shape[0], 1)
    U = np.empty((maxT, L))
    delta = np.empty((maxT, P))
    back = np.zeros((maxT, P), dtype=np.int64)
    W = np.empty(L * L if bbase.shape[1] > 0 else 1)
    X = np.empty(pred_r.shape[0] if tbase.shape[1] > 0 else 1)
    pred = np.empty(maxT, dtype=np.int64)
    free = np.empty(0, dtype=np.int64)
    mistakes = 0
    c = float(c0)
    for k in range(order.shape[0]):
        i = order[k]
        c += 1.0
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        K2.viterbi_sequence2(w, ubase, uval, ustates, bbase, tbase, free, s, e, L, pairs, pred_ptr, pred_j, pred_r, U,
                             delta, back, W, X, pred, 0)
        wrong = False
        for t in range(e - s):
            if pred[t] != labels[s + t]:
                wrong = True
        if not wrong:
            continue
        mistakes += 1
        for t in range(e - s):
            g0, p0 = labels[s + t], pred[t]
            g1 = labels[s + t - 1] if t > 0 else 0
            p1 = pred[t - 1] if t > 0 else 0
            g2 = labels[s + t - 2] if t > 1 else 0
            p2 = pred[t - 2] if t > 1 else 0
            if g0 != p0 or g1 != p1 or g2 != p2:
                _perceptron_add2(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, g0, g1, g2, 1.0)
                _perceptron_add2(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, p0, p1, p2, -1.0)
    return mistakes
