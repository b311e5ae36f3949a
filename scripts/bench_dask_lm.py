"""The log-linear LM's training statistics on Dask: single process vs ``--workers 2``, wall
time and peak memory per process, on corpora sampled from the PTB KN5 model; a run whose
per-worker memory limit is below the single-process peak; and one full ``suffixlm train``
(defaults) both ways with its test perplexity.

    A=../shared/anchors/srilm/ptb.kn5.srilm-default.arpa.gz
    python scripts/sample_corpus.py $A --tokens 1000000 --seed 0 -o /tmp/s1m.txt
    python scripts/sample_corpus.py $A --tokens 10000000 --seed 0 -o /tmp/s10m.txt
    python scripts/sample_corpus.py $A --tokens 100000 --seed 1 -o /tmp/stest.txt
    python scripts/bench_dask_lm.py /tmp/s1m.txt /tmp/s10m.txt --test /tmp/stest.txt [--repeats 3]

The statistics stage is what ``LogLinearLM.fit`` does before the solver: read (one
process) or count on the workers and merge (Dask), then the suffix tree and the
per-event statistics of the objective (``LogLinearLM._problem``). Each run is a child
process (``python bench_dask_lm.py stage ...``) whose process tree is sampled every 50 ms
(psutil): the driver, and each worker. The stage prints a digest of the tree's arrays
(all but the edge labels) and of the objective's statistics; every Dask run must give the
single-process digest. Writes benchmarks/dask_lm.json and benchmarks/dask_lm.md.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from _bench_common import BENCH_DIR, run_sampled, write_json  # noqa: E402

EDGE_LABELS = ("tokens", "offsets", "context_position")


def run(cmd: list[str]) -> dict:
    """Wall time, peak RSS (MB) of the command (the driver) and of each child process over
    100 MB (the workers; nannies and the scheduler's helpers are small), and its stdout."""
    wall, driver, children, out = run_sampled(cmd)
    workers = sorted((round(v / 2**20, 1) for v in children if v > 100 * 2**20), reverse=True)
    return {"wall_s": round(wall, 2), "driver_peak_mb": round(driver / 2**20, 1), "worker_peak_mb": workers,
            "stdout": out}


def digest(problem, tree) -> str:
    h = hashlib.sha256()
    for k in tree.FIELDS:
        if k not in EDGE_LABELS:
            h.update(getattr(tree, k).tobytes())
    h.update(problem.n_end_all.tobytes())
    h.update(problem.emp_all.tobytes())
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
    from suffixlm.commands.kn import return_freed_memory_to_os
    from suffixlm.model import LogLinearLM

    return_freed_memory_to_os()
    lm = LogLinearLM(order=order)
    t0 = time.perf_counter()
    if workers:
        from suffixlm.distributed import client_from_options
        from suffixlm.lm_dask import count_text_events

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


@cli.command()
@click.argument("corpora", nargs=-1, required=True)
@click.option("--test", "test_text", required=True, help="Held-out text for the full-training perplexities.")
@click.option("--repeats", default=1, show_default=True)
@click.option("--workers", default=2, show_default=True)
def main(corpora, test_text, repeats, workers):
    """Statistics stage single vs workers per corpus; a memory-limited run on the largest;
    full training on the first, both ways."""
    rows = []
    for corpus in corpora:
        words = sum(len(line.split()) for line in open(corpus, encoding="utf-8"))
        load0 = os.getloadavg()
        single = median_run(repeats, corpus)
        dist = median_run(repeats, corpus, workers)
        row = {"corpus": corpus, "words": words, "single": single, f"workers{workers}": dist,
               "identical": single["digest"] == dist["digest"], "loadavg_before": load0,
               "loadavg_after": os.getloadavg()}
        rows.append(row)
        click.echo(json.dumps(row), err=True)
    big = rows[-1]
    limit_mb = int(big["single"]["driver_peak_mb"] * 0.6)
    limited = stage_run(big["corpus"], workers, f"{limit_mb}MiB")
    limited.update(memory_limit_mb=limit_mb, identical=limited["digest"] == big["single"]["digest"])
    big["limited"] = limited
    click.echo(json.dumps(limited), err=True)
    train = {"corpus": corpora[0], "single": train_run(corpora[0], test_text),
             f"workers{workers}": train_run(corpora[0], test_text, workers)}
    click.echo(json.dumps(train), err=True)
    write_json("dask_lm.json", {"rows": rows, "train": train, "repeats": repeats, "machine_note":
                                "2 cores and 24 GiB shared with other jobs"})
    lines = ["# Log-linear LM training statistics: single process vs Dask workers", "",
             f"Order 5, the statistics stage (read or count+merge, suffix tree, per-event statistics; not the "
             f"solver), medians of {repeats} run(s); peak RSS sampled every 50 ms per process; the Dask wall time "
             "excludes the local cluster's start-up (the process's peak RSS does not). `identical`: the tree's "
             "arrays (all but the edge labels) and the objective's statistics hash to the single-process ones. "
             "\"count\" is the Dask stage up to the driver's events in canonical order (vocabulary pass, counting on "
             "the workers, shuffle, and the events' sort on the driver); \"tree+stats\" the suffix tree and the "
             "per-event statistics from them. Machine: 2 cores and 24 GiB shared with other jobs (load averages in "
             "the JSON); 50M words were not run on it.", "",
             "| words | single s | single peak MB | 2 workers s (count / tree+stats) | driver peak MB | "
             "worker peaks MB | identical |", "|---|---|---|---|---|---|---|"]
    for row in rows:
        s, d = row["single"], row[f"workers{workers}"]
        lines.append(f"| {row['words']:,} | {s['stage_s']} | {s['driver_peak_mb']} | {d['stage_s']} "
                     f"({d['count_s']} / {d['tree_and_statistics_s']}) | {d['driver_peak_mb']} | "
                     f"{', '.join(map(str, d['worker_peak_mb']))} | {row['identical']} |")
    lim = big["limited"]
    lines += ["", f"Memory limit {lim['memory_limit_mb']} MiB per worker (single-process peak "
              f"{big['single']['driver_peak_mb']} MB) on {big['words']:,} words: {lim['stage_s']} s, worker peaks "
              f"{', '.join(map(str, lim['worker_peak_mb']))} MB, driver {lim['driver_peak_mb']} MB, identical: "
              f"{lim['identical']}.", "",
              f"Full `suffixlm train` (defaults, order 5) on {rows[0]['words']:,} words, test {test_text}:", "",
              "| run | wall s | driver peak MB | steps | objective | test ppl |", "|---|---|---|---|---|---|"]
    for k in ("single", f"workers{workers}"):
        t = train[k]
        lines.append(f"| {k} | {t['wall_s']} | {t['driver_peak_mb']} | {t['steps']} | {t['objective']!r} | "
                     f"{t['test']['ppl']!r} |")
    (BENCH_DIR / "dask_lm.md").write_text("\n".join(lines) + "\n")
    click.echo("\n".join(lines))


if __name__ == "__main__":
    cli()
