"""numba kernels of second-order CRFs, and of first-order ones with forbidden label pairs
(Sha & Pereira 2003, section 4.2: "the label at position i is y_i = c_{i-1} c_i").

The state at position t >= 1 is the label pair (y_{t-1}, y_t), one of the ``P``
*allowed* pairs ``pairs[j] = y_{t-1} * L + y_t`` (numbered by their second label:
:class:`crf.transitions.PairStructure`); position 0 is the label y_0 alone. A position's score is

    U_t[y_t]                                   unigram features (the label: c(y))
  + W_t[y_{t-1} L + y_t]              t >= 1   bigram features (the label pair: y)
  + X_t[(y_{t-2} L + y_{t-1}) L + y_t] t >= 2  trigram features (the label triple)

so a model without trigram features is the first-order model restricted to the allowed
pairs. The transitions between states, (a, b) -> (b, c) with both pairs allowed, are
listed by destination pair: for pair j, ``pred_ptr[j] .. pred_ptr[j + 1]`` index
``pred_j`` (the source pair's number; consecutive numbers, so the kernels read them as
the range starting at ``pred_j[pred_ptr[j]]``: contiguous loops that vectorise) and
``pred_r`` (the triple's offset in a trigram block, (a L + b) L + c). A position costs
O(P + number of triples), not O(L^3).

Array arguments as in ``_inference_kernels``, plus ``tbase`` int64 (n_tokens,
n_trigram_patterns): the theta offset of each token's trigram blocks, or -1 (rows 0
and 1 of a sequence are never read). Forward-backward is scaled as the first-order
one: alpha_t sums to 1, log Z = sum_t log c_t + the maxima removed from the unary
scores; alpha[t, j] * beta[t, j] is the marginal of pair j at t >= 1, a0 * b0 that of
the label at position 0.
"""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit, prange

from ._gradient_kernels import group_bounds, scatter, unigram_rank, zero_blocks
from ._inference_kernels import (FAST, NEG_INF, dense_psi, exp_unary, restrict_to_forced, row_slot, row_sum,
                                 same_bigram_row, transition_scores, unary_scores)


@njit(cache=True)
def workspace2(maxT, L, pairs, n3, nb, nt):
    """Work arrays of :func:`forward_backward2` for sequences of up to maxT tokens:
    (U, eU, alpha, beta, a0, b0, scale, tmp, psi, psi_of, phi, phi_of, pa, pb). Without
    bigram (nb = 0) or trigram (nt = 0) patterns their exponentiated rows are
    placeholders; pa / pb: the first and second label of every pair (no division in the
    recursions)."""
    P = pairs.shape[0]
    pa = np.empty(P, dtype=np.int64)
    pb = np.empty(P, dtype=np.int64)
    for j in range(P):
        pa[j] = pairs[j] // L
        pb[j] = pairs[j] - pa[j] * L
    T = max(maxT, 1)
    L2 = L * L if nb > 0 else 1
    psi = np.empty((T if nb > 0 else 1, L2))
    psi_of = np.full(T, -1, dtype=np.int64)
    phi = np.empty((T if nt > 0 else 1, n3 if nt > 0 else 1))
    phi_of = np.full(T, -1, dtype=np.int64)
    return (np.empty((T, L)), np.empty((T, L)), np.empty((T, max(P, 1))), np.empty((T, max(P, 1))),
            np.empty(L), np.empty(L), np.empty(T), np.empty(max(P, 1)), psi, psi_of, phi, phi_of, pa, pb)


@njit(cache=True, fastmath=FAST)
def trigram_scores(theta, tbase, i, pred_r, X):
    """X[q] = sum_j theta[tbase[i, j] + pred_r[q]]: the log potentials of the allowed triples at token i."""
    for q in range(pred_r.shape[0]):
        X[q] = 0.0
    for j in range(tbase.shape[1]):
        b = tbase[i, j]
        if b >= 0:
            for q in range(pred_r.shape[0]):
                X[q] += theta[b + pred_r[q]]


