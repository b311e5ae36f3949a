"""Where a Dask Kneser-Ney run spends its time: the compute and transfer seconds of every
kind of task (summed over the workers, from Dask's task stream), and the driver's stage
times. Not a benchmark of wall time (benchmarks/dask_kn.md is): a profile, to see what
costs more than the single-process estimator would.

    python scripts/profile_dask_kn.py /tmp/s50m.txt [--workers 2] [--shards N] [--partitions P]

Writes the ARPA file to a temporary directory. Task kinds are the task keys without their
numbers and tags (``kn-count``, ``kn-merge``, ``kn-est-idx``, ...). Last, each stage's compute
seconds per worker (the estimate's ``kn-est-*`` tasks, and the reading and counting): how
evenly the partitions load the workers.
"""

from __future__ import annotations

import collections
import os
import re
import tempfile
import time

import click


@click.command()
@click.argument("text")
@click.option("--order", default=5, show_default=True)
@click.option("--workers", default=2, show_default=True)
@click.option("--shards", type=int, default=None, help="byte ranges (default: the command's)")
@click.option("--partitions", type=int, default=None, help="reduce tasks (default: the command's)")
def main(text, order, workers, shards, partitions):
    from distributed import get_task_stream

    from suffixlm.distributed import client_from_options
    from suffixlm.distributed.kn_counts import estimate_text_kn

    t0 = time.time()
    with client_from_options(workers=workers) as client, tempfile.TemporaryDirectory() as tmp:
        t1 = time.time()
        print(f"cluster start {t1 - t0:.2f} s; load average {os.getloadavg()[0]:.2f}")
        with get_task_stream(client) as ts:
            kn, _ = estimate_text_kn(client, text, order, n_shards=shards, n_partitions=partitions,
                                     progress=lambda m: print(f"{time.time() - t1:7.2f} s  {m}"))
            t2 = time.time()
            kn.write_arpa(os.path.join(tmp, "model.arpa"))
            t3 = time.time()
        print(f"estimate {t2 - t1:.2f} s, write {t3 - t2:.2f} s")
        compute, transfer, tasks = collections.Counter(), collections.Counter(), collections.Counter()
        by_worker = collections.defaultdict(collections.Counter)  # stage -> worker -> compute s
        for t in ts.data:
            key = t["key"][0] if isinstance(t["key"], tuple) else t["key"]
            kind = "-".join(p for p in key.split("-") if not re.fullmatch(r"\d+|[0-9a-f]{8}", p))
            for s in t["startstops"]:
                if s["action"] == "compute":
                    compute[kind] += s["stop"] - s["start"]
                    tasks[kind] += 1
                    stage = "estimate" if kind.startswith("kn-est") else "read and count"
                    by_worker[stage][t.get("worker")] += s["stop"] - s["start"]
                elif s["action"] == "transfer":
                    transfer[kind] += s["stop"] - s["start"]
        print(f"compute {sum(compute.values()):.2f} s, transfer {sum(transfer.values()):.2f} s, "
              f"{sum(tasks.values())} tasks")
        print(f"{'task kind':24s} {'compute s':>10s} {'transfer s':>11s} {'tasks':>6s}")
        for kind, v in compute.most_common():
            print(f"{kind:24s} {v:10.2f} {transfer[kind]:11.2f} {tasks[kind]:6d}")
        for stage, per in by_worker.items():  # how evenly each stage's work falls on the workers
            print(f"{stage}: compute s per worker " + ", ".join(f"{v:.2f}" for _, v in sorted(per.items())))


if __name__ == "__main__":
    main()
