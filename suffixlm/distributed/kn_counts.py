"""N-gram counts of a text file on a Dask cluster, equal to ``count_ngrams`` of the whole text.

The driver never reads the text. It cuts the file into byte ranges that start after a
newline (shards); each worker reads and encodes its own range. Three stages:

1. vocabulary: each shard's word counts (small) are summed on the driver, which builds
   the vocabulary exactly as ``load_training_corpus`` does (ids by decreasing count,
   ties in code-point order; or from the vocabulary file), so ids, hence the trie order
   and the ARPA file, are those of the single-process path;
2. counting: each worker remaps its shard to those ids and counts it with the numba
   counting (``count_ngrams``), then splits its n-grams into P partitions by ranges of
   the first word (ranges of equal token mass, from the unigram counts);
3. keyed shuffle: partition p of every shard goes to one reduce task, which sums the
   counts of equal n-grams and sorts them. Since partitions are ranges of the first
   word, the partitions laid end to end are the sorted n-grams of the whole text: the
   driver only concatenates them and links each n-gram to its prefix and suffix
   (``NgramCounts``; trie ids are the lexicographic ranks).

The Kneser-Ney estimate (``estimate_text_kn``) takes another way where every worker's
memory holds the text (``whole_fits``): the shards are only encoded, and one task a
partition counts that partition's n-grams over the whole text (``count_partition``:
the counting extends only the n-grams that start in its word range, so the partitions'
work adds up to about one count of the text, with no merge), keeping where each n-gram
ends in the text, from which ``kn_estimate`` reads each suffix in its own partition.

Every task is a pure function of (file, byte range, vocabulary), so a worker lost
mid-job costs only the recomputation of its tasks (Dask reschedules them).
Gzip input cannot be cut by byte ranges: it is read by one task. Standard input is
refused (the workers read the file themselves).
"""

from __future__ import annotations

import io
import os
import uuid
from collections import Counter
from dataclasses import dataclass

import numpy as np

from ..corpus import (
    SPECIALS,
    BOS,
    BOS_ID,
    EOS,
    UNK_ID,
    Corpus,
    CorpusError,
    TEXT_BLOCK,
    Vocabulary,
    WordTable,
    encode_blocks,
    encode_lines,
    encode_text,
    FirstSeenIds,
    read_lines,
)
from ..io import BOM, GZIP_MAGIC, input_name, line_blocks, open_error_message, split_words
from ..backoff.kn_steps import check_int32_counts
from ..ngrams import NgramCounts, count_ngrams, rows_by_order
from .spill import projection


@dataclass
class TextStats:
    """What the driver learns about a text counted on the cluster."""

    n_sentences: int
    n_words: int
    n_oov: int
    n_shards: int


