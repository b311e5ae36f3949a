"""A training text reduced to what the log-linear LM learns from: its (context, target) events.

An order-n model sees the text only through the prediction at every position: the
target, after its context of up to n-1 words reaching back to the sentence's ``<s>``.
The suffix tree, the loss, its gradient and every statistic of training are functions of
the multiset of these events (``SuffixTree.from_events``, ``LMObjective(event_count=)``),
so a text of any size can be counted elsewhere (on a Dask cluster: ``distributed.lm_events``) and the
model built from the counts alone.

The events are n-grams: an n-gram of order n (any first word) is the event of its last
word after a full context; an n-gram of order k < n that starts with ``<s>`` is the event
of its last word after a context cut by the sentence start. So the events are read from
n-gram counts (``NgramCounts``, or rows of each order with their counts), each event
laid out as its n-gram: context oldest word first, then the target.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .corpus import BOS_ID, Corpus, Vocabulary
from .suffixtree import canonical_events


@dataclass(eq=False)
class ContextEvents:
    """The distinct (context, target) events of a training text for an order-``order``
    model, with their counts.

    tokens int32[*], offsets int64[n_events+1]: event k is ``tokens[offsets[k]:offsets[k+1]]``
    (its n-gram: context oldest word first, then the target), in canonical order (by
    context, depth 1 first, then target: ``suffixtree.canonical_events``, so that the tree
    built from them shares these arrays); counts int64[n_events].
    n_sentences, n_words, n_oov: of the text (as ``Corpus``). ngram_counts: the text's
    ``NgramCounts`` of orders 1..order, kept when asked for (the Kneser-Ney base measure
    is estimated from them), else None.
    """

    order: int
    vocab: Vocabulary
    tokens: np.ndarray
    offsets: np.ndarray
    counts: np.ndarray
    n_sentences: int
    n_words: int
    n_oov: int = 0
    source: str = ""
    ngram_counts: object = field(default=None, repr=False)

    @property
    def n_events(self) -> int:
        return int(self.counts.shape[0])

    @property
    def n_predictions(self) -> int:
        """Predicted positions of the text (every token but the ``<s>``, OOVs included)."""
        return int(self.counts.sum())

    @property
    def n_tokens(self) -> int:
        """Tokens of the text, ``<s>`` and ``</s>`` included (as ``Corpus.n_tokens``)."""
        return self.n_predictions + self.n_sentences

    def digest(self) -> str:
        """sha256 of the vocabulary and the events (what a checkpoint of a fit on them matches)."""
        from .checkpoint import content_digest

        return content_digest("events", int(self.order), self.vocab.words, bool(self.vocab.has_unk), self.tokens,
                              self.offsets, self.counts)


def events_from_rows(order: int, unigrams: np.ndarray, rows: list[tuple[np.ndarray, np.ndarray]]):
    """(tokens, offsets, counts) of the events of an order-``order`` model from n-gram rows,
    in canonical order (``canonical_events``).

    unigrams: int64[V] counts of each word (order 1: the events are the predicted words,
    every token but ``<s>``); rows[k - 2] = (int32[m, k] n-grams of order k, int64[m]
    counts) for k = 2..order: all those of order ``order``, and of the lower orders at
    least those that start with ``<s>`` (others are left out here). The entries of
    ``rows`` are released (set to None) as they are copied, to keep the peak memory low."""
    if order == 1:
        words = np.flatnonzero(unigrams > 0)
        words = words[words != BOS_ID].astype(np.int32)
        return canonical_events(words, np.arange(len(words) + 1, dtype=np.int64), unigrams[words], 0)
    keep = [np.asarray(rows[k - 2][0])[:, 0] == BOS_ID if k < order else None for k in range(2, order + 1)]
    sizes = [int(np.count_nonzero(m)) if m is not None else len(rows[order - 2][1]) for m in keep]
    n = sum(sizes)
    tokens = np.empty(sum(s * k for s, k in zip(sizes, range(2, order + 1))), dtype=np.int32)
    lengths = np.empty(n, dtype=np.int64)
    counts = np.empty(n, dtype=np.int64)
    t = e = 0
    for k, m, size in zip(range(2, order + 1), keep, sizes):
        r, c = rows[k - 2]
        rows[k - 2] = None
        r = np.asarray(r, dtype=np.int32).reshape(-1, k)
        if m is not None:
            r, c = r[m], np.asarray(c)[m]
        tokens[t:t + size * k] = r.ravel()
        lengths[e:e + size] = k
        counts[e:e + size] = c
        t += size * k
        e += size
        del r, c
    offsets = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    del lengths
    return canonical_events(tokens, offsets, counts, order - 1)


def events_from_ngram_counts(counts, order: int):
    """(tokens, offsets, counts) of the events from ``NgramCounts`` of orders 1..order."""
    from .ngrams import rows_by_order

    rows, _ = rows_by_order(counts.word[:order], counts.prefix[:order])
    rows = [(r, counts.count[k - 1]) for k, r in enumerate(rows, 2)]
    return events_from_rows(order, counts.count[0].astype(np.int64), rows)


def context_events(corpus: Corpus, order: int, keep_ngram_counts: bool = False) -> ContextEvents:
    """The events of ``corpus`` for an order-``order`` model, counted in this process
    (``count_ngrams``; ``distributed.lm_events.count_text_events`` counts a file on a cluster)."""
    from .ngrams import count_ngrams

    counts = count_ngrams(corpus, int(order))
    tokens, offsets, cnt = events_from_ngram_counts(counts, int(order))
    return ContextEvents(int(order), corpus.vocab, tokens, offsets, cnt, corpus.n_sentences, corpus.n_words,
                         corpus.n_oov, corpus.source, counts if keep_ngram_counts else None)
