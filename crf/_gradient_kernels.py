"""Loss and gradient of the CRF negative log-likelihood in memory flat in the thread count
(Lavergne et al. 2010, section 4: model expectations minus empirical counts).

The gradient is made in two phases per batch of whole sequences:

1. in parallel over the sequences: forward-backward, then one row per token of
   unigram marginals minus the gold indicator (``Pu``, float64 (batch tokens, L)) and
   rows of label-pair marginals minus the gold pair (``Pb``, float64 (batch rows, L*L)):
   one row per position t >= 1, or a single row summed over the sequence when every
   position of it has the same bigram observations (``uniform``: e.g. the lone ``B``
   pattern), scattered once per sequence;
2. in parallel over disjoint ranges of observations (``units``, balanced by their
   occurrence counts): each thread reads the batch's base offsets (a few MB, shared
   in cache by the threads) and adds the rows of the occurrences in its range to their
   blocks g[b : b + L] (or L*L), in corpus order.

Every block is summed by one thread in a fixed order, so the gradient (and the loss,
summed over sequences in order) is the same bits for any number of threads; memory is
the batch buffers (a fixed byte budget) and g itself (the caller's): no index, no
per-thread copy of the gradient.
Array arguments as in ``_inference_kernels``; ``uval`` empty means every value is 1.
"""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit, prange

from ._inference_kernels import (FAST, STATE_LABEL, fb_workspace, forward_backward, gold_score, pair_marginals,
                                 pair_size, same_bigram_row, sparse_pair_marginals)


@njit(cache=True)
def unigram_offset(o, L, uptr):
    """The offset of unigram observation rank o's block (o = n_uobs: the end of the blocks);
    uptr: the seen-states blocks' offsets, or empty (blocks of L)."""
    return o * L if uptr.shape[0] == 0 else uptr[o]


@njit(cache=True)
def unigram_rank(b, L, uptr):
    """The rank of the unigram observation whose block starts at offset b."""
    return b // L if uptr.shape[0] == 0 else np.searchsorted(uptr, b, side="right") - 1


@njit(cache=True)
def bigram_rows(seq_offsets, bbase, uniform, brow_start):
    """uniform[i] (bool): sequence i has T > 1 and the same bigram row at every t >= 1;
    brow_start (n_seq + 1,): first row of sequence i in the bigram row numbering
    (0 rows without bigram patterns or T < 2, 1 row when uniform, else T)."""
    nb = bbase.shape[1]
    brow_start[0] = 0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        u = nb > 0 and T > 1
        if u:
            for t in range(2, T):
                if not same_bigram_row(bbase, s + t, s + t - 1):
                    u = False
                    break
        uniform[i] = u
        n = 0
        if nb > 0 and T > 1:
            n = 1 if u else T
        brow_start[i + 1] = brow_start[i] + n


