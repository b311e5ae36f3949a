"""The suffix tree of contexts (Nelakanti et al. 2013, section 2.2 and Figure 1).

Definitions (the contract the LM code builds on)
-------------------------------------------------
* Each sentence is ``<s> w1 .. wn </s>``. The predicted symbols are ``w1 .. wn`` and
  ``</s>``. The *context* of the prediction at token position ``i`` is the reversed
  string ``tokens[i-1], tokens[i-2], ...`` back to and including the sentence's
  ``<s>``, truncated to ``m = max_depth`` symbols. Contexts never cross a sentence
  start (the model is reset at each sentence).
* The suffix trie S has one node per distinct context string of length 0..m that
  occurs (the root is the empty context). A node's *count* is the number of
  predictions made in that context (= the sum of its successor counts); its
  *successors* are the words predicted after it, with counts.
* The suffix tree T collapses every maximal chain of trie nodes in which each node
  has exactly one child that occurs as often as it does (so has the same successors)
  into one node; the root stays its own node. A tree node stands for ``c >= 1`` trie
  nodes at depths ``depth - c + 1 .. depth``; the sum of ``c`` over T is ``|S|``.
* Parameters ("params") live at (node, successor word) pairs.

Construction: two builders, one tree
------------------------------------
``SuffixTree.build(..., method=...)`` (CLI: ``suffixlm tree --method``) has two
constructions. They return identical arrays, dtypes included, numbering and
``context_position`` too (tests/suffixlm/test_ukkonen.py: a hypothesis property test on
random corpora, the shipped sample and PTB at m = 4; ``scripts/bench_suffixtree.py``
checks it again on PTB at every m it times).

``method="sort"`` (the default) sorts the contexts; linear in the corpus length for a
fixed depth cap ``m``:

1. Every predicted position's context (at most ``m`` symbols, stopping after
   ``<s>``) is sorted lexicographically, ties by the predicted word, with an LSD
   radix sort: ``m + 1`` stable counting-sort passes, O(m (n + V)).
2. Equal adjacent contexts are grouped; the groups are the trie's leaves (contexts
   are prefix-free: a context shorter than ``m`` ends with ``<s>``), listed in
   depth-first order, with the longest common prefix (LCP) of neighbours, O(n m).
3. The tree's branching nodes are the LCP intervals of that list (as in a suffix
   array's virtual suffix tree); two stack passes number them in preorder, O(n).
4. Successor lists: runs of targets inside each leaf, merged bottom-up into
   the inner nodes, O(P log) with P the number of tree parameters.

``method="ukkonen"`` (``_ukkonen_kernels.py``) is the construction the mission names:

1. Ukkonen's online algorithm (active point, suffix links, open leaf edges; children
   in a hash table) builds the generalized suffix tree of the reversed text, every
   sentence's reversed context symbols ended by a terminator unique to it, O(n)
   expected. It knows nothing of ``m``: up to 2n nodes (1.2M on PTB) whatever the cap.
2. Children sorted by their edge's first symbol (two counting sorts), then one
   depth-first walk caps the tree at ``m`` (a node's effective depth is its string
   depth limited by ``m`` and by its sentence's end; the nodes kept are those deeper
   than their parent) and numbers the kept nodes in preorder, O(n + V). They are T's
   nodes already (a chain of one-child trie nodes lies inside one suffix tree edge);
   for ``collapse=False`` both builders expand T into S with the same
   ``expand_to_trie``.
3. Successor lists and context positions: the predictions sorted by leaf (preorder: the
   sorted contexts), then word, and each node's range of leaves, which the sorting
   build's step 4 reads: the same kernel and the same rule serve both builds.

The two builds are timed side by side on PTB train in ``benchmarks/suffixtree.md``
(and at unbounded depth in ``benchmarks/unbounded.md``): the sorting build grows with m
(m + 1 radix passes), the Ukkonen build hardly does (its suffix tree is the same for
every m), and the sorting build is the faster at every m measured there, by 1.1x at the
deepest, m = 83 (the longest context of PTB train). So ``sort``
stays the default; ``ukkonen`` is the named algorithm, and an independent check of the
sorting build.

Built from counts
-----------------
The tree is a function of the multiset of (context, target) events alone, so
``SuffixTree.from_events`` builds it from the distinct events and their counts (a text
counted elsewhere: ``suffixlm.events``, ``suffixlm.distributed.lm_events``). The events, each laid out
as its n-gram (context oldest word first, then the target), take the place of the text:
the same radix sort, leaf grouping and topology kernels run on the events' target
positions, and ``successors`` adds each event's count where the text build adds
one per position. Every array equals the text build's except the edge labels
(``context_position``, ``tokens``, ``offsets``), which point into the events, stored in
canonical order (sorted by context, then target) with ``event_counts``; a node's label
spells the same context (tests/suffixlm/test_dask_lm.py). A model file of such a tree
stores the events and their counts, and the loader rebuilds the tree from them.

``context_position`` (which of a context's predictions labels it) is canonical, and
both builders produce it: for node ``j``, of the predictions whose context (at most
``m`` symbols) begins with ``j``'s, the one with the smallest (context, predicted word,
token index), contexts compared symbol by symbol from depth 1 — i.e. the first
prediction, by (word, token index), of the leftmost leaf below ``j``.

Layout
------
Nodes are numbered in depth-first preorder with children in increasing order of the
first symbol of their edge: node 0 is the root, ``parent[j] < j``, and the subtree of
``j`` is the contiguous range ``j .. j + subtree_size - 1``. So a downward pass is a
forward loop over nodes and an upward pass is a backward loop.

Edge labels: ``context_position[j]`` is the token index of one prediction made in
context ``j`` (the canonical one above); the context symbol at depth ``d``
(1 <= d <= depth[j]) of node ``j`` is ``tokens[context_position[j] - d]``, and the edge
into ``j`` is labelled with depths ``depth[parent[j]] + 1 .. depth[j]``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from . import _suffixtree_kernels as _k
from .corpus import BOS_ID, EOS_ID, Corpus
from .memory import named_allocations


@dataclass(eq=False)
class SuffixTree:
    """Suffix tree T (or, with ``collapse=False``, the suffix trie S) of a corpus.

    Arrays (n = n_nodes, P = n_params):

    parent           int64[n]    parent node, -1 for the root (node 0)
    depth            int64[n]    depth of the deepest trie node the node stands for
    collapsed        int64[n]    c, the trie nodes it stands for (root 1, trie all 1);
                                 the shallowest of them is at depth - c + 1
    count            int64[n]    predictions made in this context
    context_position int64[n]    token index of one prediction made in this context
                                 (the canonical one, see the module docstring)
    child_offsets    int64[n+1]  children of j are children[child_offsets[j]:child_offsets[j+1]]
    children         int64[n-1]  child node ids, sorted by the first symbol of their edge
    child_first_word int32[n-1]  that first symbol (context symbol at depth depth[j] + 1)
    succ_offsets     int64[n+1]  params of j are succ_offsets[j]:succ_offsets[j+1]
    succ_words       int32[P]    successor words, ascending within each node
    succ_counts      int64[P]    how often each follows the context
    tokens           int32[*]    the training token array the edge labels point into
    offsets          int64[*]    its sentence offsets
    position_node    int64[n_pos] node of the full context of every predicted training
                                 position (corpus order, as ``Contexts.positions``)
    tree_node_of     int64[n] or None: for a trie built with collapse=False, the
                                 tree node each trie node belongs to
    event_counts     int64[n_events] or None: for a tree built from counted events
                                 (``from_events``): ``tokens``/``offsets`` are then the
                                 distinct (context, target) events, event k the context
                                 (oldest word first) then the target, in canonical order,
                                 and this is how often each occurred; ``position_node`` is
                                 the node of each event's context

    Nodes are in depth-first preorder (``parent[j] < j``; subtree of j is
    ``j .. subtree_end()[j] - 1``). Methods: ``param_parent()``, ``param_node()``,
    ``subtree_end()``, ``stats()``, ``context(j)``, ``successors(j)``,
    ``expand_to_trie()``, and on a trie ``tree_params(tree)``.
    """

    max_depth: int
    parent: np.ndarray
    depth: np.ndarray
    collapsed: np.ndarray
    count: np.ndarray
    context_position: np.ndarray
    child_offsets: np.ndarray
    children: np.ndarray
    child_first_word: np.ndarray
    succ_offsets: np.ndarray
    succ_words: np.ndarray
    succ_counts: np.ndarray
    tokens: np.ndarray
    offsets: np.ndarray
    position_node: np.ndarray
    tree_node_of: np.ndarray | None = None
    event_counts: np.ndarray | None = None
    _cache: dict = field(default_factory=dict, repr=False)

    # ------------------------------------------------------------------ build
    #: The arrays a model file keeps (scoring needs them; not the per-training-position ones).
    FIELDS = ("parent", "depth", "collapsed", "count", "context_position", "child_offsets", "children",
              "child_first_word", "succ_offsets", "succ_words", "succ_counts", "tokens", "offsets")

    def to_arrays(self) -> dict:
        """The arrays of :data:`FIELDS` and ``max_depth``, for a model file."""
        d = {k: np.asarray(getattr(self, k)) for k in self.FIELDS}
        d["max_depth"] = np.array(self.max_depth, dtype=np.int64)
        if self.event_counts is not None:
            d["event_counts"] = np.asarray(self.event_counts)
        return d

    #: Largest ``max_depth`` a stored tree may have: scoring sizes buffers by it, and no
    #: model of order 65,536 is ever meant (``suffixlm train`` allows 64).
    MAX_STORED_DEPTH = 1 << 16

    @classmethod
    def from_arrays(cls, d: dict, vocab_size: int, collapse: bool | None = None) -> "SuffixTree":
        """The tree of :meth:`to_arrays`'s arrays (e.g. read from a model file), checked.

        The tree is a function of the training text it stores (``tokens``, ``offsets``) and
        of ``max_depth``. So that text is checked (signed integers; every sentence ``<s> ..
        </s>``; ids in ``[0, vocab_size)``), the tree is built again from it, and every other
        stored array must equal the built one, value for value: a tampered file can make no
        kernel read outside an array nor score with a tree that is not its text's (a child
        listed under itself, a child list out of order, a wrong root, an edge label that
        points elsewhere, a count...). ``collapse``: the stored arrays are the suffix tree
        (True), the suffix trie (False) or either (None).

        Raises ``ValueError`` whose message starts with the field (``tree.children: ...``).
        """
        for k in cls.FIELDS + ("max_depth",):
            ndim = 0 if k == "max_depth" else 1
            x = d.get(k)
            if not isinstance(x, np.ndarray) or x.dtype not in (np.int32, np.int64) or x.ndim != ndim:
                raise ValueError(f"tree.{k}: missing or not a {ndim}-d array of int32 or int64")
        if d.get("event_counts") is not None:
            return cls._from_event_arrays(d, vocab_size, collapse)
        tokens = d["tokens"].astype(np.int32)  # exact: the ids are checked against vocab_size below
        offsets = d["offsets"].astype(np.int64)
        n_tokens = tokens.shape[0]
        if offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != n_tokens:
            raise ValueError(f"tree.offsets: sentence offsets must run from 0 to the {n_tokens} tokens")
        if np.any(np.diff(offsets) < 2):
            raise ValueError("tree.offsets: not increasing by >= 2 (every sentence is <s> .. </s>)")
        if np.any(d["tokens"] < 0) or np.any(d["tokens"] >= vocab_size):
            raise ValueError(f"tree.tokens: word ids outside the vocabulary [0, {vocab_size})")
        if np.any(tokens[offsets[:-1]] != BOS_ID) or np.any(tokens[offsets[1:] - 1] != EOS_ID):
            raise ValueError("tree.tokens: a sentence does not start with <s> and end with </s>")
        max_depth = int(d["max_depth"])
        if not 0 <= max_depth <= cls.MAX_STORED_DEPTH:
            raise ValueError(f"tree.max_depth: {max_depth}, expected 0 .. {cls.MAX_STORED_DEPTH}")
        # the build reads the text alone; no context is longer than its sentence, so a
        # deeper cap builds the same tree
        text = SimpleNamespace(tokens=tokens, offsets=offsets)
        built = cls.build(text, min(max_depth, int(np.diff(offsets).max()) - 1), collapse=collapse is not False)
        if collapse is None and _first_difference(d, built) is not None:
            built = built.expand_to_trie()
        diff = _first_difference(d, built)
        if diff is not None:
            raise ValueError(diff)
        arrays = {k: getattr(built, k) for k in cls.FIELDS}
        arrays.update(tokens=tokens, offsets=offsets)
        return cls(max_depth=max_depth, position_node=np.zeros(0, np.int64), **arrays)

    @classmethod
    def _from_event_arrays(cls, d: dict, vocab_size: int, collapse: bool | None) -> "SuffixTree":
        """``from_arrays`` for a tree built from counted events (``event_counts`` stored):
        the events are checked (``check_events``), the tree is built again from them and
        every stored array, the events' own canonical order included, must equal the built one."""
        x = d["event_counts"]
        if not isinstance(x, np.ndarray) or x.dtype not in (np.int32, np.int64) or x.ndim != 1:
            raise ValueError("tree.event_counts: not a 1-d array of int32 or int64")
        max_depth = int(d["max_depth"])
        if not 0 <= max_depth <= cls.MAX_STORED_DEPTH:
            raise ValueError(f"tree.max_depth: {max_depth}, expected 0 .. {cls.MAX_STORED_DEPTH}")
        if np.any(d["tokens"] < 0) or np.any(d["tokens"] >= vocab_size):
            raise ValueError(f"tree.tokens: word ids outside the vocabulary [0, {vocab_size})")
        tokens = d["tokens"].astype(np.int32)  # exact: the ids were just checked
        offsets = d["offsets"].astype(np.int64)
        counts = x.astype(np.int64)
        check_events(tokens, offsets, counts, max_depth)
        k = int(_k.first_unordered_event(tokens, offsets))
        if k >= 0:
            raise ValueError(f"tree.tokens: events not in canonical order (distinct, by context, depth 1 first, "
                             f"then target): event {k} after event {k - 1}")
        built = cls.from_events(tokens, offsets, counts, max_depth, collapse=collapse is not False)
        for k, a, b in (("offsets", offsets, built.offsets), ("tokens", tokens, built.tokens),
                        ("event_counts", counts, built.event_counts)):
            if not np.array_equal(a, b):  # cannot happen: canonical events are kept as they are
                raise ValueError(f"tree.{k}: events not in canonical order")
        what = "stored events (tree.tokens, tree.offsets, tree.event_counts, tree.max_depth)"
        if collapse is None and _first_difference(d, built, what) is not None:
            built = built.expand_to_trie()
        diff = _first_difference(d, built, what)
        if diff is not None:
            raise ValueError(diff)
        built.position_node = np.zeros(0, np.int64)
        built._cache.clear()
        return built

    @classmethod
    def from_events(cls, tokens, offsets, counts, max_depth: int, collapse: bool = True) -> "SuffixTree":
        """The suffix tree of a text given only by its distinct (context, target) events
        and their counts: the same tree as ``build`` on the text, array for array, except
        the edge labels, which point into the events instead (``context_position``,
        ``tokens``, ``offsets``; see "Built from counts" in the module docstring).

        tokens int32, offsets int64[n_events+1]: event k is ``tokens[offsets[k]:offsets[k+1]]``,
        its context oldest word first (at most ``max_depth`` words; fewer only when it
        reaches back to ``<s>``, its first word), then its target; counts int64[n_events]
        (>= 1). Events may come in any order and must be distinct (``ValueError`` naming
        the field otherwise: ``check_events``). The tree stores them in canonical order
        (sorted by context, depth 1 first, then target) with ``event_counts``, and
        ``position_node`` holds the node of each event's context."""
        max_depth = int(max_depth)
        if max_depth < 0:
            raise ValueError(f"max_depth must be >= 0, got {max_depth}")
        tokens, offsets, counts = canonical_events(tokens, offsets, counts, max_depth)
        n_symbols = int(tokens.max()) + 1
        sorted_pos = offsets[1:] - 1
        sorted_len = np.diff(offsets) - 1
        leaf_start, leaf_len, leaf_lcp = _k.group_leaves(tokens, sorted_pos, sorted_len)
        per_leaf = np.diff(leaf_start)
        parent, depth, first_leaf, last_leaf, leaf_node = _k.tree_topology(leaf_len, leaf_lcp, max_depth)
        context_position = sorted_pos[leaf_start[first_leaf]]
        child_offsets, children, first_word = _k.labelled_children(parent, depth, context_position, tokens)
        count, succ_offsets, succ_words, succ_counts = _k.successors(
            tokens, sorted_pos, np.ascontiguousarray(counts, dtype=np.int64), leaf_start, first_leaf, last_leaf,
            child_offsets, children, n_symbols)
        collapsed = np.empty_like(depth)
        collapsed[0] = 1
        collapsed[1:] = depth[1:] - depth[parent[1:]]
        tree = cls(max_depth=max_depth, parent=parent, depth=depth, collapsed=collapsed, count=count,
                   context_position=context_position, child_offsets=child_offsets, children=children,
                   child_first_word=first_word, succ_offsets=succ_offsets, succ_words=succ_words,
                   succ_counts=succ_counts, tokens=tokens, offsets=offsets,
                   position_node=np.repeat(leaf_node, per_leaf), event_counts=counts)
        return tree if collapse else tree.expand_to_trie()

    @classmethod
    def build(cls, corpus: Corpus, max_depth: int, collapse: bool = True, method: str = "sort") -> "SuffixTree":
        """Suffix tree of the contexts of ``corpus`` up to ``max_depth`` symbols
        (the model order minus one). ``collapse=False`` gives the suffix trie S with the
        same API (every ``collapsed`` is 1).

        ``method`` picks the construction (see the module docstring): ``"sort"`` (radix
        sort of the contexts, the default) or ``"ukkonen"`` (Ukkonen's suffix tree of the
        reversed text, capped at ``max_depth``). Both return identical arrays."""
        if method not in METHODS:
            raise ValueError(f"method must be one of {', '.join(map(repr, METHODS))}, got {method!r}")
        max_depth = int(max_depth)
        if max_depth < 0:
            raise ValueError(f"max_depth must be >= 0, got {max_depth}")
        tokens = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
        offsets = np.ascontiguousarray(corpus.offsets, dtype=np.int64)
        # every sentence is <s> .. </s>: the kernels rely on it (and on ids >= 0)
        if (offsets.shape[0] < 2 or offsets[0] != 0 or offsets[-1] != tokens.shape[0]
                or np.any(np.diff(offsets) < 2)):
            raise ValueError("corpus offsets do not match its tokens (every sentence needs <s> and </s>)")
        if tokens.min() < 0:
            raise ValueError(f"corpus tokens must be ids >= 0, got {int(tokens.min())}")
        n_symbols = int(tokens.max()) + 1
        with named_allocations(f"suffix tree of {tokens.shape[0]:,} tokens, depth {max_depth}"):
            if method == "sort":
                arrays = _sort_arrays(tokens, offsets, max_depth, n_symbols)
            else:
                arrays = _ukkonen_arrays(tokens, offsets, max_depth, n_symbols)
        parent, depth = arrays["parent"], arrays["depth"]
        collapsed = np.empty_like(depth)
        collapsed[0] = 1
        collapsed[1:] = depth[1:] - depth[parent[1:]]
        tree = cls(max_depth=max_depth, collapsed=collapsed, tokens=tokens, offsets=offsets, **arrays)
        return tree if collapse else tree.expand_to_trie()

    def expand_to_trie(self) -> "SuffixTree":
        """The suffix trie S: every tree node becomes its chain of ``collapsed`` trie
        nodes (preorder kept). ``tree_node_of`` maps trie nodes back to this tree."""
        if self.is_trie:
            return self
        (parent, depth, count, context_position, child_offsets, children, first_word,
         succ_offsets, succ_words, succ_counts, tree_node, last) = _k.expand_to_trie(
            self.parent, self.depth, self.collapsed, self.count, self.context_position,
            self.child_offsets, self.children, self.child_first_word,
            self.succ_offsets, self.succ_words, self.succ_counts, self.tokens,
        )
        return SuffixTree(
            max_depth=self.max_depth,
            parent=parent,
            depth=depth,
            collapsed=np.ones(parent.shape[0], np.int64),
            count=count,
            context_position=context_position,
            child_offsets=child_offsets,
            children=children,
            child_first_word=first_word,
            succ_offsets=succ_offsets,
            succ_words=succ_words,
            succ_counts=succ_counts,
            tokens=self.tokens,
            offsets=self.offsets,
            position_node=last[self.position_node],
            tree_node_of=tree_node,
            event_counts=self.event_counts,
        )

    # ------------------------------------------------------------- accessors
    @property
    def n_nodes(self) -> int:
        return int(self.parent.shape[0])

    @property
    def n_params(self) -> int:
        return int(self.succ_words.shape[0])

    @property
    def is_trie(self) -> bool:
        return self.tree_node_of is not None

    def context(self, j: int) -> list[int]:
        """Context symbols of node ``j`` (its deepest trie node), depth 1 first."""
        p = int(self.context_position[j])
        return [int(self.tokens[p - d]) for d in range(1, int(self.depth[j]) + 1)]

    def successors(self, j: int) -> tuple[np.ndarray, np.ndarray]:
        """(words int32, counts int64) following context ``j``."""
        a, b = self.succ_offsets[j], self.succ_offsets[j + 1]
        return self.succ_words[a:b], self.succ_counts[a:b]

    def param_parent(self) -> np.ndarray:
        """int64[n_params]: parameter (parent(j), v) of each parameter (j, v); -1 at
        the root. It always exists: v after context j implies v after its suffix."""
        if "param_parent" not in self._cache:
            self._cache["param_parent"] = _k.param_parent(self.parent, self.succ_offsets, self.succ_words)
        return self._cache["param_parent"]

    def param_node(self) -> np.ndarray:
        """int64[n_params]: node of each parameter."""
        if "param_node" not in self._cache:
            self._cache["param_node"] = _k.param_node(self.succ_offsets)
        return self._cache["param_node"]

    def tree_params(self, tree: "SuffixTree") -> np.ndarray:
        """For a trie built by ``tree.expand_to_trie()`` (or ``build(collapse=False)``
        on the same corpus): int64[n_params], the tree parameter each trie parameter
        copies (same word, tree node ``tree_node_of[node]``)."""
        if not self.is_trie:
            raise ValueError("tree_params is defined on a trie (collapse=False)")
        node = self.param_node()
        j = self.tree_node_of[node]
        return tree.succ_offsets[j] + (np.arange(self.n_params, dtype=np.int64) - self.succ_offsets[node])

    def subtree_end(self) -> np.ndarray:
        """int64[n_nodes]: the subtree of node j is nodes j .. subtree_end[j] - 1
        (preorder numbering)."""
        if "subtree_end" not in self._cache:
            self._cache["subtree_end"] = _k.subtree_end(self.parent)
        return self._cache["subtree_end"]

    def stats(self) -> dict:
        """Sizes: trie_nodes |S|, tree_nodes |T|, trie_params, tree_params, leaves,
        positions (predictions), max_depth, deepest (largest node depth)."""
        n_succ = np.diff(self.succ_offsets)
        n_children = np.diff(self.child_offsets)
        return {
            "max_depth": self.max_depth,
            "positions": int(self.count[0]),
            "trie_nodes": int(self.collapsed.sum()),
            "tree_nodes": self.n_nodes,
            "trie_params": int((self.collapsed * n_succ).sum()),
            "tree_params": self.n_params,
            "leaves": int((n_children == 0).sum()),
            "deepest": int(self.depth.max()),
        }