def split_text(path: str, n_shards: int) -> list[tuple[int, int]]:
    """Byte ranges ``[start, end)`` of ``path`` cut just after a newline, at most ``n_shards``
    of them; ``[(0, -1)]`` (the whole input, read as a stream) for gzip or stdin."""
    if input_name(path) == "<stdin>":
        return [(0, -1)]
    with open(path, "rb") as fh:
        if fh.read(2) == GZIP_MAGIC:
            return [(0, -1)]
        size = os.fstat(fh.fileno()).st_size
        cuts = [0]
        for k in range(1, n_shards):
            fh.seek(max(k * size // n_shards - 1, cuts[-1]))
            fh.readline()  # to just after the next newline
            pos = min(fh.tell(), size)
            if pos > cuts[-1]:
                cuts.append(pos)
        if cuts[-1] < size or size == 0:
            cuts.append(size)
    return list(zip(cuts[:-1], cuts[1:])) or [(0, 0)]


def _shard_lines(path: str, start: int, end: int):
    """(line number in the range, words) of the non-blank lines of the byte range ``[start, end)``
    (the whole input, read as a stream, when end < 0). The text convention of
    ``io.TextInput``: lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``, a BOM opening the
    file is skipped, words split on ASCII white space (``io.split_words``)."""
    if end < 0:
        yield from read_lines(path)
        return
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    pos = start
    if start == 0 and data.startswith(BOM):
        data, pos = data[len(BOM):], len(BOM)
    for i, raw in enumerate(data.splitlines(True), 1):  # bytes: at \n, \r\n and \r only
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise CorpusError(f"{input_name(path)}: invalid UTF-8 at byte {pos + e.start + 1} of the file") from None
        pos += len(raw)
        toks = split_words(line)
        if toks:
            yield i, toks


def read_shard(path: str, start: int, end: int):
    """Encode a byte range with provisional ids (order of first appearance).

    Returns (words list[str], tokens int32[t], offsets int64[s+1], n_words)."""
    table = WordTable(list(SPECIALS), frozen=False)
    if end < 0:
        tok, off, n_words = encode_text(path, table)
        return table.words(), tok, off, n_words
    with open(path, "rb") as fh:
        fh.seek(start)
        data = fh.read(end - start)
    if start == 0 and data.startswith(BOM):
        data = data[len(BOM):]
    name = input_name(path)

    def problem(block, before):  # the errors of the Python reader of a byte range
        first = FirstSeenIds({w: i for i, w in enumerate(SPECIALS)})
        encode_lines(_shard_lines(path, start, end), first.__getitem__, f"{name}: bytes {start}..{end}, line ")

    blocks = line_blocks(io.BytesIO(data), name, CorpusError, limit=len(data) + 1, size=TEXT_BLOCK, bom=False)
    tok, off, n_words, _ = encode_blocks(blocks, table, problem)
    return table.words(), tok, off, n_words


def shard_word_counts(shard) -> tuple[dict, int, int]:
    """({word: count} without the markers, sentences, words) of an encoded shard."""
    words, tok, off, n_words = shard
    counts = np.bincount(tok, minlength=len(words))
    return ({w: int(c) for w, c in zip(words, counts) if c > 0 and w not in (BOS, EOS)}, len(off) - 1, n_words)


def encode_shard(shard, vocab_words: list[str], has_unk: bool):
    """A shard (``read_shard``'s) under the global vocabulary: (unigram counts int64[V],
    n_oov, tokens int32, offsets int64, n_words)."""
    words, prov, off, n_words = shard
    index = {w: i for i, w in enumerate(vocab_words)}
    remap = np.fromiter((index.get(w, UNK_ID) for w in words), dtype=np.int32, count=len(words))
    tok = remap[prov]
    n_oov = 0 if has_unk else int(np.count_nonzero(tok == UNK_ID))
    return np.bincount(tok, minlength=len(vocab_words)).astype(np.int64), n_oov, tok, off, n_words


def count_shard(shard, vocab_words: list[str], has_unk: bool, order: int, bounds: np.ndarray):
    """Count the n-grams of a shard under the global vocabulary, split by first-word range.

    bounds: int64[P+1], partition p holds the n-grams whose first word id is in
    [bounds[p], bounds[p+1]). Returns (unigram counts int64[V], n_oov, parts) with
    parts[p] = [(rows int32[m, n], counts int64[m]) for n = 2..order], sorted, each an
    array of its own. The trie's n-grams are in lexicographic order, so each partition
    is a range of every order, found from the range of the order below through the
    prefixes; its rows are built from there (``rows_by_order``: no rows of the whole
    order, and no copy of them cut in pieces)."""
    unigrams, n_oov, tok, off, n_words = encode_shard(shard, vocab_words, has_unk)
    P = len(bounds) - 1
    parts: list[list] = [[] for _ in range(P)]
    if len(off) <= 1:
        for n in range(2, order + 1):
            for p in range(P):
                parts[p].append((np.zeros((0, n), dtype=np.int32), np.zeros(0, dtype=np.int64)))
        return unigrams, n_oov, parts
    c = count_ngrams(Corpus(tok, off, Vocabulary(vocab_words, has_unk), n_words, n_oov), order)
    del tok
    for p in range(P):
        rows, pieces = rows_by_order(c.word, c.prefix, bounds[p], bounds[p + 1])
        parts[p] = [(r, c.count[n - 1][piece].astype(np.int64)) for n, (r, piece) in enumerate(zip(rows, pieces), 2)]
    return unigrams, n_oov, parts


def count_partition(lo: int, hi: int, order: int, vocab_words: list[str], has_unk: bool, *encoded):
    """The n-grams of orders 2..order whose first word id lies in ``[lo, hi)`` in the
    shards ``encoded`` (``encode_shard``'s) laid end to end: per order (rows int32[m, n],
    counts int32[m] (the trie's, without a copy to int64), prefix int32[m],
    position int32[m], ends), sorted and distinct, as
    ``merge_pieces`` gives them from every shard's piece of the partition, without a merge
    and without counting the other partitions' n-grams (``count_ngrams`` with
    ``first_words``); ``prefix``: the index of each n-gram's context among the
    partition's (n-1)-grams (the first word less ``lo`` for the bigrams), the trie's own;
    ``position``: where one occurrence of each n-gram ends in the text laid end to end;
    ``ends`` (None for the top order): int32[T], the id of the partition's n-gram ending
    at each position, -1 where none does. An n-gram of order n + 1 of any partition
    ending at position e has for its suffix the n-gram ending at e: its index is
    ``ends[e]`` in the partition of its first word (``kn_estimate.ClusterKN``'s links,
    without a join by key)."""
    tok = np.concatenate([e[2] for e in encoded]) if encoded else np.zeros(0, dtype=np.int32)
    off = [np.zeros(1, dtype=np.int64)]
    at = 0
    for e in encoded:
        off.append(np.asarray(e[3][1:], dtype=np.int64) + at)
        at += len(e[2])
    off = np.concatenate(off)
    if len(off) <= 1:
        empty = np.zeros(0, dtype=np.int32)
        return [(np.zeros((0, n), dtype=np.int32), empty, empty, empty,
                 empty if n < order else None) for n in range(2, order + 1)]
    n_words = sum(int(e[4]) for e in encoded)
    n_oov = sum(int(e[1]) for e in encoded)
    c = count_ngrams(Corpus(tok, off, Vocabulary(vocab_words, has_unk), n_words, n_oov), order,
                     first_words=(lo, hi), positions=True)
    del tok, off
    rows, _ = rows_by_order(c.word, c.prefix)
    out = []
    for n in range(2, order + 1):
        prefix = c.prefix[n - 1] - np.int32(lo) if n == 2 else c.prefix[n - 1]
        out.append((rows[n - 2], c.count[n - 1], prefix, c.position[n - 1], c.ends[n - 1]))
        c.suffix[n - 1] = None  # not read: the suffixes live in other partitions
    return out


def merge_pieces(*pieces):
    """Sum the counts of equal n-grams over the shards' pieces of one order of one partition.

    pieces: (rows int32[m, n], counts int64[m]) per shard (``count_shard``'s
    ``parts[p][n - 2]``), each sorted and distinct. Returns (rows, counts int64), sorted
    lexicographically and distinct: the pieces laid end to end, then merged two by two
    (``_merge_kernels.merge_runs``) between two arrays of numpy's (which asks the kernel
    for huge pages for large ones). A merge that made each round's arrays in numba
    faulted some 12 fresh arrays of the whole size in, 4 KiB at a time: at 50M words
    with ``--memory 1G``, a third of the run's page faults."""
    from . import _merge_kernels as M

    if len(pieces) == 1:
        rows, cnt = pieces[0]
        return np.ascontiguousarray(rows, dtype=np.int32), np.ascontiguousarray(cnt, dtype=np.int64)
    width = pieces[0][0].shape[1]
    rows = np.concatenate([np.asarray(r, dtype=np.int32).reshape(-1, width) for r, _ in pieces])
    cnt = np.concatenate([np.asarray(c, dtype=np.int64) for _, c in pieces])
    starts = np.zeros(len(pieces) + 1, dtype=np.int64)
    np.cumsum([len(c) for _, c in pieces], out=starts[1:])
    rows2, cnt2 = np.empty_like(rows), np.empty_like(cnt)
    which, k = M.merge_runs(rows, cnt, starts, rows2, cnt2)
    rows, cnt = (rows, cnt) if which == 0 else (rows2, cnt2)
    del rows2, cnt2
    if k == len(cnt):
        return rows, cnt
    return rows[:k].copy(), cnt[:k].copy()


def _partition_bounds(unigrams: np.ndarray, P: int) -> np.ndarray:
    """int64[P+1] first-word id ranges of roughly equal token mass."""
    V = len(unigrams)
    cum = np.cumsum(unigrams)
    total = int(cum[-1]) if V else 0
    inner = np.searchsorted(cum, [k * total / P for k in range(1, P)], side="left") + 1
    return np.concatenate([[0], np.minimum(inner, V), [V]]).astype(np.int64)


def _trie_ids(rows: np.ndarray, keys: list[np.ndarray], V: int) -> np.ndarray:
    """Trie ids of the k-grams ``rows`` int32[m, k] (all present): lexicographic ranks,
    found order by order in ``keys[j]`` = prefix * V + word of order j+1 (sorted)."""
    ids = rows[:, 0].astype(np.int64)
    for j in range(1, rows.shape[1]):
        ids = np.searchsorted(keys[j], ids * V + rows[:, j])
    return ids.astype(np.int32)


def build_counts(order: int, unigrams: np.ndarray, merged: list[list[tuple[np.ndarray, np.ndarray]]]) -> NgramCounts:
    """``NgramCounts`` (the trie of ``count_ngrams``) from the unigram counts and the
    sorted, merged n-grams of each order (``merged[n-2]`` = (rows, counts) for order n)."""
    V = len(unigrams)
    c = NgramCounts(order, V)
    c.word.append(np.arange(V, dtype=np.int32))
    c.prefix.append(np.zeros(V, dtype=np.int32))
    c.suffix.append(np.zeros(V, dtype=np.int32))
    c.count.append(check_int32_counts(unigrams, 1))
    keys: list[np.ndarray] = [np.arange(V, dtype=np.int64)]
    for n in range(2, order + 1):
        rows, cnt = merged[n - 2]
        prefix = _trie_ids(rows[:, :-1], keys, V)
        suffix = _trie_ids(rows[:, 1:], keys, V)
        word = np.ascontiguousarray(rows[:, -1], dtype=np.int32)
        c.word.append(word)
        c.prefix.append(prefix)
        c.suffix.append(suffix)
        c.count.append(check_int32_counts(cnt, n))
        keys.append(prefix.astype(np.int64) * V + word)
    return c


def count_text_ngrams(client, path: str, order: int, vocab_path=None, unk: bool = False,
                      n_shards: int | None = None, n_partitions: int | None = None):
    """Count the n-grams of orders 1..order of the text file ``path`` on the Dask cluster
    of ``client``: returns (NgramCounts, Vocabulary, TextStats), equal to
    ``count_ngrams(load_training_corpus(path, vocab_path, unk=unk), order)``.

    n_shards: byte ranges (default: 4 per worker, at least one per 16 MB);
    n_partitions: reduce tasks of the shuffle (default: 2 per worker), or a function of
    the number of words giving it."""
    vocab, stats, bounds, counted, tag = count_on_cluster(client, path, order, vocab_path, unk, n_shards,
                                                          n_partitions)
    unigrams, n_oov, merged = shuffle_merge(client, counted, order, len(vocab), len(bounds) - 1, f"kn-{tag}")
    stats.n_oov = n_oov
    return build_counts(order, unigrams, merged), vocab, stats


def estimate_text_kn(client, path: str, order: int, vocab_path=None, unk: bool = False, modified: bool = True,
                     min_counts: list[int] | None = None, interpolate: bool = True, n_shards: int | None = None,
                     n_partitions: int | None = None, progress=None, whole: bool | None = None):
    """Interpolated KN on the text file ``path``, counted and estimated on the Dask cluster
    of ``client`` (``distributed.kn_estimate.ClusterKN``: the n-grams stay on the workers until
    written). Returns (ClusterKN, TextStats); the model equals the single-process one.
    progress: None, or a function called with a line at the end of each stage.

    whole: count each partition's n-grams over the whole text (``count_partition``: one
    task a partition, no merge) rather than every shard's n-grams of all partitions, then
    merged (``count_shard``, ``shuffle_partitions``: each task's memory bounded by its
    shard's, not by the text's); None: whole where every worker may hold
    ``WHOLE_BYTES_PER_TOKEN`` bytes a token of the text (``whole_fits``).
    n_partitions: default one a worker counted whole, two a worker shard by shard, or as
    many as ``budget.plan_memory`` gives for ``LIMIT_SHARE`` of the workers' memory limit
    (``_limit_plan``, which also sets the shards when neither is given)."""
    from .kn_estimate import ClusterKN

    plan = _limit_plan(client, path, order) if n_shards is None and n_partitions is None else None
    if plan is not None:  # shards no larger than a worker's limit allows, if they come to be counted
        n_shards = plan.n_shards

    def fits(n_tokens):
        return whole_fits(client, n_tokens) if whole is None else whole

    def partitions(n_words, n_tokens, n_workers):
        # one a worker when each is counted over the whole text: every partition costs a
        # pass over the text, and the links between partitions grow as their square
        if fits(n_tokens):
            return n_workers
        return max(2 * n_workers, plan.partitions(n_words)) if plan is not None else 2 * n_workers

    vocab, stats, bounds, shards, tag = vocabulary_on_cluster(client, path, vocab_path, unk, n_shards, n_partitions,
                                                              default_partitions=partitions)
    whole = fits(stats.n_words + 2 * stats.n_sentences)
    if progress is not None:
        progress(f"{stats.n_sentences} sentences, {stats.n_words} words in {stats.n_shards} shards; "
                 f"vocabulary {len(vocab)}; counting " + ("each partition over the whole text" if whole else
                                                          "each shard, then merging"))
    if whole:
        unigram_f, merged_f = partition_counts(client, shards, vocab, order, bounds, f"kn-{tag}")
    else:
        counted = count_shards(client, shards, vocab, order, bounds, tag)
        unigram_f, merged_f = shuffle_partitions(client, counted, len(bounds) - 1, f"kn-{tag}", order)
    unigrams = np.zeros(len(vocab), dtype=np.int64)
    for u, o in client.gather(unigram_f):
        unigrams += u
        stats.n_oov += o
    del unigram_f
    kn = ClusterKN(client, unigrams, merged_f, bounds, order, vocab, modified, min_counts, interpolate, progress,
                   linked=whole)
    return kn, stats


#: What a worker may hold at its peak when each partition is counted over the whole
#: text (``count_partition``: the text, its ids ending at each position for every order
#: below the top, the partition's trie, then the estimate), in bytes a token of the
#: text, with room below Dask's pause at 80 % of the limit: ``whole_fits`` (at 50M
#: words on 2 workers, about 68 bytes a token were measured).
WHOLE_BYTES_PER_TOKEN = 96


#: the share of a worker's memory limit that its tasks may plan on (``_limit_plan``): Dask
#: spills a worker's results to disk past 60 % of it and pauses the worker at 80 %
LIMIT_SHARE = 0.6


def _worker_limit(client) -> int | None:
    """The smallest memory limit of the workers of ``client``; None if one has none."""
    limits = [info.get("memory_limit") for info in client.scheduler_info().get("workers", {}).values()]
    return min(limits) if limits and all(limits) else None


def _limit_plan(client, path: str, order: int):
    """``budget.plan_memory`` of ``LIMIT_SHARE`` of the workers' smallest memory limit (None
    without one, or for an input not cut into shards): the shards and partitions that
    keep each task of the shard path within it, as ``--memory`` sets them (the workers'
    limits alone once let a merge task hold every shard's piece of a partition, and
    Dask killed its workers in turn: 10M words under 435 MiB)."""
    from .budget import BudgetError, plan_memory

    limit = _worker_limit(client)
    if limit is None:
        return None
    try:
        if split_text(str(path), 2) == [(0, -1)]:
            return None
        plan = plan_memory(int(limit * LIMIT_SHARE), os.path.getsize(path), order)
    except (OSError, BudgetError):  # the reading says what is wrong with the file; a tiny limit: the defaults
        return None
    # at least the default shards: the reading's tasks; the partitions count the merge's pieces
    plan.n_shards = max(plan.n_shards, default_shards(os.path.getsize(path), client))
    return plan


def default_shards(size: int, client) -> int:
    """Byte ranges a text of ``size`` bytes is read in: 4 a worker, at least one a 16 MB."""
    return max(4 * max(1, len(client.scheduler_info().get("workers", {}))), -(-size // (16 << 20)))


def whole_fits(client, n_tokens: int) -> bool:
    """Whether every worker of ``client`` may hold ``WHOLE_BYTES_PER_TOKEN`` bytes for
    each of the text's ``n_tokens``: a Dask worker says its memory limit (a local
    cluster's is the machine's memory shared out, or ``--memory-limit``); one without a
    limit, whose memory is not known here, and a client whose workers say none (the
    ``--memory`` path's ``SpillClient``) keep each task's memory bounded by its shard's."""
    workers = client.scheduler_info().get("workers", {})
    if not workers:
        return False
    for info in workers.values():
        limit = info.get("memory_limit")
        if not limit or limit < WHOLE_BYTES_PER_TOKEN * n_tokens:
            return False
    return True


def partition_counts(client, shards: list, vocab: Vocabulary, order: int, bounds: np.ndarray, prefix: str):
    """Each partition's n-grams counted over the whole text by a task of its own
    (``count_partition``), from the shards encoded under the vocabulary (``shards`` is
    emptied). Returns futures as ``shuffle_partitions``: per shard (unigram counts, OOV
    count), and per partition a list, per order 2..N, of ``count_partition``'s tuple."""
    encoded = [client.submit(encode_shard, s, vocab.words, vocab.has_unk, key=f"{prefix}-encode-{i}")
               for i, s in enumerate(shards)]
    shards.clear()
    unigram_f = [client.submit(_unigrams_of, e, key=f"{prefix}-uni-{i}") for i, e in enumerate(encoded)]
    # every task reads every shard: left to itself, the scheduler would put them all on the
    # worker holding the most shard bytes, one after the other; dealt out, the workers take
    # turns (a worker lost runs its own elsewhere)
    workers = sorted(client.scheduler_info().get("workers", {}))
    merged_f = []
    for p in range(len(bounds) - 1):
        counted = client.submit(count_partition, int(bounds[p]), int(bounds[p + 1]), order, vocab.words,
                                vocab.has_unk, *encoded, key=f"{prefix}-countp-{p}",
                                workers=[workers[p % len(workers)]] if workers else None, allow_other_workers=True)
        merged_f.append([client.submit(_item_of, counted, j, key=f"{prefix}-order-{p}-{j}")
                         for j in range(order - 1)])
    return unigram_f, merged_f


def count_on_cluster(client, path: str, order: int, vocab_path=None, unk: bool = False,
                     n_shards: int | None = None, n_partitions: int | None = None, min_count: int = 1,
                     count=count_shard, count_args: tuple = (), prefix: str = "kn"):
    """Stages 1 and 2: the vocabulary (``vocabulary_on_cluster``) and the shards counted by
    the workers with ``count(shard, words, has_unk, order, bounds, *count_args)``
    (``count_shard`` or a filter of it). Returns (vocabulary, TextStats (n_oov still 0),
    bounds of the first-word partitions, futures of ``count``, a tag for task keys)."""
    vocab, stats, bounds, shards, tag = vocabulary_on_cluster(client, path, vocab_path, unk, n_shards, n_partitions,
                                                              min_count, prefix)
    return vocab, stats, bounds, count_shards(client, shards, vocab, order, bounds, tag, count, count_args,
                                              prefix), tag


def count_shards(client, shards: list, vocab: Vocabulary, order: int, bounds: np.ndarray, tag: str,
                 count=count_shard, count_args: tuple = (), prefix: str = "kn") -> list:
    """Stage 2: futures of ``count(shard, words, has_unk, order, bounds, *count_args)``
    for each shard (``shards`` is emptied: the encoded shards are freed once counted)."""
    counted = [client.submit(count, s, vocab.words, vocab.has_unk, order, bounds, *count_args,
                             key=f"{prefix}-count-{tag}-{i}") for i, s in enumerate(shards)]
    shards.clear()
    return counted


def vocabulary_on_cluster(client, path: str, vocab_path=None, unk: bool = False, n_shards: int | None = None,
                          n_partitions: int | None = None, min_count: int = 1, prefix: str = "kn",
                          default_partitions=None):
    """Stage 1: the shards read by the workers and the vocabulary (on the driver, from
    the shards' word counts, as ``load_training_corpus`` with ``min_count``). Returns
    (vocabulary, TextStats (n_oov still 0), bounds of the first-word partitions, futures
    of the shards (``read_shard``'s), a tag for task keys, which start with ``prefix``).
    Partitions: ``n_partitions`` (or a function of the number of words giving it), else
    ``default_partitions(n_words, n_tokens, n_workers)``, else two a worker."""
    n_workers = max(1, len(client.scheduler_info().get("workers", {})))
    path = str(path)
    if input_name(path) == "<stdin>":
        raise CorpusError("the workers read the training text from a file: give its path, not - (standard input)")
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise CorpusError(open_error_message(path, e)) from None
    if n_shards is None:
        n_shards = default_shards(size, client)
    tag = uuid.uuid4().hex[:8]
    ranges = split_text(path, n_shards)
    shards = [client.submit(read_shard, path, a, b, key=f"{prefix}-read-{tag}-{i}")
              for i, (a, b) in enumerate(ranges)]
    stats = client.gather([client.submit(shard_word_counts, s, key=f"{prefix}-words-{tag}-{i}")
                           for i, s in enumerate(shards)])
    n_sentences = sum(s[1] for s in stats)
    n_words = sum(s[2] for s in stats)
    P = (n_partitions(n_words) if callable(n_partitions) else n_partitions) or (
        default_partitions(n_words, n_words + 2 * n_sentences, n_workers) if default_partitions else 2 * n_workers)
    name = input_name(path)
    if n_sentences == 0:
        raise CorpusError(f"{name}: has no sentence; expected one sentence per line")
    counter: Counter = Counter()
    for wc, _, _ in stats:
        counter.update(wc)
    if vocab_path is not None:
        vocab = Vocabulary.from_file(vocab_path, unk=unk)
    else:
        try:
            vocab = Vocabulary.from_counts(counter, min_count=min_count, unk=unk)
        except CorpusError as e:
            raise CorpusError(f"{name}: {e}") from None
    del stats
    V = len(vocab)
    # token mass per first word, for balanced partitions (<s> starts every sentence)
    mass = np.zeros(V, dtype=np.int64)
    for w, cnt in counter.items():
        mass[vocab.index.get(w, UNK_ID)] += cnt
    mass[BOS_ID] = n_sentences
    del counter
    bounds = _partition_bounds(mass, P)
    return vocab, TextStats(n_sentences, n_words, 0, len(ranges)), bounds, shards, tag


def shuffle_partitions(client, counted: list, P: int, prefix: str, order: int):
    """The keyed shuffle of shards counted by ``count_shard`` (futures, ``counted``, which
    is emptied so that the shards are freed once merged): order n of partition p of every
    shard goes to one task that sums equal n-grams. Returns futures: per shard (unigram
    counts, OOV count), and per partition a list, per order 2..N, of the merged n-grams
    (``merge_pieces``): one order at a time, so that a task holds one order's pieces."""
    unigram_f = [client.submit(_unigrams_of, c, key=f"{prefix}-uni-{i}") for i, c in enumerate(counted)]
    merged_f = []
    for p in range(P):
        orders = []
        for j in range(order - 1):
            pieces = [client.submit(_part_of, c, p, j, key=f"{prefix}-part-{i}-{p}-{j}")
                      for i, c in enumerate(counted)]
            orders.append(client.submit(merge_pieces, *pieces, key=f"{prefix}-merge-{p}-{j}"))
        merged_f.append(orders)
    counted.clear()
    return unigram_f, merged_f


def shuffle_merge(client, counted: list, order: int, V: int, P: int, prefix: str):
    """``shuffle_partitions``, gathered: returns (unigrams int64[V], OOV count, merged):
    merged[j] = (rows, counts) of the (j+2)-grams, sorted, since the partitions are
    first-word ranges laid end to end; the driver holds one partition at a time."""
    from distributed import wait

    unigram_f, merged_f = shuffle_partitions(client, counted, P, prefix, order)
    wait([f for orders in merged_f for f in orders] + unigram_f)
    unigrams = np.zeros(V, dtype=np.int64)
    n_oov = 0
    for u, o in client.gather(unigram_f):
        unigrams += u
        n_oov += o
    parts = []
    for orders in merged_f:
        parts.append([f.result() for f in orders])
        for f in orders:
            f.release()
    merged = []
    for j in range(order - 1):
        merged.append((np.concatenate([pt[j][0] for pt in parts]).reshape(-1, j + 2),
                       np.concatenate([pt[j][1] for pt in parts])))
        for pt in parts:
            pt[j] = None
    return unigrams, n_oov, merged


@projection
def _unigrams_of(counted):
    return counted[0], counted[1]


@projection
def _part_of(counted, p: int, j: int):
    return counted[2][p][j]


@projection
def _item_of(value, j: int):
    return value[j]
