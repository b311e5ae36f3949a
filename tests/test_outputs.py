"""Every writer, CLI and Python, on outputs that are not regular files: ``-`` (stdout),
``/dev/stdout``, a character device made by ``mknod`` and a FIFO. Such an output is
written in place and never replaced (it stays a device / a FIFO, nothing else appears
beside it), with the same bytes a regular file gets; a binary model never goes to a
terminal; directories, sockets and block devices are refused before any work."""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
import threading

import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.corpora import sample_path

TRAIN = str(sample_path("tiny_lm.train.txt"))
TEST = str(sample_path("tiny_lm.test.txt"))
PATTERNS = str(sample_path("patterns/chunk.pat"))
COLUMNS = """He PRP B-NP
reckons VBZ B-VP
the DT B-NP
current JJ I-NP
account NN I-NP
. . O

Chancellor NNP O
of IN B-PP
the DT B-NP
Exchequer NNP I-NP
"""


def run(*args, ok=True):
    r = CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)
    if ok:
        assert r.exit_code == 0, r.output
    return r


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("inputs")
    arpa2, arpa3, model = d / "o2.arpa", d / "o3.arpa", d / "m.slm"
    run("kn", TRAIN, "-o", arpa2, "--order", "2", "-q")
    run("kn", TRAIN, "-o", arpa3, "--order", "3", "-q")
    run("train", TRAIN, "-o", model, "--order", "2", "--quiet", "--epochs", "5")
    cols = d / "train.col"
    cols.write_text(COLUMNS, encoding="utf-8")
    crf_model = d / "crf.model"
    run("crf", "train", "-p", PATTERNS, "--maxiter", "3", "--quiet", "--threads", "1", cols, crf_model)
    return {"arpa2": arpa2, "arpa3": arpa3, "model": model, "cols": cols, "crf": crf_model}


# name -> (binary?, function(inputs, out) writing the output)
def _python_lm_save(i, out):
    from suffixlm.model import LogLinearLM

    LogLinearLM.load(i["model"]).save(out)


def _python_write_arpa(i, out):
    from suffixlm.backoff.arpa import BackoffLM

    BackoffLM.read_arpa(i["arpa2"]).write_arpa(out)


def _python_crf_save(i, out):
    from crf.model import CRF

    CRF.load(i["crf"]).save(out)


WRITERS = {
    "kn": (False, lambda i, out: run("kn", TRAIN, "-o", out, "--order", "2", "-q")),
    "train": (True, lambda i, out: run("train", TRAIN, "-o", out, "--order", "2", "--quiet", "--epochs", "5")),
    "export": (False, lambda i, out: run("export", i["model"], "-o", out, "--quiet")),
    "prune": (False, lambda i, out: run("prune", i["arpa3"], "-o", out, "-t", "1e-4", "-q")),
    "ppl --write-lm": (False, lambda i, out: run("ppl", "--arpa", i["arpa2"], TEST, "--mix-lm", i["arpa3"],
                                                 "--write-lm", out)),
    "crf train": (True, lambda i, out: run("crf", "train", "-p", PATTERNS, "--maxiter", "3", "--quiet",
                                           "--threads", "1", i["cols"], out)),
    "crf dump": (False, lambda i, out: run("crf", "dump", i["crf"], out)),
    "crf label": (False, lambda i, out: run("crf", "label", "-m", i["crf"], "--threads", "1", i["cols"], out)),
    "LogLinearLM.save": (True, _python_lm_save),
    "BackoffLM.write_arpa": (False, _python_write_arpa),
    "CRF.save": (True, _python_crf_save),
}


def reference(inputs, tmp_path, name) -> bytes:
    out = tmp_path / "reference.out"
    WRITERS[name][1](inputs, out)
    return out.read_bytes()


