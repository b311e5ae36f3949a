"""Base measures of the log-linear LM.

With a base measure B the model is

    P(v | x) = B(v | x) exp(sum_j k_j w[j, v]) / Z(x),   Z(x) = sum_u B(u | x) exp(...)

so w = 0 gives B itself, and a penalty large enough to zero every weight falls back to
B, not to the uniform distribution. ``kneser_ney_base`` takes B = interpolated modified
Kneser-Ney of the same order estimated on the training text without cut-offs (SRILM's
``ngram-count -kndiscount -interpolate -gtNmin 1``), read by the ARPA rule: for a
context x of trie node j and a word v,

    B(v | x) = P_KN(v | x)                      if v followed x in training (a param (j, v))
             = gamma(x) B(v | x minus its oldest word)   otherwise

with gamma(x) the back-off weight of x. Over a suffix-tree node j standing for a chain
of trie contexts the weights multiply: ``gamma[j]`` is their product. The recursion of
the normalisers then stays per node (``_lm_kernels.forward_pass``):

    Z(j) = gamma[j] Z(parent) + sum_{q of j} (B[q] e^S[q] - gamma[j] B[parent q] e^S[parent q])

and a word whose deepest param on the path to node e is q (at node j) has base
B[q] * gcum[e] / gcum[j], gcum the product of gamma from the root. Without a base
measure (the paper's model) lnB = 0, gamma = gcum = 1 and the words that are no root
param weigh 1 each.

Contexts that end inside a collapsed edge need the base at that partial depth. The
ARPA-read base (``kneser_ney_base``, finite orders) has no closed form there, so a model
with it is trained on the suffix trie (every edge one word). Kneser-Ney computed on the
tree itself (``kneser_ney_tree_base``, ``suffixlm.backoff.kn_tree``; the model at unbounded
order) has one: inside the edge of node j every context's weight is D1 of its order and
B(v | depth e) = 1/s_j + prod D1 (B(v | parent) - 1/s_j) for the s_j words j predicts, so
the collapsed tree serves, with ``ln_d1_cum`` (the summed ln D1 by depth) and the
per-node event counts ``n_events`` kept beside the arrays above.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .options import LM_BASES

#: Floor of ln gamma (see ``kneser_ney_base``).
LN_GAMMA_MIN = -50.0

#: The base measures by name (``LogLinearLM(base=...)``, ``suffixlm train --base``).
BASES = LM_BASES


@dataclass(eq=False)
class BaseMeasure:
    """Per-param ln B (lnB float64[n_params]), per-node gamma and its product from the
    root (gamma, gcum float64[n_nodes]), the base mass u0 of the words that are no root
    param and the ln B of each of them (ln_unseen)."""

    kind: str
    lnB: np.ndarray
    gamma: np.ndarray
    gcum: np.ndarray
    u0: float
    ln_unseen: float
    #: the closed form inside edges (a base on the collapsed tree): sum of ln D1 of
    #: depths 1..d (float64[max depth + 1]) and the events each node predicts
    #: (int64[n_nodes]); empty arrays for a base read on the trie
    ln_d1_cum: np.ndarray = field(default_factory=lambda: np.zeros(0))
    n_events: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def on_edges(self) -> bool:
        """The base has the closed form inside collapsed edges (``kneser_ney_tree_base``)."""
        return self.ln_d1_cum.shape[0] > 0

    def event_log_base(self, tree, end_node: np.ndarray, target_param: np.ndarray) -> np.ndarray:
        """ln B(y | x) of training events (context ending at end_node, deepest param of the
        target on its path target_param)."""
        node = tree.param_node()[target_param]
        return self.lnB[target_param] + np.log(self.gcum[end_node]) - np.log(self.gcum[node])

    def check(self, tree) -> None:
        """The invariants the kernels rely on (raises ValueError)."""
        if self.kind not in BASES:
            raise ValueError(f"unknown base measure {self.kind!r}")
        if self.lnB.shape != (tree.n_params,) or self.gamma.shape != (tree.n_nodes,):
            raise ValueError("base measure arrays do not match the suffix tree")
        if not (np.all(np.isfinite(self.lnB)) and np.all(self.lnB <= 1e-6)):
            raise ValueError("base measure log-probabilities must be finite and <= 0")
        if not (np.all(np.isfinite(self.gamma)) and np.all(self.gamma > 0)):
            raise ValueError("base measure interpolation weights must be finite and > 0")
        if not (math.isfinite(self.u0) and self.u0 >= 0 and (math.isfinite(self.ln_unseen) or self.u0 == 0)):
            raise ValueError("base measure mass of unseen words must be finite and >= 0")
        if self.on_edges:
            c = self.ln_d1_cum
            if c.ndim != 1 or c.shape[0] < int(tree.depth.max(initial=0)) + 1:
                raise ValueError("base measure discounts (ln_d1_cum) do not cover the tree's depth")
            if not (np.all(np.isfinite(c)) and c[0] == 0.0 and np.all(np.diff(c) <= 0.0)):
                raise ValueError("base measure discounts: ln_d1_cum must be finite, 0 at depth 0 and "
                                 "non-increasing (each D1 in (0, 1])")
            if self.n_events.shape != (tree.n_nodes,):
                raise ValueError("base measure event counts do not match the suffix tree")
        elif self.kind == "kn" and np.any(tree.collapsed != 1):
            raise ValueError("a Kneser-Ney base measure read on the trie needs the suffix trie (collapsed all 1)")


def _gcum(tree, gamma: np.ndarray) -> np.ndarray:
    """Product of gamma from the root to each node, one tree level at a time."""
    g = gamma.copy()
    depth = np.asarray(tree.depth)
    parent = np.asarray(tree.parent)
    for d in range(1, int(depth.max(initial=0)) + 1):
        level = np.flatnonzero((depth == d) & (parent >= 0))
        g[level] *= g[parent[level]]
    return g


def from_arrays(kind: str, tree, lnB: np.ndarray, gamma: np.ndarray, u0: float, ln_unseen: float,
                ln_d1_cum: np.ndarray | None = None, n_events: np.ndarray | None = None) -> BaseMeasure:
    """A base measure from its stored arrays, checked against ``tree``."""
    lnB = np.ascontiguousarray(lnB, dtype=np.float64)
    gamma = np.ascontiguousarray(gamma, dtype=np.float64)
    base = BaseMeasure(kind, lnB, gamma, np.ones(0), float(u0), float(ln_unseen))
    if ln_d1_cum is not None:
        base.ln_d1_cum = np.ascontiguousarray(ln_d1_cum, dtype=np.float64)
        base.n_events = np.ascontiguousarray(n_events, dtype=np.int64)
    base.check(tree)
    base.gcum = _gcum(tree, gamma)
    if not np.all(base.gcum > 0):
        raise ValueError("base measure interpolation weights underflow along a path")
    return base


def no_base(tree, n_unseen: float) -> BaseMeasure:
    """The paper's model: B = 1 for every word."""
    return BaseMeasure("none", np.zeros(tree.n_params), np.ones(tree.n_nodes), np.ones(tree.n_nodes),
                       float(n_unseen), 0.0)


