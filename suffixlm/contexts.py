"""Per-position context paths in a suffix tree (the active features of each prediction).

For every predicted position of a corpus (all tokens but the sentence's ``<s>``), the
path of tree nodes its context walks from the root, with how many of each node's
collapsed trie nodes it covers. On the training text the walk always ends on the node
of the full context (depth ``min(m, available context)``); on unseen text it stops at
the first unseen word or unseen extension, possibly inside an edge. Words mapped to
``<unk>`` are walked as the symbol ``<unk>``.

The score of word ``v`` at position ``p`` in a log-linear model on the tree is then
``sum(cover[e] * w[node[e], v] for e in offsets[p]:offsets[p+1])``, and on the trie
(``SuffixTree.build(..., collapse=False)``) every cover is 1.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from . import _contexts_kernels as _k
from .corpus import Corpus
from .memory import named_allocations
from .suffixtree import SuffixTree


@dataclass(eq=False)
class Contexts:
    """CSR over predicted positions (n_pos of them, nnz path entries in all).

    positions int64[n_pos]   token index in ``corpus.tokens`` of each predicted position,
                             in corpus order (OOV targets included: mask them with
                             ``corpus.target_mask()[positions]``)
    targets   int32[n_pos]   ``corpus.tokens[positions]``
    offsets   int64[n_pos+1] the path of position p is nodes[offsets[p]:offsets[p+1]],
                             root first, deepest last
    nodes     int64[nnz]     tree node ids
    cover     int64[nnz]     trie nodes of that tree node the context covers: equal to
                             ``tree.collapsed[node]`` except possibly at the last node of
                             a path (1..c); 1 at the root
    """

    positions: np.ndarray
    targets: np.ndarray
    offsets: np.ndarray
    nodes: np.ndarray
    cover: np.ndarray

    @property
    def n_positions(self) -> int:
        return int(self.positions.shape[0])

    def path(self, p: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes, cover) of position index ``p`` (not token index)."""
        a, b = self.offsets[p], self.offsets[p + 1]
        return self.nodes[a:b], self.cover[a:b]

    def deepest(self) -> np.ndarray:
        """int64[n_pos]: last node of every path."""
        return self.nodes[self.offsets[1:] - 1]


def extract_contexts(tree: SuffixTree, corpus: Corpus) -> Contexts:
    """Context paths of every predicted position of ``corpus`` in ``tree`` (one numba
    call for the whole corpus). Works for the training text and unseen text alike,
    provided both are encoded with the same vocabulary."""
    x = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    offsets = np.ascontiguousarray(corpus.offsets, dtype=np.int64)
    with named_allocations(f"contexts of {x.shape[0]:,} tokens (suffix tree depth {tree.max_depth})"):
        if _is_training_text(tree, x, offsets):
            # Same result as the walk (tested), without reading edge labels.
            positions, path_offsets, nodes, cover = _k.training_paths(
                offsets, tree.position_node, tree.parent, tree.collapsed
            )
        else:
            positions, path_offsets, nodes, cover = walk_contexts(tree, x, offsets)
    return Contexts(positions, x[positions], path_offsets, nodes, cover)


def _is_training_text(tree: SuffixTree, x: np.ndarray, offsets: np.ndarray) -> bool:
    # A tree loaded without its per-position nodes (e.g. from a model file) walks.
    if tree.position_node is None or tree.position_node.shape[0] != x.shape[0] - (offsets.shape[0] - 1):
        return False
    if x is tree.tokens and offsets is tree.offsets:
        return True
    return (
        x.shape == tree.tokens.shape
        and offsets.shape == tree.offsets.shape
        and np.array_equal(offsets, tree.offsets)
        and np.array_equal(x, tree.tokens)
    )


def walk_contexts(tree: SuffixTree, x: np.ndarray, offsets: np.ndarray):
    """The general walk (any text): (positions, offsets, nodes, cover) arrays.
    ``extract_contexts`` uses it for every text but the training text itself."""
    return _k.extract(
        np.ascontiguousarray(x, dtype=np.int32), np.ascontiguousarray(offsets, dtype=np.int64),
        tree.max_depth, tree.depth, tree.context_position, tree.child_offsets,
        tree.children, tree.child_first_word, tree.tokens,
    )


def lookup_params(tree: SuffixTree, nodes: np.ndarray, words: np.ndarray) -> np.ndarray:
    """int64[k]: parameter index of each (node, word) pair, -1 where ``word`` never
    followed context ``node`` (binary search in the sorted successor list)."""
    nodes = np.ascontiguousarray(nodes, dtype=np.int64)
    words = np.ascontiguousarray(words, dtype=np.int32)
    if nodes.shape != words.shape:
        raise ValueError("nodes and words must have the same shape")
    return _k.lookup_params(tree.succ_offsets, tree.succ_words, nodes, words)
