"""Checkpoints and resuming (``--checkpoint``, ``--resume``; suffixlm.checkpoint): a run
stopped at any iteration (a requested stop, Ctrl-C, SIGKILL) and resumed ends in the
model of the uninterrupted run, bit for bit; a checkpoint of other data or options, or a
damaged one, is refused with one line naming the file and what is wrong."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner
from suffixlm.corpora import sample_path

from crf import CRF
from suffixlm.checkpoint import Checkpoint, CheckpointError, Interrupted, parse_every
from suffixlm.cli import main
from suffixlm.corpus import load_training_corpus
from suffixlm.io import atomic_write, load_container, save_container
from suffixlm.model import LogLinearLM

from .crf.crf_testutil import PATTERNS, random_corpus

TRAIN = sample_path("tiny_lm.train.txt")
VALID = sample_path("tiny_lm.test.txt")
SUFFIXLM = [sys.executable, "-c", "import sys; from suffixlm.cli import main; sys.exit(main())"]


@pytest.fixture(scope="module")
def corpus():
    return load_training_corpus(TRAIN)


@pytest.fixture(autouse=True)
def _numba_threads():
    """CRF(threads=...) sets numba's thread count for the process: put it back."""
    import numba

    old = numba.get_num_threads()
    yield
    numba.set_num_threads(old)


def _stop_at(monkeypatch, n: int, boundaries: bool = False) -> dict:
    """Make every Checkpoint ask for a stop at its n-th solver iteration end (counted
    across fits; with ``boundaries`` the ends of fits of a loop count too), as Ctrl-C does."""
    calls = {"n": 0, "where": []}  # where: the enclosing loop's position at each count
    hook, at_boundary = Checkpoint.hook, Checkpoint.at_boundary

    def count(ck):
        calls["n"] += 1
        calls["where"].append(ck.outer[1]["where"] if ck.outer is not None else "")
        if calls["n"] == n:
            ck.request_stop()

    def counting_hook(self, trainer, identity, extra=None):
        h = hook(self, trainer, identity, extra)

        def wrapped(state):
            count(self)
            h(state)

        return wrapped

    def counting_boundary(self, trainer):
        if boundaries:
            count(self)
        at_boundary(self, trainer)

    monkeypatch.setattr(Checkpoint, "hook", counting_hook)
    monkeypatch.setattr(Checkpoint, "at_boundary", counting_boundary)
    return calls


def _history(model):
    return [(h.n_iter, h.objective, h.step, h.n_evals, h.restart) for h in model.history_]


# ---------------------------------------------------------------------- estimators
@pytest.mark.parametrize("solver", ["fista", "sage"])
@pytest.mark.parametrize("model", [{}, {"order": None, "base": "kn", "positive": False}], ids=["order3", "max"])
def test_lm_fit_stopped_and_resumed_is_the_uninterrupted_fit(corpus, tmp_path, monkeypatch, solver, model):
    kw = {**dict(order=3, max_iter=30, tol=0.0, solver=solver, batch_size=3000, seed=5), **model}
    ref = LogLinearLM(**kw).fit(corpus)
    path = tmp_path / "ck.npz"
    for k in (1, 13, 29):  # stopped at iteration k (29: the one before the last)
        with monkeypatch.context() as mp:
            _stop_at(mp, k)
            with pytest.raises(Interrupted, match=f"iteration {k} written"):
                LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, every=1000))
        lm = LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, resume=True))
        assert np.array_equal(lm.weights_, ref.weights_)
        assert (lm.n_iter_, lm.objective_, lm.converged_) == (ref.n_iter_, ref.objective_, ref.converged_)
        assert _history(lm) == _history(ref)
        os.unlink(path)


