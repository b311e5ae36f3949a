"""Dask options are checked before a cluster starts, a closed scheduler port fails within
seconds, and Ctrl-C during a run on local workers ends with one line (issue 24, item 5)."""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time

import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.corpora import sample_path

pytest.importorskip("distributed")
TRAIN = str(sample_path("tiny_lm.train.txt"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


@pytest.mark.parametrize("args, message", [
    (["--workers", "1", "--memory-limit", "-1GB"], "a worker needs at least 64 MiB"),
    (["--workers", "1", "--memory-limit", "lots"], "expected a size like 2GB"),
    (["--scheduler", "not an address"], "expected a scheduler address"),
    (["--scheduler", "tcp://127.0.0.1:99999"], "expected a scheduler address"),
])
def test_bad_dask_options_fail_before_a_cluster_starts(tmp_path, args, message):
    t0 = time.perf_counter()
    r = run("kn", TRAIN, "-o", tmp_path / "x.arpa", "--order", "2", "-q", *args)
    assert r.exit_code == 2 and message in r.output
    assert time.perf_counter() - t0 < 10
    assert list(tmp_path.iterdir()) == []


def test_closed_scheduler_port_fails_within_seconds(tmp_path):
    import socket

    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    t0 = time.perf_counter()
    r = run("kn", TRAIN, "-o", tmp_path / "x.arpa", "--order", "2", "-q", "--scheduler", f"tcp://127.0.0.1:{port}")
    assert r.exit_code == 1 and "cannot connect to the Dask scheduler" in r.output
    assert time.perf_counter() - t0 < 15
    assert len([x for x in r.output.splitlines() if x.strip()]) == 1


def test_ctrl_c_with_workers_is_one_line(tmp_path):
    rng = random.Random(0)
    words = [f"w{k}" for k in range(3000)]
    text = tmp_path / "big.txt"
    with open(text, "w") as fh:
        for _ in range(150_000):
            fh.write(" ".join(rng.choice(words) for _ in range(rng.randint(5, 25))) + "\n")
    out = tmp_path / "big.arpa"
    p = subprocess.Popen([sys.executable, "-m", "suffixlm.cli", "kn", str(text), "-o", str(out), "--order", "5",
                          "--workers", "2", "--min-count", "none"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, start_new_session=True)
    seen = ""
    while "workers" not in seen:  # the cluster is up
        line = p.stderr.readline()
        assert line, seen
        seen += line
    time.sleep(1.0)
    os.killpg(p.pid, signal.SIGINT)  # as a terminal does: the whole process group
    _, err = p.communicate(timeout=120)
    if p.returncode == 0:
        pytest.skip("the run ended before the interrupt")
    assert p.returncode == 130, err
    assert err.strip().splitlines()[-1] == "interrupted (Ctrl-C)"
    assert "Traceback" not in err and "Task exception" not in err
    assert not out.exists()