@njit(cache=True, fastmath=FAST)
def _trigram_psi(theta, tbase, s, T, pred_r, phi, phi_of):
    """phi[m] = exp(X) for the distinct trigram rows of positions t >= 2; phi_of[t] = m.
    phi_of[0] keeps the token whose row phi[0] holds (reused by the next sequence with
    that row, as ``dense_psi`` does); callers set it to -1 for fresh weights."""
    m = -1
    for t in range(2, T):
        m, fresh = row_slot(tbase, s, t, m, phi_of)
        if fresh:
            row = phi[m]
            trigram_scores(theta, tbase, s + t, pred_r, row)
            for q in range(pred_r.shape[0]):
                row[q] = np.exp(row[q])


@njit(cache=True, fastmath=FAST)
def _into_pair(t, pairs, pb, eU, beta, scale, psi, psi_of, hasB, tmp):
    """tmp[j] = Psi_t(pair j) eU[t, its label] beta[t, j] / scale[t] (t >= 1)."""
    inv = 1.0 / scale[t]
    if hasB:
        P_ = psi[psi_of[t]]
        for j in range(pairs.shape[0]):
            tmp[j] = eU[t, pb[j]] * beta[t, j] * inv * P_[pairs[j]]
    else:
        for j in range(pairs.shape[0]):
            tmp[j] = eU[t, pb[j]] * beta[t, j] * inv


@njit(cache=True, fastmath=FAST)
def forward_backward2(theta, ubase, uval, ustates, bbase, tbase, s, e, L, pairs, pred_ptr, pred_j, pred_r, ws, Pt=None,
                      rb=0, u=False):
    """Scaled forward-backward on the pair states of sequence [s, e); returns log Z (-inf
    when no labelling uses allowed pairs only). On return tmp is free work space.

    ``Pt`` (float64 (rows, n3), with trigram patterns): the triple marginals of every
    position t >= 2 are written into row rb + t, or added into row rb when ``u`` (a
    uniform sequence's one row, zeroed by the caller), during the backward pass (they
    need alpha[t-1] and the backward message of t, both at hand there). None: not made
    (numba compiles that case apart)."""
    U, eU, alpha, beta, a0, b0, scale, tmp, psi, psi_of, phi, phi_of, pa, pb = ws
    T = e - s
    P = pairs.shape[0]
    hasB = bbase.shape[1] > 0
    hasT = tbase.shape[1] > 0
    logz = exp_unary(theta, ubase, uval, ustates, s, e, L, U, eU)
    if hasB:
        dense_psi(theta, bbase, s, T, L, psi, psi_of)
    if hasT:
        _trigram_psi(theta, tbase, s, T, pred_r, phi, phi_of)
    for y in range(L):
        a0[y] = eU[0, y]
    c = row_sum(eU, 0, L)  # a loop that stores and sums rounds by address: see forward_backward
    scale[0] = c
    for y in range(L):
        a0[y] /= c
    for t in range(1, T):
        c = 0.0
        prev = alpha[t - 1]
        cur = alpha[t]
        F = phi[phi_of[t] if hasT and t > 1 else 0]
        Ps = psi[psi_of[t] if hasB else 0]
        for j in range(P):
            if t == 1:
                acc = a0[pa[j]]
            else:
                acc = 0.0
                q0 = pred_ptr[j]
                n = pred_ptr[j + 1] - q0
                p0 = pred_j[q0] if n > 0 else 0
                if hasT:
                    for d in range(n):
                        acc += prev[p0 + d] * F[q0 + d]
                else:
                    for d in range(n):
                        acc += prev[p0 + d]
            acc *= eU[t, pb[j]]
            if hasB:
                acc *= Ps[pairs[j]]
            cur[j] = acc
            c += acc
        if not c > 0.0:
            return NEG_INF
        scale[t] = c
        for j in range(P):
            alpha[t, j] /= c
    for t in range(T):
        logz += np.log(scale[t])
    # backward
    if T == 1:
        for y in range(L):
            b0[y] = 1.0
        return logz
    for j in range(P):
        beta[T - 1, j] = 1.0
    for t in range(T - 1, 1, -1):
        _into_pair(t, pairs, pb, eU, beta, scale, psi, psi_of, hasB, tmp)
        for j in range(P):
            beta[t - 1, j] = 0.0
        if hasT:
            F = phi[phi_of[t]]
            if Pt is not None:
                row = Pt[rb] if u else Pt[rb + t]
                if not u:
                    for q in range(row.shape[0]):
                        row[q] = 0.0
                for j in range(P):
                    v = tmp[j]
                    q0 = pred_ptr[j]
                    n = pred_ptr[j + 1] - q0
                    if n == 0:
                        continue
                    p0 = pred_j[q0]
                    bt = beta[t - 1, p0: p0 + n]
                    at = alpha[t - 1, p0: p0 + n]
                    Fq = F[q0: q0 + n]
                    rq = row[q0: q0 + n]
                    for d in range(n):
                        w = Fq[d] * v
                        bt[d] += w
                        rq[d] += at[d] * w
            else:
                for j in range(P):
                    v = tmp[j]
                    q0 = pred_ptr[j]
                    n = pred_ptr[j + 1] - q0
                    if n == 0:
                        continue
                    bt = beta[t - 1, pred_j[q0]: pred_j[q0] + n]
                    Fq = F[q0: q0 + n]
                    for d in range(n):
                        bt[d] += Fq[d] * v
        else:
            for j in range(P):
                v = tmp[j]
                q0 = pred_ptr[j]
                n = pred_ptr[j + 1] - q0
                if n == 0:
                    continue
                bt = beta[t - 1, pred_j[q0]: pred_j[q0] + n]
                for d in range(n):
                    bt[d] += v
    _into_pair(1, pairs, pb, eU, beta, scale, psi, psi_of, hasB, tmp)
    for y in range(L):
        b0[y] = 0.0
    for j in range(P):
        b0[pa[j]] += tmp[j]
    return logz


