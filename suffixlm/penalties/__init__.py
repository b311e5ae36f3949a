"""Proximal operators of the penalties of Nelakanti et al. (2013), §3-§5 and §6.

Every operator acts on a tree-structured vector: one value per node of a forest
given by a ``parent`` array (-1 for roots; any node numbering; a forest is allowed,
e.g. one tree per output word of the language model). Names:

========================  ==========================================================
``l1``                    Omega(w) = sum_x eta_x |w_x|; soft-thresholding (eq. 7)
``l2sq``                  Omega(w) = 1/2 sum_x eta_x w_x^2; rescaling (eq. 6)
``l2-tree``               Omega(w) = sum_x eta_x ||w_subtree(x)||_2; Algorithm 2
``linf-tree``             Omega(w) = sum_x eta_x ||w_subtree(x)||_inf; Algorithm 4
                          (k-best pairing heaps)
``linf-tree-pivot``       the same operator by Algorithm 3 (Bruckner's pivots)
========================  ==========================================================

The problem solved. With counts c (trie nodes per node, default 1) and weights
eta (default: ``eta = c``, i.e. weight 1 for every trie group), ``prox`` returns

    argmin_w  1/2 sum_x c_x (w_x - v_x)^2 + kappa * Omega(w)   s.t. w >= 0 if nonneg.

With c = 1 this is the usual prox (SPAMS ``proximalTree`` with ``pos=True`` for the
tree norms). A node of count c stands for a non-branching path of c trie nodes
sharing one value; eta_x is then the sum of the weights of the c groups (for l1 /
l2sq: coordinates) it stands for, and ``Omega`` above is exactly the trie's
penalty for that vector. The operators are those of one trie coordinate
(Propositions 1-2): l1 thresholds at kappa eta_x / c_x, l2sq divides by
1 + kappa eta_x / c_x, linf-tree clips each subtree where its l1 mass above the
threshold (counts included) is kappa eta_x. Hence prox on the collapsed tree equals
prox on the expanded trie whenever the trie weights of each collapsed node are
equal (l1, l2sq) -- for linf-tree it suffices that along every collapsed path a
group's weight is at least the mean of the weights below it on that path, e.g.
alpha**depth with alpha <= 1 (paper §6 uses alpha = 0.85). For alpha > 1 the trie
solution can differ along a collapsed path; the collapsed operator still solves the
problem above exactly, i.e. it returns the minimiser over path-constant vectors. ``l2-tree`` cannot be collapsed (§5):
it requires all counts to be 1.

nonneg: the projection on the positive orthant of Algorithm 1 (step 2), w = max(v, 0),
then the unconstrained prox. For all five penalties (absolute norms, separable or
monotone in |w|) this equals the solution of the constrained problem; the tests
check it against a generic solver. With nonneg=False the operators are
sign-symmetric: they act on |v| and keep the signs.

Two layers: ``prox`` / ``penalty_value`` take plain arrays; the penalty objects
(:class:`Penalty`: ``L1``, ``L2Sq``, ``L2Tree``, ``LinfTree``, ``LinfTreePivot``, by
name through :func:`make_penalty`) on a ``ForestStructure`` are what the solvers of both
packages use: they call the operator many times on the same forest (no allocation per
call, numba kernels). Kernels
work in depth-first post-order; numbering the nodes in that order
(``ForestStructure.order``) makes their gathers and scatters sequential.
"""

from __future__ import annotations

import math
import time

import numpy as np

from ._l1 import prox_l1, value_l1
from ._l2_tree import prox_l2_tree
from ._l2sq import prox_l2sq, value_l2sq
from ._linf_tree import prox_linf_tree
from ._linf_tree_pivot import prox_linf_tree_pivot
from ._structure import ForestStructure, PenaltyError
from ._value import value_tree

