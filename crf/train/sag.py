"""SAG and SAG-NUS* for l2-penalised CRFs (Schmidt, Babanezhad, Ahmed, Defazio,
Clifton & Sarkar 2015, Algorithm 1 and the NUS* rules of section 3).

Minimises  sum_i -log p(y_i|x_i, w) + rho2/2 ||w||^2, i.e. n times Schmidt's
f(w) = 1/n sum_i -log p(y_i|x_i, w) + lam/2 ||w||^2 with lam = rho2 / n.

Memory trick: the gradient g_i of each sequence is never stored, only the
marginals that define it, p(y_t | x_i, w_old) per position (n_tokens x L) and
the pairwise marginals summed over the positions of the sequence that share a
bigram block (one L x L matrix per distinct bigram block of the sequence: with a
pure transition pattern ``B``, one per sequence).  The stored marginals start at
the gold one-hot labels, which is g_i = 0 before the first visit.  The update
w <- (1 - a lam) w - (a / m) d (d = sum_i g_i) is applied lazily, so an
iteration costs the forward-backward of one sequence plus its own weights.

Step sizes: ``nus=False`` (SAG) — the line search on L_g with L_g *= 2^(-1/n) per
iteration, a = 1/(L_g + lam); ``nus=True`` (SAG-NUS*) — per-sequence Lipschitz
estimates L_i initialised to the mean of the visited L_i at the first visit, the
same line search on L_i, L_i *= 0.9 after each use, a = (1/(L_max + lam) + 1/(L_mean + lam)) / 2
with L_mean the mean of the visited L_i and L_max their running maximum (decayed
by 2^(-1/n) per iteration like L_g: the code of Schmidt et al. does so), and i drawn
uniformly with probability 1/2, proportionally to L_i among the visited sequences
otherwise.

On label-pair states (second order, forbidden pairs: ``crf._order2_kernels``) the
stored marginals are those of the tags per token, of the allowed pairs summed per
bigram block and of the allowed triples summed per trigram block of a sequence.

Stopping rule: ||d/n + lam w||_inf < tol (the stored-gradient estimate of the
gradient of f), checked after every n iterations once every sequence was visited.
"""

from __future__ import annotations

import numpy as np

from suffixlm.memory import allocate, start_point
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _sag_kernels as AK
from . import _sequence_kernels as SQ

__all__ = ["sag", "sag_memory", "train_crf"]


def _blocks(space, data):
    """(blk_ptr, blocks, is_pair): each sequence's sorted blocks and which are bigram blocks."""
    if space.pairwise:
        blk_ptr, blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base,
                                              data.trigram_base)
    else:
        blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    is_pair = blocks >= space.bigram_start
    if space.pairwise:
        is_pair &= blocks < space.trigram_start
    return blk_ptr, blocks, is_pair


def sag_memory(space, data) -> dict[str, int]:
    """Bytes of the solver state for ``data``: what SAG stores instead of n gradients."""
    blk_ptr, blocks, is_pair = _blocks(space, data)
    n_pair = int(is_pair.sum())
    n_trip = int((blocks >= space.trigram_start).sum()) if space.pairwise else 0
    L = space.n_labels
    P = space.n_params
    n = data.n_sequences
    return {
        "unary_marginals": data.n_tokens * L * 8,
        "pairwise_marginals": n_pair * L * L * 8,
        "triple_marginals": n_trip * (space.structure.n3 if space.pairwise else 0) * 8,
        "weight_vectors": 3 * P * 8 + P * 8,  # w, d, scratch g; last (int64)
        "per_sequence": n * (8 + 1) + 4 * n * 8,  # losses, visited, sum tree of the L_i
        "blocks": int(blocks.nbytes + blk_ptr.nbytes),
        "stored_gradients_instead": n * P * 8,
        "n_pairwise_rows": n_pair,
        "n_triple_rows": n_trip,
    }


