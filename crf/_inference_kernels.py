"""numba kernels for linear-chain CRF inference (Lavergne et al. 2010, section 4).

All kernels take a batch of sequences as flat arrays (see ``features.EncodedCorpus``):

    theta        float64 (n_params,)
    seq_offsets  int64 (n_seq + 1,)
    ubase        int64 (n_tokens, n_unigram_patterns)  theta offset of (., x) or -1
    uval         float64 (n_tokens, n_unigram_patterns) value of each unigram feature
                 (real-valued features: the feature is value * [y_t = y]), or an
                 empty (0, n_unigram_patterns) array: every value is 1
    bbase        int64 (n_tokens, n_bigram_patterns)   theta offset of (., ., x) or -1
    labels       int64 (n_tokens,)                     gold label ids (-1: none)
    ustates      int64 (n_unigram_weights,) or empty   seen states (``crf.features``): the
                 unigram weight k is label ustates[k] & STATE_LABEL of the block ending at
                 ustates[k] >> 32; empty: a unigram block at b holds labels 0..L-1 at b + y

Forward-backward uses scaling (section 4.2): alpha_t and beta_t are normalised at
every position and log Z = sum_t log c_t (plus the per-position maxima removed
from the unary scores before exponentiation, for range safety).

Two transition recursions:

* dense: Psi_t(y', y) = exp(sum_b theta[b + y'L + y]) for every pair;
* sparse (section 4.1): Psi_t = 1 + M_t with M_t = exp(lambda) - 1 non-zero only
  where some bigram weight active at t is non-zero, so
  alpha_t(y) = eU_t(y) (sum_y' alpha_{t-1}(y') + sum_{(y',y) in M_t} alpha_{t-1}(y') M_t(y', y)).
  The non-zero pattern of every bigram observation is given as CSR arrays
  ``nz_ptr`` (n_bigram_obs + 1,) / ``nz_idx`` (y'L + y entries).
"""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit, prange

#: the score of a labelling no path reaches (Viterbi, the pair states' log Z)
NEG_INF = -np.inf
#: the label bits of a seen-states entry (``crf.features.pack_states``: the block's end above them)
STATE_LABEL = np.int64((1 << 32) - 1)
# Re-association lets LLVM vectorise the sums of the recursions (no inf/nan
# assumptions: those stay exact IEEE).  Not used where -inf is a value (Viterbi).
FAST = {"reassoc", "contract", "nsz", "arcp"}


@njit(cache=True, fastmath=FAST)
def unary_scores(theta, ubase, uval, ustates, s, e, L, U):
    """U[t, y] = sum_j uval[s + t, j] theta[ubase[s + t, j] + y] for t < e - s (values 1
    when uval is empty; with seen states, the block's weights of the labels it has, see
    ``ustates`` in the module doc).  U: float64 (>= T, L)."""
    nu = ubase.shape[1]
    valued = uval.shape[0] > 0
    seen = ustates.shape[0] > 0
    for t in range(e - s):
        for y in range(L):
            U[t, y] = 0.0
        for j in range(nu):
            b = ubase[s + t, j]
            if b >= 0:
                v = uval[s + t, j] if valued else 1.0
                if seen:
                    for k in range(b, ustates[b] >> 32):
                        U[t, ustates[k] & STATE_LABEL] += v * theta[k]
                elif valued:
                    for y in range(L):
                        U[t, y] += v * theta[b + y]
                else:
                    for y in range(L):
                        U[t, y] += theta[b + y]


@njit(cache=True, fastmath=FAST)
def exp_unary(theta, ubase, uval, ustates, s, e, L, U, eU):
    """The unary scores U of tokens s..e-1 (:func:`unary_scores`) and eU[t, y] = exp(U[t, y] -
    max_y U[t, y]); returns the sum of the maxima removed (range safety of the scaled
    recursions)."""
    unary_scores(theta, ubase, uval, ustates, s, e, L, U)
    shift = 0.0
    for t in range(e - s):
        mx = U[t, 0]
        for y in range(1, L):
            if U[t, y] > mx:
                mx = U[t, y]
        shift += mx
        for y in range(L):
            eU[t, y] = np.exp(U[t, y] - mx)
    return shift


