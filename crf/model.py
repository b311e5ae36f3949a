"""The :class:`CRF` estimator (API shaped like sklearn-crfsuite).

Its model file is read and written by :mod:`crf.modelfile` (``CRF.save`` / ``CRF.load``).
"""

from __future__ import annotations

import os
import sys
import time
import warnings
from typing import Any

import numpy as np

from suffixlm import threads as _threads
from suffixlm.checks import KIND, Field, check_fields, is_int, is_number
from suffixlm.estimator import ParamsMixin
from suffixlm.io import word_problem
from suffixlm.memory import allocate, release_free_memory

from . import compat as _compat
from . import modelfile
from .compat import TrainingLog
from .features import EncodedCorpus, FeatureSpace
from .modelfile import FORMAT_NAME, FORMAT_VERSION, INPUT_KINDS, MAX_COLUMNS, MAX_TRANSITION_SCORE, ModelError
from .patterns import TRIGRAM, Pattern, parse_patterns, read_patterns
from .solvers import ALGORITHMS, PENALTIES, SOLVERS, TrainRun, names
from .solvers import train as run_solver
from .tagschemes import check_tags, output_index, to_iobes
from .transitions import FORBID_CHOICES, allowed_pairs

__all__ = ["CRF", "ModelError", "Tagger", "FORMAT_NAME", "FORMAT_VERSION", "INPUT_KINDS", "MAX_COLUMNS",
           "MAX_TRANSITION_SCORE", "ALGORITHMS", "PENALTIES"]


def _listed(seqs, name: str):
    """The sequences of ``seqs`` as a list: a list or tuple as it is, any other iterable (a
    generator, a ``map``, a pandas Series) read once; None stays None. ``TypeError`` for a
    string, a dict or a value that is not iterable."""
    if seqs is None or isinstance(seqs, (list, tuple)):
        return seqs
    if isinstance(seqs, (str, bytes, dict)) or not hasattr(seqs, "__iter__"):
        raise TypeError(f"{name} must be a list (or another iterable) of sequences, not a {type(seqs).__name__}")
    return list(seqs)


def _crfsuite_features(space: FeatureSpace, train: EncodedCorpus, st) -> FeatureSpace:
    """The space of CRFsuite's feature options (``all_possible_states``,
    ``all_possible_transitions``, ``min_freq``): seen states when the states are not all
    possible or a cut-off applies (CRFsuite then drops the possible ones of frequency 0 too),
    and the label pairs that are no transition feature held at zero."""
    if not st.all_possible_states or st.min_freq > 0:
        space = space.restrict_states(train, st.min_freq)
    if not st.all_possible_transitions or st.min_freq > 0:
        space.freeze_transitions(train, st.all_possible_transitions, st.min_freq)
    return space


def _check_labels(y, name="y") -> None:
    """``ValueError`` (as sklearn's estimators) for a label that a model file or a column file could
    not give back: not a string (None, a number), empty, holding white space (a label is
    one column of a CoNLL file), a lone surrogate (not UTF-8). ``y``: label sequences."""
    if not isinstance(y, (list, tuple)):
        raise TypeError(f"{name} must be a list of label sequences")
    seen: set = set()
    for i, seq in enumerate(y):
        if isinstance(seq, (str, bytes)) or not hasattr(seq, "__iter__"):
            raise TypeError(f"{name}[{i}] is a {type(seq).__name__}, expected a list of label strings")
        for j, lab in enumerate(seq):
            if type(lab) is str and lab in seen:
                continue
            why = word_problem(lab)
            if why is not None:
                raise ValueError(
                    f"{name}[{i}][{j}]: label {why}; expected a label string, non-empty and without white "
                    "space (one column of a CoNLL file)")
            seen.add(lab)


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


def _patterns_of(spec) -> list[Pattern]:
    """Patterns of a pattern file path or of a list of pattern lines."""
    if isinstance(spec, (list, tuple)):
        return parse_patterns("\n".join(spec) + "\n") if spec else []
    return read_patterns(spec)[1]


def _check_value_range(name, theta: np.ndarray, space, data: EncodedCorpus) -> None:
    """Real feature values multiply the weights: refuse values for which a position's
    score could overflow (a finite sum keeps forward-backward and Viterbi exact)."""
    if not data.valued or data.unigram_value.size == 0:
        return
    max_u = float(np.abs(theta[: space.bigram_start]).max()) if space.bigram_start else 0.0
    max_v = float(np.abs(data.unigram_value).max())
    if max_u * max_v * data.unigram_value.shape[1] > 1e300:
        raise ValueError(f"{name}: feature values up to {max_v:g} times weights up to {max_u:g} overflow a "
                         "position's score")


#: the integer parameters of our own that ``CRF._settings`` checks (``suffixlm.checks``)
_INTEGERS = {"seed": Field("int", low=0, high=2**32 - 1), "threads": Field("int", low=1, none=True),
             "max_features": Field("int", low=1, none=True)}
#: algorithms whose state a checkpoint cannot hold (SAG's generator lives inside numba)
_NO_CHECKPOINT = names(state=None)
#: the algorithms that hold weights at zero (``FeatureSpace.frozen``: CRFsuite's transitions not generated)
_FREEZES = names(batch=True)


_LOG_KEYS = {"iteration", "objective", "active", "token_error", "sequence_error", "seconds", "evaluations"}


def _checked_extra(resumed) -> tuple[list, list, list]:
    """The stopping rule's objectives and errors, and the training log, of a checkpoint."""
    extra = resumed.extra
    out = []
    for key in ("objectives", "errors"):
        v = extra.get(key)
        if not (isinstance(v, list) and all(is_number(x) for x in v)):
            raise resumed.bad(key, "not a list of numbers")
        out.append([float(x) for x in v])
    log = extra.get("log")

    def entry(e) -> bool:
        return (isinstance(e, dict) and set(e) == _LOG_KEYS and all(is_number(e[k]) for k in (
            "objective", "token_error", "sequence_error", "seconds")) and is_int(e["iteration"])
            and all(e[k] is None or is_int(e[k]) for k in ("active", "evaluations")))

    if not (isinstance(log, list) and all(entry(e) for e in log)):
        raise resumed.bad("log", "not a list of training log entries")
    return out[0], out[1], log