@njit(cache=True, fastmath=FAST)
def gold_score2(theta, U, bbase, tbase, labels, s, e, L):
    """Score of the gold labelling (U: the sequence's unary scores, already computed)."""
    sc = 0.0
    for t in range(e - s):
        # gold_score's loop written out with the triples: a shared helper, inlined, lets
        # fastmath reassociate the sum in another order (the weights move in the last bits)
        y = labels[s + t]
        sc += U[t, y]
        if t > 0:
            k = labels[s + t - 1] * L + y
            for j in range(bbase.shape[1]):
                b = bbase[s + t, j]
                if b >= 0:
                    sc += theta[b + k]
        if t > 1:
            r = (labels[s + t - 2] * L + labels[s + t - 1]) * L + y
            for j in range(tbase.shape[1]):
                b = tbase[s + t, j]
                if b >= 0:
                    sc += theta[b + r]
    return sc


@njit(cache=True)
def tag_marginals(t, L, pb, alpha, beta, a0, b0, out):
    """out[y] = p(y_t = y | x) from the scaled recursions (pb: the pairs' second labels)."""
    if t == 0:
        for y in range(L):
            out[y] = a0[y] * b0[y]
        return
    for y in range(L):
        out[y] = 0.0
    for j in range(pb.shape[0]):
        out[pb[j]] += alpha[t, j] * beta[t, j]


@njit(cache=True)
def triple_of(pairs, pair_pos, pred_ptr, pred_j, L, a, b, c):
    """The entry q of the triple (a, b, c) in the transition lists, or -1 if a pair is not allowed."""
    j = pair_pos[b * L + c]
    if j < 0:
        return -1
    k = a * L + b
    for q in range(pred_ptr[j], pred_ptr[j + 1]):
        if pairs[pred_j[q]] == k:
            return q
    return -1


@njit(cache=True)
def rows2(seq_offsets, bbase, tbase, uniform, brow_start):
    """As ``_gradient_kernels.bigram_rows`` for both bigram (t >= 1) and trigram (t >= 2)
    rows: uniform[i] when every such row of sequence i is the same as the one before."""
    nb = bbase.shape[1]
    nt = tbase.shape[1]
    brow_start[0] = 0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        has = (nb > 0 or nt > 0) and T > 1
        u = has
        if u:
            for t in range(2, T):
                if not same_bigram_row(bbase, s + t, s + t - 1):
                    u = False
                    break
                if t > 2 and not same_bigram_row(tbase, s + t, s + t - 1):
                    u = False
                    break
        uniform[i] = u
        n = 0
        if has:
            n = 1 if u else T
        brow_start[i + 1] = brow_start[i] + n


