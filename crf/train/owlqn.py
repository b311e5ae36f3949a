"""OWL-QN (Andrew & Gao 2007) for  fun(x) + rho1 |x|_1 + rho2/2 ||x||^2.

Each iteration: the orthant-wise pseudo-gradient pg; the L-BFGS direction
d = -H pg built from smooth-gradient differences, with the components that do
not agree in sign with -pg zeroed; a backtracking line search along d projected
on the current orthant, accepting when
f(x') <= f(x) + gamma * pg . (x' - x).  With rho1 = 0 this is plain L-BFGS.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult

from . import _vector_kernels as V
from .lbfgs import LbfgsHistory

__all__ = ["owlqn", "lbfgs", "IterationInfo", "OptimizeResult"]


def owlqn(
    fun: Callable[[np.ndarray], tuple[float, np.ndarray]],
    x0: np.ndarray,
    rho1: float = 0.5,
    rho2: float = 1e-4,
    history: int = 5,
    max_iter: int | None = None,
    gtol: float = 1e-5,
    ftol: float = 1e-12,
    max_linesearch: int = 40,
    callback: Callable[[IterationInfo, np.ndarray], bool] | None = None,
) -> OptimizeResult:
    """Minimise ``fun(x) + rho1*|x|_1 + rho2/2*||x||^2``.

    fun(x) -> (value, gradient) of the smooth data term; the gradient may be a
    float64 (n_parts, n) array whose column sums are the gradient (per-thread
    buffers), and fun may reuse it between calls (it is consumed at once).  ``callback(info, x)`` returning
    True stops the run.  Stops also when ||pg|| / max(||x||, 1) <= gtol (Wapiti's
    test), when an iteration decreases the objective by less than
    ftol * max(|f|, 1) (no progress left at machine precision), after
    ``max_iter`` iterations, or when the line search fails.
    """
    if rho1 < 0 or rho2 < 0:
        raise ValueError("rho1 and rho2 must be >= 0")
    n = x0.shape[0]
    x = np.array(x0, dtype=np.float64)
    x_new = np.empty(n)
    sg = np.empty(n)  # smooth gradient at x
    sg_new = np.empty(n)
    pg = np.empty(n)
    pg_new = np.empty(n)
    d = np.empty(n)
    mem = LbfgsHistory(n, history)
    project = rho1 > 0

    def evaluate(xx, sg_out, pg_out, x_old, sg_old):
        """f(xx) with its smooth and pseudo gradients; also writes the L-BFGS pair
        (xx - x_old, sg_out - sg_old) into the next history slot (see commit)."""
        val, grad = fun(xx)
        if grad.ndim == 1:
            grad = grad.reshape(1, -1)
        s_slot, y_slot = mem.slot()
        pen, nnz, pg2, x2, sy, yy = V.penalised_pair(xx, grad, rho1, rho2, sg_out, pg_out, x_old, sg_old,
                                                     s_slot, y_slot)
        pair[0], pair[1] = sy, yy
        return val + pen, nnz, pg2, x2

    pair = [0.0, 0.0]

    clock = Clock()
    f, nnz, pg2, x2 = evaluate(x, sg, pg, x, sg)  # no previous point: the slot gets zeros, unused
    evals = 1
    infos: list[IterationInfo] = []
    it = 0
    reason = "max_iter"
    while max_iter is None or it < max_iter:
        gd = mem.direction(pg, d, constrain=project)
        if not gd < 0:  # not a descent direction: restart from steepest descent
            mem.count = 0
            np.negative(pg, out=d)
            gd = -pg2
            if gd == 0:
                reason = "zero gradient"
                break
        step = 1.0
        if mem.count == 0:
            step = 1.0 / math.sqrt(-gd)
        ok = False
        for _ in range(max_linesearch):
            dirderiv = V.orthant_step(x, d, step, pg, project, x_new)
            f_new, nnz_new, pg2_new, x2_new = evaluate(x_new, sg_new, pg_new, x, sg)
            evals += 1
            if f_new <= f + 1e-4 * dirderiv:
                ok = True
                break
            step *= 0.5
        if not ok:
            reason = "line search failed"
            break
        progress = f - f_new
        mem.commit(pair[0], pair[1])
        x, x_new = x_new, x
        sg, sg_new = sg_new, sg
        pg, pg_new = pg_new, pg
        f, nnz, pg2, x2 = f_new, nnz_new, pg2_new, x2_new
        it += 1
        info = clock.record(infos, it, f, step=step, n_evals=evals, active=int(nnz))
        if callback is not None and callback(info, x):
            reason = "stopping criterion"
            break
        if math.sqrt(pg2) / max(math.sqrt(x2), 1.0) <= gtol:
            reason = "gradient tolerance"
            break
        if progress <= ftol * max(abs(f), 1.0):
            reason = "no progress"
            break
    return OptimizeResult(x, f, it, evals, reason in ('zero gradient', 'gradient tolerance', 'no progress'), reason, infos)


def lbfgs(fun, x0, rho2: float = 1e-4, **options) -> OptimizeResult:
    """Minimise fun(x) + rho2/2 ||x||^2 by L-BFGS: :func:`owlqn` with rho1 = 0."""
    return owlqn(fun, x0, rho1=0.0, rho2=rho2, **options)
