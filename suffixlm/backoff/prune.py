"""Relative-entropy pruning of back-off n-gram models (Stolcke 1998), exactly as SRILM
1.7.3's ``ngram -prune THRESHOLD`` (``Ngram::pruneProbs``) does it.

Algorithm
---------
SRILM keeps a model as a trie of contexts (the nodes; each holds the back-off weight
of its context and the probabilities of the words seen after it). Pruning walks the
contexts by decreasing length, from ``order - 1`` down to ``min_order - 1`` (so the
n-grams of orders ``order`` .. ``min_order`` are candidates; unigrams never are).
For a context ``h`` (its node listing the explicit n-grams ``h w``):

* ``num = 1 - sum_w p(w|h)`` and ``den = 1 - sum_w p_BO(w|h')`` over the explicit
  words of ``h`` (``h'``: ``h`` without its oldest word; ``p_BO``: the back-off
  walk, ``wordProbBO``), so that ``BOW(h) = num / den``; SRILM's ``computeBOW``
  checks (values within ``Prob_Epsilon = 3e-6`` of 0 become 0; a context whose
  ``den`` is 0 while ``num`` is not gets its probabilities scaled to sum to 1; an
  improper context, ``num < 0``, is skipped: nothing in it is pruned);
* ``P(h)``: ``LM::contextProb``, the product ``p(h1) p(h2|h1) .. p(hk|h1..hk-1)``
  under the model itself (the oldest word ``<s>`` is scored as ``</s>``; a
  non-event of probability 0 is left out);
* for each explicit ``h w``, with ``BOW'(h) = (num + p(w|h)) / (den + p_BO(w|h'))``
  the weight after removing it::

      dH = -P(h) * ( p(w|h) * [log p_BO(w|h') + log BOW'(h) - log p(w|h)]
                     + num * [log BOW'(h) - log BOW(h)] )
      change = 10^dH - 1           (logs base 10: the relative perplexity change)

  and ``h w`` is removed when ``threshold > 0`` and ``change < threshold``, unless
  ``h w`` is itself still a node of the trie: the context of a kept longer n-gram
  ``h w v``, or the end of a longer live context ``x h w`` (such an n-gram is always
  kept, whatever its score). ``log BOW(h)`` is the weight the model has on input,
  not the one ``num / den`` gives.

  After its n-grams, a context ``h`` whose n-grams were all removed and which no
  longer ends a longer live context ``x h`` (its children in SRILM's trie, which is
  keyed by the most recent word first) is removed from the trie, so its own n-gram,
  one order down, can be pruned in the next pass, and is written without a back-off
  weight if kept.

Every score is computed on the input model: a pass of length ``k`` reads only
n-grams of order ``<= k`` and weights of contexts shorter than ``k``, which no
earlier pass has changed. Then ``recomputeBOWs``: the back-off weight of every live
context, by increasing length, from the pruned model (``log10(num) - log10(den)``;
0 when both are 0; log 0, written -99, for a context SRILM rejects); at length 0,
SRILM's ``distributeProb`` gives the mass the unigrams leave (0 below 3e-6) to the
zero-probability words (else to all words). The probabilities SRILM keeps are not
changed (except by the two rescalings above, which SRILM also applies). The values
returned are those of the ARPA file (``%.7g``), so scoring the returned model and
scoring its file (``ngram -lm OUT -ppl``) agree exactly.

SRILM's types are kept: log-probabilities and back-off weights are float32
(``LogP``), with SRILM's float32 sums in the back-off walk and in ``P(h)``;
probabilities, ``num``, ``den`` and ``dH`` are float64. The order in which ``num``
and ``den`` are summed is the file's (SRILM sums in its hash-table order), which can
move the last bit of a float64 and, very rarely, a float32 value.

Quirks reproduced
-----------------
* A pruned n-gram that is the context of a kept longer n-gram is *not* removed:
  SRILM never prunes an n-gram that is still a node of its trie. So the model stays
  closed under prefixes (every context of a kept n-gram is a kept n-gram with a
  back-off weight), but not under suffixes: ``b c`` may be pruned while ``a b c``
  stays.
* A context whose n-grams are all pruned but which still ends a longer live context
  stays, with back-off weight log 1 = 0 (num = den = 1).
* A context with no n-grams of its own (a back-off weight in the file, nothing after
  it) is removed when nothing longer needs it, even if nothing was pruned.
* ``P(h)`` comes from the (Kneser-Ney) model being pruned; SRILM's
  ``-prune-history-lm`` is not offered.
* ``-99`` in the file is log 0 (``LogP_PseudoZero``).
* ``threshold = 0``: ``ngram -prune 0`` does not prune at all (it never calls
  ``pruneProbs``); the model is returned unchanged.
* ``min_order = 1`` acts as 2 (SRILM's loop stops before the unigrams).

Unigram rows the file did not list (``BackoffLM.implicit_unigrams``) are left as they
are, like words outside SRILM's vocabulary; ``<unk>`` listed in the file is a word
(``ngram -unk``); ``<s>`` is a non-event.
"""