@njit(cache=True)
def value_row(uval, i, none):
    """The values of token i's unigram features: uval[i], or ``none`` (an empty float64
    array: every value 1) when uval is empty."""
    return uval[i] if uval.shape[0] > 0 else none


@njit(cache=True)
def pair_size(L, nb):
    """The length of the label-pair work rows (transition scores, pair marginals): L*L
    when there are bigram patterns (nb > 0), else 1 -- a model without bigram features
    never reads them, and L*L of 10,000 labels is 800 MB a row."""
    return L * L if nb > 0 else 1


@njit(cache=True)
def same_bigram_row(bbase, i, k):
    for j in range(bbase.shape[1]):
        if bbase[i, j] != bbase[k, j]:
            return False
    return True


@njit(cache=True, fastmath=FAST)
def transition_scores(theta, bbase, i, L2, W):
    """W[k] = sum_j theta[bbase[i, j] + k], k < L*L (log transition potentials at token i)."""
    for k in range(L2):
        W[k] = 0.0
    for j in range(bbase.shape[1]):
        b = bbase[i, j]
        if b >= 0:
            for k in range(L2):
                W[k] += theta[b + k]


@njit(cache=True, fastmath=FAST)
def dense_psi(theta, bbase, s, T, L, psi, psi_of):
    """psi[m] = exp(W) for the distinct transition rows; psi_of[t] = m (t >= 1).

    psi_of[0] (unused as an index: there is no transition into position 0) keeps
    the token whose row psi[0] holds, or -1: a sequence starting with that same
    row (e.g. the lone pure-transition pattern B) reuses psi[0] without new
    exponentials.  Callers set psi_of[0] = -1 whenever theta or psi are fresh.
    """
    L2 = L * L
    m = -1
    for t in range(1, T):
        m, fresh = row_slot(bbase, s, t, m, psi_of)
        if fresh:
            transition_scores(theta, bbase, s + t, L2, psi[m])
            for k in range(L2):
                psi[m, k] = np.exp(psi[m, k])


@njit(cache=True)
def row_slot(base, s, t, m, of):
    """The slot of position t's row of ``base`` (bigram or trigram bases) among the
    distinct rows of sequence s built so far (m: the last slot, -1 before the first):
    (the slot, whether it is new and must be built). A row equal to the previous
    position's reuses its slot; the first row reuses slot 0 when of[0] (the token whose
    row slot 0 holds, or -1) has the same row. Sets of[t], and of[0] for a new slot 0."""
    if m >= 0 and same_bigram_row(base, s + t, s + t - 1):
        of[t] = m
        return m, False
    if m < 0 and of[0] >= 0 and same_bigram_row(base, s + t, of[0]):
        of[t] = 0
        return 0, False
    m += 1
    if m == 0:
        of[0] = s + t
    of[t] = m
    return m, True


@njit(cache=True)
def _sparse_m(theta, bbase, s, T, L, bstart, nz_ptr, nz_idx, S, mark, m_ptr, m_idx, m_val):
    """Sparse M_t = exp(sum of active bigram weights) - 1 on the union of non-zeros (t >= 1)."""
    L2 = L * L
    n = 0
    m_ptr[0] = 0
    m_ptr[1] = 0
    for t in range(1, T):
        start = n
        for j in range(bbase.shape[1]):
            b = bbase[s + t, j]
            if b < 0:
                continue
            o = (b - bstart) // L2
            for q in range(nz_ptr[o], nz_ptr[o + 1]):
                k = nz_idx[q]
                if mark[k] != s + t:
                    mark[k] = s + t
                    S[k] = 0.0
                    m_idx[n] = k
                    n += 1
                S[k] += theta[b + k]
        for q in range(start, n):
            m_val[q] = np.expm1(S[m_idx[q]])
        m_ptr[t + 1] = n


@njit(cache=True, fastmath=FAST)
def row_sum(a, t, L):
    """sum_y a[t, y], y < L, in a loop that only reads (its rounding does not depend on
    where a lies)."""
    c = 0.0
    for y in range(L):
        c += a[t, y]
    return c


