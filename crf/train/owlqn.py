"""OWL-QN (Andrew & Gao 2007) for  fun(x) + rho1 |x|_1 + rho2/2 ||x||^2.

Each iteration: the orthant-wise pseudo-gradient pg; the L-BFGS direction
d = -H pg built from smooth-gradient differences, with the components that do
not agree in sign with -pg zeroed; a backtracking line search along d projected
on the current orthant, accepting when
f(x') <= f(x) + gamma * pg . (x' - x).  With rho1 = 0 this is plain L-BFGS.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from suffixlm.memory import allocate
from suffixlm.solvers import state as S
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _vector_kernels as V
from .lbfgs import LbfgsHistory

__all__ = ["owlqn", "lbfgs", "IterationInfo", "OptimizeResult", "OwlqnState", "train_crf"]

SPARSE_DIRECTION = 0.25
"""A direction with at most this fraction of non-zeros is kept as (index, value) pairs and
the trial point made in x itself (beyond it, two more dense vectors are worth it)."""


@dataclass
class OwlqnState(S.SolverState):
    """Where :func:`owlqn` stands at the end of an iteration (:mod:`suffixlm.solvers.state`):
    the iterate x float64 (n,), the L-BFGS memory (pairs s, y float32 (m, n) (s may be the
    solver's sparse rows, :class:`crf.train.lbfgs.SparsePairs`, stored dense), rho float64
    (m,), gamma, count of pairs held, head: the next slot), iterations, evaluations and
    history. The gradients at x are evaluated again when the solver goes on."""

    x: np.ndarray = S.floats("n")
    s: np.ndarray = S.floats("m", "n", dtype=np.float32)
    y: np.ndarray = S.floats("m", "n", dtype=np.float32)
    rho: np.ndarray = S.floats("m")
    gamma: float = S.real(low=0.0, low_open=True)
    count: int = S.count(high=lambda d: d["m"])
    head: int = S.count(high=lambda d: d["m"] - 1)
    n_iter: int = S.iterations()
    n_evals: int = S.count()
    history: list[IterationInfo] = S.history()

    NAME = "owlqn"

    @classmethod
    def dims(cls, arrays: dict, meta: dict, n: int) -> dict:
        m = arrays["s"].shape[0] if "s" in arrays and arrays["s"].ndim == 2 else 0
        if m < 1:
            raise S.StateError("s: expected an (m, n) array of L-BFGS pairs, m >= 1")
        return {"n": n, "m": m}


def _takes_out(fun) -> bool:
    """Whether fun accepts ``out=`` (the gradient written into a vector the caller gives)."""
    try:
        return "out" in inspect.signature(fun).parameters
    except (TypeError, ValueError):
        return False


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
    float64 (n_parts, n) array whose column sums are the gradient, and fun may
    reuse it between calls (it is consumed at once). A fun with an ``out``
    parameter (``fun(x, out=g)``, e.g. :meth:`crf.inference.Objective.value_and_gradient`)
    writes the gradient into the solver's own vector: no copy is kept.  ``callback(info, x)`` returning
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
    x = allocate(n, np.float64, "OWL-QN's weights")
    x[:] = x0 if state is None else state.x
    # Weight-sized float64 vectors: x, the smooth gradients at x and at the trial point
    # (a fun taking ``out`` writes the data gradient into the latter itself), and, only
    # for a dense direction, d and x_new. The pseudo-gradient is computed from (x, sg)
    # where it is read. Under l1 the direction is sparse (non-zero only where the
    # pseudo-gradient is): it is kept as (index, value) pairs, the trial point is made
    # in x itself (the moved components saved, put back if the step is refused) and the
    # step s is stored sparse in the L-BFGS memory.
    sg = allocate(n, np.float64, "OWL-QN's gradient")  # smooth gradient at x
    sg_new = allocate(n, np.float64, "OWL-QN's trial gradient")  # at the trial point; the direction's work vector in between
    x_new = d = None
    mem = LbfgsHistory(n, history)
    project = rho1 > 0
    in_place = _takes_out(fun)
    itype = np.int32 if n < 2**31 else np.int64
    no_idx = np.zeros(0, dtype=itype)

    def gradient(xx, sg_out):
        if in_place:
            val, grad = fun(xx, out=sg_out)
        else:
            val, grad = fun(xx)
        return val, (grad.reshape(1, -1) if grad.ndim == 1 else grad)

    def evaluate(xx, sg_out, x_old, sg_old):
        """f(xx) with its smooth gradient (dense step from x_old); also writes the L-BFGS
        pair (xx - x_old, sg_out - sg_old) into the next history slot (see commit)."""
        val, grad = gradient(xx, sg_out)
        s_slot, y_slot = mem.slot()
        pen, nnz, pg2, x2, sy, yy = V.smooth_pair(xx, grad, rho1, rho2, sg_out, x_old, sg_old, s_slot, y_slot)
        pair[0], pair[1] = sy, yy
        return val + pen, nnz, pg2, x2

    def evaluate_sparse(xx, sg_out, sg_old, idx, x_save, s_val, y_slot):
        """f(xx) with its smooth gradient, xx having moved from x_save at idx only: y into
        y_slot, s into s_val (float32 (len(idx),))."""
        val, grad = gradient(xx, sg_out)
        pen, nnz, pg2, x2, _, yy = V.smooth_pair(xx, grad, rho1, rho2, sg_out, no_s, sg_old, no_s, y_slot)
        pair[0], pair[1] = V.sparse_step_pair(xx, idx, x_save, y_slot, s_val), yy
        return val + pen, nnz, pg2, x2

    pair = [0.0, 0.0]
    no_s = np.zeros(0, dtype=np.float32)
    y_scratch = mem.y[mem.head] if state is None else np.empty(n, dtype=np.float32)
    # the gradients at x (again, the same bits, on resume): no step, y = 0 in an unused slot
    f, nnz, pg2, x2 = evaluate_sparse(x, sg, sg, no_idx, np.zeros(0), np.zeros(0, dtype=np.float32), y_scratch)
    del y_scratch
    if state is None:
        evals = 1
        infos: list[IterationInfo] = []
        it = 0
    else:
        mem.set_pairs(state.s, state.y, state.rho, state.gamma, state.count, state.head)
        evals, infos, it = state.n_evals, list(state.history), state.n_iter
    clock = Clock.after(infos)
    reason = StopReason.MAX_ITER
    while max_iter is None or it < max_iter:
        if not project and d is None:
            x_new, d = allocate(n, np.float64, "OWL-QN's trial point"), allocate(n, np.float64, "OWL-QN's direction")
        q = sg_new if project else d
        gd = mem.direction(sg, q, constrain=project, x=x, rho1=rho1)
        if not gd < 0:  # not a descent direction: restart from steepest descent
            mem.count = 0
            V.pseudo_copy(x, sg, rho1, True, q, True)
            gd = -pg2
            if gd == 0:
                reason = StopReason.ZERO_GRADIENT
                break
        mem.release_slot()
        step = 1.0
        if mem.count == 0:
            step = 1.0 / math.sqrt(-gd)
        sparse = False
        if project:
            nnz_d = int(np.count_nonzero(q))
            sparse = nnz_d <= SPARSE_DIRECTION * n
            if sparse:
                d_idx = np.empty(nnz_d, dtype=itype)
                d_val = np.empty(nnz_d)
                V.compress(q, d_idx, d_val)
                x_save = x[d_idx]
                s_val = np.empty(nnz_d, dtype=np.float32)
            else:
                if d is None:
                    x_new, d = allocate(n, np.float64, "OWL-QN's trial point"), allocate(n, np.float64, "OWL-QN's direction")
                d[:] = q
        ok = False
        for _ in range(max_linesearch):
            if sparse:
                dirderiv = V.sparse_orthant_step(x, d_idx, d_val, x_save, step, sg, rho1, project)
                f_new, nnz_new, pg2_new, x2_new = evaluate_sparse(x, sg_new, sg, d_idx, x_save, s_val,
                                                                  mem.y[mem.head])
            else:
                dirderiv = V.pseudo_orthant_step(x, d, step, sg, rho1, project, x_new)
                f_new, nnz_new, pg2_new, x2_new = evaluate(x_new, sg_new, x, sg)
            evals += 1
            if f_new <= f + 1e-4 * dirderiv:
                ok = True
                break
            if sparse:
                x[d_idx] = x_save
            step *= 0.5
        if not ok:
            reason = StopReason.LINE_SEARCH_FAILED
            break
        progress = f - f_new
        if sparse:
            mem.commit_sparse(d_idx, s_val, pair[0], pair[1])
            d_idx = d_val = x_save = s_val = None
        else:
            mem.commit(pair[0], pair[1])
            x, x_new = x_new, x
        sg, sg_new = sg_new, sg
        f, nnz, pg2, x2 = f_new, nnz_new, pg2_new, x2_new
        it += 1
        info = clock.record(infos, it, f, step=step, n_evals=evals, active=int(nnz))
        if callback is not None and callback(info, x):
            reason = StopReason.STOPPING_CRITERION
            break
        if math.sqrt(pg2) / max(math.sqrt(x2), 1.0) <= gtol:
            reason = StopReason.GRADIENT_TOLERANCE
            break
        if progress <= ftol * max(abs(f), 1.0):
            reason = StopReason.NO_PROGRESS
            break
        if checkpoint is not None:
            checkpoint(OwlqnState(x, mem.s, mem.y, mem.rho, mem.gamma, mem.count, mem.head, it, evals, infos))
    return OptimizeResult(x, f, it, evals, reason in ('zero gradient', 'gradient tolerance', 'no progress'), reason, infos)


def lbfgs(fun, x0, rho2: float = 1e-4, **options) -> OptimizeResult:
    """Minimise fun(x) + rho2/2 ||x||^2 by L-BFGS: :func:`owlqn` with rho1 = 0."""
    return owlqn(fun, x0, rho1=0.0, rho2=rho2, **options)


def train_crf(run) -> OptimizeResult:
    """``owlqn`` and ``lbfgs`` of :mod:`crf.solvers` (rho1 = 0 for lbfgs)."""
    st = run.settings
    return owlqn(run.objective.value_and_gradient_parts, run.x0, rho1=st.rho1, rho2=st.rho2, history=st.history,
                 max_iter=st.max_iter, gtol=st.gtol, max_linesearch=st.max_linesearch, callback=run.callback,
                 **run.resume)
