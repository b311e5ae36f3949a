"""numba kernels of the per-sequence CRF solvers (SGD-l1, SAG / SAG-NUS*, perceptron).

They reuse the forward-backward of :mod:`crf._inference_kernels` (dense
recursion: the weights change at every step, so the sparse pattern of M would
have to be rebuilt every time) on one sequence at a time.  Arrays, as in
``crf.features.EncodedCorpus``:

    w            float64 (n_params,) weights, read by the kernels as theta
    seq_offsets  int64 (n_seq + 1,)
    ubase        int64 (n_tokens, n_unigram_patterns)   theta offset of (., x) or -1
    bbase        int64 (n_tokens, n_bigram_patterns)    theta offset of (., ., x) or -1
    labels       int64 (n_tokens,) gold label ids

and the *blocks* of every sequence (:func:`sequence_blocks`): the sorted distinct
block offsets it touches, CSR ``blk_ptr`` int64 (n_seq + 1,), ``blocks`` int64;
a block at offset b < bstart is a unigram block (L weights), otherwise a bigram
block (L*L weights).  Only these weights are read or written for the sequence.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from .. import _inference_kernels as K


def check_training_data(data) -> int:
    """Number of sequences of an EncodedCorpus fit for training (ValueError otherwise)."""
    n = data.n_sequences
    if n == 0:
        raise ValueError("no training sequence")
    if (data.labels < 0).any():
        raise ValueError("training data has tokens without a known label")
    return n


# --------------------------------------------------------------------------- blocks
@njit(cache=True)
def sequence_blocks(seq_offsets, ubase, bbase):
    """(blk_ptr, blocks): sorted distinct block offsets of every sequence (see module doc).

    Bigram blocks of a sequence's first token are ignored (no previous label there).
    """
    n_seq = len(seq_offsets) - 1
    nu = ubase.shape[1]
    nb = bbase.shape[1]
    out = np.empty(seq_offsets[-1] * (nu + nb), dtype=np.int64)
    ptr = np.zeros(n_seq + 1, dtype=np.int64)
    n = 0
    for i in range(n_seq):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        tmp = np.empty((e - s) * (nu + nb), dtype=np.int64)
        c = 0
        for t in range(s, e):
            for j in range(nu):
                if ubase[t, j] >= 0:
                    tmp[c] = ubase[t, j]
                    c += 1
            if t > s:
                for j in range(nb):
                    if bbase[t, j] >= 0:
                        tmp[c] = bbase[t, j]
                        c += 1
        srt = np.sort(tmp[:c])
        for q in range(c):
            if q == 0 or srt[q] != srt[q - 1]:
                out[n] = srt[q]
                n += 1
        ptr[i + 1] = n
    return ptr, out[:n].copy()


@njit(cache=True)
def _block_size(b, bstart, L):
    return L * L if b >= bstart else L


@njit(cache=True)
def _find(blocks, lo, hi, b):
    """Index of b in the sorted blocks[lo:hi] (b must be there)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if blocks[mid] < b:
            lo = mid + 1
        else:
            hi = mid
    return lo


# --------------------------------------------------------------------------- one sequence
@njit(cache=True)
def _workspace(maxT, L):
    L2 = L * L
    return (np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)),
            np.empty(maxT), np.empty(L), np.empty((maxT, L2)), np.empty(maxT, dtype=np.int64),
            np.empty(1), np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64),
            np.empty(1, dtype=np.int64), np.empty(1))


@njit(cache=True)
def _forward_backward(w, ubase, bbase, s, e, L, ws):
    """The core's scaled forward-backward (dense recursion) on [s, e); returns log Z.

    The solvers change w between sequences, so the transition matrix cached in
    psi[0] from an earlier call is never reused (psi_of[0] = -1).
    """
    U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val = ws
    psi_of[0] = -1
    return K._forward_backward(w, ubase, bbase, s, e, L, False, 0, m_ptr, m_idx, U, eU, alpha,
                               beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val)


@njit(cache=True)
def _loss(w, ubase, bbase, labels, s, e, L, ws):
    """-log p(y|x) of sequence [s, e)."""
    logz = _forward_backward(w, ubase, bbase, s, e, L, ws)
    return logz - K._gold_score(w, ws[0], bbase, labels, s, e, L)


@njit(cache=True)
def _pairwise(t, L, ws, pp):
    """pp[y'L + y] = p(y_{t-1} = y', y_t = y | x) after _forward_backward (t >= 1)."""
    U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val = ws
    for y in range(L):
        tmp[y] = eU[t, y] * beta[t, y] / scale[t]
    P = psi[psi_of[t]]
    for yp in range(L):
        a = alpha[t - 1, yp]
        r = yp * L
        for y in range(L):
            pp[r + y] = a * P[r + y] * tmp[y]


