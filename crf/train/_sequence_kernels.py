"""numba kernels on one sequence shared by the per-sequence CRF solvers (SGD-l1, SAG /
SAG-NUS*, BCD, perceptron): the blocks of weights a sequence touches, the work space,
and the loss / marginals / gradient of one sequence through the forward-backward of
:mod:`crf._inference_kernels` (dense recursion: the weights change at every step, so the
sparse pattern of M would have to be rebuilt every time).

Arrays, as in ``crf.features.EncodedCorpus``:

    w            float64 (n_params,) weights, read by the kernels as theta
    seq_offsets  int64 (n_seq + 1,)
    ubase        int64 (n_tokens, n_unigram_patterns)   theta offset of (., x) or -1
    uval         float64 (n_tokens, n_unigram_patterns) feature values, or (0, .): all 1
    bbase        int64 (n_tokens, n_bigram_patterns)    theta offset of (., ., x) or -1
    labels       int64 (n_tokens,) gold label ids

and the *blocks* of every sequence (:func:`sequence_blocks`): the sorted distinct
block offsets it touches, CSR ``blk_ptr`` int64 (n_seq + 1,), ``blocks`` int64;
a block at offset b < bstart is a unigram block (L weights), otherwise a bigram
block (L*L weights).  Only these weights are read or written for the sequence.
"""

from __future__ import annotations

from collections import namedtuple

import numpy as np

from suffixlm._jit import njit

from .. import _inference_kernels as K
from .. import _order2_kernels as K2


def pair_args(space, data) -> tuple:
    """(tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r): the label-pair arguments of the
    per-sequence solvers' kernels (``crf.transitions.PairStructure``); placeholders for a
    first-order model without forbidden pairs."""
    if space.pairwise:
        st = space.structure
        return (data.trigram_base, st.pairs, st.pair_pos, st.pred_ptr, st.pred_j, st.pred_r)
    z = np.zeros(1, dtype=np.int64)
    return (data.trigram_base, z, z, np.zeros(2, dtype=np.int64), z, z)


@njit(cache=True)
def no_pair_args(n_tokens):
    """:func:`pair_args`'s placeholders, made in a kernel: (tbase, pairs, pair_pos, pred_ptr,
    pred_j, pred_r) of a first-order model without forbidden pairs."""
    z = np.zeros(1, dtype=np.int64)
    return (np.empty((n_tokens, 0), dtype=np.int64), z, z, np.zeros(2, dtype=np.int64), z, z)


def check_training_data(data) -> int:
    """Number of sequences of an EncodedCorpus fit for training (ValueError otherwise)."""
    n = data.n_sequences
    if n == 0:
        raise ValueError("no training sequence")
    if (data.labels < 0).any():
        raise ValueError("training data has tokens without a known label")
    return n


@njit(cache=True)
def sequence_blocks(seq_offsets, ubase, bbase):
    """(blk_ptr, blocks): sorted distinct block offsets of every sequence (see module doc).

    Bigram blocks of a sequence's first token are ignored (no previous label there).
    """
    return sequence_blocks2(seq_offsets, ubase, bbase, np.empty((ubase.shape[0], 0), dtype=np.int64))


@njit(cache=True)
def sequence_blocks2(seq_offsets, ubase, bbase, tbase):
    """:func:`sequence_blocks` with the trigram blocks of a second-order model (tokens t >= 2
    of a sequence; a block at offset >= tstart has L^3 weights: :func:`block_size2`)."""
    n_seq = len(seq_offsets) - 1
    nu = ubase.shape[1]
    nb = bbase.shape[1]
    nt = tbase.shape[1]
    out = np.empty(seq_offsets[-1] * (nu + nb + nt), dtype=np.int64)
    ptr = np.zeros(n_seq + 1, dtype=np.int64)
    n = 0
    for i in range(n_seq):
        s = seq_offsets[i]
        e = seq_offsets[i + 1]
        tmp = np.empty((e - s) * (nu + nb + nt), dtype=np.int64)
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
            if t > s + 1:
                for j in range(nt):
                    if tbase[t, j] >= 0:
                        tmp[c] = tbase[t, j]
                        c += 1
        srt = np.sort(tmp[:c])
        for q in range(c):
            if q == 0 or srt[q] != srt[q - 1]:
                out[n] = srt[q]
                n += 1
        ptr[i + 1] = n
    return ptr, out[:n].copy()


