"""Block coordinate descent for l1 / elastic-net CRFs (Sokolovska, Lavergne,
Cappé & Yvon 2010; Lavergne et al. 2010, section 3.4).

One block per observation x: its unigram weights (y, x) and bigram weights
(y', y, x).  A block update runs forward-backward only on the sequences where x
occurs, builds the gradient and the diagonal of the Hessian of the loss for the
block (cross-position covariances dropped), and moves every weight of the block
to the minimiser of its one-dimensional quadratic model plus penalty (eq. 10,
soft thresholding eq. 11).  The curvature is multiplied by ``kappa`` (Wapiti's
stability factor, default 1.5) and doubled until the objective restricted to the
block's sequences decreases, which makes every block step a descent step.

Cost: a pass runs sum over observations of (number of sequences containing it)
forward-backwards — far more than one gradient when blocks are frequent (the
transition block ``B`` alone visits every sequence): the paper's conclusion, BCD
is for small observation alphabets or when memory is the limit (it stores only
the weights).

On label-pair states (second order, forbidden pairs) a block also holds the
observation's trigram weights; only the allowed pairs' and triples' entries move.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suffixlm.memory import start_point
from suffixlm.solvers import state as S
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _bcd_kernels as BK
from . import _sequence_kernels as SQ

__all__ = ["bcd", "BcdState", "train_crf"]


@dataclass
class BcdState(S.SolverState):
    """Where :func:`bcd` stands at the end of a pass (:mod:`suffixlm.solvers.state`): the
    weights w float64 (n,), the shuffling generator's state, the counters (per-sequence
    forward-backwards, safeguard retries), the objective f, passes done and history."""

    w: np.ndarray = S.floats("n")
    rng: dict = S.generator()
    counts: list = S.ints(2)
    f: float = S.real()
    n_iter: int = S.iterations()
    history: list[IterationInfo] = S.history()

    NAME = "bcd"


def bcd(space, data, rho1: float = 0.5, rho2: float = 0.0, x0: np.ndarray | None = None,
        max_iter: int = 20, kappa: float = 1.5, tol: float = 1e-9, seed: int = 0,
        callback=None, state: BcdState | None = None, checkpoint=None) -> OptimizeResult:
    """Train by BCD; blocks are visited in a new random order every pass.

    Stops after a pass that moved no block, when the objective (computed once per
    pass) decreased by less than tol * |f|, or after max_iter.  callback(info, w)
    after every pass; True stops.  ``result.n_evals`` counts per-sequence
    forward-backwards; ``result.passes`` that count / n.

    state: a :class:`BcdState` to go on from (x0 and seed are then unused);
    ``checkpoint(state)`` after every pass the solver goes on after.
    """
    if rho1 < 0 or rho2 < 0:
        raise ValueError("rho1 and rho2 must be >= 0")
    if kappa <= 0:
        raise ValueError("kappa must be > 0")
    n = SQ.check_training_data(data)
    L = space.n_labels
    if state is None:
        w = start_point(space.n_params, x0, "BCD's weights")
    else:
        w = state.w.copy()
    pair_states = space.pairwise
    blk_ptr, blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base, data.trigram_base)
    n_obs = len(space.kinds)
    obs_ids = np.arange(n_obs, dtype=np.int64)
    uo = space.unigram_offset
    bo = space.bigram_offset
    to = space.trigram_offset
    # observation of every block rank (ranks follow observation order in features.py)
    obs_of_rank = np.concatenate([obs_ids[uo >= 0], obs_ids[bo >= 0], obs_ids[to >= 0]]).astype(np.int64)
    obs_ptr, obs_seq = BK.block_sequences(data.seq_offsets, blk_ptr, blocks, obs_of_rank, np.int64(L),
                                          np.int64(space.bigram_start), np.int64(n_obs), np.int64(space.trigram_start),
                                          space.uptr)
    o2 = SQ.pair_args(space, data)
    _, pairs, _, pred_ptr, pred_j, pred_r = o2
    counts = np.zeros(2, dtype=np.int64)
    infos: list[IterationInfo] = []
    def objective():
        if pair_states:
            loss = SQ.total_loss2(w, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                                  data.bigram_base, data.trigram_base, data.labels, np.int64(L), pairs, pred_ptr,
                                  pred_j, pred_r)
        else:
            loss = SQ.total_loss(w, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                                 data.bigram_base, data.labels, np.int64(L))
        return loss + rho1 * np.abs(w).sum() + 0.5 * rho2 * (w @ w)

    if state is None:
        rng = np.random.default_rng(seed)
        f = objective()
    else:
        rng = S.rng_from_json(state.rng, "rng")
        counts[:] = state.counts
        f = state.f
        infos = list(state.history)
    clock = Clock.after(infos)
    reason = StopReason.MAX_ITER
    for it in range(len(infos) + 1, max_iter + 1):
        order = rng.permutation(n_obs).astype(np.int64)
        changed = BK.bcd_pass(w, order, obs_ptr, obs_seq, uo, bo, data.seq_offsets, data.unigram_base,
                              data.unigram_value, data.unigram_states, data.bigram_base, data.labels, np.int64(L),
                              float(rho1), float(rho2), float(kappa), counts, bool(pair_states), to, o2)
        f_prev, f = f, objective()
        info = clock.record(infos, it, float(f), step=float(changed), n_evals=int(counts[0]),
                            active=int(np.count_nonzero(w)))
        if changed == 0:
            reason = StopReason.CONVERGED
            break
        if f_prev - f <= tol * abs(f):
            reason = StopReason.NO_PROGRESS
            break
        if callback is not None and callback(info, w):
            reason = StopReason.STOPPING_CRITERION
            break
        if checkpoint is not None:
            checkpoint(BcdState(w, S.rng_to_json(rng), counts.tolist(), float(f), it, infos))
    res = OptimizeResult(w, float(f), len(infos), int(counts[0]), reason in ('converged', 'no progress'), reason, infos)
    res.passes = counts[0] / n
    res.safeguard_retries = int(counts[1])
    return res


def train_crf(run) -> OptimizeResult:
    """``bcd`` of :mod:`crf.solvers`."""
    st = run.settings
    return bcd(run.space, run.data, rho1=st.rho1, rho2=st.rho2, x0=run.x0, max_iter=st.max_iter, seed=run.seed,
               callback=run.callback, **run.resume)
