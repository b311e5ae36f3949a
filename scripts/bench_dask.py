"""Kneser-Ney on Dask: `suffixlm kn` single-process vs `--workers 2`, wall time and peak
memory per process, on corpora sampled from the PTB KN5 model; and a run whose per-worker
memory limit is below the single-process peak. Every distributed ARPA is checked to be
byte-identical to the single-process one.

    suffixlm kn ../shared/corpora/ptb/ptb.train.txt -o /tmp/ptb.kn5.arpa --order 5
    python scripts/sample_corpus.py /tmp/ptb.kn5.arpa --tokens 1000000 --seed 0 -o /tmp/s1m.txt
    python scripts/sample_corpus.py /tmp/ptb.kn5.arpa --tokens 10000000 --seed 0 -o /tmp/s10m.txt
    python scripts/bench_dask.py /tmp/s1m.txt /tmp/s10m.txt [--repeats 3]

Writes benchmarks/dask_kn.json and benchmarks/dask_kn.md (``--busy``: beside two busy
loops, benchmarks/dask_kn_busy.{json,md}). Wall times come from runs with nothing
beside them but the command (``os.wait4``: also the peak RSS of its largest process),
single and Dask interleaved; one more run of each samples the memory every 50 ms over
the process tree (psutil): the driver, and the largest worker. The sampler takes CPU
from the runs on two cores, so it times nothing.
"""

from __future__ import annotations

import filecmp
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, machine_info, run_sampled, write_json  # noqa: E402
from bench_kn_scale import busy_loops  # noqa: E402


def run(cmd: list[str]) -> dict:
    """Peak RSS (MB) of the command (driver) and of its largest child process, sampled."""
    _, driver, children, _ = run_sampled(cmd)
    # the workers are the largest children (the nanny processes are small)
    return {"driver_peak_mb": round(driver / 2**20, 1), "worker_peak_mb": round(max(children, default=0) / 2**20, 1)}


def timed(cmd: list[str]) -> tuple[float, float]:
    """(wall s, peak RSS MB of the largest process of the tree) of the command, unsampled."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{err[-3000:]}")
    return round(wall, 2), round(ru.ru_maxrss / 1024, 1)


@click.command()
@click.argument("corpora", nargs=-1, required=True)
@click.option("--order", default=5, show_default=True)
@click.option("--repeats", default=1, show_default=True)
@click.option("--workers", default=2, show_default=True)
@click.option("--busy", is_flag=True, help="beside two busy loops")
def main(corpora, order, repeats, workers, busy):
    suffixlm = [str(Path(sys.executable).with_name("suffixlm"))]
    rows = []
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)  # as an installed package: its bytecode cached
    loops = busy_loops(2) if busy else []
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for corpus in corpora:
                rows.append(measure(corpus, order, repeats, workers, suffixlm, tmp))
                click.echo(rows[-1])
    finally:
        for p in loops:
            p.kill()
    write(corpora, order, repeats, workers, rows, busy)


def measure(corpus: str, order: int, repeats: int, workers: int, suffixlm: list[str], tmp: str) -> dict:
    n_words = sum(len(ln.split()) for ln in open(corpus))
    load0 = os.getloadavg()
    ref = os.path.join(tmp, "single.arpa")
    out = os.path.join(tmp, "dask.arpa")
    base = [*suffixlm, "kn", corpus, "--order", str(order), "-q"]
    modes = {"single": [*base, "-o", ref], f"workers{workers}": [*base, "-o", out, "--workers", str(workers)]}
    walls: dict = {k: [] for k in modes}
    peaks: dict = {k: [] for k in modes}
    for _ in range(repeats):
        for k, cmd in modes.items():
            w, m = timed(cmd)
            walls[k].append(w)
            peaks[k].append(m)
        if not filecmp.cmp(ref, out, shallow=False):
            raise SystemExit(f"{corpus}: the --workers ARPA differs from the single-process one")
    row = {"corpus": corpus, "words": n_words, "order": order, "loadavg_before": load0}
    for k, cmd in modes.items():
        row[k] = {"wall_s": round(statistics.median(walls[k]), 2), "walls_s": walls[k],
                  "largest_process_peak_mb": max(peaks[k]), **run(cmd)}
    # a per-worker limit below what the single-process run needs
    # (an idle worker already holds ~110 MB: python, numpy, numba, distributed)
    limit_mb = int(row["single"]["driver_peak_mb"] * 0.6)
    if limit_mb >= 400:
        out = os.path.join(tmp, "limited.arpa")
        cmd = [*base, "-o", out, "--workers", str(workers), "--memory-limit", f"{limit_mb}MiB"]
        r = {"wall_s": timed(cmd)[0], **run(cmd), "memory_limit_mb": limit_mb}
        r["identical"] = filecmp.cmp(ref, out, shallow=False)
        row["limited"] = r
    row["loadavg_after"] = os.getloadavg()
    return row


def write(corpora, order: int, repeats: int, workers: int, rows: list, busy: bool) -> None:
    machine = machine_info()
    name = "dask_kn_busy" if busy else "dask_kn"
    write_json(f"{name}.json", {"rows": rows, "repeats": repeats, "busy_loops": 2 if busy else 0, "machine": machine})
    lines = ["# suffixlm kn: single process vs Dask workers" + (", beside two busy loops" if busy else ""), "",
             f"Command: `python scripts/bench_dask.py {' '.join(corpora)} --repeats {repeats}"
             f"{' --busy' if busy else ''}`, at {machine['commit'][:7]} ({machine['date']}). "
             f"Order {order}, SRILM's default cut-offs; wall times: medians of {repeats} interleaved run(s) each "
             "(every run's in the JSON), nothing sampling them; peak RSS: one more run of each, sampled every 50 ms; "
             "every distributed ARPA byte-identical to the single-process one. The Dask runs count and estimate on "
             "the workers (`distributed.kn_counts`, `distributed.kn_estimate`); the driver holds the unigram level "
             "and writes the ARPA one partition at a time. Machine: 2 cores, 24 GiB"
             + (", two busy loops beside every run" if busy else "")
             + " (load averages per corpus in the JSON); the wall times include the local cluster's start-up.", "",
             f"| words | single s | single peak MB | {workers} workers s | driver peak MB | worker peak MB "
             "| limit/worker MB | limited s | limited worker peak MB | identical |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        s, d = row["single"], row[f"workers{workers}"]
        lim = row.get("limited", {"memory_limit_mb": "-", "wall_s": "-", "worker_peak_mb": "-", "identical": "-"})
        lines.append(f"| {row['words']:,} | {s['wall_s']} | {s['driver_peak_mb']} | {d['wall_s']} | "
                     f"{d['driver_peak_mb']} | {d['worker_peak_mb']} | {lim['memory_limit_mb']} | {lim['wall_s']} | "
                     f"{lim['worker_peak_mb']} | {lim['identical']} |")
    (BENCH_DIR / f"{name}.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))


if __name__ == "__main__":
    main()
