"""Forced decoding (Wapiti's ``--force``, ``tag_forced`` in its decoder.c): Viterbi and
list Viterbi on the lattice restricted to the labels already known.

``forced`` int64 (n_tokens,) holds a label id at a position whose label is given, -1
where it is free. A forced position keeps only that label: every arc into or out of
another label there is removed (Wapiti sets their scores to -inf), so the best paths
are the best of the label sequences that agree with every forced label. Other arrays
as in ``_inference_kernels``.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from ._inference_kernels import _same_bigram_row, transition_scores, unary_scores

_NEG_INF = -np.inf


@njit(cache=True)
def _restrict(U, forced, s, T, L):
    """U[t, y] = -inf for every label y other than the forced one at a forced position."""
    for t in range(T):
        f = forced[s + t]
        if f >= 0:
            for y in range(L):
                if y != f:
                    U[t, y] = _NEG_INF


@njit(cache=True)
def forced_viterbi_sequence(theta, ubase, uval, bbase, forced, s, e, L, U, delta, back, W, out, o):
    """``_inference_kernels.viterbi_sequence`` on the restricted lattice; returns the
    path's score (that of the unrestricted model). An empty sequence scores 0."""
    T = e - s
    if T <= 0:
        return 0.0
    L2 = L * L
    unary_scores(theta, ubase, uval, s, e, L, U)
    _restrict(U, forced, s, T, L)
    for y in range(L):
        delta[0, y] = U[0, y]
    for t in range(1, T):
        if t == 1 or not _same_bigram_row(bbase, s + t, s + t - 1):
            transition_scores(theta, bbase, s + t, L2, W)
        for y in range(L):
            bv = _NEG_INF
            ba = 0
            for yp in range(L):
                v = delta[t - 1, yp] + W[yp * L + y]
                if v > bv:
                    bv = v
                    ba = yp
            delta[t, y] = bv + U[t, y]
            back[t, y] = ba
    bv = _NEG_INF
    ba = 0
    for y in range(L):
        if delta[T - 1, y] > bv:
            bv = delta[T - 1, y]
            ba = y
    out[o + T - 1] = ba
    for t in range(T - 1, 0, -1):
        ba = back[t, ba]
        out[o + t - 1] = ba
    return bv


@njit(cache=True, parallel=True)
def forced_viterbi(theta, seq_offsets, ubase, uval, bbase, forced, L, out, best):
    """Best label sequences agreeing with ``forced``: out int64 (n_tokens,), best float64 (n_seq,)."""
    for i in prange(len(seq_offsets) - 1):
        s = seq_offsets[i]
        T = seq_offsets[i + 1] - s
        best[i] = forced_viterbi_sequence(theta, ubase, uval, bbase, forced, s, s + T, L, np.empty((T, L)),
                                          np.empty((T, L)), np.empty((T, L), dtype=np.int64), np.empty(L * L),
                                          out, s)


@njit(cache=True)
def forced_nbest_sequence(theta, ubase, uval, bbase, forced, s, e, L, N, out, scores):
    """``_inference_kernels.nbest_sequence`` on the restricted lattice: scores[n] = -inf
    where fewer than N label sequences agree with the forced labels."""
    T = e - s
    if T <= 0:
        return
    L2 = L * L
    U = np.empty((T, L))
    unary_scores(theta, ubase, uval, s, e, L, U)
    _restrict(U, forced, s, T, L)
    delta = np.full((T, L, N), _NEG_INF)
    bstate = np.zeros((T, L, N), dtype=np.int64)
    brank = np.zeros((T, L, N), dtype=np.int64)
    W = np.empty(L2)
    cand = np.empty(L * N)
    for y in range(L):
        delta[0, y, 0] = U[0, y]
    for t in range(1, T):
        if t == 1 or not _same_bigram_row(bbase, s + t, s + t - 1):
            transition_scores(theta, bbase, s + t, L2, W)
        for y in range(L):
            for yp in range(L):
                for r in range(N):
                    cand[yp * N + r] = delta[t - 1, yp, r] + W[yp * L + y]
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
def forced_nbest(theta, seq_offsets, ubase, uval, bbase, forced, L, N, out, scores):
    """The N best label sequences agreeing with ``forced``: out int64 (n_tokens, N), scores
    float64 (n_seq, N), -inf where fewer exist."""
    for i in prange(len(seq_offsets) - 1):
        forced_nbest_sequence(theta, ubase, uval, bbase, forced, seq_offsets[i], seq_offsets[i + 1], L, N, out,
                              scores[i])
