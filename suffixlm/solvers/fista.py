"""Full-batch FISTA with backtracking (Beck & Teboulle 2009) and adaptive restart
(O'Donoghue & Candes 2015): the reference solver the stochastic one is checked against.

The step may also grow: each iteration first tries L * ``L_decrease`` and backtracks
from there, with the momentum sequence of Scheinberg, Goldfarb & Bai (2014) that
keeps the O(1/k^2) rate under such steps. The LM's loss is badly conditioned (root
features see every token, deep contexts one), so a local L far below the global
bound pays."""

from __future__ import annotations

import math
import time
from typing import Callable

import numpy as np

from ._problem import (
    PenaltyFn,
    ProxFn,
    SmoothProblem,
    SolverResult,
    prox_gradient_step,
    quadratic_upper_bound_holds,
)


def fista(
    problem: SmoothProblem,
    prox: ProxFn,
    penalty: PenaltyFn,
    lam: float,
    w0: np.ndarray | None = None,
    L0: float = 1.0,
    max_iter: int = 500,
    tol: float = 1e-9,
    patience: int = 3,
    L_decrease: float = 0.8,
    callback: Callable[[dict], bool | None] | None = None,
) -> SolverResult:
    """Minimise problem.value(w) + lam * penalty(w) over w >= 0.

    Stops after ``max_iter`` iterations, or when the objective's relative decrease
    stays below ``tol`` for ``patience`` iterations in a row. ``callback(info)`` is
    called every iteration; returning True stops early.
    """
    metric = problem.metric
    n = metric.shape[0]
    x = np.zeros(n) if w0 is None else np.maximum(np.asarray(w0, dtype=np.float64), 0.0)
    y = x.copy()
    t = 1.0
    L = float(L0)
    fy, gy = problem.value_grad(y)
    F_old = problem.value(x) + lam * penalty(x)
    history: list[dict] = []
    calm = 0
    converged = False
    t0 = time.perf_counter()
    it = 0
    for it in range(1, max_iter + 1):
        L_prev = L
        L = L * L_decrease  # try a longer step first; backtracking raises it again
        while True:
            x_new = prox_gradient_step(y, gy, L, lam, prox)
            fx = problem.value(x_new)
            if quadratic_upper_bound_holds(fx, fy, gy, x_new - y, metric, L):
                break
            L *= 2.0
        F_new = fx + lam * penalty(x_new)
        if F_new > F_old:
            # adaptive restart: drop the momentum, take a plain step from x next time
            t = 1.0
            y = x
            fy, gy = problem.value_grad(y)
            info = {"iter": it, "objective": F_old, "L": L, "restart": True, "seconds": time.perf_counter() - t0}
            history.append(info)
            calm = 0
            continue
        # Scheinberg, Goldfarb & Bai (2014): t update for a step size that may grow
        t_new = (1.0 + math.sqrt(1.0 + 4.0 * (L / L_prev) * t * t)) / 2.0
        y = x_new + ((t - 1.0) / t_new) * (x_new - x)
        rel = (F_old - F_new) / max(abs(F_new), 1e-300)
        x, t, F_old = x_new, t_new, F_new
        fy, gy = problem.value_grad(y)
        info = {"iter": it, "objective": F_new, "loss": fx, "L": L, "seconds": time.perf_counter() - t0}
        history.append(info)
        if callback is not None and callback(info):
            break
        calm = calm + 1 if rel < tol else 0
        if calm >= patience:
            converged = True
            break
    return SolverResult(w=x, objective=F_old, n_iter=it, converged=converged, history=history)
