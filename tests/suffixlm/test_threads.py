"""The thread policy (suffixlm.threads, docs/threads.md): OMP_WAIT_POLICY before numba's
layer loads, the count applied and restored (library calls, estimators, --threads of
every command), the small-model rule, and results that do not depend on the count."""

from __future__ import annotations

import os
import subprocess
import sys

import click
import numba
import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm import threads
from suffixlm.commands.params import threads_option
from suffixlm.corpora import sample_path

TWO = min(2, numba.config.NUMBA_NUM_THREADS)
SENTENCES = sample_path("tiny_lm.train.txt").read_text().splitlines()


@pytest.fixture(autouse=True)
def _restore_numba_threads():
    old = numba.get_num_threads()
    yield
    numba.set_num_threads(old)


def _python(code: str, **env) -> subprocess.CompletedProcess:
    dropped = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "OMP_DISPLAY_ENV") + threads.BLAS_THREAD_VARIABLES
    e = {k: v for k, v in os.environ.items() if k not in dropped}
    e.update(env)
    return subprocess.run([sys.executable, "-c", code], env=e, capture_output=True, text=True, timeout=300)


def test_importing_suffixlm_makes_idle_threads_sleep_unless_the_user_chose():
    code = "import os, suffixlm; print(os.environ['OMP_WAIT_POLICY'])"
    assert _python(code).stdout.strip() == "PASSIVE"
    assert _python(code, OMP_WAIT_POLICY="active").stdout.strip() == "active"
    code = "import crf.model, os; print(os.environ['OMP_WAIT_POLICY'])"  # the CRF package goes through suffixlm
    assert _python(code).stdout.strip() == "PASSIVE"


def test_the_command_runs_numpys_blas_on_one_thread_unless_the_user_chose():
    """``suffixlm.cli`` (the command) sets OPENBLAS_NUM_THREADS=1 before numpy loads, unless
    the environment names a count OpenBLAS reads; ``import suffixlm`` (a library user's
    process) leaves BLAS alone."""
    code = "import os, suffixlm.cli; print(os.environ.get('OPENBLAS_NUM_THREADS'))"
    assert _python(code).stdout.strip() == "1"
    assert _python(code, OPENBLAS_NUM_THREADS="3").stdout.strip() == "3"
    assert _python(code, OMP_NUM_THREADS="2").stdout.strip() == "None"
    assert _python(code.replace("suffixlm.cli", "suffixlm")).stdout.strip() == "None"
    pytest.importorskip("threadpoolctl")
    code = ("import suffixlm.cli, numpy, threadpoolctl\n"
            "print(sorted({i['num_threads'] for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'}))")
    r = _python(code)
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() == "[]":
        pytest.skip("numpy is not built on OpenBLAS here")
    assert r.stdout.strip() == "[1]"


def test_the_openmp_layer_reads_the_policy():
    """GNU OpenMP (numba's 'omp' layer) reads the environment when the layer first loads,
    at the first parallel kernel: after ``import suffixlm``, so it sees PASSIVE (spin 0)."""
    code = ("import suffixlm, numba, numpy as np\n"
            "from suffixlm.solvers._kernels import extrapolate\n"
            "x = np.ones(8); extrapolate(x, x, 0.5, np.empty(8))\n"
            "print(numba.threading_layer())")
    r = _python(code, OMP_DISPLAY_ENV="verbose")
    assert r.returncode == 0, r.stderr
    if r.stdout.strip() != "omp" or "GOMP_SPINCOUNT" not in r.stderr:
        pytest.skip("numba's threading layer is not GNU OpenMP here")
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in r.stderr and "GOMP_SPINCOUNT = '0'" in r.stderr
    r = _python(code, OMP_DISPLAY_ENV="verbose", GOMP_SPINCOUNT="300000")  # the old default spin, as asked
    assert "GOMP_SPINCOUNT = '300000'" in r.stderr


