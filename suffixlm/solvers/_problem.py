"""The interface between a model and the solvers."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol

import numpy as np


class SmoothProblem(Protocol):
    """A smooth mean loss over ``n_samples`` samples.

    metric : float64[n]   weight of each coordinate in inner products and norms
    value_grad(w, batch)  -> (f, g): mean loss over ``batch`` (int64 sample indices;
                             None = all) and its gradient per (trie) coordinate
    value(w, batch)       -> f
    """

    n_samples: int
    metric: np.ndarray

    def value_grad(self, w: np.ndarray, batch: np.ndarray | None = None) -> tuple[float, np.ndarray]: ...

    def value(self, w: np.ndarray, batch: np.ndarray | None = None) -> float: ...


ProxFn = Callable[[np.ndarray, float], np.ndarray]
"""prox(v, kappa) -> argmin_w 1/2 ||w - v||^2_metric + kappa * Omega(w) s.t. w >= 0 (may work in place on v)."""

PenaltyFn = Callable[[np.ndarray], float]


@dataclass
class SolverResult:
    w: np.ndarray
    objective: float
    n_iter: int
    converged: bool
    history: list[dict] = field(default_factory=list)


def quadratic_upper_bound_holds(f_new, f_old, g, d, metric, L) -> bool:
    """f(y + d) <= f(y) + <g, d> + L/2 ||d||^2 in the metric (with a tiny relative slack
    for rounding)."""
    from ._kernels import weighted_dot

    rhs = f_old + weighted_dot(g, d, metric) + 0.5 * L * weighted_dot(d, d, metric)
    return f_new <= rhs + 1e-12 * max(1.0, abs(f_old))


def prox_gradient_step(y, g, L, lam, prox):
    """[y - g/L]_+ then prox with lam/L (Algorithm 1, ParamUpdate)."""
    v = y - g / L
    np.maximum(v, 0.0, out=v)
    return prox(v, lam / L)
