"""numba kernels of SAG / SAG-NUS* (Schmidt et al.): the gradient store and one pass, at
first order and on label-pair states."""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit

from .. import _inference_kernels as K
from .._inference_kernels import pair_size
from .._order2_kernels import tag_marginals, triple_of, workspace2
from ._sequence_kernels import (block_size2, find_block, longest_sequence, pair_args, pairwise, sequence_loss,
                                sequence_loss2, sequence_loss_gradient2, workspace)


@njit(cache=True)
def sag_init_store(seq_offsets, bbase, labels, blk_ptr, blocks, L, bstart, mu, pair_first, pair, o2):
    """Stored marginals initialised to the gold one-hot labels (so that g_i = 0 before
    sequence i is first visited: g_i = E_stored - gold counts).

    mu: float64 (n_tokens, L) unary marginals; pair: float64 (n_pair_rows, L*L) pairwise
    marginals summed over the positions of a sequence where the same bigram block is
    active (what the gradient of that block needs); pair_first int64 (n_seq + 1,) first
    row of each sequence (its bigram blocks in sorted order). o2: :func:`order2_args`
    (label-pair states: the trigram blocks' rows of triple marginals too).
    """
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r, trip_first, trip = o2
    mu[:] = 0.0
    pair[:] = 0.0
    trip[:] = 0.0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        ntrip = trip_first[i + 1] - trip_first[i]
        lo = blk_ptr[i + 1] - ntrip - (pair_first[i + 1] - pair_first[i])
        tlo = blk_ptr[i + 1] - ntrip
        for t in range(s, e):
            mu[t, labels[t]] = 1.0
            if t > s:
                kg = labels[t - 1] * L + labels[t]
                for j in range(bbase.shape[1]):
                    b = bbase[t, j]
                    if b >= 0:
                        r = pair_first[i] + find_block(blocks, lo, tlo, b) - lo
                        pair[r, kg] += 1.0
            if t > s + 1 and tbase.shape[1] > 0:
                qg = triple_of(pairs, pair_pos, pred_ptr, pred_j, L, labels[t - 2], labels[t - 1], labels[t])
                for j in range(tbase.shape[1]):
                    b = tbase[t, j]
                    if b >= 0:
                        r = trip_first[i] + find_block(blocks, tlo, blk_ptr[i + 1], b) - tlo
                        trip[r, qg] += 1.0


def order2_args(space, data, blk_ptr, blocks):
    """The label-pair arguments of :func:`sag_init_store` / :func:`sag_pass`: (tbase, pairs,
    pair_pos, pred_ptr, pred_j, pred_r, trip_first, trip) with the stored triple marginals
    trip (one row of n3 per sequence and trigram block) zeroed; placeholders for a
    first-order model."""
    args = pair_args(space, data)
    if not space.pairwise:
        return args + (np.zeros(data.n_sequences + 1, dtype=np.int64), np.zeros((1, 1)))
    is_trip = (blocks >= space.trigram_start).astype(np.int64)
    cum = np.concatenate([[0], np.cumsum(is_trip)])
    trip_first = cum[blk_ptr].astype(np.int64)
    trip = np.zeros((max(int(trip_first[-1]), 1), max(space.structure.n3, 1)))
    return args + (trip_first, trip)


@njit(cache=True)
def _tree_update(tsum, size, i, v):
    """Set leaf i of the sum tree tsum (float64 (2 size,), root at 1) to v."""
    p = size + i
    tsum[p] = v
    p //= 2
    while p >= 1:
        tsum[p] = tsum[2 * p] + tsum[2 * p + 1]
        p //= 2


@njit(cache=True)
def _tree_sample(tsum, size, r):
    """Leaf index i with prefix sums: P(i) = leaf_i / total (r uniform in [0, total))."""
    p = 1
    while p < size:
        if r < tsum[2 * p]:
            p = 2 * p
        else:
            r -= tsum[2 * p]
            p = 2 * p + 1
    return p - size


