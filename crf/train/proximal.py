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

:func:`grow` is the incremental training of section 5.4: rounds of patterns,
where a more specific observation enters only if the one it refines (its parent
in the forest above) is active in the previous round's model.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from suffixlm.memory import allocate
from suffixlm.solvers import FistaState  # noqa: F401 (crf.solvers names it as fista's checkpoint state)
from suffixlm.solvers.result import OptimizeResult, StopReason

from ..solvers import PENALTIES

__all__ = ["pattern_parents", "rounds_by_depth", "feature_forest", "fista", "grow", "GrowthRound", "TREE_PENALTIES",
           "train_crf"]

TREE_PENALTIES = PENALTIES


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


def rounds_by_depth(patterns) -> list[list]:
    """The default growth schedule: round r holds the patterns at depth r of the
    pattern forest (:func:`pattern_parents`): round 0 the patterns that refine no
    other (e.g. single letters, and ``B``), round 1 their direct refinements, ..."""
    parents = pattern_parents(patterns)
    depth = [0] * len(patterns)
    for i in range(len(patterns)):
        d, j = 0, parents[i]
        while j >= 0:
            d, j = d + 1, parents[j]
        depth[i] = d
    return [[p for p, d in zip(patterns, depth) if d == r] for r in range(max(depth, default=-1) + 1)]


def feature_forest(space, data) -> np.ndarray:
    """int64 (n_params,) parent weight of every weight (-1: root), see the module doc.

    ``data`` is the encoded training corpus (every observation of the space occurs
    in it; the parent observation is read at the positions where the child occurs).
    """
    L = space.n_labels
    parents = pattern_parents(space.patterns)
    col = {p: j for j, p in enumerate(space.unigram_patterns)}
    seen = space.seen_states
    # a block's rank from its offset: offset // L, or its place among the seen-states blocks
    rank_of = (lambda b: np.searchsorted(space.state_ptr, b, side="right") - 1) if seen else (lambda b: b // L)
    parent_block = np.full(space.n_unigram_obs, -1, dtype=np.int64)
    ub = data.unigram_base
    for p, q in enumerate(parents):
        if q < 0:
            continue
        child = ub[:, col[p]]
        par = ub[:, col[q]]
        ok = (child >= 0) & (par >= 0)
        ranks = rank_of(child[ok].astype(np.int64))
        pblocks = par[ok]
        if ranks.size:
            parent_block[ranks] = pblocks
    parent = allocate(space.n_params, np.int64, "the feature forest of the tree penalty")
    parent[:] = -1
    has = np.flatnonzero(parent_block >= 0)
    if not seen:
        for y in range(L):
            parent[has * L + y] = parent_block[has] + y
        return parent
    # seen states: the weight (child, y) has the parent (parent block, y); the parent
    # observation occurs wherever the child does, with the same labels, so it has y too
    ptr, lab = space.state_ptr, space.state_labels
    key = np.repeat(np.arange(space.n_unigram_obs, dtype=np.int64), np.diff(ptr)) * L + lab  # sorted
    counts = np.diff(ptr)[has]
    k = np.repeat(ptr[has], counts) + (np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts))
    pkey = rank_of(np.repeat(parent_block[has], counts)) * L + lab[k]
    where = np.searchsorted(key, pkey)
    if where.size and (where.max() >= key.shape[0] or np.any(key[where] != pkey)):
        raise ValueError("feature forest: a parent observation lacks a label of its child (data not the training data)")
    parent[k] = where
    return parent


