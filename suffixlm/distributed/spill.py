"""A Dask-client-shaped executor in this process that keeps task results within a memory
budget, spilling the rest to a private temporary directory (``suffixlm kn --memory``).

The partitioned Kneser-Ney pipeline (``distributed.kn_counts``, ``distributed.kn_estimate``)
is written as tasks over shards of the text and first-word partitions of the n-grams, each
a pure function of arrays one partition in size. ``SpillClient`` runs those tasks in this
process, at once (``submit`` returns a finished ``SpillFuture``) or on worker threads in
the order submitted (the numba kernels release the GIL), and holds their results as
trees whose arrays are ``Leaf`` objects (a view is copied first: it would pin its base). While the arrays held
in memory stay under ``cache_bytes`` nothing is written; beyond it, the least recently used
arrays are written to files of the spill directory and dropped from memory, and read back
when a later task needs them. So the peak memory of a run is about ``cache_bytes`` plus
the working sets of the tasks running at once, whatever the size of the text, and the
disk holds the rest.

Projections (``_item``-like tasks that pick a part of a result, marked by ``projection``)
run on the stored tree itself, so picking one partition of a spilled shard reads nothing.
A leaf's file is deleted when the last result holding it is released (Python's reference
counting), and the directory when the client closes: on exit, on an error, on Ctrl-C and
on SIGTERM / SIGHUP. A run killed outright (SIGKILL) cannot clean up; the next run with the
same ``--temp-dir`` removes what such a run left on this host (``remove_stale``).
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import signal
import socket
import tempfile
import threading
import weakref
from collections import OrderedDict

import numpy as np

#: arrays smaller than this stay in memory, uncounted (task bookkeeping, small pieces)
MIN_SPILL_BYTES = 4096
#: A spill file of at least this many bytes is read back into memory aligned to it (the
#: processor's huge page, ``read_back``).
HUGE_PAGE = 2 << 20

DIR_PREFIX = "suffixlm-spill-"
OWNER_FILE = "owner"


class SpillError(OSError):
    """A spill file could not be written (a full or read-only ``--temp-dir``): its message
    is one line naming the directory, the size and the reason."""


def tree_map(fn, value):
    """``value`` with ``fn`` applied to what it holds: tuples, lists and dicts are walked."""
    if isinstance(value, tuple):
        return tuple(tree_map(fn, v) for v in value)
    if isinstance(value, list):
        return [tree_map(fn, v) for v in value]
    if isinstance(value, dict):
        return {k: tree_map(fn, v) for k, v in value.items()}
    return fn(value)


def _read_leaf(value):
    return value.get() if isinstance(value, Leaf) else value


def projection(fn):
    """Mark ``fn(value, *args)`` as picking a part of a task result without computing: the
    spill client runs it on the stored result (spilled arrays stay on disk)."""
    fn.projection = True
    return fn


def _whole_of_base(value: np.ndarray) -> bool:
    """Whether the view ``value`` is all of the memory of the array it views (a reshape
    of it, say), C-contiguous, and that array owns its memory: kept as it is, it keeps
    nothing alive that the store does not count (at 10M words and ``--memory 300M``, 477
    MB of the 1.5 GB of views the tasks returned)."""
    base = value.base
    while isinstance(base, np.ndarray) and base.base is not None:
        base = base.base
    return isinstance(base, np.ndarray) and base.nbytes == value.nbytes and value.flags.c_contiguous


def read_back(path: str, dtype, count: int) -> np.ndarray:
    """The ``count`` values of ``dtype`` in the spill file ``path`` (OSError if it holds
    fewer). One of ``HUGE_PAGE`` bytes or more is read into a numpy buffer at an address
    aligned to a huge page: numpy asks the kernel for huge pages on large arrays, but
    the kernel backs only the 2 MB-aligned stretches of one with them, so an unaligned
    array of a few MB was faulted in largely 4 KiB at a time (about 330 faults for each
    array of 4-8 MB read back; some 6M at 50M words with ``--memory 1G``). Its memory
    grows by less than one huge page (the last one, partly used); the slack before it
    is never touched."""
    dtype = np.dtype(dtype)
    nbytes = count * dtype.itemsize
    if nbytes < HUGE_PAGE:
        array = np.fromfile(path, dtype=dtype, count=count)
        if array.size != count:
            raise OSError(f"spill file {path} was cut short")
        return array
    buf = np.empty(nbytes + 2 * HUGE_PAGE, dtype=np.uint8)
    at = -buf.ctypes.data % HUGE_PAGE
    array = buf[at:at + nbytes].view(dtype)
    view = memoryview(array).cast("B")
    got = 0
    with open(path, "rb", buffering=0) as fh:
        while got < nbytes:
            n = fh.readinto(view[got:])
            if not n:
                raise OSError(f"spill file {path} was cut short")
            got += n
    return array


class Leaf:
    """One array of a stored result: in memory, on disk, or both (a clean copy)."""

    __slots__ = ("store", "array", "path", "dtype", "shape", "nbytes", "__weakref__")

    def __init__(self, store: "SpillStore", array: np.ndarray):
        self.store = store
        self.array = array
        self.path = None
        self.dtype, self.shape, self.nbytes = array.dtype, array.shape, int(array.nbytes)

    def get(self) -> np.ndarray:
        return self.store.load(self)

    def __del__(self):
        store = self.store
        if store is not None:
            store.forget(self)


class SpillStore:
    """The arrays of stored results, least recently used first; those beyond
    ``cache_bytes`` in memory are written to ``directory``. Safe to use from several
    threads (one lock, reentrant: a leaf may be freed while the store works). ``shelf``
    (``SpillClient.shelf``): with no cache, every array goes to disk as it comes and
    leaves memory as soon as its reader lets go (views written as they are)."""

    def __init__(self, directory: str, cache_bytes: int, min_spill: int = MIN_SPILL_BYTES, shelf: bool = False):
        self.directory = directory
        self.shelf = shelf
        self.cache_bytes = int(cache_bytes)
        self.min_spill = int(min_spill)
        self.in_memory: OrderedDict = OrderedDict()  # id(leaf) -> weak reference, in memory, oldest first
        self.held = 0  # bytes of the arrays in memory
        self.on_disk = 0  # bytes of the spill files
        self.peak_disk = 0
        self.written = 0  # bytes written in all
        self.read = 0
        self._names = itertools.count()
        self.lock = threading.RLock()

    # ---------------------------------------------------------------- trees
    def wrap(self, value):
        """``value`` with its arrays as leaves (tuples, lists and dicts walked)."""
        return tree_map(self._wrap_array, value)

    def _wrap_array(self, value):
        if not isinstance(value, np.ndarray) or value.dtype.hasobject:
            return value
        if value.base is not None and not self.shelf and not _whole_of_base(value):  # (a shelf writes it at once)
            value = value.copy()  # a view would keep its whole base in memory, uncounted
        if value.nbytes < self.min_spill:
            return value
        leaf = Leaf(self, value)
        self._hold(leaf)
        return leaf

    def unwrap(self, value):
        """``value`` with its leaves read back as arrays."""
        return tree_map(_read_leaf, value)

    # ---------------------------------------------------------------- leaves
    def _hold(self, leaf: Leaf) -> None:
        with self.lock:
            self.in_memory[id(leaf)] = weakref.ref(leaf)
            self.held += leaf.nbytes
            self.trim(keep=None if self.shelf else leaf)

    def load(self, leaf: Leaf) -> np.ndarray:
        with self.lock:
            if leaf.array is not None:
                self.in_memory.move_to_end(id(leaf))
                return leaf.array
            count = int(np.prod(leaf.shape, dtype=np.int64))
            array = None
            if self.shelf and count and os.path.getsize(leaf.path) == leaf.nbytes:
                # mapped copy-on-write: pages come from the page cache as they are read, no
                # copy, and leave with the last view (a writer gets its own pages); a file
                # system that cannot map files is read instead
                with contextlib.suppress(OSError, ValueError):
                    array = np.asarray(np.memmap(leaf.path, dtype=leaf.dtype, mode="c", shape=leaf.shape))
            if array is None:
                array = read_back(leaf.path, leaf.dtype, count).reshape(leaf.shape)
            self.read += leaf.nbytes
            leaf.array = array
            self._hold(leaf)
            return array

    def trim(self, keep: Leaf | None = None) -> None:
        """Spill the least recently used arrays until those in memory fit the cache
        (``keep``, just made or read, stays)."""
        with self.lock:
            while self.held > self.cache_bytes and len(self.in_memory) > (0 if keep is None else 1):
                key, ref = next(iter(self.in_memory.items()))
                leaf = ref()
                if leaf is keep:
                    self.in_memory.move_to_end(key)
                    continue
                if leaf is None:  # dying: its finaliser frees it
                    del self.in_memory[key]
                    continue
                self._spill(leaf)

    def _spill(self, leaf: Leaf) -> None:
        if leaf.path is None:
            path = os.path.join(self.directory, f"{next(self._names)}.bin")
            try:
                with open(path, "wb") as fh:  # a write of the file object (numpy's tofile drops errno)
                    fh.write(memoryview(np.ascontiguousarray(leaf.array).reshape(-1)).cast("B"))
            except OSError as e:
                with contextlib.suppress(OSError):
                    os.unlink(path)
                from ..memory import human_bytes

                reason = os.strerror(e.errno).lower() if e.errno else str(e)
                raise SpillError(e.errno, f"cannot spill {human_bytes(leaf.nbytes)} to {self.directory}: {reason} "
                                 "(free some space there, or give --temp-dir elsewhere)") from None
            leaf.path = path
            self.on_disk += leaf.nbytes
            self.peak_disk = max(self.peak_disk, self.on_disk)
            self.written += leaf.nbytes
        del self.in_memory[id(leaf)]
        self.held -= leaf.nbytes
        leaf.array = None

    def forget(self, leaf: Leaf) -> None:
        """A leaf no result holds any more: its memory and its file are freed."""
        with self.lock:
            if leaf.array is not None:
                self.in_memory.pop(id(leaf), None)
                self.held -= leaf.nbytes
                leaf.array = None
            if leaf.path is not None:
                with contextlib.suppress(OSError):
                    os.unlink(leaf.path)
                self.on_disk -= leaf.nbytes
                leaf.path = None
            leaf.store = None


class SpillFuture:
    """A task's result, held by the client's store until released (or until no future of
    it is left). With worker threads, ``result`` waits for the task."""

    __slots__ = ("key", "client", "event", "error", "__weakref__")

    def __init__(self, key: str, client: "SpillClient", event: threading.Event | None = None):
        self.key = key
        self.client = client
        self.event = event  # None: finished when made
        self.error: BaseException | None = None

    def wait(self) -> None:
        if self.event is not None:
            self.event.wait()
        if self.error is not None:
            raise self.error

    def result(self):
        self.wait()
        return self.client.store.unwrap(self.client.results[self.key])

    def release(self) -> None:
        self.wait()
        self.client.results.pop(self.key, None)

    def __del__(self):
        client = self.client
        if client is not None and client.results is not None:
            client.results.pop(self.key, None)


def _owner_line() -> str:
    return f"{socket.gethostname()} {os.getpid()}\n"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def remove_stale(temp_dir: str) -> list[str]:
    """Remove the spill directories under ``temp_dir`` that runs on this host left when
    killed outright (their process is gone); returns their paths."""
    removed = []
    host = socket.gethostname()
    try:
        names = os.listdir(temp_dir)
    except OSError:
        return removed
    for name in names:
        if not name.startswith(DIR_PREFIX):
            continue
        path = os.path.join(temp_dir, name)
        try:
            with open(os.path.join(path, OWNER_FILE)) as fh:
                owner_host, pid = fh.read().split()
            pid = int(pid)
        except (OSError, ValueError):
            continue
        if owner_host == host and pid != os.getpid() and not _alive(pid):
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


class SpillClient:
    """Runs tasks at once in this process; results held within ``cache_bytes`` of memory,
    the rest spilled under ``temp_dir`` (default: the system's temporary directory);
    arrays under ``min_spill`` bytes always stay in memory.

    The subset of ``distributed.Client`` the Kneser-Ney pipeline uses: ``submit`` (futures
    in the arguments, also inside lists, tuples and dicts, are replaced by their results),
    ``gather``, ``who_has``, ``scheduler_info``. ``threads`` > 1: tasks run on that many
    worker threads (the numba kernels release the GIL), each waiting for its inputs. A
    context manager: leaving it (also by an exception, Ctrl-C, SIGTERM or SIGHUP) stops
    the threads and deletes the spill directory."""

    def __init__(self, cache_bytes: int, temp_dir: str | None = None, min_spill: int = MIN_SPILL_BYTES,
                 threads: int = 1):
        temp_dir = temp_dir or tempfile.gettempdir()
        self.stale = remove_stale(temp_dir)
        self.directory = tempfile.mkdtemp(prefix=DIR_PREFIX, dir=temp_dir)
        with open(os.path.join(self.directory, OWNER_FILE), "w") as fh:
            fh.write(_owner_line())
        self.store = SpillStore(self.directory, cache_bytes, min_spill)
        self.shelves: list[SpillStore] = []
        self.results: dict | None = {}
        self._keys = itertools.count()
        self._old_handlers: dict = {}
        self.threads = max(1, int(threads))
        self._pool = None
        if self.threads > 1:
            from concurrent.futures import ThreadPoolExecutor

            self._pool = ThreadPoolExecutor(self.threads, thread_name_prefix="suffixlm-spill")

    # ---------------------------------------------------------------- the client
    def submit(self, fn, *args, key: str | None = None, **kwargs):
        """Run ``fn(*args, **kwargs)``: at once with one thread, else on a worker thread
        once the futures among ``args`` are done (tasks start in the order submitted, so
        a task's inputs have always started before it)."""
        kwargs.pop("workers", None)
        kwargs.pop("allow_other_workers", None)
        key = key or f"task-{next(self._keys)}"
        if self._pool is None:
            future = SpillFuture(key, self)
            self._run(future, fn, args, kwargs)
        else:
            future = SpillFuture(key, self, threading.Event())
            self._pool.submit(self._job, future, fn, args, kwargs)
        return future

    def _run(self, future: SpillFuture, fn, args, kwargs) -> None:
        if getattr(fn, "projection", False):
            value = fn(*self._resolve(args, False), **kwargs)
        else:
            value = self.store.wrap(fn(*self._resolve(args, True), **kwargs))
        if self.results is not None:
            self.results[future.key] = value

    def _job(self, future: SpillFuture, fn, args, kwargs) -> None:
        try:
            self._run(future, fn, args, kwargs)
        except BaseException as e:  # handed to whoever waits for this result
            future.error = e
        finally:
            future.event.set()

    def _resolve(self, value, load: bool):
        """``value`` with the futures in it replaced by their results (their arrays read
        back when ``load``, else left as stored, for a projection)."""
        def one(v):
            if isinstance(v, SpillFuture):
                v.wait()
                v = self.results[v.key]
                return self.store.unwrap(v) if load else v
            return _read_leaf(v) if load else v

        return tree_map(one, value)

    def gather(self, futures):
        return tree_map(lambda f: f.result() if isinstance(f, SpillFuture) else f, futures)

    def who_has(self, futures):
        return {}

    def scheduler_info(self):
        return {"workers": {"this process": {}}}

    def shelf(self) -> SpillStore:
        """A store of its own in the spill directory that keeps nothing in memory: each
        array given to it is written at once and read back, afresh, each time it is asked
        for. Where the in-memory estimator keeps what its current step does not read
        (``ngrams.count_ngrams``)."""
        directory = os.path.join(self.directory, f"shelf-{len(self.shelves)}")
        os.mkdir(directory)
        store = SpillStore(directory, 0, self.store.min_spill, shelf=True)
        self.shelves.append(store)
        return store

    def disk_use(self) -> tuple[int, int]:
        """(bytes written in all, the most on disk at once: at most the sum of each
        store's) of the spill store and the shelves."""
        stores = [self.store] + self.shelves
        return sum(st.written for st in stores), sum(st.peak_disk for st in stores)

    # ---------------------------------------------------------------- clean-up
    def close(self) -> None:
        """Stop the worker threads (tasks not started are dropped), free every result and
        remove the spill directory."""
        if self._pool is not None:
            self._pool.shutdown(wait=True, cancel_futures=True)
            self._pool = None
        if self.results is not None:
            self.results.clear()
            self.results = None
        shutil.rmtree(self.directory, ignore_errors=True)

    def __enter__(self) -> "SpillClient":
        if threading.current_thread() is threading.main_thread():
            def stop(signum, frame):
                raise SystemExit(128 + signum)

            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, stop)
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.close()
        finally:
            for sig, handler in self._old_handlers.items():
                signal.signal(sig, handler)
            self._old_handlers.clear()
