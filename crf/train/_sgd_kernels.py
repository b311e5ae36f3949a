"""numba kernel of one SGD-l1 epoch with the cumulative l1 penalty (Tsuruoka et al. 2009)."""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit

from ._sequence_kernels import block_size2, gradient_workspace, no_pair_args, sequence_loss_gradient


@njit(cache=True)
def _clip(w, q, j, u):
    """Cumulative l1 penalty of Tsuruoka et al. 2009 (Lavergne et al. eq. 8) on w[j]."""
    z = w[j]
    if z > 0.0:
        w[j] = max(0.0, z - (u + q[j]))
    elif z < 0.0:
        w[j] = min(0.0, z + (u - q[j]))
    q[j] += w[j] - z


@njit(cache=True)
def _pending_l2(w, lastc, blocks, lo, hi, c, bstart, tstart, L, ustates):
    """The blocks lo..hi-1 get their pending l2 shrink exp(c - lastc[b]) (see sgd_l1_epoch)."""
    for r in range(lo, hi):
        b = blocks[r]
        if lastc[b] != c:
            f = np.exp(c - lastc[b])
            lastc[b] = c
            for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                w[j] *= f


@njit(cache=True)
def _step(w, q, g, blocks, lo, hi, eta, u, rho1_n, bstart, tstart, L, ustates):
    """w -= eta g on the blocks lo..hi-1 (g left zero there), then the cumulative l1 clipping."""
    for r in range(lo, hi):
        b = blocks[r]
        for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
            w[j] -= eta * g[j]
            g[j] = 0.0
            if rho1_n > 0.0:
                _clip(w, q, j, u)


@njit(cache=True)
def _finish(w, q, lastc, c, u, rho1_n, rho2_n, bstart, tstart, L, ustates):
    """Every weight gets its pending l2 shrink and l1 clipping: w is the current iterate."""
    if rho2_n > 0.0:
        b = 0
        while b < w.shape[0]:
            size = block_size2(b, bstart, tstart, L, ustates)
            if lastc[b] != c:
                f = np.exp(c - lastc[b])
                for j in range(b, b + size):
                    w[j] *= f
            lastc[b] = 0.0
            b += size
    if rho1_n > 0.0:
        for j in range(w.shape[0]):
            _clip(w, q, j, u)


@njit(cache=True)
def sgd_l1_pass(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L,
                bstart, tstart, pair_states, o2, rho1_n, rho2_n, state):
    """One pass of SGD with the cumulative l1 penalty over the sequences in ``order``, first
    order or on the label-pair states of o2 = (tbase, pairs, pair_pos, pred_ptr, pred_j,
    pred_r) (``pair_states``: second order, or forbidden pairs; blocks from
    ``sequence_blocks2``, trigram blocks at offsets >= tstart).

    Per step k (sequence i = order[k], learning rate etas[k]):
    u += eta rho1 / n; the weights of the blocks of i get their pending l2 shrink
    prod (1 - eta rho2 / n) (kept lazily as a log-scale per block: lastc float64
    (n_params,) is read and written at block offsets only, one exp per block),
    the gradient step w -= eta grad(-log p(y_i|x_i)), then the cumulative l1
    clipping with q float64 (n_params,) (the penalty each weight actually received).
    g: float64 (n_params,) zero scratch (left zero).  state: float64 [u, log-scale].
    At the end every weight gets its pending l2 shrink and l1 clipping, so w is
    the current iterate.  Returns the sum of the per-sequence losses met (each
    at the weights of its step).
    """
    gws = gradient_workspace(seq_offsets, L, bbase, pair_states, o2)
    u = state[0]
    c = state[1]
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        eta = etas[k]
        u += eta * rho1_n
        if rho2_n > 0.0:
            c += np.log1p(-eta * rho2_n)
            _pending_l2(w, lastc, blocks, blk_ptr[i], blk_ptr[i + 1], c, bstart, tstart, L, ustates)
        total += sequence_loss_gradient(w, ubase, uval, ustates, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L,
                                        pair_states, o2, gws, g)
        _step(w, q, g, blocks, blk_ptr[i], blk_ptr[i + 1], eta, u, rho1_n, bstart, tstart, L, ustates)
    _finish(w, q, lastc, c, u, rho1_n, rho2_n, bstart, tstart, L, ustates)
    state[0] = u
    state[1] = 0.0
    return total


@njit(cache=True)
def sgd_l1_epoch(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks,
                 L, bstart, rho1_n, rho2_n, state):
    """:func:`sgd_l1_pass` of a first-order model (no trigram block)."""
    return sgd_l1_pass(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks,
                       L, bstart, w.shape[0], False, no_pair_args(ubase.shape[0]), rho1_n, rho2_n, state)


@njit(cache=True)
def sgd_l1_epoch2(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, blk_ptr, blocks,
                  L, bstart, tstart, pairs, pair_pos, pred_ptr, pred_j, pred_r, rho1_n, rho2_n, state):
    """:func:`sgd_l1_pass` on the label-pair states of a second-order model (or one with
    forbidden pairs)."""
    return sgd_l1_pass(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks,
                       L, bstart, tstart, True, (tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r), rho1_n, rho2_n,
                       state)