@njit(cache=True)
def occurrence_counts2(seq_offsets, ubase, bbase, tbase, uniform, L, bstart, tstart, n_uobs, n_bobs, uptr, occ_ptr):
    """occ_ptr (n_uobs + n_bobs + n_tobs + 1,): cumulative occurrence counts of the
    observations (a uniform sequence's bigram and trigram rows count once)."""
    L2 = L * L
    L3 = L2 * L
    for o in range(occ_ptr.shape[0]):
        occ_ptr[o] = 0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        for t in range(s, e):
            for j in range(ubase.shape[1]):
                b = ubase[t, j]
                if b >= 0:
                    occ_ptr[unigram_rank(b, L, uptr) + 1] += 1
        last = s + 2 if uniform[i] else e
        for t in range(s + 1, min(last, e)):
            for j in range(bbase.shape[1]):
                b = bbase[t, j]
                if b >= 0:
                    occ_ptr[n_uobs + (b - bstart) // L2 + 1] += 1
        last = s + 3 if uniform[i] else e
        for t in range(s + 2, min(last, e)):
            for j in range(tbase.shape[1]):
                b = tbase[t, j]
                if b >= 0:
                    occ_ptr[n_uobs + n_bobs + (b - tstart) // L3 + 1] += 1
    for o in range(1, occ_ptr.shape[0]):
        occ_ptr[o] += occ_ptr[o - 1]


@njit(cache=True, fastmath=FAST)
def _sequence_rows2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pair_pos, pred_ptr,
                    pred_j, pred_r, uniform, brow_start, i, tok0, brow0, ws, Pu, Pb, Pt, seq_loss, seq_err):
    """Phase 1 for sequence i: its loss, posterior-decoding errors and gradient rows (tag
    marginals, pair marginals over L*L, triple marginals over the transition lists)."""
    U, eU, alpha, beta, a0, b0, scale, tmp, psi, psi_of, phi, phi_of, pa, pb = ws
    s = seq_offsets[i]
    e = seq_offsets[i + 1]
    T = e - s
    if T <= 0:
        seq_loss[i] = 0.0
        seq_err[i] = 0
        return
    hasB = bbase.shape[1] > 0
    hasT = tbase.shape[1] > 0
    has_rows = brow_start[i + 1] > brow_start[i]
    rb = brow_start[i] - brow0
    u = uniform[i]
    if hasT and has_rows and u:
        for q in range(Pt.shape[1]):
            Pt[rb, q] = 0.0
    if hasT and has_rows:  # the triple marginals are made in the backward pass
        logz = forward_backward2(theta, ubase, uval, ustates, bbase, tbase, s, e, L, pairs, pred_ptr, pred_j, pred_r,
                                 ws, Pt, rb, u)
    else:
        logz = forward_backward2(theta, ubase, uval, ustates, bbase, tbase, s, e, L, pairs, pred_ptr, pred_j, pred_r,
                                 ws)
    seq_loss[i] = logz - gold_score2(theta, U, bbase, tbase, labels, s, e, L)
    errs = 0
    for t in range(T):
        r = s + t - tok0
        row = Pu[r]
        tag_marginals(t, L, pb, alpha, beta, a0, b0, row)
        best = 0
        for y in range(1, L):
            if row[y] > row[best]:
                best = y
        yg = labels[s + t]
        if best != yg:
            errs += 1
        row[yg] -= 1.0
    seq_err[i] = errs
    if not has_rows:
        return
    if u and hasB:
        for k in range(Pb.shape[1]):
            Pb[rb, k] = 0.0
    for t in range(1, T):
        r = rb if u else rb + t
        if hasB:
            if not u:
                for k in range(Pb.shape[1]):
                    Pb[r, k] = 0.0
            for j in range(pairs.shape[0]):
                Pb[r, pairs[j]] += alpha[t, j] * beta[t, j]
            Pb[r, labels[s + t - 1] * L + labels[s + t]] -= 1.0
        if hasT and t > 1:
            q = triple_of(pairs, pair_pos, pred_ptr, pred_j, L, labels[s + t - 2], labels[s + t - 1], labels[s + t])
            Pt[r, q] -= 1.0


@njit(cache=True, fastmath=FAST)
def _scatter2(ubase, uval, ustates, bbase, tbase, seq_offsets, uniform, brow_start, L, bstart, tstart, n_uobs, n_bobs,
              uptr, pred_r, o0, o1, s0, s1, tok0, brow0, Pu, Pb, Pt, g):
    """Phase 2 for the observations o0..o1-1 (unigram ids, then n_uobs + bigram ids, then
    n_uobs + n_bobs + trigram ids) and the sequences s0..s1-1 of the batch."""
    L3 = L * L * L
    n_bt = n_uobs + n_bobs
    if o0 < n_bt:
        scatter(ubase, uval, ustates, bbase, seq_offsets, uniform, brow_start, L, bstart, n_uobs, uptr, o0,
                min(o1, n_bt), s0, s1, tok0, brow0, Pu, Pb, g)
    lo = tstart + max(o0 - n_bt, 0) * L3
    hi = tstart + (o1 - n_bt) * L3
    if lo < hi and tbase.shape[1] > 0:
        for i in range(s0, s1):
            if brow_start[i + 1] == brow_start[i]:
                continue
            s = seq_offsets[i]
            e = seq_offsets[i + 1]
            last = min(s + 3, e) if uniform[i] else e
            for t in range(s + 2, last):
                r = brow_start[i] - brow0 + (0 if uniform[i] else t - s)
                for j in range(tbase.shape[1]):
                    b = tbase[t, j]
                    if b >= lo and b < hi:
                        for q in range(pred_r.shape[0]):
                            g[b + pred_r[q]] += Pt[r, q]


@njit(cache=True, parallel=True, fastmath=FAST)
def loss_gradient2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pair_pos, pred_ptr, pred_j,
                   pred_r, bstart, tstart, uniform, brow_start, batches, n_groups, units, n_uobs, n_bobs, uptr, Pu, Pb,
                   Pt, seq_loss, seq_err, g):
    """Negative log-likelihood (returned) and its gradient, written into g, in the two
    phases of ``_gradient_kernels.loss_gradient`` (the same bits for any thread count):
    Pu (>= batch tokens, L), Pb (>= batch rows, L*L or 1), Pt (>= batch rows, n3 or 1)."""
    n3 = pred_r.shape[0]
    nb = bbase.shape[1]
    nt = tbase.shape[1]
    n_units = units.shape[0] - 1
    for u in prange(n_units):
        zero_blocks(g, units[u], units[u + 1], n_uobs, n_bobs, L, bstart, tstart, uptr)
    for bi in range(batches.shape[0] - 1):
        s0 = batches[bi]
        s1 = batches[bi + 1]
        tok0 = seq_offsets[s0]
        brow0 = brow_start[s0]
        ns = s1 - s0
        ng = min(n_groups, ns)
        for gi in prange(ng):
            a, b, maxT = group_bounds(s0, ns, ng, gi, seq_offsets)
            ws = workspace2(maxT, L, pairs, n3, nb, nt)
            for i in range(a, b):
                _sequence_rows2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pair_pos,
                                pred_ptr, pred_j, pred_r, uniform, brow_start, i, tok0, brow0, ws, Pu, Pb, Pt, seq_loss,
                                seq_err)
        for u in prange(n_units):
            _scatter2(ubase, uval, ustates, bbase, tbase, seq_offsets, uniform, brow_start, L, bstart, tstart, n_uobs,
                      n_bobs, uptr, pred_r, units[u], units[u + 1], s0, s1, tok0, brow0, Pu, Pb, Pt, g)
    loss = 0.0
    for i in range(seq_loss.shape[0]):
        loss += seq_loss[i]
    return loss


