"""numba kernels of CRFsuite's ``l2sgd`` (:mod:`crf.train.l2sgd`): one SGD epoch with
CRFsuite's weight-decay scale trick, and the loss of a sample of sequences.

The epoch keeps, as ``train_l2sgd.c`` does, *stored* weights w and one scalar ``decay``
(reset to 1 at the start of the epoch): the model's weights are decay * w. Per step
(sequence i, update count t)::

    eta    = 1 / (lam (t0 + t))
    decay *= 1 - eta lam                      (the l2 shrink of every weight, O(1))
    gain   = eta / decay
    loss_i, grad_i at the weights decay * w   (after the shrink)
    w     -= gain * grad_i                    (only the blocks of sequence i)
    t     += 1

and at the end of the epoch w *= decay (CRFsuite's ``vecscale``).  In terms of the model's
weights v = decay * w this is v <- (1 - eta lam) v, then v <- v - eta grad_i(v), the
Pegasos step of CRFsuite's header comment.  The per-sequence loss / gradient kernels of
:mod:`crf.train._sequence_kernels` read the weights directly, so the scaled weights of
the sequence's blocks are first written into a scratch v (only those blocks are read).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import _order2_kernels as K2
from .._inference_kernels import pair_size
from ._sequence_kernels import (add_gradient, block_size2, longest_sequence, sequence_loss, sequence_loss2,
                                sequence_loss_gradient2, workspace)


@njit(cache=True)
def _scaled_blocks(v, w, blocks, lo, hi, decay, bstart, tstart, L, ustates):
    """v = decay * w on the blocks lo..hi-1: the model's weights the sequence reads."""
    for r in range(lo, hi):
        b = blocks[r]
        for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
            v[j] = decay * w[j]


@njit(cache=True)
def _descend(w, g, blocks, lo, hi, gain, bstart, tstart, L, ustates):
    """w -= gain * g on the blocks lo..hi-1 (g left zero there)."""
    for r in range(lo, hi):
        b = blocks[r]
        for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
            w[j] -= gain * g[j]
            g[j] = 0.0


@njit(cache=True)
def _factors(t0, t, lam, decay, out):
    """CRFsuite's step factors: out = [eta, decay * (1 - eta lam), gain]; False when the
    new decay is 0 (CRFsuite's gain = eta / 0 is infinite and the weights non-finite)."""
    eta = 1.0 / (lam * (t0 + t))
    decay *= 1.0 - eta * lam
    out[0] = eta
    out[1] = decay
    if decay == 0.0:
        out[2] = np.inf
        return False
    out[2] = eta / decay
    return True


@njit(cache=True)
def _finish_epoch(w, decay, t, eta, state):
    """CRFsuite's end of epoch: w *= decay; state = [t, last eta]."""
    for j in range(w.shape[0]):
        w[j] *= decay
    state[0] = t
    state[1] = eta


@njit(cache=True)
def l2sgd_epoch(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, bstart,
                state):
    """One epoch of CRFsuite's l2sgd over the sequences in ``order`` (see the module doc).

    w float64 (n_params,): the weights, updated in place (the model's weights at the end);
    v float64 (n_params,): scratch for the scaled weights; g float64 (n_params,): zero
    scratch (left zero); t0, lam: CRFsuite's t0 and lambda (= rho2 / n);
    state float64 [t, eta]: in, the number of updates so far; out, the updates after the
    epoch and the last learning rate.  Returns the sum of the per-sequence losses met
    (each at the weights of its step, after that step's shrink) -- NaN when the decay
    reached 0 (then w is left as it is).
    """
    ws = workspace(longest_sequence(seq_offsets), L, bbase.shape[1])
    pp = np.empty(pair_size(L, bbase.shape[1]))
    tstart = w.shape[0]  # no trigram block
    f = np.empty(3)
    t = state[0]
    decay = 1.0
    eta = 0.0
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        ok = _factors(t0, t, lam, decay, f)
        eta = f[0]
        decay = f[1]
        if not ok:
            state[0] = t
            state[1] = eta
            return np.nan
        lo = blk_ptr[i]
        hi = blk_ptr[i + 1]
        _scaled_blocks(v, w, blocks, lo, hi, decay, bstart, tstart, L, ustates)
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        total += sequence_loss(v, ubase, uval, ustates, bbase, labels, s, e, L, ws)
        add_gradient(ubase, uval, ustates, bbase, labels, s, e, L, ws, pp, g)
        _descend(w, g, blocks, lo, hi, f[2], bstart, tstart, L, ustates)
        t += 1.0
    _finish_epoch(w, decay, t, eta, state)
    return total


@njit(cache=True)
def l2sgd_epoch2(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, blk_ptr, blocks, L,
                 bstart, tstart, pairs, pair_pos, pred_ptr, pred_j, pred_r, state):
    """:func:`l2sgd_epoch` on the label-pair states of a second-order model (or one with
    forbidden pairs): the same steps, each sequence's loss and gradient from
    ``sequence_loss_gradient2``; blocks from ``sequence_blocks2`` (trigram blocks at
    offsets >= tstart)."""
    maxT = longest_sequence(seq_offsets)
    n3 = pred_r.shape[0]
    ws2 = K2.workspace2(maxT, L, pairs, n3, bbase.shape[1], tbase.shape[1])
    Pt = np.empty((maxT, n3 if tbase.shape[1] > 0 else 1))
    row = np.empty(L)
    f = np.empty(3)
    t = state[0]
    decay = 1.0
    eta = 0.0
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        ok = _factors(t0, t, lam, decay, f)
        eta = f[0]
        decay = f[1]
        if not ok:
            state[0] = t
            state[1] = eta
            return np.nan
        lo = blk_ptr[i]
        hi = blk_ptr[i + 1]
        _scaled_blocks(v, w, blocks, lo, hi, decay, bstart, tstart, L, ustates)
        total += sequence_loss_gradient2(v, ubase, uval, ustates, bbase, tbase, labels, seq_offsets[i],
                                         seq_offsets[i + 1], L, pairs, pair_pos, pred_ptr, pred_j, pred_r, ws2, Pt, row,
                                         g)
        _descend(w, g, blocks, lo, hi, f[2], bstart, tstart, L, ustates)
        t += 1.0
    _finish_epoch(w, decay, t, eta, state)
    return total


@njit(cache=True)
def sample_loss(w, order, seq_offsets, ubase, uval, ustates, bbase, labels, L):
    """sum over the sequences in ``order`` of -log p(y|x, w) (CRFsuite's initial loss of
    the calibration sample)."""
    ws = workspace(longest_sequence(seq_offsets), L, bbase.shape[1])
    tot = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        tot += sequence_loss(w, ubase, uval, ustates, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


@njit(cache=True)
def sample_loss2(w, order, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pred_ptr, pred_j, pred_r):
    """:func:`sample_loss` on label-pair states."""
    ws2 = K2.workspace2(longest_sequence(seq_offsets), L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
    tot = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        tot += sequence_loss2(w, ubase, uval, ustates, bbase, tbase, labels, seq_offsets[i], seq_offsets[i + 1], L,
                              pairs, pred_ptr, pred_j, pred_r, ws2)
    return tot
