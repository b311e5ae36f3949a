"""The log-linear LM's training statistics on Dask: single process vs ``--workers 2``, wall
time and peak memory per process, on corpora sampled from the PTB KN5 model; a run whose
per-worker memory limit is below the single-process peak; and one full ``suffixlm train``
(defaults) both ways with its test perplexity.

    A=../shared/anchors/srilm/ptb.kn5.srilm-default.arpa.gz
    python scripts/sample_corpus.py $A --tokens 1000000 --seed 0 -o /tmp/s1m.txt
    python scripts/sample_corpus.py $A --tokens 10000000 --seed 0 -o /tmp/s10m.txt
    python scripts/sample_corpus.py $A --tokens 100000 --seed 1 -o /tmp/stest.txt
    python scripts/bench_dask_lm.py main /tmp/s1m.txt /tmp/s10m.txt --test /tmp/stest.txt [--repeats 3]
    # add a corpus to the existing benchmarks/dask_lm.json (other rows and the training kept):
    python scripts/sample_corpus.py $A --tokens 50000000 --seed 0 -o /tmp/s50m.txt
    python scripts/bench_dask_lm.py main /tmp/s50m.txt --merge --no-train

The statistics stage is what ``LogLinearLM.fit`` does before the solver: read (one
process) or count on the workers and merge (Dask), then the suffix tree and the
per-event statistics of the objective (``LogLinearLM._problem``). Each run is a child
process (``python bench_dask_lm.py stage ...``) whose process tree is sampled every 50 ms
(psutil): the driver, and each worker. The stage prints a digest of the tree's arrays
(all but the edge labels) and of the objective's statistics; every Dask run must give the
single-process digest. Writes benchmarks/dask_lm.json and benchmarks/dask_lm.md (each
row with the date, commit and command that measured it, since ``--merge`` keeps rows of
earlier runs).
"""

from __future__ import annotations

import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import click
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _bench_common import BENCH_DIR, machine_info, run_sampled, write_json  # noqa: E402

EDGE_LABELS = ("tokens", "offsets", "context_position")


def run(cmd: list[str]) -> dict:
    """Wall time, peak RSS (MB) of the command (the driver) and of each child process over
    100 MB (the workers; nannies and the scheduler's helpers are small), and its stdout."""
    wall, driver, children, out = run_sampled(cmd)
    workers = sorted((round(v / 2**20, 1) for v in children if v > 100 * 2**20), reverse=True)
    return {"wall_s": round(wall, 2), "driver_peak_mb": round(driver / 2**20, 1), "worker_peak_mb": workers,
            "stdout": out}


def digest(problem, tree) -> str:
    h = hashlib.sha256()  # hashes the arrays' buffers (tobytes() would copy each into the peak)
    for k in tree.FIELDS:
        if k not in EDGE_LABELS:
            h.update(np.ascontiguousarray(getattr(tree, k)))
    h.update(problem.n_end_all)
    h.update(problem.emp_all)
    h.update(str(problem.n_samples).encode())
    return h.hexdigest()[:16]


@click.group()
def cli():
    pass


@cli.command()
@click.argument("corpus")
@click.option("--order", default=5)
@click.option("--workers", type=int, default=None)
@click.option("--memory-limit", default=None)
def stage(corpus, order, workers, memory_limit):
    """One statistics stage (a child process of ``main``): prints JSON."""
    from suffixlm.memory import return_freed_memory_to_os
    from suffixlm.model import LogLinearLM

    return_freed_memory_to_os()
    lm = LogLinearLM(order=order)
    log = None
    if workers:
        # the workers inherit this stderr, a pipe read only once the stage ends: their
        # warnings (memory, slow event loop) go to a file instead, which cannot fill up
        log = tempfile.TemporaryFile()
        saved_stderr = os.dup(2)
        os.dup2(log.fileno(), 2)
    try:
        _stage(lm, corpus, order, workers, memory_limit)
    except BaseException:
        if log is not None:
            os.dup2(saved_stderr, 2)
            log.seek(max(0, os.fstat(log.fileno()).st_size - 20000))
            sys.stderr.write(log.read().decode(errors="replace"))
        raise


