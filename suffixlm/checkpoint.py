"""Checkpoints of a training run, and resuming from one (``--checkpoint``, ``--resume``
of ``suffixlm train`` and ``suffixlm crf train``; docs/checkpoint.md).

A :class:`Checkpoint` is handed to an estimator's ``fit`` (``LogLinearLM.fit``,
``CRF.fit``). The estimator gives its solver a hook (:meth:`Checkpoint.hook`) that the
solver calls with its state (:mod:`suffixlm.solvers.state`) at the end of every
iteration; the hook writes the state when one is due (every N iterations or S
seconds) or when a stop was requested (Ctrl-C: :meth:`Checkpoint.handle_interrupts`),
and after a requested stop's write raises :class:`Interrupted`. A run that goes on from the file
(``resume=True``) restores the solver's state and continues as if it had never
stopped: same iterates, bit for bit.

The file is a container of :mod:`suffixlm.io` (npz + JSON header, written atomically,
never a pickle), format ``suffixlm-checkpoint``. Its header holds

    trainer   the estimator that wrote it ("LogLinearLM", "CRF")
    context   what the command line adds (compared as a whole on resuming)
    arrays    member name -> number of dimensions
    fit       null between fits, or {"identity": the training data's sha256 and the
              options that change the result, "solver": its name, "state": the
              solver's scalars and history, "extra": the estimator's own state}
    outer     null, or the state of a loop of fits around it (``--lam auto``'s path)
    where     the iteration it was written at, in words

and the arrays are ``fit.<name>`` (the solver state's) and ``outer.<name>``. Reading it
checks the container (format, version, every member's dtype and dimension), then
every value (:meth:`ResumedFit.state`, the solvers' ``from_arrays``); a mismatch with
the data or the options of the run that resumes is refused, naming what differs.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import signal
import threading
import time
from typing import Any, Callable, Iterable

import numpy as np

from .io import load_container, save_container, write_error_message
from .solvers.state import StateError

__all__ = ["Checkpoint", "CheckpointError", "Interrupted", "DEFAULT_EVERY", "content_digest", "parse_every"]

FORMAT = "suffixlm-checkpoint"
FORMAT_VERSION = 1
#: How often a checkpoint is written unless told otherwise.
DEFAULT_EVERY = "60s"


class CheckpointError(ValueError):
    """A checkpoint that cannot be used: missing, unreadable, damaged, or written for
    other data or options; the message names the file and the field."""


class Interrupted(Exception):
    """Training stopped on request (Ctrl-C) after writing a checkpoint."""

    def __init__(self, path: str, where: str):
        super().__init__(f"interrupted: checkpoint of {where} written to {path}")
        self.path = path
        self.where = where


def parse_every(value) -> tuple[int | None, float | None]:
    """``"50"`` (or 50) -> every 50 iterations; ``"30s"``, ``"5m"``, ``"1h"`` -> every so
    many seconds. Returns (iterations, seconds), one of them None; ValueError otherwise."""
    ok = isinstance(value, (str, int, np.integer)) and not isinstance(value, bool)
    text = str(value).strip() if ok else ""
    m = re.fullmatch(r"(\d+)", text)
    if m:
        n = int(m.group(1))
        if not 1 <= n <= 2**31 - 1:
            raise ValueError(f"checkpoint interval {text!r}: expected 1 to {2**31 - 1} iterations")
        return n, None
    m = re.fullmatch(r"(\d+(?:\.\d*)?|\.\d+)\s*([smh])", text)
    if m:
        seconds = float(m.group(1)) * {"s": 1.0, "m": 60.0, "h": 3600.0}[m.group(2)]
        if not (seconds > 0 and math.isfinite(seconds)):
            raise ValueError(f"checkpoint interval {text!r}: expected a time > 0")
        return None, seconds
    raise ValueError(f"checkpoint interval {value!r}: expected a number of iterations (50) or a time (30s, 5m, 1h)")


def content_digest(*parts) -> str:
    """sha256 of arrays (dtype, shape and bytes), strings and JSON-able values, each
    framed so that different sequences of parts never give the same bytes."""
    h = hashlib.sha256()
    for p in parts:
        if isinstance(p, np.ndarray):
            a = np.ascontiguousarray(p)
            h.update(f"array {a.dtype.str} {a.shape}\n".encode("ascii"))
            h.update(a.tobytes())
        else:
            b = json.dumps(p, sort_keys=True, separators=(",", ":")).encode("utf-8")
            h.update(f"json {len(b)}\n".encode("ascii"))
            h.update(b)
    return h.hexdigest()


class ResumedFit:
    """The ``fit`` section of a checkpoint being resumed: the solver's name, its arrays and
    scalars, and the estimator's extra state (a dict, checked by the estimator)."""

    def __init__(self, path: str, solver: str, arrays: dict, meta: dict, extra: dict):
        self.path, self.solver, self.arrays, self.meta, self.extra = path, solver, arrays, meta, extra

    def state(self, state_class, n: int):
        """The solver state (``state_class.from_arrays``), every value checked; ``n``: the
        problem's number of coordinates."""
        if self.solver != state_class.NAME:
            raise CheckpointError(f"{self.path}: fit.solver: {self.solver!r}, this run uses {state_class.NAME!r}")
        try:
            return state_class.from_arrays(self.arrays, self.meta, n)
        except StateError as e:
            raise CheckpointError(f"{self.path}: fit.{e}") from None

    def bad_state(self, what: str) -> CheckpointError:
        """The error for an invalid value of the solver state the estimator found."""
        return CheckpointError(f"{self.path}: fit.{what}")

    def bad(self, field: str, what: str) -> CheckpointError:
        """The error for an invalid entry of the estimator's extra state."""
        return CheckpointError(f"{self.path}: fit.extra.{field}: {what}")