def test_resolve_clamps_and_reads_n_jobs():
    top = numba.config.NUMBA_NUM_THREADS
    assert threads.resolve() is None
    assert threads.resolve(1) == 1 and threads.resolve(10_000) == top
    assert threads.resolve(None, -1) == top and threads.resolve(None, -2) == max(1, top - 1)
    assert threads.resolve(None, -10_000) == 1 and threads.resolve(None, 1) == 1
    threads.check(1, 1)
    threads.check(top, -1)
    for bad, kind in [((0, None), ValueError), ((None, 0), ValueError), (("2", None), TypeError),
                      ((True, None), TypeError), ((None, 1.5), TypeError)]:
        with pytest.raises(kind, match="threads" if bad[0] is not None else "n_jobs"):
            threads.check(*bad)
    if top >= 2:
        with pytest.raises(ValueError, match="disagree"):
            threads.check(1, -1)


def test_using_applies_and_restores_the_count_even_on_error():
    numba.set_num_threads(TWO)
    with threads.using(1) as n:
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == TWO
    with pytest.raises(RuntimeError):
        with threads.using(1):
            raise RuntimeError
    assert numba.get_num_threads() == TWO
    with threads.using() as n:  # nothing asked: the setting in force
        assert n == TWO
    with threads.using(TWO, size=10) as n:  # a small problem: one thread
        assert n == 1 and numba.get_num_threads() == 1
    assert numba.get_num_threads() == TWO
    assert threads.apply(1) == 1 and numba.get_num_threads() == 1


def test_min_parallel_from_the_environment(monkeypatch):
    monkeypatch.delenv(threads.MIN_PARALLEL_ENV, raising=False)
    assert threads.min_parallel() == threads.MIN_PARALLEL
    assert threads.for_size(threads.MIN_PARALLEL - 1) == 1 and threads.for_size(threads.MIN_PARALLEL) is None
    monkeypatch.setenv(threads.MIN_PARALLEL_ENV, "0")
    assert threads.for_size(0) is None
    monkeypatch.setenv(threads.MIN_PARALLEL_ENV, "many")
    with pytest.raises(ValueError, match="SUFFIXLM_MIN_PARALLEL"):
        threads.min_parallel()


def test_threads_option_sets_the_count_for_the_command_and_restores_it():
    seen = {}

    @click.command()
    @click.option("--x", default=0)
    @threads_option
    def cmd(x):
        seen["n"] = numba.get_num_threads()

    @click.command()
    @threads_option(forward=True)
    def fwd(threads):
        seen["fwd"] = (threads, numba.get_num_threads())

    numba.set_num_threads(TWO)
    r = CliRunner().invoke(cmd, ["--threads", "1", "--x", "3"])
    assert r.exit_code == 0, r.output
    assert seen["n"] == 1 and numba.get_num_threads() == TWO
    r = CliRunner().invoke(cmd, ["--threads", "99999"])  # more than numba has: all of them
    assert r.exit_code == 0 and seen["n"] == numba.config.NUMBA_NUM_THREADS
    assert CliRunner().invoke(cmd, ["--threads", "0"]).exit_code == 2
    assert CliRunner().invoke(fwd, ["--threads", "1"]).exit_code == 0 and seen["fwd"] == (1, 1)
    assert numba.get_num_threads() == TWO
    assert "NUMBA_NUM_THREADS" in CliRunner().invoke(cmd, ["--help"]).output


def test_every_command_that_runs_kernels_has_threads():
    from crf.cli import label, train

    from suffixlm.cli import main

    names = ["train", "kn", "ppl", "compare", "demo", "tree", "export", "prune", "best-mix"]
    for cmd in [main.commands[n] for n in names] + [train, label]:
        opts = [p for p in cmd.params if p.name == "threads"]
        assert len(opts) == 1 and opts[0].opts == ["--threads"], cmd.name
        assert opts[0].help == threads.OPTION_HELP


def test_a_command_runs_on_the_threads_asked_and_restores_them(tmp_path):
    from suffixlm.cli import main

    numba.set_num_threads(TWO)
    out = tmp_path / "m.npz"
    r = CliRunner().invoke(main, ["train", str(sample_path("tiny_lm.train.txt")), "-o", str(out), "--order", "2",
                                  "--epochs", "3", "--quiet", "--threads", "1"])
    assert r.exit_code == 0, r.output
    assert out.exists() and numba.get_num_threads() == TWO


