"""Solver states for checkpoints: everything a solver needs to go on from the end of
an iteration exactly as if it had never stopped (same iterates, bit for bit).

Each solver that can be checkpointed has a state dataclass (``FistaState``,
``SageState`` here; ``OwlqnState`` ... in :mod:`crf.train`) with

* ``to_arrays() -> (arrays, meta)``: numeric arrays (name -> ndarray) and JSON-able
  scalars, lists and dicts, what a checkpoint file stores (:mod:`suffixlm.checkpoint`);
* ``from_arrays(arrays, meta, n) -> state``: the state back, every value checked
  (``n``: the number of coordinates of the problem it must fit), or :class:`StateError`
  naming the field;
* ``NAME``: the solver's name, stored with the state.

A solver takes ``state=`` (go on from it; ``x0`` is then ignored) and
``checkpoint=`` (called with the current state at the end of every iteration the
solver goes on after; the arrays are the solver's own: read or copy them, never keep or
change them). Gradients are not stored: the solver evaluates them again at the stored
point, which gives the same bits (the kernels are deterministic).
"""

from __future__ import annotations

import math
from dataclasses import fields

import numpy as np

from .result import IterationInfo


class StateError(ValueError):
    """A stored solver state that is not valid; the message names the field."""


def _shown(v) -> str:
    r = repr(v)
    return r if len(r) <= 40 else r[:37] + "..."


def number(meta: dict, name: str, *, integer: bool = False, low: float | None = None,
           high: float | None = None, low_open: bool = False):
    """``meta[name]``: an int (``integer``) or a finite float within the bounds."""
    if name not in meta:
        raise StateError(f"{name}: missing")
    v = meta[name]
    if isinstance(v, bool) or not isinstance(v, (int, float)) or (integer and not isinstance(v, int)):
        raise StateError(f"{name}: {_shown(v)} is not {'an integer' if integer else 'a number'}")
    if not math.isfinite(v):
        raise StateError(f"{name}: {_shown(v)} is not finite")
    if low is not None and (v < low or (low_open and v == low)):
        raise StateError(f"{name}: {_shown(v)} is {'<=' if low_open else '<'} {low:g}")
    if high is not None and v > high:
        raise StateError(f"{name}: {_shown(v)} is > {high:g}")
    return int(v) if integer else float(v)


def array(arrays: dict, name: str, shape: tuple, dtype=np.float64, finite: bool = True) -> np.ndarray:
    """``arrays[name]`` as a writable, contiguous array of this shape and dtype, every
    entry finite (``finite``)."""
    if name not in arrays:
        raise StateError(f"{name}: missing")
    a = arrays[name]
    if a.dtype != np.dtype(dtype):
        raise StateError(f"{name}: {a.dtype} entries, expected {np.dtype(dtype)}")
    if a.shape != tuple(shape):
        raise StateError(f"{name}: shape {a.shape}, this problem needs {tuple(shape)}")
    if finite and a.dtype.kind == "f" and not np.all(np.isfinite(a)):
        bad = int(np.flatnonzero(~np.isfinite(a.ravel()))[0])
        raise StateError(f"{name}: entry {bad} is not finite")
    return np.array(a, dtype=dtype, order="C")


def history_to_json(history: list[IterationInfo]) -> list[dict]:
    """The iteration records as JSON-able dicts (floats round-trip exactly)."""
    return [{**{k: plain(getattr(info, k)) for k in _SCALAR_FIELDS}, "extra": plain(info.extra)} for info in history]


def plain(v):
    """v with numpy scalars as Python numbers and tuples as lists (what JSON holds)."""
    if v is None or type(v) in (bool, int, float, str):
        return v
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    if isinstance(v, (int, np.integer)):
        return int(v)
    if isinstance(v, (float, np.floating)):
        return float(v)
    if isinstance(v, dict):
        return {str(k): plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [plain(x) for x in v]
    return v  # str, None


_INFO_FIELDS = {f.name for f in fields(IterationInfo)}
_SCALAR_FIELDS = [f.name for f in fields(IterationInfo) if f.name != "extra"]


def history_from_json(items, name: str, first: int = 1) -> list[IterationInfo]:
    """The records of ``history_to_json``, checked: numbered ``first``, ``first + 1``, ...;
    numbers where numbers belong."""
    if not isinstance(items, list):
        raise StateError(f"{name}: not a list")
    out = []
    for i, d in enumerate(items):
        where = f"{name}[{i}]"
        if not isinstance(d, dict) or set(d) - _INFO_FIELDS or "n_iter" not in d or "objective" not in d:
            raise StateError(f"{where}: not an iteration record")
        if d["n_iter"] != first + i or isinstance(d["n_iter"], bool):
            raise StateError(f"{where}: n_iter {_shown(d['n_iter'])}, expected {first + i}")
        for key in ("objective", "seconds", "elapsed", "step", "loss"):
            v = d.get(key)
            if key in d and not (v is None and key in ("step", "loss")) and not (
                    isinstance(v, (int, float)) and not isinstance(v, bool)):
                raise StateError(f"{where}: {key} {_shown(v)} is not a number")
        for key in ("n_evals", "active"):
            v = d.get(key)
            if v is not None and not (isinstance(v, int) and not isinstance(v, bool)):
                raise StateError(f"{where}: {key} {_shown(v)} is not an integer")
        if not isinstance(d.get("restart", False), bool) or not isinstance(d.get("extra", {}), dict):
            raise StateError(f"{where}: restart or extra of the wrong type")
        out.append(IterationInfo(**{**d, "extra": dict(d.get("extra", {}))}))
    return out


def rng_to_json(rng: np.random.Generator) -> dict:
    """The generator's bit-generator state (JSON-able: PCG64's are Python ints)."""
    return plain(rng.bit_generator.state)


def rng_from_json(state, name: str) -> np.random.Generator:
    """A ``numpy.random.Generator`` (PCG64, what ``default_rng`` makes) in this state."""
    if not (isinstance(state, dict) and state.get("bit_generator") == "PCG64"):
        raise StateError(f"{name}: not the state of a PCG64 generator")
    rng = np.random.default_rng(0)
    try:
        rng.bit_generator.state = state
    except (ValueError, TypeError, KeyError, OverflowError) as e:
        raise StateError(f"{name}: invalid generator state ({e})") from None
    return rng


def check_length(history: list, want: int, name: str = "history") -> None:
    if len(history) != want:
        raise StateError(f"{name}: {len(history)} records, the state's iteration count needs {want}")