@njit(cache=True)
def _add_gradient(ubase, bbase, labels, s, e, L, ws, pp, g):
    """g += gradient of -log p(y|x) (model expectations - gold counts), after _forward_backward."""
    alpha = ws[2]
    beta = ws[3]
    L2 = L * L
    for t in range(e - s):
        yg = labels[s + t]
        for j in range(ubase.shape[1]):
            b = ubase[s + t, j]
            if b >= 0:
                for y in range(L):
                    g[b + y] += alpha[t, y] * beta[t, y]
                g[b + yg] -= 1.0
        if t > 0:
            _pairwise(t, L, ws, pp)
            kg = labels[s + t - 1] * L + yg
            for j in range(bbase.shape[1]):
                b = bbase[s + t, j]
                if b >= 0:
                    for k in range(L2):
                        g[b + k] += pp[k]
                    g[b + kg] -= 1.0


# --------------------------------------------------------------------------- SGD-l1
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
def sgd_l1_epoch(w, q, lastc, g, order, etas, seq_offsets, ubase, bbase, labels, blk_ptr, blocks,
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
    maxT = 1
    for i in range(len(seq_offsets) - 1):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    ws = _workspace(maxT, L)
    pp = np.empty(L * L)
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
                    for j in range(b, b + _block_size(b, bstart, L)):
                        w[j] *= f
        total += _loss(w, ubase, bbase, labels, s, e, L, ws)
        _add_gradient(ubase, bbase, labels, s, e, L, ws, pp, g)
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + _block_size(b, bstart, L)):
                w[j] -= eta * g[j]
                g[j] = 0.0
                if rho1_n > 0.0:
                    _clip(w, q, j, u)
    if rho2_n > 0.0:
        b = 0
        while b < w.shape[0]:
            size = _block_size(b, bstart, L)
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