__all__ = [
    "NAMES",
    "PENALTIES",
    "ForestStructure",
    "L1",
    "L2Sq",
    "L2Tree",
    "LinfTree",
    "LinfTreePivot",
    "Penalty",
    "PenaltyError",
    "depth_weights",
    "make_penalty",
    "penalty_value",
    "penalty_value_fast",
    "prox",
    "prox_inplace",
]

#: Seed of the random pivots of ``linf-tree-pivot`` (the result does not depend on it).
PIVOT_SEED = 20130601


def _check_values(values, structure: ForestStructure) -> None:
    if not isinstance(values, np.ndarray) or values.dtype != np.float64 or values.ndim != 1:
        raise PenaltyError("values must be a 1-D float64 numpy array")
    if values.shape[0] != structure.n:
        raise PenaltyError(f"values has {values.shape[0]} entries, the forest has {structure.n} nodes")
    if not values.flags.c_contiguous:
        raise PenaltyError("values must be C-contiguous")


def _check_kappa(kappa) -> float:
    kappa = float(kappa)
    if not (math.isfinite(kappa) and kappa >= 0.0):
        raise PenaltyError(f"kappa = {kappa}: expected a finite number >= 0")
    return kappa


class Penalty:
    """``strength * Omega(w)`` on a forest, as the solvers see a penalty (copt's shape).

    ``value(w)``: strength * Omega(w). ``prox(v, step)``: in place on ``v`` (float64[n],
    node order) and returned, argmin_w 1/2 sum_x c_x (w_x - v_x)^2 + step * strength *
    Omega(w), subject to w >= 0 when ``nonneg`` (Algorithm 1, step 2: the projection,
    then the operator). ``structure``: the forest (:class:`ForestStructure`), which
    also gives the counts c and the group weights eta of ``Omega``. Each call of
    ``prox`` adds to ``prox_seconds`` and ``prox_calls``.

    Subclasses implement ``_omega(w, structure)`` and ``_prox(v, kappa)``; one class per
    operator, registered by name in :data:`PENALTIES`. Each carries the facts the
    estimators decide by (never by the name):

    ``collapsible``: the operator on a collapsed suffix-tree node (count c) is that of its
    c trie nodes, so the model trains on the suffix tree (Propositions 1-2); else on the
    trie. ``collapsible_weighted``: the same with depth weights alpha**d (alpha <= 1).
    ``metric``: it takes a per-coordinate metric (the LM's per-parameter step scales);
    else only a scale per tree (per output word). ``sign_symmetric``: without ``nonneg``
    it acts on |v| and keeps the signs. ``crf``: the CRF's proximal solver offers it
    (``suffixlm crf train --penalty``).
    """

    name = ""
    collapsible = True
    collapsible_weighted = True
    metric = True
    sign_symmetric = True
    crf = False

    def __init__(self, structure: ForestStructure, strength: float = 1.0, nonneg: bool = False):
        self.structure = structure
        self.value_structure = structure  # the prox's may be rescaled: see in_metric
        self.strength = _check_kappa(strength)
        self.nonneg = bool(nonneg)
        self.prox_seconds = 0.0
        self.prox_calls = 0
        self._last_omega = None  # Omega of the last prox's result, where the kernel gives it
        self._check_structure(structure)

    def _check_structure(self, structure: ForestStructure) -> None:
        pass

    def value(self, w: np.ndarray) -> float:
        _check_values(w, self.value_structure)
        return self.strength * float(self._omega(w, self.value_structure)) if self.strength else 0.0

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        _check_values(v, self.structure)
        kappa = _check_kappa(step) * self.strength
        t0 = time.perf_counter()
        self._prox(v, kappa)
        self.prox_seconds += time.perf_counter() - t0
        self.prox_calls += 1
        return v

    def prox_value(self, v: np.ndarray, step: float) -> tuple[np.ndarray, float]:
        """``prox(v, step)`` and ``value`` of its result (the tree norms compute that
        value inside the operator, while the vector is in post-order)."""
        self._last_omega = None
        self.prox(v, step)
        if self._last_omega is None:
            return v, self.value(v)
        return v, self.strength * float(self._last_omega) if self.strength else 0.0

    def in_metric(self, scale: np.ndarray) -> "Penalty":
        """The same penalty whose ``prox`` works in the metric scaled by ``scale`` (float64[n],
        > 0, node order): argmin 1/2 sum c s (w - v)^2 + kappa Omega_eta(w), with the
        coordinates' weights c s in the operator (:meth:`ForestStructure.in_metric`).
        ``value`` is unchanged."""
        other = type(self)(self.structure.in_metric(scale), self.strength, self.nonneg)
        other.value_structure = self.value_structure  # Omega keeps the true weights
        return other

    def __repr__(self) -> str:
        return f"{type(self).__name__}(n={self.structure.n}, strength={self.strength:g}, nonneg={self.nonneg})"