METHODS = ("sort", "ukkonen")


def canonical_events(tokens, offsets, counts, max_depth: int):
    """(tokens int32, offsets int64, counts int64) of the events (see ``SuffixTree.from_events``)
    in canonical order: sorted by context, depth 1 first, then target (``sort_contexts``),
    checked (``check_events``) and distinct (``ValueError`` naming ``tree.tokens``).
    Events already in that order are returned as they are (no copy)."""
    tokens = np.ascontiguousarray(tokens, dtype=np.int32)
    offsets = np.ascontiguousarray(offsets, dtype=np.int64)
    counts = np.ascontiguousarray(counts, dtype=np.int64)
    check_events(tokens, offsets, counts, int(max_depth))
    if _k.first_unordered_event(tokens, offsets) < 0:
        return tokens, offsets, counts
    ends = offsets[1:] - 1
    sorted_end, _ = _k.sort_contexts(tokens, ends, np.diff(offsets) - 1, int(tokens.max()) + 1)
    order = np.searchsorted(ends, sorted_end)  # event of each sorted position
    del ends, sorted_end
    new_tokens, new_offsets = _k.gather_events(tokens, offsets, order)
    k = int(_k.first_unordered_event(new_tokens, new_offsets))
    if k >= 0:  # sorted: only equal neighbours remain
        raise ValueError(f"tree.tokens: events {int(order[k - 1])} and {int(order[k])} are the same "
                         "(context, target); events must be distinct")
    return new_tokens, new_offsets, counts[order]