def fista(objective, x0: np.ndarray, parent: np.ndarray, penalty: str = "l2-tree", kappa: float = 1.0,
          rho2: float = 0.0, max_iter: int = 500, tol: float = 1e-9, callback=None, state=None,
          checkpoint=None) -> OptimizeResult:
    """Minimise objective(w)[0] + rho2/2 ||w||^2 + kappa * Omega(w) by the FISTA of
    :func:`suffixlm.solvers.fista` (backtracking, adaptive restart).

    objective(w) -> (loss, gradient float64 (n,)) e.g. ``Objective.value_and_gradient``;
    parent: the forest (:func:`feature_forest`); penalty: ``"l2-tree"``,
    ``"linf-tree"`` or ``"l1"`` (sign-symmetric: CRF weights may be negative).  The
    first step comes from a gradient difference; L may decrease by 0.9 per iteration.
    Stops when the relative decrease of the objective (relative to max(|F|, 1)) stays
    below ``tol`` for 5 iterations, when a plain step from the last iterate no longer
    decreases it, or after ``max_iter``.  callback(info, w) after every iteration;
    True stops (reason ``"stopping criterion"``). ``state``, ``checkpoint``: those of
    :func:`suffixlm.solvers.fista` (a :class:`suffixlm.solvers.FistaState`).
    """
    from suffixlm.penalties import ForestStructure, make_penalty
    from suffixlm.solvers import fista as solve

    if penalty not in TREE_PENALTIES:
        raise ValueError(f"penalty must be one of {', '.join(TREE_PENALTIES)}, not {penalty!r}")
    if kappa < 0 or rho2 < 0:
        raise ValueError("kappa and rho2 must be >= 0")
    omega = make_penalty(penalty, ForestStructure.from_parent(parent), kappa) if kappa else None

    def smooth(w):
        v, g = objective(w)
        return v + 0.5 * rho2 * (w @ w), g + rho2 * w

    res = solve(smooth, omega, x0, L0=None, L_decrease=0.9, max_iter=max_iter, tol=tol, patience=5,
                tol_floor=1.0, stop_on_stall=True, callback=callback, state=state, checkpoint=checkpoint)
    if res.reason == StopReason.CALLBACK:
        res.reason = StopReason.STOPPING_CRITERION
    return res


# --------------------------------------------------------------------------- incremental growth
@dataclass
class GrowthRound:
    """What one round of :func:`grow` did."""

    round: int
    n_patterns: int
    n_observations: int
    n_features: int
    n_candidates: int  # features of the round's full pattern set, before the parent filter
    active: int
    objective: float
    seconds: float
    reason: str


