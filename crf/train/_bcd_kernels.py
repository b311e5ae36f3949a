"""numba kernels of block coordinate descent, one block per observation (Sokolovska et al.; Lavergne et al. 2010, eq. 10-11)."""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit

from .._gradient_kernels import unigram_rank
from .._inference_kernels import STATE_LABEL, pair_size
from .._order2_kernels import tag_marginals, triple_of, workspace2
from ._sequence_kernels import (fresh_forward_backward2, longest_sequence, pairwise, sequence_loss, sequence_loss2,
                                workspace)


@njit(cache=True)
def block_sequences(seq_offsets, blk_ptr, blocks, obs_of_block_rank, L, bstart, n_obs, tstart, uptr):
    """(obs_ptr, obs_seq): CSR of the sequences where each observation occurs.

    obs_of_block_rank: int64 (n_unigram_obs + n_bigram_obs + n_trigram_obs,) observation
    id of the unigram block of rank r (r < n_unigram_obs), of the bigram block of rank
    r - n_unigram_obs, then of the trigram blocks (offsets from tstart, L^3 each); a
    sequence is listed once per observation; uptr: the unigram blocks' offsets with seen
    states (``FeatureSpace.uptr``), or empty.
    """
    n_seq = len(seq_offsets) - 1
    n_uni = bstart // L if uptr.shape[0] == 0 else uptr.shape[0] - 1
    L2 = L * L
    n_bi = (tstart - bstart) // L2
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
                if b < bstart:
                    rank = unigram_rank(b, L, uptr)
                elif b < tstart:
                    rank = n_uni + (b - bstart) // L2
                else:
                    rank = n_uni + n_bi + (b - tstart) // (L2 * L)
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
def _block_loss(w, seq_offsets, ubase, uval, ustates, bbase, labels, seqs, L, ws, pair_states, o2, ws2):
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r = o2
    tot = 0.0
    for i in seqs:
        if pair_states:
            tot += sequence_loss2(w, ubase, uval, ustates, bbase, tbase, labels, seq_offsets[i], seq_offsets[i + 1], L,
                                  pairs, pred_ptr, pred_j, pred_r, ws2)
        else:
            tot += sequence_loss(w, ubase, uval, ustates, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


@njit(cache=True)
def _count(base, t, b, val, valued):
    """The value of the feature of block b at token t: the sum of its occurrences' values."""
    c = 0.0
    for j in range(base.shape[1]):
        if base[t, j] == b:
            c += val[t, j] if valued else 1.0
    return c


@njit(cache=True)
def _add(g, h, k, c, p):
    g[k] += c * p
    h[k] += c * c * p * (1.0 - p)


@njit(cache=True)
def _accumulate1(s, e, ub, bb, ubase, uval, ustates, bbase, labels, L, ws, pp, g, h, nU):
    """g, h += the block's gradient and Hessian diagonal from sequence [s, e) at first order
    (after forward_backward): unigram weights at g[:nU], bigram weights (L*L) after."""
    valued = uval.shape[0] > 0
    for t in range(e - s):
        if ub >= 0:
            c = _count(ubase, s + t, ub, uval, valued)
            if c != 0.0:  # the feature value at t (values may be negative)
                if ustates.shape[0] == 0:
                    for y in range(L):
                        _add(g, h, y, c, ws.alpha[t, y] * ws.beta[t, y])
                    g[labels[s + t]] -= c
                else:  # seen states: the block's labels, at their places in the block
                    for k in range(ub, ustates[ub] >> 32):
                        y = ustates[k] & STATE_LABEL
                        _add(g, h, k - ub, c, ws.alpha[t, y] * ws.beta[t, y])
                        if y == labels[s + t]:
                            g[k - ub] -= c
        if bb >= 0 and t > 0:
            c = _count(bbase, s + t, bb, uval, False)
            if c > 0.0:
                pairwise(t, L, ws, pp)
                for k in range(L * L):
                    _add(g, h, nU + k, c, pp[k])
                g[nU + labels[s + t - 1] * L + labels[s + t]] -= c


@njit(cache=True)
def _accumulate2(s, e, ub, bb, tb, ubase, uval, ustates, bbase, labels, L, o2, ws2, Pt, row, g, h, nU, nB):
    """:func:`_accumulate1` on label-pair states: unigram weights at g[:nU] (the tags), the
    allowed pairs' bigram weights at g[nU:nU + nB], the allowed triples' trigram weights after."""
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r = o2
    alpha, beta, a0, b0, pb = ws2[2], ws2[3], ws2[4], ws2[5], ws2[13]
    valued = uval.shape[0] > 0
    for t in range(e - s):
        if ub >= 0:
            c = _count(ubase, s + t, ub, uval, valued)
            if c != 0.0:
                tag_marginals(t, L, pb, alpha, beta, a0, b0, row)
                if ustates.shape[0] == 0:
                    for y in range(L):
                        _add(g, h, y, c, row[y])
                    g[labels[s + t]] -= c
                else:
                    for k in range(ub, ustates[ub] >> 32):
                        y = ustates[k] & STATE_LABEL
                        _add(g, h, k - ub, c, row[y])
                        if y == labels[s + t]:
                            g[k - ub] -= c
        if bb >= 0 and t > 0:
            c = _count(bbase, s + t, bb, uval, False)
            if c > 0.0:
                gold = labels[s + t - 1] * L + labels[s + t]
                for jj in range(pairs.shape[0]):
                    _add(g, h, nU + jj, c, alpha[t, jj] * beta[t, jj])
                    if pairs[jj] == gold:
                        g[nU + jj] -= c
        if tb >= 0 and t > 1:
            c = _count(tbase, s + t, tb, uval, False)
            if c > 0.0:
                qg = triple_of(pairs, pair_pos, pred_ptr, pred_j, L, labels[s + t - 2], labels[s + t - 1],
                               labels[s + t])
                for q in range(pred_r.shape[0]):
                    _add(g, h, nU + nB + q, c, Pt[t, q])
                g[nU + nB + qg] -= c


@njit(cache=True)
def bcd_pass(w, order, obs_ptr, obs_seq, uoff, boff, seq_offsets, ubase, uval, ustates, bbase, labels, L, rho1,
             rho2, kappa, counts, pair_states, toff, o2):
    """One pass of block coordinate descent (Sokolovska et al. 2010; Lavergne et al.
    section 3.4, eq. 10-11) over the observations in ``order``.

    Block of observation o: its unigram weights w[uoff[o] : + L], bigram weights
    w[boff[o] : + L*L] and trigram weights w[toff[o] : + L^3] (offsets -1 when absent;
    on label-pair states, ``pair_states``, only the allowed pairs' and triples' entries:
    o2 = (tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r) of ``crf.transitions.PairStructure``).
    Forward-backward runs on the sequences where o occurs only (obs_ptr / obs_seq). With
    g_k the gradient of the loss and h_k = sum over the positions where o is active of
    p_k (1 - p_k) (the diagonal of the Hessian, cross-position terms dropped), every
    weight of the block moves to the minimiser of its quadratic model,
    w_k = s(c h_k w_k - g_k, rho1) / (c h_k + rho2), s the soft threshold (eq. 11),
    with curvature factor c = kappa; if the objective restricted to those
    sequences and weights does not decrease, c doubles (a safeguard, which
    Wapiti's BCD does not have).  counts int64 [forward-backwards, safeguard retries].
    Returns the number of blocks whose weights changed.
    """
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r = o2
    maxT = longest_sequence(seq_offsets)
    ws = workspace(1 if pair_states else maxT, L, bbase.shape[1])
    ws2 = workspace2(maxT if pair_states else 1, L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
    Pt = np.empty((maxT if pair_states and tbase.shape[1] > 0 else 1, max(pred_r.shape[0], 1)))
    row = np.empty(L)
    L2 = L * L
    pp = np.empty(pair_size(L, bbase.shape[1]))
    nb_max = (pairs.shape[0] if pair_states else L2) if bbase.shape[1] > 0 else 0
    size = L + nb_max + (pred_r.shape[0] if tbase.shape[1] > 0 else 0)
    g = np.empty(size)
    h = np.empty(size)
    old = np.empty(size)
    idx = np.empty(size, dtype=np.int64)
    changed = 0
    for oo in range(order.shape[0]):
        o = order[oo]
        seqs = obs_seq[obs_ptr[o]:obs_ptr[o + 1]]
        if seqs.shape[0] == 0:
            continue
        ub = uoff[o]
        bb = boff[o]
        tb = toff[o] if pair_states else -1
        # the block's weights, in the order of g and h: unigram, bigram, trigram
        n = 0
        if ub >= 0:
            for k in range(ub, ub + L if ustates.shape[0] == 0 else ustates[ub] >> 32):
                idx[n] = k
                n += 1
        nU = n
        if bb >= 0:
            for k in range(pairs.shape[0] if pair_states else L2):
                idx[n] = bb + (pairs[k] if pair_states else k)
                n += 1
        nB = n - nU
        if tb >= 0:
            for q in range(pred_r.shape[0]):
                idx[n] = tb + pred_r[q]
                n += 1
        g[:n] = 0.0
        h[:n] = 0.0
        f_old = 0.0
        for i in seqs:
            s = seq_offsets[i]
            e = seq_offsets[i + 1]
            if pair_states:
                f_old += fresh_forward_backward2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs,
                                                 pred_ptr, pred_j, pred_r, ws2, Pt)
                _accumulate2(s, e, ub, bb, tb, ubase, uval, ustates, bbase, labels, L, o2, ws2, Pt, row, g, h, nU, nB)
            else:
                f_old += sequence_loss(w, ubase, uval, ustates, bbase, labels, s, e, L, ws)
                _accumulate1(s, e, ub, bb, ubase, uval, ustates, bbase, labels, L, ws, pp, g, h, nU)
            counts[0] += 1
        pen_old = 0.0
        for k in range(n):
            old[k] = w[idx[k]]
            pen_old += rho1 * abs(old[k]) + 0.5 * rho2 * old[k] * old[k]
        cf = kappa
        for _ in range(30):
            pen_new = 0.0
            moved = False
            for k in range(n):
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
                w[idx[k]] = v
                pen_new += rho1 * abs(v) + 0.5 * rho2 * v * v
            if not moved:
                break
            f_new = _block_loss(w, seq_offsets, ubase, uval, ustates, bbase, labels, seqs, L, ws, pair_states, o2, ws2)
            counts[0] += seqs.shape[0]
            if f_new + pen_new <= f_old + pen_old:
                changed += 1
                break
            counts[1] += 1
            cf *= 2.0
            for k in range(n):  # restore, retry with more curvature
                w[idx[k]] = old[k]
    return changed
