"""Kneser-Ney within a memory budget (``suffixlm kn --memory``): the spill store, the
budget's plan, the clean-up of the temporary directory, and the same ARPA bytes as the
single-process estimator whether the work runs as one shard and partition, two, or many."""

from __future__ import annotations

import gzip
import math
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.corpora import sample_path
from suffixlm.distributed import budget as B
from suffixlm.distributed.kn_counts import estimate_text_kn
from suffixlm.distributed.spill import DIR_PREFIX, OWNER_FILE, SpillClient, projection, remove_stale

TINY = str(sample_path("tiny_lm.train.txt"))
pytestmark = pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")
ROOT = Path(__file__).resolve().parents[2]


def _single(path, tmp_path, *args) -> bytes:
    out = tmp_path / "single.arpa"
    r = CliRunner().invoke(main, ["kn", str(path), "-o", str(out), "-q", *args])
    assert r.exit_code == 0, r.output
    return out.read_bytes()


def _spill_dirs(d) -> list[str]:
    return [n for n in os.listdir(d) if n.startswith(DIR_PREFIX)]


# ---------------------------------------------------------------- the spill store

def _pair(n):
    return np.arange(n, dtype=np.int64), (np.full(n, 2.5, dtype=np.float32), 7)


@projection
def _second(t):
    return t[1]


def test_store_spills_and_reads_back(tmp_path):
    """With no memory for results, every large array goes to disk and comes back equal;
    small ones and non-arrays stay; a projection reads nothing; a released result's files
    are deleted, and closing the client removes its directory."""
    with SpillClient(0, str(tmp_path)) as c:
        d = c.directory
        f = c.submit(_pair, 100_000)
        assert c.store.held <= 100_000 * 4  # the last array made may stay; the rest is on disk
        assert c.store.on_disk >= 100_000 * 8
        a, (b, k) = f.result()
        assert a.dtype == np.int64 and (a == np.arange(100_000)).all()
        assert b.dtype == np.float32 and (b == 2.5).all() and k == 7
        small = c.submit(_pair, 10)
        assert (small.result()[0] == np.arange(10)).all()
        read = c.store.read
        g = c.submit(_second, f)
        assert c.store.read == read  # picked from the stored tree, nothing read
        total = c.submit(lambda x: float(x[0].sum()), g)
        assert c.gather(total) == 2.5 * 100_000
        assert c.gather({"t": total, "l": [total]}) == {"t": 250000.0, "l": [250000.0]}
        files = len(os.listdir(d))
        del f, g, total
        assert len(os.listdir(d)) < files
        assert c.store.on_disk == 0 or c.store.on_disk < 100_000 * 8
        assert c.store.peak_disk >= 100_000 * 8
    assert not os.path.exists(d)


@pytest.mark.parametrize("huge", [4096, 1 << 30])
def test_read_back_aligned_equal_and_cut_short(tmp_path, monkeypatch, huge):
    """A spill file comes back equal, at an address aligned to the huge page when it is
    that large (a small page stands in for one here), else as numpy reads it; a file
    holding fewer values than asked is an OSError."""
    from suffixlm.distributed import spill

    monkeypatch.setattr(spill, "HUGE_PAGE", huge)
    for dtype, n in ((np.int32, 5), (np.int64, 3000), (np.float32, 2049)):
        values = (np.arange(n) * 3 - 7).astype(dtype)
        path = tmp_path / f"{np.dtype(dtype).name}-{n}.bin"
        path.write_bytes(values.tobytes())
        got = spill.read_back(str(path), dtype, n)
        assert got.dtype == dtype and got.tolist() == values.tolist()
        if values.nbytes >= huge:
            assert got.ctypes.data % huge == 0
        with pytest.raises(OSError, match="cut short"):
            spill.read_back(str(path), dtype, n + 1)


