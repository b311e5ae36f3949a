"""The ``suffixlm`` command's start-up: numba's import-time BLAS probe does not import
scipy there (``cli._NumbaBlasProbe``), while scipy and numba's linear algebra still work
afterwards, and a process that only imports suffixlm keeps numba's own behaviour."""

import subprocess
import sys

import pytest

pytest.importorskip("scipy")

CLI = r"""
import sys
from suffixlm.cli import main
sys.argv = ["suffixlm", "kn", sys.argv[1], "-o", sys.argv[2], "-q", "--order", "2"]
try:
    main()
except SystemExit as e:
    assert not e.code, e.code
import numba.np.arraymath
assert "numba.np.arraymath" in sys.modules
assert "scipy.linalg" not in sys.modules, "numba's probe imported scipy.linalg"
from suffixlm.cli import _NumbaBlasProbe
assert not any(isinstance(f, _NumbaBlasProbe) for f in sys.meta_path), "the finder stayed"
import numpy as np
import scipy.linalg  # importable as ever once the probe has run
assert abs(scipy.linalg.det(np.eye(2)) - 1) < 1e-12
from numba import njit

@njit
def dot(a, b):
    return np.dot(a, b)

assert dot(np.eye(2), np.ones((2, 2))).sum() == 4.0  # BLAS through scipy, compiled after the probe
print("ok")
"""

LIBRARY = r"""
import sys
import suffixlm
import numba.np.arraymath
assert "scipy.linalg" in sys.modules  # numba's own probe, untouched outside the command
print("ok")
"""


def test_the_command_skips_numbas_blas_probe(tmp_path):
    (tmp_path / "t.txt").write_text("a b c\nb c a\nc a b a\n")
    r = subprocess.run([sys.executable, "-c", CLI, str(tmp_path / "t.txt"), str(tmp_path / "m.arpa")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok"]
    assert (tmp_path / "m.arpa").read_text().startswith("\n\\data\\")


def test_a_library_process_keeps_numbas_probe():
    r = subprocess.run([sys.executable, "-c", LIBRARY], capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok"]


EXIT = r"""
import atexit, gc, sys
registered = []
real = atexit.register
atexit.register = lambda f, *a, **k: (registered.append(f), real(f, *a, **k))[1]
from click.testing import CliRunner
from suffixlm.cli import main
for _ in range(2):
    r = CliRunner().invoke(main, ["kn", sys.argv[1], "-o", sys.argv[2], "-q", "--order", "2"])
    assert r.exit_code == 0, r.output
assert registered.count(gc.freeze) == 1, registered
print("ok")
"""


def test_the_command_freezes_the_collected_objects_once_at_exit(tmp_path):
    """``cli._quick_exit``: ``gc.freeze`` registered at exit, once per process however many
    commands run; the process ends cleanly and its output is whole."""
    (tmp_path / "t.txt").write_text("a b c\nb c a\nc a b a\n")
    r = subprocess.run([sys.executable, "-c", EXIT, str(tmp_path / "t.txt"), str(tmp_path / "m.arpa")],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ok"]
    assert (tmp_path / "m.arpa").read_text().rstrip().endswith("\\end\\")
