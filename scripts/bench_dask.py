"""Kneser-Ney on Dask: `suffixlm kn` single-process vs `--workers 2`, wall time and peak
memory per process, on corpora sampled from the PTB KN5 model; and a run whose per-worker
memory limit is below the single-process peak. Every distributed ARPA is checked to be
byte-identical to the single-process one.

    suffixlm kn ../shared/corpora/ptb/ptb.train.txt -o /tmp/ptb.kn5.arpa --order 5
    python scripts/sample_corpus.py /tmp/ptb.kn5.arpa --tokens 1000000 --seed 0 -o /tmp/s1m.txt
    python scripts/sample_corpus.py /tmp/ptb.kn5.arpa --tokens 10000000 --seed 0 -o /tmp/s10m.txt
    python scripts/bench_dask.py /tmp/s1m.txt /tmp/s10m.txt [--repeats 3]

Writes benchmarks/dask_kn.json and benchmarks/dask_kn.md. Peak memory is sampled every
50 ms over the process tree (psutil): the driver, and the largest worker.
"""

from __future__ import annotations

import filecmp
import os
import statistics
import sys
import tempfile
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, machine_info, run_sampled, write_json  # noqa: E402


def run(cmd: list[str]) -> dict:
    """Wall time and peak RSS (MB) of the command (driver) and of its largest child process."""
    wall, driver, children, _ = run_sampled(cmd)
    # the workers are the largest children (the nanny processes are small)
    return {"wall_s": round(wall, 2), "driver_peak_mb": round(driver / 2**20, 1),
            "worker_peak_mb": round(max(children, default=0) / 2**20, 1)}


@click.command()
@click.argument("corpora", nargs=-1, required=True)
@click.option("--order", default=5, show_default=True)
@click.option("--repeats", default=1, show_default=True)
@click.option("--workers", default=2, show_default=True)
def main(corpora, order, repeats, workers):
    suffixlm = [str(Path(sys.executable).with_name("suffixlm"))]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for corpus in corpora:
            n_words = sum(len(ln.split()) for ln in open(corpus))
            load0 = os.getloadavg()
            ref = os.path.join(tmp, "single.arpa")
            base = [*suffixlm, "kn", corpus, "--order", str(order), "-q"]
            runs = {"single": [], f"workers{workers}": []}
            for _ in range(repeats):
                runs["single"].append(run([*base, "-o", ref]))
                out = os.path.join(tmp, "dask.arpa")
                runs[f"workers{workers}"].append(run([*base, "-o", out, "--workers", str(workers)]))
                if not filecmp.cmp(ref, out, shallow=False):
                    raise SystemExit(f"{corpus}: the --workers ARPA differs from the single-process one")
            row = {"corpus": corpus, "words": n_words, "order": order, "loadavg_before": load0}
            for k, rs in runs.items():
                row[k] = {m: round(statistics.median(r[m] for r in rs), 2) for m in rs[0]}
            # a per-worker limit below what the single-process run needs
            # (an idle worker already holds ~110 MB: python, numpy, numba, distributed)
            limit_mb = int(row["single"]["driver_peak_mb"] * 0.6)
            if limit_mb < 400:
                row["loadavg_after"] = os.getloadavg()
                rows.append(row)
                click.echo(row)
                continue
            out = os.path.join(tmp, "limited.arpa")
            r = run([*base, "-o", out, "--workers", str(workers), "--memory-limit", f"{limit_mb}MiB"])
            r["memory_limit_mb"] = limit_mb
            r["identical"] = filecmp.cmp(ref, out, shallow=False)
            row["limited"] = r
            row["loadavg_after"] = os.getloadavg()
            rows.append(row)
            click.echo(row)
    machine = machine_info()
    write_json("dask_kn.json", {"rows": rows, "repeats": repeats, "machine": machine})
    lines = ["# suffixlm kn: single process vs Dask workers", "",
             f"Command: `python scripts/bench_dask.py {' '.join(corpora)} --repeats {repeats}`, at "
             f"{machine['commit'][:7]} ({machine['date']}). "
             f"Order {order}, medians of {repeats} run(s); peak RSS sampled every 50 ms; every distributed ARPA "
             "byte-identical to the single-process one. The Dask runs count, merge and estimate on the workers "
             "(`distributed.kn_counts`, `distributed.kn_estimate`); the driver holds the unigram level and writes "
             "the ARPA one partition at a time. Machine: 2 cores, 24 GiB, shared with other jobs (load averages per "
             "corpus in the JSON); the wall times include the local cluster's start-up.", "",
             "| words | single s | single peak MB | 2 workers s | driver peak MB | worker peak MB "
             "| limit/worker MB | limited s | limited worker peak MB | identical |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        s, d = row["single"], row[f"workers{workers}"]
        lim = row.get("limited", {"memory_limit_mb": "-", "wall_s": "-", "worker_peak_mb": "-", "identical": "-"})
        lines.append(f"| {row['words']:,} | {s['wall_s']} | {s['driver_peak_mb']} | {d['wall_s']} | "
                     f"{d['driver_peak_mb']} | {d['worker_peak_mb']} | {lim['memory_limit_mb']} | {lim['wall_s']} | "
                     f"{lim['worker_peak_mb']} | {lim['identical']} |")
    (BENCH_DIR / "dask_kn.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))


if __name__ == "__main__":
    main()
