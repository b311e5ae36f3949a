"""Memory: how much this process may use, and allocations that say what they were for.

* ``allocate(shape, dtype, what)`` makes an array sized by the input (a weight vector, a
  solver's vectors, a work table). When the machine cannot hold it, the ``MemoryError``
  names the step and the size asked, which the command line prints as one line:
  ``Error: out of memory (CRF weights: cannot allocate 898 MiB (117,440,512 float64))``.
* ``named_allocations(what)`` does the same for a numba kernel that makes its own work
  arrays: a failed allocation inside a parallel loop surfaces as ``SystemError:
  CPUDispatcher(...) returned a result with an exception set`` (its cause the
  ``MemoryError``), a serial one as ``MemoryError`` or numba's ``ValueError: array is too
  big``; each becomes a ``MemoryError`` naming the step.
* ``memory_limit()``: the memory this process may use, the least of the machine's
  physical memory, the cgroup's limit (a container) and the address-space and data
  limits (``ulimit -v``, ``ulimit -d``), with the name of the one that binds. The CRF's
  up-front size check (:mod:`crf.budget`) takes half of it as its default limit.
"""

from __future__ import annotations

import contextlib
import os
import sys
from typing import Iterator

import numpy as np

__all__ = ["allocate", "human_bytes", "memory_limit", "named_allocations", "parse_size", "release_free_memory",
           "return_freed_memory_to_os", "reuse_freed_memory", "start_point"]

_UNITS = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")


def human_bytes(n: float) -> str:
    """``898 MiB``, ``13.2 GiB``, ``512 B``: three significant figures at most."""
    n = float(n)
    if n < 1024:
        return f"{int(n)} B"
    for unit in _UNITS:
        n /= 1024.0
        if n < 1024 or unit == _UNITS[-1]:
            return f"{n:.0f} {unit}" if n >= 100 else f"{n:.3g} {unit}"
    raise AssertionError("unreachable")


_SIZE_UNITS = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40, "P": 1 << 50}


def parse_size(text) -> int:
    """Bytes from a size as lmplz's ``-S`` takes it: ``2G``, ``500M``, ``1.5GiB``, ``64k``,
    ``123456`` (bytes), or ``80%`` of the memory this process may use (``memory_limit``).
    Units are powers of 1024 (``GB`` too, as lmplz reads it). ``ValueError`` with a
    one-line reason when the text is no size or not positive."""
    raw = str(text).strip()
    body = raw.upper().replace(" ", "")
    try:
        if body.endswith("%"):
            pct = float(body[:-1])
            if not 0 < pct <= 100:
                raise ValueError
            value = memory_limit()[0] * pct / 100
        else:
            for suffix in ("IB", "B"):
                if body.endswith(suffix) and len(body) > len(suffix) and body[-len(suffix) - 1] in "KMGTP":
                    body = body[:-len(suffix)]
                    break
            unit = body[-1] if body and body[-1] in "BKMGTP" else ""
            number = body[:-1] if unit else body
            value = float(number) * _SIZE_UNITS[unit]
    except (ValueError, IndexError, KeyError):
        raise ValueError(f"{raw!r}: expected a size like 2G, 500M, 1.5GiB or 80%") from None
    if not (value >= 1 and value < 2**62):
        raise ValueError(f"{raw!r}: a size must be at least 1 byte")
    return int(value)


def release_free_memory() -> None:
    """Give the C allocator's free pages back to the system (glibc's ``malloc_trim``; a
    no-op elsewhere). After a step that freed many small objects and temporary arrays
    (encoding a corpus), glibc keeps their pages for reuse, and a process that then
    allocates solver vectors elsewhere peaks that much higher."""
    global _malloc_trim
    if _malloc_trim is None:
        _malloc_trim = False
        if sys.platform.startswith("linux"):
            try:
                import ctypes

                _malloc_trim = ctypes.CDLL(None).malloc_trim  # glibc; musl has none: AttributeError
                _malloc_trim.argtypes, _malloc_trim.restype = [ctypes.c_size_t], ctypes.c_int
            except (OSError, AttributeError):
                _malloc_trim = False
    if _malloc_trim:
        _malloc_trim(0)


_malloc_trim = None


def _mallopt(mmap_threshold: int, trim_threshold: int) -> None:
    """glibc's ``M_MMAP_THRESHOLD`` and ``M_TRIM_THRESHOLD`` (a no-op elsewhere); setting
    either ends glibc's dynamic mmap threshold."""
    try:
        import ctypes

        libc = ctypes.CDLL("libc.so.6")
        libc.mallopt(-3, mmap_threshold)  # M_MMAP_THRESHOLD
        libc.mallopt(-1, trim_threshold)  # M_TRIM_THRESHOLD
    except (OSError, AttributeError):
        pass


def return_freed_memory_to_os() -> None:
    """Make glibc hand freed large blocks back at once. Its default (a dynamic mmap
    threshold) keeps freed numpy arrays of up to 32 MB in the heap, which only inflates
    the peak RSS of a process that allocates and frees big arrays stage after stage."""
    _mallopt(128 * 1024, 128 * 1024)


