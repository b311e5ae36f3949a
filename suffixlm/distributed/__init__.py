"""Running on Dask (``dask.distributed``): the client every command's ``--workers`` /
``--scheduler`` options make (the options themselves, and their one-line errors, are in
:mod:`suffixlm.commands.params`).

``--workers N`` starts a local cluster of N worker *processes* (numba kernels hold the
GIL, so threads would not run in parallel); ``--scheduler ADDRESS`` (or the environment
variable ``DASK_SCHEDULER_ADDRESS``) connects to an existing cluster (``dask scheduler``
/ ``dask worker``, dask-jobqueue, Kubernetes). Neither: ``None``, the single-process
path, and dask is never imported. Dask is an optional extra: ``pip install 'suffixlm[dask]'``.
"""

from __future__ import annotations

import contextlib
import os
from typing import Iterator

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
INSTALL_HINT = "pip install 'suffixlm[dask]'"


class DaskMissingError(ImportError):
    """A distributed run was asked for but dask.distributed is not installed."""


class OptionError(ValueError):
    """A bad value or combination of ``workers``, ``scheduler`` and ``memory_limit``;
    ``option``: the command-line option at fault, or None for a combination."""

    def __init__(self, message: str, option: str | None = None):
        super().__init__(message)
        self.option = option


def import_distributed():
    """The ``distributed`` module, or ``DaskMissingError`` with the one-line install hint."""
    try:
        import distributed
    except ImportError:
        raise DaskMissingError(f"--workers/--scheduler need dask.distributed, which is not installed: "
                               f"{INSTALL_HINT}") from None
    return distributed


#: the smallest --memory-limit a worker can start and run under
MIN_MEMORY_LIMIT = 64 * 2**20

#: seconds to wait for an existing scheduler to answer (a closed port fails at once
#: with a refused connection, which Dask would otherwise retry for its 30 s)
CONNECT_TIMEOUT = 5


def _parse_memory_limit(memory_limit):
    if memory_limit is None:
        return "auto"
    if isinstance(memory_limit, (int, float)) and not isinstance(memory_limit, bool):
        value = memory_limit
    else:
        from dask.utils import parse_bytes

        try:
            value = parse_bytes(str(memory_limit).strip())
        except (ValueError, TypeError):
            raise OptionError(f"{memory_limit!r}: expected a size like 2GB or 500MiB", "--memory-limit") from None
    if not value >= MIN_MEMORY_LIMIT:
        raise OptionError(f"{memory_limit!r}: a worker needs at least {MIN_MEMORY_LIMIT // 2**20} MiB",
                          "--memory-limit")
    return value


def _check_address(scheduler: str) -> str:
    """``scheduler`` as Dask's ``protocol://host:port``, or a one-line usage error."""
    from distributed.comm.addressing import parse_address, parse_host_port

    text = scheduler.strip()
    try:
        protocol, location = parse_address(text if "://" in text else "tcp://" + text, strict=False)
        if protocol in ("tcp", "tls", "ws", "wss"):
            host, port = parse_host_port(location)
            if not host or port is None or not 0 < int(port) < 65536 or any(c.isspace() for c in host):
                raise ValueError
    except (ValueError, TypeError):
        raise OptionError(f"{scheduler!r}: expected a scheduler address like tcp://10.0.0.1:8786",
                          "--scheduler") from None
    return text


def _quiet_dask_logs() -> None:
    """After Ctrl-C: no log lines or tracebacks from the cluster's shutdown."""
    import logging

    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker",
                 "distributed.client", "distributed.core", "distributed.comm", "tornado", "asyncio"):
        logging.getLogger(name).setLevel(logging.CRITICAL + 1)


@contextlib.contextmanager
def _interrupt_quietly() -> Iterator[None]:
    """Ctrl-C inside: the cluster closes without its log lines, and the command ends
    with the one line of ``suffixlm.cli`` (``interrupted (Ctrl-C)``, status 130)."""
    try:
        yield
    except KeyboardInterrupt:
        _quiet_dask_logs()
        raise


def _start_ignoring_sigint(start):
    """``start()`` with SIGINT ignored, so that the worker processes it spawns inherit
    an ignored SIGINT: Ctrl-C in a terminal (sent to the whole process group) then
    reaches this process only, which closes the cluster, instead of every worker
    printing its own traceback."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        return start()
    old = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        return start()
    finally:
        signal.signal(signal.SIGINT, old)


@contextlib.contextmanager
def client_from_options(workers: int | None = None, scheduler: str | None = None,
                        memory_limit=None) -> Iterator[object | None]:
    """Yield a ``distributed.Client`` (or ``None`` when neither ``workers`` nor
    ``scheduler`` is given: the single-process path, dask not imported).

    workers: start a ``LocalCluster`` of that many single-threaded worker processes,
    each limited to ``memory_limit`` (bytes or a string like ``'2GB'``); closed on exit.
    scheduler: connect to the cluster at that address; only the client is closed.
    A bad value or both given: :class:`OptionError`. Dask missing: :class:`DaskMissingError`
    naming the extra to install. A scheduler that does not answer: ``ConnectionError``.
    """
    if workers is None and not scheduler:
        if memory_limit is not None:
            raise OptionError("--memory-limit needs --workers")
        yield None
        return
    if workers is not None and scheduler:
        raise OptionError("give --workers (a local cluster) or --scheduler (an existing one), not both"
                               + (f" (--scheduler may come from ${SCHEDULER_ENV})" if os.environ.get(SCHEDULER_ENV)
                                  else ""))
    distributed = import_distributed()
    if scheduler:
        if memory_limit is not None:
            raise OptionError("--memory-limit applies to local workers (--workers); set the limit "
                              "where the cluster's workers are started")
        address = _check_address(scheduler)
        try:
            client = distributed.Client(address, timeout=f"{CONNECT_TIMEOUT}s")
        except (OSError, TimeoutError) as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            raise ConnectionError(f"cannot connect to the Dask scheduler at {scheduler} within "
                                  f"{CONNECT_TIMEOUT} s: {why}") from None
        with client, _interrupt_quietly():
            yield client
        return
    limit = _parse_memory_limit(memory_limit)
    # silence the cluster's start-up chatter (dashboard port taken, and the like)
    import logging

    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker"):
        logging.getLogger(name).setLevel(logging.ERROR)
    # the worker processes read their log levels from the environment when they start:
    # only critical lines. A task's error reaches this process with its result; what a
    # worker logs besides is its broken connections while the cluster closes (Ctrl-C on a
    # loaded machine: "Failed to communicate with scheduler during heartbeat" with a
    # traceback), noise on a local cluster that this process closes itself
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "critical")
    os.environ.setdefault("DASK_LOGGING__TORNADO", "critical")
    cluster = _start_ignoring_sigint(lambda: distributed.LocalCluster(
        n_workers=workers, threads_per_worker=1, processes=True, memory_limit=limit, dashboard_address=":0"))
    with cluster, distributed.Client(cluster) as client, _interrupt_quietly():
        yield client