class _Separable(Penalty):
    """A penalty acting on each coordinate alone: ``_value_fn(w, eta)`` and
    ``_prox_fn(v, eta / c, kappa, nonneg)`` are its kernels."""

    def _omega(self, w, s):
        return type(self)._value_fn(w, s.weights)

    def _prox(self, v, kappa):
        type(self)._prox_fn(v, self.structure.weight_per_count, kappa, self.nonneg)


class L1(_Separable):
    """Omega(w) = sum_x eta_x |w_x|: soft-thresholding (eq. 7)."""

    name = "l1"
    collapsible_weighted = False
    crf = True
    _value_fn = staticmethod(value_l1)
    _prox_fn = staticmethod(prox_l1)


class L2Sq(_Separable):
    """Omega(w) = 1/2 sum_x eta_x w_x^2: rescaling (eq. 6)."""

    name = "l2sq"
    collapsible_weighted = False
    _value_fn = staticmethod(value_l2sq)
    _prox_fn = staticmethod(prox_l2sq)


class _TreeNorm(Penalty):
    _linf = True

    def _omega(self, w, s):
        return value_tree(w, s.order, s.parent_post, s.weights_post, self._linf, s.scratch("acc"), s.scratch("a"),
                          s.chunks)


class L2Tree(_TreeNorm):
    """Omega(w) = sum_x eta_x ||w_subtree(x)||_2: Algorithm 2 (needs counts all 1)."""

    name = "l2-tree"
    _linf = False
    collapsible = collapsible_weighted = False  # §5: its groups do not split along a chain
    metric = False
    crf = True

    def _check_structure(self, structure):
        if not structure.counts_all_one:
            raise PenaltyError(
                "l2-tree needs counts all 1: its prox does not keep collapsed values equal "
                "(paper §5), run it on the trie"
            )

    def in_metric(self, scale: np.ndarray) -> "L2Tree":
        """Only for a scale constant on every tree (every group lies in one): then
        argmin 1/2 sum s (w - v)^2 + kappa Omega_eta(w) is the plain operator with group
        weights eta / s. The l2 operator in a metric varying inside a group is another
        problem."""
        s = self.structure
        scale = np.ascontiguousarray(scale, dtype=np.float64)
        if scale.shape != (s.n,) or (s.n and not (np.all(np.isfinite(scale)) and scale.min() > 0)):
            raise PenaltyError(f"scale must be {s.n} finite numbers > 0")
        if s.n and np.any(scale[s.parent[s.parent >= 0]] != scale[s.parent >= 0]):
            raise PenaltyError("l2-tree: the metric's scale must be constant on every tree")
        scaled = ForestStructure.from_parent(s.parent, counts=s.counts, weights=s.weights / scale)
        other = type(self)(scaled, self.strength, self.nonneg)
        other.value_structure = self.value_structure
        return other

    def _prox(self, v, kappa):
        s = self.structure
        self._last_omega = prox_l2_tree(v, s.order, s.parent_post, s.weights_post, kappa, self.nonneg, s.chunks,
                                        self.value_structure.weights_post, s.scratch("a"), s.scratch("gamma"),
                                        s.scratch("shrink"))


