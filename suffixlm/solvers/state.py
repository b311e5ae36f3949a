"""Solver states for checkpoints: everything a solver needs to go on from the end of
an iteration exactly as if it had never stopped (same iterates, bit for bit).

Each solver that can be checkpointed has a state dataclass (``FistaState``,
``SageState`` in :mod:`suffixlm.solvers`; ``OwlqnState`` ... in :mod:`crf.train`), a
:class:`SolverState` whose fields each declare their kind (:func:`floats`, :func:`real`,
:func:`count`, :func:`iterations`, :func:`generator`, :func:`ints`, :func:`history`);
from these the base class makes

* ``to_arrays() -> (arrays, meta)``: numeric arrays (name -> ndarray) and JSON-able
  scalars, lists and dicts, what a checkpoint file stores (:mod:`suffixlm.checkpoint`);
* ``from_arrays(arrays, meta, n) -> state``: the state back, every value checked
  (``n``: the number of coordinates of the problem it must fit), or :class:`StateError`
  naming the field;

and the class adds ``NAME``: the solver's name, stored with the state.

A solver takes ``state=`` (go on from it; ``x0`` is then ignored) and
``checkpoint=`` (called with the current state at the end of every iteration the
solver goes on after; the arrays are the solver's own: read or copy them, never keep or
change them). Gradients are not stored: the solver evaluates them again at the stored
point, which gives the same bits (the kernels are deterministic).
"""

from __future__ import annotations

import math
from dataclasses import field, fields
from typing import Callable

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


# ---------------------------------------------------------------- declared fields


class _Kind:
    """How one field of a :class:`SolverState` is stored and checked."""

    array = False  # stored as an array (else in the JSON meta)
    stage = 2  # checked in stages: 0 the iteration count and history, 1 JSON structures, 2 the rest

    def field(self, **kw):
        return field(metadata={"state": self}, **kw)


class _Floats(_Kind):
    array = True

    def __init__(self, shape: tuple, dtype):
        self.shape, self.dtype = shape, np.dtype(dtype)

    def dump(self, v):
        return np.asarray(v, dtype=self.dtype)  # (the solver's own array when it has this dtype)

    def load(self, arrays, meta, name, dims, values):
        return array(arrays, name, tuple(dims[d] for d in self.shape), self.dtype)


class _Number(_Kind):
    def __init__(self, integer: bool, low, high, low_open: bool = False, stage: int = 2):
        self.integer, self.low, self.high, self.low_open, self.stage = integer, low, high, low_open, stage

    def dump(self, v):
        return int(v) if self.integer else float(v)

    def load(self, arrays, meta, name, dims, values):
        low, high = (b(dims) if callable(b) else b for b in (self.low, self.high))
        return number(meta, name, integer=self.integer, low=low, high=high, low_open=self.low_open)


class _Generator(_Kind):
    stage = 1

    def dump(self, v):
        return plain(v)

    def load(self, arrays, meta, name, dims, values):
        rng_from_json(meta.get(name), name)  # checked here, made again by the solver
        return meta[name]


class _Ints(_Kind):
    stage = 1
    _WORDS = {1: "one", 2: "two", 3: "three"}

    def __init__(self, length: int):
        self.length = length

    def dump(self, v):
        return [int(c) for c in v]

    def load(self, arrays, meta, name, dims, values):
        v = meta.get(name)
        if not (isinstance(v, list) and len(v) == self.length
                and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < 2**63 for c in v)):
            raise StateError(f"{name}: not {self._WORDS.get(self.length, self.length)} integers >= 0")
        return v


class _History(_Kind):
    stage = 0

    def __init__(self, first: int):
        self.first = first

    def dump(self, v):
        return history_to_json(v)

    def load(self, arrays, meta, name, dims, values):
        records = history_from_json(meta.get(name), name, first=self.first)
        check_length(records, values["n_iter"] - self.first + 1, name)
        return records


def floats(*shape: str, dtype=np.float64):
    """An array field of this dtype whose shape names sizes of ``SolverState.dims``
    (``floats("n")``: n coordinates), every entry finite."""
    return _Floats(shape, dtype).field()


def real(*, low: float | Callable[[dict], float] | None = None,
         high: float | Callable[[dict], float] | None = None, low_open: bool = False):
    """A finite float within the bounds (``low_open``: > low); a bound may be a function of
    the sizes (``SolverState.dims``)."""
    return _Number(False, low, high, low_open).field()


def count(*, low: int | Callable[[dict], int] = 0, high: int | Callable[[dict], int] | None = None):
    """An integer within the bounds (>= 0 unless told)."""
    return _Number(True, low, high).field()


def iterations():
    """``n_iter``: the iterations done, an integer >= 0 (the history's length follows it)."""
    return _Number(True, 0, None, stage=0).field()


def generator():
    """The state of the solver's PCG64 generator (``rng_to_json``), kept as that dict."""
    return _Generator().field()


def ints(length: int):
    """A list of ``length`` integers >= 0 (counters)."""
    return _Ints(length).field()


def history(first: int = 1):
    """The iteration records (``history_to_json``), numbered from ``first``: one per
    iteration done (and iteration 0 when ``first`` is 0), as the state's ``n_iter``
    (:func:`iterations`) says."""
    return _History(first).field(default_factory=list)


class SolverState:
    """Base of the solver states (dataclasses whose fields are declared with the functions
    above): stored in the order of the fields, arrays apart from the rest; checked on
    loading stage by stage (the iteration count and the history, then the JSON structures,
    then the rest), each in the order of the fields, the first bad value raising."""

    NAME = ""

    def to_arrays(self) -> tuple[dict, dict]:
        arrays, meta = {}, {}
        for f in fields(self):
            kind = f.metadata["state"]
            (arrays if kind.array else meta)[f.name] = kind.dump(getattr(self, f.name))
        return arrays, meta

    @classmethod
    def dims(cls, arrays: dict, meta: dict, n: int) -> dict:
        """The sizes that shapes and bounds name: ``n``, the problem's coordinates; a state
        adds its own (checked first)."""
        return {"n": n}

    @classmethod
    def from_arrays(cls, arrays: dict, meta: dict, n: int):
        dims = cls.dims(arrays, meta, n)
        values: dict = {}
        for f in sorted(fields(cls), key=lambda f: f.metadata["state"].stage):
            values[f.name] = f.metadata["state"].load(arrays, meta, f.name, dims, values)
        return cls(**values)
