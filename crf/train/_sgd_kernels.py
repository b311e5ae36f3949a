"""numba kernel of one SGD-l1 epoch with the cumulative l1 penalty (Tsuruoka et al. 2009)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._inference_kernels import pair_size
from ._sequence_kernels import add_gradient, block_size, longest_sequence, sequence_loss, workspace


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
def sgd_l1_epoch(w, q, lastc, g, order, etas, seq_offsets, ubase, uval, bbase, labels, blk_ptr, blocks,
                 L, bstart, rho1_n, rho2_n, state):
    """One pass of SGD with the cumulative l1 penalty over the sequences in ``order``.

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
    ws = workspace(longest_sequence(seq_offsets), L, bbase.shape[1])
    pp = np.empty(pair_size(L, bbase.shape[1]))
    u = state[0]
    c = state[1]
    total = 0.0
    for k in range(order.shape[0]):
        i = order[k]
        eta = etas[k]
        u += eta * rho1_n
        if rho2_n > 0.0:
            c += np.log1p(-eta * rho2_n)
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        lo = blk_ptr[i]
        hi = blk_ptr[i + 1]
        if rho2_n > 0.0:
            for r in range(lo, hi):
                b = blocks[r]
                if lastc[b] != c:
                    f = np.exp(c - lastc[b])
                    lastc[b] = c
                    for j in range(b, b + block_size(b, bstart, L)):
                        w[j] *= f
        total += sequence_loss(w, ubase, uval, bbase, labels, s, e, L, ws)
        add_gradient(ubase, uval, bbase, labels, s, e, L, ws, pp, g)
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + block_size(b, bstart, L)):
                w[j] -= eta * g[j]
                g[j] = 0.0
                if rho1_n > 0.0:
                    _clip(w, q, j, u)
    if rho2_n > 0.0:
        b = 0
        while b < w.shape[0]:
            size = block_size(b, bstart, L)
            if lastc[b] != c:
                f = np.exp(c - lastc[b])
                for j in range(b, b + size):
                    w[j] *= f
            lastc[b] = 0.0
            b += size
    if rho1_n > 0.0:
        for j in range(w.shape[0]):
            _clip(w, q, j, u)
    state[0] = u
    state[1] = 0.0
    return total
