"""numba kernels of block coordinate descent, one block per observation (Sokolovska et al.; Lavergne et al. 2010, eq. 10-11)."""

from __future__ import annotations

import numpy as np
from numba import njit

from .._inference_kernels import pair_size
from ._sequence_kernels import longest_sequence, pairwise, sequence_loss, workspace


@njit(cache=True)
def block_sequences(seq_offsets, blk_ptr, blocks, obs_of_block_rank, L, bstart, n_obs):
    """(obs_ptr, obs_seq): CSR of the sequences where each observation occurs.

    obs_of_block_rank: int64 (n_unigram_obs + n_bigram_obs,) observation id of the
    unigram block of rank r (r < n_unigram_obs) and of the bigram block of rank
    r - n_unigram_obs; a sequence is listed once per observation.
    """
    n_seq = len(seq_offsets) - 1
    n_uni = bstart // L
    L2 = L * L
    count = np.zeros(n_obs + 1, dtype=np.int64)
    lastseen = np.full(n_obs, -1, dtype=np.int64)
    for phase in range(2):
        if phase == 1:
            for o in range(n_obs):
                count[o + 1] += count[o]
            fill = count[:-1].copy()
            out = np.empty(count[n_obs], dtype=np.int64)
            lastseen[:] = -1
        for i in range(n_seq):
            for r in range(blk_ptr[i], blk_ptr[i + 1]):
                b = blocks[r]
                rank = b // L if b < bstart else n_uni + (b - bstart) // L2
                o = obs_of_block_rank[rank]
                if lastseen[o] == i:
                    continue
                lastseen[o] = i
                if phase == 0:
                    count[o + 1] += 1
                else:
                    out[fill[o]] = i
                    fill[o] += 1
    return count, out


@njit(cache=True)
def _bcd_block_loss(w, seq_offsets, ubase, uval, bbase, labels, seqs, L, ws):
    tot = 0.0
    for i in seqs:
        tot += sequence_loss(w, ubase, uval, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


@njit(cache=True)
def bcd_pass(w, order, obs_ptr, obs_seq, uoff, boff, seq_offsets, ubase, uval, bbase, labels, L, rho1,
             rho2, kappa, counts):
    """One pass of block coordinate descent (Sokolovska et al. 2010; Lavergne et al.
    section 3.4, eq. 10-11) over the observations in ``order``.

    Block of observation o: its unigram weights w[uoff[o] : + L] and bigram weights
    w[boff[o] : + L*L] (offsets -1 when absent).  Forward-backward runs on the
    sequences where o occurs only (obs_ptr / obs_seq).  With g_k the gradient of the
    loss and h_k = sum over the positions where o is active of p_k (1 - p_k) (the
    diagonal of the Hessian, cross-position terms dropped), every weight of the
    block moves to the minimiser of its quadratic model,
    w_k = s(c h_k w_k - g_k, rho1) / (c h_k + rho2), s the soft threshold (eq. 11),
    with curvature factor c = kappa; if the objective restricted to those
    sequences and weights does not decrease, c doubles (a safeguard, which
    Wapiti's BCD does not have).  counts int64 [forward-backwards, safeguard retries].
    Returns the number of blocks whose weights changed.
    """
    ws = workspace(longest_sequence(seq_offsets), L, bbase.shape[1])
    alpha, beta = ws.alpha, ws.beta
    L2 = L * L
    pp = np.empty(pair_size(L, bbase.shape[1]))
    size = L + (L2 if bbase.shape[1] > 0 else 0)  # no bigram block without bigram patterns
    g = np.empty(size)
    h = np.empty(size)
    old = np.empty(size)
    changed = 0
    valued = uval.shape[0] > 0
    for oo in range(order.shape[0]):
        o = order[oo]
        seqs = obs_seq[obs_ptr[o]:obs_ptr[o + 1]]
        if seqs.shape[0] == 0:
            continue
        ub = uoff[o]
        bb = boff[o]
        g[:] = 0.0
        h[:] = 0.0
        f_old = 0.0
        for i in seqs:
            s = seq_offsets[i]
            e = seq_offsets[i + 1]
            f_old += sequence_loss(w, ubase, uval, bbase, labels, s, e, L, ws)
            counts[0] += 1
            for t in range(e - s):
                if ub >= 0:
                    c = 0.0
                    for j in range(ubase.shape[1]):
                        if ubase[s + t, j] == ub:
                            c += uval[s + t, j] if valued else 1.0
                    if c != 0.0:  # the feature value at t (values may be negative)
                        for y in range(L):
                            p = alpha[t, y] * beta[t, y]
                            g[y] += c * p
                            h[y] += c * c * p * (1.0 - p)
                        g[labels[s + t]] -= c
                if bb >= 0 and t > 0:
                    c = 0.0
                    for j in range(bbase.shape[1]):
                        if bbase[s + t, j] == bb:
                            c += 1.0
                    if c > 0.0:
                        pairwise(t, L, ws, pp)
                        for k in range(L2):
                            g[L + k] += c * pp[k]
                            h[L + k] += c * c * pp[k] * (1.0 - pp[k])
                        g[L + labels[s + t - 1] * L + labels[s + t]] -= c
        pen_old = 0.0
        for k in range(size):
            j = (ub + k) if k < L else (bb + k - L)
            if (k < L and ub < 0) or (k >= L and bb < 0):
                continue
            old[k] = w[j]
            pen_old += rho1 * abs(w[j]) + 0.5 * rho2 * w[j] * w[j]
        cf = kappa
        for _ in range(30):
            pen_new = 0.0
            moved = False
            for k in range(size):
                if (k < L and ub < 0) or (k >= L and bb < 0):
                    continue
                j = (ub + k) if k < L else (bb + k - L)
                hk = cf * h[k] + 1e-12
                z = hk * old[k] - g[k]
                if z > rho1:
                    v = (z - rho1) / (hk + rho2)
                elif z < -rho1:
                    v = (z + rho1) / (hk + rho2)
                else:
                    v = 0.0
                if v != old[k]:
                    moved = True
                w[j] = v
                pen_new += rho1 * abs(v) + 0.5 * rho2 * v * v
            if not moved:
                break
            f_new = _bcd_block_loss(w, seq_offsets, ubase, uval, bbase, labels, seqs, L, ws)
            counts[0] += seqs.shape[0]
            if f_new + pen_new <= f_old + pen_old:
                changed += 1
                break
            counts[1] += 1
            cf *= 2.0
            for k in range(size):  # restore, retry with more curvature
                if (k < L and ub < 0) or (k >= L and bb < 0):
                    continue
                w[(ub + k) if k < L else (bb + k - L)] = old[k]
    return changed