class LinfTree(_TreeNorm):
    """Omega(w) = sum_x eta_x ||w_subtree(x)||_inf: Algorithm 4 (k-best pairing heaps)."""

    name = "linf-tree"
    crf = True

    def _prox(self, v, kappa):
        s = self.structure
        self._last_omega = prox_linf_tree(v, s.order, s.parent_post, s.counts_post, s.weights_post, kappa,
                                          self.nonneg, s.chunks, self.value_structure.weights_post, s.scratch("a"),
                                          s.scratch("hval"), s.scratch("hcnt"), s.scratch("hchild", np.int64),
                                          s.scratch("hsib", np.int64), s.scratch("hroot", np.int64),
                                          s.scratch("tau"))


class LinfTreePivot(_TreeNorm):
    """The linf-tree operator by Algorithm 3 (Bruckner's random pivots)."""

    name = "linf-tree-pivot"

    def _prox(self, v, kappa):
        s = self.structure
        prox_linf_tree_pivot(v, s.order, s.subtree_size, s.counts_post, s.weights_post,
                             kappa, self.nonneg, PIVOT_SEED, s.scratch("a"), s.scratch("pv"),
                             s.scratch("pc"))


#: Every penalty by its name (the one list of names: the CLIs and estimators read it).
PENALTIES: dict[str, type[Penalty]] = {c.name: c for c in (L1, L2Sq, L2Tree, LinfTree, LinfTreePivot)}
NAMES = tuple(PENALTIES)


def make_penalty(name: str, structure: ForestStructure, strength: float = 1.0, nonneg: bool = False) -> Penalty:
    """The penalty object of ``name`` (one of :data:`NAMES`) on ``structure``."""
    cls = PENALTIES.get(name)
    if cls is None:
        raise PenaltyError(f"unknown penalty {name!r}: expected one of {', '.join(NAMES)}")
    return cls(structure, strength, nonneg)


def prox_inplace(name: str, values: np.ndarray, structure: ForestStructure, kappa: float,
                 nonneg: bool = True) -> None:
    """Proximal step of ``kappa * Omega`` applied in place to ``values`` (float64[n],
    node order); see :class:`Penalty`. Scratch arrays are kept in ``structure``."""
    make_penalty(name, structure, 1.0, nonneg).prox(values, kappa)


def penalty_value_fast(name: str, values: np.ndarray, structure: ForestStructure) -> float:
    """Omega(values) for penalty ``name`` (see the module docstring), float64[n] values."""
    return make_penalty(name, structure).value(values)


def _values_copy(values) -> np.ndarray:
    v = np.array(values, dtype=np.float64, copy=True)
    if v.ndim != 1:
        raise PenaltyError(f"values must be a 1-D array, got shape {v.shape}")
    if v.size and not np.all(np.isfinite(v)):
        raise PenaltyError(f"values[{int(np.flatnonzero(~np.isfinite(v))[0])}] is not finite")
    return np.ascontiguousarray(v)


def prox(name: str, values, parent, kappa: float, counts=None, weights=None,
         nonneg: bool = True) -> np.ndarray:
    """Proximal step of ``kappa * Omega`` for penalty ``name``; returns new values.

    name: ``l1``, ``l2sq``, ``l2-tree``, ``linf-tree`` or ``linf-tree-pivot``.
    values: float array [n]. parent: int array [n], -1 for roots (any order,
    forests allowed). counts: int [n] >= 1, collapsed trie nodes per node
    (default 1). weights: float [n] >= 0, group weight eta of each node (default
    ``counts``: weight 1 per trie group). Solves
    argmin_w 1/2 sum c (w - v)^2 + kappa Omega(w) s.t. w >= 0 if nonneg.
    """
    if name not in PENALTIES:
        raise PenaltyError(f"unknown penalty {name!r}: expected one of {', '.join(NAMES)}")
    structure = ForestStructure.from_parent(parent, counts, weights)
    v = _values_copy(values)
    prox_inplace(name, v, structure, kappa, nonneg)
    return v