def _stage(lm, corpus, order, workers, memory_limit):
    t0 = time.perf_counter()
    if workers:
        from suffixlm.distributed import client_from_options
        from suffixlm.distributed.lm_events import count_text_events

        with client_from_options(workers, None, memory_limit) as client:
            client.wait_for_workers(workers)
            t0 = time.perf_counter()  # the cluster's start-up is not the stage's
            data = count_text_events(client, corpus, order)
            t_count = time.perf_counter() - t0
    else:
        from suffixlm.corpus import load_training_corpus

        data = load_training_corpus(corpus)
        t_count = time.perf_counter() - t0
    problem = lm._problem(data)
    t1 = time.perf_counter()
    print(json.dumps({"stage_s": round(t1 - t0, 2), "count_s": round(t_count, 2),
                      "tree_and_statistics_s": round(t1 - t0 - t_count, 2), "digest": digest(problem, lm.tree_),
                      "events": int(problem.end_node.shape[0]), "predictions": int(problem.n_samples),
                      "nodes": lm.tree_.n_nodes, "params": lm.tree_.n_params}))


def stage_run(corpus, workers=None, memory_limit=None) -> dict:
    cmd = [sys.executable, __file__, "stage", corpus]
    if workers:
        cmd += ["--workers", str(workers)]
    if memory_limit:
        cmd += ["--memory-limit", memory_limit]
    r = run(cmd)
    r.update(json.loads(r.pop("stdout").strip().splitlines()[-1]))
    return r


def median_run(repeats, *args, **kw) -> dict:
    runs = [stage_run(*args, **kw) for _ in range(repeats)]
    assert len({r["digest"] for r in runs}) == 1
    out = dict(runs[0])
    for k in ("wall_s", "stage_s", "count_s", "tree_and_statistics_s", "driver_peak_mb"):
        out[k] = statistics.median(r[k] for r in runs)
    n = max(len(r["worker_peak_mb"]) for r in runs)
    out["worker_peak_mb"] = [statistics.median(r["worker_peak_mb"][i] if i < len(r["worker_peak_mb"]) else 0
                                               for r in runs) for i in range(n)]
    out["runs"] = len(runs)
    return out


def train_run(corpus, test, workers=None) -> dict:
    """One full `suffixlm train` (defaults) and the test perplexity of its model."""
    with tempfile.TemporaryDirectory() as d:
        model = os.path.join(d, "m.slm")
        cmd = [sys.executable, "-m", "suffixlm.cli", "train", corpus, "-o", model, "--quiet", "--json"]
        if workers:
            cmd += ["--workers", str(workers)]
        r = run(cmd)
        summary = json.loads(r.pop("stdout"))
        ppl = subprocess.run([sys.executable, "-m", "suffixlm.cli", "ppl", model, test, "--json"], capture_output=True,
                             text=True, check=True)
        r.update({"steps": summary["steps"], "objective": summary["objective"],
                  "train_seconds": summary["train_seconds"], "test": json.loads(ppl.stdout)})
    return r


def _provenance() -> dict:
    m = machine_info()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], capture_output=True, text=True,
                           cwd=Path(__file__).resolve().parent.parent).stdout.strip() != ""
    return {"date": m["date"], "commit": m["commit"], "uncommitted_changes": dirty, "command": m["command"]}


@cli.command()
@click.argument("corpora", nargs=-1, required=True)
@click.option("--test", "test_text", default=None, help="Held-out text for the full-training perplexities.")
@click.option("--repeats", default=1, show_default=True)
@click.option("--workers", default=2, show_default=True)
@click.option("--merge", is_flag=True, help="Keep the rows of benchmarks/dask_lm.json for other corpora (and, with "
              "--no-train, its full training); rows of the corpora given are measured again.")
