"""Threads of the numba kernels: one policy for every command and estimator (docs/threads.md).

The default is every thread numba has (``NUMBA_NUM_THREADS``, itself every core by
default), with three rules that keep it from collapsing when other processes share the
cores, and a fourth that keeps a batch query's threads apart:

1. **Idle threads sleep.** numba's default threading layer here is ``omp`` (GNU OpenMP).
   Unless told otherwise, libgomp makes a thread that waits (for the next parallel
   region, or at the barrier that ends one) spin for about 300,000 iterations (a few
   milliseconds) before it sleeps. The kernels run thousands of short parallel regions
   per job (a FISTA iteration of the log-linear LM: one per tree level in each pass, one
   per vector step), so on a loaded machine the spinning threads burn the time slices the
   working thread needs, and each region waits for a preempted thread: measured, the
   order-5 PTB-100k ``train`` took 5-20 times as long on two threads as on one beside two
   busy loops (benchmarks/threads.md). Importing :mod:`suffixlm` therefore sets
   ``OMP_WAIT_POLICY=PASSIVE`` (spin count 0: a waiting thread sleeps at once) unless
   the environment already names a policy; libgomp reads it once, when numba's
   threading layer first loads (at the first parallel kernel), so it must be set before
   that, which every entry point does by importing this module first. On an idle machine
   it costs a wake-up per region (tens of microseconds). ``OMP_WAIT_POLICY=ACTIVE`` or
   ``GOMP_SPINCOUNT`` in the environment restore spinning.
2. **Small problems run on one thread.** A parallel region costs a wake-up and a
   barrier whatever its size; under :data:`MIN_PARALLEL` parameters a log-linear LM
   (``suffixlm demo``'s model has about 10,000) trains and scores on one thread
   (:func:`for_size`; ``SUFFIXLM_MIN_PARALLEL`` in the environment changes the bound, 0
   turns the rule off).
3. **Tiny tree levels run serially** inside the LM kernels (``_lm_kernels``: a level of
   fewer than ``_MIN_LEVEL`` nodes, e.g. the root's, is no parallel region).
4. **A batch query's threads run on separate CPUs** (:func:`spread`): the calling thread
   is held on its CPU and numba's other threads kept off it for the call, as Linux often
   ran the woken thread on the caller's CPU after the caller's half
   (``SUFFIXLM_SPREAD=0`` turns it off).

Results do not depend on the thread count wherever the kernels promise it (the
log-linear LM, the tree penalties, the CRF gradient); the CRF's quasi-Newton vector
reductions do depend on it (a checkpoint records it).

:func:`apply` sets a count for the process, :func:`using` for a ``with`` block
(restored after), :func:`scoped` for an estimator method (from its ``threads`` /
``n_jobs`` parameters), :func:`suffixlm.commands.params.threads_option` is the ``--threads`` option of the
commands (:data:`OPTION_HELP` its help). This module imports numba only when a count is
set, and never click (the CLI starts without numba).
"""

from __future__ import annotations

import functools
import os
import sys
import threading
from contextlib import contextmanager

from .checks import is_int

#: OpenMP's wait policy set at import unless the environment names one (module docstring).
WAIT_POLICY = "PASSIVE"
#: Below this many parameters a log-linear LM runs its kernels on one thread.
MIN_PARALLEL = 50_000
#: Environment variable that overrides :data:`MIN_PARALLEL` (an integer >= 0; 0: never serial).
MIN_PARALLEL_ENV = "SUFFIXLM_MIN_PARALLEL"

#: Help of ``--threads`` (one text for every command).
OPTION_HELP = ("Threads of the numba kernels. Default: all of numba's, NUMBA_NUM_THREADS (every core unless "
               "set); more is clamped to that. Idle threads sleep (OMP_WAIT_POLICY=PASSIVE unless set) and "
               "small models run on one thread: see docs/threads.md.")


def set_wait_policy() -> None:
    """``OMP_WAIT_POLICY=PASSIVE`` unless the environment already has a value (the user's
    own choice wins). Effective only before numba's threading layer loads."""
    os.environ.setdefault("OMP_WAIT_POLICY", WAIT_POLICY)


set_wait_policy()

#: OpenBLAS's thread count in the ``suffixlm`` command unless the environment names one.
BLAS_THREADS = "1"
#: The variables OpenBLAS reads for its count, first found wins (any of them set: left alone).
BLAS_THREAD_VARIABLES = ("OPENBLAS_NUM_THREADS", "GOTO_NUM_THREADS", "OMP_NUM_THREADS")