class Checkpoint:
    """Where and when a training run saves its state, and whether it goes on from it.

    path      the checkpoint file
    every     ``"60s"`` (a time: s, m, h) or ``50`` / ``"50"`` (iterations; with a loop
              of fits, counted across them); a checkpoint is also written when a stop
              is requested (:meth:`request_stop`, Ctrl-C)
    resume    go on from the file at ``path`` (read and checked now); without it a file
              at ``path`` is refused (it would be lost)
    context   what the caller adds to the identity of the run (command-line options
              the estimator does not see), compared on resuming
    inputs    files the checkpoint must never replace (``io.check_not_input``)

    Raises :class:`CheckpointError` at once for a missing (resume) or present (no
    resume) file and for any defect of the file. The file stays after the fit: the
    caller removes it (:meth:`remove`) once the model is saved.
    """

    def __init__(self, path, every=DEFAULT_EVERY, resume: bool = False, context: dict | None = None,
                 inputs: Iterable = ()):
        self.path = os.fspath(path)
        self.every_iter, self.every_seconds = parse_every(every)
        self.resume = bool(resume)
        self.context = _plain(context or {})
        self.inputs = [p for p in inputs if p is not None]
        self.outer: tuple[dict, dict] | None = None  # (arrays, meta) of an enclosing loop of fits
        self.stop_requested = False
        self.armed = False  # a solver has reached an iteration's end: there is a state to save
        self.written: str | None = None  # where the last checkpoint of this run was written
        self._last_write = time.monotonic()
        self._since = 0
        self._loaded: tuple[dict, dict] | None = None
        self._fit_pending = False
        if self.resume:
            self._loaded = self._read()
            self._fit_pending = self._loaded[1]["fit"] is not None
        elif os.path.lexists(self.path):
            raise CheckpointError(f"{self.path}: a checkpoint is already there: continue it with --resume, or "
                                  "delete it to start again")

    # ------------------------------------------------------------------ reading
    def _read(self) -> tuple[dict, dict]:
        path = self.path
        if not os.path.lexists(path):
            raise CheckpointError(f"{path}: cannot resume: no such checkpoint")

        def spec(meta):
            arrays = meta["arrays"]
            if not isinstance(arrays, dict):
                raise TypeError("'arrays' is not an object")
            out = {}
            for name, ndim in arrays.items():
                if not (re.fullmatch(r"(fit|outer)\.[A-Za-z0-9_.]+", name) and isinstance(ndim, int)
                        and not isinstance(ndim, bool) and 0 <= ndim <= 2):
                    raise ValueError(f"member {name!r} of {ndim!r} dimensions")
                out[name] = ((np.float64, np.float32, np.int64, np.int32, np.uint8, np.int8, np.bool_), ndim)
            return out

        arrays, meta = load_container(path, FORMAT, (FORMAT_VERSION,), spec, error=CheckpointError)
        for key, kinds, what in (("trainer", str, "a string"), ("context", dict, "an object"),
                                 ("fit", (dict, type(None)), "an object or null"),
                                 ("outer", (dict, type(None)), "an object or null"), ("where", str, "a string")):
            if key not in meta:
                raise CheckpointError(f"{path}: header: missing entry {key!r}")
            if not isinstance(meta[key], kinds):
                raise CheckpointError(f"{path}: header entry {key!r} is not {what}")
        fit = meta["fit"]
        if fit is not None:
            for key, kinds in (("identity", dict), ("solver", str), ("state", dict), ("extra", dict)):
                if not isinstance(fit.get(key), kinds):
                    raise CheckpointError(f"{path}: header entry 'fit': {key!r} missing or of the wrong type")
        if self.context != meta["context"]:
            theirs, mine = meta["context"].get("command"), self.context.get("command")
            if theirs != mine:
                raise CheckpointError(f"{path}: a checkpoint of {_program(theirs)}, not of {_program(mine)}")
            raise CheckpointError(_mismatch(path, meta["context"], self.context, "the command"))
        return arrays, meta

    def check_identity(self, stored, identity: dict, what: str) -> None:
        """Refuse (naming the first entry that differs) when ``stored``, the identity a
        part of the checkpoint was written for, is not ``identity``."""
        identity = _plain(identity)
        if stored != identity:
            raise CheckpointError(_mismatch(self.path, stored if isinstance(stored, dict) else {}, identity, what))

    def check_trainer(self, trainer: str) -> None:
        """Refuse a checkpoint that another estimator wrote."""
        if self._loaded is not None and self._loaded[1]["trainer"] != trainer:
            raise CheckpointError(f"{self.path}: a checkpoint of {self._loaded[1]['trainer']} training, not of "
                                  f"{trainer}")

    @property
    def loaded_outer(self) -> tuple[dict, dict] | None:
        """(arrays, meta) of the enclosing loop's state in the file being resumed, or None."""
        if self._loaded is None or self._loaded[1]["outer"] is None:
            return None
        arrays, meta = self._loaded
        return {k[6:]: v for k, v in arrays.items() if k.startswith("outer.")}, meta["outer"]

    def resume_fit(self, trainer: str, identity: dict) -> ResumedFit | None:
        """The fit to go on from, once (the next fit of a loop starts afresh), after
        checking that it was written by ``trainer`` for this ``identity``; None when
        there is none."""
        if not self._fit_pending:
            return None
        self.check_trainer(trainer)
        self._fit_pending = False
        arrays, meta = self._loaded
        fit = meta["fit"]
        self.check_identity(fit["identity"], identity, "the fit")
        mine = {k[4:]: v for k, v in arrays.items() if k.startswith("fit.")}
        return ResumedFit(self.path, fit["solver"], mine, fit["state"], fit["extra"])

    # ------------------------------------------------------------------ writing
    def hook(self, trainer: str, identity: dict, extra: Callable[[], dict] | None = None):
        """The solver's ``checkpoint=`` callable: writes the state it is given when a
        checkpoint is due or a stop was requested (then raises :class:`Interrupted`).
        ``extra()``: the estimator's own state to store with it (JSON-able)."""
        identity = _plain(identity)

        def at_iteration(state):
            self.armed = True
            self._since += 1
            if self.stop_requested or self._due():
                self.write(trainer, (identity, state, extra() if extra is not None else {}))
            if self.stop_requested:
                raise Interrupted(self.path, self.written)

        return at_iteration

    def at_boundary(self, trainer: str) -> None:
        """Between the fits of a loop (``outer`` set): write when due or when a stop was
        requested (then raise :class:`Interrupted`)."""
        self.armed = True
        if self.stop_requested or self._due():
            self.write(trainer, None)
        if self.stop_requested:
            raise Interrupted(self.path, self.written)

    def _due(self) -> bool:
        if self.every_iter is not None:
            return self._since >= self.every_iter
        return time.monotonic() - self._last_write >= self.every_seconds

    def write(self, trainer: str, fit: tuple[dict, Any, dict] | None) -> None:
        """Write the file now: ``fit`` = (identity, solver state, extra) of the fit under
        way (None: between fits), with the enclosing loop's ``outer`` state if set."""
        arrays: dict[str, np.ndarray] = {}
        meta: dict[str, Any] = {"trainer": trainer, "context": self.context, "fit": None, "outer": None}
        where = []
        if self.outer is not None:
            o_arrays, o_meta = self.outer
            arrays.update({"outer." + k: np.asarray(v) for k, v in o_arrays.items()})
            meta["outer"] = _plain(o_meta)
            if o_meta.get("where"):
                where.append(o_meta["where"])
        if fit is not None:
            identity, state, extra = fit
            s_arrays, s_meta = state.to_arrays()
            arrays.update({"fit." + k: np.asarray(v) for k, v in s_arrays.items()})
            meta["fit"] = {"identity": identity, "solver": state.NAME, "state": s_meta, "extra": _plain(extra)}
            where.append(f"iteration {state.n_iter}")
        meta["where"] = ", ".join(where) or "the start"
        meta["arrays"] = {k: int(v.ndim) for k, v in arrays.items()}
        try:
            save_container(self.path, arrays, meta, FORMAT, FORMAT_VERSION, inputs=self.inputs)
        except OSError as e:  # a full disk, a removed folder: one line, not a traceback
            raise CheckpointError(write_error_message(self.path, e)) from None
        self.written = meta["where"]
        self._last_write = time.monotonic()
        self._since = 0

    def remove(self) -> None:
        """Delete the file (once the model it leads to is saved)."""
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    # ------------------------------------------------------------------ interrupts
    def request_stop(self) -> None:
        """Write a checkpoint at the end of the current iteration, then stop
        (:class:`Interrupted`)."""
        self.stop_requested = True

    @contextlib.contextmanager
    def handle_interrupts(self):
        """Within the block, the first Ctrl-C (SIGINT, or SIGTERM) once an iteration has ended asks for
        a checkpoint at the end of the current iteration (:meth:`request_stop`); a
        Ctrl-C before that, or a second one, raises ``KeyboardInterrupt`` at once (the
        checkpoint file is then left as it was). Only in the main thread."""
        if threading.current_thread() is not threading.main_thread():
            yield self
            return

        def on_sigint(signum, frame):
            if self.armed and not self.stop_requested:
                self.stop_requested = True
                return
            raise KeyboardInterrupt

        # SIGTERM (a scheduler's or kill's polite stop) is treated as Ctrl-C
        old = {sig: signal.signal(sig, on_sigint) for sig in (signal.SIGINT, signal.SIGTERM)}
        try:
            yield self
        finally:
            for sig, handler in old.items():
                signal.signal(sig, handler)


