"""The interface between a model and the solvers, and the proximal-gradient step both
solvers take."""

from __future__ import annotations

import math
from typing import Protocol

import numpy as np

from ._kernels import bound_terms, gradient_step


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


def quadratic_upper_bound_holds(f_new, f_old, g, x, y, metric, L) -> bool:
    """f(x) <= f(y) + <g, x - y> + L/2 ||x - y||^2 in the metric (None: plain), with a
    tiny relative slack for rounding."""
    lin, quad = bound_terms(g, x, y, metric if metric is not None else x, metric is not None)
    return f_new <= f_old + lin + 0.5 * L * quad + 1e-12 * max(1.0, abs(f_old))


def prox_gradient_step(y, g, L, penalty, with_value=False):
    """prox_{Omega / L}(y - g / L), projected on w >= 0 first when the penalty is
    non-negative (Algorithm 1 of Nelakanti et al., ParamUpdate): a new array. With
    ``with_value``, (that array, Omega of it) (0 without a penalty), in one call where
    the penalty has ``prox_value``."""
    v = np.empty_like(y)
    gradient_step(y, g, float(L), penalty is not None and penalty.nonneg, v)
    if penalty is None:
        return (v, 0.0) if with_value else v
    if not with_value:
        return penalty.prox(v, 1.0 / L)
    if hasattr(penalty, "prox_value"):
        return penalty.prox_value(v, 1.0 / L)
    v = penalty.prox(v, 1.0 / L)  # any object with prox and value (the solvers' protocol)
    return v, penalty.value(v)


def estimate_lipschitz(value_grad, y, g) -> tuple[float, int]:
    """A first local Lipschitz estimate ||g(y - e g) - g(y)|| / (e ||g||) from one gradient
    difference along -g (then backtracking corrects it). Returns (L, evaluations)."""
    gn = math.sqrt(float(g @ g))
    if gn == 0:
        return 1.0, 0
    eps = 1e-4 / gn
    _, g2 = value_grad(y - eps * g)
    return max(math.sqrt(float((g2 - g) @ (g2 - g))) / (eps * gn), 1e-8), 1