def test_estimators_apply_their_threads_during_fit_and_restore_after(monkeypatch):
    from suffixlm.model import LogLinearLM

    monkeypatch.setenv(threads.MIN_PARALLEL_ENV, "0")
    numba.set_num_threads(TWO)
    seen = []
    cb = lambda info, w: seen.append(numba.get_num_threads())  # noqa: E731
    LogLinearLM(order=3, max_iter=3, threads=1).fit(SENTENCES[:200], callback=cb)
    assert set(seen) == {1} and numba.get_num_threads() == TWO
    seen.clear()
    numba.set_num_threads(1)
    LogLinearLM(order=3, max_iter=3, n_jobs=-1).fit(SENTENCES[:200], callback=cb)
    assert set(seen) == {numba.config.NUMBA_NUM_THREADS} and numba.get_num_threads() == 1
    with pytest.raises(ValueError, match="n_jobs"):
        LogLinearLM(order=3, n_jobs=0).fit(SENTENCES[:50])


def test_a_small_model_trains_on_one_thread(monkeypatch):
    from suffixlm.model import LogLinearLM

    monkeypatch.delenv(threads.MIN_PARALLEL_ENV, raising=False)
    seen = []
    cb = lambda info, w: seen.append(numba.get_num_threads())  # noqa: E731
    lm = LogLinearLM(order=3, max_iter=3, threads=TWO).fit(SENTENCES, callback=cb)
    assert lm.n_params_ < threads.MIN_PARALLEL and set(seen) == {1}
    monkeypatch.setenv(threads.MIN_PARALLEL_ENV, "0")
    seen.clear()
    LogLinearLM(order=3, max_iter=3, threads=TWO).fit(SENTENCES, callback=cb)
    assert set(seen) == {TWO}


@pytest.mark.skipif(numba.config.NUMBA_NUM_THREADS < 2, reason="needs 2 numba threads")
def test_models_are_the_same_bits_on_one_and_two_threads(monkeypatch):
    """The log-linear LM's kernels promise it (each tree node computed alone, fixed
    blocks of the sums), serial small levels included; KN's kernels are serial."""
    from suffixlm.backoff.kn import KneserNeyLM
    from suffixlm.model import LogLinearLM

    monkeypatch.setenv(threads.MIN_PARALLEL_ENV, "0")
    kw = dict(order=5, max_iter=12, tol=0.0, base="kn", positive=False)
    one = LogLinearLM(threads=1, **kw).fit(SENTENCES)
    two = LogLinearLM(threads=2, **kw).fit(SENTENCES)
    np.testing.assert_array_equal(one.weights_, two.weights_)
    assert one.objective_ == two.objective_
    test = sample_path("tiny_lm.test.txt").read_text().splitlines()
    one.threads, two.threads = 1, 2
    assert one.corpus_perplexity(test) == two.corpus_perplexity(test)
    k1 = KneserNeyLM(order=4, threads=1).fit(SENTENCES)
    k2 = KneserNeyLM(order=4, n_jobs=2).fit(SENTENCES)
    assert k1.corpus_perplexity(test) == k2.corpus_perplexity(test)


def _masks() -> dict:
    """The CPU mask of the calling thread (0) and of numba's other threads."""
    return {tid: os.sched_getaffinity(tid) for tid in [0, *threads._pool_threads(numba.get_num_threads())]}


def _masks_settable() -> bool:
    """Whether this process may set CPU masks on 2 CPUs or more (a sandbox may refuse)."""
    if not hasattr(os, "sched_setaffinity") or len(os.sched_getaffinity(0)) < 2:
        return False
    try:
        os.sched_setaffinity(0, os.sched_getaffinity(0))  # the same mask: nothing changes
    except OSError:
        return False
    return True


spread_needs = pytest.mark.skipif(not _masks_settable() or numba.config.NUMBA_NUM_THREADS < 2,
                                  reason="needs CPU masks it may set, 2 CPUs, 2 numba threads")