@njit(cache=True)
def seed(s):
    np.random.seed(s)


@njit(cache=True)
def _sag_gradient1(w, d, g, i, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, mu, pair_first,
                   pair, pscratch, ws, pp):
    """Sequence i at first order: its loss; g += its gradient E_new - gold; d += E_new -
    E_stored, and the stored marginals (mu, pair) become E_new."""
    s = seq_offsets[i]
    e = seq_offsets[i + 1]
    hi = blk_ptr[i + 1]
    alpha, beta = ws.alpha, ws.beta
    L2 = L * L
    valued = uval.shape[0] > 0
    fi = sequence_loss(w, ubase, uval, ustates, bbase, labels, s, e, L, ws)
    # d += g_new - g_old = E_new - E_old; g = g_new = E_new - gold (each times the
    # feature's value v, constant per token: the stored marginals need no values)
    for t in range(e - s):
        yg = labels[s + t]
        for y in range(L):
            p = alpha[t, y] * beta[t, y]
            diff = p - mu[s + t, y]
            mu[s + t, y] = p
            for j in range(ubase.shape[1]):
                b = ubase[s + t, j]
                if b >= 0:
                    k = K.state_index(ustates, b, y)
                    if k >= 0:
                        v = uval[s + t, j] if valued else 1.0
                        d[k] += v * diff
                        g[k] += v * p
        for j in range(ubase.shape[1]):
            b = ubase[s + t, j]
            if b >= 0:
                k = K.state_index(ustates, b, yg)
                if k >= 0:  # seen states: a pair whose values sum below 0 has no weight
                    g[k] -= uval[s + t, j] if valued else 1.0
    pf = pair_first[i]
    npair = pair_first[i + 1] - pf
    plo = hi - npair
    pscratch[:npair] = 0.0
    for t in range(1, e - s if bbase.shape[1] > 0 else 1):
        pairwise(t, L, ws, pp)
        kg = labels[s + t - 1] * L + labels[s + t]
        for j in range(bbase.shape[1]):
            b = bbase[s + t, j]
            if b >= 0:
                r = find_block(blocks, plo, hi, b) - plo
                for kk in range(L2):
                    pscratch[r, kk] += pp[kk]
                    g[b + kk] += pp[kk]
                g[b + kg] -= 1.0
    for r in range(npair):
        b = blocks[plo + r]
        for kk in range(L2):
            d[b + kk] += pscratch[r, kk] - pair[pf + r, kk]
            pair[pf + r, kk] = pscratch[r, kk]
    return fi