def reuse_freed_memory() -> None:
    """The other way round, for a short job of many mid-sized temporaries (numpy scoring a
    text on a mapped binary model): glibc serves arrays of up to 32 MB from its heap and
    keeps up to 64 MB free there, where by default it maps the first ones afresh and
    trims the heap, and every new page costs a fault (PTB test on the default-cut-off
    KN5 binary, the scoring step in a fresh process: 40 -> 30 ms)."""
    _mallopt(32 << 20, 64 << 20)


def _shape(shape) -> tuple[int, ...]:
    if isinstance(shape, (int, np.integer)):
        return (int(shape),)
    return tuple(int(s) for s in shape)


def allocate(shape, dtype=np.float64, what: str = "an array", zero: bool = False) -> np.ndarray:
    """``np.empty(shape, dtype)`` (``zero``: ``np.zeros``), whose failure for want of
    memory is a ``MemoryError`` naming ``what`` and the size asked (numpy's own says
    only "Unable to allocate 898 MiB for an array with shape ...")."""
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    try:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    except MemoryError:
        pass
    except ValueError as e:  # numpy's "array is too big" (beyond the address space)
        if "too big" not in str(e) and "maximum" not in str(e):
            raise
    raise MemoryError(allocation_failed(what, shape, dtype)) from None


def start_point(n: int, x0, what: str) -> np.ndarray:
    """A solver's float64 weights of length n: a copy of ``x0``, or zeros when x0 is None
    (``allocate``'s MemoryError naming ``what``)."""
    x = allocate(n, np.float64, what, zero=x0 is None)
    if x0 is not None:
        x[:] = x0
    return x


def allocation_failed(what: str, shape, dtype=np.float64) -> str:
    """The message of a failed allocation: ``WHAT: cannot allocate SIZE (COUNT DTYPE)``."""
    shape = _shape(shape)
    dtype = np.dtype(dtype)
    count = int(np.prod(shape, dtype=object)) if shape else 1
    dims = f"{count:,} {dtype.name}" if len(shape) <= 1 else f"{' x '.join(f'{s:,}' for s in shape)} {dtype.name}"
    return f"{what}: cannot allocate {human_bytes(count * dtype.itemsize)} ({dims})"


@contextlib.contextmanager
def named_allocations(what: str, nbytes: int | None = None) -> Iterator[None]:
    """Run a numba kernel that allocates its own work arrays: a failed allocation inside
    it becomes one ``MemoryError`` naming ``what`` (and ``nbytes``, the size of its work
    arrays, when the caller knows it), not a ``SystemError`` from a parallel loop."""
    size = "" if nbytes is None else f" (about {human_bytes(nbytes)} of work arrays)"
    try:
        yield
    except MemoryError as e:
        raise MemoryError(f"{what}{size}: {e or 'an allocation failed'}") from None
    except SystemError as e:
        cause = e.__cause__ or e.__context__
        if not isinstance(cause, (MemoryError, ValueError)) or \
                isinstance(cause, ValueError) and "too big" not in str(cause):
            raise
        raise MemoryError(f"{what}{size}: {cause or 'an allocation failed'}") from None
    except ValueError as e:
        if "array is too big" not in str(e):
            raise
        raise MemoryError(f"{what}{size}: {e}") from None


def _read_int(path: str) -> int | None:
    try:
        with open(path, encoding="ascii") as fh:
            text = fh.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None


def _cgroup_limit() -> int | None:
    """The memory limit of this process's cgroup (v2 ``memory.max``, v1
    ``memory.limit_in_bytes``), None where there is none."""
    paths = ["/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"]
    with contextlib.suppress(OSError, UnicodeDecodeError):
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            for line in fh:
                parts = line.rstrip("\n").split(":", 2)
                if len(parts) == 3 and parts[2] not in ("", "/"):
                    if parts[0] == "0":
                        paths.insert(0, f"/sys/fs/cgroup{parts[2]}/memory.max")
                    elif "memory" in parts[1].split(","):
                        paths.insert(0, f"/sys/fs/cgroup/memory{parts[2]}/memory.limit_in_bytes")
    for p in paths:
        v = _read_int(p)
        if v is not None and v < 1 << 60:  # v1 writes "no limit" as a huge number
            return v
    return None


def memory_limit() -> tuple[int, str]:
    """``(bytes, what)``: the memory this process may use and what sets it (``"this
    machine's memory"``, ``"the cgroup's memory limit"``, ``"the address-space limit
    (ulimit -v)"``, ``"the data-segment limit (ulimit -d)"``)."""
    found: list[tuple[int, str]] = []
    with contextlib.suppress(ValueError, OSError, AttributeError):
        found.append((os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"), "this machine's memory"))
    cg = _cgroup_limit()
    if cg is not None:
        found.append((cg, "the cgroup's memory limit"))
    with contextlib.suppress(ImportError, ValueError, OSError):
        import resource

        for name, what in (("RLIMIT_AS", "the address-space limit (ulimit -v)"),
                           ("RLIMIT_DATA", "the data-segment limit (ulimit -d)")):
            soft = resource.getrlimit(getattr(resource, name))[0]
            if soft != resource.RLIM_INFINITY and soft > 0:
                found.append((int(soft), what))
    if not found:
        return 1 << 34, "an assumed 16 GiB"
    return min(found)