def penalty_value(name: str, values, parent, counts=None, weights=None) -> float:
    """Omega(values) for penalty ``name`` on the forest ``parent`` (see ``prox``)."""
    if name not in PENALTIES:
        raise PenaltyError(f"unknown penalty {name!r}: expected one of {', '.join(NAMES)}")
    structure = ForestStructure.from_parent(parent, counts, weights)
    return penalty_value_fast(name, _values_copy(values), structure)


def depth_weights(depth_deepest, counts, alpha: float) -> np.ndarray:
    """Group weights alpha**depth of the weighted penalties (paper §6).

    depth_deepest: int64[n], trie depth of the deepest trie node a node stands for
    (the number of context words; the root, the empty context, has depth 0).
    counts: int64[n] >= 1, so a node stands for depths depth-c+1 .. depth.
    Returns float64[n]: eta = sum_{d = depth-c+1}^{depth} alpha**d. The root group
    (the whole tree of an output word) is kept, with weight alpha**0 = 1, as every
    node of the tree is a group in eq. 8.
    """
    depth = np.asarray(depth_deepest)
    c = np.asarray(counts)
    if depth.ndim != 1 or c.shape != depth.shape:
        raise PenaltyError(f"depth_deepest and counts must be vectors of one length, got "
                           f"shapes {depth.shape} and {c.shape}")
    depth = depth.astype(np.int64)
    c = c.astype(np.int64)
    alpha = float(alpha)
    if not (math.isfinite(alpha) and alpha > 0):
        raise PenaltyError(f"alpha = {alpha}: expected a finite number > 0")
    if depth.size and c.min() < 1:
        raise PenaltyError(f"counts[{int(np.argmin(c))}] < 1: expected >= 1")
    top = depth - c + 1
    if depth.size and top.min() < 0:
        bad = int(np.argmin(top))
        raise PenaltyError(f"node {bad}: depth {int(depth[bad])} < counts {int(c[bad])} - 1")
    if alpha == 1.0:
        return c.astype(np.float64)
    # geometric sum alpha**top * (1 - alpha**c) / (1 - alpha)
    return np.power(alpha, top.astype(np.float64)) * (-np.expm1(c * math.log(alpha))) / (1.0 - alpha)


class NestedSum:
    """The sum of penalties whose groups nest, e.g. weighted l1 (singletons) plus a tree
    norm on the same forest: every singleton lies inside or outside every subtree group,
    so the prox of the sum is the composition of the parts' proxes, smallest groups first
    (Jenatton et al., 2011, the tree-structured case): ``parts`` in that order. The same
    interface as :class:`Penalty` for the solvers."""

    def __init__(self, parts):
        self.parts = list(parts)
        if not self.parts:
            raise PenaltyError("NestedSum needs at least one penalty")
        self.structure = self.parts[-1].structure
        self.nonneg = all(p.nonneg for p in self.parts)
        self.name = "+".join(p.name for p in self.parts)

    @property
    def strength(self) -> float:
        return self.parts[-1].strength

    @property
    def prox_seconds(self) -> float:
        return sum(p.prox_seconds for p in self.parts)

    @property
    def prox_calls(self) -> int:
        return self.parts[-1].prox_calls

    def value(self, w: np.ndarray) -> float:
        return float(sum(p.value(w) for p in self.parts))

    def prox(self, v: np.ndarray, step: float) -> np.ndarray:
        for p in self.parts:
            p.prox(v, step)
        return v

    def prox_value(self, v: np.ndarray, step: float) -> tuple[np.ndarray, float]:
        self.prox(v, step)
        return v, self.value(v)

    def in_metric(self, scale: np.ndarray) -> "NestedSum":
        return NestedSum([p.in_metric(scale) for p in self.parts])

    def __repr__(self) -> str:
        return f"NestedSum({', '.join(map(repr, self.parts))})"
