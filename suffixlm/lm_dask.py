"""The log-linear LM's training statistics on a Dask cluster: the text's (context, target)
events counted in shards and merged by key, equal to ``events.context_events`` of the whole text.

The model sees the text only through its events (``suffixlm.events``), and they are
n-grams: those of the model's order, and the lower-order ones that start with ``<s>``.
So this is ``kn_dask``'s counting with a filter before the shuffle:

1. vocabulary: the shards' word counts are summed on the driver, which builds the
   vocabulary as ``load_training_corpus`` does (``min_count``, a vocabulary file, ``unk``);
2. counting: each worker reads its byte range, encodes it with those ids, counts its
   n-grams (``kn_dask.count_shard``) and keeps only the events (all n-grams, with
   ``keep_ngram_counts``, for the Kneser-Ney base measure), split by first-word ranges;
3. keyed shuffle: one reduce task per first-word range sums the counts of equal
   n-grams (``kn_dask.merge_partition``); the driver concatenates the sorted ranges.

The driver then holds the distinct events and their counts, never the text: the tree
and the per-event statistics are built from those alone (``LogLinearLM.fit``). Every
task is a pure function of (file, byte range, vocabulary), so a worker lost mid-job
costs only the recomputation of its tasks.
"""

from __future__ import annotations

import os
import uuid
from collections import Counter

import numpy as np

from .corpus import BOS_ID, UNK_ID, CorpusError, Vocabulary
from .events import ContextEvents, events_from_rows
from .io import input_name, open_error_message
from .kn_dask import (
    _partition_bounds,
    build_counts,
    count_shard,
    read_shard,
    shard_word_counts,
    shuffle_merge,
    split_text,
)


def count_shard_events(shard, vocab_words: list[str], has_unk: bool, order: int, bounds: np.ndarray,
                       all_orders: bool):
    """``kn_dask.count_shard``, keeping of the orders below ``order`` only the n-grams that
    start with ``<s>`` (the events) unless ``all_orders``."""
    unigrams, n_oov, parts = count_shard(shard, vocab_words, has_unk, order, bounds)
    if not all_orders:
        for part in parts:
            for j in range(len(part) - 1):  # orders 2 .. order - 1
                rows, cnt = part[j]
                keep = rows[:, 0] == BOS_ID
                part[j] = (rows[keep], cnt[keep])
    return unigrams, n_oov, parts


def _part_of(counted, p: int):
    return counted[2][p]


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
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    path = str(path)
    name = input_name(path)
    if name == "<stdin>":
        raise CorpusError("the workers read the training text from a file: give its path, not - (standard input)")
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise CorpusError(open_error_message(path, e)) from None
    if n_shards is None:
        n_shards = max(4 * n_workers, -(-size // (16 << 20)))
    P = n_partitions or 2 * n_workers
    tag = uuid.uuid4().hex[:8]
    ranges = split_text(path, n_shards)
    shards = [client.submit(read_shard, path, a, b, key=f"lm-read-{tag}-{i}") for i, (a, b) in enumerate(ranges)]
    stats = client.gather([client.submit(shard_word_counts, s, key=f"lm-words-{tag}-{i}")
                           for i, s in enumerate(shards)])
    n_sentences = sum(s[1] for s in stats)
    n_words = sum(s[2] for s in stats)
    if n_sentences == 0:
        raise CorpusError(f"{name}: has no sentence; expected one sentence per line")
    counter: Counter = Counter()
    for wc, _, _ in stats:
        counter.update(wc)
    del stats
    if vocab_path is not None:
        vocab = Vocabulary.from_file(vocab_path, unk=unk)
    else:
        try:
            vocab = Vocabulary.from_counts(counter, min_count=min_count, unk=unk)
        except CorpusError as e:
            raise CorpusError(f"{name}: {e}") from None
    V = len(vocab)
    mass = np.zeros(V, dtype=np.int64)  # token mass per first word, for balanced partitions
    for w, cnt in counter.items():
        mass[vocab.index.get(w, UNK_ID)] += cnt
    mass[BOS_ID] = n_sentences
    del counter
    bounds = _partition_bounds(mass, P)
    P = len(bounds) - 1
    words = vocab.words
    counted = [client.submit(count_shard_events, s, words, vocab.has_unk, order, bounds, keep_ngram_counts,
                             key=f"lm-count-{tag}-{i}") for i, s in enumerate(shards)]
    del shards
    unigrams, n_oov, merged = shuffle_merge(client, counted, order, V, P, f"lm-{tag}")
    ngram_counts = build_counts(order, unigrams, merged) if keep_ngram_counts else None
    tokens, offsets, counts = events_from_rows(order, unigrams, merged)
    del merged
    return ContextEvents(order, vocab, tokens, offsets, counts, n_sentences, n_words, n_oov, path, ngram_counts)