def test_the_pool_threads_are_numba_threads_other_than_the_caller():
    import threading

    from suffixlm._thread_kernels import thread_ids

    numba.set_num_threads(TWO)
    got = set(thread_ids(64 * TWO).tolist())
    assert all(os.path.exists(f"/proc/self/task/{t}") for t in got)  # threads of this process
    if numba.threading_layer() == "omp":  # the caller is one of the team; static chunks: every thread runs
        assert threading.get_native_id() in got and len(got) == TWO
        assert threads._pool_threads(TWO) == sorted(got - {threading.get_native_id()})
    else:  # a layer that schedules its iterations as it likes (TBB) may use fewer of them
        assert 1 <= len(got) <= TWO


@spread_needs
def test_spread_holds_the_caller_on_its_cpu_and_the_others_off_it_then_puts_every_mask_back(monkeypatch):
    monkeypatch.delenv(threads.SPREAD_ENV, raising=False)
    numba.set_num_threads(2)
    before = _masks()
    with threads.spread():
        inside = _masks()
        cpu = threads._current_cpu()
    assert inside[0] == {cpu}
    assert all(cpu not in mask and mask == before[tid] - {cpu} for tid, mask in inside.items() if tid != 0)
    assert _masks() == before
    with pytest.raises(KeyError), threads.spread():  # an error in the block: the masks are put back too
        raise KeyError("x")
    assert _masks() == before and not threads._spread_lock.locked()


@spread_needs
def test_spread_does_nothing_when_turned_off_on_one_thread_or_while_another_block_runs(monkeypatch):
    import threading

    numba.set_num_threads(2)
    before = _masks()
    monkeypatch.setenv(threads.SPREAD_ENV, "0")
    with threads.spread():
        assert _masks() == before
    monkeypatch.delenv(threads.SPREAD_ENV)
    numba.set_num_threads(1)
    with threads.spread():
        assert os.sched_getaffinity(0) == before[0]
    numba.set_num_threads(2)
    entered, leave, seen = threading.Event(), threading.Event(), {}

    def other():
        with threads.spread():
            seen["mask"] = os.sched_getaffinity(0)
            entered.set()
            leave.wait(30)

    t = threading.Thread(target=other)
    t.start()
    assert entered.wait(30)
    with threads.spread():  # the other thread's block holds the masks: this one leaves them be
        assert os.sched_getaffinity(0) == before[0]
    leave.set()
    t.join(30)
    assert len(seen["mask"]) == 1 and _masks() == before


@spread_needs
def test_a_large_batch_runs_in_a_spread_block_and_leaves_every_mask_as_it_was(tmp_path, monkeypatch):
    from suffixlm import query
    from suffixlm.backoff import table
    from suffixlm.backoff.binary import BinaryLM, write_binary
    from suffixlm.backoff.kn import KneserNeyLM
    from suffixlm.corpus import Corpus

    numba.set_num_threads(2)
    write_binary(KneserNeyLM(order=3).fit(Corpus.from_strings(SENTENCES)).model_, tmp_path / "m.bin")
    b = BinaryLM(tmp_path / "m.bin")
    monkeypatch.setattr(table, "TIER", "compiled")
    monkeypatch.setattr(query, "PARALLEL_MIN_TOKENS", 1)
    before, held = _masks(), []
    hold = threads._hold_apart
    monkeypatch.setattr(threads, "_hold_apart", lambda restore: (hold(restore), held.append(len(restore))))
    sums = b.score_batch(SENTENCES)
    ids = b.score_ids(np.arange(40) % len(b.vocab), np.array([0, 10, 25, 40]))
    assert held and all(n >= 1 for n in held) and _masks() == before  # the caller's mask at least was set
    monkeypatch.setenv(threads.SPREAD_ENV, "0")
    assert b.score_batch(SENTENCES).tolist() == sums.tolist()
    assert b.score_ids(np.arange(40) % len(b.vocab), np.array([0, 10, 25, 40])).tolist() == ids.tolist()
