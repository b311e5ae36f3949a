"""Kneser-Ney counting on a Dask cluster (``suffixlm kn --workers``, ``KneserNeyLM.fit_text(client=)``)
and the corpus sampler (``suffixlm.sample``, ``scripts/sample_corpus.py``)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from suffixlm.corpora import sample_path

from suffixlm.backoff.arpa import BackoffLM as BackoffLMReader
from suffixlm.cli import main
from suffixlm.corpus import EOS_ID, load_training_corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.distributed.kn_counts import split_text
from suffixlm.ngrams import count_ngrams
from suffixlm.sample import BackoffSampler

from ..dask_util import kill_once_plugin

TINY = str(sample_path("tiny_lm.train.txt"))
# the tiny corpus is too small for modified-KN discounts at some orders: the fallback warns
pytestmark = pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")
ROOT = Path(__file__).resolve().parents[2]


def _arpa(lm: KneserNeyLM, path: Path) -> bytes:
    lm.write_arpa(path)
    return path.read_bytes()


@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from suffixlm.distributed import client_from_options

    with client_from_options(workers=2) as c:
        yield c


# ---------------------------------------------------------------- sharding

def test_split_text_cuts_at_line_ends(tmp_path):
    p = tmp_path / "t.txt"
    data = b"a b c\n\nd e\r\nf\n  g h  \ni"  # no final newline, a blank line, a CRLF
    p.write_bytes(data)
    for k in range(1, 12):
        ranges = split_text(str(p), k)
        assert ranges[0][0] == 0 and ranges[-1][1] == len(data)
        assert all(a < b for a, b in ranges) and all(r[1] == s[0] for r, s in zip(ranges, ranges[1:]))
        assert all(data[a - 1:a] == b"\n" for a, _ in ranges[1:])


def test_merge_partition_and_find_rows_brute_force():
    """The shuffle's reducer (sorted pieces merged two by two, counts of equal rows summed)
    and the joins (galloping search, hash table) against a dictionary, on random rows with
    many ties."""
    from collections import Counter

    from suffixlm.distributed._merge_kernels import find_rows, find_rows_hashed, row_slots
    from suffixlm.distributed.kn_counts import merge_pieces

    rng = np.random.default_rng(0)
    for n_pieces in (1, 2, 3, 5, 8, 35):
        pieces, total = [], [Counter(), Counter()]
        for _ in range(n_pieces):
            part = []
            for j, n in enumerate((2, 3)):
                size = int(rng.integers(0, 40))
                rows = np.unique(rng.integers(0, 4, size=(size, n)).astype(np.int32), axis=0)
                cnt = rng.integers(1, 2**33, size=len(rows)).astype(np.int64)  # sums beyond 32 bits
                total[j].update({tuple(r): int(c) for r, c in zip(rows.tolist(), cnt)})
                part.append((rows, cnt))
            pieces.append(part)
        for j in range(2):
            rows, cnt = merge_pieces(*[pc[j] for pc in pieces])
            assert [tuple(r) for r in rows.tolist()] == sorted(total[j])
            assert cnt.tolist() == [total[j][k] for k in sorted(total[j])]
            queries = rng.integers(0, 5, size=(60, rows.shape[1])).astype(np.int32)
            where = {tuple(r): i for i, r in enumerate(rows.tolist())}
            runs = np.concatenate([np.unique(queries[:25], axis=0), np.unique(queries[25:], axis=0), rows, rows])
            for qs in (queries, runs, queries[:3], queries[:0]):  # random, sorted runs, fewer than the prefetch
                want = [where.get(tuple(q), -1) for q in qs.tolist()]
                assert find_rows(rows, qs).tolist() == want
                assert find_rows_hashed(rows, row_slots(rows), qs).tolist() == want


def test_gather_and_group_by_range_against_numpy():
    """The pulls' gather (of the packed (found, acc) pairs) is numpy's fancy indexing, and
    refuses an index outside the array; the suffix split's counting sort is numpy's stable
    argsort of the range numbers, and refuses a key outside the ranges."""
    from suffixlm.distributed._merge_kernels import gather, group_by_range
    from suffixlm.distributed.kn_estimate import _pack, _take_found_acc

    rng = np.random.default_rng(2)
    for n, m in ((0, 5), (3, 5), (200, 50), (5000, 7)):
        a = rng.standard_normal(m).astype(np.float32)
        b = rng.standard_normal(m).astype(np.float32)
        idx = rng.integers(0, m, size=n).astype(np.int32)
        assert np.array_equal(gather(a, idx), a[idx])
        pairs = _take_found_acc(_pack(a, b), idx)
        assert pairs.dtype == np.float32 and pairs.shape == (n, 2)
        assert np.array_equal(pairs[:, 0], a[idx]) and np.array_equal(pairs[:, 1], b[idx])
        bounds = np.array([0, 2, 2, 9, 40], dtype=np.int64)
        keys = rng.integers(0, 40, size=n).astype(np.int32)
        order, start = group_by_range(keys, bounds)
        q = np.searchsorted(bounds, keys, side="right") - 1
        want = np.argsort(q, kind="stable")
        assert order.tolist() == want.tolist()
        assert start.tolist() == np.searchsorted(q[want], np.arange(len(bounds))).tolist()
    for bad in (-1, m):
        with pytest.raises(ValueError, match="outside"):
            gather(a, np.array([0, bad], dtype=np.int32))
    with pytest.raises(ValueError, match="differ in length"):
        _pack(a, b[:-1])
    with pytest.raises(ValueError, match="outside"):
        group_by_range(np.array([1, 40], dtype=np.int32), bounds)


def test_ids_at_against_numpy():
    """The links' read of the ids ending at positions is numpy's fancy indexing, and
    refuses a position outside the text or one where no n-gram of the level ends."""
    from suffixlm.distributed._merge_kernels import ids_at

    rng = np.random.default_rng(3)
    for n, T in ((0, 5), (3, 5), (200, 50), (5000, 7)):
        ends = rng.integers(0, 1000, size=T).astype(np.int32)
        pos = rng.integers(0, T, size=n).astype(np.int32)
        got = ids_at(ends, pos)
        assert got.dtype == np.int32 and np.array_equal(got, ends[pos])
    for bad in (-1, T):
        with pytest.raises(ValueError, match="outside the text"):
            ids_at(ends, np.array([0, bad], dtype=np.int32))
    ends[2] = -1
    with pytest.raises(ValueError, match="no n-gram"):
        ids_at(ends, np.array([0, 2], dtype=np.int32))


def test_scatter_pairs_against_numpy():
    """The suffix values' assembly (both arrays in one pass) is numpy's assignment through
    the partitions' positions, and refuses a position outside the outputs or pieces of
    another length."""
    from suffixlm.distributed._merge_kernels import group_by_range, scatter_pairs

    rng = np.random.default_rng(4)
    for m in (0, 1, 7, 300, 5000):
        bounds = np.array([0, 3, 3, 10], dtype=np.int64)
        order, start = group_by_range(rng.integers(0, 10, size=m).astype(np.int32), bounds)
        sels = [order[start[q]:start[q + 1]] for q in range(3)]  # a partition of 0 .. m - 1
        pieces = [rng.standard_normal((len(s), 2)).astype(np.float32) for s in sels]
        fa, fb = np.full(m, np.nan, dtype=np.float32), np.full(m, np.nan, dtype=np.float32)
        wa, wb = fa.copy(), fb.copy()
        for sel, pairs in zip(sels, pieces):
            scatter_pairs(fa, fb, sel, pairs)
            wa[sel], wb[sel] = pairs[:, 0], pairs[:, 1]
        assert np.array_equal(fa, wa) and np.array_equal(fb, wb) and not np.isnan(fa).any()
    out_a, out_b = np.zeros(4, dtype=np.float32), np.zeros(4, dtype=np.float32)
    two = np.ones((2, 2), dtype=np.float32)
    for bad in (-1, 4):
        with pytest.raises(ValueError, match="outside the outputs"):
            scatter_pairs(out_a, out_b, np.array([0, bad], dtype=np.int32), two)
    with pytest.raises(ValueError, match="differ in length"):
        scatter_pairs(out_a, out_b, np.array([0, 1, 2], dtype=np.int32), two)


def test_count_into_is_bincount():
    """The KN counts' in-place tally against numpy's bincount, and its refusal of an index
    outside the counts (nothing written past them)."""
    from suffixlm.distributed._merge_kernels import count_into

    rng = np.random.default_rng(1)
    for dtype in (np.int32, np.int64):
        counts = np.zeros(50, dtype=np.int32)
        want = np.zeros(50, dtype=np.int64)
        for size in (0, 1, 200):
            idx = rng.integers(0, 50, size=size).astype(dtype)
            count_into(counts, idx)
            want += np.bincount(idx, minlength=50)
        assert counts.tolist() == want.tolist()
    for bad in (-1, 50):
        with pytest.raises(ValueError):
            count_into(np.zeros(50, dtype=np.int32), np.array([3, bad]))


def test_counts_equal_single_process(client, sampled_corpus):
    from suffixlm.distributed.kn_counts import count_text_ngrams

    ref = count_ngrams(load_training_corpus(sampled_corpus, unk=True), 4)
    got, vocab, stats = count_text_ngrams(client, sampled_corpus, 4, unk=True, n_shards=7, n_partitions=3)
    assert stats.n_shards == 7
    for name in ("word", "prefix", "suffix", "count"):
        for n in range(4):
            np.testing.assert_array_equal(getattr(got, name)[n], getattr(ref, name)[n], err_msg=f"{name} order {n+1}")


def test_count_partition_equals_the_merged_shards(sampled_corpus):
    """``count_partition`` (one partition's n-grams over the whole text, ``count_ngrams``
    with ``first_words``) against the single-process count cut by first word and against
    the shards counted then merged (``count_shard``, ``merge_pieces``); its prefixes index
    the partition's level below (what ``find_rows`` finds there), its positions are where
    the n-grams end in the text."""
    from suffixlm.distributed import _merge_kernels as M
    from suffixlm.distributed.kn_counts import (_partition_bounds, count_partition, count_shard, encode_shard,
                                                merge_pieces, read_shard, split_text)

    corpus = load_training_corpus(sampled_corpus, unk=True)
    words = corpus.vocab.words
    ref = count_ngrams(corpus, 4)
    bounds = _partition_bounds(np.bincount(corpus.tokens, minlength=len(words)), 5)
    shards = [read_shard(str(sampled_corpus), a, b) for a, b in split_text(str(sampled_corpus), 4)]
    encoded = [encode_shard(sh, words, True) for sh in shards]
    counted = [count_shard(sh, words, True, 4, bounds) for sh in shards]
    np.testing.assert_array_equal(sum(e[0] for e in encoded), ref.count[0])
    text = np.concatenate([e[2] for e in encoded])
    for p in range(5):
        got = count_partition(int(bounds[p]), int(bounds[p + 1]), 4, words, True, *encoded)
        for n in range(2, 5):
            rows, cnt, prefix, position, ends = got[n - 2]
            # an occurrence of each n-gram ends at its position; below the top order, the
            # n-grams ending at each position, as many as counted
            np.testing.assert_array_equal(text[position[:, None] + np.arange(1 - n, 1)], rows)
            if n < 4:
                assert len(ends) == len(text)
                np.testing.assert_array_equal(ends[position], np.arange(len(rows)))
                np.testing.assert_array_equal(np.bincount(ends[ends >= 0], minlength=len(rows)), cnt)
            else:
                assert ends is None
            full = ref.rows(n)
            sel = (full[:, 0] >= bounds[p]) & (full[:, 0] < bounds[p + 1])
            np.testing.assert_array_equal(rows, full[sel])
            np.testing.assert_array_equal(cnt, ref.count[n - 1][sel])
            m_rows, m_cnt = merge_pieces(*[c[2][p][n - 2] for c in counted])
            np.testing.assert_array_equal(rows, m_rows)
            np.testing.assert_array_equal(cnt, m_cnt)
            if n == 2:
                np.testing.assert_array_equal(prefix, rows[:, 0] - bounds[p])
            else:
                want = M.find_rows(got[n - 3][0], np.ascontiguousarray(rows[:, :-1]))
                np.testing.assert_array_equal(prefix, want)
    # no shard: nothing counted; a range outside the vocabulary: refused
    assert all(len(part[0]) == 0 for part in count_partition(0, len(words), 3, words, True))
    with pytest.raises(ValueError, match="first_words"):
        count_ngrams(corpus, 3, first_words=(5, len(words) + 1))
    with pytest.raises(ValueError, match="first_words"):
        count_ngrams(corpus, 3, first_words=(9, 4))


def test_whole_fits_only_where_every_worker_says_its_limit_holds_the_text():
    from suffixlm.distributed.kn_counts import WHOLE_BYTES_PER_TOKEN, whole_fits

    class Info:
        def __init__(self, workers):
            self.workers = workers

        def scheduler_info(self):
            return {"workers": self.workers}

    need = WHOLE_BYTES_PER_TOKEN * 1000
    assert whole_fits(Info({"a": {"memory_limit": need}, "b": {"memory_limit": 2 * need}}), 1000)
    assert not whole_fits(Info({"a": {"memory_limit": need}, "b": {"memory_limit": need - 1}}), 1000)
    assert not whole_fits(Info({"a": {"memory_limit": 0}}), 1000)  # no limit: its memory is not known
    assert not whole_fits(Info({"a": {"memory_limit": None}}), 1000)
    assert not whole_fits(Info({"this process": {}}), 1000)  # the --memory path's SpillClient
    assert not whole_fits(Info({}), 1000)


def test_limit_plan_bounds_the_shard_path_by_the_workers_limit(sampled_corpus, tmp_path):
    """Workers with a memory limit and no shards or partitions given: the shards and
    partitions ``--memory`` would take for a share of the smallest limit (at least the
    default shards); none without a limit or for gzip text, which is not cut."""
    import gzip

    from suffixlm.distributed.budget import plan_memory
    from suffixlm.distributed.kn_counts import LIMIT_SHARE, _limit_plan

    class Info:
        def __init__(self, *limits):
            self.workers = {f"w{i}": {"memory_limit": m} for i, m in enumerate(limits)}

        def scheduler_info(self):
            return {"workers": self.workers}

    sampled_corpus = Path(sampled_corpus)
    size = sampled_corpus.stat().st_size
    small = 40 * size  # small enough for several shards
    plan = _limit_plan(Info(3 * small, small), sampled_corpus, 5)
    want = plan_memory(int(small * LIMIT_SHARE), size, 5)
    assert plan.n_shards == max(want.n_shards, 2 * 4, -(-size // (16 << 20))) > 1
    assert plan.partitions(10**6) > want.partitions(10**6) / 2 and plan.task == want.task
    assert _limit_plan(Info(small, 0), sampled_corpus, 5) is None  # a worker without a limit
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(sampled_corpus.read_bytes()))
    assert _limit_plan(Info(small, small), gz, 5) is None
    assert _limit_plan(Info(small, small), tmp_path / "missing.txt", 5) is None  # the reading says why


# ---------------------------------------------------------------- byte-identical ARPA

@pytest.mark.parametrize("order", [1, 2, 3, 4, 5])
@pytest.mark.parametrize("modified", [True, False])
@pytest.mark.parametrize("min_counts", [None, [1]])
def test_api_arpa_identical(client, sampled_corpus, tmp_path, order, modified, min_counts):
    for path in (TINY, sampled_corpus):
        ref = KneserNeyLM(order, modified=modified, min_counts=min_counts).fit_text(path, unk=True)
        got = KneserNeyLM(order, modified=modified, min_counts=min_counts).fit_text(path, unk=True, client=client,
                                                                                      n_shards=5)
        assert _arpa(got, tmp_path / "b.arpa") == _arpa(ref, tmp_path / "a.arpa")
        assert (got.n_sentences_, got.n_words_) == (ref.n_sentences_, ref.n_words_)


@pytest.mark.parametrize("args", [["--order", "5"], ["--order", "3", "--original", "--min-count", "none"],
                                  ["--order", "2", "--no-unk"], ["--order", "4", "--min-count", "1,1,2"],
                                  ["--order", "3", "--prune", "1e-6"]])
def test_cli_workers_arpa_identical(tmp_path, sampled_corpus, args):
    pytest.importorskip("distributed")
    r = CliRunner()
    a, b = tmp_path / "a.arpa", tmp_path / "b.arpa"
    res = r.invoke(main, ["kn", sampled_corpus, "-o", str(a), "-q", *args])
    assert res.exit_code == 0, res.output
    res = r.invoke(main, ["kn", sampled_corpus, "-o", str(b), "--json", "--workers", "2", "--memory-limit", "1GB",
                          *args])
    assert res.exit_code == 0, res.output
    assert a.read_bytes() == b.read_bytes()
    summary = json.loads(res.output[res.output.index("{"):])
    if "--prune" not in args:  # progress on stderr, stage by stage
        assert "vocabulary" in res.output and "order 2: probabilities and back-off weights" in res.output
    ref = BackoffLMReader.read_arpa(a)
    assert summary["ngrams"] == ref.counts and summary["parameters"] == ref.n_parameters


@pytest.mark.parametrize("how", ["option", "environment"])
def test_cli_scheduler_existing_cluster(client, tmp_path, sampled_corpus, how, monkeypatch):
    """``--scheduler ADDRESS`` (or $DASK_SCHEDULER_ADDRESS) runs on a cluster that is
    already up, gives the single-process ARPA, and leaves that cluster running."""
    address = client.scheduler.address
    r = CliRunner()
    a, b = tmp_path / "a.arpa", tmp_path / "b.arpa"
    res = r.invoke(main, ["kn", sampled_corpus, "-o", str(a), "-q", "--order", "4"])
    assert res.exit_code == 0, res.output
    if how == "option":
        extra = ["--scheduler", address]
    else:
        extra = []
        monkeypatch.setenv("DASK_SCHEDULER_ADDRESS", address)
    res = r.invoke(main, ["kn", sampled_corpus, "-o", str(b), "-q", "--order", "4", *extra])
    assert res.exit_code == 0, res.output
    assert a.read_bytes() == b.read_bytes()
    assert client.submit(sum, [1, 2]).result() == 3  # the cluster was not shut down
    assert len(client.scheduler_info()["workers"]) == 2


@pytest.mark.slow  # the client waits its 30 s connect timeout
def test_cli_scheduler_unreachable_is_one_line(tmp_path, sampled_corpus):
    pytest.importorskip("distributed")
    res = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(tmp_path / "a.arpa"), "-q",
                                    "--scheduler", "tcp://127.0.0.1:9"])
    assert res.exit_code != 0
    assert not (tmp_path / "a.arpa").exists()
    assert "Traceback" not in res.output and "tcp://127.0.0.1:9" in res.output, res.output


def test_vocab_file_and_gzip(client, tmp_path):
    import gzip

    vocab = tmp_path / "v.txt"
    words = load_training_corpus(TINY).vocab.words[3:]
    vocab.write_text("\n".join(words[: len(words) // 2]) + "\n")
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(Path(TINY).read_bytes()))
    for path, vp in ((TINY, vocab), (str(gz), None)):
        ref = KneserNeyLM(3, min_counts=[1]).fit_text(path, vp, unk=False)
        got = KneserNeyLM(3, min_counts=[1]).fit_text(path, vp, unk=False, client=client)
        assert _arpa(got, tmp_path / "b.arpa") == _arpa(ref, tmp_path / "a.arpa")
        assert got.n_oov_ == ref.n_oov_


@pytest.mark.parametrize("order", [3, 5])
def test_estimate_closed_vocabulary_fixups_and_partitions(client, sampled_corpus, tmp_path, order):
    """The KN steps on the workers (``distributed.kn_estimate``) against the single process where
    every cross-partition path is used: a closed vocabulary whose <unk> contexts get no
    probabilities, SRILM's default cut-offs (fix-ups of missing contexts at orders 3..N-1),
    back-off KN, and 1, 7 or 16 partitions (some of the 16 are empty: words heavier than a
    16th of the tokens), each counted over the whole text or shard by shard, then merged."""
    from suffixlm.distributed.kn_counts import estimate_text_kn

    vocab = tmp_path / "v.txt"
    words = load_training_corpus(sampled_corpus).vocab.words[3:]
    vocab.write_text("\n".join(words[:300]) + "\n")
    for interpolate in (True, False):
        ref = KneserNeyLM(order, interpolate=interpolate).fit_text(sampled_corpus, vocab, unk=False)
        if order == 5:
            assert sum(ref.info_["fixups"]) > 0  # the fix-up pass has work to do
        for n_partitions, whole in ([(1, True), (16, True), (16, False)] if order == 3 else [(7, True), (7, False)]):
            kn, stats = estimate_text_kn(client, sampled_corpus, order, vocab, unk=False, interpolate=interpolate,
                                         n_shards=3, n_partitions=n_partitions, whole=whole)
            out = tmp_path / "b.arpa"
            kn.write_arpa(out)
            assert out.read_bytes() == ref.model_.arpa_bytes(), (interpolate, n_partitions, whole)
            assert kn.info == ref.info_
            assert kn.counts == ref.model_.counts and kn.n_parameters == ref.model_.n_parameters
            assert stats.n_oov == ref.n_oov_ > 0
            if n_partitions == 16:
                assert np.any(np.diff(kn.bounds) == 0)


@pytest.mark.parametrize("whole", [True, False])
def test_worker_killed_mid_job(killable_client, sampled_corpus, tmp_path, whole):
    """A worker process dies as it starts counting a partition over the whole text (or a
    shard, where each shard is counted then merged): Dask reruns its tasks on the
    restarted worker and the model is unchanged."""
    from suffixlm.distributed.kn_counts import estimate_text_kn

    marker = tmp_path / "killed"
    client = killable_client

    ref = KneserNeyLM(4, min_counts=[1]).fit_text(sampled_corpus, unk=True)
    client.register_plugin(kill_once_plugin(marker, "-countp-" if whole else "kn-count-"))
    try:
        if whole:  # the path fit_text takes on a cluster that holds the text
            got = KneserNeyLM(4, min_counts=[1]).fit_text(sampled_corpus, unk=True, client=client, n_shards=6)
            got_bytes = _arpa(got, tmp_path / "b.arpa")
        else:
            kn, _ = estimate_text_kn(client, sampled_corpus, 4, unk=True, min_counts=[1], n_shards=6, whole=False)
            kn.write_arpa(tmp_path / "b.arpa")
            got_bytes = (tmp_path / "b.arpa").read_bytes()
    finally:
        client.unregister_worker_plugin("kill-once")
    assert marker.exists()  # a worker did die mid-job
    assert got_bytes == _arpa(ref, tmp_path / "a.arpa")


@pytest.mark.parametrize("stage", ["fwd-", "fix-", "node-"])
def test_worker_killed_mid_estimate(killable_client, sampled_corpus, tmp_path, stage):
    """A worker dies in the KN steps (first pass, fix-up pass, context nodes): the tasks
    whose results it held are recomputed from their lineage and the ARPA is unchanged."""
    marker = tmp_path / "killed"
    client = killable_client
    ref = KneserNeyLM(5).fit_text(sampled_corpus, unk=True)
    client.wait_for_workers(2, timeout=60)
    client.register_plugin(kill_once_plugin(marker, "kn-est-", stage))
    try:
        got = KneserNeyLM(5).fit_text(sampled_corpus, unk=True, client=client, n_shards=4)
    finally:
        client.unregister_worker_plugin("kill-once")
    assert marker.exists()
    assert _arpa(got, tmp_path / "b.arpa") == _arpa(ref, tmp_path / "a.arpa")


# ---------------------------------------------------------------- interface

def test_cli_workers_refuse_stdin(tmp_path):
    """The workers read the text themselves: standard input is refused in one line and
    nothing is written."""
    pytest.importorskip("distributed")
    out = tmp_path / "m.arpa"
    res = CliRunner().invoke(main, ["kn", "-", "-o", str(out), "--workers", "1"], input="a b c\n")
    assert res.exit_code != 0 and "standard input" in res.output and "Traceback" not in res.output, res.output
    assert not out.exists()

def test_workers_and_scheduler_conflict(tmp_path):
    res = CliRunner().invoke(main, ["kn", TINY, "-o", str(tmp_path / "m.arpa"), "--workers", "2",
                                    "--scheduler", "tcp://127.0.0.1:1"])
    assert res.exit_code != 0 and "not both" in res.output


def test_memory_limit_needs_workers(tmp_path):
    res = CliRunner().invoke(main, ["kn", TINY, "-o", str(tmp_path / "m.arpa"), "--memory-limit", "1GB"])
    assert res.exit_code != 0 and "--memory-limit needs --workers" in res.output


def test_missing_dask_is_one_line(tmp_path):
    """Without dask, --workers fails with the install hint (dask hidden from the import system)."""
    code = ("import sys; sys.modules['distributed'] = None\n"
            "from suffixlm.cli import main\n"
            f"main(['kn', {TINY!r}, '-o', {str(tmp_path / 'm.arpa')!r}, '--workers', '2'])")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode != 0
    assert "pip install 'suffixlm[dask]'" in r.stderr and "Traceback" not in r.stderr


def test_single_process_does_not_import_dask(tmp_path):
    code = ("import sys\nfrom suffixlm.cli import main\n"
            f"try:\n    main(['kn', {TINY!r}, '-o', {str(tmp_path / 'm.arpa')!r}, '-q'])\n"
            "except SystemExit:\n    pass\n"
            "print('distributed' in sys.modules, 'dask' in sys.modules)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.split() == ["False", "False"], r.stderr


# ---------------------------------------------------------------- sampler

@pytest.fixture(scope="module")
def tiny_model():
    return KneserNeyLM(3, min_counts=[1]).fit_text(TINY, unk=True).model_


def test_sampler_reproducible(tiny_model):
    s = BackoffSampler(tiny_model)
    a = "".join(s.sample_lines(5000, seed=1))
    b = "".join(s.sample_lines(5000, seed=1))
    c = "".join(s.sample_lines(5000, seed=2))
    assert a == b and a != c


def test_sampler_well_formed(tiny_model):
    s = BackoffSampler(tiny_model)
    toks = np.concatenate(list(s.sample_ids(20000, seed=0)))
    assert toks[-1] == EOS_ID and 0 not in toks  # whole sentences, never <s>
    ends = np.flatnonzero(toks == EOS_ID)
    assert np.all(np.diff(np.concatenate([[-1], ends])) >= 2)  # no empty sentence
    assert len(toks) - len(ends) >= 20000
    text = "".join(s.sample_lines(2000, seed=0))
    lines = text.split("\n")
    assert lines[-1] == "" and all(ln and ln == ln.strip() and "  " not in ln for ln in lines[:-1])
    assert all(w in tiny_model.vocab for ln in lines[:-1] for w in ln.split())


def test_sampler_unigram_distribution(tiny_model):
    """The distribution of the first word of sentences matches p(w | <s>) (chi-square),
    computed by the model's own scoring: an independent check of the back-off walk."""
    from scipy.stats import chisquare

    s = BackoffSampler(tiny_model)
    toks = np.concatenate(list(s.sample_ids(200_000, seed=5)))
    ends = np.flatnonzero(toks == EOS_ID)
    first = toks[np.concatenate([[0], ends[:-1] + 1])]
    V = len(tiny_model.vocab)
    from suffixlm.corpus import Corpus

    # p(w | <s>) for every word w, by scoring the one-word sentences "<s> w"
    words = np.arange(3, V) if not tiny_model.vocab.has_unk else np.concatenate([[2], np.arange(3, V)])
    probe = Corpus(np.stack([np.zeros(len(words), dtype=np.int32), words, np.ones(len(words), dtype=np.int32)],
                            1).ravel(), np.arange(0, 3 * len(words) + 1, 3), tiny_model.vocab, len(words), 0)
    lp = tiny_model.log10_probs(probe).reshape(-1, 2)[:, 0]
    p = 10.0 ** lp
    p_eos = 1 - p.sum()  # the rest is p(</s> | <s>), redrawn by the sampler
    assert p_eos > -1e-4
    expected = p / p.sum() * len(first)
    observed = np.array([np.count_nonzero(first == w) for w in words])
    big = expected >= 5
    obs = np.append(observed[big], observed[~big].sum())
    exp = np.append(expected[big], expected[~big].sum())
    assert chisquare(obs, exp * obs.sum() / exp.sum()).pvalue > 1e-4
    # and sentences are as long as the training text's, on average
    ref = load_training_corpus(TINY)
    assert math.isclose(len(toks) / len(ends), ref.n_tokens / ref.n_sentences - 1, rel_tol=0.1)


def test_sample_corpus_script(tmp_path):
    lm = KneserNeyLM(2, min_counts=[1]).fit_text(TINY, unk=True)
    model = tmp_path / "m.arpa.gz"
    lm.write_arpa(model)
    outs = []
    for name in ("a.txt", "b.txt.gz"):
        r = subprocess.run([sys.executable, str(ROOT / "scripts" / "sample_corpus.py"), str(model), "--tokens", "3000",
                            "--seed", "7", "-o", str(tmp_path / name), "-q"], capture_output=True, text=True)
        assert r.returncode == 0, r.stderr
        outs.append(load_training_corpus(tmp_path / name))
    assert outs[0].n_words >= 3000 and np.array_equal(outs[0].tokens, outs[1].tokens)
