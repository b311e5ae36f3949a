"""numba kernel of one epoch of the averaged structured perceptron (Collins 2002)."""

from __future__ import annotations

from suffixlm._jit import njit

from .. import _inference_kernels as K
from ._sequence_kernels import decode, decode_workspace, differs, errors, no_pair_args


@njit(cache=True)
def _add_row(w, wa, c, base, i, k, v):
    """w[b + k] += v and wa[b + k] += c v for every offset b >= 0 of base[i] (a bigram or
    trigram row)."""
    for j in range(base.shape[1]):
        b = base[i, j]
        if b >= 0:
            w[b + k] += v
            wa[b + k] += c * v


@njit(cache=True)
def _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, y, yprev, yprev2, v):
    """The features of labels (yprev2, yprev, y) at position t, times v, into w and (weighted
    by c) into wa: unigram, then bigram (t >= 1), then trigram (t >= 2; none without
    trigram patterns)."""
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
        _add_row(w, wa, c, bbase, s + t, yprev * L + y, v)
    if t > 1:
        _add_row(w, wa, c, tbase, s + t, (yprev2 * L + yprev) * L + y, v)


@njit(cache=True)
def perceptron_pass(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, pair_states, o2, c0):
    """One pass of the structured perceptron (Collins 2002) over ``order``, first order or
    on the label-pair states of o2 = (tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r)
    (``pair_states``: second order, or forbidden pairs).

    For sequence i (the c-th example seen, c = c0 + 1, c0 + 2, ...): Viterbi at w;
    if it differs from the gold labels, w += phi(x, y_gold) - phi(x, y_pred) and
    wa += c (phi_gold - phi_pred), at every position whose label or previous label (on
    pair states: or the one before) differs.  After N examples the averaged weights
    (1/N) sum_{c=1..N} w_c are ((N + 1) w - wa) / N.  Returns the number of
    sequences with an error.
    """
    tbase = o2[0]
    dws = decode_workspace(seq_offsets, L, bbase, pair_states, o2)
    pred = dws[6]
    mistakes = 0
    c = float(c0)
    for k in range(order.shape[0]):
        i = order[k]
        c += 1.0
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        decode(w, ubase, uval, ustates, bbase, s, e, L, pair_states, o2, dws)
        if errors(pred, labels, s, e) == 0:
            continue
        mistakes += 1
        for t in range(e - s):
            if differs(labels, pred, s, t, pair_states):
                g1, p1 = (labels[s + t - 1], pred[t - 1]) if t > 0 else (0, 0)
                g2, p2 = (labels[s + t - 2], pred[t - 2]) if t > 1 else (0, 0)
                _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, labels[s + t], g1, g2, 1.0)
                _perceptron_add(w, wa, c, ubase, uval, ustates, bbase, tbase, s, t, L, pred[t], p1, p2, -1.0)
    return mistakes


@njit(cache=True)
def perceptron_epoch(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, c0):
    """:func:`perceptron_pass` of a first-order model."""
    return perceptron_pass(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, False,
                           no_pair_args(ubase.shape[0]), c0)


@njit(cache=True)
def perceptron_epoch2(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pred_ptr, pred_j,
                      pred_r, c0):
    """:func:`perceptron_pass` on the pair states of a second-order model (or one with
    forbidden pairs)."""
    return perceptron_pass(w, wa, order, seq_offsets, ubase, uval, ustates, bbase, labels, L, True,
                           (tbase, pairs, pairs, pred_ptr, pred_j, pred_r), c0)  # (pair_pos is not read)