def set_blas_threads() -> None:
    """``OPENBLAS_NUM_THREADS=1`` unless the environment sets one of the counts OpenBLAS
    reads (``BLAS_THREAD_VARIABLES``): for the ``suffixlm`` command only, before it imports
    numpy. OpenBLAS (numpy's BLAS) starts a thread per core when numpy loads, which cost
    about 0.1 s of CPU of every command's 0.15-0.25 s here (a command's wall time on an idle
    machine hides it on the second core; on a loaded one it is paid), for BLAS that no
    command needs: the kernels are numba's, and numpy's products here are of vectors. A
    process that imports suffixlm as a library keeps its own BLAS threads."""
    if not any(os.environ.get(v, "").strip() for v in BLAS_THREAD_VARIABLES):
        os.environ["OPENBLAS_NUM_THREADS"] = BLAS_THREADS


def available() -> int:
    """The most threads numba can use in this process (``NUMBA_NUM_THREADS``)."""
    import numba

    return int(numba.config.NUMBA_NUM_THREADS)


def check(threads=None, n_jobs=None) -> None:
    """``threads``: None or an integer >= 1; ``n_jobs``: None or a non-zero integer
    (scikit-learn's spelling: -1 all threads, -2 all but one, ...); the two agree when
    both are given. TypeError for a value that is not an integer (bools included),
    ValueError naming the parameter otherwise."""
    for name, v in (("threads", threads), ("n_jobs", n_jobs)):
        if v is not None and not is_int(v):
            raise TypeError(f"{name} must be an integer or None, got {v!r}")
    if threads is not None and threads < 1:
        raise ValueError(f"threads must be an integer >= 1 or None, got {threads!r}")
    if n_jobs is not None and n_jobs == 0:
        raise ValueError("n_jobs must be a non-zero integer or None, got 0")
    if threads is not None and n_jobs is not None and resolve(threads) != resolve(None, n_jobs):
        raise ValueError(f"threads={threads} and n_jobs={n_jobs} disagree: give one of them")


def resolve(threads=None, n_jobs=None) -> int | None:
    """The thread count that ``threads`` (or its alias ``n_jobs``: scikit-learn's spelling,
    negative counts from the end as in joblib) asks for, clamped to 1..``available()``;
    None when neither is given (numba's current setting stays)."""
    if threads is None and n_jobs is None:
        return None
    top = available()
    if threads is None:
        n = int(n_jobs)
        threads = n if n > 0 else top + 1 + n
    return max(1, min(int(threads), top))


def apply(threads=None, n_jobs=None) -> int:
    """Set numba's thread count for this thread of the process (``numba.set_num_threads``)
    to :func:`resolve`'s count; unchanged when both are None. Returns the count in force."""
    import numba

    n = resolve(threads, n_jobs)
    if n is not None:
        numba.set_num_threads(n)
    return numba.get_num_threads()


@contextmanager
def using(threads=None, n_jobs=None, size=None):
    """``with using(2):``: numba's thread count for the block (:func:`apply`), one thread
    when ``size`` (a problem's parameter count) is under :func:`min_parallel`; the count
    before it is restored after. Yields the count in force (None when nothing is asked
    and numba has not started in the process: a job that never runs a kernel, such as
    scoring a text with a binary model in numpy, does not start numba for this)."""
    if threads is None and n_jobs is None and size is None and "numba" not in sys.modules:
        try:
            yield None
        finally:
            if "numba" in sys.modules:  # started in the block: its default count in force after it
                import numba

                numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
        return
    import numba

    before = numba.get_num_threads()
    try:
        n = apply(threads, n_jobs)
        if size is not None and for_size(size) == 1:
            n = 1
            numba.set_num_threads(1)
        yield n
    finally:
        numba.set_num_threads(before)


def min_parallel() -> int:
    """:data:`MIN_PARALLEL`, or ``$SUFFIXLM_MIN_PARALLEL`` when set (ValueError if it is
    not an integer >= 0)."""
    text = os.environ.get(MIN_PARALLEL_ENV)
    if text is None or text.strip() == "":
        return MIN_PARALLEL
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"{MIN_PARALLEL_ENV}={text!r}: expected an integer >= 0")
    return value


def for_size(size: int) -> int | None:
    """1 when a problem of ``size`` parameters is too small to gain from threads (under
    :func:`min_parallel`), else None (the count in force)."""
    return 1 if size < min_parallel() else None


def scoped(method):
    """Decorator of an estimator method: it runs with the estimator's ``threads`` /
    ``n_jobs`` (:func:`using`), and numba's thread count is restored when it returns."""

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        threads = getattr(self, "threads", None)
        n_jobs = getattr(self, "n_jobs", None)
        check(threads, n_jobs)
        with using(threads, n_jobs):
            return method(self, *args, **kwargs)

    return wrapper