def check_events(tokens: np.ndarray, offsets: np.ndarray, counts: np.ndarray, max_depth: int) -> None:
    """The invariants ``SuffixTree.from_events`` and its kernels rely on (``ValueError``
    naming the field): at least one event; offsets from 0 to the tokens, each event one
    target after at most ``max_depth`` context words; ids >= 0; no target ``<s>``; in a
    context no ``</s>``, and ``<s>`` only as the oldest word, where it must be when the
    context is shorter than ``max_depth``; counts >= 1, small enough that every sum of
    them is exact in float64."""
    n = offsets.shape[0] - 1
    if n < 1 or offsets[0] != 0 or offsets[-1] != tokens.shape[0]:
        raise ValueError(f"tree.offsets: event offsets must run from 0 to the {tokens.shape[0]} tokens, "
                         "at least one event")
    length = np.diff(offsets)
    if np.any(length < 1) or np.any(length > max_depth + 1):
        raise ValueError(f"tree.offsets: an event is not a target after 0 .. {max_depth} context words")
    if counts.shape != (n,):
        raise ValueError(f"tree.event_counts: {counts.shape[0]} entries for {n} events")
    if np.any(counts < 1) or int(counts.max()) > (1 << 53) // n:
        raise ValueError(f"tree.event_counts: counts must be >= 1 and at most 2**53 / {n}")
    if tokens.shape[0] and tokens.min() < 0:
        raise ValueError("tree.tokens: negative word ids")
    is_start = np.zeros(tokens.shape[0], dtype=bool)
    is_start[offsets[:-1]] = True
    is_target = np.zeros(tokens.shape[0], dtype=bool)
    is_target[offsets[1:] - 1] = True
    if np.any(tokens[is_target] == BOS_ID):
        raise ValueError("tree.tokens: an event predicts <s>")
    if np.any((tokens == EOS_ID) & ~is_target):
        raise ValueError("tree.tokens: an event's context holds </s>")
    if np.any((tokens == BOS_ID) & ~is_start):
        raise ValueError("tree.tokens: an event's context holds <s> after its oldest word")
    short = length - 1 < max_depth
    if np.any(tokens[offsets[:-1][short]] != BOS_ID):
        raise ValueError(f"tree.tokens: an event's context of fewer than {max_depth} words does not reach <s>")


