"""The log-linear LM's training statistics on a Dask cluster: the text's (context, target)
events counted in shards and merged by key, equal to ``events.context_events`` of the whole text.

The model sees the text only through its events (``suffixlm.events``), and they are
n-grams: those of the model's order, and the lower-order ones that start with ``<s>``.
So this is ``distributed.kn_counts``'s counting with a filter before the shuffle:

1. vocabulary: the shards' word counts are summed on the driver, which builds the
   vocabulary as ``load_training_corpus`` does (``min_count``, a vocabulary file, ``unk``);
2. counting: each worker reads its byte range, encodes it with those ids, counts its
   n-grams (``distributed.kn_counts.count_shard``) and keeps only the events (all n-grams, with
   ``keep_ngram_counts``, for the Kneser-Ney base measure), split by first-word ranges;
3. keyed shuffle: one reduce task per first-word range sums the counts of equal
   n-grams (``distributed.kn_counts.merge_pieces``); the driver concatenates the sorted ranges.

The driver then holds the distinct events and their counts, never the text: the tree
and the per-event statistics are built from those alone (``LogLinearLM.fit``). Every
task is a pure function of (file, byte range, vocabulary), so a worker lost mid-job
costs only the recomputation of its tasks.
"""

from __future__ import annotations

import numpy as np

from ..corpus import BOS_ID
from ..events import ContextEvents, events_from_rows
from .kn_counts import build_counts, count_on_cluster, count_shard, shuffle_merge


def count_shard_events(shard, vocab_words: list[str], has_unk: bool, order: int, bounds: np.ndarray,
                       all_orders: bool):
    """``distributed.kn_counts.count_shard``, keeping of the orders below ``order`` only the n-grams that
    start with ``<s>`` (the events) unless ``all_orders``."""
    unigrams, n_oov, parts = count_shard(shard, vocab_words, has_unk, order, bounds)
    if not all_orders:
        for part in parts:
            for j in range(len(part) - 1):  # orders 2 .. order - 1
                rows, cnt = part[j]
                keep = rows[:, 0] == BOS_ID
                part[j] = (rows[keep], cnt[keep])
    return unigrams, n_oov, parts


def count_text_events(client, path, order: int, vocab_path=None, min_count: int = 1, unk: bool = False,
                      keep_ngram_counts: bool = False, n_shards: int | None = None,
                      n_partitions: int | None = None) -> ContextEvents:
    """The events of the text file ``path`` for an order-``order`` model, counted on the
    Dask cluster of ``client``: equal to ``context_events(load_training_corpus(path,
    vocab_path, min_count, unk), order)`` (same vocabulary, events and counts).

    keep_ngram_counts: also merge every n-gram of orders 1..order and keep them as
    ``ngram_counts`` (what the Kneser-Ney base measure is estimated from).
    n_shards: byte ranges (default: 4 per worker, at least one per 16 MB);
    n_partitions: reduce tasks of the shuffle (default: 2 per worker)."""

    order = int(order)
    path = str(path)
    vocab, stats, bounds, counted, tag = count_on_cluster(
        client, path, order, vocab_path, unk, n_shards, n_partitions, min_count=min_count,
        count=count_shard_events, count_args=(keep_ngram_counts,), prefix="lm")
    V, P = len(vocab), len(bounds) - 1
    unigrams, n_oov, merged = shuffle_merge(client, counted, order, V, P, f"lm-{tag}")
    ngram_counts = build_counts(order, unigrams, merged) if keep_ngram_counts else None
    tokens, offsets, counts = events_from_rows(order, unigrams, merged)
    del merged
    return ContextEvents(order, vocab, tokens, offsets, counts, stats.n_sentences, stats.n_words, n_oov, path,
                         ngram_counts)