from __future__ import annotations

import math

import numpy as np

from .arpa import BackoffLM
from ..corpus import BOS_ID, EOS_ID, UNK_ID

__all__ = ["prune_entropy", "pruning_criterion"]

LOG_PSEUDO_ZERO = np.float32(-99.0)  # how ARPA files write log 0


def check_threshold(threshold) -> float:
    if isinstance(threshold, bool):
        raise ValueError(f"threshold must be a number, got {threshold!r}")
    try:
        t = float(threshold)
    except (TypeError, ValueError):
        raise ValueError(f"threshold must be a number, got {threshold!r}") from None
    if not math.isfinite(t) or t < 0:
        raise ValueError(f"threshold must be finite and >= 0, got {threshold!r}")
    return t


def _check_min_order(min_order) -> int:
    if isinstance(min_order, bool) or not isinstance(min_order, (int, np.integer)) or min_order < 1:
        raise ValueError(f"min_order must be an integer >= 1, got {min_order!r}")
    return int(min_order)


class _Trie:
    """The state of SRILM's pruning passes over a model's back-off index
    (:class:`suffixlm.backoff.index.BackoffIndex`; see ``_prune_kernels``): which nodes
    and n-grams are alive, the values as SRILM holds them (-99 is log 0), the n-grams of
    each context in file order."""

    def __init__(self, model: BackoffLM):
        index = model.index
        N = model.order
        grams = model.ngrams
        self.index, self.V, self.N = index, index.V, N
        self.offsets = index.offsets
        # log-probabilities and back-off weights as SRILM holds them: -99 is log 0
        self.lp = index.lp.copy()
        self.lp[self.lp == LOG_PSEUDO_ZERO] = -np.inf
        self.node_bow = index.node_bow.copy()
        self.node_bow[self.node_bow == LOG_PSEUDO_ZERO] = -np.inf
        self.last_word = np.concatenate([r[:, -1] for r, _, _, _ in grams]).astype(np.int64)
        n_nodes = index.n_nodes
        self.node_alive = np.ones(n_nodes, dtype=bool)
        self.n_children = np.bincount(index.parent[1:], minlength=n_nodes).astype(np.int64)

        # the node of each n-gram (-1: not a context) and of its context
        total = int(self.offsets[-1])
        self.ngram_node = np.full(total, -1, dtype=np.int64)
        ctx_node = np.zeros(total, dtype=np.int64)
        for n in range(1, N + 1):
            rows = grams[n - 1][0]
            sl = slice(self.offsets[n - 1], self.offsets[n])
            if n < N:
                self.ngram_node[sl] = index.find_nodes(rows, n)
            if n > 1:
                ctx_node[sl] = index.find_nodes(rows, n - 1)
        self.prob_alive = np.ones(total, dtype=bool)
        # the n-grams of each context, in file order
        self.probs = np.argsort(ctx_node, kind="stable").astype(np.int64)
        self.probs_start = np.zeros(n_nodes + 1, dtype=np.int64)
        np.cumsum(np.bincount(ctx_node, minlength=n_nodes), out=self.probs_start[1:])
        order_by_depth = np.argsort(index.depth, kind="stable")
        bounds = np.searchsorted(index.depth[order_by_depth], np.arange(N + 1))
        self.nodes_at = [order_by_depth[bounds[d]:bounds[d + 1]].astype(np.int64) for d in range(N)]

        # unigram rows: events (SRILM's distributeProb) and whether <unk> is one
        m1 = len(grams[0][1])
        explicit = np.arange(m1) < m1 - model.implicit_unigrams
        w1 = grams[0][0][:, 0]
        self.unigram_event = explicit & (w1 != BOS_ID)
        self.unk_nonevent = not bool((explicit & (w1 == UNK_ID)).any())

    def _maps_nodes(self):
        i = self.index
        return i.nodes.keys, i.nodes.vals, i.nodes.shift, i.parent, i.word, self.node_alive, self.node_bow

    def _maps_probs(self):
        i = self.index
        return i.probs.keys, i.probs.vals, i.probs.shift

    def prune(self, threshold: float, min_order: int, score: np.ndarray) -> list[int]:
        """SRILM's pruning passes; returns the number of n-grams removed per order."""
        from . import _prune_kernels as K

        removed = [0] * self.N
        for d in range(self.N - 1, max(1, min_order - 1) - 1, -1):
            removed[d] = int(K.prune_depth(
                d, self.nodes_at[d], self.N, threshold, self.V, *self._maps_nodes(), self.n_children,
                self.probs_start, self.probs, *self._maps_probs(), self.prob_alive, self.lp, self.last_word,
                self.ngram_node,
                BOS_ID, EOS_ID, UNK_ID, self.unk_nonevent, score))
        return removed

    def recompute_bows(self) -> None:
        """SRILM's ``recomputeBOWs``: unigram mass, then every live context by length."""
        from . import _prune_kernels as K

        K.distribute_unigram_mass(self.lp[:self.offsets[1]], self.unigram_event)
        for d in range(1, self.N):
            K.recompute_bows(d, self.nodes_at[d], self.N, self.V, *self._maps_nodes(), self.probs_start, self.probs,
                             *self._maps_probs(), self.prob_alive, self.lp, self.last_word)

    def model(self, original: BackoffLM) -> BackoffLM:
        """The live n-grams as a BackoffLM, its values as its ARPA file gives them
        (``%.7g``; log 0 as the input had it)."""
        from .kn_steps import quantize_g7

        ngrams = []
        for n, (rows, lp0, bow0, hb0) in enumerate(original.ngrams, start=1):
            sl = slice(self.offsets[n - 1], self.offsets[n])
            keep = self.prob_alive[sl]
            lp = self.lp[sl][keep]
            lp = np.where((lp == -np.inf) & (lp0[keep] == LOG_PSEUDO_ZERO), LOG_PSEUDO_ZERO, lp).astype(np.float32)
            if n < self.N:
                node = self.ngram_node[sl][keep]
                hb = node >= 0
                hb[hb] = self.node_alive[node[hb]]
                bow = np.zeros(len(node), dtype=np.float32)
                bow[hb] = self.node_bow[node[hb]]
                b0 = bow0[keep]
                bow = np.where((bow == -np.inf) & (b0 == LOG_PSEUDO_ZERO) & hb, LOG_PSEUDO_ZERO, bow)
            else:
                hb = np.zeros(int(keep.sum()), dtype=bool)
                bow = np.zeros(len(hb), dtype=np.float32)
            ngrams.append((rows[keep], quantize_g7(lp), quantize_g7(bow), hb))
        out = BackoffLM(original.vocab, ngrams)
        out.implicit_unigrams = original.implicit_unigrams
        out.sources = tuple(original.sources)
        return out


