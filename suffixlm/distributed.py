"""Running on Dask (``dask.distributed``): the options every command shares, and the client.

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

import click

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
INSTALL_HINT = "pip install 'suffixlm[dask]'"


class DaskMissingError(ImportError):
    """A distributed run was asked for but dask.distributed is not installed."""


def import_distributed():
    """The ``distributed`` module, or ``DaskMissingError`` with the one-line install hint."""
    try:
        import distributed
    except ImportError:
        raise DaskMissingError(f"--workers/--scheduler need dask.distributed, which is not installed: "
                               f"{INSTALL_HINT}") from None
    return distributed


def distributed_options(f):
    """Click decorator adding ``--workers``, ``--scheduler`` and ``--memory-limit``; the
    command receives ``workers``, ``scheduler`` and ``memory_limit`` (``--scheduler``
    defaults to ``$DASK_SCHEDULER_ADDRESS``)."""
    f = click.option("--memory-limit", "memory_limit", default=None, metavar="BYTES",
                     help="Memory limit of each local worker (e.g. 2GB, 500MiB; Dask's default: "
                          "the machine's memory shared among the workers). Only with --workers.")(f)
    f = click.option("--scheduler", "scheduler", default=None, envvar=SCHEDULER_ENV, metavar="ADDRESS",
                     help=f"Run on the existing Dask cluster at ADDRESS (e.g. tcp://10.0.0.1:8786; "
                          f"default ${SCHEDULER_ENV}). Needs {INSTALL_HINT}.")(f)
    f = click.option("--workers", "workers", default=None, type=click.IntRange(1, 4096), metavar="N",
                     help=f"Run on a local Dask cluster of N worker processes. Needs {INSTALL_HINT}.")(f)
    return f


def _parse_memory_limit(memory_limit):
    if memory_limit is None:
        return "auto"
    if isinstance(memory_limit, (int, float)):
        return memory_limit
    from dask.utils import parse_bytes

    try:
        return parse_bytes(memory_limit)
    except (ValueError, TypeError):
        raise click.BadParameter(f"{memory_limit!r}: expected a size like 2GB or 500MiB",
                                 param_hint="--memory-limit") from None


@contextlib.contextmanager
def client_from_options(workers: int | None = None, scheduler: str | None = None,
                        memory_limit=None) -> Iterator[object | None]:
    """Yield a ``distributed.Client`` (or ``None`` when neither ``workers`` nor
    ``scheduler`` is given: the single-process path, dask not imported).

    workers: start a ``LocalCluster`` of that many single-threaded worker processes,
    each limited to ``memory_limit`` (bytes or a string like ``'2GB'``); closed on exit.
    scheduler: connect to the cluster at that address; only the client is closed.
    Both given: ``click.UsageError``. Dask missing: ``click.ClickException`` naming the
    extra to install.
    """
    if workers is None and not scheduler:
        if memory_limit is not None:
            raise click.UsageError("--memory-limit needs --workers")
        yield None
        return
    if workers is not None and scheduler:
        raise click.UsageError("give --workers (a local cluster) or --scheduler (an existing one), not both"
                               + (f" (--scheduler may come from ${SCHEDULER_ENV})" if os.environ.get(SCHEDULER_ENV)
                                  else ""))
    try:
        distributed = import_distributed()
    except DaskMissingError as e:
        raise click.ClickException(str(e)) from None
    if scheduler:
        if memory_limit is not None:
            raise click.UsageError("--memory-limit applies to local workers (--workers); set the limit "
                                   "where the cluster's workers are started")
        try:
            client = distributed.Client(scheduler, timeout="30s")
        except (OSError, TimeoutError) as e:
            raise click.ClickException(f"cannot connect to the Dask scheduler at {scheduler}: {e}") from None
        with client:
            yield client
        return
    limit = _parse_memory_limit(memory_limit)
    # silence the cluster's start-up chatter (dashboard port taken, and the like)
    import logging

    for name in ("distributed", "distributed.nanny", "distributed.scheduler", "distributed.worker"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with distributed.LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, memory_limit=limit,
                                  dashboard_address=":0") as cluster, distributed.Client(cluster) as client:
        yield client