def kneser_ney_base(tree, corpus, order: int, n_unseen: float) -> BaseMeasure:
    """Interpolated modified Kneser-Ney of ``order`` on ``corpus`` (the tree's training
    text, no cut-offs) as the base measure on the suffix trie ``tree``. ``corpus`` may
    also be the text's counted events (``suffixlm.events.ContextEvents`` with its
    ``ngram_counts``): KN is estimated from those counts, the same model."""
    from . import _base_kernels as K
    from .backoff.kn_estimate import estimate_kneser_ney
    from .ngrams import count_ngrams

    # KneserNeyLM(order, min_counts=[1]).fit(corpus).model_, without importing suffixlm.backoff.kn
    counts = corpus.ngram_counts if getattr(corpus, "ngram_counts", None) is not None else count_ngrams(corpus, order)
    model, _ = estimate_kneser_ney(counts, corpus.vocab, True, [1], True)
    index = model.index
    nodes, probs = index.nodes, index.probs
    lnB = np.empty(tree.n_params)
    ln_gamma = np.empty(tree.n_nodes)
    # the tree's edge labels point into tree.tokens (the text, or its events)
    missing = K.base_from_backoff(np.ascontiguousarray(tree.tokens, dtype=np.int64),
                                  np.ascontiguousarray(tree.context_position, dtype=np.int64),
                                  np.ascontiguousarray(tree.depth, dtype=np.int64),
                                  np.ascontiguousarray(tree.collapsed, dtype=np.int64),
                                  tree.succ_offsets, tree.succ_words, len(corpus.vocab), nodes.keys, nodes.vals,
                                  nodes.shift, index.node_bow, probs.keys, probs.vals, probs.shift, index.lp, lnB,
                                  ln_gamma)
    if missing:
        raise RuntimeError(f"internal error: {missing} contexts of the suffix trie are missing from the KN model")
    root = int(np.flatnonzero(tree.parent < 0)[0])
    seen = float(np.exp(lnB[tree.succ_offsets[root]:tree.succ_offsets[root + 1]]).sum())
    u0 = max(1.0 - seen, 0.0) if n_unseen > 0 else 0.0
    ln_unseen = math.log(max(u0, 1e-300) / n_unseen) if n_unseen > 0 else 0.0
    # a context after which every word was seen leaves the lower orders nothing (weight
    # 0); a floor of e^-50 keeps the recursion's divisions defined and moves no visible mass
    return from_arrays("kn", tree, np.minimum(lnB, 0.0), np.exp(np.maximum(ln_gamma, LN_GAMMA_MIN)), u0, ln_unseen)