def _first_difference(stored: dict, built: SuffixTree,
                      what: str = "stored training text (tree.tokens, tree.offsets, tree.max_depth)") -> str | None:
    """How the first of ``stored``'s arrays (:data:`SuffixTree.FIELDS` but the text) that
    differs from ``built``'s does, or None when all are equal."""
    for k in SuffixTree.FIELDS:
        if k in ("tokens", "offsets"):
            continue
        a, b = stored[k], getattr(built, k)
        if a.shape != b.shape:
            return f"tree.{k}: {a.shape[0]} entries, the suffix tree of the {what} has {b.shape[0]}"
        bad = np.flatnonzero(a != b)
        if bad.size:
            i = int(bad[0])
            return f"tree.{k}: entry {i} is {int(a[i])}, the suffix tree of the {what} has {int(b[i])}"
    return None


def _sort_arrays(tokens: np.ndarray, offsets: np.ndarray, max_depth: int, n_symbols: int) -> dict:
    """The tree's arrays by the sorting construction (steps 1-4 of the module docstring)."""
    positions, lengths = _k.context_lengths(offsets, max_depth)
    sorted_pos, sorted_len = _k.sort_contexts(tokens, positions, lengths, n_symbols)
    leaf_start, leaf_len, leaf_lcp = _k.group_leaves(tokens, sorted_pos, sorted_len)
    parent, depth, first_leaf, last_leaf, leaf_node = _k.tree_topology(leaf_len, leaf_lcp, max_depth)
    position_node = _k.position_nodes(tokens.shape[0], offsets, sorted_pos, leaf_start, leaf_node)
    context_position = sorted_pos[leaf_start[first_leaf]]
    child_offsets, children, first_word = _k.labelled_children(parent, depth, context_position, tokens)
    count, succ_offsets, succ_words, succ_counts = _k.successors(
        tokens, sorted_pos, np.zeros(0, np.int64), leaf_start, first_leaf, last_leaf, child_offsets, children,
        n_symbols)
    return dict(parent=parent, depth=depth, count=count, context_position=context_position,
                child_offsets=child_offsets, children=children, child_first_word=first_word,
                succ_offsets=succ_offsets, succ_words=succ_words, succ_counts=succ_counts,
                position_node=position_node)


