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

import numpy as np

from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult

from . import _sequence_kernels as SQ
from . import _sgd_kernels as GK

__all__ = ["sgd_l1", "learning_rates"]


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
           tau: float = 1.0, seed: int = 0, callback=None) -> OptimizeResult:
    """Train by SGD-l1 on ``data`` (an EncodedCorpus of ``space``); see the module doc.

    callback(info, w) is called after every pass (info.objective: the sum of the
    losses met during the pass, each at the weights of its step, plus the penalty
    at the end of the pass — an estimate, no extra forward-backward); returning
    True stops.  The result's ``evaluations`` counts sequence gradients / n
    (effective passes).
    """
    if rho1 < 0 or rho2 < 0:
        raise ValueError("rho1 and rho2 must be >= 0")
    if eta0 <= 0:
        raise ValueError("eta0 must be > 0")
    n = SQ.check_training_data(data)
    if rho2 * eta0 >= n:
        raise ValueError("eta0 * rho2 must be < the number of sequences (l2 shrink factor > 0)")
    L = space.n_labels
    w = np.zeros(space.n_params) if x0 is None else np.array(x0, dtype=np.float64)
    q = np.zeros_like(w)
    lastc = np.zeros_like(w) if rho2 > 0 else np.zeros(1)
    g = np.zeros_like(w)
    blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    state = np.zeros(2)
    rng = np.random.default_rng(seed)
    infos: list[IterationInfo] = []
    clock = Clock()
    reason = "max_iter"
    f = np.inf
    for epoch in range(1, max_iter + 1):
        order = rng.permutation(n).astype(np.int64)
        etas = learning_rates(schedule, eta0, (epoch - 1) * n, n, n, decay, tau)
        loss = GK.sgd_l1_epoch(w, q, lastc, g, order, etas, data.seq_offsets, data.unigram_base,
                               data.bigram_base, data.labels, blk_ptr, blocks, np.int64(L),
                               np.int64(space.bigram_start), rho1 / n, rho2 / n, state)
        f = loss + rho1 * np.abs(w).sum() + 0.5 * rho2 * (w @ w)
        info = clock.record(infos, epoch, float(f), step=float(etas[-1]), n_evals=epoch, active=int(np.count_nonzero(w)))
        if not np.isfinite(f):
            reason = "diverged (lower eta0)"
            break
        if callback is not None and callback(info, w):
            reason = "stopping criterion"
            break
    return OptimizeResult(w, float(f), len(infos), len(infos), False, reason, infos)