@njit(cache=True)
def _sag_gradient2(w, d, g, i, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, mu, pair_first,
                   pair, pscratch, o2, ws2, Pt, row, tscratch):
    """:func:`_sag_gradient1` on label-pair states (``crf._order2_kernels``): the stored
    marginals are those of the tags (mu), of the allowed pairs summed per bigram block
    (pair) and of the allowed triples summed per trigram block (o2's trip)."""
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r, trip_first, trip = o2
    s = seq_offsets[i]
    e = seq_offsets[i + 1]
    hi = blk_ptr[i + 1]
    fi = sequence_loss_gradient2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pair_pos, pred_ptr,
                                 pred_j, pred_r, ws2, Pt, row, g)
    alpha, beta, a0, b0, pb = ws2[2], ws2[3], ws2[4], ws2[5], ws2[13]
    valued = uval.shape[0] > 0
    for t in range(e - s):
        tag_marginals(t, L, pb, alpha, beta, a0, b0, row)
        for y in range(L):
            diff = row[y] - mu[s + t, y]
            mu[s + t, y] = row[y]
            for j in range(ubase.shape[1]):
                b = ubase[s + t, j]
                if b >= 0:
                    k = K.state_index(ustates, b, y)
                    if k >= 0:
                        d[k] += (uval[s + t, j] if valued else 1.0) * diff
    tf = trip_first[i]
    ntrip = trip_first[i + 1] - tf
    tlo = hi - ntrip
    pf = pair_first[i]
    npair = pair_first[i + 1] - pf
    plo = tlo - npair
    pscratch[:npair] = 0.0
    tscratch[:ntrip] = 0.0
    for t in range(1, e - s):
        for j in range(bbase.shape[1]):
            b = bbase[s + t, j]
            if b >= 0:
                r = find_block(blocks, plo, tlo, b) - plo
                for jj in range(pairs.shape[0]):
                    pscratch[r, pairs[jj]] += alpha[t, jj] * beta[t, jj]
        if t > 1:
            for j in range(tbase.shape[1]):
                b = tbase[s + t, j]
                if b >= 0:
                    r = find_block(blocks, tlo, hi, b) - tlo
                    for q in range(pred_r.shape[0]):
                        tscratch[r, q] += Pt[t, q]
    for r in range(npair):
        b = blocks[plo + r]
        for jj in range(pairs.shape[0]):
            kk = pairs[jj]
            d[b + kk] += pscratch[r, kk] - pair[pf + r, kk]
            pair[pf + r, kk] = pscratch[r, kk]
    for r in range(ntrip):
        b = blocks[tlo + r]
        for q in range(pred_r.shape[0]):
            d[b + pred_r[q]] += tscratch[r, q] - trip[tf + r, q]
            trip[tf + r, q] = tscratch[r, q]
    return fi