def _ukkonen_arrays(tokens: np.ndarray, offsets: np.ndarray, max_depth: int, n_symbols: int) -> dict:
    """The tree's arrays from Ukkonen's generalized suffix tree of the reversed text
    (``_ukkonen_kernels``): build it, cap it at ``max_depth`` in preorder, then
    aggregate the successor lists as the sorting build does."""
    from . import _ukkonen_kernels as _u  # imported on use: keeps the default path's start-up as it was

    n_sent = offsets.shape[0] - 1
    alphabet = n_symbols + n_sent
    if 2 * tokens.shape[0] + 2 >= 2**31 or (2 * tokens.shape[0] + 2) * n_symbols >= 2**63:
        raise ValueError("corpus too large for the ukkonen builder (int32 node arrays, int64 child table keys); "
                         "use method='sort'")
    text, sent_end = _u.reversed_text(tokens, offsets, n_symbols)
    start, end, _, gst_parent = _u.ukkonen(text, n_symbols)
    gst_offsets, gst_children = _u.gst_children(text, start, gst_parent, alphabet)
    del gst_parent
    parent, depth, word, at_token = _u.capped_preorder(
        text, sent_end, _u.text_tokens(offsets), start, end, gst_offsets, gst_children, max_depth
    )
    del text, sent_end, start, end, gst_offsets, gst_children
    child_offsets, children, child_first_word = _u.tree_children(parent, word)
    sorted_pos, leaf_start, first_leaf, last_leaf = _u.leaf_ranges(tokens, offsets, at_token, parent)
    context_position = sorted_pos[leaf_start[first_leaf]]  # the sorting build's rule
    count, succ_offsets, succ_words, succ_counts = _k.successors(
        tokens, sorted_pos, np.zeros(0, np.int64), leaf_start, first_leaf, last_leaf, child_offsets, children,
        n_symbols)
    predicted = np.ones(tokens.shape[0], dtype=bool)
    predicted[offsets[:-1]] = False
    return dict(parent=parent, depth=depth, count=count, context_position=context_position,
                child_offsets=child_offsets, children=children, child_first_word=child_first_word,
                succ_offsets=succ_offsets, succ_words=succ_words, succ_counts=succ_counts,
                position_node=at_token[predicted])