def test_store_keeps_whole_views_and_copies_partial_ones(tmp_path):
    """A task's view that is all of an array owning its memory (a reshape) is stored as it
    is; a part of an array (a slice, a column), or a view of memory numpy does not own,
    is copied, so that no uncounted base stays alive."""
    from suffixlm.distributed.spill import SpillStore, _whole_of_base

    store = SpillStore(str(tmp_path), cache_bytes=1 << 30)
    base = np.arange(6000, dtype=np.int64)
    whole = base.reshape(3000, 2)
    kept = store.wrap(whole).get()
    assert np.shares_memory(kept, base) and kept.shape == (3000, 2)
    for part in (base[:5000], whole[:, 0], base.reshape(3000, 2).T, np.frombuffer(base.tobytes(), dtype=np.int64)):
        assert not _whole_of_base(part)
        got = store.wrap(part).get()
        assert not np.shares_memory(got, base) and got.tolist() == part.tolist()


def test_shelf_keeps_nothing_in_memory(tmp_path):
    """A shelf writes every array (a view as it is) at once and holds none; each read is
    its file afresh, so a reader that changes what it read leaves the file as it was."""
    with SpillClient(1 << 30, str(tmp_path)) as c:
        shelf = c.shelf()
        base = np.arange(100_000, dtype=np.int32)
        view = base[10:50_010]
        leaf = shelf.wrap(view)
        assert shelf.held == 0 and shelf.written == view.nbytes and len(shelf.in_memory) == 0
        a = leaf.get()
        assert a.dtype == np.int32 and np.array_equal(a, view) and shelf.held == 0
        a[:] = -1
        b = leaf.get()
        assert np.array_equal(b, view) and shelf.read == 2 * view.nbytes
        assert shelf.wrap(np.zeros(3, dtype=np.int8)).__class__ is np.ndarray  # under min_spill: kept as it is
        assert c.disk_use() == (view.nbytes, view.nbytes)
        del leaf, a, b
        assert os.listdir(os.path.join(c.directory, "shelf-0")) == []
    assert _spill_dirs(tmp_path) == []
    with SpillClient(1 << 30, str(tmp_path), min_spill=0) as c:  # an empty array: a file of no bytes
        assert c.shelf().wrap(np.zeros(0, dtype=np.float32)).get().shape == (0,)