def event_counts(tree, vocab) -> np.ndarray:
    """int64[n_nodes]: the words each node predicts that are events (not ``<s>``, nor a
    closed vocabulary's ``<unk>``)."""
    from .backoff.kn_tree import nonevents

    ev = ~nonevents(vocab)[np.asarray(tree.succ_words)]
    cs = np.concatenate([[0], np.cumsum(ev, dtype=np.int64)])
    return cs[tree.succ_offsets[1:]] - cs[tree.succ_offsets[:-1]]


def kneser_ney_tree_base(tree, vocab, n_unseen: float, kn=None, own_orders: int | None = None) -> BaseMeasure:
    """Interpolated modified Kneser-Ney computed on ``tree`` itself (``suffixlm.backoff.kn_tree``:
    any depth, collapsed or not, no cut-offs) as the base measure, with the closed form
    inside edges. ``kn``: that estimate already made (a ``kn_tree.TreeKN``); else made
    with ``own_orders`` as ``kn_tree.estimate_tree_kn`` takes it."""
    from .backoff.kn_tree import estimate_tree_kn

    if kn is None:
        kn = estimate_tree_kn(tree, vocab, own_orders=own_orders)
    gamma = kn.chain.copy()
    gamma[0] = 1.0  # the root's own weight is in ln_unseen (and in its params' lnB)
    lnB = np.log(np.maximum(kn.p, 1e-300))
    # as kneser_ney_base (and the model loader) derive them: the root's left-over mass
    # (= the unseen words' KN probability, gamma(root) / |V| each)
    seen = float(np.exp(lnB[tree.succ_offsets[0]:tree.succ_offsets[1]]).sum())
    u0 = max(1.0 - seen, 0.0) if n_unseen > 0 else 0.0
    ln_unseen = math.log(max(u0, 1e-300) / n_unseen) if n_unseen > 0 else 0.0
    return from_arrays("kn", tree, np.minimum(lnB, 0.0), np.maximum(gamma, math.exp(LN_GAMMA_MIN)), u0, ln_unseen,
                       kn.ln_d1_cum, kn.n_events)
