"""Stopping rules shared by the solvers and the estimators (the counterpart of Wapiti's
``progress.c``).

* :class:`RelativeDecrease` — stop when the objective's relative decrease stays below
  ``tol`` for ``patience`` iterations in a row (the proximal-gradient solvers' rule).
* :class:`WindowRule` — Wapiti's rule: stop when the objective improved by less than
  ``eps`` (relative) over the last ``window`` iterations, or, with a development set,
  when its error varied by less than ``eps`` points over that window.
"""

from __future__ import annotations

import math


class RelativeDecrease:
    """(F_old - F_new) / max(|F_new|, floor) < tol for ``patience`` updates in a row.

    ``update(..., scale=s)`` judges the decrease times s instead: a proximal-gradient
    step's decrease is about proportional to the step size, so a solver whose step was
    cut by backtracking passes (its largest step / this step) to compare what a full
    step would have gained: a run of short steps is not mistaken for convergence."""

    def __init__(self, tol: float, patience: int = 3, floor: float = 1e-300):
        if not (isinstance(tol, (int, float)) and math.isfinite(tol) and tol >= 0):
            raise ValueError(f"tol = {tol!r}: expected a finite number >= 0")
        if int(patience) < 1:
            raise ValueError(f"patience = {patience!r}: expected an integer >= 1")
        self.tol, self.patience, self.floor = float(tol), int(patience), float(floor)
        self.calm = 0

    def reset(self) -> None:
        """Start counting again (after a restart of the solver's momentum)."""
        self.calm = 0

    def update(self, f_old: float, f_new: float, scale: float = 1.0) -> bool:
        """Record one iteration; True when the rule says stop."""
        rel = (f_old - f_new) / max(abs(f_new), self.floor) * scale
        self.calm = self.calm + 1 if rel < self.tol else 0
        return self.calm >= self.patience


class WindowRule:
    """Wapiti's stopping rule over a window of ``window`` iterations (0: never stops)."""

    def __init__(self, eps: float, window: int):
        if not (math.isfinite(eps) and eps >= 0):
            raise ValueError(f"stop eps = {eps!r}: expected a finite number >= 0")
        if int(window) < 0:
            raise ValueError(f"stop window = {window!r}: expected an integer >= 0")
        self.eps, self.window = float(eps), int(window)
        self.objectives: list[float] = []
        self.errors: list[float] = []

    def update(self, objective: float, error: float | None = None) -> bool:
        """Record one iteration (its development error if there is a development set);
        True when the rule says stop."""
        self.objectives.append(objective)
        if error is not None:
            self.errors.append(error)
        w = self.window
        if not w:
            return False
        if len(self.objectives) > w:
            old, new = self.objectives[-1 - w], self.objectives[-1]
            if old - new < self.eps * abs(new):
                return True
        if error is not None and len(self.errors) >= w:
            recent = self.errors[-w:]
            if max(recent) - min(recent) < self.eps:
                return True
        return False
