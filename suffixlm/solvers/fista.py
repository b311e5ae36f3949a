"""FISTA with backtracking (Beck & Teboulle 2009) and adaptive restart (O'Donoghue &
Candes 2015): the one proximal-gradient solver of both packages (the log-linear LM's
default solver, and ``CRF(algorithm="fista")`` for the tree penalties).

Minimises f(x) + Omega(x), f smooth, Omega a penalty object
(:class:`suffixlm.penalties.Penalty`: its ``prox`` also carries the sign constraint
w >= 0 when the penalty has ``nonneg``).

The step may also grow: each iteration first tries L * ``L_decrease`` and backtracks
(doubling L) from there until f(z) <= f(y) + <g, z - y> + L/2 ||z - y||^2 holds in the
metric, with the momentum sequence of Scheinberg, Goldfarb & Bai (2014) that keeps the
O(1/k^2) rate under such steps. The LM's loss is badly conditioned (root features see
every token, deep contexts one), so a local L far below the global bound pays. When
the objective goes up, the momentum restarts from the last iterate.

Metric: with ``metric`` (float64[n], > 0) inner products and norms are
<a, b> = sum_i metric[i] a[i] b[i], so that a coordinate standing for ``metric[i]``
identical coordinates (a collapsed suffix-tree node) behaves exactly like them; the
gradient is then given per such coordinate (the LM's trie coordinates).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np

from ..memory import allocate, start_point
from . import state as S
from ._kernels import extrapolate
from ._problem import estimate_lipschitz, prox_gradient_step, quadratic_upper_bound_holds
from .result import Callback, Clock, IterationInfo, OptimizeResult, StopReason, end_of_iteration
from .stopping import RelativeDecrease


@dataclass
class FistaState(S.SolverState):
    """Where :func:`fista` stands at the end of an iteration (:mod:`suffixlm.solvers.state`).

    x, y : float64[n]  the iterate and the extrapolated point the next step starts from
    t, L               the momentum sequence and the inverse step
    F_old              the objective at x
    calm               iterations in a row the stopping rule found calm
    n_iter, n_evals    iterations and evaluations so far; history: one record per iteration
    """

    x: np.ndarray = S.floats("n")
    y: np.ndarray = S.floats("n")
    t: float = S.real(low=1.0)
    L: float = S.real(low=0.0, low_open=True)
    F_old: float = S.real()
    calm: int = S.count()
    n_iter: int = S.iterations()
    n_evals: int = S.count()
    history: list[IterationInfo] = S.history()

    NAME = "fista"


def fista(
    value_grad: Callable[[np.ndarray], tuple[float, np.ndarray]],
    penalty,
    x0: np.ndarray,
    *,
    value: Optional[Callable[[np.ndarray], float]] = None,
    metric: Optional[np.ndarray] = None,
    L0: Optional[float] = None,
    L_decrease: float = 0.8,
    max_iter: int = 500,
    tol: float = 1e-9,
    patience: int = 3,
    tol_floor: float = 1e-300,
    stop_on_stall: bool = False,
    callback: Optional[Callback] = None,
    state: Optional[FistaState] = None,
    checkpoint: Optional[Callable[[FistaState], None]] = None,
) -> OptimizeResult:
    """Minimise f(x) + penalty.value(x) from x0.

    value_grad(x) -> (f, gradient float64[n]); value(x) -> f (default: value_grad's);
    penalty: a :class:`suffixlm.penalties.Penalty` (or None: plain gradient descent).
    L0: first inverse step (None: :func:`estimate_lipschitz`). Stops after ``max_iter``
    iterations, when the objective's relative decrease, scaled by (longest step so far /
    this step), stays below ``tol`` for ``patience`` iterations (:class:`RelativeDecrease`
    with ``tol_floor``: steps cut short by backtracking do not pass for convergence), when the
    callback returns True, or, with ``stop_on_stall``, when even a plain proximal step
    from the last iterate fails to decrease the objective (a rounding-level stall).
    A non-negative penalty projects x0 on w >= 0.

    state: a :class:`FistaState` to go on from (x0 and L0 are then unused);
    ``checkpoint(state)`` at the end of every iteration the solver goes on after
    (:mod:`suffixlm.solvers.state`).
    """
    if value is None:
        def value(x):
            return value_grad(x)[0]

    def omega(x):
        return penalty.value(x) if penalty is not None else 0.0

    rule = RelativeDecrease(tol, patience, tol_floor)
    if state is None:
        x = start_point(np.shape(x0)[0], x0, "FISTA's weights")
        if penalty is not None and penalty.nonneg:
            np.maximum(x, 0.0, out=x)
        y = allocate(x.shape[0], np.float64, "FISTA's extrapolated point")
        y[:] = x
        t = 1.0
        fy, gy = value_grad(y)
        F_old = value(x) + omega(x)
        n_evals = 2
        if L0 is None:
            L, k = estimate_lipschitz(value_grad, y, gy)
            n_evals += k
        else:
            L = float(L0)
        history: list[IterationInfo] = []
        it = 0
    else:
        x, y = state.x.copy(), state.y.copy()
        t, L, F_old, n_evals, it = state.t, state.L, state.F_old, state.n_evals, state.n_iter
        fy, gy = value_grad(y)  # the same bits as before the stop; not counted twice
        rule.calm = state.calm
        history = list(state.history)

    def save():
        if checkpoint is not None:
            checkpoint(FistaState(x, y, t, L, F_old, rule.calm, it, n_evals, history))

    clock = Clock.after(history)
    # the longest step so far (restored with the history on resume): the stopping rule
    # scales each decrease by how much shorter than that the step was
    step_max = max((h.step for h in history if h.step is not None and not h.restart), default=0.0)
    reason, converged = StopReason.MAX_ITER, False
    for it in range(it + 1, max_iter + 1):
        L_prev = L
        L = L * L_decrease  # try a longer step first; backtracking raises it again
        while True:
            x_new, omega_new = prox_gradient_step(y, gy, L, penalty, with_value=True)
            fx = value(x_new)
            n_evals += 1
            if quadratic_upper_bound_holds(fx, fy, gy, x_new, y, metric, L):
                break
            L *= 2.0
        F_new = fx + omega_new
        if F_new > F_old:
            info = clock.record(history, it, F_old, step=1.0 / L, n_evals=n_evals, loss=fx, restart=True)
            if stop_on_stall and t == 1.0:  # already a plain step from x: nothing left to gain
                reason, converged = StopReason.NO_PROGRESS, True
                break
            if t == 1.0 and end_of_iteration(callback, info, x, False):
                # stalled without stop_on_stall: restarts repeat until max_iter, so the
                # callback (a time budget, a user's stop) must be heard here too
                reason = StopReason.CALLBACK
                break
            # adaptive restart: drop the momentum, take a plain step from x next time
            t = 1.0
            rule.reset()
            y = x
            fy, gy = value_grad(y)
            n_evals += 1
            save()
            continue
        # Scheinberg, Goldfarb & Bai (2014): t update for a step size that may grow
        t_new = (1.0 + math.sqrt(1.0 + 4.0 * (L / L_prev) * t * t)) / 2.0
        y = allocate(x.shape[0], np.float64, "FISTA's extrapolated point")
        extrapolate(x_new, x, (t - 1.0) / t_new, y)
        step_max = max(step_max, 1.0 / L)
        stop = rule.update(F_old, F_new, step_max * L)
        x, t, F_old = x_new, t_new, F_new
        fy, gy = value_grad(y)
        n_evals += 1
        info = clock.record(history, it, F_new, step=1.0 / L, n_evals=n_evals,
                             active=int(np.count_nonzero(x)), loss=fx)
        why = end_of_iteration(callback, info, x, stop)
        if why:
            reason, converged = why, why == StopReason.CONVERGED
            break
        save()
    return OptimizeResult(x, F_old, it, n_evals, converged, reason, history)
