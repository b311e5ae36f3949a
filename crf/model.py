"""The :class:`CRF` estimator (API shaped like sklearn-crfsuite) and its model file.

Model file: a ``.npz`` archive read with ``allow_pickle=False`` holding

    meta         uint8   UTF-8 JSON: {"format": "suffixlm-crf", "version": 1,
                          "labels", "patterns" (pattern file text), "n_columns",
                          "params", "sha256" (of the arrays below, in order)}
    obs_blob     uint8   observation strings, UTF-8, concatenated
    obs_offsets  int64   (n_obs + 1,) byte offsets into obs_blob
    kinds        int8    (n_obs,) 1 unigram | 2 bigram
    theta        float64 (n_params,) weights in the layout of crf.features

Only observations with a non-zero weight are stored (after l1 training this is
what makes models small).  Files are written to a temporary file and renamed.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from .features import EncodedCorpus, FeatureSpace
from .patterns import Pattern, parse_patterns, read_patterns

__all__ = ["CRF", "ModelError", "FORMAT_VERSION"]

FORMAT_NAME = "suffixlm-crf"
FORMAT_VERSION = 1


class ModelError(ValueError):
    """Unreadable, truncated or tampered model file, or a model used before fit."""


def _check_sequences(X, y=None, name="X"):
    if not isinstance(X, (list, tuple)):
        raise TypeError(f"{name} must be a list of sequences (lists of token rows)")
    n_cols = None
    for i, seq in enumerate(X):
        if len(seq) == 0:
            raise ValueError(f"{name}[{i}] is an empty sequence")
        for j, row in enumerate(seq):
            if isinstance(row, str):
                raise TypeError(f"{name}[{i}][{j}] is a string; a token row is a list of columns")
            if n_cols is None:
                n_cols = len(row)
            elif len(row) != n_cols:
                raise ValueError(f"{name}[{i}][{j}] has {len(row)} columns, expected {n_cols}")
        if y is not None and len(y[i]) != len(seq):
            raise ValueError(f"{name}[{i}] has {len(seq)} tokens but its label sequence {len(y[i])}")
    if y is not None and len(y) != len(X):
        raise ValueError(f"{len(X)} sequences but {len(y)} label sequences")
    return n_cols


def _digest(arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        h.update(np.ascontiguousarray(a).tobytes())
    return h.hexdigest()


class CRF:
    """Linear-chain CRF with Wapiti-style features.

    Parameters
    ----------
    patterns : path of a Wapiti/CRF++ pattern file, or a list of pattern lines.
    algorithm : ``"owlqn"`` (l1 / elastic net, default) or ``"lbfgs"`` (l2 only).
    rho1, rho2 : penalty rho1 |theta|_1 + rho2/2 ||theta||^2 (rho1 defaults to 0.5
        for owlqn and must be 0 for lbfgs).
    max_iterations : cap on optimiser iterations (None: no cap).
    stopeps, stopwin : stopping window.  Stop when the objective decreased by less
        than ``stopeps`` (relative: 0.02 = 2 %) over the last ``stopwin``
        iterations; with a development set, stop also when its token error varied
        by less than ``stopeps`` percentage points over that window (Wapiti's
        rule).  ``stopwin=0`` disables both.  The training-set error in the
        progress lines is that of posterior decoding (argmax of the marginals),
        computed during the gradient pass for free; the development-set error is
        Viterbi's.
    history : L-BFGS memory.
    threads : numba threads (None: numba's default).
    recursion : ``"auto"``, ``"dense"`` or ``"sparse"`` forward-backward.
    verbose : print one progress line per iteration to stderr.
    """

    def __init__(self, patterns: str | os.PathLike | list[str] | None = None, algorithm: str = "owlqn",
                 rho1: float | None = None, rho2: float = 1e-4, max_iterations: int | None = None,
                 stopeps: float = 0.02, stopwin: int = 5, history: int = 5, threads: int | None = None,
                 recursion: str = "auto", verbose: bool = False):
        self.patterns = patterns
        self.algorithm = algorithm
        self.rho1 = rho1
        self.rho2 = rho2
        self.max_iterations = max_iterations
        self.stopeps = stopeps
        self.stopwin = stopwin
        self.history = history
        self.threads = threads
        self.recursion = recursion
        self.verbose = verbose

    # ------------------------------------------------------------------ helpers
    def _pattern_text(self) -> tuple[str, list[Pattern]]:
        if self.patterns is None:
            raise ValueError("CRF needs patterns= (a pattern file path or a list of pattern lines)")
        if isinstance(self.patterns, (list, tuple)):
            text = "\n".join(self.patterns) + "\n"
            return text, parse_patterns(text)
        return read_patterns(self.patterns)

    def _rho1(self) -> float:
        if self.algorithm not in ("owlqn", "lbfgs"):
            raise ValueError(f"algorithm must be 'owlqn' or 'lbfgs', not {self.algorithm!r}")
        if self.algorithm == "lbfgs":
            if self.rho1:
                raise ValueError("algorithm 'lbfgs' is for the l2 penalty only (rho1 = 0); use 'owlqn' for l1")
            return 0.0
        return 0.5 if self.rho1 is None else float(self.rho1)

    def _fitted(self) -> None:
        if not hasattr(self, "theta_"):
            raise ModelError("this CRF is not fitted yet: call fit() or CRF.load()")

    def _set_threads(self) -> int:
        import numba

        if self.threads is not None:
            numba.set_num_threads(max(1, min(int(self.threads), numba.config.NUMBA_NUM_THREADS)))
        return numba.get_num_threads()

    def _log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ training
    def fit(self, X, y, X_dev=None, y_dev=None) -> "CRF":
        """Train on sequences X (lists of token rows = lists of column strings) and labels y."""
        from .inference import Objective, viterbi
        from .train import owlqn

        rho1 = self._rho1()
        if len(X) == 0:
            raise ValueError("no training sequence")
        _check_sequences(X, y)
        if X_dev is not None:
            if y_dev is None:
                raise ValueError("X_dev needs its labels y_dev")
            _check_sequences(X_dev, y_dev, "X_dev")
        text, patterns = self._pattern_text()
        n_threads = self._set_threads()
        t_start = time.perf_counter()
        space, train = FeatureSpace.build(patterns, X, y, "training data")
        dev = space.encode(X_dev, y_dev, "development data") if X_dev is not None else None
        self._log(f"* {len(X)} sequences, {train.n_tokens} tokens, {space.n_labels} labels, "
                  f"{len(space.observations)} observations, {space.n_params} features "
                  f"({time.perf_counter() - t_start:.2f}s)")
        objective = Objective(space, train, n_chunks=n_threads, recursion=self.recursion)
        errors: list[float] = []
        objectives: list[float] = []
        log: list[dict[str, Any]] = []

        def callback(info, theta):
            if dev is not None:
                pred, _ = viterbi(theta, space, dev)
                wrong = pred != dev.labels
                te = 100.0 * wrong.mean()
                se = 100.0 * (np.add.reduceat(wrong, dev.seq_offsets[:-1]) > 0).mean()
            else:  # posterior-decoding error measured by the last gradient pass at theta
                te, se = objective.last_errors
            log.append({"iteration": info.iteration, "objective": info.objective, "active": info.active,
                        "token_error": te, "sequence_error": se, "seconds": info.seconds,
                        "evaluations": info.evaluations})
            self._log(f"  [{info.iteration:4d}] obj={info.objective:<12.2f} act={info.active:<9d} "
                      f"err={te:5.2f}%/{se:5.2f}% time={info.seconds:.2f}s"
                      f"{' (dev)' if dev is not None else ''}")
            errors.append(te)
            objectives.append(info.objective)
            w = self.stopwin
            if w and len(objectives) > w:
                old, new = objectives[-1 - w], objectives[-1]
                if old - new < self.stopeps * abs(new):
                    return True
            if w and dev is not None and len(errors) >= w:
                window = errors[-w:]
                if max(window) - min(window) < self.stopeps:
                    return True
            return False

        result = owlqn(objective.value_and_gradient_parts, np.zeros(space.n_params), rho1=rho1, rho2=self.rho2,
                       history=self.history, max_iterations=self.max_iterations, callback=callback)
        del objective
        self._log(f"* stopped after {result.iterations} iterations ({result.reason}), "
                  f"{time.perf_counter() - t_start:.2f}s")
        self.n_features_ = space.n_params
        self.space_, self.theta_ = space.compact(result.x)
        self.n_active_features_ = int(np.count_nonzero(self.theta_))
        self.training_log_ = log
        self.stop_reason_ = result.reason
        self.pattern_text_ = text
        return self

    # ------------------------------------------------------------------ prediction
    @property
    def classes_(self) -> list[str]:
        self._fitted()
        return list(self.space_.labels)

    def encode(self, X, y=None, name: str = "<input>") -> EncodedCorpus:
        """Encode sequences with the fitted feature space (for the low-level inference API)."""
        self._fitted()
        _check_sequences(X, y)
        if X and X[0] and len(X[0][0]) != self.space_.n_columns:
            raise ValueError(f"{name}: the model expects {self.space_.n_columns} observation column(s), "
                             f"got {len(X[0][0])}")
        return self.space_.encode(X, y, name)

    def _split(self, flat, data: EncodedCorpus):
        off = data.seq_offsets
        return [flat[off[i]: off[i + 1]] for i in range(data.n_sequences)]

    def predict(self, X) -> list[list[str]]:
        """Viterbi label sequences."""
        from .inference import viterbi

        self._set_threads()
        data = self.encode(X)
        pred, _ = viterbi(self.theta_, self.space_, data)
        labels = self.space_.labels
        return [[labels[k] for k in seq] for seq in self._split(pred, data)]

    def predict_marginals(self, X) -> list[list[dict[str, float]]]:
        """Posterior marginals: for each token a dict label -> probability."""
        from .inference import forward_backward_marginals

        self._set_threads()
        data = self.encode(X)
        marg, _ = forward_backward_marginals(self.theta_, self.space_, data, self.recursion)
        labels = self.space_.labels
        return [[dict(zip(labels, row.tolist())) for row in seq] for seq in self._split(marg, data)]

    def predict_nbest(self, X, n: int) -> list[list[tuple[list[str], float]]]:
        """The n best label sequences with their log-probabilities (fewer when fewer exist)."""
        from .inference import forward_backward_marginals, nbest

        self._set_threads()
        data = self.encode(X)
        paths, scores = nbest(self.theta_, self.space_, data, n)
        _, logz = forward_backward_marginals(self.theta_, self.space_, data, self.recursion)
        labels = self.space_.labels
        out = []
        for i, seq in enumerate(self._split(paths, data)):
            out.append([([labels[k] for k in seq[:, r]], float(scores[i, r] - logz[i]))
                        for r in range(n) if np.isfinite(scores[i, r])])
        return out

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike) -> None:
        """Write the model atomically (temporary file + rename); see the module docstring."""
        self._fitted()
        sp = self.space_
        encoded = [s.encode("utf-8") for s in sp.observations]
        offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        arrays = {"obs_blob": blob, "obs_offsets": offsets, "kinds": sp.kinds.astype(np.int8),
                  "theta": np.asarray(self.theta_, dtype=np.float64)}
        meta = {
            "format": FORMAT_NAME, "version": FORMAT_VERSION, "labels": sp.labels,
            "patterns": self.pattern_text_, "n_columns": sp.n_columns,
            "params": {"algorithm": self.algorithm, "rho1": self._rho1(), "rho2": self.rho2,
                       "max_iterations": self.max_iterations, "stopeps": self.stopeps,
                       "stopwin": self.stopwin, "history": self.history},
            "n_features": int(self.n_features_),
            "sha256": _digest(arrays.values()),
        }
        path = Path(path)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent or ".")
        try:
            with os.fdopen(fd, "wb") as fh:
                np.savez(fh, meta=np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8), **arrays)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 is for the temporary only
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CRF":
        """Read a model written by :meth:`save`; ModelError on any inconsistency."""
        try:
            with np.load(path, allow_pickle=False) as z:
                data = {k: z[k] for k in ("meta", "obs_blob", "obs_offsets", "kinds", "theta")}
        except FileNotFoundError:
            raise ModelError(f"{path}: no such model file") from None
        except KeyError as exc:
            raise ModelError(f"{path}: not a CRF model (missing array {exc})") from None
        except (zipfile.BadZipFile, ValueError, OSError, EOFError) as exc:
            raise ModelError(f"{path}: unreadable or truncated model file ({exc})") from None
        try:
            meta = json.loads(data["meta"].tobytes().decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            raise ModelError(f"{path}: corrupt model metadata") from None
        if meta.get("format") != FORMAT_NAME:
            raise ModelError(f"{path}: not a suffixlm CRF model")
        if meta.get("version") != FORMAT_VERSION:
            raise ModelError(f"{path}: model format version {meta.get('version')} not supported "
                             f"(this build reads version {FORMAT_VERSION})")
        arrays = [data[k] for k in ("obs_blob", "obs_offsets", "kinds", "theta")]
        if _digest(arrays) != meta.get("sha256"):
            raise ModelError(f"{path}: checksum mismatch, the model file was modified or damaged")
        blob = data["obs_blob"].tobytes()
        off = data["obs_offsets"]
        observations = [blob[off[i]: off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]
        params = meta["params"]
        model = cls(patterns=None, algorithm=params["algorithm"],
                    rho1=params["rho1"] if params["algorithm"] == "owlqn" else None, rho2=params["rho2"],
                    max_iterations=params["max_iterations"], stopeps=params["stopeps"],
                    stopwin=params["stopwin"], history=params["history"])
        patterns = parse_patterns(meta["patterns"], f"{path}:patterns")
        space = FeatureSpace(patterns, observations, data["kinds"], meta["labels"], meta["n_columns"])
        if space.n_params != data["theta"].shape[0]:
            raise ModelError(f"{path}: weight vector has {data['theta'].shape[0]} entries, "
                             f"the feature space needs {space.n_params}")
        model.space_ = space
        model.theta_ = data["theta"]
        model.pattern_text_ = meta["patterns"]
        model.n_features_ = meta.get("n_features", space.n_params)
        model.n_active_features_ = int(np.count_nonzero(model.theta_))
        return model
