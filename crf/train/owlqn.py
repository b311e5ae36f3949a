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
from dataclasses import dataclass, field

import numpy as np

from suffixlm.solvers import state as S
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult

from . import _vector_kernels as V
from .lbfgs import LbfgsHistory

__all__ = ["owlqn", "lbfgs", "IterationInfo", "OptimizeResult", "OwlqnState"]


@dataclass
class OwlqnState:
    """Where :func:`owlqn` stands at the end of an iteration (:mod:`suffixlm.solvers.state`):
    the iterate x float64 (n,), the L-BFGS memory (pairs s, y float32 (m, n), rho float64
    (m,), gamma, count of pairs held, head: the next slot), iterations, evaluations and
    history. The gradients at x are evaluated again when the solver goes on."""

    x: np.ndarray
    s: np.ndarray
    y: np.ndarray
    rho: np.ndarray
    gamma: float
    count: int
    head: int
    n_iter: int
    n_evals: int
    history: list[IterationInfo] = field(default_factory=list)

    NAME = "owlqn"

    def to_arrays(self) -> tuple[dict, dict]:
        return ({"x": self.x, "s": self.s, "y": self.y, "rho": self.rho},
                {"gamma": float(self.gamma), "count": int(self.count), "head": int(self.head),
                 "n_iter": int(self.n_iter), "n_evals": int(self.n_evals), "history": S.history_to_json(self.history)})

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict, n: int) -> "OwlqnState":
        m = arrays["s"].shape[0] if "s" in arrays and arrays["s"].ndim == 2 else 0
        if m < 1:
            raise S.StateError("s: expected an (m, n) array of L-BFGS pairs, m >= 1")
        n_iter = S.number(meta, "n_iter", integer=True, low=0)
        history = S.history_from_json(meta.get("history"), "history")
        S.check_length(history, n_iter)
        return cls(S.array(arrays, "x", (n,)), S.array(arrays, "s", (m, n), np.float32),
                   S.array(arrays, "y", (m, n), np.float32), S.array(arrays, "rho", (m,)),
                   S.number(meta, "gamma", low=0.0, low_open=True), S.number(meta, "count", integer=True, low=0,
                                                                               high=m),
                   S.number(meta, "head", integer=True, low=0, high=m - 1), n_iter,
                   S.number(meta, "n_evals", integer=True, low=0), history)


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
    state: OwlqnState | None = None,
    checkpoint: Callable[[OwlqnState], None] | None = None,
) -> OptimizeResult:
    """Minimise ``fun(x) + rho1*|x|_1 + rho2/2*||x||^2``.

    fun(x) -> (value, gradient) of the smooth data term; the gradient may be a
    float64 (n_parts, n) array whose column sums are the gradient (per-thread
    buffers), and fun may reuse it between calls (it is consumed at once).  ``callback(info, x)`` returning
    True stops the run.  Stops also when ||pg|| / max(||x||, 1) <= gtol (Wapiti's
    test), when an iteration decreases the objective by less than
    ftol * max(|f|, 1) (no progress left at machine precision), after
    ``max_iter`` iterations, or when the line search fails.

    state: an :class:`OwlqnState` to go on from (x0 is then unused; its memory must hold
    ``history`` pairs); ``checkpoint(state)`` at the end of every iteration the solver
    goes on after (:mod:`suffixlm.solvers.state`).
    """
    if rho1 < 0 or rho2 < 0:
        raise ValueError("rho1 and rho2 must be >= 0")
    if state is not None and state.s.shape[0] != history:
        raise ValueError(f"the state holds {state.s.shape[0]} L-BFGS pairs, history = {history}")
    n = x0.shape[0] if state is None else state.x.shape[0]
    x = np.array(x0 if state is None else state.x, dtype=np.float64)
    x_new = np.empty(n)
    sg = np.empty(n)  # smooth gradient at x
    sg_new = np.empty(n)
    pg = np.empty(n)
    pg_new = np.empty(n)
    d = np.empty(n)
    mem = LbfgsHistory(n, history)
    project = rho1 > 0

    def evaluate(xx, sg_out, pg_out, x_old, sg_old, slot=None):
        """f(xx) with its smooth and pseudo gradients; also writes the L-BFGS pair
        (xx - x_old, sg_out - sg_old) into the next history slot (see commit), or into
        ``slot``."""
        val, grad = fun(xx)
        if grad.ndim == 1:
            grad = grad.reshape(1, -1)
        s_slot, y_slot = mem.slot() if slot is None else slot
        pen, nnz, pg2, x2, sy, yy = V.penalised_pair(xx, grad, rho1, rho2, sg_out, pg_out, x_old, sg_old,
                                                     s_slot, y_slot)
        pair[0], pair[1] = sy, yy
        return val + pen, nnz, pg2, x2

    pair = [0.0, 0.0]

    if state is None:
        f, nnz, pg2, x2 = evaluate(x, sg, pg, x, sg)  # no previous point: the slot gets zeros, unused
        evals = 1
        infos: list[IterationInfo] = []
        it = 0
    else:
        mem.s[...], mem.y[...], mem.rho[...] = state.s, state.y, state.rho
        mem.gamma, mem.count, mem.head = state.gamma, state.count, state.head
        # the gradients at x again (the same bits), the held pairs left as they are
        scratch = (np.empty(n, dtype=np.float32), np.empty(n, dtype=np.float32))
        f, nnz, pg2, x2 = evaluate(x, sg, pg, x, sg, scratch)
        evals, infos, it = state.n_evals, list(state.history), state.n_iter
    clock = Clock.after(infos)
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
        if checkpoint is not None:
            checkpoint(OwlqnState(x, mem.s, mem.y, mem.rho, mem.gamma, mem.count, mem.head, it, evals, infos))
    return OptimizeResult(x, f, it, evals, reason in ('zero gradient', 'gradient tolerance', 'no progress'), reason, infos)


def lbfgs(fun, x0, rho2: float = 1e-4, **options) -> OptimizeResult:
    """Minimise fun(x) + rho2/2 ||x||^2 by L-BFGS: :func:`owlqn` with rho1 = 0."""
    return owlqn(fun, x0, rho1=0.0, rho2=rho2, **options)
