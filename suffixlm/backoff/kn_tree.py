"""Interpolated Kneser-Ney computed on the suffix tree of contexts, at any order and at
unbounded order (every context back to its sentence start), in time and memory linear
in the tree: O(nodes + params + depth), never per trie context.

The model is SRILM's interpolated modified KN without cut-offs
(``ngram-count -kndiscount -interpolate -gtNmin 1``) for the tree's depth cap m = N - 1:

* the count of an n-gram is its raw count when it is of the highest order or starts
  with ``<s>``, else the number of distinct words before it (continuation count);
* discounts D1, D2, D3+ per order from the counts-of-counts n1..n4 of those counts;
* P(w | h) = (c(h w) - D(c)) / c(h) + gamma(h) P(w | h'), gamma(h) = sum_k D_k n_k(h) / c(h),
  the unigrams interpolating with 1 / |V|.

On the suffix tree of the reversed contexts a node stands for a chain of trie contexts
(its edge). Every context *inside* an edge has exactly one word before it, so all its
n-grams have count 1: its weight is D1 of its order and
``P(w | h_e) - 1/s = D1 (P(w | h_{e-1}) - 1/s)`` for the s words the node predicts. Down
an edge the deviation from 1/s just shrinks by the product of the D1s: the closed form
``kn_tree_kernels.probabilities`` applies per node. The deepest context of a node is a
leaf (raw counts: it starts with ``<s>`` or is cut at the cap) or has children, whose
number for each word is its continuation count.

Discounts at depth. An order uses SRILM's modified-KN discounts from its own
counts-of-counts when they exist (n1..n4 > 0, D1, D2, D3+ >= 0) for it and for every lower
order; from the first order where they do not, every deeper order shares the discounts of
the order before it (on PTB 100k, SRILM fails from order 11: a count-of-counts is zero).
So at every finite order where SRILM can estimate the model, it is SRILM's (up to the
rounding: SRILM computes in single precision and prints 7 digits; this is double
precision), and it never fails. If order 1 itself has no SRILM discounts (a tiny text),
each order falls back as ``kn_steps.estimate_discounts`` does.

The model at unbounded order (``own_orders=UNBOUNDED_OWN_ORDERS``, what ``order=None``
passes) keeps SRILM's discounts for orders 1-4 only and shares order 4's beyond. SRILM's
estimates at deep orders are not noise but biased for a chain that runs on: D1 climbs to
0.99+ (n2 / n1 falls towards 0 with depth) and D2, D3+ drift upwards, so a context of 5
words and one of 40 keep almost nothing of their own counts, and the deep matches of
repeated text are thrown away. Test perplexity of KN at unbounded order against the
orders through which SRILM's own discounts are kept (``benchmarks/unbounded.md``):

| corpus | all (SRILM's) | 3 | 4 | 5 | KN order 5 |
|---|---|---|---|---|---|
| PTB 100k -> test 20k | 188.600 | 188.902 | 188.417 | 188.483 | 188.720 |
| full PTB | 141.050 | 141.472 | 140.396 | 140.672 | 141.187 |
| CoNLL-2002 Spanish words | 143.168 | 130.722 | 133.454 | 137.247 | 143.203 |
| CoNLL-2002 Dutch words | 407.056 | 407.560 | 406.957 | 406.985 | 407.113 |

4 is the best or the second best of these on every corpus, on the test text and on the
validation text alike (PTB's valid, CoNLL-2002's testa); 3 is worse than KN at order 5
on full PTB, and 5 gives up much of the gain on Spanish. A count-of-counts threshold
(``min_coc``) instead moves with the corpus size: 100 stops after order 4 on PTB 100k,
1000 on full PTB.

Not SRILM's: a context whose interpolated probabilities already sum to one (SRILM
retries it without interpolation, a case we have not met on real text), and a
closed-vocabulary ``<unk>`` inside a context, which counts here as a word (SRILM gives
such contexts no probabilities of their own).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from . import _kn_tree_kernels as K
from ..corpus import BOS_ID, UNK_ID, Vocabulary
from .kn_steps import DiscountWarning, estimate_discounts

#: floor of a discount D1 (its log is summed along edges)
D1_MIN = 1e-12
#: orders whose own SRILM discounts the model at unbounded order keeps (module docstring)
UNBOUNDED_OWN_ORDERS = 4


def srilm_discounts(n: np.ndarray, modified: bool) -> tuple[float, float, float] | None:
    """SRILM's discounts from counts-of-counts n (index k = count k), or None where
    SRILM fails (a zero count-of-counts, a negative discount)."""
    n1, n2, n3, n4 = (int(x) for x in n[1:5])
    if not modified:
        if n1 > 0 and n2 > 0:
            d = n1 / (n1 + 2 * n2)
            return d, d, d
        return None
    if n1 > 0 and n2 > 0 and n3 > 0 and n4 > 0:
        y = n1 / (n1 + 2 * n2)
        d = (1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3)
        if min(d) >= 0:
            return d
    return None


def depth_discounts(coc: np.ndarray, modified: bool = True, min_coc: int = 0,
                    own_orders: int | None = None) -> tuple[np.ndarray, int | None]:
    """(float64[n_orders, 3] discounts of orders 1..n_orders, the first order sharing a
    lower order's discounts or None): the rule of the module docstring; an order above 1
    whose counts-of-counts n1..n4 (n1, n2 for original KN) are not all at least
    ``min_coc``, or above ``own_orders``, counts as unreliable too."""
    n_orders = coc.shape[0]
    out = np.zeros((n_orders, 3))
    shared_from = None
    for i in range(n_orders):
        beyond = i > 0 and own_orders is not None and i >= own_orders
        d = srilm_discounts(coc[i], modified) if shared_from is None and not beyond else None
        if d is not None and i > 0 and int(coc[i, 1:5 if modified else 3].min()) < min_coc:
            d = None
        if d is not None:
            out[i] = d
        elif beyond or (i > 0 and (shared_from is not None or srilm_discounts(coc[0], modified) is not None)):
            if shared_from is None:
                shared_from = i + 1
            out[i] = out[i - 1]
        else:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DiscountWarning)
                out[i] = estimate_discounts(coc[i], modified, i + 1)
    return out, shared_from


@dataclass(eq=False)
class TreeKN:
    """Kneser-Ney on a suffix tree (module docstring). Arrays:

    p         float64[n_params]  P(word | deepest context of the param's node)
    gamma     float64[n_nodes]   interpolation weight of a node's deepest context
    chain     float64[n_nodes]   product of the weights of all the contexts of its edge
    n_events  int64[n_nodes]     words the node predicts that are events
    discounts float64[n_orders, 3]  D1, D2, D3+ of orders 1..n_orders (depth + 1)
    ln_d1_cum float64[n_orders]  sum of ln D1 of depths 1..d (0 at depth 0)
    coc       int64[n_orders, 5] counts-of-counts per order
    shared_from: the first order that shares a lower order's discounts, or None
    """

    p: np.ndarray
    gamma: np.ndarray
    chain: np.ndarray
    n_events: np.ndarray
    discounts: np.ndarray
    ln_d1_cum: np.ndarray
    coc: np.ndarray
    shared_from: int | None
    vocab_size: int



def nonevents(vocab: Vocabulary) -> np.ndarray:
    """bool[V]: words never predicted (``<s>``; ``<unk>`` in a closed vocabulary)."""
    ne = np.zeros(len(vocab), dtype=bool)
    ne[BOS_ID] = True
    if not vocab.has_unk:
        ne[UNK_ID] = True
    return ne


def estimate_tree_kn(tree, vocab: Vocabulary, modified: bool = True, min_coc: int = 0,
                     own_orders: int | None = None) -> TreeKN:
    """Interpolated (modified) Kneser-Ney on ``tree`` (collapsed or a trie, any depth cap):
    see the module docstring. ``min_coc``: the least count-of-counts that makes an order's
    own discounts reliable; ``own_orders``: the orders that keep their own (None: all,
    SRILM's rule at a finite order; ``UNBOUNDED_OWN_ORDERS`` at unbounded order)."""
    if np.any(np.asarray(tree.parent)[1:] < 0) or (tree.n_nodes and tree.parent[0] != -1):
        raise ValueError("the suffix tree's root must be node 0")
    ne = nonevents(vocab)
    vocab_size = int(len(vocab) - ne.sum())
    pp = tree.param_parent()
    kc = K.kn_counts(tree.parent, tree.child_offsets, tree.succ_offsets, tree.succ_counts, pp)
    max_d = int(tree.depth.max(initial=0))
    coc = K.counts_of_counts(tree.depth, tree.collapsed, tree.succ_offsets, tree.succ_words, kc, ne, max_d)
    disc, shared_from = depth_discounts(coc, modified, min_coc, own_orders)
    d1 = np.maximum(disc[:, 0], D1_MIN)
    ln_d1_cum = np.zeros(max_d + 1)
    ln_d1_cum[1:] = np.cumsum(np.log(d1[1:]))
    p = np.empty(tree.n_params)
    gamma = np.empty(tree.n_nodes)
    chain = np.empty(tree.n_nodes)
    n_events = np.empty(tree.n_nodes, dtype=np.int64)
    K.probabilities(tree.parent, tree.depth, tree.collapsed, tree.succ_offsets, tree.succ_words, pp, kc, ne,
                            np.ascontiguousarray(d1), np.ascontiguousarray(disc[:, 1]),
                            np.ascontiguousarray(disc[:, 2]), ln_d1_cum, vocab_size, p, gamma, chain, n_events)
    return TreeKN(p, gamma, chain, n_events, disc, ln_d1_cum, coc, shared_from, vocab_size)
