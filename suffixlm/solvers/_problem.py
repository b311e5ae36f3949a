"""The interface between a model and the solvers, and the proximal-gradient step both
solvers take."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ._kernels import weighted_dot


class SmoothProblem(Protocol):
    """A smooth mean loss over ``n_samples`` samples (what the mini-batch solver needs).

    metric : float64[n]   weight of each coordinate in inner products and norms
    value_grad(w, batch)  -> (f, g): mean loss over ``batch`` (int64 sample indices;
                             None = all) and its gradient per (trie) coordinate
    value(w, batch)       -> f
    """

    n_samples: int
    metric: np.ndarray

    def value_grad(self, w: np.ndarray, batch: np.ndarray | None = None) -> tuple[float, np.ndarray]: ...

    def value(self, w: np.ndarray, batch: np.ndarray | None = None) -> float: ...


def quadratic_upper_bound_holds(f_new, f_old, g, d, metric, L) -> bool:
    """f(y + d) <= f(y) + <g, d> + L/2 ||d||^2 in the metric (None: plain), with a tiny
    relative slack for rounding."""
    if metric is None:
        rhs = f_old + float(g @ d) + 0.5 * L * float(d @ d)
    else:
        rhs = f_old + weighted_dot(g, d, metric) + 0.5 * L * weighted_dot(d, d, metric)
    return f_new <= rhs + 1e-12 * max(1.0, abs(f_old))


def prox_gradient_step(y, g, L, penalty):
    """prox_{Omega / L}(y - g / L), projected on w >= 0 first when the penalty is
    non-negative (Algorithm 1 of Nelakanti et al., ParamUpdate)."""
    v = y - g / L
    if penalty is None:
        return v
    if penalty.nonneg:
        np.maximum(v, 0.0, out=v)
    return penalty.prox(v, 1.0 / L)


def estimate_lipschitz(value_grad, y, g) -> tuple[float, int]:
    """A first local Lipschitz estimate ||g(y - e g) - g(y)|| / (e ||g||) from one gradient
    difference along -g (then backtracking corrects it). Returns (L, evaluations)."""
    gn = math.sqrt(float(g @ g))
    if gn == 0:
        return 1.0, 0
    eps = 1e-4 / gn
    _, g2 = value_grad(y - eps * g)
    return max(math.sqrt(float((g2 - g) @ (g2 - g))) / (eps * gn), 1e-8), 1
