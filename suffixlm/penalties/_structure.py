"""Forest of tree-structured vectors in flat arrays, precomputed once.

A tree-structured vector (paper §2.2, Definition 1) lives on a forest given by a
``parent`` array (-1 for a root, nodes in any order). ``ForestStructure`` turns it
into what the proximal kernels need: a depth-first post-order (children before
parents, every subtree a contiguous range), parents and subtree sizes in that
order, the children in CSR form, per-node counts ``c`` (collapsed trie nodes per
node, Propositions 1-2) and group weights ``eta``, and scratch arrays so that a
proximal step allocates nothing.
"""

from __future__ import annotations

import copy

import numpy as np

from .._jit import njit
from .._tree_kernels import children_csr


class PenaltyError(ValueError):
    """Bad input to a penalty or proximal operator (one-line message)."""


@njit(cache=True)
def _post_order(child_offsets, children, roots, n):
    """Depth-first post-order of the forest (iterative; no recursion limit).

    Returns order int64[m] (m < n when some nodes are on a cycle and unreachable
    from any root).
    """
    order = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    cursor = np.empty(n, dtype=np.int64)
    pos = 0
    for r in range(roots.shape[0]):
        top = 0
        stack[0] = roots[r]
        cursor[0] = child_offsets[roots[r]]
        while top >= 0:
            x = stack[top]
            k = cursor[top]
            if k < child_offsets[x + 1]:
                cursor[top] = k + 1
                top += 1
                stack[top] = children[k]
                cursor[top] = child_offsets[children[k]]
            else:
                order[pos] = x
                pos += 1
                top -= 1
    return order[:pos]


@njit(cache=True)
def _post_arrays(parent, order):
    """Position of each node in post-order, parent and subtree size in that order.

    Returns (position int64[n], parent_post int64[n], subtree_size int64[n]);
    the subtree of post-order position i is positions [i - size[i] + 1, i].
    """
    n = order.shape[0]
    position = np.empty(n, dtype=np.int64)
    for i in range(n):
        position[order[i]] = i
    parent_post = np.empty(n, dtype=np.int64)
    size = np.ones(n, dtype=np.int64)
    for i in range(n):
        p = parent[order[i]]
        parent_post[i] = -1 if p < 0 else position[p]
    for i in range(n):
        p = parent_post[i]
        if p >= 0:
            size[p] += size[i]
    return position, parent_post, size


@njit(cache=True)
def _permute(values, order):
    """out[i] = values[order[i]] (float64)."""
    out = np.empty(order.shape[0], dtype=np.float64)
    for i in range(order.shape[0]):
        out[i] = values[order[i]]
    return out


@njit(cache=True)
def gather_post(values, order, nonneg, out, lo, hi):
    """out[i] = |values[order[i]]|, or max(values[order[i]], 0) when nonneg, for the
    post positions lo <= i < hi.

    The positive-orthant projection of Algorithm 1 (step 2) when nonneg; otherwise
    the magnitudes, the signs being restored by scatter_post (every operator here
    acts on magnitudes and keeps signs).
    """
    for i in range(lo, hi):
        v = values[order[i]]
        if v < 0.0:
            v = 0.0 if nonneg else -v
        out[i] = v


@njit(cache=True)
def scatter_post(a, order, nonneg, values, lo, hi):
    """values[order[i]] = a[i] for lo <= i < hi, with the sign values[order[i]] had
    unless nonneg."""
    for i in range(lo, hi):
        x = order[i]
        if values[x] < 0.0 and not nonneg:
            values[x] = 0.0 - a[i]
        else:
            values[x] = a[i]


#: Chunks of whole trees that the parallel kernels treat independently: a fixed number,
#: so that results never depend on the thread count.
N_CHUNKS = 64