# --------------------------------------------------------------------------- SAG
@njit(cache=True)
def sag_init_store(seq_offsets, bbase, labels, blk_ptr, blocks, L, bstart, mu, pair_first, pair):
    """Stored marginals initialised to the gold one-hot labels (so that g_i = 0 before
    sequence i is first visited: g_i = E_stored - gold counts).

    mu: float64 (n_tokens, L) unary marginals; pair: float64 (n_pair_rows, L*L) pairwise
    marginals summed over the positions of a sequence where the same bigram block is
    active (what the gradient of that block needs); pair_first int64 (n_seq + 1,) first
    row of each sequence (its bigram blocks in sorted order).
    """
    mu[:] = 0.0
    pair[:] = 0.0
    for i in range(len(seq_offsets) - 1):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        lo = blk_ptr[i + 1] - (pair_first[i + 1] - pair_first[i])
        for t in range(s, e):
            mu[t, labels[t]] = 1.0
            if t > s:
                kg = labels[t - 1] * L + labels[t]
                for j in range(bbase.shape[1]):
                    b = bbase[t, j]
                    if b >= 0:
                        r = pair_first[i] + _find(blocks, lo, blk_ptr[i + 1], b) - lo
                        pair[r, kg] += 1.0


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
def sag_pass(w, d, last, A, Sacc, g, wsave, seq_offsets, ubase, bbase, labels, blk_ptr, blocks, L,
             bstart, lam, mu, pair_first, pair, pscratch, f_store, visited, tsum, size, nus, state,
             counts):
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
    """
    n = len(seq_offsets) - 1
    maxT = 1
    for i in range(n):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    ws = _workspace(maxT, L)
    alpha = ws[2]
    beta = ws[3]
    L2 = L * L
    pp = np.empty(L2)
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
            for j in range(b, b + _block_size(b, bstart, L)):
                lj = last[j]
                if lj != k:
                    w[j] = (Ak / A[lj]) * w[j] - d[j] * Ak * (Sk - Sacc[lj])
                    last[j] = k
        fi = _loss(w, ubase, bbase, labels, s, e, L, ws)
        counts[0] += 1
        f_store[i] = fi
        if visited[i] == 0:
            if nus:
                _tree_update(tsum, size, i, tsum[1] / m if m > 0 else 1.0)
            visited[i] = 1
            m += 1.0
        # d += g_new - g_old = E_new - E_old; g = g_new = E_new - gold
        for t in range(e - s):
            yg = labels[s + t]
            for y in range(L):
                p = alpha[t, y] * beta[t, y]
                diff = p - mu[s + t, y]
                mu[s + t, y] = p
                for j in range(ubase.shape[1]):
                    b = ubase[s + t, j]
                    if b >= 0:
                        d[b + y] += diff
                        g[b + y] += p
            for j in range(ubase.shape[1]):
                b = ubase[s + t, j]
                if b >= 0:
                    g[b + yg] -= 1.0
        pf = pair_first[i]
        npair = pair_first[i + 1] - pf
        plo = hi - npair
        pscratch[:npair] = 0.0
        for t in range(1, e - s):
            _pairwise(t, L, ws, pp)
            kg = labels[s + t - 1] * L + labels[s + t]
            for j in range(bbase.shape[1]):
                b = bbase[s + t, j]
                if b >= 0:
                    r = _find(blocks, plo, hi, b) - plo
                    for kk in range(L2):
                        pscratch[r, kk] += pp[kk]
                        g[b + kk] += pp[kk]
                    g[b + kg] -= 1.0
        for r in range(npair):
            b = blocks[plo + r]
            for kk in range(L2):
                d[b + kk] += pscratch[r, kk] - pair[pf + r, kk]
                pair[pf + r, kk] = pscratch[r, kk]
        # line search on the Lipschitz constant of this sequence's gradient
        gg = 0.0
        c = 0
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + _block_size(b, bstart, L)):
                gg += g[j] * g[j]
                wsave[c] = w[j]
                c += 1
        Lcur = tsum[size + i] if nus else Lg
        if gg > 1e-8:
            for _ in range(60):
                for r in range(lo, hi):
                    b = blocks[r]
                    for j in range(b, b + _block_size(b, bstart, L)):
                        w[j] -= g[j] / Lcur
                f_new = _loss(w, ubase, bbase, labels, s, e, L, ws)
                counts[1] += 1
                c = 0
                for r in range(lo, hi):
                    b = blocks[r]
                    for j in range(b, b + _block_size(b, bstart, L)):
                        w[j] = wsave[c]
                        c += 1
                if f_new <= fi - gg / (2.0 * Lcur):
                    break
                Lcur *= 2.0
        for r in range(lo, hi):
            b = blocks[r]
            for j in range(b, b + _block_size(b, bstart, L)):
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


# --------------------------------------------------------------------------- perceptron
@njit(cache=True)
def _perceptron_add(w, wa, c, ubase, bbase, s, t, L, y, yprev, v):
    for j in range(ubase.shape[1]):
        b = ubase[s + t, j]
        if b >= 0:
            w[b + y] += v
            wa[b + y] += c * v
    if t > 0:
        k = yprev * L + y
        for j in range(bbase.shape[1]):
            b = bbase[s + t, j]
            if b >= 0:
                w[b + k] += v
                wa[b + k] += c * v


@njit(cache=True)
def perceptron_epoch(w, wa, order, seq_offsets, ubase, bbase, labels, L, c0):
    """One pass of the structured perceptron (Collins 2002) over ``order``.

    For sequence i (the c-th example seen, c = c0 + 1, c0 + 2, ...): Viterbi at w;
    if it differs from the gold labels, w += phi(x, y_gold) - phi(x, y_pred) and
    wa += c (phi_gold - phi_pred).  After N examples the averaged weights
    (1/N) sum_{c=1..N} w_c are ((N + 1) w - wa) / N.  Returns the number of
    sequences with an error.
    """
    maxT = 1
    for i in range(len(seq_offsets) - 1):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    U = np.empty((maxT, L))
    delta = np.empty((maxT, L))
    back = np.zeros((maxT, L), dtype=np.int64)
    W = np.empty(L * L)
    pred = np.empty(maxT, dtype=np.int64)
    mistakes = 0
    c = float(c0)
    for k in range(order.shape[0]):
        i = order[k]
        c += 1.0
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        K.viterbi_sequence(w, ubase, bbase, s, e, L, U, delta, back, W, pred, 0)
        wrong = False
        for t in range(e - s):
            if pred[t] != labels[s + t]:
                wrong = True
        if not wrong:
            continue
        mistakes += 1
        for t in range(e - s):
            yg = labels[s + t]
            yp = pred[t]
            gp = labels[s + t - 1] if t > 0 else 0
            pprev = pred[t - 1] if t > 0 else 0
            if yg != yp or (t > 0 and gp != pprev):
                _perceptron_add(w, wa, c, ubase, bbase, s, t, L, yg, gp, 1.0)
                _perceptron_add(w, wa, c, ubase, bbase, s, t, L, yp, pprev, -1.0)
    return mistakes


@njit(cache=True)
def total_loss(w, seq_offsets, ubase, bbase, labels, L):
    """sum_i -log p(y_i|x_i, w) over all sequences (sequential; for checks and benchmarks)."""
    maxT = 1
    for i in range(len(seq_offsets) - 1):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    ws = _workspace(maxT, L)
    tot = 0.0
    for i in range(len(seq_offsets) - 1):
        tot += _loss(w, ubase, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


# --------------------------------------------------------------------------- BCD
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
def _bcd_block_loss(w, seq_offsets, ubase, bbase, labels, seqs, L, ws):
    tot = 0.0
    for i in seqs:
        tot += _loss(w, ubase, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


@njit(cache=True)
def bcd_pass(w, order, obs_ptr, obs_seq, uoff, boff, seq_offsets, ubase, bbase, labels, L, rho1,
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
    maxT = 1
    for i in range(len(seq_offsets) - 1):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    ws = _workspace(maxT, L)
    alpha = ws[2]
    beta = ws[3]
    L2 = L * L
    pp = np.empty(L2)
    size = L + L2
    g = np.empty(size)
    h = np.empty(size)
    old = np.empty(size)
    changed = 0
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
            f_old += _loss(w, ubase, bbase, labels, s, e, L, ws)
            counts[0] += 1
            for t in range(e - s):
                if ub >= 0:
                    c = 0.0
                    for j in range(ubase.shape[1]):
                        if ubase[s + t, j] == ub:
                            c += 1.0
                    if c > 0.0:
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
                        _pairwise(t, L, ws, pp)
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
            f_new = _bcd_block_loss(w, seq_offsets, ubase, bbase, labels, seqs, L, ws)
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
