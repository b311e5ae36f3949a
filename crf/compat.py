"""sklearn-crfsuite's and python-crfsuite's names on :class:`crf.CRF` (README: Coming from
sklearn-crfsuite).

:class:`crf.CRF` takes sklearn-crfsuite's constructor as it is, positional order included,
and our own parameters keyword-only. Each CRFsuite name that has one of ours is an alias
of it, with CRFsuite's scaling:

=====================  =================  ==================================================
CRFsuite               ours               how
=====================  =================  ==================================================
``c1``                 ``rho1``           rho1 = c1 (both multiply ``|w|_1``)
``c2``                 ``rho2``           rho2 = 2 c2 (CRFsuite's term is c2 ``||w||^2``,
                                          ours rho2/2 ``||w||^2``; both on the summed
                                          negative log-likelihood)
``max_iterations``     ``max_iter``       the same cap
``num_memories``       ``history``        L-BFGS pairs
``period``, ``delta``  ``stopwin``,       the same rule: stop when the objective fell by less
                       ``stopeps``        than delta * f over the last period iterations
``epsilon``            (L-BFGS's gtol)    ``||g|| / max(1, ||w||) <= epsilon`` (OWL-QN / L-BFGS);
                                          the online algorithms' stopping threshold
=====================  =================  ==================================================

Giving both names of a pair is a ``ValueError``. :func:`resolve` turns the parameters
into the :class:`Settings` a fit runs with; the estimator keeps every parameter as given
(scikit-learn's protocol), so ``get_params`` / ``set_params`` / ``clone`` round-trip all of them.

Defaults: with our names only, ours (OWL-QN, rho1 0.5, rho2 1e-4: the best default we
measured). When the algorithm is one of CRFsuite's (``lbfgs``, ``l2sgd``, ``ap``, ``pa``,
``arow``) or ``c1`` / ``c2`` is given, the penalties CRFsuite would use fill what is not
given: c1 = 0, c2 = 1, and the algorithm ``lbfgs``; ``lbfgs`` with c1 > 0 runs OWL-QN, as
in CRFsuite. Either runs to CRFsuite's convergence: ``num_memories`` 6, ``period`` 10,
``delta`` 1e-5 (ours: 5, 5 and 0.02, Wapiti's rule, which stops earlier). The iteration
caps of CRFsuite's algorithms are CRFsuite's (l2sgd 1000; ap, pa, arow 100); ``ap`` is our
averaged perceptron.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from .solvers import SOLVERS, names

#: CRFsuite's training algorithms, by CRFsuite's names.
CRFSUITE_ALGORITHMS = names(crfsuite=True)
#: CRFsuite's line searches (ours is OWL-QN's backtracking whichever is named).
LINESEARCHES = ("MoreThuente", "Backtracking", "StrongBacktracking")

#: sklearn-crfsuite's constructor parameters, in its order.
SKLEARN_CRFSUITE_PARAMS = (
    "algorithm", "min_freq", "all_possible_states", "all_possible_transitions", "c1", "c2", "max_iterations",
    "num_memories", "epsilon", "period", "delta", "linesearch", "max_linesearch", "calibration_eta",
    "calibration_rate", "calibration_samples", "calibration_candidates", "calibration_max_trials", "pa_type", "c",
    "error_sensitive", "averaging", "variance", "gamma", "verbose", "model_filename", "keep_tempfiles",
    "trainer_cls")

#: (our name, CRFsuite's name): one value, two spellings
ALIASES = (("rho1", "c1"), ("rho2", "c2"), ("max_iter", "max_iterations"), ("history", "num_memories"),
           ("stopwin", "period"), ("stopeps", "delta"))

_QUASI_NEWTON = names(module="owlqn")
#: CRFsuite's algorithm-specific parameters and the algorithms (ours after resolving) they apply to
APPLIES_TO = {
    "num_memories": _QUASI_NEWTON, "linesearch": _QUASI_NEWTON, "max_linesearch": _QUASI_NEWTON,
    "epsilon": _QUASI_NEWTON + ("perceptron", "pa", "arow"),
    "calibration_eta": ("l2sgd",), "calibration_rate": ("l2sgd",), "calibration_samples": ("l2sgd",),
    "calibration_candidates": ("l2sgd",), "calibration_max_trials": ("l2sgd",),
    "pa_type": ("pa",), "c": ("pa",), "error_sensitive": ("pa",), "averaging": ("pa",),
    "variance": ("arow",), "gamma": ("arow",),
}
#: algorithms without a penalty
NO_PENALTY = names(penalty="none")
#: algorithms for the l2 penalty only
L2_ONLY = names(penalty="l2")
#: CRFsuite's defaults of the online algorithms' own parameters
ONLINE_DEFAULTS = {"pa_type": 1, "c": 1.0, "error_sensitive": True, "averaging": True, "variance": 1.0,
                   "gamma": 1.0, "calibration_eta": 0.1, "calibration_rate": 2.0, "calibration_samples": 1000,
                   "calibration_candidates": 10, "calibration_max_trials": 20}


@dataclass(frozen=True)
class Settings:
    """What a fit runs with: the solver (ours: ``ap`` is ``perceptron``; ``lbfgs`` with an
    l1 term is ``owlqn``), the penalty and the stopping parameters, every value resolved."""

    algorithm: str
    name: str  # the algorithm as a model file names it: ``ap`` stays ``ap``
    penalty: str
    rho1: float
    rho2: float
    max_iter: int | None
    stopeps: float
    stopwin: int
    history: int
    gtol: float = 1e-5
    max_linesearch: int = 40
    epsilon: float = 0.0
    options: dict = field(default_factory=dict)  # the online solvers' own parameters
    all_possible_states: bool = True
    all_possible_transitions: bool = True
    min_freq: float = 0.0


def _number(name, v, low=0.0, strict=False, integer=False):
    """v as a float (int when ``integer``) after checking its type and range."""
    kinds = (int, np.integer) if integer else (int, float, np.integer, np.floating)
    if isinstance(v, bool) or not isinstance(v, kinds):
        raise TypeError(f"{name} must be {'an integer' if integer else 'a number'}, got {v!r}")
    if not (math.isfinite(v) and (v > low if strict else v >= low)):
        raise ValueError(f"{name} must be a finite number {'>' if strict else '>='} {low:g}, got {v!r}")
    return int(v) if integer else float(v)


def _flag(name, v):
    if not isinstance(v, (bool, np.bool_)) and v not in (0, 1):
        raise TypeError(f"{name} must be True or False, got {v!r}")
    return bool(v)


def resolve(p: dict, algorithms, penalties) -> Settings:
    """The :class:`Settings` of the parameters ``p`` (a CRF's ``get_params()``); ``algorithms``,
    ``penalties``: the names accepted. ``ValueError`` / ``TypeError`` naming the parameter for a bad value,
    for both names of an alias pair, and for a CRFsuite parameter that the algorithm does not use."""
    if p.get("trainer_cls") is not None:
        raise ValueError("trainer_cls is python-crfsuite's trainer class; this CRF trains itself (leave it None)")
    for ours, theirs in ALIASES:
        if p.get(ours) is not None and p.get(theirs) is not None:
            raise ValueError(f"{ours} and {theirs} are two names of one parameter ({theirs} is CRFsuite's): "
                             f"give one of them, not both")
    penalty = p.get("penalty", "l1")
    if penalty not in penalties:
        raise ValueError(f"penalty must be one of {', '.join(penalties)}, not {penalty!r}")
    name = p.get("algorithm")
    crfsuite_style = name in CRFSUITE_ALGORITHMS or p.get("c1") is not None or p.get("c2") is not None
    if name is None:
        name = "fista" if penalty != "l1" else "lbfgs" if crfsuite_style else "owlqn"
    if isinstance(name, (list, tuple)) or isinstance(name, (str, os.PathLike)) and name not in algorithms \
            and os.path.exists(name):
        raise ValueError(f"algorithm must be one of {', '.join(algorithms)}, not {name!r}: the first positional "
                         "parameter is the algorithm, as in sklearn-crfsuite; give a pattern file as patterns=...")
    if name not in algorithms:
        raise ValueError(f"algorithm must be one of {', '.join(algorithms)}, not {name!r}")
    algorithm = SOLVERS[name].alias_of or name  # ap runs our perceptron
    # the penalties
    if p.get("rho1") is not None:
        rho1 = _number("rho1", p["rho1"])
        if algorithm in L2_ONLY and rho1:
            raise ValueError(f"algorithm {name!r} is for the l2 penalty only (rho1 = 0); "
                             "use 'owlqn', 'sgd-l1', 'bcd' or 'fista' for l1 (or c1, with which 'lbfgs' runs "
                             "OWL-QN as CRFsuite does)")
    elif p.get("c1") is not None:
        rho1 = _number("c1", p["c1"])
        if rho1 and algorithm == "lbfgs":
            algorithm = "owlqn"  # CRFsuite: L-BFGS with an l1 term is OWL-QN
        elif rho1 and algorithm in L2_ONLY:
            raise ValueError(f"c1 (the l1 penalty) does not apply to algorithm {name!r}, which is l2 only")
    else:
        rho1 = 0.0 if crfsuite_style or algorithm in L2_ONLY else 0.5
    if p.get("rho2") is not None:
        rho2 = _number("rho2", p["rho2"])
    elif p.get("c2") is not None:
        rho2 = 2.0 * _number("c2", p["c2"])
    else:
        rho2 = 2.0 if crfsuite_style else 1e-4  # CRFsuite's c2 = 1
    if algorithm in NO_PENALTY:  # rho2 is ignored there, as it always was
        for key in ("rho1", "c1", "c2"):
            if p.get(key):
                raise ValueError(f"algorithm {name!r} has no penalty ({key} must be 0 or unset)")
        rho1 = rho2 = 0.0
    if algorithm in ("sag", "sag-nus", "l2sgd") and rho2 <= 0:
        raise ValueError(f"algorithm {name!r} needs rho2 > 0 (c2 > 0)")
    if penalty != "l1" and algorithm != "fista":
        raise ValueError(f"penalty {penalty!r} needs algorithm 'fista' (the proximal solver)")
    # what a CRFsuite parameter applies to
    for key, where in APPLIES_TO.items():
        if p.get(key) is not None and algorithm not in where:
            users = sorted({a if a != "perceptron" else "ap" for a in where})
            raise ValueError(f"{key} is a parameter of algorithm {' / '.join(users)}, not of {name!r}")

    def first(ours, theirs, default, **check):
        for key in (ours, theirs):
            if p.get(key) is not None:
                return _number(key, p[key], **check)
        return default

    max_iter = first("max_iter", "max_iterations", SOLVERS[name].max_iter, integer=True)
    # CRFsuite's L-BFGS runs to its own convergence (6 pairs, delta 1e-5 over 10 iterations): the
    # model a switching user had; ours stops by Wapiti's looser rule (2 % over 5 iterations)
    as_crfsuite = crfsuite_style and algorithm in _QUASI_NEWTON
    history = first("history", "num_memories", 6 if as_crfsuite else 5, low=1, integer=True)
    stopwin = first("stopwin", "period", 10 if as_crfsuite else 5, integer=True)
    stopeps = first("stopeps", "delta", 1e-5 if as_crfsuite else 0.02)
    if p.get("linesearch") is not None and p["linesearch"] not in LINESEARCHES:
        raise ValueError(f"linesearch must be one of {', '.join(LINESEARCHES)}, not {p['linesearch']!r}")
    max_linesearch = first("max_linesearch", "max_linesearch", 40, low=1, integer=True)
    epsilon = first("epsilon", "epsilon", 1e-5 if algorithm in _QUASI_NEWTON else 0.0)
    options = {}
    for key, default in ONLINE_DEFAULTS.items():
        v = p.get(key)
        if v is None:
            v = default
        elif key in ("error_sensitive", "averaging"):
            v = _flag(key, v)
        elif key == "pa_type":
            if isinstance(v, bool) or v not in (0, 1, 2):
                raise ValueError(f"pa_type must be 0, 1 or 2, got {v!r}")
            v = int(v)
        elif key in ("calibration_samples", "calibration_candidates", "calibration_max_trials"):
            v = _number(key, v, low=1, integer=True)
        elif key == "calibration_rate":
            v = _number(key, v, low=1.0, strict=True)
        else:
            v = _number(key, v, strict=True)
        options[key] = v
    states = p.get("all_possible_states")
    transitions = p.get("all_possible_transitions")
    min_freq = p.get("min_freq")
    return Settings(algorithm=algorithm, name="ap" if name == "ap" else algorithm, penalty=penalty, rho1=rho1,
                    rho2=rho2, max_iter=max_iter, stopeps=stopeps, stopwin=stopwin, history=history,
                    gtol=epsilon if algorithm in _QUASI_NEWTON else 1e-5,
                    max_linesearch=max_linesearch, epsilon=epsilon, options=options,
                    all_possible_states=True if states is None else _flag("all_possible_states", states),
                    all_possible_transitions=True if transitions is None else _flag("all_possible_transitions",
                                                                                   transitions),
                    min_freq=0.0 if min_freq is None else _number("min_freq", min_freq))


class TrainingLog(list):
    """The training log: a list of our per-iteration records (``iteration``, ``objective``,
    ``active``, ``token_error``, ``sequence_error``, ``seconds`` of the iteration,
    ``evaluations``), read also as sklearn-crfsuite's ``training_log_``
    (``iterations``, ``last_iteration``: dicts with CRFsuite's keys ``num``, ``loss``,
    ``active_features``, ``time`` (seconds of that iteration) and ``scores``)."""

    @property
    def iterations(self) -> list[dict]:
        return [{"num": e["iteration"], "loss": e["objective"], "active_features": e["active"],
                 "time": e["seconds"], "scores": {}, "token_error": e["token_error"],
                 "sequence_error": e["sequence_error"]} for e in self]

    @property
    def last_iteration(self) -> dict:
        it = self.iterations
        return it[-1] if it else {}


class ModelInfo:
    """What python-crfsuite's ``Tagger.info()`` gives: ``header`` (``num_labels``,
    ``num_attrs``, ``size``...), ``labels`` and ``attributes`` ({name: id}),
    ``transitions`` ({(from, to): weight}) and ``state_features`` ({(attribute, label): weight})."""

    def __init__(self, model):
        self.labels = {lab: i for i, lab in enumerate(model.classes_)}
        self.attributes = {a: i for i, a in enumerate(model.attributes_)}
        self.transitions = model.transition_features_
        self.state_features = model.state_features_
        self.header = {"num_labels": len(self.labels), "num_attrs": len(self.attributes), "size": model.size_,
                       "num_features": model.n_active_features_}


class Tagger:
    """python-crfsuite's ``Tagger`` on a :class:`crf.CRF` model (sklearn-crfsuite's
    ``tagger_``): ``set(xseq)`` then ``tag()``, ``probability(yseq)``, ``marginal(y, t)``;
    ``tag(xseq)`` in one call; ``labels()``, ``info()``; ``open(path)`` reads a model file of
    ours (not a CRFsuite binary). ``crf.Tagger`` (:class:`crf.model.Tagger`) is this class
    bound to :class:`crf.CRF`: ``crf.Tagger().open(path)``."""

    #: the estimator class whose ``load`` reads a model file (``crf.model.Tagger``: ``crf.CRF``)
    model_class = None

    def __init__(self, model=None):
        self._model = model
        self._xseq = None
        self._marginals = None

    def open(self, path) -> "Tagger":
        cls = self.model_class or (type(self._model) if self._model is not None else None)
        if cls is None:
            raise TypeError("this Tagger cannot read model files: use crf.Tagger (or crf.model.Tagger)")
        self._model = cls.load(path)
        self._xseq = self._marginals = None
        return self

    def close(self) -> None:
        self._model = self._xseq = self._marginals = None

    def _need(self):
        if self._model is None:
            raise ValueError("the tagger has no model (open one)")
        return self._model

    def labels(self) -> list[str]:
        return list(self._need().classes_)

    def info(self) -> ModelInfo:
        return ModelInfo(self._need())

    def set(self, xseq) -> None:
        """The item sequence the next ``tag()``, ``probability`` and ``marginal`` are about."""
        self._need()
        self._xseq = list(xseq)
        self._marginals = None

    def _current(self, xseq):
        if xseq is not None:
            self.set(xseq)
        if self._xseq is None:
            raise ValueError("no item sequence: call set(xseq) first, or pass xseq")
        return self._xseq

    def tag(self, xseq=None) -> list[str]:
        """The Viterbi labels of xseq (or of the sequence given to ``set``)."""
        return self._need().predict([self._current(xseq)])[0]

    def probability(self, yseq) -> float:
        """p(yseq | x) of the sequence given to ``set``."""
        m, xseq = self._need(), self._current(None)
        if len(yseq) != len(xseq):
            raise ValueError(f"yseq has {len(yseq)} labels, the item sequence {len(xseq)} items")
        ranked = m.decode([xseq], scores=True, forced=[list(yseq)])[0]
        return float(np.exp(ranked[0][1])) if ranked else 0.0  # none: a pair the model forbids

    def marginal(self, y, t: int) -> float:
        """p(label y at position t | x) of the sequence given to ``set``."""
        m, xseq = self._need(), self._current(None)
        if not 0 <= t < len(xseq):
            raise IndexError(f"position {t} is outside the item sequence of {len(xseq)} items")
        if y not in m.classes_:
            raise KeyError(f"{y!r} is not a label of the model")
        if self._marginals is None:
            self._marginals = m.predict_marginals([xseq])[0]
        return self._marginals[t][y]
