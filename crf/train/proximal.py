"""Structured (tree) penalties for CRFs and a proximal solver (FISTA).

Observation features that test nested windows form a tree: the observation of
the pattern ``%x[-1,0]/%x[0,0]/%x[1,0]`` at a position is a refinement of the one
of ``%x[-1,0]/%x[0,0]``, itself a refinement of ``%x[0,0]``.  Lavergne et al.
(2010, section 5.4) note that l1 selects such features hierarchically; the tree
penalties of Nelakanti et al. (2013) make that explicit:

    Omega(w) = sum_{nodes x} ||w_subtree(x)||      (l2-tree: 2-norm, linf-tree: inf-norm)

over a forest with one node per weight.  The forest (:func:`feature_forest`):

* the *parent pattern* of a unigram pattern is the unigram pattern whose commands
  are a strict subset of its own, with the most commands (ties: the more central
  window, then the first in the file) — :func:`pattern_parents`;
* the weight (y, x) of observation x of pattern P has parent (y, x') with x' the
  observation of P's parent pattern at the same positions (one tree per label);
* weights of patterns without parent, and all bigram weights, are roots; a
  childless root is a singleton group, where both norms are |w| (l1).

The operators are those of :mod:`suffixlm.penalties` with ``nonneg=False``
(sign-symmetric: CRF weights can be negative).  :func:`fista` minimises
loss(w) + rho2/2 ||w||^2 + kappa Omega(w) by FISTA (Beck & Teboulle 2009) with
backtracking on the step and a monotone restart, on the full gradient of
:class:`crf.inference.Objective`.
"""

from __future__ import annotations

import math
import time

import numpy as np

from .owlqn import IterationInfo, OptimizeResult

__all__ = ["pattern_parents", "feature_forest", "fista", "TREE_PENALTIES"]

TREE_PENALTIES = ("l2-tree", "linf-tree", "l1")


def pattern_parents(patterns) -> list[int]:
    """Index of the parent pattern of every pattern (-1: none or not a unigram pattern)."""
    from ..patterns import UNIGRAM

    out = []
    for p in patterns:
        best = -1
        if p.kind & UNIGRAM:
            mine = set(p.commands)
            key_best = None
            for k, q in enumerate(patterns):
                if q is p or not (q.kind & UNIGRAM) or not q.commands:
                    continue
                theirs = set(q.commands)
                if theirs < mine:
                    key = (-len(theirs), sum(abs(c.offset) for c in q.commands), k)
                    if key_best is None or key < key_best:
                        key_best, best = key, k
        out.append(best)
    return out


def feature_forest(space, data) -> np.ndarray:
    """int64 (n_params,) parent weight of every weight (-1: root), see the module doc.

    ``data`` is the encoded training corpus (every observation of the space occurs
    in it; the parent observation is read at the positions where the child occurs).
    """
    L = space.n_labels
    parents = pattern_parents(space.patterns)
    col = {p: j for j, p in enumerate(space.unigram_patterns)}
    parent_block = np.full(space.bigram_start // L if L else 0, -1, dtype=np.int64)
    ub = data.unigram_base
    for p, q in enumerate(parents):
        if q < 0:
            continue
        child = ub[:, col[p]]
        par = ub[:, col[q]]
        ok = (child >= 0) & (par >= 0)
        ranks = child[ok] // L
        pblocks = par[ok]
        if ranks.size:
            parent_block[ranks] = pblocks
    parent = np.full(space.n_params, -1, dtype=np.int64)
    has = np.flatnonzero(parent_block >= 0)
    for y in range(L):
        parent[has * L + y] = parent_block[has] + y
    return parent


def fista(objective, x0: np.ndarray, parent: np.ndarray, penalty: str = "l2-tree", kappa: float = 1.0,
          rho2: float = 0.0, max_iterations: int = 500, tol: float = 1e-9, callback=None) -> OptimizeResult:
    """Minimise objective(w)[0] + rho2/2 ||w||^2 + kappa * Omega(w) by FISTA.

    objective(w) -> (loss, gradient float64 (n,)) e.g. ``Objective.value_and_gradient``;
    parent: the forest (:func:`feature_forest`); penalty: ``"l2-tree"``,
    ``"linf-tree"`` or ``"l1"``.  Step 1/L_k found by backtracking
    (f(z) <= f(y) + g.(z - y) + L/2 |z - y|^2), L_k may decrease by 0.9 per iteration;
    momentum restarts when the objective goes up.  Stops when the relative
    decrease of the objective stays below ``tol`` for 5 iterations, or after
    ``max_iterations``.  callback(info, w) after every iteration; True stops.
    """
    from suffixlm.penalties import ForestStructure, penalty_value_fast, prox_inplace

    if penalty not in TREE_PENALTIES:
        raise ValueError(f"penalty must be one of {', '.join(TREE_PENALTIES)}, not {penalty!r}")
    if kappa < 0 or rho2 < 0:
        raise ValueError("kappa and rho2 must be >= 0")
    structure = ForestStructure.from_parent(parent)
    x = np.array(x0, dtype=np.float64)

    def smooth(w):
        v, g = objective(w)
        return v + 0.5 * rho2 * (w @ w), g + rho2 * w

    def omega(w):
        return kappa * penalty_value_fast(penalty, w, structure) if kappa else 0.0

    fx, _ = smooth(x)
    Fx = fx + omega(x)
    y = x.copy()
    fy, gy = smooth(y)
    t = 1.0
    # first Lipschitz estimate from a gradient difference along -g (then backtracking)
    gn = math.sqrt(gy @ gy)
    evals = 2
    Lk = 1.0
    if gn > 0:
        eps = 1e-4 / gn
        _, g2 = smooth(y - eps * gy)
        evals += 1
        Lk = max(math.sqrt(((g2 - gy) @ (g2 - gy))) / (eps * gn), 1e-8)
    infos: list[IterationInfo] = []
    t0 = time.perf_counter()
    small = 0
    reason = "max_iterations"
    for it in range(1, max_iterations + 1):
        while True:
            z = y - gy / Lk
            if kappa:
                prox_inplace(penalty, z, structure, kappa / Lk, nonneg=False)
            fz, gz = smooth(z)
            evals += 1
            d = z - y
            if fz <= fy + gy @ d + 0.5 * Lk * (d @ d) + 1e-12 * abs(fy):
                break
            Lk *= 2.0
        Fz = fz + omega(z)
        if Fz > Fx:  # restart the momentum from x (monotone FISTA)
            if t == 1.0:  # already a plain proximal step from x: nothing left to gain
                reason = "no progress"
                break
            t = 1.0
            y = x.copy()
            fy, gy = smooth(y)
            evals += 1
            continue
        t_new = 0.5 * (1.0 + math.sqrt(1.0 + 4.0 * t * t))
        y = z + ((t - 1.0) / t_new) * (z - x)
        t = t_new
        rel = (Fx - Fz) / max(abs(Fz), 1.0)
        x, Fx = z, Fz
        fy, gy = smooth(y)
        evals += 1
        Lk *= 0.9
        t1 = time.perf_counter()
        info = IterationInfo(it, float(Fx), int(np.count_nonzero(x)), 1.0 / Lk, evals, t1 - t0)
        t0 = t1
        infos.append(info)
        small = small + 1 if rel < tol else 0
        if small >= 5:
            reason = "no progress"
            break
        if callback is not None and callback(info, x):
            reason = "stopping criterion"
            break
    return OptimizeResult(x, float(Fx), len(infos), evals, reason, infos)