def _obs_ids(space, data):
    """int64 (n_tokens, n_patterns) observation id of every pattern at every token (-1: none)."""
    L = space.n_labels
    n_obs = len(space.kinds)
    ids = np.arange(n_obs, dtype=np.int64)
    u_of = np.full(max(space.n_unigram_obs, 1), -1, dtype=np.int64)
    u_of[: space.n_unigram_obs] = ids[space.unigram_offset >= 0]
    b_of = np.full(max(space.n_bigram_obs, 1), -1, dtype=np.int64)
    b_of[: space.n_bigram_obs] = ids[space.bigram_offset >= 0]
    out = np.full((data.n_tokens, len(space.patterns)), -1, dtype=np.int64)
    for j, p in enumerate(space.unigram_patterns):
        b = data.unigram_base[:, j]
        out[:, p] = np.where(b >= 0, u_of[np.maximum(b, 0) // L], -1)
    for j, p in enumerate(space.bigram_patterns):
        if p in space.unigram_patterns:
            continue
        b = data.bigram_base[:, j]
        out[:, p] = np.where(b >= 0, b_of[(np.maximum(b, space.bigram_start) - space.bigram_start) // (L * L)], -1)
    return out


def _active_observations(space, theta) -> np.ndarray:
    """bool (n_obs,): observation with a non-zero weight in its unigram, bigram or trigram block."""
    L = space.n_labels
    act = np.zeros(len(space.kinds), dtype=bool)
    for offsets, lo, hi, size in ((space.unigram_offset, 0, space.bigram_start, L),
                                  (space.bigram_offset, space.bigram_start, space.trigram_start, L * L),
                                  (space.trigram_offset, space.trigram_start, space.n_params, L ** 3)):
        has = offsets >= 0
        if has.any():
            act[has] |= (theta[lo:hi].reshape(-1, size) != 0).any(axis=1)
    return act


def grow(X, y, rounds, train_round, init=None, callback=None, check=None, forbid=None):
    """Incremental structured feature sets (Lavergne et al. 2010, section 5.4).

    rounds: list of lists of patterns (:class:`crf.patterns.Pattern`); round r
    trains on the patterns of rounds 0..r.  The observations of a pattern that is
    new in round r and whose parent pattern (:func:`pattern_parents`, over the
    round's patterns) existed before are kept only where that parent observation
    is *active* (a non-zero weight) in the previous round's model; all other
    observations are kept.  Each round starts from the previous weights (same
    observation strings).  ``init=(space, theta)`` (e.g. a loaded model's
    ``space_``, ``theta_``) is the model before round 0: a trained model grows
    with new patterns.
    train_round(space, data, x0) -> OptimizeResult trains one round (e.g. OWL-QN).
    callback(GrowthRound) after each round.  ``check``: the size check of every round's
    observation pass (:meth:`crf.features.FeatureSpace.build`), e.g.
    :meth:`crf.budget.FeatureBudget.check`.  ``forbid``: the label pairs every round's model
    forbids (:func:`crf.transitions.allowed_pairs`; None: none). Rounds with trigram
    patterns train second-order models. Returns ``(space, theta, rounds_log)``.
    """
    from ..features import FeatureSpace
    from ..transitions import allowed_pairs

    prev_space, prev_theta = init if init is not None else (None, None)
    patterns: list = list(prev_space.patterns) if prev_space is not None else []
    log: list[GrowthRound] = []
    for r, new in enumerate(rounds):
        t0 = time.perf_counter()
        old_texts = {p.text for p in patterns}
        patterns = patterns + [p for p in new if p.text not in old_texts]
        full, full_data = FeatureSpace.build(patterns, X, y, f"round {r}", check=check)
        keep = np.ones(len(full.kinds), dtype=bool)
        if prev_space is not None:
            parents = pattern_parents(patterns)
            active_prev = _active_observations(prev_space, prev_theta)
            ids = _obs_ids(full, full_data)
            # observation ids of the previous model, by string
            to_prev = np.array([prev_space.obs_index.get(s, -1) for s in full.observations], dtype=np.int64)
            prev_active_full = np.zeros(len(full.kinds), dtype=bool)
            m = to_prev >= 0
            prev_active_full[m] = active_prev[to_prev[m]]
            for p, q in enumerate(parents):
                if q < 0 or patterns[p].text in old_texts or patterns[q].text not in old_texts:
                    continue
                child, par = ids[:, p], ids[:, q]
                ok = (child >= 0) & (par >= 0)
                cand = np.zeros(len(full.kinds), dtype=bool)
                cand[child[ok]] = True
                good = np.zeros(len(full.kinds), dtype=bool)
                sel = ok.copy()
                sel[ok] = prev_active_full[par[ok]]
                good[child[sel]] = True
                keep &= ~cand | good
        space = FeatureSpace(patterns, full.observations.select(keep), full.kinds[keep], full.labels, full.n_columns)
        data = space.encode(X, y, f"round {r}")
        space.set_allowed(allowed_pairs(forbid, space.labels, data.labels, data.seq_offsets))
        x0 = allocate(space.n_params, np.float64, f"CRF weights of round {r}", zero=True)
        if prev_space is not None:
            L = space.n_labels
            for o, s in enumerate(space.observations):
                po = prev_space.obs_index.get(s, -1)
                if po < 0:
                    continue
                for off, poff, size in ((space.unigram_offset[o], prev_space.unigram_offset[po], L),
                                        (space.bigram_offset[o], prev_space.bigram_offset[po], L * L),
                                        (space.trigram_offset[o], prev_space.trigram_offset[po], L ** 3)):
                    if off >= 0 and poff >= 0:
                        x0[off: off + size] = prev_theta[poff: poff + size]
        res = train_round(space, data, x0)
        info = GrowthRound(r, len(patterns), len(space.observations), space.n_params, full.n_params,
                           int(np.count_nonzero(res.x)), float(res.objective), time.perf_counter() - t0,
                           res.reason)
        log.append(info)
        if callback is not None:
            callback(info)
        prev_space, prev_theta = space, res.x
    return prev_space, prev_theta, log


def train_crf(run) -> OptimizeResult:
    """``fista`` of :mod:`crf.solvers`: l1 or a tree penalty on the feature forest of the data."""
    st = run.settings
    return fista(run.objective.value_and_gradient, run.x0, feature_forest(run.space, run.data), st.penalty,
                 kappa=st.rho1, rho2=st.rho2, max_iter=st.max_iter, callback=run.callback, **run.resume)