def test_store_keeps_results_within_the_cache(tmp_path):
    """Results that fit the cache are never written; beyond it, the least recently used go."""
    mb = 1 << 20
    with SpillClient(10 * mb, str(tmp_path)) as c:
        fs = [c.submit(np.ones, mb // 8) for _ in range(8)]  # 8 MiB in all
        assert c.store.written == 0 and c.store.held == 8 * mb
        fs += [c.submit(np.ones, mb // 8) for _ in range(4)]
        assert c.store.held <= 10 * mb and c.store.written >= 2 * mb
        assert all(float(f.result().sum()) == mb // 8 for f in fs)
        assert c.store.held <= 10 * mb


def _fail(x):
    raise RuntimeError(f"task failed on {x.shape}")


def test_worker_threads_wait_for_inputs_and_pass_errors(tmp_path):
    """With two threads, tasks wait for their inputs; a failed task's error reaches whoever
    asks for its result or for a result built on it; closing stops the threads."""
    with SpillClient(0, str(tmp_path), threads=2) as c:
        fs = [c.submit(np.full, 50_000, k, dtype=np.int64) for k in range(20)]
        sums = [c.submit(lambda a, b: int((a + b).sum()), f, g) for f, g in zip(fs, fs[1:])]
        assert c.gather(sums) == [50_000 * (2 * k + 1) for k in range(19)]
        bad = c.submit(_fail, fs[0])
        after = c.submit(lambda x: x, bad)
        with pytest.raises(RuntimeError, match="task failed"):
            bad.result()
        with pytest.raises(RuntimeError, match="task failed"):
            c.gather([after])
    assert _spill_dirs(tmp_path) == []


def test_close_on_error_and_sigterm(tmp_path):
    """The directory goes on an exception, and on SIGTERM (exit status 143)."""
    with pytest.raises(ZeroDivisionError):
        with SpillClient(0, str(tmp_path)) as c:
            c.submit(np.ones, 100_000)
            1 / 0
    assert _spill_dirs(tmp_path) == []
    code = ("import os, signal, sys, time, numpy as np\n"
            "from suffixlm.distributed.spill import SpillClient\n"
            f"with SpillClient(0, {str(tmp_path)!r}) as c:\n"
            "    f = c.submit(np.ones, 100_000)\n"
            "    assert os.listdir(c.directory)\n"
            "    os.kill(os.getpid(), signal.SIGTERM)\n"
            "    time.sleep(30)\n")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, timeout=120)
    assert r.returncode == 128 + signal.SIGTERM, r.stderr
    assert _spill_dirs(tmp_path) == []


def test_stale_directories_of_killed_runs_are_removed(tmp_path):
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    made = {}
    for name, owner in [("dead", f"{host} {int(dead.stdout)}"), ("alive", f"{host} {os.getppid()}"),
                        ("other-host", f"not-{host} {int(dead.stdout)}"), ("no-owner", None)]:
        d = tmp_path / (DIR_PREFIX + name)
        d.mkdir()
        (d / "0.bin").write_bytes(b"x" * 10)
        if owner:
            (d / OWNER_FILE).write_text(owner + "\n")
        made[name] = d
    (tmp_path / "unrelated").mkdir()
    assert remove_stale(str(tmp_path)) == [str(made["dead"])]
    assert sorted(os.listdir(tmp_path)) == sorted([DIR_PREFIX + n for n in ("alive", "other-host", "no-owner")]
                                                  + ["unrelated"])


# ---------------------------------------------------------------- the plan

def test_plan_scales_with_text_and_budget():
    mb = 1 << 20
    p = B.plan_memory(1024 * mb, 5 * mb, 5)
    assert p.n_shards == 1 and p.partitions(1_000_000) == 1 and p.in_memory
    assert not B.plan_memory(32 * mb, 5 * mb, 5).in_memory
    assert p.cache + p.task <= p.budget
    small = B.plan_memory(64 * mb, 5 * mb, 5)
    assert small.n_shards == math.ceil(5 * mb * B.COUNT_BYTES_PER_TEXT_BYTE / small.task)
    per_word = B.PARTITION_BYTES_PER_WORD + B.MERGE_BYTES_PER_WORD_PER_SHARD * small.n_shards
    assert small.partitions(1_000_000) == math.ceil(1_000_000 * per_word / small.task)
    assert B.plan_memory(64 * mb, 5 * mb, 3).n_shards < small.n_shards  # lower orders need less
    two = B.plan_memory(64 * mb, 5 * mb, 5, threads=2)  # two tasks at once: each gets half
    assert two.task == small.task // 2 and two.n_shards >= 2 * small.n_shards - 1
    with pytest.raises(B.BudgetError, match="too small .* give at least"):
        B.plan_memory(2 * mb, 10**12, 5)
    with pytest.raises(B.BudgetError, match="too small .* give at least"):
        small.partitions(10**12)


def test_plan_shelves_past_half_the_budget():
    """The in-memory estimator is taken while its shelved peak fits the budget, and
    shelves once its whole peak would take more than half of it."""
    mb = 1 << 20
    text = 50 * mb
    whole = text * B.IN_MEMORY_BYTES_PER_TEXT_BYTE
    shelved = text * B.SHELVED_BYTES_PER_TEXT_BYTE
    roomy = B.plan_memory(int(whole / B.SHELVE_SHARE) + mb, text, 5)
    assert roomy.in_memory and not roomy.shelve
    tight = B.plan_memory(int(whole / B.SHELVE_SHARE) - mb, text, 5)
    assert tight.in_memory and tight.shelve
    least = B.plan_memory(int(shelved / (B.TASK_SHARE + B.CACHE_SHARE)) + mb, text, 5)
    assert least.in_memory and least.shelve and whole > least.budget * (B.TASK_SHARE + B.CACHE_SHARE)
    assert not B.plan_memory(int(shelved / (B.TASK_SHARE + B.CACHE_SHARE)) - mb, text, 5).in_memory


@pytest.mark.parametrize("order,args", [
    (5, ["--min-count", "none"]),
    (4, []),
    (3, ["--original"]),
    (4, ["--no-unk", "--min-count", "1,2,3"]),
    (1, []),
])
def test_shelved_estimate_identical(sampled_corpus, tmp_path, order, args):
    """The in-memory estimator with every array it is not using on a shelf (the counts
    as they are made, each order's estimate once done, the fix-ups' changes as new
    files) writes the ARPA file of the estimator without one, byte for byte, and its
    files are gone when the client closes."""
    from suffixlm.backoff.kn import KneserNeyLM

    ref = _single(sampled_corpus, tmp_path, "--order", str(order), *args)
    min_counts = None
    if "--min-count" in args:
        v = args[args.index("--min-count") + 1]
        min_counts = [1] if v == "none" else [int(x) for x in v.split(",")]
    lm = KneserNeyLM(order, modified="--original" not in args, min_counts=min_counts)
    with SpillClient(1 << 30, str(tmp_path), min_spill=0) as c:
        shelf = c.shelf()
        est, _ = lm.estimate_text(sampled_corpus, unk="--no-unk" not in args, shelf=shelf)
        out = tmp_path / "shelved.arpa"
        est.write_arpa(out)
        assert shelf.written > 0 and shelf.read > 0 and shelf.held == 0
        assert c.disk_use()[0] == shelf.written
    assert out.read_bytes() == ref
    assert _spill_dirs(tmp_path) == []


def test_cli_memory_shelves_identical(sampled_corpus, tmp_path):
    """A budget the whole in-memory estimate would take more than half of: the estimator
    shelves (reported), the same ARPA file, the temporary directory removed."""
    ref = _single(sampled_corpus, tmp_path, "--order", "5", "--min-count", "none")
    budget = int(os.path.getsize(sampled_corpus) * B.IN_MEMORY_BYTES_PER_TEXT_BYTE / 0.6)
    plan = B.plan_memory(budget, os.path.getsize(sampled_corpus), 5)
    assert plan.in_memory and plan.shelve
    out = tmp_path / "m.arpa"
    tmp = tmp_path / "spill"
    tmp.mkdir()
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(out), "--order", "5", "--min-count", "none",
                                  "--memory", str(budget), "--temp-dir", str(tmp)])
    assert r.exit_code == 0, r.output
    assert "idle arrays on disk" in r.output and "spilled" in r.output
    assert out.read_bytes() == ref
    assert os.listdir(tmp) == []


def test_cli_memory_warns_where_binary_or_prune_go_beyond_it(tmp_path):
    """--binary and --prune gather the whole model after the estimate: a budget below
    what that takes for the text is told so before any work (one warning line), a
    budget above it is not; the command goes on either way."""
    from suffixlm.commands import kn as K

    size = os.path.getsize(TINY)
    for extra, per_byte in ((["--binary"], K.BINARY_BYTES_PER_TEXT_BYTE),
                            (["--prune", "1e-7"], K.GATHERED_BYTES_PER_TEXT_BYTE)):
        for budget, warned in ((size * per_byte // 2, True), (size * per_byte * 2, False)):
            out = tmp_path / ("m.bin" if "--binary" in extra else "m.arpa")
            r = CliRunner().invoke(main, ["kn", TINY, "-o", str(out), "--order", "3", "--memory", str(budget), "-q",
                                          *extra])
            assert r.exit_code == 0, r.output
            assert ("warning:" in r.output and "beyond --memory" in r.output) == warned, (extra, budget, r.output)
            assert out.exists()
            out.unlink()


@pytest.mark.parametrize("shelved", [True, False])
def test_cli_memory_full_temp_dir_is_one_line(sampled_corpus, tmp_path, monkeypatch, shelved):
    """A spill write that fails (here every spill file is /dev/full: no space left) ends
    the command with one line naming the directory and the way out, no traceback, no
    output file, the temporary directory removed; on the shelved in-memory path and on
    the partitioned one."""
    from suffixlm.distributed import spill

    real_open = open
    monkeypatch.setattr(spill, "open", lambda path, mode="r", *a, **k: real_open(
        "/dev/full", mode) if str(path).endswith(".bin") and "w" in mode else real_open(path, mode, *a, **k),
        raising=False)
    size = os.path.getsize(sampled_corpus)
    budget = int(size * B.IN_MEMORY_BYTES_PER_TEXT_BYTE / 0.6) if shelved else _budget_for(sampled_corpus, 5, 9)
    assert B.plan_memory(budget, size, 5).in_memory == shelved
    out = tmp_path / "m.arpa"
    tmp = tmp_path / "spill"
    tmp.mkdir()
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(out), "--order", "5", "--min-count", "none",
                                  "--memory", str(budget), "--temp-dir", str(tmp), "-q"])
    assert r.exit_code == 1, r.output
    assert "cannot spill" in r.output and "no space left on device" in r.output and str(tmp) in r.output
    assert "Traceback" not in r.output and "--temp-dir elsewhere" in r.output
    assert not out.exists() and os.listdir(tmp) == []


def _budget_for(path, order, shards) -> int:
    """A budget whose plan cuts ``path`` into ``shards`` shards."""
    size = os.path.getsize(path)
    need = size * B.COUNT_BYTES_PER_TEXT_BYTE * max(1, order - 1) / 4
    return max(B.MIN_BUDGET, int(need / B.TASK_SHARE / (shards - 0.5)))


# ---------------------------------------------------------------- the same bytes

@pytest.mark.parametrize("order,args", [
    (3, []),
    (5, ["--min-count", "none"]),
    (4, ["--original"]),
    (3, ["--no-unk", "--min-count", "1,2,3"]),
])
def test_api_any_shards_and_partitions_identical(sampled_corpus, tmp_path, order, args):
    """The partitioned estimate in the spill store, forced into 1, 2 and many shards and
    partitions with nothing kept in memory, on one and two threads, gives the
    single-process ARPA byte for byte."""
    ref = _single(sampled_corpus, tmp_path, "--order", str(order), *args)
    min_counts = None
    if "--min-count" in args:
        v = args[args.index("--min-count") + 1]
        min_counts = [1] * order if v == "none" else [int(x) for x in v.split(",")]
    for S, P, T in [(1, 1, 1), (2, 2, 2), (7, 13, 1), (7, 13, 2)]:
        with SpillClient(0, str(tmp_path), min_spill=0, threads=T) as c:
            kn, _ = estimate_text_kn(c, sampled_corpus, order, unk="--no-unk" not in args,
                                     modified="--original" not in args, min_counts=min_counts,
                                     n_shards=S, n_partitions=P)
            out = tmp_path / f"spill-{S}-{P}-{T}.arpa"
            kn.write_arpa(out)
            assert c.store.written > 0
        assert out.read_bytes() == ref, (S, P, T)
    assert _spill_dirs(tmp_path) == []


@pytest.mark.parametrize("shards", [1, 9, 12])
def test_cli_memory_identical(sampled_corpus, tmp_path, shards):
    """``--memory`` at budgets that hold the in-memory estimate, or cut the text into 9 and 12 shards (too small for
    the in-memory estimator even shelved): the same ARPA file,
    the temporary directory removed, the plan reported."""
    ref = _single(sampled_corpus, tmp_path, "--order", "4")
    budget = _budget_for(sampled_corpus, 4, shards)
    assert B.plan_memory(budget, os.path.getsize(sampled_corpus), 4).n_shards == shards
    out = tmp_path / "m.arpa"
    tmp = tmp_path / "spill"
    tmp.mkdir()
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(out), "--order", "4", "--memory", str(budget),
                                  "--temp-dir", str(tmp)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == ref
    if shards == 1:  # such a budget holds the in-memory estimator, which is faster
        assert "it holds the estimate in memory" in r.output and "spilled" not in r.output
    else:
        assert f"{shards} shard(s)" in r.output and "spilled" in r.output
    assert os.listdir(tmp) == []


def test_cli_memory_gzip_stdin_vocab_prune_binary(sampled_corpus, tmp_path):
    """gzip text and standard input (copied to the temporary directory first), a
    vocabulary file, --prune and --binary (the model gathered after the estimate)."""
    gz = tmp_path / "t.txt.gz"
    gz.write_bytes(gzip.compress(Path(sampled_corpus).read_bytes()))
    words = Path(sampled_corpus).read_text().split()
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("\n".join(sorted(set(words))[::2]) + "\n")
    runs = [
        ([str(gz)], ["--order", "3"]),
        (["-"], ["--order", "3"]),
        ([sampled_corpus], ["--order", "3", "--vocab", str(vocab), "--no-unk"]),
        ([sampled_corpus], ["--order", "3", "--prune", "1e-6"]),
    ]
    for src, args in runs:
        ref = _single(sampled_corpus, tmp_path, *args)
        out = tmp_path / "m.arpa"
        r = CliRunner().invoke(main, ["kn", *src, "-o", str(out), "-q", "--memory", "2M",
                                      "--temp-dir", str(tmp_path), *args],
                               input=Path(sampled_corpus).read_bytes() if src == ["-"] else None)
        assert r.exit_code == 0, r.output
        assert out.read_bytes() == ref, (src, args)
    ref_bin = tmp_path / "ref.bin"
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(ref_bin), "-q", "--binary"])
    assert r.exit_code == 0, r.output
    out = tmp_path / "m.bin"
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(out), "-q", "--binary", "--memory", "2M",
                                  "--temp-dir", str(tmp_path)])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == ref_bin.read_bytes()
    assert _spill_dirs(tmp_path) == []