@pytest.mark.parametrize("name", list(WRITERS))
def test_fifo_is_written_in_place(inputs, tmp_path, name):
    expected = reference(inputs, tmp_path, name)
    d = tmp_path / "out"
    d.mkdir()
    fifo = d / "pipe"
    os.mkfifo(fifo)
    got = []

    def reader():
        with open(fifo, "rb") as fh:
            got.append(fh.read())

    t = threading.Thread(target=reader, daemon=True)
    t.start()
    WRITERS[name][1](inputs, fifo)
    t.join(30)
    assert not t.is_alive()
    assert got == [expected]
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert os.listdir(d) == ["pipe"]  # no temporary file left, nothing renamed over it


def _null_device(path) -> bool:
    """A character device with /dev/null's numbers at ``path`` (root only)."""
    st = os.stat("/dev/null")
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, st.st_rdev)
    except (PermissionError, OSError):
        return False
    return True


@pytest.mark.parametrize("name", list(WRITERS))
def test_device_node_is_written_in_place(inputs, tmp_path, name):
    d = tmp_path / "out"
    d.mkdir()
    dev = d / "null"
    if not _null_device(dev):
        pytest.skip("mknod needs root")
    before = os.stat(dev)
    WRITERS[name][1](inputs, dev)
    after = os.lstat(dev)
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino
    assert os.listdir(d) == ["null"]


@pytest.mark.parametrize("name", [n for n in WRITERS if n.split()[0] in ("kn", "train", "export", "prune", "ppl",
                                                                          "crf")])
def test_dash_is_stdout(inputs, tmp_path, name):
    expected = reference(inputs, tmp_path, name)
    r = WRITERS[name][1](inputs, "-")
    assert r.stdout_bytes == expected  # the report, if any, went to stderr
    assert not os.path.exists("-") or not os.path.samefile("-", tmp_path)  # no file named '-' written here
    assert os.listdir(tmp_path) == ["reference.out"]


def _cli(*args, **kw):
    return subprocess.run([sys.executable, "-m", "suffixlm.cli", *map(str, args)], **kw)