def _plain(v):
    """JSON's view of v (tuples as lists, numpy scalars as numbers), so that what is
    compared is what a file holds."""
    return json.loads(json.dumps(v, default=_json_default))


def _json_default(v):
    if isinstance(v, np.integer):
        return int(v)
    if isinstance(v, np.floating):
        return float(v)
    if isinstance(v, np.bool_):
        return bool(v)
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    raise TypeError(f"{type(v).__name__} is not JSON-able")


def _mismatch(path: str, stored: dict, current: dict, what: str) -> str:
    """One line naming the first entry where the checkpoint's identity differs."""
    for key in sorted(set(stored) | set(current)):
        a, b = stored.get(key, "<absent>"), current.get(key, "<absent>")
        if a == b:
            continue
        if key.endswith(" data"):
            return (f"{path}: the checkpoint was written for other {key} than this run's; resume with the same "
                    "data and options, or start again without --resume")
        return (f"{path}: the checkpoint was written with {key} = {_short(a)}, this run has {_short(b)}; resume "
                "with the same data and options, or start again without --resume")
    return f"{path}: {what} does not match the checkpoint"  # pragma: no cover - unequal dicts differ somewhere


def _program(command) -> str:
    return f"`{command}`" if isinstance(command, str) else "a training through the API"


def _short(v) -> str:
    r = json.dumps(v)
    return r if len(r) <= 60 else r[:57] + "..."