def _usable(model) -> BackoffLM:
    model = getattr(model, "model_", model)  # a fitted KneserNeyLM
    if not isinstance(model, BackoffLM):
        raise TypeError(f"expected a BackoffLM (an ARPA model), got {type(model).__name__}")
    if model.restricted:
        raise ValueError("this model holds only the n-grams of one text (read with only_for); cannot prune it")
    return model


def prune_entropy(model: BackoffLM, threshold: float, min_order: int = 2) -> BackoffLM:
    """Prune ``model`` like SRILM's ``ngram -prune threshold [-minprune min_order]``.

    Removes the n-grams of order >= ``min_order`` (unigrams never) whose removal
    changes the model's perplexity (its relative entropy to the original, weighted by
    the model's own context probabilities) by a relative amount below ``threshold``,
    keeps every n-gram that is the context of a kept longer one, and recomputes the
    back-off weights (see the module docstring). Returns a new BackoffLM; ``model`` is
    not changed. ``threshold = 0`` returns an unchanged copy (SRILM does not prune).
    """
    model = _usable(model)
    t = check_threshold(threshold)
    min_order = _check_min_order(min_order)
    if t == 0:
        out = BackoffLM(model.vocab, [(r.copy(), p.copy(), b.copy(), h.copy()) for r, p, b, h in model.ngrams])
        out.implicit_unigrams = model.implicit_unigrams
        out.sources = tuple(model.sources)
        return out
    trie = _Trie(model)
    score = np.full(len(trie.lp), np.nan)
    trie.prune(t, min_order, score)
    trie.recompute_bows()
    return trie.model(model)


def pruning_criterion(model: BackoffLM, min_order: int = 2) -> list[np.ndarray]:
    """SRILM's pruning score of every n-gram on the unpruned model: per order, float64
    relative perplexity change ``10^dH - 1`` of removing that n-gram alone (NaN for the
    orders below ``min_order`` and for contexts SRILM skips as improper). An n-gram
    is pruned at threshold t when its score is below t and it is not a live context."""
    model = _usable(model)
    min_order = _check_min_order(min_order)
    trie = _Trie(model)
    score = np.full(len(trie.lp), np.nan)
    trie.prune(0.0, min_order, score)
    return [score[trie.offsets[n]:trie.offsets[n + 1]].copy() for n in range(model.order)]
