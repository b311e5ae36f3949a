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
from typing import Callable, Optional

import numpy as np

from ._kernels import extrapolate
from ._problem import estimate_lipschitz, prox_gradient_step, quadratic_upper_bound_holds
from .result import Callback, Clock, IterationInfo, OptimizeResult, end_of_iteration
from .stopping import RelativeDecrease


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
) -> OptimizeResult:
    """Minimise f(x) + penalty.value(x) from x0.

    value_grad(x) -> (f, gradient float64[n]); value(x) -> f (default: value_grad's);
    penalty: a :class:`suffixlm.penalties.Penalty` (or None: plain gradient descent).
    L0: first inverse step (None: :func:`estimate_lipschitz`). Stops after ``max_iter``
    iterations, when the objective's relative decrease stays below ``tol`` for
    ``patience`` iterations (:class:`RelativeDecrease` with ``tol_floor``), when the
    callback returns True, or, with ``stop_on_stall``, when even a plain proximal step
    from the last iterate fails to decrease the objective (a rounding-level stall).
    A non-negative penalty projects x0 on w >= 0.
    """
    if value is None:
        def value(x):
            return value_grad(x)[0]

    def omega(x):
        return penalty.value(x) if penalty is not None else 0.0

    x = np.array(x0, dtype=np.float64)
    if penalty is not None and penalty.nonneg:
        np.maximum(x, 0.0, out=x)
    y = x.copy()
    t = 1.0
    fy, gy = value_grad(y)
    F_old = value(x) + omega(x)
    n_evals = 2
    if L0 is None:
        L, k = estimate_lipschitz(value_grad, y, gy)
        n_evals += k
    else:
        L = float(L0)
    rule = RelativeDecrease(tol, patience, tol_floor)
    history: list[IterationInfo] = []
    clock = Clock()
    reason, converged = "max_iter", False
    for it in range(1, max_iter + 1):
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
                reason, converged = "no progress", True
                break
            if t == 1.0 and end_of_iteration(callback, info, x, False):
                # stalled without stop_on_stall: restarts repeat until max_iter, so the
                # callback (a time budget, a user's stop) must be heard here too
                reason = "callback"
                break
            # adaptive restart: drop the momentum, take a plain step from x next time
            t = 1.0
            rule.reset()
            y = x
            fy, gy = value_grad(y)
            n_evals += 1
            continue
        # Scheinberg, Goldfarb & Bai (2014): t update for a step size that may grow
        t_new = (1.0 + math.sqrt(1.0 + 4.0 * (L / L_prev) * t * t)) / 2.0
        y = np.empty_like(x)
        extrapolate(x_new, x, (t - 1.0) / t_new, y)
        stop = rule.update(F_old, F_new)
        x, t, F_old = x_new, t_new, F_new
        fy, gy = value_grad(y)
        n_evals += 1
        info = clock.record(history, it, F_new, step=1.0 / L, n_evals=n_evals,
                             active=int(np.count_nonzero(x)), loss=fx)
        why = end_of_iteration(callback, info, x, stop)
        if why:
            reason, converged = why, why == "converged"
            break
    return OptimizeResult(x, F_old, it if max_iter > 0 else 0, n_evals, converged, reason, history)