def serial_if_small(size: int) -> None:
    """One thread from here on when a problem of ``size`` parameters is small
    (:func:`for_size`); for the body of a :func:`scoped` method, which restores the count."""
    if for_size(size) == 1:
        import numba

        numba.set_num_threads(1)


#: Environment variable that turns :func:`spread` off (``0``); anything else, or unset: on.
SPREAD_ENV = "SUFFIXLM_SPREAD"
_spread_lock = threading.Lock()
_spread_state: dict = {"off": False, "getcpu": None, "pools": {}}


def _current_cpu():
    """The CPU the calling thread runs on (libc's ``sched_getcpu``), or None where there
    is none to call."""
    get = _spread_state["getcpu"]
    if get is None:
        get = False
        try:
            import ctypes

            fn = ctypes.CDLL(None).sched_getcpu
            fn.argtypes, fn.restype = (), ctypes.c_int
            get = fn
        except (OSError, AttributeError):
            pass
        _spread_state["getcpu"] = get
    if not get:
        return None
    cpu = get()
    return cpu if cpu >= 0 else None


def _pool_threads(count: int) -> list[int]:
    """The kernel ids of the threads numba runs a parallel region on when the calling
    thread launches it with ``count`` threads, the caller's own left out (asked once a
    caller and count: ``_thread_kernels.thread_ids``; asked again if one has ended)."""
    me = threading.get_native_id()
    pools = _spread_state["pools"]
    tids = pools.get((me, count))
    if tids is None or not all(os.path.exists(f"/proc/self/task/{t}") for t in tids):
        from ._thread_kernels import thread_ids

        tids = sorted(set(thread_ids(64 * count).tolist()) - {me})
        if len(pools) >= 64:  # callers come and go (a server's threads): the oldest ones forgotten
            pools.clear()
        pools[(me, count)] = tids
    return tids


@contextmanager
def spread():
    """``with spread():`` around one parallel kernel call that takes milliseconds (a
    batch of queries): the calling thread is held on the CPU it runs on and numba's other
    threads kept off that CPU for the call, then every thread's CPU mask is put back.

    Why: with idle threads asleep (rule 1), every call wakes numba's threads, and Linux
    places a woken thread on the CPU of the thread that woke it when it judges that
    cheaper (``wake_affine``); then the two halves of the batch run one after the other
    on one CPU while the other idles. Measured on this project's 2-core virtual machine
    (``scripts/bench_batch_wait.py``, benchmarks/batch_wait.md): ``score_ids`` over PTB
    test called back to back took nearly as long on two threads as on one until the masks
    kept them apart. Training and
    counting, with the masks held for the whole job, gained nothing measurable (their
    regions last long enough for the scheduler to part the threads), so only the batch
    queries use it.

    Nothing is done (the block just runs) where the platform has no CPU masks, where the
    caller may use one CPU only, on one thread, when ``SUFFIXLM_SPREAD=0``, when another
    thread is inside a ``spread`` block (masks are never set from two places at once), or
    after a mask could not be set once (the process's masks are then left to the
    system)."""
    if (_spread_state["off"] or not hasattr(os, "sched_setaffinity")
            or os.environ.get(SPREAD_ENV, "").strip() == "0" or not _spread_lock.acquire(blocking=False)):
        yield
        return
    restore: list[tuple[int, set]] = []
    try:
        try:
            _hold_apart(restore)
        except Exception:  # a thread gone, masks not ours to set, no gettid: leave them to the system
            _spread_state["off"] = True
            _put_back(restore)
        yield
    finally:
        _put_back(restore)
        _spread_lock.release()


def _put_back(restore: list) -> None:
    """Every mask :func:`_hold_apart` set, as it was (the list emptied)."""
    while restore:
        tid, mask = restore.pop()
        try:
            os.sched_setaffinity(tid, mask)
        except OSError:  # the thread has ended
            pass


def _hold_apart(restore: list) -> None:
    """:func:`spread`'s masks: the caller on its CPU, numba's other threads off it; each
    (thread id, mask before) appended to ``restore`` as it is set (0: the caller)."""
    import numba

    count = numba.get_num_threads()
    cpu = _current_cpu() if count > 1 else None
    if cpu is None:
        return
    mine = os.sched_getaffinity(0)
    if cpu not in mine or len(mine) < 2:
        return
    for tid in _pool_threads(count):
        mask = os.sched_getaffinity(tid)
        if cpu in mask and len(mask) > 1:
            os.sched_setaffinity(tid, mask - {cpu})
            restore.append((tid, mask))
    os.sched_setaffinity(0, {cpu})
    restore.append((0, mine))
