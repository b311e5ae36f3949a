"""What every solver of both packages returns and reports: one result type, one record
per iteration, one callback protocol.

``callback(info, x)`` is called after every iteration (epoch, pass) with the record and
the current iterate (not a copy: read it, do not keep or change it); returning True
stops the solver with reason ``"callback"``. The LM's and the CRF's estimators both use
it for progress lines, validation scores and their stopping rules
(:mod:`suffixlm.solvers.stopping`).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from enum import Enum
from typing import Callable, Optional

import numpy as np


class StopReason(str, Enum):
    """Why a solver stopped: one list for every solver of both packages. A member is its
    words (``str(r)``, ``f"{r}"``, ``r == "max_iter"``, JSON), as progress lines and model
    files have always shown them."""

    MAX_ITER = "max_iter"  # the cap on iterations (epochs, passes)
    CALLBACK = "callback"  # the caller's callback asked to stop
    STOPPING_CRITERION = "stopping criterion"  # the estimators' window rule (Wapiti's / CRFsuite's)
    CONVERGED = "converged"  # the solver's own tolerance
    GRADIENT_TOLERANCE = "gradient tolerance"
    ZERO_GRADIENT = "zero gradient"
    NO_PROGRESS = "no progress"
    NO_MISTAKE = "no mistake"  # a perceptron pass without a mistake
    LINE_SEARCH_FAILED = "line search failed"
    DIVERGED = "diverged"
    DIVERGED_LOWER_ETA0 = "diverged (lower eta0)"
    DIVERGED_OVERFLOW = "diverged (overflow)"

    def __str__(self) -> str:
        return self.value

    __format__ = str.__format__

    @property
    def is_convergence(self) -> bool:
        """Whether the solver's own convergence rule stopped it (not the cap, the caller, or a failure)."""
        return self in _CONVERGENCE


_CONVERGENCE = frozenset({StopReason.CONVERGED, StopReason.GRADIENT_TOLERANCE, StopReason.ZERO_GRADIENT,
                          StopReason.NO_PROGRESS, StopReason.NO_MISTAKE})


class ConvergenceWarning(UserWarning):
    """A fit stopped at its iteration cap before its convergence rule held (scikit-learn's
    ``ConvergenceWarning``): raise ``max_iter``, or loosen the tolerance."""


@dataclass
class IterationInfo:
    """One iteration's record.

    n_iter    iterations (epochs, passes) done so far, 1-based
    objective the objective after it (solver-specific for the stochastic solvers: their
              docstrings say what)
    seconds   wall seconds of this iteration; elapsed: since the solver started
    step      step size (1/L, a learning rate) where the solver has one
    n_evals   function / gradient evaluations (or effective passes) so far
    active    non-zero weights, where the solver counts them
    loss      the smooth part of the objective, where it differs
    restart   the momentum was reset in this iteration (accelerated solvers)
    extra     whatever the caller adds (validation perplexity, errors, timings)
    """

    n_iter: int
    objective: float
    seconds: float = 0.0
    elapsed: float = 0.0
    step: Optional[float] = None
    n_evals: Optional[int] = None
    active: Optional[int] = None
    loss: Optional[float] = None
    restart: bool = False
    extra: dict = field(default_factory=dict)


@dataclass
class OptimizeResult:
    """x: the solution; objective its value; n_iter iterations done; n_evals evaluations;
    converged: stopped by its convergence rule (not by the cap or a failure); reason: why
    it stopped (a :class:`StopReason`, which reads as its words); history: one :class:`IterationInfo` per iteration."""

    x: np.ndarray
    objective: float
    n_iter: int
    n_evals: int
    converged: bool
    reason: StopReason
    history: list[IterationInfo] = field(default_factory=list)


Callback = Callable[[IterationInfo, np.ndarray], Optional[bool]]


class Clock:
    """Per-iteration and elapsed wall time for :class:`IterationInfo`; ``elapsed``: the
    time already spent (a run that goes on from a checkpoint)."""

    def __init__(self, elapsed: float = 0.0) -> None:
        self.last = time.perf_counter()
        self.start = self.last - elapsed

    def tick(self) -> tuple[float, float]:
        now = time.perf_counter()
        lap, self.last = now - self.last, now
        return lap, now - self.start

    @classmethod
    def after(cls, history: list[IterationInfo]) -> "Clock":
        """A clock that goes on from the last record of ``history`` (none: from zero)."""
        return cls(history[-1].elapsed if history else 0.0)

    def record(self, history: list[IterationInfo], n_iter: int, objective: float, **fields) -> IterationInfo:
        """The :class:`IterationInfo` of an iteration that ends now, appended to history."""
        lap, elapsed = self.tick()
        info = IterationInfo(n_iter, objective, lap, elapsed, **fields)
        history.append(info)
        return info


def end_of_iteration(callback: Callback | None, info: IterationInfo, x: np.ndarray,
                     converged: bool) -> StopReason | None:
    """Why to stop after an iteration: ``CALLBACK`` when the callback asks to,
    ``CONVERGED`` when the solver's rule says so, otherwise None (go on)."""
    if callback is not None and callback(info, x):
        return StopReason.CALLBACK
    return StopReason.CONVERGED if converged else None