def test_lm_fit_stopped_twice_and_a_periodic_checkpoint(corpus, tmp_path, monkeypatch):
    """Resumed runs can stop again; a periodic checkpoint (not a requested one) resumes
    the same way; a checkpoint of a fit that had stopped by itself (tol) ends as it did."""
    kw = dict(order=3, max_iter=100, tol=1e-3)
    ref = LogLinearLM(**kw).fit(corpus)
    assert ref.converged_ and ref.n_iter_ < 100
    path = tmp_path / "ck.npz"
    with monkeypatch.context() as mp:
        _stop_at(mp, 5)
        with pytest.raises(Interrupted):
            LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, every=1000))
    with monkeypatch.context() as mp:
        _stop_at(mp, 3)  # iteration 8
        with pytest.raises(Interrupted, match="iteration 8 written"):
            LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, resume=True))
    os.unlink(path)
    # periodic: every 4 iterations, the last one written before the fit ended
    ck = Checkpoint(path, every=4)
    LogLinearLM(**kw).fit(corpus, checkpoint=ck)
    assert ck.written == f"iteration {4 * ((ref.n_iter_ - 1) // 4)}"
    lm = LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, resume=True))
    assert np.array_equal(lm.weights_, ref.weights_) and _history(lm) == _history(ref)
    assert lm.converged_


CRF_CASES = [("owlqn", {}), ("lbfgs", {"rho1": 0.0}), ("fista", {"penalty": "l2-tree"}), ("sgd-l1", {}),
             ("bcd", {}), ("perceptron", {}), ("owlqn", {"order": 2}), ("perceptron", {"order": 2})]
CRF_IDS = [c[0] + ("-order2" if c[1].get("order") == 2 else "") for c in CRF_CASES]


@pytest.fixture(scope="module")
def crf_data():
    rng = np.random.default_rng(0)
    return random_corpus(rng, 60, 8, 3, vocab=6)