@njit(cache=True)
def sag_pass(w, d, last, A, Sacc, g, wsave, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L,
             bstart, lam, mu, pair_first, pair, pscratch, f_store, visited, tsum, size, nus, state,
             counts, pair_states, tstart, o2):
    """n iterations of SAG (Schmidt et al., Algorithm 1) with stored marginals.

    Objective (Schmidt's scale): f(w) = 1/n sum_i -log p(y_i|x_i, w) + lam/2 ||w||^2.
    d: float64 (n_params,) sum of the stored gradients g_i; the update
    w <- (1 - a lam) w - (a / m) d is applied lazily: A, Sacc float64 (n + 1,) hold
    prod_k (1 - a_k lam) and sum_k (a_k / m_k) / A_{k+1}; last int64 (n_params,) the
    iteration at which w[j] was last brought up to date, so that
    w_j(t) = A_t / A_l w_j(l) - d_j A_t (Sacc_t - Sacc_l).
    g_i = E_{w_old}[features] - gold counts is never stored: only the marginals
    (mu, pair) at w_old.  f_store (n_seq,) last loss of each sequence; visited int8.
    Step size: nus = 0 — one L_g (state[1]) with the line search
    f_i(w - g/L) <= f_i - |g|^2 / (2L) (L *= 2 until it holds), a = 1/(L_g + lam),
    L_g *= 2^(-1/n); nus = 1 (NUS*) — one L_i per sequence, the leaves of the sum tree
    tsum (``size`` leaves, 0 until visited), initialised to the mean of the visited
    L_i on the first visit, the same line search, L_max = state[1] the running
    maximum of the L_i (decayed by 2^(-1/n) per iteration, as L_g),
    a = (1/(L_max + lam) + 1/(L_mean + lam)) / 2, L_i *= 0.9 after the step;
    i drawn uniformly half the time, proportionally to L_i among the visited
    sequences otherwise.
    state: float64 [m, L_g or L_max]; counts int64 [gradient evaluations, line-search
    evaluations].
    On return every weight is up to date (w is the iterate) and A, Sacc restart.
    pair_states: the model runs on label-pair states (``crf._order2_kernels``: second
    order or forbidden pairs); tstart: the first trigram block's offset (beyond every
    block without trigram patterns); o2: :func:`order2_args`.
    """
    n = len(seq_offsets) - 1
    tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r, trip_first, trip = o2
    maxT = longest_sequence(seq_offsets)
    ws = workspace(1 if pair_states else maxT, L, bbase.shape[1])
    ws2 = workspace2(maxT if pair_states else 1, L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
    Pt = np.empty((maxT if pair_states and tbase.shape[1] > 0 else 1, max(pred_r.shape[0], 1)))
    row = np.empty(L)
    most = 1
    for i in range(n):
        most = max(most, trip_first[i + 1] - trip_first[i])
    tscratch = np.empty((most, max(pred_r.shape[0], 1)))
    pp = np.empty(pair_size(L, bbase.shape[1]))
    m = state[0]
    Lg = state[1]
    A[0] = 1.0
    Sacc[0] = 0.0
    for k in range(n):
        if nus and m > 0 and np.random.random() >= 0.5:
            i = _tree_sample(tsum, size, np.random.random() * tsum[1])
            if i >= n or visited[i] == 0:  # rounding at the edge of the last leaf
                i = np.random.randint(n)
        else:
            i = np.random.randint(n)
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        lo = blk_ptr[i]
        hi = blk_ptr[i + 1]
        Ak = A[k]
        Sk = Sacc[k]
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                lj = last[j]
                if lj != k:
                    w[j] = (Ak / A[lj]) * w[j] - d[j] * Ak * (Sk - Sacc[lj])
                    last[j] = k
        if pair_states:
            fi = _sag_gradient2(w, d, g, i, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, mu,
                                pair_first, pair, pscratch, o2, ws2, Pt, row, tscratch)
        else:
            fi = _sag_gradient1(w, d, g, i, seq_offsets, ubase, uval, ustates, bbase, labels, blk_ptr, blocks, L, mu,
                                pair_first, pair, pscratch, ws, pp)
        counts[0] += 1
        f_store[i] = fi
        if visited[i] == 0:
            if nus:
                _tree_update(tsum, size, i, tsum[1] / m if m > 0 else 1.0)
            visited[i] = 1
            m += 1.0
        # line search on the Lipschitz constant of this sequence's gradient
        gg = 0.0
        c = 0
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                gg += g[j] * g[j]
                wsave[c] = w[j]
                c += 1
        Lcur = tsum[size + i] if nus else Lg
        if gg > 1e-8:
            for _ in range(60):
                for r in range(lo, hi):
                    b = blocks[r]
                    for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                        w[j] -= g[j] / Lcur
                if pair_states:
                    f_new = sequence_loss2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pred_ptr,
                                           pred_j, pred_r, ws2)
                else:
                    f_new = sequence_loss(w, ubase, uval, ustates, bbase, labels, s, e, L, ws)
                counts[1] += 1
                c = 0
                for r in range(lo, hi):
                    b = blocks[r]
                    for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                        w[j] = wsave[c]
                        c += 1
                if f_new <= fi - gg / (2.0 * Lcur):
                    break
                Lcur *= 2.0
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + block_size2(b, bstart, tstart, L, ustates)):
                g[j] = 0.0
        if nus:
            Lg = max(Lg, Lcur)
            _tree_update(tsum, size, i, Lcur)
            a = 0.5 * (1.0 / (Lg + lam) + 1.0 / (tsum[1] / m + lam))
            _tree_update(tsum, size, i, 0.9 * Lcur)
            Lg *= 2.0 ** (-1.0 / n)
        else:
            a = 1.0 / (Lcur + lam)
            Lg = Lcur * 2.0 ** (-1.0 / n)
        A[k + 1] = A[k] * (1.0 - a * lam)
        Sacc[k + 1] = Sacc[k] + (a / m) / A[k + 1]
    An = A[n]
    Sn = Sacc[n]
    for j in range(w.shape[0]):
        lj = last[j]
        if lj != n:
            w[j] = (An / A[lj]) * w[j] - d[j] * An * (Sn - Sacc[lj])
        last[j] = 0
    state[0] = m
    state[1] = Lg
