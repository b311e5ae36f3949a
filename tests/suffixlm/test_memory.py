"""suffixlm.memory: allocations that name their step and size, numba kernels' failed work
arrays as one MemoryError, the memory limit (issue 24, item 2)."""

from __future__ import annotations

import re
import types

import numpy as np
import pytest
from click.testing import CliRunner
from numba import njit, prange

from suffixlm import memory
from suffixlm.cli import main
from suffixlm.corpora import sample_path
from suffixlm.memory import allocate, human_bytes, memory_limit, named_allocations, start_point


def test_human_bytes():
    assert [human_bytes(n) for n in (0, 512, 1024, 1536, 898 * 2**20, 1.5 * 2**30, 2**62)] == \
        ["0 B", "512 B", "1 KiB", "1.5 KiB", "898 MiB", "1.5 GiB", "4 EiB"]


def test_allocate_names_the_step_and_the_size():
    a = allocate((3, 2), np.int32, "x", zero=True)
    assert a.shape == (3, 2) and a.dtype == np.int32 and not a.any()
    with pytest.raises(MemoryError, match=re.escape("the test's weights: cannot allocate 32 EiB "
                                                    "(4,611,686,018,427,387,904 float64)")):
        allocate(2**62, np.float64, "the test's weights")
    with pytest.raises(MemoryError, match=re.escape("a table: cannot allocate 8 EiB (1,073,741,824 x "
                                                    "1,073,741,824 float64)")):
        allocate((2**30, 2**30), np.float64, "a table", zero=True)
    with pytest.raises(ValueError, match="negative"):  # not a memory problem: numpy's own error
        allocate(-1, np.float64, "x")
    x0 = np.arange(4.0)
    x = start_point(4, x0, "w")
    assert x is not x0 and np.array_equal(x, x0)
    assert np.array_equal(start_point(3, None, "w"), np.zeros(3))


@njit(parallel=True)
def _parallel_allocation(n, out):
    for i in prange(out.shape[0]):
        a = np.empty(n)
        a[0] = 1.0
        out[i] = a[0]


@njit
def _serial_allocation(n):
    a = np.empty(n)
    a[0] = 2.0
    return a[0]


def test_a_kernel_whose_work_arrays_fail_is_one_memory_error_naming_the_step():
    """Before: a parallel loop's failed allocation surfaced as ``SystemError:
    CPUDispatcher(...) returned a result with an exception set``."""
    out = np.zeros(4)
    with pytest.raises(SystemError):
        _parallel_allocation(1 << 60, out)
    with pytest.raises(MemoryError, match=r"^CRF gradient \(about 8 EiB of work arrays\): .*too big"):
        with named_allocations("CRF gradient", 1 << 63):
            _parallel_allocation(1 << 60, out)
    with pytest.raises(MemoryError, match=r"^the suffix tree: .*too big"):
        with named_allocations("the suffix tree"):
            _serial_allocation(1 << 60)
    with named_allocations("fine"):
        assert _serial_allocation(3) == 2.0
    with pytest.raises(ValueError, match="other"):  # other errors pass through
        with named_allocations("x"):
            raise ValueError("other")


def test_memory_limit_is_the_least_of_what_binds(monkeypatch):
    total, what = memory_limit()
    assert total > 0 and isinstance(what, str)
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = 1 << 40 if hard == resource.RLIM_INFINITY else hard
    if limit < total:
        pytest.skip("the address space is already the tightest limit")
    monkeypatch.setattr(memory, "_cgroup_limit", lambda: total // 3)
    assert memory_limit() == (total // 3, "the cgroup's memory limit")


class _SmallNumpy(types.SimpleNamespace):
    """numpy, whose ``empty`` and ``zeros`` cannot make arrays of more than 200 elements
    (the memory of a small machine, for an in-process test)."""

    def __getattr__(self, name):
        return getattr(np, name)


def _small(maker):
    def make(shape, dtype=float, *args, **kwargs):
        if int(np.prod(shape)) > 200:
            raise MemoryError(f"Unable to allocate for an array with shape {shape}")
        return maker(shape, dtype, *args, **kwargs)
    return make


def test_lm_training_out_of_memory_names_its_step(monkeypatch, tmp_path):
    monkeypatch.setattr(memory, "np", _SmallNumpy(empty=_small(np.empty), zeros=_small(np.zeros)))
    r = CliRunner().invoke(main, ["train", str(sample_path("tiny_lm.train.txt")), "-o", str(tmp_path / "m.lm"),
                                  "--order", "3", "--base", "none", "-q"])
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    assert re.search(r"^Error: out of memory \(LM objective \([\d,]+ parameters, [\d,]+ suffix-tree nodes\): "
                     r"the \w+[\w ]*: cannot allocate [\d.]+ [KMG]iB \([\d,]+ float64\)\)$", r.output, re.M), r.output
    assert not (tmp_path / "m.lm").exists()


def test_parse_size_reads_sizes_as_lmplz():
    from suffixlm.memory import memory_limit, parse_size

    assert parse_size("2G") == parse_size("2GB") == parse_size("2GiB") == parse_size("2 g") == 2 << 30
    assert parse_size("500M") == 500 << 20 and parse_size("64k") == 64 << 10 and parse_size("1.5T") == 3 << 39
    assert parse_size("123456") == parse_size("123456B") == 123456
    assert parse_size("50%") == memory_limit()[0] // 2
    for bad in ["", "G", "x", "2X", "0", "-1G", "nan", "inf", "0%", "101%", "1e30T", "%"]:
        with pytest.raises(ValueError, match="size"):
            parse_size(bad)