class CRF(ParamsMixin):
    """Linear-chain CRF with Wapiti-style features.

    The constructor is sklearn-crfsuite's, positional order included (``CRF("lbfgs")``,
    ``CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
    all_possible_transitions=True)``); CRFsuite's names are aliases of ours with CRFsuite's
    scaling (c1 = rho1, c2 = rho2 / 2, ...) and CRFsuite's defaults when its names are used:
    :mod:`crf.compat` and the README (Coming from sklearn-crfsuite). Our own parameters
    are keyword-only.

    Parameters
    ----------
    patterns : path of a Wapiti/CRF++ pattern file, or a list of pattern lines, for token rows
        of columns; None for sklearn-crfsuite's feature dicts (:mod:`crf.dicts`).
    algorithm : one of :data:`ALGORITHMS` (None: owlqn, or fista with a tree penalty, or lbfgs
        when CRFsuite's c1 / c2 are given):

        ``"owlqn"``      OWL-QN, l1 / elastic net (default; Andrew & Gao 2007);
        ``"lbfgs"``      L-BFGS, l2 only (with CRFsuite's c1 > 0: OWL-QN, as CRFsuite);
        ``"l2sgd"``      CRFsuite's SGD with l2 and its calibrated rate (:mod:`crf.train.l2sgd`);
        ``"ap"``         CRFsuite's name of the averaged perceptron (100 passes by default);
        ``"sgd-l1"``     SGD with the cumulative l1 penalty (Tsuruoka et al. 2009);
        ``"bcd"``        block coordinate descent, one block per observation (Sokolovska et al.);
        ``"sag"``, ``"sag-nus"``  SAG / SAG-NUS* (Schmidt et al.), l2 only;
        ``"perceptron"`` averaged perceptron (Collins 2002), no penalty;
        ``"fista"``      proximal gradient (FISTA) for ``penalty`` l1, l2-tree or linf-tree.
    penalty : ``"l1"`` (default: rho1 |theta|_1) or a tree penalty ``"l2-tree"`` /
        ``"linf-tree"`` (rho1 * sum of the norms of the nested-window feature
        subtrees, :mod:`crf.train.proximal`; needs ``algorithm="fista"``).
    rho1, rho2 : penalty rho1 * Omega(theta) + rho2/2 ||theta||^2.  rho1 defaults to
        0.5 for owlqn, sgd-l1, bcd and fista and must be 0 for lbfgs, sag, sag-nus, l2sgd
        (l2 only); the perceptron has no penalty. rho2 defaults to 1e-4, and to 2
        (CRFsuite's c2 = 1) for CRFsuite's algorithms or when c1 / c2 are given.
    max_iter : cap on optimiser iterations, or passes over the data for the
        stochastic and coordinate solvers (None: no cap for owlqn / lbfgs; 50 passes
        for sgd-l1 and sag, 20 for bcd, 10 for the perceptron, 100 for ap, 1000 for
        l2sgd, 500 for fista).
    seed : random order of the stochastic solvers.
    stopeps, stopwin : stopping window (0.02 and 5 by default; CRFsuite's 1e-5 and 10 for
        ``lbfgs`` and whenever ``c1`` / ``c2`` are given: :mod:`crf.compat`).  Stop when the objective decreased by less
        than ``stopeps`` (relative: 0.02 = 2 %) over the last ``stopwin``
        iterations; with a development set, stop also when its token error varied
        by less than ``stopeps`` percentage points over that window (Wapiti's
        rule).  ``stopwin=0`` disables both.  The training-set error in the
        progress lines is that of posterior decoding (argmax of the marginals),
        computed during the gradient pass for free; the development-set error is
        Viterbi's.
    history : L-BFGS memory (5 by default; CRFsuite's 6 where its stopping rule applies).
    threads : numba threads of fit, grow and decoding (None: numba's setting, all cores
        by default; more than ``NUMBA_NUM_THREADS`` means all), restored after each call
        (:mod:`suffixlm.threads`, docs/threads.md). The gradient is the same bits for any
        count; the quasi-Newton vector sums are not, so a checkpoint keeps the count.
    n_jobs : scikit-learn's spelling of ``threads`` (-1: all, -2: all but one).
    recursion : ``"auto"``, ``"dense"`` or ``"sparse"`` forward-backward.
    verbose : print one progress line per iteration to stderr.
    order : 1 (first order, Wapiti's model) or 2 (second order, Sha & Pereira 2003: the
        state at a position is the pair of the previous and the current label, and trigram
        patterns ``T...`` conjoin observations with label triples; :mod:`crf.transitions`).
        None (default): 2 when the patterns have a trigram pattern, else 1. ``order=2``
        adds the lone trigram pattern ``T`` (the label-triple transitions) when the
        patterns have no trigram pattern. Algorithms owlqn, lbfgs, fista, sgd-l1 and perceptron.
    forbid : label pairs no labelling may use, in training and decoding
        (:mod:`crf.transitions`): ``"none"``, ``"unseen"`` (the pairs the training labels
        never have), a file of ``PREV LABEL`` lines or a list of (prev, label) pairs. None
        (default): ``"unseen"`` at order 2 (the states are the pairs seen), ``"none"`` at
        order 1.
    tags : None (default: the labels as given) or ``"iobes"``: the training labels must be
        IOB2 chunk tags; the model is trained on their IOBES rewriting (``S-X`` for a chunk of
        one token, ``E-X`` for the last token of a longer one, :mod:`crf.tagschemes`) and
        gives back IOB2 labels, marginals and pair marginals (sums over the tags of a
        label). ``classes_`` are the IOB2 labels; ``state_features_``, ``transition_features_``
        and ``crf dump`` show the tags the model holds. Forced labels force whole sequences.
    max_features : the most features (weights) a model may have; a training set and
        patterns giving more are refused (:class:`crf.budget.TooManyFeatures`, with the
        estimate) during the observation pass, before any weight vector is made. None
        (default): as many as the training's estimated memory lets fit in half of the
        memory this process may use (:mod:`crf.budget`).
    """

    def __init__(self, algorithm: str | None = None, min_freq: float | None = None,
                 all_possible_states: bool | None = None, all_possible_transitions: bool | None = None,
                 c1: float | None = None, c2: float | None = None, max_iterations: int | None = None,
                 num_memories: int | None = None, epsilon: float | None = None, period: int | None = None,
                 delta: float | None = None, linesearch: str | None = None, max_linesearch: int | None = None,
                 calibration_eta: float | None = None, calibration_rate: float | None = None,
                 calibration_samples: int | None = None, calibration_candidates: int | None = None,
                 calibration_max_trials: int | None = None, pa_type: int | None = None, c: float | None = None,
                 error_sensitive: bool | None = None, averaging: bool | None = None, variance: float | None = None,
                 gamma: float | None = None, verbose: bool = False, model_filename: str | os.PathLike | None = None,
                 keep_tempfiles: bool = False, trainer_cls=None, *,
                 patterns: str | os.PathLike | list[str] | None = None, rho1: float | None = None,
                 rho2: float | None = None, max_iter: int | None = None, stopeps: float | None = None,
                 stopwin: int | None = None, history: int | None = None, threads: int | None = None,
                 recursion: str = "auto", penalty: str = "l1", seed: int = 0, n_jobs: int | None = None,
                 max_features: int | None = None, order: int | None = None, forbid=None, tags: str | None = None):
        # sklearn-crfsuite's parameters, in its order (crf.compat)
        self.algorithm = algorithm
        self.min_freq = min_freq
        self.all_possible_states = all_possible_states
        self.all_possible_transitions = all_possible_transitions
        self.c1 = c1
        self.c2 = c2
        self.max_iterations = max_iterations
        self.num_memories = num_memories
        self.epsilon = epsilon
        self.period = period
        self.delta = delta
        self.linesearch = linesearch
        self.max_linesearch = max_linesearch
        self.calibration_eta = calibration_eta
        self.calibration_rate = calibration_rate
        self.calibration_samples = calibration_samples
        self.calibration_candidates = calibration_candidates
        self.calibration_max_trials = calibration_max_trials
        self.pa_type = pa_type
        self.c = c
        self.error_sensitive = error_sensitive
        self.averaging = averaging
        self.variance = variance
        self.gamma = gamma
        self.verbose = verbose
        self.model_filename = model_filename
        self.keep_tempfiles = keep_tempfiles
        self.trainer_cls = trainer_cls
        # ours
        self.patterns = patterns
        self.order = order
        self.forbid = forbid
        self.tags = tags
        self.penalty = penalty
        self.seed = seed
        self.rho1 = rho1
        self.rho2 = rho2
        self.max_iter = max_iter
        self.stopeps = stopeps
        self.stopwin = stopwin
        self.history = history
        self.threads = threads
        self.n_jobs = n_jobs
        self.recursion = recursion
        self.max_features = max_features

    # ------------------------------------------------------------------ helpers
    def _pattern_text(self) -> tuple[str, list[Pattern]]:
        if self.patterns is None:
            raise ValueError("CRF needs patterns= (a pattern file path or a list of pattern lines)")
        if isinstance(self.patterns, (list, tuple)):
            text = "\n".join(self.patterns) + "\n"
            return text, parse_patterns(text)
        return read_patterns(self.patterns)

    def check_params(self) -> "CRF":
        """Raise ValueError on a bad combination of parameters (before any data is read)."""
        self._settings()
        return self

    def _settings(self):
        """The :class:`crf.compat.Settings` a fit runs with, after checking every parameter:
        ``TypeError`` for a value that is not a number (bools included), ``ValueError``
        naming the parameter for one outside its range (``nan`` and infinities included) or
        a bad combination (both names of a CRFsuite alias, a penalty the algorithm has not)."""
        from .compat import resolve

        def fail(key, reason, text):
            if reason == KIND:
                raise TypeError(f"{key} must be an integer, got {values[key]!r}")
            raise ValueError(text)

        settings = resolve(self.get_params(), ALGORITHMS, PENALTIES)
        values = {"seed": self.seed, "threads": self.threads, "max_features": getattr(self, "max_features", None)}
        check_fields(values, _INTEGERS, fail, problem="{key} must be {what}, got {v}")
        _threads.check(self.threads, self.n_jobs)
        if self.recursion not in ("auto", "dense", "sparse"):
            raise ValueError(f"recursion must be 'auto', 'dense' or 'sparse', not {self.recursion!r}")
        check_tags(getattr(self, "tags", None))
        order = getattr(self, "order", None)
        if order is not None and (isinstance(order, bool) or order not in (1, 2)):
            raise ValueError(f"order must be 1, 2 or None, not {order!r}")
        forbid = getattr(self, "forbid", None)
        if isinstance(forbid, str) and forbid not in FORBID_CHOICES and not os.path.exists(forbid):
            raise ValueError(f"forbid must be 'none', 'unseen', a file of forbidden label pairs or a list of "
                             f"(prev, label) pairs; {forbid!r} is none of them (no such file)")
        if (not settings.all_possible_transitions or settings.min_freq) and settings.algorithm not in _FREEZES:
            raise ValueError(f"all_possible_transitions=False and min_freq > 0 (label pairs without a transition "
                             f"weight) need a gradient-based algorithm ({', '.join(_FREEZES)}), not "
                             f"{settings.algorithm!r}")
        return settings

    def needs_pair_states(self) -> bool:
        """Whether the parameters ask for label-pair states (order 2 or forbidden pairs)."""
        forbid = getattr(self, "forbid", None)
        return getattr(self, "order", None) == 2 or not (forbid is None or (isinstance(forbid, str)
                                                                              and forbid == "none"))

    def _order_patterns(self, text: str, patterns: list[Pattern]) -> tuple[str, list[Pattern]]:
        """The patterns of ``order``: the lone trigram pattern ``T`` added at order 2 when
        none is there; ValueError for trigram patterns at order 1."""
        has_t = any(p.kind & TRIGRAM for p in patterns)
        if self.order == 1 and has_t:
            raise ValueError("trigram patterns (T...) make a second-order model: use order=2 (--order 2) or "
                             "leave order unset")
        if self.order == 2 and not has_t:
            text = text + ("" if not text or text.endswith("\n") else "\n") + "T\n"
            patterns = patterns + parse_patterns("T\n")
        return text, patterns

    def _grow_order(self, round_patterns, init):
        """(rounds, forbid) of :meth:`grow`: second order when ``order=2``, a round has
        trigram patterns or the model grown is of second order (``T`` added to round 0 when
        no round has a trigram pattern); the forbidden pairs of ``forbid``, else those of the
        model grown, else the order's default."""
        has_t = any(p.kind & TRIGRAM for r in round_patterns for p in r)
        if self.order == 1 and (has_t or (init is not None and init[0].order == 2)):
            raise ValueError("trigram patterns (T...) make a second-order model: use order=2 (--order 2) or "
                             "leave order unset")
        order = 2 if self.order == 2 or has_t or (init is not None and init[0].order == 2) else 1
        if order == 2 and not has_t and round_patterns and not (init is not None and init[0].order == 2):
            round_patterns = [round_patterns[0] + parse_patterns("T\n")] + list(round_patterns[1:])
        forbid = getattr(self, "forbid", None)
        if forbid is None and init is not None and init[0].allowed is not None:
            labels, L = init[0].labels, init[0].n_labels
            forbid = [(labels[k // L], labels[k % L]) for k in np.flatnonzero(~init[0].allowed)]
        return round_patterns, forbid if forbid is not None else self._forbid_value(order)

    def _forbid_value(self, order: int):
        forbid = getattr(self, "forbid", None)
        if forbid is None:
            return "unseen" if order == 2 else "none"
        return forbid

    def _rho1(self) -> float:
        """The l1 strength a fit runs with (:meth:`_settings`)."""
        return self._settings().rho1

    def _fitted(self) -> None:
        if not self._is_fitted():
            raise ModelError("this CRF is not fitted yet: call fit() or CRF.load()")

    def _is_fitted(self) -> bool:
        """Whether there is a model: fitted, loaded, or read now from ``model_filename``
        when that file exists (sklearn-crfsuite's ``CRF(model_filename=...)``)."""
        if hasattr(self, "theta_"):
            return True
        path = getattr(self, "model_filename", None)
        if path is None or not os.path.exists(path):
            return False
        m = type(self).load(path)
        for key in ("space_", "theta_", "pattern_text_", "n_features_", "n_active_features_", "input_kind_",
                    "settings_"):
            setattr(self, key, getattr(m, key))
        return True

    def _save_model_filename(self) -> None:
        """sklearn-crfsuite's ``model_filename``: the fitted model is saved there (our format)."""
        if getattr(self, "model_filename", None) is not None:
            self.save(self.model_filename)

    def _set_threads(self) -> int:
        """numba's thread count from ``threads`` / ``n_jobs`` (inside a method decorated
        with ``suffixlm.threads.scoped``, which restores it); returns the count."""
        return _threads.apply(self.threads, self.n_jobs)

    def _log(self, msg: str) -> None:
        if self.verbose:
            print(msg, file=sys.stderr, flush=True)

    # ------------------------------------------------------------------ training
    def _input_kind(self, X, name="X", fitted=None) -> str:
        """The kind of X: ``"columns"`` (token rows of column strings, for patterns),
        ``"dicts"`` (sklearn-crfsuite's feature dicts) or ``"lists"`` (python-crfsuite's
        lists of attribute names), read from the data and from the model: a token that is a
        dict makes X feature dicts, lists are columns when there are patterns (``fitted``:
        the kind the model was trained on, which X must have; None: ``fit``'s rule)."""
        from .dicts import input_kind

        if not isinstance(X, (list, tuple)):
            raise TypeError(f"{name} must be a list of sequences")
        has_dict = any(isinstance(tok, dict) for seq in X if isinstance(seq, (list, tuple)) for tok in seq)
        columns = self.patterns is not None if fitted is None else fitted == "columns"
        if columns and not has_dict:
            return "columns"
        kind = input_kind(X, name)
        if fitted is None:
            if columns:
                raise ValueError(f"{name} holds feature dicts; patterns= is for token rows of columns: leave "
                                 "patterns None to train on feature dicts")
            return kind
        if kind != fitted:
            what = {"columns": "token rows of columns (with patterns)", "dicts": "feature dicts",
                    "lists": "lists of attribute names"}
            raise ValueError(f"{name}: this model was trained on {what[fitted]}, not on {what[kind]}")
        return kind

    def _check_fit_input(self, X, y, X_dev, y_dev, kind=None) -> str:
        """The kind of the training data (``_input_kind``; ``kind``: the one it must have),
        after checking X, y and the development set."""
        if len(X) == 0:
            raise ValueError("no training sequence")
        kind = self._input_kind(X, "X", kind)
        _check_labels(y, "y")
        if kind == "columns":
            _check_sequences(X, y)
        if X_dev is not None:
            if y_dev is None:
                raise ValueError("X_dev needs its labels y_dev")
            self._input_kind(X_dev, "X_dev", kind)
            _check_labels(y_dev, "y_dev")
            if kind == "columns":
                _check_sequences(X_dev, y_dev, "X_dev")
        return kind

    @_threads.scoped
    def fit(self, X, y, X_dev=None, y_dev=None, checkpoint=None, client=None, *, consume: bool = False) -> "CRF":
        """Train on sequences X and labels y (lists of label strings). X: lists of token rows
        (lists of column strings) expanded by ``patterns``; or, with ``patterns`` None,
        sklearn-crfsuite's / python-crfsuite's feature dicts (one per token) or lists of
        attribute names (:mod:`crf.dicts`, ``docs/crf_dicts.md``): what X holds is read from
        it and kept (``input_kind_``); prediction takes the same kind.

        ``checkpoint``: a :class:`suffixlm.checkpoint.Checkpoint`: the solver's state (and
        the stopping rule's, and the training log) is written to it periodically and on a
        requested stop (which raises ``suffixlm.checkpoint.Interrupted``); with ``resume``
        the fit goes on from the state it holds, refused (``CheckpointError``) unless it
        was written for the same data, patterns and parameters (``max_iter`` may differ:
        it is a cap). Every algorithm but ``sag`` and ``sag-nus`` (whose random generator
        lives inside numba) can be checkpointed.

        ``client``: a ``distributed.Client``: the workers hold shards of the encoded
        training data and evaluate the gradient on them (:mod:`crf.distributed`); the
        solver runs here. Algorithms owlqn, lbfgs and fista; not with ``checkpoint``.

        ``consume``: the caller gives ``X``, ``y``, ``X_dev`` and ``y_dev`` up to this fit,
        which empties those lists as soon as they are encoded (less memory while it trains;
        the command line's reading)."""
        settings = self._settings()
        if checkpoint is not None and settings.algorithm in _NO_CHECKPOINT:
            raise ValueError(f"checkpoints are not supported with algorithm {self.algorithm!r}")
        if client is not None:
            batch = names(batch=True)
            if settings.algorithm not in batch:
                raise ValueError(f"training on Dask workers supports {', '.join(batch)}, "
                                 f"not {self.algorithm!r}")
            if checkpoint is not None:
                raise ValueError("checkpoints are not supported when training on Dask workers")
        X, y, X_dev, y_dev = _listed(X, "X"), _listed(y, "y"), _listed(X_dev, "X_dev"), _listed(y_dev, "y_dev")
        kind = self._check_fit_input(X, y, X_dev, y_dev)
        tags = getattr(self, "tags", None)
        y, y_dev = self._tagged(y, "y", tags, consume), self._tagged(y_dev, "y_dev", tags, consume)
        n_threads = self._set_threads()
        t_start = time.perf_counter()

        def released(*seqs):  # free their strings once encoded
            for s in seqs:
                if consume and isinstance(s, list):
                    s.clear()

        if kind == "columns":
            text, patterns = self._order_patterns(*self._pattern_text())
            budget = self._budget(y, len(patterns), sum(1 for p in patterns if p.kind & 2), n_threads)
            space, train = FeatureSpace.build(patterns, X, y, "training data", check=budget.check)
            released(X, y)
            space = _crfsuite_features(space, train, settings)
            space.set_allowed(allowed_pairs(self._forbid_value(space.order), space.labels, train.labels,
                                            train.seq_offsets))
            dev = space.encode(X_dev, y_dev, "development data") if X_dev is not None else None
        else:
            from . import dicts

            order = 2 if self.order == 2 else 1
            space, train = dicts.build(X, y, "X", order)
            budget = self._budget(y, train.unigram_base.shape[1] + order, 1, n_threads)
            released(X, y)
            space = _crfsuite_features(space, train, settings)
            budget.check(space.n_unigram_obs, space.n_bigram_obs, len(space.observations), n_trigram_obs=order - 1)
            space.set_allowed(allowed_pairs(self._forbid_value(order), space.labels, train.labels,
                                            train.seq_offsets))
            text = dicts.PATTERN_TEXT[order]
            dev = dicts.encode(space, X_dev, y_dev, "X_dev") if X_dev is not None else None
        released(X_dev, y_dev)
        if consume:
            release_free_memory()
        self._log(f"* {train.n_sequences} sequences, {train.n_tokens} tokens, {space.n_labels} labels, "
                  f"{len(space.observations)} observations, {space.n_params} features "
                  f"({time.perf_counter() - t_start:.2f}s)")
        log: list[dict[str, Any]] = []
        x0 = allocate(space.n_params, np.float64, "CRF weights (the start point)", zero=True)
        result = self._train(settings, space, train, dev, x0, n_threads, log, checkpoint, client)
        self._log(f"* stopped after {result.n_iter} iterations ({result.reason}), "
                  f"{time.perf_counter() - t_start:.2f}s")
        self._set_fitted(settings, space, result, log, text)
        self.input_kind_ = kind
        self.tags_ = tags
        self._save_model_filename()
        return self

    @staticmethod
    def _tagged(y, name: str, tags, consume: bool):
        """The label sequences ``y`` in the scheme ``tags`` trains in (:mod:`crf.tagschemes`;
        None: ``y`` itself). With ``consume`` the caller's list is emptied."""
        if tags is None or y is None:
            return y
        out = [to_iobes(seq, f"{name}[{i}]") for i, seq in enumerate(y)]
        if consume and isinstance(y, list):
            y.clear()
        return out

    def _output(self):
        """(the labels the model gives back, for each of its labels the index of its label
        there), or None when they are the model's own labels."""
        if getattr(self, "tags_", None) is None:
            return None
        if getattr(self, "_output_cache", (None, None))[0] is not self.space_:
            self._output_cache = (self.space_, output_index(self.space_.labels))
        return self._output_cache[1]

    @_threads.scoped
    def grow(self, X, y, rounds=None, X_dev=None, y_dev=None) -> "CRF":
        """Incremental structured feature sets (Lavergne et al. 2010, section 5.4).

        ``rounds``: a list of rounds, each a pattern file path or a list of pattern
        lines; None splits ``patterns`` by :func:`crf.train.proximal.rounds_by_depth`
        (round r: the patterns r refinements away from a pattern with no parent).
        Round r trains on the patterns of rounds 0..r; an observation of a new pattern
        that refines a pattern of an earlier round enters only where the observation it
        refines is active (non-zero) in the previous round's model.  Each round starts
        from the previous weights.  A fitted (e.g. loaded) model is the model before
        round 0: it grows with the new patterns and is trained further.
        ``growth_log_`` lists one :class:`crf.train.proximal.GrowthRound` per round.
        """
        from .train.proximal import grow, rounds_by_depth

        settings = self._settings()
        if getattr(self, "input_kind_", "columns") != "columns":
            raise ValueError("grow adds patterns: it needs a model of token rows of columns, not of feature dicts")
        if not (settings.all_possible_states and settings.all_possible_transitions) or settings.min_freq \
                or (self._is_fitted() and self.space_.seen_states):
            raise ValueError("grow with seen states or transitions (all_possible_states=False, "
                             "all_possible_transitions=False, min_freq > 0) is not supported yet")
        X, y, X_dev, y_dev = _listed(X, "X"), _listed(y, "y"), _listed(X_dev, "X_dev"), _listed(y_dev, "y_dev")
        self._check_fit_input(X, y, X_dev, y_dev, "columns")
        tags = getattr(self, "tags", None)
        if self._is_fitted() and getattr(self, "tags_", None) != tags:
            raise ValueError(f"the model was trained with tags={getattr(self, 'tags_', None)!r}; grow it with the "
                             f"same tags, not {tags!r}")
        y, y_dev = self._tagged(y, "y", tags, False), self._tagged(y_dev, "y_dev", tags, False)
        if rounds is None:
            round_patterns = rounds_by_depth(self._pattern_text()[1])
        else:
            round_patterns = [_patterns_of(r) for r in rounds]
        init = (self.space_, self.theta_) if hasattr(self, "theta_") else None
        round_patterns, forbid = self._grow_order(round_patterns, init)
        if not round_patterns or (init is None and not any(round_patterns)):
            raise ValueError("grow needs at least one round of patterns")
        if init is not None and X and X[0] and len(X[0][0]) != init[0].n_columns:
            raise ValueError(f"the model has {init[0].n_columns} observation column(s), "
                             f"the training data {len(X[0][0])}")
        n_threads = self._set_threads()
        t_start = time.perf_counter()
        log: list[dict[str, Any]] = []
        last: dict[str, Any] = {}

        def train_round(space, data, x0):
            dev = space.encode(X_dev, y_dev, "development data") if X_dev is not None else None
            self._log(f"* round {len(last.get('rounds', []))}: training {space.n_params} features")
            res = self._train(settings, space, data, dev, x0, n_threads, log)
            last["result"] = res
            return res

        def on_round(g):
            last.setdefault("rounds", []).append(g)
            self._log(f"* round {g.round}: {g.n_patterns} patterns, {g.n_features} of {g.n_candidates} "
                      f"candidate features, {g.active} active, {g.seconds:.2f}s ({g.reason})")

        every = [p for r in round_patterns for p in r] + (list(init[0].patterns) if init is not None else [])
        budget = self._budget(y, len({p.text for p in every}), len({p.text for p in every if p.kind & 2}),
                              n_threads)
        space, theta, growth = grow(X, y, round_patterns, train_round, init=init, callback=on_round,
                                    check=budget.check, forbid=forbid)
        self._log(f"* {len(growth)} rounds, {time.perf_counter() - t_start:.2f}s")
        text = "".join(p.text + "\n" for p in space.patterns)
        self._set_fitted(settings, space, last["result"], log, text)
        self.input_kind_ = "columns"
        self.tags_ = tags
        self.growth_log_ = growth
        self._save_model_filename()
        return self

    def _budget(self, y, n_patterns: int, n_bigram_patterns: int, n_threads: int):
        """The :class:`crf.budget.FeatureBudget` of training on the label sequences y."""
        from .budget import FeatureBudget

        lengths = [len(seq) for seq in y]
        n_labels = len({lab for seq in y for lab in seq})
        st = self._settings()
        return FeatureBudget(n_labels, n_patterns, n_bigram_patterns, max(lengths, default=1), sum(lengths),
                             st.algorithm, st.history, n_threads, getattr(self, "max_features", None),
                             seen_states=not st.all_possible_states)

    def _set_fitted(self, settings, space, result, log, pattern_text) -> None:
        from suffixlm.solvers.result import ConvergenceWarning, StopReason  # here: importing it loads numba

        self.settings_ = settings
        self.n_features_ = space.n_params
        self.space_, self.theta_ = space.compact(result.x)
        self.n_active_features_ = int(np.count_nonzero(self.theta_))
        self.training_log_ = TrainingLog(log)
        self.stop_reason_ = result.reason
        if result.reason == StopReason.MAX_ITER and SOLVERS[settings.algorithm].batch:
            warnings.warn(f"the fit stopped at max_iter={settings.max_iter} before its stopping rule held "
                          f"(stopeps={settings.stopeps:g} over stopwin={settings.stopwin}); raise max_iter",
                          ConvergenceWarning, stacklevel=4)  # past _set_fitted, fit and its threads wrapper
        self.n_iter_ = result.n_iter
        # converged: by the solver's own rule or by the stopping window (Wapiti's)
        self.converged_ = bool(result.converged or result.reason == StopReason.STOPPING_CRITERION)
        self.pattern_text_ = pattern_text

    def _checkpoint_identity(self, st, space, train, dev) -> dict:
        """What a checkpoint of a fit must match to be resumed: the training and
        development data as the solver sees them (sha256 of the feature space and the
        encoded corpora: patterns, labels, observations, every token's features) and the
        parameters that change the result."""
        from suffixlm.checkpoint import content_digest

        def encoded(d):
            if d is None:
                return None
            # int64 offsets whatever the corpus holds (int32 when they fit): the digest of earlier checkpoints
            parts = (d.seq_offsets, d.unigram_base.astype(np.int64, copy=False), d.bigram_base, d.labels)
            if d.trigram_base.shape[1]:
                parts = parts + (d.trigram_base,)
            return content_digest(*parts, d.unigram_value) if d.valued else content_digest(*parts)

        data = content_digest([p.text for p in space.patterns], space.labels, list(space.observations), space.kinds,
                              int(space.n_columns), encoded(train))
        if space.allowed is not None:
            data = content_digest(data, space.allowed)
        return {"training data": data, "development data": encoded(dev), "algorithm": st.algorithm,
                "penalty": st.penalty, "rho1": st.rho1, "rho2": st.rho2, "stopeps": st.stopeps,
                "stopwin": st.stopwin, "history": st.history, "seed": self.seed, "recursion": self.recursion}

    def _resume_threads(self, resumed, n_threads: int) -> int:
        """The thread count of the checkpoint being resumed, set for numba: the gradient's
        partial sums (one per thread) and the parallel reductions depend on it, so the
        run goes on with it to give the same bits."""
        import numba

        t = resumed.extra.get("threads")
        if not (isinstance(t, int) and not isinstance(t, bool) and t >= 1):
            raise resumed.bad("threads", f"{t!r} is not an integer >= 1")
        if t != n_threads:
            asked = _threads.resolve(self.threads, self.n_jobs)
            if asked is not None:
                raise ValueError(f"{resumed.path}: the checkpoint was written with {t} threads, this run asks for "
                                 f"{asked}; resume with the same number (or without --threads)")
            if t > numba.config.NUMBA_NUM_THREADS:
                raise ValueError(f"{resumed.path}: the checkpoint was written with {t} threads, this machine runs "
                                 f"at most {numba.config.NUMBA_NUM_THREADS}: the result would differ")
            numba.set_num_threads(t)
        return t

    def _train(self, st, space, train, dev, x0, n_threads, log, checkpoint=None, client=None):
        """Run the solver of the settings ``st`` (:meth:`_settings`) from x0; progress lines and the stopping rule
        (objective window, or development error window) are the same for every solver.
        ``checkpoint``, ``client``: see :meth:`fit`."""
        from suffixlm.solvers import WindowRule

        from .inference import Objective, viterbi

        a = st.algorithm
        rule = WindowRule(st.stopeps, st.stopwin)
        state = hook = None
        if checkpoint is not None:
            identity = self._checkpoint_identity(st, space, train, dev)
            resumed = checkpoint.resume_fit("CRF", identity)
            if resumed is not None:
                n_threads = self._resume_threads(resumed, n_threads)
                rule.objectives, rule.errors, log[:] = _checked_extra(resumed)
                state = resumed.state(SOLVERS[a].state_class(), space.n_params)
                if a in ("owlqn", "lbfgs") and state.s.shape[0] != st.history:
                    raise resumed.bad_state(f"s: {state.s.shape[0]} L-BFGS pairs, history = {st.history}")
            hook = checkpoint.hook("CRF", identity, lambda: {"threads": n_threads, "objectives": rule.objectives,
                                                             "errors": rule.errors, "log": log})
        objective = None
        if client is not None:
            from .distributed import DistributedObjective

            objective = DistributedObjective(client, space, train, recursion=self.recursion)
            self._log(f"* {len(objective.shards)} shards on the Dask workers")
        elif SOLVERS[a].batch:
            objective = Objective(space, train, n_chunks=n_threads, recursion=self.recursion)

        def callback(info, theta):
            if dev is not None:
                pred, _ = viterbi(theta, space, dev)
                wrong = pred != dev.labels
                te = 100.0 * wrong.mean()
                se = 100.0 * (np.add.reduceat(wrong, dev.seq_offsets[:-1]) > 0).mean()
            elif objective is not None:  # posterior-decoding error of the last gradient pass at theta
                te, se = objective.last_errors
            else:
                te = se = float("nan")
            log.append({"iteration": info.n_iter, "objective": info.objective, "active": info.active,
                        "token_error": te, "sequence_error": se, "seconds": info.seconds,
                        "evaluations": info.n_evals})
            err = "" if te != te else f" err={te:5.2f}%/{se:5.2f}%{' (dev)' if dev is not None else ''}"
            self._log(f"  [{info.n_iter:4d}] obj={info.objective:<12.2f} act={info.active:<9d}"
                      f"{err} time={info.seconds:.2f}s")
            return rule.update(info.objective, te if dev is not None else None)

        return run_solver(TrainRun(space, train, x0, st, self.seed, callback, objective, state, hook))

    # ------------------------------------------------------------------ prediction
    # sklearn-crfsuite's attributes: None before fit, as there
    @property
    def classes_(self) -> list[str] | None:
        """The labels, in model order."""
        if not self._is_fitted():
            return None
        out = self._output()
        return list(self.space_.labels) if out is None else list(out[0])

    # sklearn-crfsuite's views of the weights (eli5 and its tutorials read these)
    @property
    def attributes_(self) -> list[str] | None:
        """The observations (attributes) that have unigram (label) features, in model order."""
        if not self._is_fitted():
            return None
        sp = self.space_
        return [o for o, k in zip(sp.observations, sp.kinds) if k & 1]

    @property
    def num_attributes_(self) -> int | None:
        """How many attributes have a non-zero state feature (``len(attributes_)``)."""
        return None if not self._is_fitted() else len(self.attributes_)

    @property
    def size_(self) -> int | None:
        """The size in bytes of the model file :meth:`save` writes (CRFsuite's ``size_``: its
        model file's size)."""
        if not self._is_fitted():
            return None
        key = (id(self.theta_), id(self.space_))
        if getattr(self, "_size", (None, None))[0] != key:
            import tempfile

            with tempfile.TemporaryDirectory() as tmp:
                path = os.path.join(tmp, "model.crf")
                self.save(path)
                self._size = (key, os.path.getsize(path))
        return self._size[1]

    @property
    def training_log_(self):
        """The per-iteration log of the last fit (:class:`crf.compat.TrainingLog`: our records,
        and CRFsuite's view through ``iterations`` / ``last_iteration``); None before fit or
        for a loaded model."""
        return getattr(self, "_training_log", None)

    @training_log_.setter
    def training_log_(self, log) -> None:
        self._training_log = log

    @property
    def tagger_(self):
        """python-crfsuite's ``Tagger`` on this model (:class:`crf.compat.Tagger`); None before fit."""
        return Tagger(self) if self._is_fitted() else None

    def predict_single(self, xseq) -> list[str]:
        """The Viterbi labels of one sequence (sklearn-crfsuite's)."""
        return self.predict([xseq])[0]

    def predict_marginals_single(self, xseq) -> list[dict[str, float]]:
        """The marginals of one sequence: for each token a dict label -> probability."""
        return self.predict_marginals([xseq])[0]

    @property
    def state_features_(self) -> dict[tuple[str, str], float] | None:
        """{(attribute, label): weight} of the non-zero unigram features."""
        if not self._is_fitted():
            return None
        return {(obs, lab): w for obs, prev, lab, w in self.space_.describe(self.theta_) if prev is None}

    @property
    def transition_features_(self) -> dict[tuple[str, str], float]:
        """{(previous label, label): weight} of the non-zero pure label-pair features (the
        observation of a bigram pattern without commands, e.g. the lone ``B``), as
        sklearn-crfsuite's; in a second-order model also {(label before, previous label,
        label): weight} of the lone trigram pattern ``T``. Label pairs (triples) conditioned
        on an observation are in :attr:`transition_state_features_`."""
        if not self._is_fitted():
            return None
        pure = {p.text for p in self.space_.patterns if p.kind & (2 | TRIGRAM) and not p.commands}
        out: dict[tuple, float] = {}
        for obs, prev, lab, w in self.space_.describe(self.theta_):
            if prev is not None and obs in pure:
                key = (*prev, lab) if isinstance(prev, tuple) else (prev, lab)
                out[key] = out.get(key, 0.0) + w
        return out

    @property
    def transition_state_features_(self) -> dict[tuple[str, str, str], float]:
        """{(attribute, previous label, label): weight} of the non-zero label-pair features
        conditioned on an observation (Wapiti's bigram patterns; CRFsuite has none)."""
        if not self._is_fitted():
            return None
        pure = {p.text for p in self.space_.patterns if p.kind & (2 | TRIGRAM) and not p.commands}
        return {(obs, *prev, lab) if isinstance(prev, tuple) else (obs, prev, lab): w
                for obs, prev, lab, w in self.space_.describe(self.theta_) if prev is not None and obs not in pure}

    def encode(self, X, y=None, name: str = "<input>") -> EncodedCorpus:
        """Encode sequences with the fitted feature space (for the low-level inference API)."""
        self._fitted()
        label = "X" if name == "<input>" else name
        X, y = _listed(X, label), _listed(y, "y")
        kind = self._input_kind(X, label, getattr(self, "input_kind_", "columns"))
        if kind != "columns":
            from . import dicts

            data = dicts.encode(self.space_, X, y, label)
            _check_value_range(label, self.theta_, self.space_, data)
            return data
        _check_sequences(X, y)
        if X and X[0] and len(X[0][0]) != self.space_.n_columns:
            raise ValueError(f"{name}: the model expects {self.space_.n_columns} observation column(s), "
                             f"got {len(X[0][0])}")
        return self.space_.encode(X, y, name)

    def _split(self, flat, data: EncodedCorpus):
        off = data.seq_offsets
        return [flat[off[i]: off[i + 1]] for i in range(data.n_sequences)]

    @_threads.scoped
    def decode(self, X, n: int = 1, posterior: bool = False, scores: bool = False, forced=None):
        """The one decoding behind :meth:`predict`, :meth:`predict_nbest` and ``crf label``.

        For each sequence of X, a list of up to ``n`` labellings, best first (fewer when
        fewer exist), each a tuple (labels, log_prob, token_probs): Viterbi (n = 1), the
        n best paths (list Viterbi), or with ``posterior`` the label of highest marginal
        at each token (n must be 1). With ``scores``, log_prob is log p(labels | x) and,
        for posterior decoding, token_probs the chosen labels' marginals; else both None.
        ``forced``: per sequence, a list of labels or None (free) the paths must agree with
        (Wapiti's ``--force``; Viterbi and n-best only).

        A model of ``tags="iobes"`` gives IOB2 labellings: each path's tags mapped one by one
        (:func:`crf.tagschemes.to_iob2`), its log-probability the path's; n-best drops a
        labelling met again under another path, so fewer than ``n`` may come back. Posterior
        decoding takes the label of highest marginal (the sum over its tags).
        """
        from .inference import forced_label_ids, forward_backward_marginals, nbest, viterbi

        if n < 1:
            raise ValueError(f"n = {n}: expected >= 1")
        if posterior and n > 1:
            raise ValueError("posterior decoding gives one labelling (n = 1)")
        if posterior and forced is not None:
            raise ValueError("forced labels work with Viterbi and n-best decoding, not posterior decoding")
        output = self._output()
        if output is not None and forced is not None:
            forced = [self._forced_tags(labs, i) for i, labs in enumerate(forced)]
        self._set_threads()
        data = self.encode(X)
        sp, theta = self.space_, self.theta_
        forced = None if forced is None else forced_label_ids(sp, data, forced)
        marg = logz = path_scores = None
        if posterior or scores:
            marg, logz = forward_backward_marginals(theta, sp, data, self.recursion)
        if posterior and output is not None:
            marg = self._summed(marg, output)
        if posterior:
            paths = marg.argmax(axis=1)[:, None]
        elif n > 1:
            paths, path_scores = nbest(theta, sp, data, n, forced)
        else:
            best, sc = viterbi(theta, sp, data, forced)
            paths, path_scores = best[:, None], sc[:, None]
        labels = (sp.labels if output is None else output[0] if posterior
                  else [output[0][k] for k in output[1].tolist()])
        off = data.seq_offsets
        out = []
        for i in range(data.n_sequences):
            s, e = off[i], off[i + 1]
            ranked = []
            for r in range(paths.shape[1]):
                if path_scores is not None and not np.isfinite(path_scores[i, r]):
                    continue
                lp = probs = None
                if scores:
                    if posterior:
                        probs = marg[np.arange(s, e), paths[s:e, 0]]
                        lp = float(np.log(probs).sum())
                        probs = probs.tolist()
                    else:
                        lp = float(path_scores[i, r] - logz[i])
                ranked.append(([labels[k] for k in paths[s:e, r]], lp, probs))
            if output is not None and len(ranked) > 1:  # the best path of each labelling
                seen: set = set()
                ranked = [d for d in ranked if not (tuple(d[0]) in seen or seen.add(tuple(d[0])))]
            out.append(ranked)
        return out

    def _forced_tags(self, labs, i: int):
        """The tags of a model of ``tags_`` that force the IOB2 labels ``labs`` of sequence
        ``i`` (None: free). A label stands for two tags (``B-X``: ``B-X`` or ``S-X``) that the
        next label tells apart, so a sequence is forced whole or not at all."""
        if labs is None:
            return None
        labs = list(labs)
        if any(lab is None for lab in labs):
            raise ValueError(f"forced: sequence {i + 1}: a model of tags={self.tags_!r} forces a sequence whole "
                             "(every label given) or not at all")
        return to_iobes(labs, f"forced[{i}]")

    @staticmethod
    def _summed(marg: np.ndarray, output) -> np.ndarray:
        """Per-token marginals of the model's labels summed into those of the labels it
        gives back (``_output``)."""
        names, index = output
        out = np.zeros((marg.shape[0], len(names)), dtype=marg.dtype)
        for k, j in enumerate(index.tolist()):
            out[:, j] += marg[:, k]
        return out

    _requires_y = True  # scikit-learn's tags: fit needs the label sequences

    def score(self, X, y) -> float:
        """Token accuracy of :meth:`predict` on ``X`` against the label sequences ``y``
        (scikit-learn's ``score``: what ``GridSearchCV`` and ``cross_val_score`` maximise;
        F1 of chunks: ``crf.evaluate``)."""
        pred = self.predict(X)
        if len(pred) != len(y) or any(len(p) != len(t) for p, t in zip(pred, y)):
            raise ValueError("score: y must hold one label per token of every sequence of X")
        total = sum(len(t) for t in y)
        if total == 0:
            raise ValueError("score: no tokens to score")
        return sum(a == b for p, t in zip(pred, y) for a, b in zip(p, t)) / total

    def predict(self, X, forced=None) -> list[list[str]]:
        """Viterbi label sequences (``forced``: see :meth:`decode`)."""
        return [d[0][0] for d in self.decode(X, forced=forced)]

    @_threads.scoped
    def predict_marginals(self, X) -> list[list[dict[str, float]]]:
        """Posterior marginals: for each token a dict label -> probability."""
        from .inference import forward_backward_marginals

        self._set_threads()
        data = self.encode(X)
        marg, _ = forward_backward_marginals(self.theta_, self.space_, data, self.recursion)
        labels, output = self.space_.labels, self._output()
        if output is not None:
            labels, marg = output[0], self._summed(marg, output)
        return [[dict(zip(labels, row.tolist())) for row in seq] for seq in self._split(marg, data)]

    @_threads.scoped
    def predict_pair_marginals(self, X) -> list[list[dict[tuple[str, str], float]]]:
        """Posterior marginals of label pairs: for each token a dict (previous label, label)
        -> probability over the pairs the model allows (the first token of a sequence: an
        empty dict). Any model; a second-order model's states are these pairs."""
        from .inference import pair_marginals

        self._set_threads()
        data = self.encode(X)
        sp = self.space_
        L = sp.n_labels
        keys = np.flatnonzero(sp.allowed) if sp.allowed is not None else np.arange(L * L)
        names = [(sp.labels[k // L], sp.labels[k % L]) for k in keys.tolist()]
        pm = pair_marginals(self.theta_, sp, data)[:, keys]
        output = self._output()
        if output is not None:
            out_names, index = output
            pairs = [(out_names[index[k // L]], out_names[index[k % L]]) for k in keys.tolist()]
            names = list(dict.fromkeys(pairs))
            where = {pair: j for j, pair in enumerate(names)}
            pm = self._summed(pm, (names, np.array([where[pair] for pair in pairs], dtype=np.int64)))
        out = []
        for i, rows in enumerate(self._split(pm, data)):
            out.append([{} if t == 0 else dict(zip(names, row.tolist())) for t, row in enumerate(rows)])
        return out

    def predict_nbest(self, X, n: int) -> list[list[tuple[list[str], float]]]:
        """The n best label sequences with their log-probabilities (fewer when fewer exist)."""
        return [[(lab, lp) for lab, lp, _ in d] for d in self.decode(X, n, scores=True)]

    # ------------------------------------------------------------------ persistence
    def save(self, path: str | os.PathLike, inputs=()) -> None:
        """Write the model atomically (``suffixlm.io.save_container``) in the format of
        :mod:`crf.modelfile`. ``inputs``: files the model was made from; ``path`` must not be one
        of them (``suffixlm.io.SameFileError``)."""
        self._fitted()
        sp = self.space_
        st = getattr(self, "settings_", None) or self._settings()
        _check_labels([sp.labels], "labels")
        bad = sp.observations.utf8_error()
        if bad is not None:
            raise ValueError(f"{path}: observation {bad!r} is not encodable as UTF-8 (surrogates not allowed); "
                             "nothing written")
        modelfile.write(path, self, st, inputs)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "CRF":
        """Read a model written by :meth:`save` (this format version or version 1;
        :func:`crf.modelfile.read`): the checksum, then every value. ModelError, naming
        the file and the field, on any inconsistency."""
        model = modelfile.read(path, cls)
        model.settings_ = model._settings()
        return model


class Tagger(_compat.Tagger):
    """python-crfsuite's ``Tagger`` on this package's model files: ``Tagger().open(path)``,
    then ``set`` / ``tag`` / ``probability`` / ``marginal`` (:class:`crf.compat.Tagger`)."""

    model_class = CRF