@njit(cache=True)
def block_size(b, bstart, L):
    return L * L if b >= bstart else L


@njit(cache=True)
def block_size2(b, bstart, tstart, L, ustates):
    """The weights of the block at offset b: L (unigram; with seen states, the labels it has),
    L*L (bigram) or L^3 (trigram, b >= tstart)."""
    if b < bstart and ustates.shape[0] > 0:
        return (ustates[b] >> 32) - b
    return L * L * L if b >= tstart else block_size(b, bstart, L)


@njit(cache=True)
def find_block(blocks, lo, hi, b):
    """Index of b in the sorted blocks[lo:hi] (b must be there)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if blocks[mid] < b:
            lo = mid + 1
        else:
            hi = mid
    return lo


#: Work arrays of the per-sequence forward-backward, for sequences of up to maxT tokens:
#: the unary scores U and exp(U), the scaled recursions alpha / beta and their scale,
#: a row of L, the transition matrices psi (psi_of: which token each row was built
#: for), and the (unused here) sparse-recursion arrays of the core kernel.
Workspace = namedtuple("Workspace", "U eU alpha beta scale tmp psi psi_of S mark m_ptr m_idx m_val")


@njit(cache=True)
def longest_sequence(seq_offsets):
    """The number of tokens of the longest sequence (at least 1)."""
    maxT = 1
    for i in range(len(seq_offsets) - 1):
        maxT = max(maxT, seq_offsets[i + 1] - seq_offsets[i])
    return maxT


@njit(cache=True)
def workspace(maxT, L, nb=1):
    """The :data:`Workspace` for sequences of up to maxT tokens, L labels and nb bigram
    patterns (without any, the transition rows have length 1: ``K.pair_size``)."""
    L2 = K.pair_size(L, nb)
    return Workspace(np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)), np.empty((maxT, L)),
                     np.empty(maxT), np.empty(L), np.empty((maxT, L2)), np.empty(maxT, dtype=np.int64),
                     np.empty(1), np.empty(1, dtype=np.int64), np.empty(1, dtype=np.int64),
                     np.empty(1, dtype=np.int64), np.empty(1))


@njit(cache=True)
def forward_backward(w, ubase, uval, ustates, bbase, s, e, L, ws):
    """The core's scaled forward-backward (dense recursion) on [s, e); returns log Z.

    The solvers change w between sequences, so the transition matrix cached in
    psi[0] from an earlier call is never reused (psi_of[0] = -1).
    """
    ws.psi_of[0] = -1
    return K.forward_backward(w, ubase, uval, ustates, bbase, s, e, L, False, 0, ws.m_ptr, ws.m_idx, ws.U, ws.eU,
                              ws.alpha, ws.beta, ws.scale, ws.tmp, ws.psi, ws.psi_of, ws.S, ws.mark, ws.m_ptr,
                              ws.m_idx, ws.m_val)


@njit(cache=True)
def sequence_loss(w, ubase, uval, ustates, bbase, labels, s, e, L, ws):
    """-log p(y|x) of sequence [s, e)."""
    logz = forward_backward(w, ubase, uval, ustates, bbase, s, e, L, ws)
    return logz - K.gold_score(w, ws.U, bbase, labels, s, e, L)


@njit(cache=True)
def pairwise(t, L, ws, pp):
    """pp[y'L + y] = p(y_{t-1} = y', y_t = y | x) after forward_backward (t >= 1)."""
    K.pair_marginals(t, L, ws.eU, ws.alpha, ws.beta, ws.scale, ws.psi[ws.psi_of[t]], ws.tmp, pp)


@njit(cache=True)
def add_gradient(ubase, uval, ustates, bbase, labels, s, e, L, ws, pp, g):
    """g += gradient of -log p(y|x) (model expectations - gold counts), after forward_backward."""
    none = np.empty(0)
    for t in range(e - s):
        yg = labels[s + t]
        for y in range(L):
            ws.tmp[y] = ws.alpha[t, y] * ws.beta[t, y]
        K.add_unigram_expectation(g, ubase[s + t], K.value_row(uval, s + t, none), ustates, ws.tmp, yg)
        if t > 0 and bbase.shape[1] > 0:
            pairwise(t, L, ws, pp)
            K.add_expectation(g, bbase[s + t], none, pp, labels[s + t - 1] * L + yg)


@njit(cache=True)
def total_loss(w, seq_offsets, ubase, uval, ustates, bbase, labels, L):
    """sum_i -log p(y_i|x_i, w) over all sequences (sequential; for checks and benchmarks)."""
    ws = workspace(longest_sequence(seq_offsets), L, bbase.shape[1])
    tot = 0.0
    for i in range(len(seq_offsets) - 1):
        tot += sequence_loss(w, ubase, uval, ustates, bbase, labels, seq_offsets[i], seq_offsets[i + 1], L, ws)
    return tot


@njit(cache=True)
def total_loss2(w, seq_offsets, ubase, uval, ustates, bbase, tbase, labels, L, pairs, pred_ptr, pred_j, pred_r):
    """:func:`total_loss` on label-pair states."""
    ws2 = K2.workspace2(longest_sequence(seq_offsets), L, pairs, pred_r.shape[0], bbase.shape[1], tbase.shape[1])
    tot = 0.0
    for i in range(len(seq_offsets) - 1):
        tot += sequence_loss2(w, ubase, uval, ustates, bbase, tbase, labels, seq_offsets[i], seq_offsets[i + 1], L,
                              pairs, pred_ptr, pred_j, pred_r, ws2)
    return tot


@njit(cache=True)
def sequence_loss2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pred_ptr, pred_j, pred_r, ws2):
    """-log p(y|x) of sequence [s, e) on label-pair states (weights changed since the last
    call: no exponentiated row is reused; no triple marginals made)."""
    return fresh_forward_backward2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pred_ptr, pred_j,
                                   pred_r, ws2, None)


@njit(cache=True)
def fresh_forward_backward2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pred_ptr, pred_j, pred_r,
                            ws2, Pt):
    """-log p(y|x) of sequence [s, e) on label-pair states, leaving the recursions in ws2 and,
    with trigram patterns, the triple marginals of positions t >= 2 in Pt's rows t (the
    weights changed since the last call: no exponentiated row is reused)."""
    ws2[9][0] = -1
    ws2[11][0] = -1
    if tbase.shape[1] > 0 and e - s > 2:
        logz = K2.forward_backward2(w, ubase, uval, ustates, bbase, tbase, s, e, L, pairs, pred_ptr, pred_j, pred_r,
                                    ws2, Pt, 0, False)
    else:
        logz = K2.forward_backward2(w, ubase, uval, ustates, bbase, tbase, s, e, L, pairs, pred_ptr, pred_j, pred_r,
                                    ws2)
    return logz - K2.gold_score2(w, ws2[0], bbase, tbase, labels, s, e, L)


@njit(cache=True)
def sequence_loss_gradient2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pair_pos, pred_ptr, pred_j,
                            pred_r, ws2, Pt, row, g):
    """-log p(y|x) of sequence [s, e) on the label-pair states of ``crf._order2_kernels``
    (second order, or forbidden pairs); adds its gradient (marginals of labels, label
    pairs and label triples minus the gold counts) into g. ws2: ``K2.workspace2`` for the
    longest sequence; Pt float64 (>= T, n3 or 1); row float64 (L,). The weights change
    between calls, so no exponentiated row of an earlier call is reused."""
    loss = fresh_forward_backward2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pred_ptr, pred_j,
                                   pred_r, ws2, Pt)
    T = e - s
    hasT = tbase.shape[1] > 0
    alpha, beta, a0, b0 = ws2[2], ws2[3], ws2[4], ws2[5]
    pb = ws2[13]
    none = np.empty(0)
    for t in range(T):
        K2.tag_marginals(t, L, pb, alpha, beta, a0, b0, row)
        K.add_unigram_expectation(g, ubase[s + t], K.value_row(uval, s + t, none), ustates, row, labels[s + t])
        if t > 0:
            gold = labels[s + t - 1] * L + labels[s + t]
            for j in range(bbase.shape[1]):
                b = bbase[s + t, j]
                if b >= 0:
                    for jj in range(pairs.shape[0]):
                        g[b + pairs[jj]] += alpha[t, jj] * beta[t, jj]
                    g[b + gold] -= 1.0
        if t > 1 and hasT:
            qg = K2.triple_of(pairs, pair_pos, pred_ptr, pred_j, L, labels[s + t - 2], labels[s + t - 1],
                              labels[s + t])
            for j in range(tbase.shape[1]):
                b = tbase[s + t, j]
                if b >= 0:
                    for q in range(pred_r.shape[0]):
                        g[b + pred_r[q]] += Pt[t, q]
                    g[b + pred_r[qg]] -= 1.0
    return loss


@njit(cache=True)
def gradient_workspace(seq_offsets, L, bbase, pair_states, o2):
    """The work arrays of :func:`sequence_loss_gradient` for the longest sequence: (ws, pp,
    ws2, Pt, row), those of the states not used (``pair_states`` or not) tiny."""
    tbase, pairs, pred_r = o2[0], o2[1], o2[5]
    maxT = longest_sequence(seq_offsets)
    n3 = pred_r.shape[0]
    ws = workspace(1 if pair_states else maxT, L, bbase.shape[1])
    pp = np.empty(K.pair_size(L, bbase.shape[1]))
    ws2 = K2.workspace2(maxT if pair_states else 1, L, pairs, n3, bbase.shape[1], tbase.shape[1])
    Pt = np.empty((maxT if pair_states else 1, n3 if tbase.shape[1] > 0 else 1))
    return ws, pp, ws2, Pt, np.empty(L)


@njit(cache=True, inline="always")
def sequence_loss_gradient(w, ubase, uval, ustates, bbase, labels, s, e, L, pair_states, o2, gws, g):
    """-log p(y|x) of sequence [s, e), its gradient added into g: first order, or on the
    label-pair states of o2 = (tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r)
    (``pair_states``: :func:`sequence_loss_gradient2`); gws: :func:`gradient_workspace`."""
    ws, pp, ws2, Pt, row = gws
    if pair_states:
        tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r = o2
        return sequence_loss_gradient2(w, ubase, uval, ustates, bbase, tbase, labels, s, e, L, pairs, pair_pos,
                                       pred_ptr, pred_j, pred_r, ws2, Pt, row, g)
    loss = sequence_loss(w, ubase, uval, ustates, bbase, labels, s, e, L, ws)
    add_gradient(ubase, uval, ustates, bbase, labels, s, e, L, ws, pp, g)
    return loss


@njit(cache=True)
def decode_workspace(seq_offsets, L, bbase, pair_states, o2):
    """The work arrays of :func:`decode` for the longest sequence: (U, delta, back, W, X,
    free, pred), delta and back over the labels, or the pairs (``pair_states``)."""
    tbase, pairs, pred_r = o2[0], o2[1], o2[5]
    maxT = longest_sequence(seq_offsets)
    n = max(pairs.shape[0], 1) if pair_states else L
    return (np.empty((maxT, L)), np.empty((maxT, n)), np.zeros((maxT, n), dtype=np.int64),
            np.empty(K.pair_size(L, bbase.shape[1])), np.empty(pred_r.shape[0] if tbase.shape[1] > 0 else 1),
            np.empty(0, dtype=np.int64), np.empty(maxT, dtype=np.int64))


@njit(cache=True, inline="always")
def decode(w, ubase, uval, ustates, bbase, s, e, L, pair_states, o2, dws):
    """Viterbi of the sequence [s, e) at w (first order, or on the label-pair states of o2:
    ``pair_states``) into dws's pred[:e-s]; dws: :func:`decode_workspace`."""
    U, delta, back, W, X, free, pred = dws
    if pair_states:
        tbase, pairs, pair_pos, pred_ptr, pred_j, pred_r = o2
        K2.viterbi_sequence2(w, ubase, uval, ustates, bbase, tbase, free, s, e, L, pairs, pred_ptr, pred_j, pred_r, U,
                             delta, back, W, X, pred, 0)
    else:
        K.viterbi_sequence(w, ubase, uval, ustates, bbase, free, s, e, L, U, delta, back, W, pred, 0)


@njit(cache=True)
def differs(labels, pred, s, t, third):
    """Whether the features of position t of the sequence starting at token s differ between
    the gold labels and pred: its label, the previous one, or (``third``) the one before."""
    if labels[s + t] != pred[t]:
        return True
    if t > 0 and labels[s + t - 1] != pred[t - 1]:
        return True
    return third and t > 1 and labels[s + t - 2] != pred[t - 2]


@njit(cache=True)
def errors(pred, labels, s, e):
    """The positions of [s, e) whose label pred[t - s] is not the gold one."""
    d = 0
    for t in range(e - s):
        if pred[t] != labels[s + t]:
            d += 1
    return d
