"""Value checks shared by the estimators' parameter checks and the model-file readers of
both packages (a JSON header's ints are Python ints; a parameter may be a numpy scalar)."""

from __future__ import annotations

import math
import numbers

__all__ = ["is_finite", "is_int", "is_number"]


def is_int(v) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A real number (an integer or a float, Python's or numpy's), not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def is_finite(v) -> bool:
    """A real number that is neither infinite nor NaN."""
    return is_number(v) and math.isfinite(v)