@njit(cache=True)
def _tree_chunks(roots_post, subtree_size, n, n_chunks):
    """Post-order positions cutting the forest into at most ``n_chunks`` ranges of whole
    trees of about n / n_chunks nodes each (a tree larger than that is one range).
    roots_post: post positions of the roots, increasing. Returns int64[k + 1]."""
    bounds = np.empty(roots_post.shape[0] + 1, dtype=np.int64)
    bounds[0] = 0
    k = 0
    target = max(1, n // n_chunks)
    for r in range(roots_post.shape[0]):
        end = roots_post[r] + 1
        if end - bounds[k] >= target or r == roots_post.shape[0] - 1:
            k += 1
            bounds[k] = end
    return bounds[:k + 1]


class ForestStructure:
    """A forest and the precomputed arrays the proximal kernels reuse.

    Build with :meth:`from_parent`. Attributes (n nodes, original node ids unless
    said "post"):

    - ``parent`` int64[n]: parent of each node, -1 for roots.
    - ``counts`` int64[n]: collapsed trie nodes each node stands for (``c``, >= 1).
    - ``weights`` float64[n]: group weight ``eta`` of each node (for the tree norms,
      the weight of the group = subtree of the node; for ``l1`` / ``l2sq``, of the
      coordinate; for a collapsed node, the sum over the c groups it stands for).
    - ``order`` int64[n]: depth-first post-order (post position -> node).
    - ``position`` int64[n]: node -> post position.
    - ``parent_post`` int64[n], ``subtree_size`` int64[n]: in post positions; the
      subtree at post position i is the range [i - subtree_size[i] + 1, i].
    - ``child_offsets`` int64[n+1], ``children`` int64[...]: children CSR.
    - ``roots`` int64[...].
    - ``counts_post``, ``weights_post`` float64[n]: counts and weights in post-order;
      ``weight_per_count`` float64[n] = weights / counts (node order).
    - ``counts_all_one`` bool.
    - ``chunks`` int64[k + 1]: post positions cutting the forest into ranges of whole
      trees, which the kernels treat in parallel.

    Scratch arrays are allocated on first use and kept, so repeated calls of
    ``prox_inplace`` on the same structure allocate nothing; for the same reason
    two threads must not use one structure at the same time.
    """

    def __init__(self, parent, counts, weights, order, position, parent_post,
                 subtree_size, child_offsets, children, roots):
        self.parent = parent
        self.counts = counts
        self.weights = weights
        self.order = order
        self.position = position
        self.parent_post = parent_post
        self.subtree_size = subtree_size
        self.child_offsets = child_offsets
        self.children = children
        self.roots = roots
        self.n = int(parent.shape[0])
        counts_f = counts.astype(np.float64)
        self.counts_all_one = bool(np.all(counts == 1))
        self.counts_post = _permute(counts_f, order)
        self.weights_post = _permute(weights, order)
        self.weight_per_count = weights / counts_f
        roots_post = np.sort(position[roots]) if roots.shape[0] else np.zeros(0, dtype=np.int64)
        self.chunks = _tree_chunks(roots_post, subtree_size, self.n, N_CHUNKS)
        self._scratch: dict[str, np.ndarray] = {}

    @classmethod
    def from_parent(cls, parent, counts=None, weights=None) -> "ForestStructure":
        """Validate a forest and precompute its traversal arrays.

        parent: int array [n], parent of each node or -1 for a root (any order,
        several roots allowed). counts: int array [n] >= 1 (default all 1).
        weights: float array [n] >= 0 (default: ``counts``, i.e. weight 1 for every
        trie group a node stands for). Raises PenaltyError on bad input.
        """
        parent = _as_int_vector(parent, "parent")
        n = parent.shape[0]
        if n and (parent.min() < -1 or parent.max() >= n):
            bad = int(np.flatnonzero((parent < -1) | (parent >= n))[0])
            raise PenaltyError(
                f"parent[{bad}] = {int(parent[bad])}: expected -1 or a node id in [0, {n})"
            )
        if n and np.any(parent == np.arange(n)):
            bad = int(np.flatnonzero(parent == np.arange(n))[0])
            raise PenaltyError(f"parent[{bad}] = {bad}: a node cannot be its own parent")
        if counts is None:
            counts = np.ones(n, dtype=np.int64)
        else:
            counts = _as_int_vector(counts, "counts")
            if counts.shape[0] != n:
                raise PenaltyError(f"counts has {counts.shape[0]} entries, parent has {n}")
            if n and counts.min() < 1:
                bad = int(np.argmin(counts))
                raise PenaltyError(f"counts[{bad}] = {int(counts[bad])}: expected >= 1")
        if weights is None:
            weights = counts.astype(np.float64)
        else:
            weights = np.ascontiguousarray(weights, dtype=np.float64)
            if weights.ndim != 1 or weights.shape[0] != n:
                raise PenaltyError(f"weights must be a vector of {n} entries, got shape {weights.shape}")
            if n and not (np.all(np.isfinite(weights)) and weights.min() >= 0):
                bad = int(np.flatnonzero(~(np.isfinite(weights) & (weights >= 0)))[0])
                raise PenaltyError(f"weights[{bad}] = {weights[bad]}: expected finite and >= 0")
        child_offsets, children, roots = children_csr(parent)
        order = _post_order(child_offsets, children, roots, n)
        if order.shape[0] != n:
            reached = np.zeros(n, dtype=bool)
            reached[order] = True
            bad = int(np.flatnonzero(~reached)[0])
            raise PenaltyError(f"parent array has a cycle through node {bad}: not a forest")
        position, parent_post, subtree_size = _post_arrays(parent, order)
        return cls(parent, counts, weights, order, position, parent_post, subtree_size,
                   child_offsets, children, roots)

    def in_metric(self, scale: np.ndarray) -> "ForestStructure":
        """The same forest, its coordinates weighted by ``counts * scale`` in the prox's
        metric (float64[n], > 0, node order): ``counts_post`` and ``weight_per_count``
        become real. The linf-tree, l1 and l2sq operators stay exact in any such
        diagonal metric: an integer weight c on a coordinate is c equal copies of it in
        every group it belongs to (the Euclidean operator keeps them equal), rational
        weights follow by scaling kappa, real ones by continuity. The traversal arrays
        are shared; scratch is the copy's own."""
        scale = np.ascontiguousarray(scale, dtype=np.float64)
        if scale.shape != (self.n,) or (self.n and not (np.all(np.isfinite(scale)) and scale.min() > 0)):
            raise PenaltyError(f"scale must be {self.n} finite numbers > 0")
        new = copy.copy(self)
        metric = self.counts * scale
        new.counts_post = _permute(metric, self.order)
        new.weight_per_count = self.weights / metric
        new.counts_all_one = bool(np.all(metric == 1.0))
        new._scratch = {}
        return new

    def scratch(self, name: str, dtype=np.float64) -> np.ndarray:
        """A kept work array of n entries (allocated once per name)."""
        a = self._scratch.get(name)
        if a is None:
            a = np.empty(self.n, dtype=dtype)
            self._scratch[name] = a
        return a

    def __repr__(self) -> str:
        return (f"ForestStructure(n={self.n}, roots={self.roots.shape[0]}, "
                f"counts_all_one={self.counts_all_one})")


def _as_int_vector(a, what: str) -> np.ndarray:
    a = np.asarray(a)
    if a.ndim != 1:
        raise PenaltyError(f"{what} must be a 1-D integer array, got shape {a.shape}")
    if a.size and not np.issubdtype(a.dtype, np.integer):
        if np.issubdtype(a.dtype, np.floating) and np.all(a == np.round(a)):
            pass
        else:
            raise PenaltyError(f"{what} must hold integers, got dtype {a.dtype}")
    return np.ascontiguousarray(a, dtype=np.int64)
