"""The single-process Kneser-Ney estimator (``estimate_kneser_ney``: SRILM's, from n-gram
counts), apart from the ``KneserNeyLM`` estimator class so that the base measure of the
log-linear model (``suffixlm.base_measure``) can use it without importing
``suffixlm.backoff.kn``, which imports the log-linear model for unbounded order."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .arpa import BackoffLM
from ..corpus import BOS_ID, UNK_ID, Vocabulary
from .kn_steps import (
    arpa_entries,
    context_ranges,
    count_of_counts,
    estimate_discounts,
    estimate_unigrams,
    fixup_order,
    listed_unigrams,
    srilm_min_counts,
)
from ..ngrams import NgramCounts, length, ngram_rows, shelved


def kneser_ney_counts(counts: NgramCounts, nonevent: np.ndarray, shelf=None) -> list[np.ndarray]:
    """Counts as SRILM's ``KneserNey::prepareCounts`` leaves them: for n < N the number
    of distinct (n+1)-grams ending in the n-gram, except n-grams starting with a
    non-event (``<s>``; ``<unk>`` in a closed vocabulary), which keep their counts.
    ``shelf`` (``count_ngrams``'): the counts are read from it and the results put on it."""
    from . import _kn_kernels as K

    out = []
    N = counts.order
    first = np.arange(counts.vocab_size, dtype=np.int32)  # the first word of each n-gram, order by order
    for n in range(1, N + 1):
        raw = counts.count[n - 1]
        if n == N:
            out.append(raw.copy() if isinstance(raw, np.ndarray) else raw)  # a shelf's file is never written again
            continue
        if n > 1:
            first = first[shelved(counts.prefix[n - 1])]
        kn = K.kneser_ney_order_counts(shelved(raw), shelved(counts.suffix[n]), first, nonevent)
        out.append(kn if shelf is None else shelf.wrap(kn))
        raw = kn = None
    return out


@dataclass
class _Order:
    lp: np.ndarray        # float32[m] log10 probability (valid where explicit)
    explicit: np.ndarray  # bool[m]
    found: np.ndarray     # float32[m] probability found by the back-off walk
    acc: np.ndarray       # float32[m] back-off weights summed on the way
    bow: np.ndarray | None = None  # float32[m] back-off weight of the n-gram as a context
    # lp, explicit and bow may be a shelf's leaves (``_estimate``): read them with ``shelved``

    def shelve(self, shelf) -> None:
        """Put lp, explicit and bow on ``shelf`` (None: keep them in memory)."""
        if shelf is not None:  # (wrap passes None through: the highest order has no bow)
            self.lp, self.explicit, self.bow = (shelf.wrap(a) for a in (self.lp, self.explicit, self.bow))


def _walk(order_prev: _Order, lp, explicit, suffix, prefix, bow_prev):
    """Back-off (found, acc) of every n-gram of an order, SRILM's summation order
    (``_kn_kernels.walk_order``, the suffixes' values gathered in the same pass)."""
    from . import _kn_kernels as K

    return K.walk_order(order_prev.found, order_prev.acc, bow_prev, suffix, prefix, lp, explicit)


def estimate_kneser_ney(
    counts: NgramCounts,
    vocab: Vocabulary,
    modified: bool = True,
    min_counts: list[int] | None = None,
    interpolate: bool = True,
    consume: bool = False,
) -> tuple[BackoffLM, dict]:
    """Estimate an interpolated (modified) KN model from ``counts`` as SRILM does.
    ``consume``: the caller is done with ``counts``, whose arrays are dropped as soon as
    they are used (a lower peak of memory); without it only its raw counts are dropped.

    Returns the model and a dict of diagnostics: ``discounts`` (list of (D1, D2, D3+)
    per order), ``count_of_counts`` (n1..n4 per order), ``retries`` and ``bad_bows``
    per order, ``fixups`` (context n-grams added per order).
    """
    est = KneserNeyEstimate(counts, vocab, modified, min_counts, interpolate, consume)
    return est.model(), est.info


class KneserNeyEstimate:
    """SRILM's interpolated (modified) KN estimate of ``counts``, before its n-grams are
    listed: ``model()`` gathers them into a ``BackoffLM`` (``estimate_kneser_ney``);
    ``write_arpa`` streams them to an ARPA file a block at a time, lowest order first,
    so that the listed rows of the whole model are never in memory at once (the same
    bytes as the model's ``write_arpa``). Either, once: each frees the estimate as it goes.

    ``counts`` (list of n-grams per order, the ARPA header), ``n_parameters``, ``info``
    (as ``estimate_kneser_ney``'s) and ``vocab`` are set at construction. ``shelf``: the
    ``distributed.spill.SpillStore`` ``counts`` were counted onto (``count_ngrams``); the
    estimate keeps there too whatever its current step does not read (``_estimate``).
    """

    #: n-grams per piece of ``sections`` (one task of the writer's threads)
    BLOCK = 1 << 16

    def __init__(self, counts: NgramCounts, vocab: Vocabulary, modified: bool = True,
                 min_counts: list[int] | None = None, interpolate: bool = True, consume: bool = False,
                 shelf=None):
        self.vocab = vocab
        self._ngrams = counts
        self._consume = consume
        self._orders, self._node, self._nonevent, self.info = _estimate(counts, vocab, modified, min_counts,
                                                                        interpolate, consume, shelf)
        N = len(self._orders)
        unigrams = listed_unigrams(shelved(self._orders[0].explicit), self._nonevent)
        self.counts = [len(unigrams)] + [int(np.count_nonzero(shelved(o.explicit))) for o in self._orders[1:]]
        bows = [int(np.count_nonzero(self._node[n - 1] & shelved(self._orders[n - 1].explicit))) for n in range(2, N)]
        if N > 1:
            bows.append(int(np.count_nonzero(self._node[0][unigrams])))
        self.n_parameters = sum(self.counts) + sum(bows)
        self._used = False

    def _take(self) -> None:
        if self._used:
            raise RuntimeError("this estimate was already listed (model() or write_arpa() frees it as it goes)")
        self._used = True

    def _entries(self, n: int, idx: np.ndarray):
        """``_listed`` of the n-grams ``idx`` of order n."""
        o = self._orders[n - 1]
        return _listed([shelved(w) for w in self._ngrams.word[:n]], [shelved(p) for p in self._ngrams.prefix[:n]],
                       shelved(o.lp), shelved(o.bow), self._node[n - 1], idx)

    def _free(self, n: int, listed: bool) -> None:
        """Drop order n's estimate; ``listed``: its rows are out, too."""
        self._orders[n - 1] = self._node[n - 1] = None
        if listed and self._consume:
            self._ngrams.word[n - 1] = self._ngrams.prefix[n - 1] = None

    def model(self) -> BackoffLM:
        """The model (``BackoffLM``), the highest order first: the rows of an order need only
        lower orders, and each order's estimate is dropped once its n-grams are out."""
        self._take()
        N = len(self._orders)
        ngrams = [None] * N
        for n in range(N, 0, -1):
            explicit = shelved(self._orders[n - 1].explicit)
            idx = listed_unigrams(explicit, self._nonevent) if n == 1 else np.flatnonzero(explicit)
            explicit = None
            ngrams[n - 1] = self._entries(n, idx)
            self._free(n, True)
        return BackoffLM(self.vocab, ngrams)

    def sections(self):
        """Per order (lowest first), an iterator over its pieces in file order, ``BLOCK``
        n-grams at a time, each a function that lists them (``_listed``: rows, lp, bow,
        has_bow), which ``write_arpa_sections`` calls on its threads; each order's estimate
        is dropped once its pieces are made (a piece holds what it reads)."""
        self._take()
        N = len(self._orders)
        words, prefixes = [], []  # the counts' arrays of the orders begun, each read once (``shelved``)

        def pieces(n):
            o, node = self._orders[n - 1], self._node[n - 1]
            words.append(shelved(self._ngrams.word[n - 1]))
            prefixes.append(shelved(self._ngrams.prefix[n - 1]))
            word, prefix = words[:n], prefixes[:n]
            lp, bow, explicit = shelved(o.lp), shelved(o.bow), shelved(o.explicit)
            if n == 1:
                yield functools.partial(_listed, word, prefix, lp, bow, node, listed_unigrams(explicit, self._nonevent))
            else:
                for a in range(0, len(explicit), self.BLOCK):
                    yield functools.partial(_listed_block, explicit, a, a + self.BLOCK, word, prefix, lp, bow, node)
            o = node = word = prefix = lp = bow = explicit = None
            self._free(n, False)
            if n == N:
                for k in range(1, N + 1):
                    self._free(k, True)

        return [pieces(n) for n in range(1, N + 1)]

    def write_arpa(self, path, sources=()) -> None:
        """Write the ARPA file a block at a time (``io.atomic_write``; never over ``sources``)."""
        from .arpa import write_arpa_sections
        from ..io import atomic_write

        with atomic_write(path, inputs=sources) as fh:
            write_arpa_sections(fh, self.vocab.words, self.counts, self.sections())


def _listed(word: list, prefix: list, lp: np.ndarray, bow: np.ndarray | None, node: np.ndarray | None,
            idx: np.ndarray):
    """``kn_steps.arpa_entries`` of the n-grams ``idx`` of an order (``word``, ``prefix``:
    the counts' arrays of the orders up to it; ``bow`` None: the highest order)."""
    return arpa_entries(ngram_rows(word, prefix, idx), lp, bow, node, idx)


def _listed_block(explicit: np.ndarray, a: int, b: int, *arrays):
    """``_listed`` of the explicit n-grams among ``a .. b - 1``."""
    return _listed(*arrays, a + np.flatnonzero(explicit[a:b]))


def _estimate(counts: NgramCounts, vocab: Vocabulary, modified: bool, min_counts, interpolate: bool,
              consume: bool, shelf=None):
    """The estimate of every order: (``_Order`` per order, context-node flags per order,
    non-events, info). With ``consume``, the counts' suffix links are dropped once used.
    ``shelf`` (``count_ngrams``'): the counts' arrays are read from it as each step needs
    them, and each order's lp, explicit and bow go onto it once made, so that memory
    holds the arrays of about one order at a time (``kn --memory``); the same numbers."""
    from . import _kn_kernels as K

    N = counts.order
    V = counts.vocab_size
    if min_counts is None:
        min_counts = srilm_min_counts(N)
    min_counts = list(min_counts) + [min_counts[-1]] * (N - len(min_counts))
    nonevent = np.zeros(V, dtype=bool)
    nonevent[BOS_ID] = True
    if not vocab.has_unk:
        nonevent[UNK_ID] = True
    vocab_size = int(V - nonevent.sum())
    kn = kneser_ney_counts(counts, nonevent, shelf)
    counts.count = []  # raw counts are only needed for the KN counts
    info: dict = {"discounts": [], "count_of_counts": [], "retries": [], "bad_bows": [], "fixups": []}
    orders: list[_Order] = []
    # contexts holding a closed-vocabulary <unk> get no probabilities
    has_unk = [shelved(counts.word[0]) == UNK_ID] if not vocab.has_unk else None
    for n in range(1, N + 1):
        knc, word = shelved(kn[n - 1]), shelved(counts.word[n - 1])
        coc = count_of_counts(knc, word, nonevent)
        # an order above the longest sentence has no n-gram: its discounts are never used
        d = estimate_discounts(coc, modified, n) if len(knc) else (0.5, 1.0, 1.5)
        info["count_of_counts"].append([int(x) for x in coc[1:]])
        info["discounts"].append(d)
        if n == 1:
            lp, explicit, n_retry = estimate_unigrams(knc, nonevent, int(min_counts[0]), d, vocab_size,
                                                      bool(interpolate))
            info["retries"].append(n_retry)
            info["bad_bows"].append(0)
            orders.append(_Order(lp, explicit, lp.copy(), np.zeros(V, dtype=np.float32)))
            kn[0] = knc = None
            continue
        prev = orders[-1]
        n_ctx = length(counts.word[n - 2])
        prefix, suffix = shelved(counts.prefix[n - 1]), shelved(counts.suffix[n - 1])
        start, end = context_ranges(prefix, n_ctx)
        skip = has_unk[n - 2] if has_unk is not None else np.zeros(n_ctx, dtype=bool)
        lower = K.lower_order_lp(prev.found, prev.acc, suffix)
        if n == N:  # no walk of this order reads them
            prev.found = prev.acc = None
        if has_unk is not None:
            has_unk.append(has_unk[n - 2][prefix] | (word == UNK_ID))
        lp, explicit, n_retry = K.estimate_order(
            start, end, skip, knc, word, lower, nonevent,
            int(min_counts[n - 1]), float(d[0]), float(d[1]), float(d[2]), vocab_size, bool(interpolate), False)
        kn[n - 1] = knc = word = None
        info["retries"].append(int(n_retry))
        bow, n_bad = K.backoff_weights(start, end, explicit, lp, lower)
        start = end = skip = lower = None  # not held through the walk
        info["bad_bows"].append(int(n_bad))
        prev.bow = bow
        # the highest order's walk would serve no higher one
        found, acc = _walk(prev, lp, explicit, suffix, prefix, bow) if n < N else (None, None)
        prev.found = prev.acc = None  # recomputed in the fixup pass
        prev.shelve(shelf)  # order n - 1 is done
        orders.append(_Order(lp, explicit, found, acc))
        found = acc = bow = lp = explicit = prefix = suffix = prev = None  # not held into the next order
    orders[-1].shelve(shelf)

    # nodes: contexts of explicit n-grams and their suffixes
    def context_nodes():
        node = [np.zeros(length(o.lp), dtype=bool) for o in orders]
        none = np.zeros(0, dtype=bool)
        for n in range(N - 1, 0, -1):
            K.mark_contexts(node[n - 1], shelved(counts.prefix[n]), shelved(orders[n].explicit),
                            shelved(counts.suffix[n]), node[n] if n < N - 1 else none)
        return node

    node = context_nodes()
    # fixups: every node and every prefix of a node needs an explicit probability
    mark = [x.copy() for x in node]
    for n in range(N - 1, 1, -1):
        mark[n - 2][shelved(counts.prefix[n - 1])[mark[n - 1]]] = True
    info["fixups"].append(0)
    lp1 = shelved(orders[0].lp)
    orders[0].found, orders[0].acc = lp1.copy(), np.zeros(V, dtype=np.float32)
    lp1 = None
    for n in range(2, N):  # the highest order has no fixups, so no walk
        o, prev = orders[n - 1], orders[n - 2]
        lp, explicit = shelved(o.lp), shelved(o.explicit)
        o.found, o.acc = _walk(prev, lp, explicit, shelved(counts.suffix[n - 1]), shelved(counts.prefix[n - 1]),
                               shelved(prev.bow))
        prev.found = prev.acc = None
        fix = mark[n - 1] & ~explicit
        info["fixups"].append(int(fix.sum()))
        if fix.any():
            if shelf is not None:  # changed: put back as new leaves (a leaf's file is never rewritten)
                lp, explicit = lp.copy(), explicit.copy()
            fixup_order(lp, explicit, o.found, o.acc, fix)
            if shelf is not None:
                o.lp, o.explicit = shelf.wrap(lp), shelf.wrap(explicit)
        fix = o = prev = lp = explicit = None
    if N > 1:
        info["fixups"].append(0)
    orders[max(N - 2, 0)].found = orders[max(N - 2, 0)].acc = None
    node = context_nodes()

    del mark
    if consume:
        counts.suffix = [None] * N
    return orders, node, nonevent, info
