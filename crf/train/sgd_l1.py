"""SGD with the cumulative l1 penalty (Tsuruoka, Tsujii & Ananiadou 2009;
Lavergne et al. 2010, section 3.3, eq. 8).

Minimises  sum_i -log p(y_i|x_i) + rho1 |w|_1 + rho2/2 ||w||^2  one sequence at a
time.  Each step touches only the weights of the blocks active in the sequence
(its unigram (y, x) and bigram (y', y, x) blocks): the l1 penalty is the
cumulative one (every weight is clipped by the total penalty u it should have
received minus what it did receive, q_j), the l2 penalty a multiplicative shrink
kept lazily.  Memory: the weights, q, and (with rho2 > 0) one log-scale per weight.

Learning-rate schedules (k = step count from 0, n = number of sequences):

* ``"exponential"`` (Tsuruoka et al., the default): eta_k = eta0 * decay ** (k / n),
  i.e. multiplied by ``decay`` every pass.  Fast at first, but the steps sum to a
  finite value, so it stops short of the exact optimum.
* ``"inverse"``: eta_k = eta0 / (1 + k / (n * tau)) — sum eta = inf and
  sum eta^2 < inf, the Robbins-Monro conditions: it converges to the optimum,
  slowly.

The sequences are visited in a new random order every pass.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suffixlm.memory import allocate, start_point
from suffixlm.solvers import state as S
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _sequence_kernels as SQ
from . import _sgd_kernels as GK

__all__ = ["sgd_l1", "learning_rates", "SgdL1State", "train_crf"]


@dataclass
class SgdL1State(S.SolverState):
    """Where :func:`sgd_l1` stands at the end of a pass (:mod:`suffixlm.solvers.state`):
    the weights w and the l1 penalty each received, q (float64 (n,)), the total l1
    penalty per weight so far u, the shuffling generator's state, the objective f of the
    last pass, passes done and history. (The lazy l2 scales are all settled at the end
    of a pass: nothing to store.)"""

    w: np.ndarray = S.floats("n")
    q: np.ndarray = S.floats("n")
    u: float = S.real(low=0.0)
    rng: dict = S.generator()
    f: float = S.real()
    n_iter: int = S.iterations()
    history: list[IterationInfo] = S.history()

    NAME = "sgd-l1"


def learning_rates(schedule: str, eta0: float, start: int, count: int, n: int, decay: float = 0.85,
                   tau: float = 1.0) -> np.ndarray:
    """float64 (count,) learning rates of steps start .. start + count - 1 (see module doc)."""
    k = np.arange(start, start + count, dtype=np.float64)
    if schedule == "exponential":
        return eta0 * decay ** (k / n)
    if schedule == "inverse":
        return eta0 / (1.0 + k / (n * tau))
    raise ValueError(f"learning-rate schedule must be 'exponential' or 'inverse', not {schedule!r}")


def sgd_l1(space, data, rho1: float = 0.5, rho2: float = 0.0, x0: np.ndarray | None = None,
           max_iter: int = 50, eta0: float = 0.8, schedule: str = "exponential", decay: float = 0.85,
           tau: float = 1.0, seed: int = 0, callback=None, state: SgdL1State | None = None,
           checkpoint=None) -> OptimizeResult:
    """Train by SGD-l1 on ``data`` (an EncodedCorpus of ``space``); see the module doc.

    callback(info, w) is called after every pass (info.objective: the sum of the
    losses met during the pass, each at the weights of its step, plus the penalty
    at the end of the pass — an estimate, no extra forward-backward); returning
    True stops.  The result's ``evaluations`` counts sequence gradients / n
    (effective passes).

    state: an :class:`SgdL1State` to go on from (x0 and seed are then unused);
    ``checkpoint(state)`` after every pass the solver goes on after.
    """
    if rho1 < 0 or rho2 < 0:
        raise ValueError("rho1 and rho2 must be >= 0")
    if eta0 <= 0:
        raise ValueError("eta0 must be > 0")
    n = SQ.check_training_data(data)
    if rho2 * eta0 >= n:
        raise ValueError("eta0 * rho2 must be < the number of sequences (l2 shrink factor > 0)")
    L = space.n_labels
    if state is None:
        w = start_point(space.n_params, x0, "SGD's weights")
        q = allocate(w.shape[0], np.float64, "SGD's cumulative l1 penalties", zero=True)
        u = 0.0
        rng = np.random.default_rng(seed)
        infos: list[IterationInfo] = []
        f = np.inf
    else:
        w, q, u, f = state.w.copy(), state.q.copy(), state.u, state.f
        rng = S.rng_from_json(state.rng, "rng")
        infos = list(state.history)
    lastc = allocate(w.shape[0], np.float64, "SGD's l2 scales", zero=True) if rho2 > 0 else np.zeros(1)
    g = allocate(w.shape[0], np.float64, "SGD's gradient", zero=True)
    pairwise = space.pairwise
    if pairwise:
        blk_ptr, blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base, data.trigram_base)
    else:
        blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    kernel_state = np.array([u, 0.0])
    o2 = SQ.pair_args(space, data)
    clock = Clock.after(infos)
    reason = StopReason.MAX_ITER
    for epoch in range(len(infos) + 1, max_iter + 1):
        order = rng.permutation(n).astype(np.int64)
        etas = learning_rates(schedule, eta0, (epoch - 1) * n, n, n, decay, tau)
        loss = GK.sgd_l1_pass(w, q, lastc, g, order, etas, data.seq_offsets, data.unigram_base, data.unigram_value,
                              data.unigram_states, data.bigram_base, data.labels, blk_ptr, blocks, np.int64(L),
                              np.int64(space.bigram_start), np.int64(space.trigram_start), pairwise, o2, rho1 / n,
                              rho2 / n, kernel_state)
        f = loss + rho1 * np.abs(w).sum() + 0.5 * rho2 * (w @ w)
        info = clock.record(infos, epoch, float(f), step=float(etas[-1]), n_evals=epoch, active=int(np.count_nonzero(w)))
        if not np.isfinite(f):
            reason = StopReason.DIVERGED_LOWER_ETA0
            break
        if callback is not None and callback(info, w):
            reason = StopReason.STOPPING_CRITERION
            break
        if checkpoint is not None:
            checkpoint(SgdL1State(w, q, float(kernel_state[0]), S.rng_to_json(rng), float(f), epoch, infos))
    return OptimizeResult(w, float(f), len(infos), len(infos), False, reason, infos)


#: the learning rate measured on CoNLL-2000 and NETtalk (scripts/bench_solvers.py, bench_nettalk.py)
ETA0 = 0.1


def train_crf(run) -> OptimizeResult:
    """``sgd-l1`` of :mod:`crf.solvers`."""
    st = run.settings
    return sgd_l1(run.space, run.data, rho1=st.rho1, rho2=st.rho2, x0=run.x0, max_iter=st.max_iter, eta0=ETA0,
                  seed=run.seed, callback=run.callback, **run.resume)