def sag(space, data, rho2: float = 1e-4, x0: np.ndarray | None = None, nus: bool = False,
        max_iter: int = 50, tol: float = 1e-6, seed: int = 0, callback=None) -> OptimizeResult:
    """Train by SAG (``nus=False``) or SAG-NUS* (``nus=True``); see the module doc.

    One call of callback(info, w) per n iterations ("pass"); info.objective is the
    sum of the stored per-sequence losses (each at the weights of its last visit)
    plus the penalty at w — no extra forward-backward; returning True stops.
    ``result.n_evals`` counts sequence forward-backwards (gradients and
    line-search trials); ``result.passes`` their number / n; ``result.memory``
    the bytes of the state (:func:`sag_memory`); ``result.gradient_inf`` the
    final ||d/n + lam w||_inf.
    """
    if rho2 <= 0:
        raise ValueError("SAG needs an l2 penalty rho2 > 0 (strong convexity)")
    n = SQ.check_training_data(data)
    L = space.n_labels
    L2 = L * L
    P = space.n_params
    lam = rho2 / n
    w = start_point(P, x0, "SAG's weights")
    d = allocate(P, np.float64, "SAG's gradient sum", zero=True)
    last = allocate(P, np.int64, "SAG's update times", zero=True)
    g = allocate(P, np.float64, "SAG's gradient", zero=True)
    A = np.empty(n + 1)
    Sacc = np.empty(n + 1)
    blk_ptr, blocks, is_pair = _blocks(space, data)
    tstart = space.trigram_start
    sizes = np.where(blocks >= tstart, L2 * L, np.where(blocks >= space.bigram_start, L2, L))
    per_seq = np.add.reduceat(sizes, blk_ptr[:-1]) if len(blocks) else np.zeros(n, dtype=np.int64)
    per_seq[np.diff(blk_ptr) == 0] = 0
    wsave = np.empty(max(int(per_seq.max()), 1))
    pair_first = np.zeros(n + 1, dtype=np.int64)
    cum = np.concatenate([[0], np.cumsum(is_pair.astype(np.int64))])
    pair_first[:] = cum[blk_ptr]
    n_pair = int(pair_first[-1])
    mu = allocate((data.n_tokens, L), np.float64, "SAG's stored label marginals")
    pair = allocate((max(n_pair, 1), L2 if n_pair else 1), np.float64,  # no pair row without bigram blocks
                    "SAG's stored label-pair marginals")
    pscratch = np.empty((max(int(np.diff(pair_first).max()), 1), L2 if n_pair else 1))
    o2 = AK.order2_args(space, data, blk_ptr, blocks)
    AK.sag_init_store(data.seq_offsets, data.bigram_base, data.labels, blk_ptr, blocks, np.int64(L),
                      np.int64(space.bigram_start), mu, pair_first, pair, o2)
    f_store = np.zeros(n)
    visited = np.zeros(n, dtype=np.int8)
    size = 1
    while size < n:
        size *= 2
    tsum = np.zeros(2 * size)
    state = np.array([0.0, 1.0])
    counts = np.zeros(2, dtype=np.int64)
    AK.seed(seed)
    infos: list[IterationInfo] = []
    clock = Clock()
    reason = StopReason.MAX_ITER
    f = np.inf
    ginf = np.inf
    for it in range(1, max_iter + 1):
        AK.sag_pass(w, d, last, A, Sacc, g, wsave, data.seq_offsets, data.unigram_base, data.unigram_value,
                    data.unigram_states, data.bigram_base, data.labels, blk_ptr, blocks, np.int64(L),
                    np.int64(space.bigram_start), lam, mu, pair_first, pair, pscratch, f_store, visited, tsum,
                    np.int64(size), bool(nus), state, counts, bool(space.pairwise), np.int64(tstart), o2)
        f = float(f_store.sum() + 0.5 * rho2 * (w @ w))
        info = clock.record(infos, it, f, step=float(state[1]), n_evals=int(counts.sum()),
                            active=int(np.count_nonzero(w)))
        if not np.isfinite(f):
            reason = StopReason.DIVERGED
            break
        if state[0] == n:
            ginf = float(np.max(np.abs(d / n + lam * w)))
            if ginf < tol:
                reason = StopReason.GRADIENT_TOLERANCE
                break
        if callback is not None and callback(info, w):
            reason = StopReason.STOPPING_CRITERION
            break
    res = OptimizeResult(w, f, len(infos), int(counts.sum()), reason in ('gradient tolerance',), reason, infos)
    res.passes = counts.sum() / n
    res.gradient_evaluations = int(counts[0])
    res.linesearch_evaluations = int(counts[1])
    res.gradient_inf = ginf
    res.memory = sag_memory(space, data)
    return res


def train_crf(run) -> OptimizeResult:
    """``sag`` and ``sag-nus`` of :mod:`crf.solvers` (no checkpoint: the generator lives inside numba)."""
    st = run.settings
    return sag(run.space, run.data, rho2=st.rho2, x0=run.x0, nus=st.algorithm == "sag-nus", max_iter=st.max_iter,
               seed=run.seed, callback=run.callback)
