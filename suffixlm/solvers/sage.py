"""Accelerated stochastic proximal gradient: Algorithm 1 of Nelakanti et al. (2013),
the SAGE method of Hu, Kwok & Pan (2009), with mini-batches.

Per mini-batch B (with tau = delta = 1 at the start):

    W_bar = (1 - tau) W + tau Z                       (step 4)
    W     = prox([W_bar - grad f_B(W_bar) / rho]_+, lam / rho)   (step 5, ParamUpdate)
    Z     = Z - (rho (W_bar - W) + mu (Z - W_bar)) / (rho tau + mu)   (step 6)
    tau   = (sqrt(delta^2 + 4 delta) - delta) / 2,  delta = (1 - tau) delta   (step 7)

Step 6 is written as in Hu et al.'s SAGE; the paper's typeset form of it loses the
parentheses (for mu = 0 it must reduce to Z = Z + (W - W_bar) / tau).

How rho (the inverse step) is chosen: it starts at ``L0`` and is doubled whenever
the sufficient-decrease condition f_B(W) <= f_B(W_bar) + <g, W - W_bar> +
rho/2 ||W - W_bar||^2 fails on the current mini-batch (backtracking on the batch
objective, one extra function value per step); it never decreases, so it ends as an
upper bound of the local curvature of every batch seen. A global bound also exists
(the softmax Hessian is at most 1/2, and a position has at most m + 1 trie features,
so L <= (m + 1) / 2 for the mean loss); the backtracked rho is usually far smaller.

Noise: with a fixed batch size an accelerated stochastic method stalls at a noise
floor. The batch size therefore grows by ``batch_growth`` every epoch until it is the
whole corpus (a hybrid deterministic-stochastic scheme, Friedlander & Schmidt 2012),
after which each step is a full-batch accelerated step and the method converges to
the exact optimum. Momentum is reset whenever the full objective measured at the end
of an epoch went up (adaptive restart).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from . import state as S
from ._problem import SmoothProblem, prox_gradient_step, quadratic_upper_bound_holds
from .result import Callback, Clock, IterationInfo, OptimizeResult, StopReason, end_of_iteration
from .stopping import RelativeDecrease


@dataclass
class SageState(S.SolverState):
    """Where :func:`sage` stands at the end of an epoch (:mod:`suffixlm.solvers.state`).

    W, Z : float64[n]     the iterate and the auxiliary sequence of Algorithm 1
    tau, delta, rho       its scalars (rho: the backtracked inverse step)
    batch_size            the batch size of the next epoch
    F_old                 the full objective at W
    calm                  epochs in a row the stopping rule found calm
    n_iter, steps, n_evals  epochs, mini-batch steps and evaluations so far
    rng                   the shuffling generator's state (``bit_generator.state``)
    history               one record per epoch, and the first (epoch 0)
    """

    W: np.ndarray = S.floats("n")
    Z: np.ndarray = S.floats("n")
    tau: float = S.real(low=0.0, high=1.0)
    delta: float = S.real(low=0.0, high=1.0)
    rho: float = S.real(low=0.0, low_open=True)
    batch_size: int = S.count(low=1)
    F_old: float = S.real()
    calm: int = S.count()
    n_iter: int = S.iterations()
    steps: int = S.count()
    n_evals: int = S.count()
    rng: dict = S.generator()
    history: list[IterationInfo] = S.history(first=0)

    NAME = "sage"


def sage(
    problem: SmoothProblem,
    penalty,
    x0: np.ndarray | None = None,
    *,
    batch_size: int = 400,
    batch_growth: float = 2.0,
    max_iter: int = 100,
    L0: float = 1.0,
    mu: float = 0.0,
    tol: float = 1e-7,
    patience: int = 3,
    seed: int = 0,
    callback: Callback | None = None,
    state: Optional[SageState] = None,
    checkpoint: Optional[Callable[[SageState], None]] = None,
) -> OptimizeResult:
    """Minimise problem.value(w) + penalty.value(w) over w >= 0 by Algorithm 1.

    An epoch (one iteration here, up to ``max_iter``) is one pass over the samples in a
    fresh random order (``seed``); once the batch is the whole corpus, an epoch is one
    full-batch step. Stops after ``max_iter`` epochs or when the full objective's
    relative decrease per epoch stays below ``tol`` for ``patience`` epochs.
    ``callback(info, w)`` before the first epoch (n_iter 0) and after every epoch;
    returning True stops. ``info.extra`` holds the batch size, the steps so far and rho.

    state: a :class:`SageState` to go on from (x0, batch_size, L0 and seed are then
    unused); ``checkpoint(state)`` at the end of every epoch the solver goes on after
    (:mod:`suffixlm.solvers.state`).
    """
    n = problem.n_samples
    metric = problem.metric
    rule = RelativeDecrease(tol, patience)
    if state is None:
        rng = np.random.default_rng(seed)
        W = np.zeros(metric.shape[0]) if x0 is None else np.maximum(np.asarray(x0, dtype=np.float64), 0.0)
        Z = W.copy()
        tau = delta = 1.0
        rho = float(L0)
        B = max(1, min(int(batch_size), n))
        F_old = problem.value(W) + penalty.value(W)
        history = [IterationInfo(0, F_old, extra={"batch_size": B, "rho": rho, "steps": 0})]
        if callback is not None:
            callback(history[0], W)
        steps = n_evals = 0
        epoch = 0
    else:
        rng = S.rng_from_json(state.rng, "rng")
        W, Z = state.W.copy(), state.Z.copy()
        tau, delta, rho, B, F_old = state.tau, state.delta, state.rho, min(state.batch_size, n), state.F_old
        rule.calm = state.calm
        history = list(state.history)
        steps, n_evals, epoch = state.steps, state.n_evals, state.n_iter
    clock = Clock.after(history)
    reason, converged = StopReason.MAX_ITER, False
    W_epoch_start = W.copy()
    for epoch in range(epoch + 1, max_iter + 1):
        order = rng.permutation(n) if B < n else None
        for start in range(0, n, B):
            batch = None if order is None else np.sort(order[start : start + B])
            W_bar = (1.0 - tau) * W + tau * Z
            f_bar, g = problem.value_grad(W_bar, batch)
            n_evals += 1
            while True:
                W_new = prox_gradient_step(W_bar, g, rho, penalty)
                n_evals += 1
                if quadratic_upper_bound_holds(problem.value(W_new, batch), f_bar, g, W_new, W_bar, metric, rho):
                    break
                rho *= 2.0
            Z = Z - (rho * (W_bar - W_new) + mu * (Z - W_bar)) / (rho * tau + mu)
            W = W_new
            tau = (math.sqrt(delta * delta + 4.0 * delta) - delta) / 2.0
            delta = (1.0 - tau) * delta
            steps += 1
        F_new = problem.value(W) + penalty.value(W)
        restart = F_new > F_old
        if restart:
            # keep the better point and drop the momentum
            W = W_epoch_start.copy()
            F_new = F_old
            Z = W.copy()
            tau = delta = 1.0
        stop = B >= n and not restart and rule.update(F_old, F_new)
        F_old = F_new
        W_epoch_start = W.copy()
        info = clock.record(history, epoch, F_new, step=1.0 / rho, n_evals=n_evals, restart=restart,
                             extra={"batch_size": B, "rho": rho, "steps": steps})
        why = end_of_iteration(callback, info, W, stop)
        if why:
            reason, converged = why, why == StopReason.CONVERGED
            break
        B = min(n, max(B + 1, int(B * batch_growth))) if batch_growth > 1.0 else B
        if checkpoint is not None:
            checkpoint(SageState(W, Z, tau, delta, rho, B, F_old, rule.calm, epoch, steps, n_evals,
                                 S.rng_to_json(rng), history))
    return OptimizeResult(W, F_old, steps, n_evals, converged, reason, history)