@pytest.mark.parametrize("algorithm,extra", CRF_CASES, ids=CRF_IDS)
def test_crf_fit_stopped_and_resumed_is_the_uninterrupted_fit(crf_data, tmp_path, monkeypatch, algorithm, extra):
    X, y = crf_data
    Xd, yd = X[:10], y[:10]  # a development set: the stopping rule's errors are part of the state
    kw = dict(patterns=PATTERNS, algorithm=algorithm, max_iter=20, stopwin=3, stopeps=1e-4, seed=3, threads=1,
              **extra)
    ref = CRF(**kw).fit(X, y, Xd, yd)
    path = tmp_path / "ck.npz"
    for k in (1, ref.n_iter_ // 2, ref.n_iter_ - 1):
        with monkeypatch.context() as mp:
            _stop_at(mp, k)
            with pytest.raises(Interrupted, match=f"iteration {k} written"):
                CRF(**kw).fit(X, y, Xd, yd, checkpoint=Checkpoint(path, every=1000))
        m = CRF(**kw).fit(X, y, Xd, yd, checkpoint=Checkpoint(path, resume=True))
        assert np.array_equal(m.theta_, ref.theta_)
        assert (m.n_iter_, m.stop_reason_) == (ref.n_iter_, ref.stop_reason_)
        strip = [{k: v for k, v in e.items() if k != "seconds"} for e in ref.training_log_]
        assert [{k: v for k, v in e.items() if k != "seconds"} for e in m.training_log_] == strip
        os.unlink(path)


def test_crf_resume_keeps_the_thread_count_of_the_checkpoint(crf_data, tmp_path, monkeypatch):
    """The gradient's partial sums are one per thread: a run resumed with another
    --threads is refused, one without --threads takes the checkpoint's."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 numba threads")
    X, y = crf_data
    kw = dict(patterns=PATTERNS, max_iter=12, stopwin=0)
    old = numba.get_num_threads()
    try:
        ref = CRF(threads=2, **kw).fit(X, y)
        path = tmp_path / "ck.npz"
        with monkeypatch.context() as mp:
            _stop_at(mp, 5)
            with pytest.raises(Interrupted):
                CRF(threads=2, **kw).fit(X, y, checkpoint=Checkpoint(path, every=1000))
        with pytest.raises(ValueError, match="written with 2 threads, this run asks for 1"):
            CRF(threads=1, **kw).fit(X, y, checkpoint=Checkpoint(path, resume=True))
        numba.set_num_threads(1)
        m = CRF(**kw).fit(X, y, checkpoint=Checkpoint(path, resume=True))
        assert numba.get_num_threads() == 1  # the fit ran on the checkpoint's 2 (same bits), then restored 1
        assert np.array_equal(m.theta_, ref.theta_)
    finally:
        numba.set_num_threads(old)


def test_crf_sag_is_refused(crf_data, tmp_path):
    X, y = crf_data
    for a in ("sag", "sag-nus"):
        with pytest.raises(ValueError, match=f"not supported with algorithm '{a}'"):
            CRF(patterns=PATTERNS, algorithm=a, rho1=0.0).fit(X, y, checkpoint=Checkpoint(tmp_path / "ck.npz"))
    assert not (tmp_path / "ck.npz").exists()


# ---------------------------------------------------------------------- the lambda path
def _lm_cli(runner, *args):
    return runner.invoke(main, ["train", str(TRAIN), "--order", "3", "--quiet", *map(str, args)])


LAM_AUTO = ["--lam", "auto", "--valid", VALID, "--json"]


@pytest.fixture(scope="module")
def lam_auto_reference(tmp_path_factory):
    """The uninterrupted --lam auto run: its model, its JSON summary, and the path's
    position at each iteration end or end of a fit (``_stop_at``'s counts)."""
    folder = tmp_path_factory.mktemp("lam_auto")
    with pytest.MonkeyPatch.context() as mp:
        calls = _stop_at(mp, 10**9, boundaries=True)  # counts only
        r = _lm_cli(CliRunner(), *LAM_AUTO, "-o", folder / "ref.npz", "--checkpoint", folder / "c0.npz")
    assert r.exit_code == 0, r.output
    return folder / "ref.npz", json.loads(r.output.strip().splitlines()[-1]), calls["where"]


@pytest.mark.parametrize("stop", ["path", "boundary", "refinement"])
def test_lam_auto_stopped_and_resumed_is_the_uninterrupted_path(tmp_path, monkeypatch, lam_auto_reference, stop):
    """--lam auto: a stop in a fit of the path, between two fits, in a refinement: the
    resumed path makes the same choice and the same model."""
    runner = CliRunner()
    args = LAM_AUTO
    ref_model, ref_summary, where = lam_auto_reference
    if stop == "path":  # the second iteration of the second fit of the path
        n = next(i for i, w in enumerate(where, 1) if w.startswith("lambda 2 of the path (")) + 1
    elif stop == "refinement":  # the 20th iteration of the first refinement
        n = next(i for i, w in enumerate(where, 1) if w.startswith("refinement of lambda")) + 20
        assert where[n - 1] == where[n - 21]
    model, ck = tmp_path / "m.npz", tmp_path / "ck.npz"
    with monkeypatch.context() as mp:
        if stop == "boundary":  # the end of the third fit of the path
            boundaries = []
            orig = Checkpoint.at_boundary

            def at_boundary(self, trainer):
                boundaries.append(1)
                if len(boundaries) == 3:
                    self.request_stop()
                orig(self, trainer)

            mp.setattr(Checkpoint, "at_boundary", at_boundary)
        else:
            _stop_at(mp, n, boundaries=True)
        r = _lm_cli(runner, *args, "-o", model, "--checkpoint", ck, "--checkpoint-every", "1000")
    assert r.exit_code == 130, r.output
    said = {"path": "lambda 2 of the path (", "boundary": "lambda 3 of the path, finished written",
            "refinement": "refinement of lambda"}[stop]
    assert f"interrupted: checkpoint of {said}" in r.output and not model.exists(), r.output
    r = _lm_cli(runner, *args, "-o", model, "--checkpoint", ck, "--resume")
    assert r.exit_code == 0, r.output
    a, b = np.load(ref_model), np.load(model)
    assert np.array_equal(a["weights"], b["weights"]) and bytes(a["meta_json"]) == bytes(b["meta_json"])
    summary = json.loads(r.output.strip().splitlines()[-1])
    for key in ("lam", "objective", "steps", "converged", "valid_ppl", "lam_grid"):
        assert summary[key] == ref_summary[key], key
    assert not ck.exists()


# ---------------------------------------------------------------------- the commands
def _run(args, **kw):
    return subprocess.run([*SUFFIXLM, *map(str, args)], capture_output=True, text=True, **kw)


def _read(ck):
    """(arrays, header) of a checkpoint file, as the container holds them."""
    return load_container(ck, "suffixlm-checkpoint", (1,),
                          lambda m: {k: ((np.float64, np.float32, np.int64), v) for k, v in m["arrays"].items()})


def _popen(args):
    return subprocess.Popen([*SUFFIXLM, *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _wait_for_new_checkpoint(path, proc, old_mtime=None, timeout=60.0):
    """Until ``path`` exists (and was rewritten since ``old_mtime``), or the process ended."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout and proc.poll() is None:
        try:
            if os.stat(path).st_mtime_ns != old_mtime:
                return True
        except FileNotFoundError:
            pass
        time.sleep(0.01)
    return False


def _kill_and_resume(cmd, ck, out, seed, kills=3):
    """Run ``cmd`` with --checkpoint, SIGKILL it at a random moment after a checkpoint of
    this run exists, resume, ... ``kills`` times; then resume to the end. Returns the
    number of kills that hit a running process."""
    rng = random.Random(seed)
    hit = 0
    resume = []
    for _ in range(kills):
        old = os.stat(ck).st_mtime_ns if ck.exists() else None
        p = _popen([*cmd, *resume])
        _wait_for_new_checkpoint(ck, p, old)
        time.sleep(rng.uniform(0.0, 0.3))
        if p.poll() is None:
            p.send_signal(signal.SIGKILL)
            hit += 1
        p.communicate()
        if out.exists():  # it finished before the kill
            break
        resume = ["--resume"]
    if not out.exists():
        r = _run([*cmd, "--resume"])
        assert r.returncode == 0, r.stderr
    return hit


def _no_temporary_left(folder):
    return [p.name for p in folder.iterdir() if p.name.endswith(".tmp")] == []


@pytest.mark.slow
def test_lm_train_killed_and_resumed_ends_in_the_uninterrupted_model(tmp_path):
    args = ["train", TRAIN, "--order", "3", "--tol", "0", "--epochs", "300", "--quiet"]
    r = _run([*args, "-o", tmp_path / "ref.npz"])
    assert r.returncode == 0, r.stderr
    out, ck = tmp_path / "m.npz", tmp_path / "ck.npz"
    hit = _kill_and_resume([*args, "-o", out, "--checkpoint", ck, "--checkpoint-every", "1"], ck, out, seed=1)
    assert hit >= 1
    assert np.array_equal(np.load(out)["weights"], np.load(tmp_path / "ref.npz")["weights"])
    assert not ck.exists() and _no_temporary_left(tmp_path)


def _conll(path, n_sentences=1500, seed=0):
    """A synthetic chunking file (word, tag, label): labels follow the words with noise."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(60)]
    lines = []
    for _ in range(n_sentences):
        for _ in range(rng.randint(4, 14)):
            w = rng.choice(words)
            k = int(w[1:])
            lab = ["B-NP", "I-NP", "B-VP", "O"][(k + (rng.random() < 0.2)) % 4]
            lines.append(f"{w} t{k % 7} {lab}")
        lines.append("")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


CRF_PATTERNS = sample_path("patterns/chunk.pat")


@pytest.mark.slow
def test_crf_train_killed_and_resumed_ends_in_the_uninterrupted_model(tmp_path):
    data = _conll(tmp_path / "train.txt")
    args = ["crf", "train", "-p", CRF_PATTERNS, "--stopwin", "0", "--maxiter", "100", "--rho1", "0.05",
            "--threads", "1", "--quiet", data]
    r = _run([*args, tmp_path / "ref.mdl"])
    assert r.returncode == 0, r.stderr
    out, ck = tmp_path / "m.mdl", tmp_path / "ck.npz"
    hit = _kill_and_resume([*args, out, "--checkpoint", ck, "--checkpoint-every", "1"], ck, out, seed=2)
    assert hit >= 1
    a, b = CRF.load(tmp_path / "ref.mdl"), CRF.load(out)
    assert a.space_.observations == b.space_.observations and np.array_equal(a.theta_, b.theta_)
    assert not ck.exists() and _no_temporary_left(tmp_path)


@pytest.mark.slow
@pytest.mark.parametrize("which,sig", [("lm", signal.SIGINT), ("crf", signal.SIGINT), ("lm", signal.SIGTERM)])
def test_ctrl_c_writes_a_checkpoint_and_exits_130_without_the_model(tmp_path, which, sig):
    """Ctrl-C (SIGINT), and SIGTERM the same way."""
    if which == "lm":
        out = tmp_path / "m.npz"
        out.write_bytes(b"the model of an earlier run")  # left as it is
        args = ["train", TRAIN, "--order", "3", "--tol", "0", "--epochs", "400", "--base", "none", "--quiet", "-o",
                out]
        ref = LogLinearLM(order=3, tol=0.0, max_iter=400).fit(load_training_corpus(TRAIN, unk=True)).weights_
    else:
        data = _conll(tmp_path / "train.txt")
        out = tmp_path / "m.mdl"
        args = ["crf", "train", "-p", CRF_PATTERNS, "--stopwin", "0", "--maxiter", "150", "--rho1", "0.05",
                "--threads", "1", "--quiet", data, out]
    ck = tmp_path / "ck.npz"
    p = _popen([*args, "--checkpoint", ck, "--checkpoint-every", "10"])
    assert _wait_for_new_checkpoint(ck, p), p.communicate()
    first = _read(ck)[1]
    p.send_signal(sig)
    _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted: checkpoint of iteration "), err
    assert f"{out} not written; continue with --resume" in lines[0]
    meta = _read(ck)[1]
    assert lines[0].startswith(f"interrupted: checkpoint of {meta['where']} written")
    assert meta["fit"]["state"]["n_iter"] >= first["fit"]["state"]["n_iter"]
    if which == "lm":
        assert out.read_bytes() == b"the model of an earlier run"
    else:
        assert not out.exists()
    assert _no_temporary_left(tmp_path)
    r = _run([*args, "--checkpoint", ck, "--resume"])
    assert r.returncode == 0, r.stderr
    if which == "lm":
        assert np.array_equal(np.load(out)["weights"], ref)
    else:
        full = _run([*args[:-1], tmp_path / "ref.mdl"])
        assert full.returncode == 0, full.stderr
        assert np.array_equal(CRF.load(out).theta_, CRF.load(tmp_path / "ref.mdl").theta_)
    assert not ck.exists()


def test_ctrl_c_before_the_first_iteration_stops_at_once(tmp_path, monkeypatch):
    """No state to save yet: KeyboardInterrupt goes through, the command says so."""
    runner = CliRunner()

    def interrupt(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(LogLinearLM, "_build", interrupt)
    r = _lm_cli(runner, "-o", tmp_path / "m.npz", "--checkpoint", tmp_path / "ck.npz")
    assert r.exit_code == 130
    assert r.output.strip() == (f"interrupted: {tmp_path / 'm.npz'} not written; stopped before the first "
                                "checkpoint, nothing to resume")
    assert os.listdir(tmp_path) == []


# ---------------------------------------------------------------------- refusals
@pytest.fixture
def lm_checkpoint(tmp_path, monkeypatch):
    """A checkpoint of `suffixlm train --order 3` at iteration 4, and the arguments."""
    args = ["--epochs", "20", "--tol", "0", "-o", tmp_path / "m.npz", "--checkpoint", tmp_path / "ck.npz"]
    with monkeypatch.context() as mp:
        _stop_at(mp, 4)
        r = _lm_cli(CliRunner(), *args)
    assert r.exit_code == 130, r.output
    return tmp_path / "ck.npz", args


def test_resume_with_other_options_or_data_is_refused(tmp_path, lm_checkpoint):
    ck, args = lm_checkpoint
    runner = CliRunner()
    before = ck.read_bytes()
    r = runner.invoke(main, ["train", str(TRAIN), "--order", "4", "--quiet", *map(str, args), "--resume"])
    assert r.exit_code == 1
    assert r.output.strip() == (f"Error: {ck}: the checkpoint was written with order = 3, this run has 4; resume "
                                "with the same data and options, or start again without --resume")
    other = tmp_path / "other.txt"
    other.write_text(TRAIN.read_text(encoding="utf-8") + "the woman ran\n", encoding="utf-8")
    r = runner.invoke(main, ["train", str(other), "--order", "3", "--quiet", *map(str, args), "--resume"])
    assert r.exit_code == 1
    assert r.output.strip() == (f"Error: {ck}: the checkpoint was written for other training data than this run's; "
                                "resume with the same data and options, or start again without --resume")
    # another command's checkpoint
    data = _conll(tmp_path / "train.txt", n_sentences=20)
    r = runner.invoke(main, ["crf", "train", "-p", str(CRF_PATTERNS), "--quiet", str(data), str(tmp_path / "x.mdl"),
                             "--checkpoint", str(ck), "--resume"])
    assert r.exit_code == 1
    assert r.output.strip() == f"Error: {ck}: a checkpoint of `suffixlm train`, not of `suffixlm crf train`"
    assert ck.read_bytes() == before  # a refused resume leaves the checkpoint as it is
    # --epochs is a cap: it may change
    r = runner.invoke(main, ["train", str(TRAIN), "--order", "3", "--quiet", *map(str, args), "--epochs", "6",
                             "--resume", "--json"])
    assert r.exit_code == 0 and '"steps": 6' in r.output


def test_the_estimator_refuses_a_checkpoint_of_other_parameters(corpus, tmp_path, monkeypatch):
    path = tmp_path / "ck.npz"
    with monkeypatch.context() as mp:
        _stop_at(mp, 3)
        with pytest.raises(Interrupted):
            LogLinearLM(order=3, tol=0.0).fit(corpus, checkpoint=Checkpoint(path))
    with pytest.raises(CheckpointError, match="written with lam = null, this run has 0.001"):
        LogLinearLM(order=3, tol=0.0, lam=1e-3).fit(corpus, checkpoint=Checkpoint(path, resume=True))
    with pytest.raises(CheckpointError, match="a checkpoint of LogLinearLM training, not of CRF"):
        CRF(patterns=PATTERNS).fit([[["a", "b"]]], [["L"]], checkpoint=Checkpoint(path, resume=True))


def test_a_checkpoint_that_cannot_be_written_stops_with_one_line(corpus, tmp_path):
    path = tmp_path / "gone" / "ck.npz"
    with pytest.raises(CheckpointError, match=f"^{path}: cannot write: no such directory"):
        LogLinearLM(order=3, max_iter=5).fit(corpus, checkpoint=Checkpoint(path, every=2))


def test_checkpoint_options_are_checked_before_any_work(tmp_path, lm_checkpoint):
    ck, args = lm_checkpoint
    runner = CliRunner()
    out = tmp_path / "m2.npz"
    cases = [
        (["--checkpoint", ck], f"Error: {ck}: a checkpoint is already there: continue it with --resume, or delete it "
                               "to start again"),
        (["--checkpoint", tmp_path / "none.npz", "--resume"], f"Error: {tmp_path / 'none.npz'}: cannot resume: no "
                                                             "such checkpoint"),
        (["--resume"], "Error: --resume needs --checkpoint PATH (the checkpoint to go on from)"),
        (["--checkpoint-every", "5"], "Error: --checkpoint-every needs --checkpoint PATH"),
        (["--checkpoint", out], "Error: --checkpoint must be another file than the model"),
        (["--checkpoint", TRAIN], "this is the input file"),
        (["--checkpoint", tmp_path / "c.npz", "--checkpoint-every", "0s"], "expected a time > 0"),
        (["--checkpoint", tmp_path / "c.npz", "--checkpoint-every", "often"], "expected a number of iterations (50)"),
    ]
    for extra, want in cases:
        r = runner.invoke(main, ["train", str(TRAIN), "--quiet", "-o", str(out), *map(str, extra)])
        assert r.exit_code in (1, 2) and want in r.output, (extra, r.output)
        assert not out.exists()
    data = _conll(tmp_path / "train.txt", n_sentences=5)
    for extra, want in ((["-a", "sag", "--rho1", "0"], "--algorithm sag"), (["--grow"], "--grow"),
                        (["-a", "sag-nus", "--rho1", "0"], "--algorithm sag-nus")):
        r = runner.invoke(main, ["crf", "train", "-p", str(CRF_PATTERNS), *extra, str(data), str(tmp_path / "x.mdl"),
                                 "--checkpoint", str(tmp_path / "c.npz")])
        assert r.exit_code == 2 and f"--checkpoint is not supported with {want}" in r.output


def _rewrite(ck, change):
    """Load the checkpoint, let ``change(arrays, meta)`` edit it, save it again."""
    arrays, meta = _read(ck)
    meta.pop("format"), meta.pop("version")
    change(arrays, meta)
    meta["arrays"] = {k: v.ndim for k, v in arrays.items()}
    os.unlink(ck)
    save_container(ck, arrays, meta, "suffixlm-checkpoint", 1)


def _set(path, value):
    def change(arrays, meta):
        d = meta
        for k in path[:-1]:
            d = d[k]
        d[path[-1]] = value
    return change


def _nan_at(name, i):
    def change(arrays, meta):
        arrays[name] = arrays[name].copy()
        arrays[name][i] = np.nan
    return change


def _drop(name):
    def change(arrays, meta):
        del arrays[name]
    return change


@pytest.mark.parametrize("change,want", [
    (_nan_at("fit.x", 7), "fit.x: entry 7 is not finite"),
    (_set(("fit", "state", "L"), -1.0), "fit.L: -1.0 is <= 0"),
    (_set(("fit", "state", "t"), 0.5), "fit.t: 0.5 is < 1"),
    (_set(("fit", "state", "n_iter"), 5), "fit.history: 4 records, the state's iteration count needs 5"),
    (_set(("fit", "state", "calm"), "x"), "fit.calm: 'x' is not an integer"),
    (_set(("fit", "solver"), "sage"), "fit.solver: 'sage', this run uses 'fista'"),
    (_drop("fit.y"), "fit.y: missing"),
    (lambda a, m: a.update({"fit.x": a["fit.x"][:-1]}), "fit.x: shape"),
    (_set(("trainer",), "CRF"), "a checkpoint of CRF training, not of LogLinearLM"),
    (_set(("fit",), 3), "header entry 'fit' is not an object or null"),
    (lambda a, m: m["fit"]["state"]["history"][2].update(n_iter=9), "fit.history[2]: n_iter 9, expected 3"),
])
def test_a_damaged_or_tampered_checkpoint_is_refused(lm_checkpoint, change, want):
    ck, args = lm_checkpoint
    _rewrite(ck, change)
    r = _lm_cli(CliRunner(), *args, "--resume")
    assert r.exit_code == 1, r.output
    lines = r.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"Error: {ck}: ") and want in lines[0], r.output


@pytest.mark.parametrize("change,want", [
    (_set(("fit", "extra", "threads"), 0), "fit.extra.threads: 0 is not an integer >= 1"),
    (_set(("fit", "extra", "log"), [{"iteration": 1}]), "fit.extra.log: not a list of training log entries"),
    (_set(("fit", "extra", "objectives"), ["x"]), "fit.extra.objectives: not a list of numbers"),
    (_set(("fit", "state", "head"), 7), "fit.head: 7 is > 4"),
    (_set(("fit", "state", "rng"), 1), ""),  # owlqn has no generator: an extra entry is ignored
    (lambda a, m: a.update({"fit.s": a["fit.s"][:3], "fit.y": a["fit.y"][:3], "fit.rho": a["fit.rho"][:3]}),
     "fit.count: 5 is > 3"),
    (lambda a, m: (a.update({"fit.s": a["fit.s"][:3], "fit.y": a["fit.y"][:3], "fit.rho": a["fit.rho"][:3]}),
                   m["fit"]["state"].update(count=3, head=0)), "fit.s: 3 L-BFGS pairs, history = 5"),
    (lambda a, m: a.update({"fit.s": a["fit.s"].astype(np.float64)}), "fit.s: float64 entries, expected float32"),
])
def test_a_tampered_crf_checkpoint_is_refused(crf_data, tmp_path, monkeypatch, change, want):
    X, y = crf_data
    kw = dict(patterns=PATTERNS, max_iter=10, stopwin=0, threads=1)
    path = tmp_path / "ck.npz"
    with monkeypatch.context() as mp:
        _stop_at(mp, 6)
        with pytest.raises(Interrupted):
            CRF(**kw).fit(X, y, checkpoint=Checkpoint(path, every=1000))
    _rewrite(path, change)
    if not want:
        assert np.array_equal(CRF(**kw).fit(X, y, checkpoint=Checkpoint(path, resume=True)).theta_,
                              CRF(**kw).fit(X, y).theta_)
        return
    with pytest.raises(CheckpointError) as e:
        CRF(**kw).fit(X, y, checkpoint=Checkpoint(path, resume=True))
    assert str(e.value).startswith(f"{path}: {want}")


def test_a_truncated_or_corrupted_file_is_refused(lm_checkpoint):
    ck, args = lm_checkpoint
    raw = ck.read_bytes()
    i = raw.index(b"fit.x.npy") + 200  # inside the array's data
    for content, want in ((raw[: len(raw) // 2], "not a readable suffixlm-checkpoint file"),
                          (raw[:i] + bytes([raw[i] ^ 0x40]) + raw[i + 1:], "not a readable suffixlm-checkpoint file"),
                          (b"", "this is an empty file, not a checkpoint file"),
                          (b"not a checkpoint at all\n", "this is a text file, not a checkpoint file")):
        ck.write_bytes(content)
        r = _lm_cli(CliRunner(), *args, "--resume")
        assert r.exit_code == 1 and r.output.startswith(f"Error: {ck}: {want}"), r.output
    model = LogLinearLM(order=2, max_iter=2).fit(["a b", "b a"])
    model.save(ck)  # a model is no checkpoint
    r = _lm_cli(CliRunner(), *args, "--resume")
    assert r.exit_code == 1 and "this is a suffixlm log-linear language model, not a checkpoint file" in r.output


# ---------------------------------------------------------------------- small parts
def test_parse_every():
    assert parse_every("50") == (50, None) and parse_every(7) == (7, None)
    assert parse_every("30s") == (None, 30.0) and parse_every("1.5m") == (None, 90.0)
    assert parse_every("2h") == (None, 7200.0)
    for bad in ("0", "-1", "x", "5 min", "0s", "", True, 2.5):
        with pytest.raises(ValueError, match="checkpoint interval"):
            parse_every(bad)


def test_a_killed_writer_s_temporary_file_is_removed_by_the_next_write(tmp_path):
    """SIGKILL leaves the temporary file of an atomic write; the next write to the same
    name removes it once its process is gone, and leaves a live writer's alone."""
    from suffixlm.io import _host_tag

    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    host = _host_tag()
    stale = tmp_path / f".m.npz.{host}.{dead.pid}.0123abcd.tmp"
    live = tmp_path / f".m.npz.{host}.{os.getppid()}.0123abcd.tmp"
    other = tmp_path / f".x.npz.{host}.{dead.pid}.0123abcd.tmp"
    for p in (stale, live, other):
        p.write_bytes(b"partial")
    with atomic_write(tmp_path / "m.npz") as fh:
        fh.write(b"complete")
    assert sorted(os.listdir(tmp_path)) == sorted(["m.npz", live.name, other.name])
    # a real kill during a write
    code = ("import os, signal, sys; from suffixlm.io import atomic_write\n"
            "with atomic_write(sys.argv[1]) as fh:\n    fh.write(b'half'); os.kill(os.getpid(), signal.SIGKILL)\n")
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "k.npz")])
    assert [p for p in os.listdir(tmp_path) if p.startswith(".k.npz.")] != []
    with atomic_write(tmp_path / "k.npz") as fh:
        fh.write(b"whole")
    assert [p for p in os.listdir(tmp_path) if p.startswith(".k.npz.")] == []


@pytest.fixture(scope="module")
def small_checkpoint(tmp_path_factory):
    """The bytes of a checkpoint of a small LM fit (iteration 3 of 6), and the weights
    of the uninterrupted fit."""
    from suffixlm.corpus import Corpus

    corpus = Corpus.from_strings(["the cat sat", "the dog sat", "a cat ran", "a dog ran"] * 3)
    kw = dict(order=3, max_iter=6, tol=0.0)
    ref = LogLinearLM(**kw).fit(corpus).weights_
    path = tmp_path_factory.mktemp("fuzz") / "ck.npz"
    with pytest.MonkeyPatch.context() as mp:
        _stop_at(mp, 3)
        with pytest.raises(Interrupted):
            LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, every=1000))
    return path.read_bytes(), corpus, kw, ref, path.parent


def test_fuzz_a_mutated_checkpoint_is_refused_or_resumes_exactly(small_checkpoint):
    """Bytes changed, cut or added anywhere: a CheckpointError naming the file, or (the
    change missed everything that matters) the uninterrupted result; never another
    error, never another model."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    raw, corpus, kw, ref, folder = small_checkpoint
    path = folder / "mutated.npz"

    @settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
    @given(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)), min_size=1, max_size=4),
           st.sampled_from(["flip", "cut", "insert"]))
    def check(edits, how):
        data = bytearray(raw)
        for pos, value in edits:
            if how == "flip":
                data[pos] ^= value or 1
            elif how == "cut":
                del data[pos:pos + value + 1]
            else:
                data[pos:pos] = bytes([value])
        path.write_bytes(bytes(data))
        try:
            lm = LogLinearLM(**kw).fit(corpus, checkpoint=Checkpoint(path, resume=True))
        except CheckpointError as e:
            assert str(e).startswith(f"{path}: ") and "\n" not in str(e)
            return
        assert np.array_equal(lm.weights_, ref)

    check()