@click.option("--no-train", is_flag=True, help="No full `suffixlm train` (keeps the existing one with --merge).")
@click.option("--no-limited", is_flag=True, help="No memory-limited run.")
def main(corpora, test_text, repeats, workers, merge, no_train, no_limited):
    """Statistics stage single vs workers per corpus; a memory-limited run on the largest
    corpus given; full training on the first, both ways."""
    if not no_train and test_text is None:
        raise click.UsageError("--test is needed for the full training (or give --no-train)")
    old = {}
    if merge and (BENCH_DIR / "dask_lm.json").exists():
        old = json.loads((BENCH_DIR / "dask_lm.json").read_text())
        if old.get("workers", 2) != workers:
            raise click.UsageError(f"benchmarks/dask_lm.json has {old.get('workers', 2)} workers, not {workers}")
    measured = _provenance()
    rows = []
    for corpus in corpora:
        words = sum(len(line.split()) for line in open(corpus, encoding="utf-8"))
        load0 = os.getloadavg()
        single = median_run(repeats, corpus)
        dist = median_run(repeats, corpus, workers)
        row = {"corpus": corpus, "words": words, "single": single, f"workers{workers}": dist,
               "identical": single["digest"] == dist["digest"], "loadavg_before": load0,
               "loadavg_after": os.getloadavg(), "measured": measured}
        rows.append(row)
        click.echo(json.dumps(row), err=True)
    big = max(rows, key=lambda r: r["words"])
    limit_mb = int(big["single"]["driver_peak_mb"] * 0.6)
    if no_limited:
        pass
    elif limit_mb < 400:  # a worker process alone takes ~150 MB: it could never start
        click.echo(f"no memory-limited run: {limit_mb} MiB is too small for a worker", err=True)
    else:
        load0 = os.getloadavg()
        limited = stage_run(big["corpus"], workers, f"{limit_mb}MiB")
        limited.update(memory_limit_mb=limit_mb, identical=limited["digest"] == big["single"]["digest"],
                       loadavg_before=load0, loadavg_after=os.getloadavg())
        big["limited"] = limited
        click.echo(json.dumps(limited), err=True)
    # rows of earlier runs: what measured them was the file's own machine entry
    earlier = {k: old["machine"][k] for k in ("date", "commit", "command")} if "machine" in old else {}
    for row in old.get("rows", []):
        if row["corpus"] not in corpora:
            row.setdefault("measured", earlier)
            rows.append(row)
    rows.sort(key=lambda r: r["words"])
    if no_train:
        train = old.get("train") if merge else None
        if train is not None:
            train.setdefault("measured", earlier)
    else:
        train = {"corpus": corpora[0], "test_text": test_text, "single": train_run(corpora[0], test_text),
                 f"workers{workers}": train_run(corpora[0], test_text, workers), "measured": measured}
        click.echo(json.dumps(train), err=True)
    write_json("dask_lm.json", {"rows": rows, "train": train, "workers": workers, "machine_note":
                                "2 cores and 24 GiB shared with other jobs"})
    lines = markdown(rows, train, workers)
    (BENCH_DIR / "dask_lm.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))


def markdown(rows: list[dict], train: dict | None, workers: int) -> list[str]:
    lines = ["# Log-linear LM training statistics: single process vs Dask workers", "",
             "Order 5, the statistics stage (read or count+merge, suffix tree, per-event statistics; not the "
             "solver), medians of the runs per row; peak RSS sampled every 50 ms per process; the Dask wall time "
             "excludes the local cluster's start-up (the process's peak RSS does not). `identical`: the tree's "
             "arrays (all but the edge labels) and the objective's statistics hash to the single-process ones. "
             "\"count\" is the Dask stage up to the driver's events in canonical order (vocabulary pass, counting on "
             "the workers, shuffle, and the events' sort on the driver); \"tree+stats\" the suffix tree and the "
             "per-event statistics from them. Machine: 2 cores and 24 GiB shared with other jobs; the load "
             "averages, and the date, commit and command of each row, are in `dask_lm.json`.", "",
             f"| words | runs | single s | single peak MB | {workers} workers s (count / tree+stats) | driver peak MB | "
             "worker peaks MB | identical | load avg (1 min, before) |", "|---|---|---|---|---|---|---|---|---|"]
    for row in rows:
        s, d = row["single"], row[f"workers{workers}"]
        lines.append(f"| {row['words']:,} | {s['runs']} | {s['stage_s']} | {s['driver_peak_mb']} | {d['stage_s']} "
                     f"({d['count_s']} / {d['tree_and_statistics_s']}) | {d['driver_peak_mb']} | "
                     f"{', '.join(map(str, d['worker_peak_mb']))} | {row['identical']} | "
                     f"{row['loadavg_before'][0]:.1f} |")
    lines.append("")
    for row in rows:
        lim = row.get("limited")
        if lim:
            lines.append(f"Memory limit {lim['memory_limit_mb']} MiB per worker (single-process peak "
                         f"{row['single']['driver_peak_mb']} MB) on {row['words']:,} words: {lim['stage_s']} s, "
                         f"worker peaks {', '.join(map(str, lim['worker_peak_mb']))} MB, driver "
                         f"{lim['driver_peak_mb']} MB, identical: {lim['identical']}.")
            lines.append("")
    if train:
        words = next((r["words"] for r in rows if r["corpus"] == train["corpus"]), None)
        size = f"{words:,} words" if words else train["corpus"]
        lines += [f"Full `suffixlm train` (defaults, order 5) on {size}, test "
                  f"{train.get('test_text', train['single']['test']['file'])}:", "",
                  "| run | wall s | driver peak MB | steps | objective | test ppl |", "|---|---|---|---|---|---|"]
        for k in ("single", f"workers{workers}"):
            t = train[k]
            lines.append(f"| {k} | {t['wall_s']} | {t['driver_peak_mb']} | {t['steps']} | {t['objective']!r} | "
                         f"{t['test']['ppl']!r} |")
    return lines


if __name__ == "__main__":
    cli()