@njit(cache=True, fastmath=FAST)
def forward_backward(theta, ubase, uval, ustates, bbase, s, e, L, sparse, bstart, nz_ptr, nz_idx,
                     U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val):
    """Scaled forward-backward on sequence [s, e); returns log Z.

    On return alpha[t] * beta[t] is the marginal of position t, and the pairwise
    marginal is alpha[t-1, y'] Psi_t(y', y) eU[t, y] beta[t, y] / scale[t].
    Without bigram patterns (bbase has no column) Psi_t = 1: the recursions take O(L)
    a position and never touch the transition arrays (``fb_workspace`` makes them tiny).
    """
    T = e - s
    trans = bbase.shape[1] > 0
    logz = exp_unary(theta, ubase, uval, ustates, s, e, L, U, eU)
    if not trans:
        pass
    elif sparse:
        _sparse_m(theta, bbase, s, T, L, bstart, nz_ptr, nz_idx, S, mark, m_ptr, m_idx, m_val)
    else:
        dense_psi(theta, bbase, s, T, L, psi, psi_of)
    # forward
    # Each sum is a loop that only reads (here and below): a loop that also stores is
    # vectorised only when LLVM's run-time check finds the arrays far enough apart, and
    # the vector and scalar sums round differently -- the marginals would then depend on
    # where the allocator put the work arrays.
    for y in range(L):
        alpha[0, y] = eU[0, y]
    c = row_sum(alpha, 0, L)
    scale[0] = c
    for y in range(L):
        alpha[0, y] /= c
    for t in range(1, T):
        if sparse or not trans:
            tot = 0.0
            for yp in range(L):
                tot += alpha[t - 1, yp]
            for y in range(L):
                tmp[y] = tot
            if trans:
                for q in range(m_ptr[t], m_ptr[t + 1]):
                    k = m_idx[q]
                    tmp[k % L] += alpha[t - 1, k // L] * m_val[q]
        else:
            P = psi[psi_of[t]]
            for y in range(L):
                tmp[y] = 0.0
            for yp in range(L):
                a = alpha[t - 1, yp]
                r = yp * L
                for y in range(L):
                    tmp[y] += a * P[r + y]
        for y in range(L):
            alpha[t, y] = eU[t, y] * tmp[y]
        c = row_sum(alpha, t, L)
        scale[t] = c
        for y in range(L):
            alpha[t, y] /= c
    for t in range(T):
        logz += np.log(scale[t])
    # backward
    for y in range(L):
        beta[T - 1, y] = 1.0
    for t in range(T - 1, 0, -1):
        for y in range(L):
            tmp[y] = eU[t, y] * beta[t, y] / scale[t]
        if sparse or not trans:
            tot = 0.0
            for y in range(L):
                tot += tmp[y]
            for yp in range(L):
                beta[t - 1, yp] = tot
            if trans:
                for q in range(m_ptr[t], m_ptr[t + 1]):
                    k = m_idx[q]
                    beta[t - 1, k // L] += m_val[q] * tmp[k % L]
        else:
            P = psi[psi_of[t]]
            for yp in range(L):
                acc = 0.0
                r = yp * L
                for y in range(L):
                    acc += P[r + y] * tmp[y]
                beta[t - 1, yp] = acc
    return logz


@njit(cache=True, fastmath=FAST)
def gold_score(theta, U, bbase, labels, s, e, L):
    """Score of the gold labelling; U: the unary scores of the sequence (already computed)."""
    sc = 0.0
    for t in range(e - s):
        y = labels[s + t]
        sc += U[t, y]
        if t > 0:
            k = labels[s + t - 1] * L + y
            for j in range(bbase.shape[1]):
                b = bbase[s + t, j]
                if b >= 0:
                    sc += theta[b + k]
    return sc


@njit(cache=True, fastmath=FAST)
def pair_marginals(t, L, eU, alpha, beta, scale, P, tmp, pp, add=False):
    """pp[y'L + y] = p(y_{t-1} = y', y_t = y | x) at t >= 1 from the scaled recursions and
    the dense transition matrix P (float64 (L*L,)) of token t; tmp: float64 (L,) work.
    P None: the factor alpha[t-1, y'] * v_t[y] alone, written, or added when ``add``
    (the sparse recursion and the one-matrix shortcut apply the transitions later);
    numba compiles the None case apart, so the branch costs nothing."""
    for y in range(L):
        tmp[y] = eU[t, y] * beta[t, y] / scale[t]
    for yp in range(L):
        a = alpha[t - 1, yp]
        r = yp * L
        if P is not None:
            for y in range(L):
                pp[r + y] = a * P[r + y] * tmp[y]
        elif add:
            for y in range(L):
                pp[r + y] += a * tmp[y]
        else:
            for y in range(L):
                pp[r + y] = a * tmp[y]


@njit(cache=True, fastmath=FAST, inline="always")
def sparse_pair_marginals(t, L, eU, alpha, beta, scale, m_ptr, m_idx, m_val, tmp, pp):
    """:func:`pair_marginals` into pp at t >= 1 after the sparse recursion (Psi_t = 1 + M_t):
    the factor of the 1, then M_t's non-zeros (m_ptr, m_idx, m_val of ``_sparse_m``) added."""
    pair_marginals(t, L, eU, alpha, beta, scale, None, tmp, pp, False)
    for q in range(m_ptr[t], m_ptr[t + 1]):
        k = m_idx[q]
        pp[k] += alpha[t - 1, k // L] * m_val[q] * tmp[k % L]


@njit(cache=True, fastmath=FAST)
def add_expectation(g, bases, vals, p, gold):
    """g[b + k] += v p[k] and g[b + gold] -= v for every feature block b >= 0 in bases (one
    token's row of unigram or bigram bases) with its value v (vals, the same row of values,
    or empty: v = 1): model expectation minus gold count."""
    valued = vals.shape[0] > 0
    for j in range(bases.shape[0]):
        b = bases[j]
        if b >= 0:
            if valued:
                v = vals[j]
                for k in range(p.shape[0]):
                    g[b + k] += v * p[k]
                g[b + gold] -= v
            else:
                for k in range(p.shape[0]):
                    g[b + k] += p[k]
                g[b + gold] -= 1.0


@njit(cache=True, fastmath=FAST)
def add_unigram_expectation(g, bases, vals, ustates, p, gold):
    """:func:`add_expectation` for one token's unigram blocks (p: its label marginals),
    seen states included (a block adds p of the labels it has)."""
    if ustates.shape[0] == 0:
        add_expectation(g, bases, vals, p, gold)
        return
    valued = vals.shape[0] > 0
    for j in range(bases.shape[0]):
        b = bases[j]
        if b >= 0:
            v = vals[j] if valued else 1.0
            for k in range(b, ustates[b] >> 32):
                y = ustates[k] & STATE_LABEL
                g[k] += v * p[y]
                if y == gold:
                    g[k] -= v


@njit(cache=True)
def state_index(ustates, b, y):
    """The weight of label y in the unigram block at b: b + y (every label), else its index
    in a seen-states block, or -1 when the block does not have y."""
    if ustates.shape[0] == 0:
        return b + y
    lo = b
    hi = ustates[b] >> 32
    while lo < hi:
        mid = (lo + hi) // 2
        if (ustates[mid] & STATE_LABEL) < y:
            lo = mid + 1
        else:
            hi = mid
    if lo < ustates[b] >> 32 and (ustates[lo] & STATE_LABEL) == y:
        return lo
    return -1


@njit(cache=True)
def fb_workspace(maxT, L, sparse, nb):
    """Work space of ``forward_backward`` for sequences of up to maxT tokens and nb
    bigram patterns: (U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx,
    m_val); the recursion not chosen gets 1-element placeholders, and without bigram
    patterns the label-pair arrays have rows of 1 (:func:`pair_size`)."""
    L2 = pair_size(L, nb)
    if sparse:
        psi = np.empty((1, L2))
        psi_of = np.empty(1, dtype=np.int64)
        S = np.empty(L2)
        mark = np.full(L2, -1, dtype=np.int64)
        m_ptr = np.empty(maxT + 1, dtype=np.int64)
        m_idx = np.empty(maxT * L2, dtype=np.int64)
        m_val = np.empty(maxT * L2)
    else:
        psi = np.empty((max(maxT, 1), L2))
        psi_of = np.empty(max(maxT, 1), dtype=np.int64)
        psi_of[0] = -1
        S = np.empty(1)
        mark = np.empty(1, dtype=np.int64)
        m_ptr = np.empty(1, dtype=np.int64)
        m_idx = np.empty(1, dtype=np.int64)
        m_val = np.empty(1)
    return (np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)),
            np.empty(maxT), np.empty(L), psi, psi_of, S, mark, m_ptr, m_idx, m_val)


@njit(cache=True, fastmath=FAST)
def _chunk_loss_gradient(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse, bstart, nz_ptr,
                         nz_idx, first, last, maxT, g, errs):
    """Sum over sequences first..last-1 of -log p(y|x); adds the gradient into g.

    errs: int64 (2,) receives the token and sequence errors of posterior decoding
    (argmax of the marginals), a free by-product used for progress reports.
    """
    L2 = L * L
    nb = bbase.shape[1]
    U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val = fb_workspace(maxT, L, sparse, nb)
    pp = np.empty(pair_size(L, nb))
    none = np.empty(0)
    loss = 0.0
    errs[0] = 0
    errs[1] = 0
    for i in range(first, last):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        T = e - s
        logz = forward_backward(theta, ubase, uval, ustates, bbase, s, e, L, sparse, bstart, nz_ptr, nz_idx,
                                U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr,
                                m_idx, m_val)
        loss += logz - gold_score(theta, U, bbase, labels, s, e, L)
        seq_err = 0
        for t in range(T):
            best = 0
            for y in range(L):
                tmp[y] = alpha[t, y] * beta[t, y]
                if tmp[y] > tmp[best]:
                    best = y
            yg = labels[s + t]
            if best != yg:
                seq_err = 1
                errs[0] += 1
            add_unigram_expectation(g, ubase[s + t], value_row(uval, s + t, none), ustates, tmp, yg)
        errs[1] += seq_err
        if nb == 0:
            continue
        if not sparse and T > 1 and psi_of[T - 1] == 0:
            # one transition matrix for the whole sequence (e.g. only the pure
            # label-bigram pattern): sum_t alpha[t-1] (x) v_t first, multiply by
            # Psi and scatter once per sequence instead of once per position
            for k in range(L2):
                pp[k] = 0.0
            for t in range(1, T):
                pair_marginals(t, L, eU, alpha, beta, scale, None, tmp, pp, True)
            P = psi[0]
            for k in range(L2):
                pp[k] *= P[k]
            for j in range(nb):
                b = bbase[s + 1, j]
                if b >= 0:
                    for k in range(L2):
                        g[b + k] += pp[k]
                    for t in range(1, T):
                        g[b + labels[s + t - 1] * L + labels[s + t]] -= 1.0
            continue
        for t in range(1, T):
            if sparse:
                sparse_pair_marginals(t, L, eU, alpha, beta, scale, m_ptr, m_idx, m_val, tmp, pp)
            else:
                pair_marginals(t, L, eU, alpha, beta, scale, psi[psi_of[t]], tmp, pp)
            add_expectation(g, bbase[s + t], none, pp, labels[s + t - 1] * L + labels[s + t])
    return loss


@njit(cache=True, parallel=True, fastmath=FAST)
def loss_gradient(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse, bstart, nz_ptr, nz_idx,
                  chunks, G, errors):
    """Negative log-likelihood and its gradient (model expectations - empirical counts).

    chunks: int64 (n_chunks + 1,) sequence boundaries of the parallel chunks.
    G: float64 (n_chunks, n_params) per-thread gradient buffers (overwritten); the
    gradient is G.sum(axis=0), left unsummed so that the solver's next pass over
    the vectors does the sum (one pass over memory less).
    errors: int64 (n_chunks, 2) posterior-decoding token / sequence errors per
    chunk (output).  Returns the loss.
    """
    n_chunks = len(chunks) - 1
    losses = np.zeros(n_chunks)
    for c in prange(n_chunks):
        Gc = G[c]
        for k in range(Gc.shape[0]):
            Gc[k] = 0.0
        maxT = 1
        for i in range(chunks[c], chunks[c + 1]):
            T = seq_offsets[i + 1] - seq_offsets[i]
            if T > maxT:
                maxT = T
        losses[c] = _chunk_loss_gradient(theta, seq_offsets, ubase, uval, ustates, bbase, labels, L, sparse,
                                         bstart, nz_ptr, nz_idx, chunks[c], chunks[c + 1], maxT, Gc,
                                         errors[c])
    return losses.sum()


@njit(cache=True, parallel=True)
def marginals(theta, seq_offsets, ubase, uval, ustates, bbase, L, sparse, bstart, nz_ptr, nz_idx, out, logz):
    """Posterior marginals out[i, y] = p(y_i = y | x) (float64 (n_tokens, L)); logz (n_seq,)."""
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        U, eU, alpha, beta, scale, tmp, psi, psi_of, S, mark, m_ptr, m_idx, m_val = fb_workspace(T, L, sparse, bbase.shape[1])
        logz[i] = 0.0 if T == 0 else forward_backward(theta, ubase, uval, ustates, bbase, s, s + T, L, sparse, bstart,
                                                      nz_ptr, nz_idx, U, eU, alpha, beta, scale, tmp, psi, psi_of, S,
                                                      mark, m_ptr, m_idx, m_val)
        for t in range(T):
            for y in range(L):
                out[s + t, y] = alpha[t, y] * beta[t, y]


@njit(cache=True)
def restrict_to_forced(U, forced, s, T, L):
    """Forced decoding (Wapiti's ``--force``, ``tag_forced`` in its decoder.c): U[t, y] =
    -inf for every label y other than the forced one at a forced position, so that every
    arc into or out of another label there is removed and the best paths are the best of
    the label sequences agreeing with every forced label. ``forced`` int64 (n_tokens,):
    a label id, or -1 where the label is free; empty: nothing forced."""
    if forced.shape[0] == 0:
        return
    for t in range(T):
        f = forced[s + t]
        if f >= 0:
            for y in range(L):
                if y != f:
                    U[t, y] = NEG_INF


@njit(cache=True)
def _best(delta, t, L):
    """(the largest of delta[t, :L], its first label); (-inf, 0) when all are -inf."""
    bv = NEG_INF
    ba = 0
    for y in range(L):
        if delta[t, y] > bv:
            bv = delta[t, y]
            ba = y
    return bv, ba


@njit(cache=True)
def viterbi_sequence(theta, ubase, uval, ustates, bbase, forced, s, e, L, U, delta, back, W, out, o):
    """Most probable labels of the sequence of tokens s..e-1 (e > s) into out[o:o+e-s]
    (agreeing with ``forced``: see :func:`restrict_to_forced`); returns its score.
    Work space: U, delta float64 (>= T, L), back int64 (>= T, L), W float64
    (``pair_size(L, nb)``,). The one Viterbi of the package (the perceptron calls it
    too). An empty sequence scores 0. Without bigram patterns every transition scores 0:
    each position takes the best of the previous one, O(L) a position."""
    T = e - s
    if T <= 0:
        return 0.0
    L2 = L * L
    unary_scores(theta, ubase, uval, ustates, s, e, L, U)
    restrict_to_forced(U, forced, s, T, L)
    for y in range(L):
        delta[0, y] = U[0, y]
    for t in range(1, T):
        if bbase.shape[1] == 0:  # the same choices as the loop below over a W of zeros
            bv, ba = _best(delta, t - 1, L)
            for y in range(L):
                delta[t, y] = bv + U[t, y]
                back[t, y] = ba
            continue
        if t == 1 or not same_bigram_row(bbase, s + t, s + t - 1):
            transition_scores(theta, bbase, s + t, L2, W)
        for y in range(L):
            bv = NEG_INF
            ba = 0
            for yp in range(L):
                v = delta[t - 1, yp] + W[yp * L + y]
                if v > bv:
                    bv = v
                    ba = yp
            delta[t, y] = bv + U[t, y]
            back[t, y] = ba
    bv, ba = _best(delta, T - 1, L)
    out[o + T - 1] = ba
    for t in range(T - 1, 0, -1):
        ba = back[t, ba]
        out[o + t - 1] = ba
    return bv


@njit(cache=True, parallel=True)
def viterbi(theta, seq_offsets, ubase, uval, ustates, bbase, forced, L, out, best):
    """Most probable label sequences (agreeing with ``forced``, see
    :func:`restrict_to_forced`): out int64 (n_tokens,), best float64 (n_seq,) its score.
    The parallel loop only calls the per-sequence kernel (a small parfor body also
    compiles several times faster)."""
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        best[i] = viterbi_sequence(theta, ubase, uval, ustates, bbase, forced, s, s + T, L, np.empty((T, L)),
                                   np.empty((T, L)), np.empty((T, L), dtype=np.int64),
                                   np.empty(pair_size(L, bbase.shape[1])), out, s)


@njit(cache=True)
def nbest_sequence(theta, ubase, uval, ustates, bbase, forced, s, e, L, N, out, scores):
    """The N best labelings of the tokens s..e-1 (list Viterbi; agreeing with ``forced``,
    see :func:`restrict_to_forced`): out[s:e, n] and scores[n] (float64 (N,)) for the n-th
    best path (-inf where fewer exist); nothing for an empty sequence."""
    T = e - s
    if T <= 0:
        return
    L2 = L * L
    U = np.empty((T, L))
    unary_scores(theta, ubase, uval, ustates, s, e, L, U)
    restrict_to_forced(U, forced, s, T, L)
    delta = np.full((T, L, N), NEG_INF)
    bstate = np.zeros((T, L, N), dtype=np.int64)
    brank = np.zeros((T, L, N), dtype=np.int64)
    trans = bbase.shape[1] > 0
    W = np.empty(pair_size(L, bbase.shape[1]))
    cand = np.empty(L * N)
    order = np.empty(0, dtype=np.int64)
    for y in range(L):
        delta[0, y, 0] = U[0, y]
    for t in range(1, T):
        if trans and (t == 1 or not same_bigram_row(bbase, s + t, s + t - 1)):
            transition_scores(theta, bbase, s + t, L2, W)
        for y in range(L):
            if trans or y == 0:  # without transitions the candidates are the same for every y
                for yp in range(L):
                    for r in range(N):
                        cand[yp * N + r] = delta[t - 1, yp, r] + (W[yp * L + y] if trans else 0.0)
                order = np.argsort(-cand, kind="mergesort")
            for r in range(N):
                q = order[r]
                delta[t, y, r] = cand[q] + U[t, y]
                bstate[t, y, r] = q // N
                brank[t, y, r] = q % N
    for yp in range(L):
        for r in range(N):
            cand[yp * N + r] = delta[T - 1, yp, r]
    order = np.argsort(-cand, kind="mergesort")
    for n in range(N):
        q = order[n]
        scores[n] = cand[q]
        y = q // N
        r = q % N
        out[e - 1, n] = y
        for t in range(T - 1, 0, -1):
            y2 = bstate[t, y, r]
            r = brank[t, y, r]
            y = y2
            out[s + t - 1, n] = y


@njit(cache=True, parallel=True)
def nbest_viterbi(theta, seq_offsets, ubase, uval, ustates, bbase, forced, L, N, out, scores):
    """The N best label sequences: out int64 (n_tokens, N) labels of the n-th best
    path; scores float64 (n_seq, N) (-inf where fewer than N paths exist, e.g. L**T < N)."""
    for i in prange(len(seq_offsets) - 1):
        nbest_sequence(theta, ubase, uval, ustates, bbase, forced, seq_offsets[i], seq_offsets[i + 1], L, N, out,
                       scores[i])


@njit(cache=True)
def bigram_nonzeros(theta, bstart, n_bigram_obs, L2, nz_ptr, nz_idx):
    """CSR non-zero pattern of every bigram observation block; returns the total count.

    nz_ptr int64 (n_bigram_obs + 1,), nz_idx int64 (>= n_bigram_obs * L2,).
    """
    n = 0
    nz_ptr[0] = 0
    for o in range(n_bigram_obs):
        base = bstart + o * L2
        for k in range(L2):
            if theta[base + k] != 0.0:
                nz_idx[n] = k
                n += 1
        nz_ptr[o + 1] = n
    return n
