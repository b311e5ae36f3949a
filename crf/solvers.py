"""The CRF's training algorithms in one table: every name users type, and every fact the
estimator, the command line, the checkpoints and the Dask path need about each.

Each row is a :class:`SolverSpec`; the solver itself lives in ``crf/train/<module>.py``,
which defines ``train_crf(run)``: it trains from a :class:`TrainRun` (the feature space,
the encoded corpus, the start point, the resolved settings, the progress callback and,
for the full-batch solvers, the objective) and returns a
:class:`suffixlm.solvers.result.OptimizeResult`. The modules are imported when a solver
runs, so reading this table (the command line does, at start-up) loads no numba.

**Adding a solver** (docs/ARCHITECTURE.md): write ``crf/train/<name>.py`` with the solver
and its ``train_crf(run)``, add one row to :data:`SOLVERS`, and tests. The choices of
``suffixlm crf train -a``, ``CRF(algorithm=...)``'s check, the default iteration cap, the
penalty checks, whether ``--checkpoint`` and ``--workers`` are offered: all are read from
the row.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Callable

__all__ = ["ALGORITHMS", "PENALTIES", "SOLVERS", "SolverSpec", "TrainRun", "spec", "train"]


@dataclass(frozen=True)
class SolverSpec:
    """One training algorithm.

    name: what users type; module: ``crf.train.<module>`` holds its ``train_crf(run)``;
    summary: one line (the command's help, the docs);
    penalty: ``"elastic"`` (rho1 |w|_1 + rho2/2 ||w||^2), ``"l2"`` (rho2 only), ``"none"``
    (no penalty: rho1 and rho2 must be 0 or unset), ``"proximal"`` (l1 or a tree penalty of
    :data:`PENALTIES`, with rho2);
    max_iter: the default cap on iterations or passes (None: none);
    batch: it works on full-batch gradients (:class:`crf.inference.Objective`), so it runs
    on Dask workers and holds the frozen weights of CRFsuite's unseen transitions at zero;
    state: the name of its checkpoint state class in its module (None: no checkpoint);
    crfsuite: one of CRFsuite's algorithm names (CRFsuite's defaults then fill the
    parameters not given: :mod:`crf.compat`); alias_of: the solver this name runs."""

    name: str
    module: str
    summary: str
    penalty: str
    max_iter: int | None
    batch: bool = False
    state: str | None = None
    crfsuite: bool = False
    alias_of: str | None = None

    @property
    def checkpointable(self) -> bool:
        return self.state is not None

    def state_class(self):
        """The class of its checkpoint state (:mod:`suffixlm.solvers.state`)."""
        if self.state is None:
            raise ValueError(f"algorithm {self.name!r} cannot be checkpointed")
        return getattr(importlib.import_module(f"crf.train.{self.module}"), self.state)


SOLVERS: dict[str, SolverSpec] = {s.name: s for s in (
    SolverSpec("owlqn", "owlqn", "OWL-QN, l1 + l2 (the default)", "elastic", None, batch=True, state="OwlqnState"),
    SolverSpec("lbfgs", "owlqn", "L-BFGS, l2 only", "l2", None,
               batch=True, state="OwlqnState", crfsuite=True),
    SolverSpec("sgd-l1", "sgd_l1", "SGD, cumulative l1 penalty", "elastic", 50,
               state="SgdL1State"),
    SolverSpec("bcd", "bcd", "block coordinate descent, l1 + l2", "elastic", 20, state="BcdState"),
    SolverSpec("sag", "sag", "SAG, l2 only", "l2", 50),
    SolverSpec("sag-nus", "sag", "SAG-NUS*, l2 only", "l2", 50),
    SolverSpec("perceptron", "perceptron", "averaged perceptron", "none", 10, state="PerceptronState"),
    SolverSpec("fista", "proximal", "proximal gradient, l1 or a tree --penalty", "proximal", 500, batch=True,
               state="FistaState"),
    SolverSpec("ap", "perceptron", "CRFsuite's name of the averaged perceptron", "none", 100, state="PerceptronState",
               crfsuite=True, alias_of="perceptron"),
    SolverSpec("l2sgd", "l2sgd", "CRFsuite's SGD, l2, calibrated learning rate", "l2", 1000,
               crfsuite=True),
    SolverSpec("pa", "online", "CRFsuite's passive-aggressive", "none", 100, crfsuite=True),
    SolverSpec("arow", "online", "CRFsuite's AROW", "none", 100, crfsuite=True),
)}

#: the names users choose among, in the table's order
ALGORITHMS = tuple(SOLVERS)
#: penalties: l1, or a tree penalty on the nested-window features (``proximal`` solvers only)
PENALTIES = ("l1", "l2-tree", "linf-tree")


def spec(name: str) -> SolverSpec:
    """The row of ``name`` (a solver's name or its alias), or ``ValueError`` listing the names."""
    try:
        return SOLVERS[name]
    except (KeyError, TypeError):
        raise ValueError(f"algorithm must be one of {', '.join(ALGORITHMS)}, not {name!r}") from None


def names(**facts) -> tuple[str, ...]:
    """The algorithms whose row has every given fact, e.g. ``names(batch=True)``."""
    return tuple(n for n, s in SOLVERS.items() if all(getattr(s, k) == v for k, v in facts.items()))


@dataclass
class TrainRun:
    """What a solver's ``train_crf`` is given. ``objective``: the full-batch objective of
    ``batch`` solvers (on Dask workers or in this process), else None; ``state``: a
    checkpoint's solver state to go on from; ``checkpoint``: the hook to hand states to."""

    space: Any
    data: Any
    x0: Any
    settings: Any  # crf.compat.Settings
    seed: int
    callback: Callable
    objective: Any = None
    state: Any = None
    checkpoint: Any = None

    @property
    def resume(self) -> dict:
        return {"state": self.state, "checkpoint": self.checkpoint}


def train(run: TrainRun):
    """Run the solver of ``run.settings.algorithm``: its module's ``train_crf(run)``."""
    s = spec(run.settings.algorithm)
    return importlib.import_module(f"crf.train.{s.module}").train_crf(run)
