#!/usr/bin/env python3
"""CoNLL-2000 chunking: CRF training in one process against data-parallel training on
a local Dask cluster (``CRF.fit(client=)``, ``suffixlm crf train --workers N``).

The default run of scripts/bench_conll2000.py (corpora/patterns/chunk.pat, OWL-QN,
CRF() defaults) once with one process and one numba thread (``--threads 1``) and once
on N single-threaded worker processes.  Each configuration runs in a fresh process;
the workers' peak RSS is read on the workers at the end of the fit.

    python scripts/bench_dask_crf.py [--runs 1] [--workers 2] [--maxiter 0]

Writes benchmarks/dask_crf.json and benchmarks/dask_crf.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_conll2000 import _data, _scores, _worker_rss, provenance, resolve_shared  # noqa: E402


def _peak_rss_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def fit(args) -> dict:
    """One fit in this process: ``--workers 0`` single process, else on a local cluster."""
    import numpy as np

    from crf import CRF
    from suffixlm.distributed import client_from_options

    X, y, Xt, yt = _data(Path(args.shared))
    params = dict(patterns=str(args.patterns), threads=1, max_iter=args.maxiter or None)
    CRF(**params | {"max_iter": 2}).fit(X[:50], y[:50]).predict(Xt[:5])  # numba kernels loaded: not timed
    with client_from_options(workers=args.workers or None) as client:
        workers_rss = []
        if client is not None:  # the workers load the kernels too (not timed)
            CRF(**params | {"max_iter": 2}).fit(X[:50], y[:50], client=client)
        t0 = time.perf_counter()
        model = CRF(**params).fit(X, y, client=client)
        train_s = time.perf_counter() - t0
        if client is not None:
            workers_rss = sorted(client.run(_peak_rss_mb).values())
    pred = model.predict(Xt)
    out = _scores(yt, pred)
    log = model.training_log_
    per_iter = [e["seconds"] for e in log]  # wall time of each iteration
    out.update(train_seconds=train_s, iterations=len(log), evaluations=log[-1]["evaluations"],
               seconds_per_iteration=train_s / max(len(log), 1),
               median_iteration_seconds=float(np.median(per_iter)), solver_seconds=float(np.sum(per_iter)),
               objective=log[-1]["objective"], active_features=model.n_active_features_,
               features=model.n_features_, stop_reason=model.stop_reason_, driver_max_rss_mb=_worker_rss(),
               workers_max_rss_mb=workers_rss)
    Path(args.tmp_model).write_text(json.dumps(pred))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=1)
    ap.add_argument("--workers", type=int, default=2, help="Dask worker processes of the distributed run")
    ap.add_argument("--maxiter", type=int, default=0, help="cap on OWL-QN iterations, both runs (0: none)")
    ap.add_argument("--shared", default=None, help="corpus folder (default ../shared/corpora/conll2000)")
    ap.add_argument("--patterns", default=str(ROOT / "corpora" / "patterns" / "chunk.pat"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "dask_crf"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--tmp-model", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    resolve_shared(args, "conll2000")
    if args.worker:
        print(json.dumps(fit(args)))
        return
    import numpy as np

    runs: dict[str, list] = {"1 process": [], f"{args.workers} workers": []}
    labels = {}
    for r in range(args.runs):
        for kind, n in (("1 process", 0), (f"{args.workers} workers", args.workers)):
            tmp = f"/tmp/bench_dask_crf_{os.getpid()}_{n}.json"
            cmd = [sys.executable, __file__, "--worker", "--workers", str(n), "--maxiter", str(args.maxiter),
                   "--shared", str(args.shared), "--patterns", str(args.patterns), "--tmp-model", tmp]
            res = subprocess.run(cmd, capture_output=True, text=True)
            if res.returncode != 0:
                sys.stderr.write(res.stderr)
                raise SystemExit(f"{kind} run failed")
            out = json.loads(res.stdout.strip().splitlines()[-1])
            labels[kind] = [lab for seq in json.loads(Path(tmp).read_text()) for lab in seq]
            os.unlink(tmp)
            runs[kind].append(out)
            print(f"run {r + 1} {kind}: F1 {out['f1']:.2f} train {out['train_seconds']:.1f}s "
                  f"iters {out['iterations']} ({out['seconds_per_iteration']:.2f} s/iter) "
                  f"driver {out['driver_max_rss_mb']:.0f} MB workers {out['workers_max_rss_mb']} MB", flush=True)
    a, b = labels.values()
    agree = 100.0 * float(np.mean(np.array(a) == np.array(b)))
    fa, fb = (v[-1]["objective"] for v in runs.values())
    rel = abs(fb - fa) / abs(fa)
    keys = ["f1", "train_seconds", "solver_seconds", "seconds_per_iteration", "median_iteration_seconds", "iterations",
            "driver_max_rss_mb", "objective", "active_features"]
    median = {k: {key: statistics.median(r[key] for r in v) for key in keys} for k, v in runs.items()}
    for k, v in runs.items():
        median[k]["workers_max_rss_mb"] = v[-1]["workers_max_rss_mb"]
    doc = provenance("CoNLL-2000 chunking: one process vs Dask data-parallel training")
    doc.update(patterns=os.path.relpath(args.patterns, ROOT),
               settings=f"CRF() defaults (OWL-QN, rho1=0.5, rho2=1e-4, stopeps 2 % over 5 iterations), "
                        f"threads=1; max_iter={args.maxiter or 'none'}; distributed: LocalCluster of "
                        f"{args.workers} single-threaded worker processes, one shard each",
               final_objective_relative_difference=rel, test_labels_identical_percent=agree, runs=runs, median=median)
    Path(args.out + ".json").write_text(json.dumps(doc, indent=1) + "\n")
    o, d = median.values()
    rows = [("F1 (conlleval)", f"{o['f1']:.2f}", f"{d['f1']:.2f}"),
            ("iterations", f"{o['iterations']:.0f}", f"{d['iterations']:.0f}"),
            ("final objective", f"{o['objective']:.4f}", f"{d['objective']:.4f}"),
            ("train wall (s)", f"{o['train_seconds']:.1f}", f"{d['train_seconds']:.1f}"),
            ("solver iterations wall (s)", f"{o['solver_seconds']:.1f}", f"{d['solver_seconds']:.1f}"),
            ("seconds per iteration (train wall / iterations)", f"{o['seconds_per_iteration']:.2f}",
             f"{d['seconds_per_iteration']:.2f}"),
            ("median iteration (s, solver log)", f"{o['median_iteration_seconds']:.2f}",
             f"{d['median_iteration_seconds']:.2f}"),
            ("peak RSS driver (MB)", f"{o['driver_max_rss_mb']:.0f}", f"{d['driver_max_rss_mb']:.0f}"),
            ("peak RSS workers (MB)", "-", " / ".join(f"{x:.0f}" for x in d["workers_max_rss_mb"]))]
    m = doc["machine"]
    md = [f"# {doc['benchmark']}", "",
          f"Command: `{doc['command']}`  ",
          f"Date: {doc['date']}, commit {doc['git_commit']}, {m['platform']}, {m['cpu_count']} CPUs "
          f"(load average at the end {m['load_average_at_end'][0]:.1f}).  ",
          f"Patterns: `{doc['patterns']}`. Medians of {args.runs} run(s), each configuration in its own process.",
          "", f"Settings: {doc['settings']}.", "",
          f"| | 1 process (--threads 1) | {args.workers} Dask workers |", "|---|---|---|"]
    md += [f"| {a_} | {b_} | {c_} |" for a_, b_, c_ in rows]
    md += ["", f"Final objective, relative difference: {rel:.1e}; test tokens labelled identically: {agree:.3f} % "
           "(the gradient is summed in another order, so the runs are not bitwise equal; OWL-QN's line search "
           "and the stopping window let such differences grow a little over the iterations).",
           "Train wall includes building the feature space and, distributed, scattering the shards; the numba "
           "kernels were loaded in an untimed warm-up fit first (driver and workers)."]
    Path(args.out + ".md").write_text("\n".join(md) + "\n")
    print("\n".join(md))


if __name__ == "__main__":
    main()