def test_dev_stdout_writes_through_the_descriptor(inputs, tmp_path):
    expected = reference(inputs, tmp_path, "kn")
    r = _cli("kn", TRAIN, "-o", "/dev/stdout", "--order", "2", capture_output=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout == expected
    # appended to a file opened for appending, as a shell's >> would: nothing before it is lost
    log = tmp_path / "log.txt"
    log.write_bytes(b"first line\n")
    with open(log, "ab") as fh:
        r = _cli("kn", TRAIN, "-o", "/dev/stdout", "--order", "2", "-q", stdout=fh, stderr=subprocess.PIPE)
    assert r.returncode == 0, r.stderr
    assert log.read_bytes() == b"first line\n" + expected


def test_binary_model_refuses_a_terminal(tmp_path):
    pytest.importorskip("pty")
    leader, follower = os.openpty()
    try:
        r = _cli("train", TRAIN, "-o", "-", "--order", "2", stdout=follower, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.returncode == 1
    assert b"not written to a terminal" in r.stderr
    assert len(r.stderr.decode().strip().splitlines()) == 1


@pytest.mark.parametrize("args", [("kn", TRAIN, "--order", "2", "--binary"),
                                  ("kn", TRAIN, "--order", "2", "--quantize", "8"),
                                  ("prune", "ARPA", "-t", "1e-4", "--binary"), ("export", "MODEL", "--quantize", "8")])
def test_binary_outputs_refuse_a_terminal_before_any_work(tmp_path, args):
    """``--binary`` / ``--quantize`` of kn, prune and export: a terminal as OUTPUT is refused
    up front (one line, no progress), not after the estimate."""
    pytest.importorskip("pty")
    if "ARPA" in args or "MODEL" in args:
        (tmp_path / "m.arpa").write_text("\\data\\\nngram 1=3\n\n\\1-grams:\n-1 </s>\n-99 <s>\n-0.5 a\n\n\\end\\\n")
        args = tuple(str(tmp_path / "m.arpa") if a in ("ARPA", "MODEL") else a for a in args)
    leader, follower = os.openpty()
    try:
        r = _cli(*args, "-o", "-", stdout=follower, stderr=subprocess.PIPE, timeout=120)
    finally:
        os.close(follower)
        os.close(leader)
    assert r.returncode == 1
    assert b"not written to a terminal" in r.stderr
    assert len(r.stderr.decode().strip().splitlines()) == 1, r.stderr


def test_text_to_stdout_pipe_and_report_on_stderr(tmp_path):
    r = _cli("kn", TRAIN, "-o", "-", "--order", "2", capture_output=True)
    assert r.returncode == 0
    assert r.stdout.startswith(b"\n\\data\\\n") or r.stdout.startswith(b"\\data\\\n")
    assert b"wrote -" in r.stderr


def test_refused_kinds(tmp_path):
    sock_path = tmp_path / "sock"
    s = socket.socket(socket.AF_UNIX)
    try:
        s.bind(str(sock_path))
        r = run("kn", TRAIN, "-o", sock_path, ok=False)
    finally:
        s.close()
    assert r.exit_code == 1 and "is a socket" in r.output
    assert stat.S_ISSOCK(os.lstat(sock_path).st_mode)
    r = run("kn", TRAIN, "-o", tmp_path, ok=False)
    assert r.exit_code != 0 and "directory" in r.output
    disk = tmp_path / "disk"
    try:
        os.mknod(disk, 0o600 | stat.S_IFBLK, os.makedev(7, 200))
    except OSError:
        return
    r = run("kn", TRAIN, "-o", disk, ok=False)
    assert r.exit_code == 1 and "block device" in r.output
    assert stat.S_ISBLK(os.lstat(disk).st_mode)


def test_long_output_name(tmp_path):
    """An output name as long as the file system allows: the temporary name beside it is
    shortened, not refused."""
    out = tmp_path / ("m" * 250 + ".arpa")
    run("kn", TRAIN, "-o", out, "--order", "2", "-q")
    assert out.read_bytes().startswith(b"\n\\data\\") or out.read_bytes().startswith(b"\\data\\")
    assert os.listdir(tmp_path) == [out.name]


def test_stdout_closed_by_head_is_quiet():
    r = subprocess.run(f"{sys.executable} -m suffixlm.cli kn {TRAIN} -o - --order 3 | head -c 10 >/dev/null; "
                       "echo ${PIPESTATUS[0]}", shell=True, executable="/bin/bash", capture_output=True, text=True)
    assert r.stdout.strip() == "141"
    assert r.stderr == ""


def test_full_stdout_is_one_line(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "wb") as full:
        r = _cli("ppl", "--arpa", TRAIN, TEST, stdout=full, stderr=subprocess.PIPE)  # an error: not an ARPA
        assert r.returncode == 1
        arpa = tmp_path / "a.arpa"
        run("kn", TRAIN, "-o", arpa, "--order", "2", "-q")
        r = _cli("ppl", "--arpa", arpa, TEST, "--debug", "2", stdout=full, stderr=subprocess.PIPE)
    assert r.returncode == 1
    lines = r.stderr.decode().strip().splitlines()
    assert lines == ["Error: cannot write the output: no space left on device"]


def test_closed_stdin_is_one_line(tmp_path):
    arpa = tmp_path / "a.arpa"
    run("kn", TRAIN, "-o", arpa, "--order", "2", "-q")
    r = _cli("ppl", "--arpa", arpa, "-", stdin=subprocess.DEVNULL, capture_output=True)
    assert r.returncode == 1 and b"<stdin>: is empty" in r.stderr  # open, but empty
    r = subprocess.run(f"{sys.executable} -m suffixlm.cli ppl --arpa {arpa} - <&-", shell=True,
                       executable="/bin/bash", capture_output=True, text=True)
    assert r.returncode == 1
    assert r.stderr.strip().splitlines() == ["Error: <stdin>: cannot read: standard input is closed"]


def test_symlink_loop_output_is_refused(tmp_path):
    loop = tmp_path / "loop"
    os.symlink(loop, loop)
    r = run("kn", TRAIN, "-o", loop, "--order", "2", "-q", ok=False)
    assert r.exit_code == 1 and "too many levels of symbolic links" in r.output
    assert os.path.islink(loop) and os.listdir(tmp_path) == ["loop"]
