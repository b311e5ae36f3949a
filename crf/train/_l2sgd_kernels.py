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

from suffixlm._jit import njit

from .. import _order2_kernels as K2
from ._sequence_kernels import (block_size2, gradient_workspace, longest_sequence, no_pair_args, sequence_loss,
                                sequence_loss2, sequence_loss_gradient, workspace)


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
def l2sgd_pass(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, bstart,
               tstart, pair_states, o2, state):
    """One epoch of CRFsuite's l2sgd over the sequences in ``order`` (see the module doc), first
    order or on the label-pair states of o2 = (tbase, pairs, pair_pos, pred_ptr, pred_j,
    pred_r) (``pair_states``: second order, or forbidden pairs; blocks from
    ``sequence_blocks2``, trigram blocks at offsets >= tstart).

    w float64 (n_params,): the weights, updated in place (the model's weights at the end);
    v float64 (n_params,): scratch for the scaled weights; g float64 (n_params,): zero
    scratch (left zero); t0, lam: CRFsuite's t0 and lambda (= rho2 / n);
    state float64 [t, eta]: in, the number of updates so far; out, the updates after the
    epoch and the last learning rate.  Returns the sum of the per-sequence losses met
    (each at the weights of its step, after that step's shrink) -- NaN when the decay
    reached 0 (then w is left as it is).
    """
    gws = gradient_workspace(seq_offsets, L, bbase, pair_states, o2)
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
        total += sequence_loss_gradient(v, ubase, uval, ustates, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L,
                                        pair_states, o2, gws, g)
        _descend(w, g, blocks, lo, hi, f[2], bstart, tstart, L, ustates)
        t += 1.0
    _finish_epoch(w, decay, t, eta, state)
    return total


@njit(cache=True)
def l2sgd_epoch(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, bstart,
                state):
    """:func:`l2sgd_pass` of a first-order model (no trigram block)."""
    return l2sgd_pass(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L,
                      bstart, w.shape[0], False, no_pair_args(ubase.shape[0]), state)


@njit(cache=True)
def l2sgd_epoch2(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, blk_ptr, blocks, L,
                 bstart, tstart, pairs, pair_pos, pred_ptr, pred_j, pred_r, state):
    """:func:`l2sgd_pass` on the label-pair states of a second-order model (or one with
    forbidden pairs)."""
    return l2sgd_pass(w, v, g, order, t0, lam, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L,
                      bstart, tstart, True, (tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r), state)


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