@njit(cache=True)
def occurrence_counts(seq_offsets, ubase, bbase, uniform, L, bstart, n_uobs, uptr, occ_ptr):
    """occ_ptr (n_uobs + n_bobs + 1,): cumulative occurrence counts of the observations
    (unigram ones, then bigram ones; a uniform sequence's bigram row counts once); uptr: the
    unigram blocks' offsets of a seen-states space (``FeatureSpace.uptr``), or empty."""
    L2 = L * L
    nu = ubase.shape[1]
    nb = bbase.shape[1]
    for o in range(occ_ptr.shape[0]):
        occ_ptr[o] = 0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        for t in range(s, e):
            for j in range(nu):
                b = ubase[t, j]
                if b >= 0:
                    occ_ptr[unigram_rank(b, L, uptr) + 1] += 1
        last = s + 2 if uniform[i] else e
        for t in range(s + 1, last):
            for j in range(nb):
                b = bbase[t, j]
                if b >= 0:
                    occ_ptr[n_uobs + (b - bstart) // L2 + 1] += 1
    for o in range(1, occ_ptr.shape[0]):
        occ_ptr[o] += occ_ptr[o - 1]


@njit(cache=True, fastmath=FAST)
def _sequence_rows(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse, bstart, nz_ptr, nz_idx, uniform,
                   brow_start, i, tok0, brow0, ws, pp, Pu, Pb, seq_loss, seq_err):
    """Phase 1 for sequence i: its loss, posterior-decoding errors and gradient rows."""
    U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val = ws
    L2 = L * L
    s = seq_offsets[i]
    e = seq_offsets[i + 1]
    T = e - s
    if T <= 0:
        seq_loss[i] = 0.0
        seq_err[i] = 0
        return
    logz = forward_backward(theta, ubase, uval, ustates, bbase, s, e, L, sparse, bstart, nz_ptr, nz_idx,
                            U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val)
    seq_loss[i] = logz - gold_score(theta, U, bbase, labels, s, e, L)
    errs = 0
    for t in range(T):
        best = 0
        r = s + t - tok0
        for y in range(L):
            p = alpha[t, y] * beta[t, y]
            Pu[r, y] = p
            if p > Pu[r, best]:
                best = y
        yg = labels[s + t]
        if best != yg:
            errs += 1
        Pu[r, yg] -= 1.0
    seq_err[i] = errs
    if brow_start[i + 1] == brow_start[i]:
        return
    rb = brow_start[i] - brow0
    if uniform[i]:
        row = Pb[rb]
        for k in range(L2):
            row[k] = 0.0
        if not sparse:
            # one transition matrix for the whole sequence: sum_t alpha[t-1] (x) v_t, times Psi once
            for t in range(1, T):
                pair_marginals(t, L, eU, alpha, beta, scale, None, tmp, row, True)
            P = psi[psi_of[1]]
            for k in range(L2):
                row[k] *= P[k]
        else:
            for t in range(1, T):
                sparse_pair_marginals(t, L, eU, alpha, beta, scale, m_ptr, m_idx, m_val, tmp, pp)
                for k in range(L2):
                    row[k] += pp[k]
        for t in range(1, T):
            row[labels[s + t - 1] * L + labels[s + t]] -= 1.0
        return
    for t in range(1, T):
        row = Pb[rb + t]
        if sparse:
            sparse_pair_marginals(t, L, eU, alpha, beta, scale, m_ptr, m_idx, m_val, tmp, row)
        else:
            pair_marginals(t, L, eU, alpha, beta, scale, psi[psi_of[t]], tmp, row)
        row[labels[s + t - 1] * L + labels[s + t]] -= 1.0


@njit(cache=True, fastmath=FAST)
def scatter(ubase, uval, ustates, bbase, seq_offsets, uniform, brow_start, L, bstart, n_uobs, uptr, o0, o1, s0, s1,
            tok0, brow0, Pu, Pb, g):
    """Phase 2 for the observations o0..o1-1 (unigram ids, then n_uobs + bigram ids) and the
    batch of sequences s0..s1-1: every occurrence in corpus order adds its row to its block."""
    L2 = L * L
    nu = ubase.shape[1]
    nb = bbase.shape[1]
    valued = uval.shape[0] > 0
    seen = ustates.shape[0] > 0
    lo = unigram_offset(o0, L, uptr)
    hi = unigram_offset(min(o1, n_uobs), L, uptr)
    if lo < hi:
        for t in range(seq_offsets[s0], seq_offsets[s1]):
            r = t - tok0
            for j in range(nu):
                b = ubase[t, j]
                if b >= lo and b < hi:
                    if seen:
                        v = uval[t, j] if valued else 1.0
                        for k in range(b, ustates[b] >> 32):
                            g[k] += v * Pu[r, ustates[k] & STATE_LABEL]
                    elif valued:
                        v = uval[t, j]
                        for y in range(L):
                            g[b + y] += v * Pu[r, y]
                    else:
                        for y in range(L):
                            g[b + y] += Pu[r, y]
    if o1 <= n_uobs or nb == 0:
        return
    lo = bstart + max(o0 - n_uobs, 0) * L2
    hi = bstart + (o1 - n_uobs) * L2
    for i in range(s0, s1):
        if brow_start[i + 1] == brow_start[i]:
            continue
        s = seq_offsets[i]
        last = s + 2 if uniform[i] else seq_offsets[i + 1]
        for t in range(s + 1, last):
            r = brow_start[i] - brow0 + (0 if uniform[i] else t - s)
            for j in range(nb):
                b = bbase[t, j]
                if b >= lo and b < hi:
                    for k in range(L2):
                        g[b + k] += Pb[r, k]


@njit(cache=True)
def zero_blocks(g, o0, o1, n_uobs, n_bobs, L, bstart, tstart, uptr):
    """g = 0 on the blocks of observations o0..o1-1 (unigram ids, then n_uobs + bigram ids,
    then n_uobs + n_bobs + trigram ids): phase 2's ranges, zeroed by their own thread."""
    L2 = L * L
    for o in range(o0, o1):
        if o < n_uobs:
            lo = unigram_offset(o, L, uptr)
            n = unigram_offset(o + 1, L, uptr) - lo
        elif o < n_uobs + n_bobs:
            lo, n = bstart + (o - n_uobs) * L2, L2
        else:
            lo, n = tstart + (o - n_uobs - n_bobs) * L2 * L, L2 * L
        for k in range(lo, lo + n):
            g[k] = 0.0


@njit(cache=True)
def group_bounds(s0, ns, ng, gi, seq_offsets):
    """(a, b, maxT): the sequences a..b-1 of group gi of ng over the ns sequences from s0,
    and the most tokens one of them has (at least 1)."""
    a = s0 + (ns * gi) // ng
    b = s0 + (ns * (gi + 1)) // ng
    maxT = 1
    for i in range(a, b):
        T = seq_offsets[i + 1] - seq_offsets[i]
        if T > maxT:
            maxT = T
    return a, b, maxT


@njit(cache=True, parallel=True, fastmath=FAST)
def loss_gradient(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse, bstart, nz_ptr, nz_idx,
                  uniform, brow_start, batches, n_groups, units, n_uobs, uptr, Pu, Pb, seq_loss, seq_err, g):
    """Negative log-likelihood (returned) and its gradient, written into g float64 (n_params,).

    uniform bool (n_seq,), brow_start int64 (n_seq + 1,): from :func:`bigram_rows`;
    batches int64 (n_batches + 1,): sequence boundaries of the batches, each fitting Pu
    float64 (>= its tokens, L) and Pb float64 (>= its bigram rows, L*L); n_groups: how
    many parallel groups of sequences phase 1 makes per batch (any value: the result
    does not depend on it); units int64 (n_units + 1,): the observation ranges of phase
    2 (unigram observations 0..n_uobs-1, then the bigram ones); seq_loss float64 /
    seq_err int64 (n_seq,) per-sequence loss and token errors (output).
    """
    n_units = units.shape[0] - 1
    n_bobs = (g.shape[0] - bstart) // (L * L)
    for u in prange(n_units):
        zero_blocks(g, units[u], units[u + 1], n_uobs, n_bobs, L, bstart, g.shape[0], uptr)
    for bi in range(batches.shape[0] - 1):
        s0 = batches[bi]
        s1 = batches[bi + 1]
        tok0 = seq_offsets[s0]
        brow0 = brow_start[s0]
        ns = s1 - s0
        ng = min(n_groups, ns)
        for gi in prange(ng):
            a, b, maxT = group_bounds(s0, ns, ng, gi, seq_offsets)
            ws = fb_workspace(maxT, L, sparse, bbase.shape[1])
            pp = np.empty(pair_size(L, bbase.shape[1]))
            for i in range(a, b):
                _sequence_rows(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse, bstart, nz_ptr,
                               nz_idx, uniform, brow_start, i, tok0, brow0, ws, pp, Pu, Pb, seq_loss, seq_err)
        for u in prange(n_units):
            scatter(ubase, uval, ustates, bbase, seq_offsets, uniform, brow_start, L, bstart, n_uobs, uptr, units[u],
                    units[u + 1], s0, s1, tok0, brow0, Pu, Pb, g)
    loss = 0.0
    for i in range(seq_loss.shape[0]):
        loss += seq_loss[i]
    return loss