def test_cli_memory_bad_text_cleans_up(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"a b c\n" * 1000 + b"\xff\xfe\n")
    r = CliRunner().invoke(main, ["kn", str(bad), "-o", str(tmp_path / "m.arpa"), "--memory", "2M",
                                  "--temp-dir", str(tmp_path)])
    assert r.exit_code == 1 and "invalid UTF-8" in r.output
    assert _spill_dirs(tmp_path) == [] and not (tmp_path / "m.arpa").exists()


@pytest.mark.parametrize("args,message", [
    (["--temp-dir", "."], "--temp-dir is where --memory spills"),
    (["--memory", "lots"], "expected a size like"),
    (["--memory", "0"], "at least 1 byte"),
    (["--memory", "1G", "--order", "max"], "--memory needs a fixed order"),
    (["--memory", "1G", "--temp-dir", "no/such/dir"], "no such directory"),
    (["--memory", "1G", "--workers", "2", "--memory-limit", "1G"], "leave out --memory-limit"),
    (["--memory", "1G", "--workers", "2", "--temp-dir", "."], "Dask workers spill"),
])
def test_cli_memory_option_errors(tmp_path, args, message):
    r = CliRunner().invoke(main, ["kn", TINY, "-o", str(tmp_path / "m.arpa"), *args])
    assert r.exit_code == 2 and message in r.output, r.output
    assert not (tmp_path / "m.arpa").exists()


def test_cli_memory_too_small_is_one_line(tmp_path, monkeypatch):
    monkeypatch.setattr(B, "MAX_SHARDS", 1)
    r = CliRunner().invoke(main, ["kn", TINY, "-o", str(tmp_path / "m.arpa"), "--memory", "1M",
                                  "--temp-dir", str(tmp_path)])
    assert r.exit_code == 1 and "too small" in r.output and "give at least" in r.output, r.output
    assert _spill_dirs(tmp_path) == []


def test_dask_workers_take_the_budget(sampled_corpus, tmp_path):
    """With --workers, --memory is each worker's budget: its memory limit and the sizes of
    the shards and partitions."""
    pytest.importorskip("distributed")
    ref = _single(sampled_corpus, tmp_path, "--order", "3")
    out = tmp_path / "m.arpa"
    r = CliRunner().invoke(main, ["kn", sampled_corpus, "-o", str(out), "--order", "3", "--workers", "2",
                                  "--memory", "4M"])
    assert r.exit_code == 0, r.output
    assert out.read_bytes() == ref