@njit(cache=True, parallel=True)
def marginals2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, L, pairs, pred_ptr, pred_j, pred_r, out, logz):
    """Label marginals out[i, y] = p(y_i = y | x) (float64 (n_tokens, L)); logz (n_seq,)
    (-inf, and rows of zeros, for a sequence no allowed labelling fits)."""
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        if T == 0:
            logz[i] = 0.0
            continue
        ws = workspace2(T, L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
        U, eU, alpha, beta, a0, b0, scale, tmp, psi, psi_of, phi, phi_of, pa, pb = ws
        logz[i] = forward_backward2(theta, ubase, uval, ustates, bbase, tbase, s, s + T, L, pairs, pred_ptr, pred_j,
                                    pred_r, ws)
        for t in range(T):
            if logz[i] == NEG_INF:
                for y in range(L):
                    out[s + t, y] = 0.0
            else:
                tag_marginals(t, L, pb, alpha, beta, a0, b0, out[s + t])


@njit(cache=True, parallel=True)
def pair_marginals2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, L, pairs, pred_ptr, pred_j, pred_r, out):
    """Label-pair marginals out[i, y' L + y] = p(y_{i-1} = y', y_i = y | x) (float64
    (n_tokens, L*L); rows of the first tokens zero)."""
    P = pairs.shape[0]
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        for t in range(T):
            for k in range(out.shape[1]):
                out[s + t, k] = 0.0
        if T < 2:
            continue
        ws = workspace2(T, L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
        alpha = ws[2]
        beta = ws[3]
        lz = forward_backward2(theta, ubase, uval, ustates, bbase, tbase, s, s + T, L, pairs, pred_ptr, pred_j, pred_r,
                               ws)
        if lz == NEG_INF:
            continue
        for t in range(1, T):
            for j in range(P):
                out[s + t, pairs[j]] = alpha[t, j] * beta[t, j]


@njit(cache=True)
def viterbi_sequence2(theta, ubase, uval, ustates, bbase, tbase, forced, s, e, L, pairs, pred_ptr, pred_j, pred_r, U,
                      delta, back, W, X, out, o):
    """Best labels of tokens s..e-1 over the allowed pairs into out[o:o+e-s]; returns the
    score (-inf: no labelling agrees with ``forced`` and the allowed pairs). Work space:
    U (>= T, L), delta float64 / back int64 (>= T, P), W (L*L or 1), X (n3 or 1)."""
    T = e - s
    if T <= 0:
        return 0.0
    P = pairs.shape[0]
    hasB = bbase.shape[1] > 0
    hasT = tbase.shape[1] > 0
    L2 = L * L
    unary_scores(theta, ubase, uval, ustates, s, e, L, U)
    restrict_to_forced(U, forced, s, T, L)
    if T == 1:
        bv = NEG_INF
        ba = 0
        for y in range(L):
            if U[0, y] > bv:
                bv = U[0, y]
                ba = y
        out[o] = ba
        return bv
    for t in range(1, T):
        if hasB and (t == 1 or not same_bigram_row(bbase, s + t, s + t - 1)):
            transition_scores(theta, bbase, s + t, L2, W)
        if hasT and t > 1 and (t == 2 or not same_bigram_row(tbase, s + t, s + t - 1)):
            trigram_scores(theta, tbase, s + t, pred_r, X)
        for j in range(P):
            k = pairs[j]
            if t == 1:
                bv = U[0, k // L]
                ba = 0
            else:
                bv = NEG_INF
                ba = pred_j[pred_ptr[j]] if pred_ptr[j + 1] > pred_ptr[j] else 0
                for q in range(pred_ptr[j], pred_ptr[j + 1]):
                    v = delta[t - 1, pred_j[q]]
                    if hasT:
                        v += X[q]
                    if v > bv:
                        bv = v
                        ba = pred_j[q]
            v = bv + U[t, k % L]
            if hasB:
                v += W[k]
            delta[t, j] = v
            back[t, j] = ba
    bv = NEG_INF
    ba = 0
    for j in range(P):
        if delta[T - 1, j] > bv:
            bv = delta[T - 1, j]
            ba = j
    out[o + T - 1] = pairs[ba] % L
    out[o + T - 2] = pairs[ba] // L
    for t in range(T - 1, 1, -1):
        ba = back[t, ba]
        out[o + t - 2] = pairs[ba] // L
    return bv


@njit(cache=True, parallel=True)
def viterbi2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, forced, L, pairs, pred_ptr, pred_j, pred_r, out,
             best):
    """Most probable label sequences over the allowed pairs: out int64 (n_tokens,), best (n_seq,)."""
    P = max(pairs.shape[0], 1)
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        best[i] = viterbi_sequence2(theta, ubase, uval, ustates, bbase, tbase, forced, s, s + T, L, pairs, pred_ptr,
                                    pred_j, pred_r, np.empty((T, L)), np.empty((T, P)),
                                    np.zeros((T, P), dtype=np.int64), np.empty(L * L if bbase.shape[1] > 0 else 1),
                                    np.empty(pred_r.shape[0] if tbase.shape[1] > 0 else 1), out, s)


@njit(cache=True)
def nbest_sequence2(theta, ubase, uval, ustates, bbase, tbase, forced, s, e, L, pairs, pred_ptr, pred_j, pred_r, N, out,
                    scores):
    """The N best labelings of tokens s..e-1 over the allowed pairs (list Viterbi on the
    pair states): out[s:e, n], scores[n] (-inf where fewer exist)."""
    T = e - s
    if T <= 0:
        return
    P = pairs.shape[0]
    hasB = bbase.shape[1] > 0
    hasT = tbase.shape[1] > 0
    L2 = L * L
    U = np.empty((T, L))
    unary_scores(theta, ubase, uval, ustates, s, e, L, U)
    restrict_to_forced(U, forced, s, T, L)
    if T == 1:
        order = np.argsort(-U[0], kind="mergesort")
        for n in range(N):
            if n < L:
                scores[n] = U[0, order[n]]
                out[s, n] = order[n]
        return
    delta = np.full((T, max(P, 1), N), NEG_INF)
    bstate = np.zeros((T, max(P, 1), N), dtype=np.int64)
    brank = np.zeros((T, max(P, 1), N), dtype=np.int64)
    W = np.empty(L2 if hasB else 1)
    X = np.empty(pred_r.shape[0] if hasT else 1)
    cand = np.empty(max(L, P, 1) * N)
    for t in range(1, T):
        if hasB and (t == 1 or not same_bigram_row(bbase, s + t, s + t - 1)):
            transition_scores(theta, bbase, s + t, L2, W)
        if hasT and t > 1 and (t == 2 or not same_bigram_row(tbase, s + t, s + t - 1)):
            trigram_scores(theta, tbase, s + t, pred_r, X)
        for j in range(P):
            k = pairs[j]
            add = U[t, k % L] + (W[k] if hasB else 0.0)
            if t == 1:
                delta[1, j, 0] = U[0, k // L] + add
                continue
            q0 = pred_ptr[j]
            nq = pred_ptr[j + 1] - q0
            if nq == 0:
                continue
            for q in range(nq):
                x = X[q0 + q] if hasT else 0.0
                for r in range(N):
                    cand[q * N + r] = delta[t - 1, pred_j[q0 + q], r] + x
            order = np.argsort(-cand[: nq * N], kind="mergesort")
            for r in range(min(N, nq * N)):
                c = order[r]
                delta[t, j, r] = cand[c] + add
                bstate[t, j, r] = pred_j[q0 + c // N]
                brank[t, j, r] = c % N
    for j in range(P):
        for r in range(N):
            cand[j * N + r] = delta[T - 1, j, r]
    order = np.argsort(-cand[: P * N], kind="mergesort")
    for n in range(min(N, P * N)):
        c = order[n]
        scores[n] = cand[c]
        j = c // N
        r = c % N
        out[e - 1, n] = pairs[j] % L
        out[e - 2, n] = pairs[j] // L
        for t in range(T - 1, 1, -1):
            j2 = bstate[t, j, r]
            r = brank[t, j, r]
            j = j2
            out[s + t - 2, n] = pairs[j] // L


@njit(cache=True, parallel=True)
def nbest_viterbi2(theta, seq_offsets, ubase, uval, ustates, bbase, tbase, forced, L, pairs, pred_ptr, pred_j, pred_r,
                   N, out, scores):
    """The N best label sequences over the allowed pairs: out int64 (n_tokens, N), scores (n_seq, N)."""
    for i in prange(len(seq_offsets) - 1):
        nbest_sequence2(theta, ubase, uval, ustates, bbase, tbase, forced, seq_offsets[i], seq_offsets[i + 1], L, pairs,
                        pred_ptr, pred_j, pred_r, N, out, scores[i])
