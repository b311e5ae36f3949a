#!/usr/bin/env python3
"""CoNLL-2000 chunking: suffixlm's CRF against python-crfsuite, side by side.

Both are trained on the same attributes: the observation strings of the
unigram patterns of corpora/patterns/chunk.pat (ours also uses its ``B`` label
bigram pattern; CRFsuite always has its label transitions).  Every system runs
in a fresh subprocess (so peak RSS is its own) and each run is repeated; the
table gives medians.

    python scripts/bench_conll2000.py [--runs 3] [--crfsuite-iterations 50]

Writes benchmarks/conll2000.json and benchmarks/conll2000.md.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _data(shared):
    from crf.data import read_sequences, split_labels

    X, y = split_labels(read_sequences(shared / "train.txt"))
    Xt, yt = split_labels(read_sequences(shared / "test.txt"))
    return X, y, Xt, yt


def _scores(yt, pred):
    from crf.evaluate import chunk_scores

    sc = chunk_scores(yt, pred)
    p, r, f = sc.precision_recall_f1
    return {"f1": f, "precision": p, "recall": r, "token_accuracy": sc.accuracy}


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def warm_up(args, X, y, Xt) -> dict:
    """Load/compile the numba kernels only."""
    from crf import CRF

    CRF(patterns=str(args.patterns), max_iter=2).fit(X[:50], y[:50]).predict(Xt[:5])
    return {}


def fit_ours(args, X, y, Xt, yt, **params):
    """Train CRF(**params) on (X, y), label Xt: ``(figures, model)``."""
    from crf import CRF

    c0 = _cpu()
    t0 = time.perf_counter()
    model = CRF(patterns=str(args.patterns), threads=args.threads, **params)
    model.fit(X, y)
    train_s = time.perf_counter() - t0
    train_cpu = _cpu() - c0
    model.save(args.tmp_model)
    t0 = time.perf_counter()
    pred = model.predict(Xt)
    label_s = time.perf_counter() - t0
    out = _scores(yt, pred)
    log = model.training_log_
    out.update(train_seconds=train_s, train_cpu_seconds=train_cpu, label_seconds=label_s, iterations=len(log),
               evaluations=log[-1]["evaluations"] if log else 0,
               active_features=model.n_active_features_, features=model.n_features_,
               stop_reason=model.stop_reason_, model_bytes=os.path.getsize(args.tmp_model),
               training_log=log)
    return out, model


def worker_ours(args) -> dict:
    X, y, Xt, yt = _data(Path(args.shared))
    if args.warmup:
        return warm_up(args, X, y, Xt)
    return fit_ours(args, X, y, Xt, yt)[0]


def _status_mb() -> dict:
    """Resident set now (and its anonymous / file-backed parts) and its peak, MB."""
    out = {}
    with open("/proc/self/status") as fh:
        for line in fh:
            key = line.split(":")[0]
            if key in ("VmRSS", "VmHWM", "RssAnon", "RssFile"):
                out[key] = int(line.split()[1]) / 1024
    return out


def worker_memory(args) -> dict:
    """Where the bytes of ``CRF().fit`` go: resident size at the phase boundaries of the
    same steps (imports, data, feature extraction, objective, solver) and the sizes of
    the arrays held, measured in this process (Linux /proc/self/status)."""
    marks = [("python + numpy", _status_mb())]
    import numba
    import numpy as np

    from crf.inference import Objective
    from crf.patterns import read_patterns
    from crf.train import _vector_kernels as V
    from crf.train.owlqn import owlqn

    V.dot(np.ones(2), np.ones(2))  # numba and LLVM loaded, a first kernel mapped
    marks.append(("+ numba, crf, first kernel loaded", _status_mb()))
    X, y, Xt, yt = _data(Path(args.shared))
    marks.append(("+ train and test data (Python lists)", _status_mb()))
    if args.threads:
        numba.set_num_threads(args.threads)
    from crf.features import FeatureSpace

    _, patterns = read_patterns(args.patterns)
    space, train = FeatureSpace.build(patterns, X, y)
    marks.append(("+ feature space and encoded corpus", _status_mb()))
    obj = Objective(space, train)  # narrows the offsets to int32, returns freed heap pages
    marks.append(("+ objective (batch buffers), heap trimmed", _status_mb()))
    peak = {"rss": 0.0}

    def callback(info, x):
        st = _status_mb()
        if st["VmRSS"] > peak["rss"]:
            peak.update(rss=st["VmRSS"], at=info.n_iter, status=st)
        return info.n_iter >= args.memory_iterations

    res = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=0.5, rho2=1e-4, callback=callback)
    marks.append((f"+ OWL-QN, largest over {res.n_iter} iterations (at iteration {peak['at']})", peak["status"]))
    n = space.n_params
    held = {
        "weights n_params": n,
        "one float64 weight-sized vector (MB)": 8 * n / 2**20,
        "solver float64 vectors (x, smooth gradient at x and at the trial point) (MB)": 3 * 8 * n / 2**20,
        "L-BFGS y pairs, float32 (m, n) (MB)": 4 * 5 * n / 2**20,
        "encoded corpus: unigram offsets (MB)": train.unigram_base.nbytes / 2**20,
        "objective arrays (MB)": sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray)) / 2**20,
    }
    return {"marks": [(name, st) for name, st in marks], "held": held, "threads": numba.get_num_threads(),
            "f1": 0.0, "token_accuracy": 0.0, "train_seconds": 0.0, "iterations": res.n_iter,
            "active_features": 0, "label_seconds": 0.0}


def _attributes(patterns, X):
    from crf.patterns import UNIGRAM, expand_patterns

    upats = [p for p in patterns if p.kind & UNIGRAM]
    lengths = [len(s) for s in X]
    cols = [list(c) for c in zip(*[row for s in X for row in s])]
    per_pattern = list(expand_patterns(upats, cols, lengths))
    flat = list(zip(*per_pattern))
    out, s = [], 0
    for T in lengths:
        out.append([list(a) for a in flat[s:s + T]])
        s += T
    return out


def fit_crfsuite(args, X, y, Xt, yt):
    """Train CRFsuite on the attributes of our unigram patterns, label Xt:
    ``(figures, label)`` where ``label(X)`` tags more sequences with the model."""
    import pycrfsuite

    from crf.patterns import read_patterns

    _, patterns = read_patterns(args.patterns)
    t0 = time.perf_counter()
    A = _attributes(patterns, X)
    attr_s = time.perf_counter() - t0
    c0 = _cpu()
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for a, lab in zip(A, y):
        trainer.append(a, lab)
    trainer.set_params({"c1": args.c1, "c2": args.c2, "max_iterations": args.crfsuite_iterations,  # CRFsuite's name
                        "feature.possible_transitions": True})
    trainer.train(args.tmp_model)
    train_s = time.perf_counter() - t0
    train_cpu = _cpu() - c0
    info = trainer.logparser.last_iteration
    t0 = time.perf_counter()
    tagger = pycrfsuite.Tagger()
    tagger.open(args.tmp_model)
    pred = [tagger.tag(a) for a in _attributes(patterns, Xt)]
    label_s = time.perf_counter() - t0
    out = _scores(yt, pred)
    out.update(train_seconds=train_s, train_cpu_seconds=train_cpu, attribute_seconds=attr_s, train_with_attributes_seconds=train_s + attr_s,
               label_seconds=label_s, iterations=len(trainer.logparser.iterations),
               active_features=int(info.get("active_features", 0)),
               model_bytes=os.path.getsize(args.tmp_model))
    return out, lambda X_: [tagger.tag(a) for a in _attributes(patterns, X_)]


def worker_crfsuite(args) -> dict:
    return fit_crfsuite(args, *_data(Path(args.shared)))[0]


def run_worker(kind: str, args, script: str = __file__, extra: list[str] | None = None) -> dict:
    """Run ``script --worker kind`` in a fresh process (options from args, plus extra)."""
    cmd = [sys.executable, script, "--worker", kind, "--shared", str(args.shared), "--patterns",
           str(args.patterns), "--crfsuite-iterations", str(args.crfsuite_iterations), "--c1", str(args.c1),
           "--c2", str(args.c2), "--tmp-model", f"/tmp/{Path(script).stem}_{kind}_{os.getpid()}.model"]
    cmd += extra or []
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"{kind} worker failed")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    # ru_maxrss of children is the max over all children so far: run the biggest first
    out["max_rss_mb_children_max"] = max(before, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss) / 1024
    out["process_wall_seconds"] = wall
    return out


def _worker_rss() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def add_arguments(ap, corpus: str, patterns: str, out: str, workers: list[str]) -> None:
    """The options every CRF-vs-CRFsuite benchmark takes (workers: the --worker choices)."""
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shared", default=None, help=f"corpus folder (default ../shared/corpora/{corpus})")
    ap.add_argument("--patterns", default=str(ROOT / "corpora" / "patterns" / patterns))
    ap.add_argument("--crfsuite-iterations", type=int, default=50)
    ap.add_argument("--c1", type=float, default=1.0)
    ap.add_argument("--c2", type=float, default=1e-3)
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", choices=workers, default=None)
    ap.add_argument("--tmp-model", default=None)
    ap.add_argument("--warmup", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / out))


def resolve_shared(args, corpus: str, skip: bool = False) -> None:
    """Default --shared to ../shared/corpora/<corpus>; if absent, exit (status 0 with skip)."""
    if args.shared is None:
        from suffixlm.corpora import shared_path

        p = shared_path("corpora", corpus)
        if p is None:
            msg = f"../shared/corpora/{corpus} not found; pass --shared"
            if skip:
                print(f"skipped: {msg}")
                raise SystemExit(0)
            raise SystemExit(msg)
        args.shared = p


def worker_main(args, fn) -> None:
    """Worker process: run fn(args), print its figures as one JSON line."""
    out = fn(args)
    out["max_rss_mb"] = _worker_rss()
    if os.path.exists(args.tmp_model):
        os.unlink(args.tmp_model)
    print(json.dumps(out))


def warm_up_process(args, script: str = __file__) -> float:
    """numba compiles (or loads from its cache) the kernels once per machine: not timed."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, script, "--worker", "ours", "--warmup", "--shared", str(args.shared),
                    "--patterns", str(args.patterns), "--tmp-model", f"/tmp/{Path(script).stem}_warm_{os.getpid()}"],
                   check=True, capture_output=True)
    return time.perf_counter() - t0


def print_run(r: int, kind: str, res: dict) -> None:
    print(f"run {r + 1} {kind}: F1 {res['f1']:.2f} acc {res['token_accuracy']:.2f} "
          f"train {res['train_seconds']:.1f}s iters {res['iterations']} active {res['active_features']} "
          f"label {res['label_seconds']:.2f}s rss {res['max_rss_mb']:.0f} MB", flush=True)


SUMMARY_KEYS = ["f1", "precision", "recall", "token_accuracy", "train_seconds", "train_cpu_seconds",
                "label_seconds", "max_rss_mb", "active_features", "iterations", "model_bytes"]


def summarise(runs: dict, n_test_tokens: int, ours: str = "ours", keys: list[str] = SUMMARY_KEYS):
    """Medians per system and the ratios of system ``ours`` to CRFsuite: ``(summary, ratios)``."""
    def med(kind, key):
        return statistics.median(r[key] for r in runs[kind])

    summary = {k: {key: med(k, key) for key in keys} for k in runs}
    summary["crfsuite"]["train_with_attributes_seconds"] = med("crfsuite", "train_with_attributes_seconds")
    for k in runs:
        summary[k]["label_tokens_per_second"] = n_test_tokens / summary[k]["label_seconds"]
    o, c = summary[ours], summary["crfsuite"]
    ratios = {
        "f1_difference": o["f1"] - c["f1"],
        "train_time_ratio": o["train_seconds"] / c["train_seconds"],
        "train_cpu_ratio": o["train_cpu_seconds"] / c["train_cpu_seconds"],
        "train_time_ratio_vs_crfsuite_with_attributes": o["train_seconds"] / c["train_with_attributes_seconds"],
        "label_time_ratio": o["label_seconds"] / c["label_seconds"],
        "memory_ratio": o["max_rss_mb"] / c["max_rss_mb"],
    }
    return summary, ratios


def provenance(benchmark: str) -> dict:
    """Benchmark name, exact command, date, commit (-dirty if crf/ or scripts/ changed), machine."""
    try:
        commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--", "crf", "scripts"],
                                    capture_output=True, text=True).stdout.strip())
    except OSError:
        commit, dirty = "unknown", False
    import numba

    return {
        "benchmark": benchmark,
        "command": "python " + " ".join([os.path.relpath(sys.argv[0], ROOT)] + sys.argv[1:]),
        "date": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": commit + ("-dirty" if dirty else ""),
        "machine": {"platform": platform.platform(), "processor": platform.processor(),
                    "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "numba": numba.__version__, "numba_threads": numba.config.NUMBA_NUM_THREADS,
                    "load_average_at_end": os.getloadavg()},
    }


def comparison_rows(o: dict, c: dict, ratios: dict) -> list[tuple[str, str, str, str]]:
    """Rows (what, ours, CRFsuite, ratio or difference) of the markdown table."""
    return [
        ("F1 (conlleval)", f"{o['f1']:.2f}", f"{c['f1']:.2f}", f"{ratios['f1_difference']:+.2f}"),
        ("precision / recall", f"{o['precision']:.2f} / {o['recall']:.2f}", f"{c['precision']:.2f} / {c['recall']:.2f}", ""),
        ("token accuracy", f"{o['token_accuracy']:.2f}", f"{c['token_accuracy']:.2f}", ""),
        ("iterations", f"{o['iterations']:.0f}", f"{c['iterations']:.0f}", ""),
        ("active features", f"{o['active_features']:,.0f}", f"{c['active_features']:,.0f}", ""),
        ("train wall (s)", f"{o['train_seconds']:.1f}", f"{c['train_seconds']:.1f}", f"{ratios['train_time_ratio']:.2f}"),
        ("train wall incl. attribute generation (s)", f"{o['train_seconds']:.1f}",
         f"{c['train_with_attributes_seconds']:.1f}", f"{ratios['train_time_ratio_vs_crfsuite_with_attributes']:.2f}"),
        ("train CPU time, user+sys (s)", f"{o['train_cpu_seconds']:.1f}", f"{c['train_cpu_seconds']:.1f}",
         f"{ratios['train_cpu_ratio']:.2f}"),
        ("peak RSS (MB)", f"{o['max_rss_mb']:.0f}", f"{c['max_rss_mb']:.0f}", f"{ratios['memory_ratio']:.2f}"),
        ("label test set (s, incl. features)", f"{o['label_seconds']:.2f}", f"{c['label_seconds']:.2f}",
         f"{ratios['label_time_ratio']:.2f}"),
        ("labelling speed (tokens/s)", f"{o['label_tokens_per_second']:,.0f}", f"{c['label_tokens_per_second']:,.0f}", ""),
        ("model file (bytes)", f"{o['model_bytes']:,.0f}", f"{c['model_bytes']:,.0f}", ""),
    ]


def header_lines(title: str, report: dict, runs: int) -> list[str]:
    """Title, command, date/commit/machine/load and patterns lines of the markdown report."""
    return [
        f"# {title}",
        "",
        f"Command: `{report['command']}`  ",
        f"Date: {report['date']}, commit {report['git_commit']}, {report['machine']['platform']}, "
        f"{report['machine']['cpu_count']} CPUs (machine shared with other jobs; load average at the end "
        f"{report['machine']['load_average_at_end'][0]:.1f}).  ",
        f"Patterns: `{report['patterns']}`. Medians of {runs} runs, each system in its own process.",
        "",
    ]


def timing_note(warmup_s: float, threads: int | None = None) -> str:
    return ("Train wall for ours includes feature extraction from the parsed columns; "
            "CRFsuite's first train row is `Trainer.append` + `train` only, the second adds the Python "
            "attribute generation (the same pattern expansion code). "
            f"Ours uses {threads or 'all the (2)'} thread{'' if threads == 1 else 's'}, CRFsuite 1 "
            "(hence the CPU-time row). The numba kernels were compiled/loaded in an untimed warm-up "
            f"process first ({warmup_s:.1f} s).")


def crfsuite_setting(args) -> str:
    return (f"lbfgs c1={args.c1} c2={args.c2} max_iterations={args.crfsuite_iterations}, "
            "feature.possible_transitions=True, same unigram attributes")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, "conll2000", "chunk.pat", "conll2000", ["ours", "crfsuite", "memory"])
    ap.add_argument("--memory-iterations", type=int, default=12,
                    help="OWL-QN iterations of the memory breakdown (the pairs fill in 5)")
    ap.add_argument("--no-breakdown", action="store_true", help="skip the memory breakdown run")
    args = ap.parse_args()
    resolve_shared(args, "conll2000")
    if args.worker:
        worker_main(args, {"ours": worker_ours, "crfsuite": worker_crfsuite, "memory": worker_memory}[args.worker])
        return

    warmup_s = warm_up_process(args)
    runs: dict[str, list[dict]] = {"ours": [], "crfsuite": []}
    for r in range(args.runs):
        for kind in ("ours", "crfsuite"):
            res = run_worker(kind, args)
            runs[kind].append(res)
            print_run(r, kind, res)

    breakdown = None if args.no_breakdown else run_worker(
        "memory", args, extra=["--memory-iterations", str(args.memory_iterations)])
    summary, ratios = summarise(runs, n_test_tokens=47377)
    report = provenance("CoNLL-2000 chunking, train.txt -> test.txt")
    report.update({
        "patterns": os.path.relpath(args.patterns, ROOT),
        "settings": {"ours": "CRF() defaults: OWL-QN, rho1=0.5, rho2=1e-4, stop when the objective improves by < 2 % over 5 iterations",
                     "crfsuite": crfsuite_setting(args)},
        "warmup_seconds_numba_compile_or_cache_load": warmup_s,
        "runs": runs, "median": summary, "ratios": ratios, "threads": args.threads,
        "memory_breakdown": breakdown,
    })
    Path(args.out + ".json").write_text(json.dumps(report, indent=2) + "\n")
    rows = comparison_rows(summary["ours"], summary["crfsuite"], ratios)
    lines = header_lines("CoNLL-2000 chunking: suffixlm CRF vs python-crfsuite", report, args.runs) + [
        f"- ours: {report['settings']['ours']}",
        f"- CRFsuite: {report['settings']['crfsuite']}",
        "",
        "| | suffixlm crf | CRFsuite | ratio / difference |",
        "|---|---|---|---|",
    ] + [f"| {a} | {b} | {c_} | {d} |" for a, b, c_, d in rows]
    lines += ["", timing_note(warmup_s, args.threads)]
    if breakdown is not None:
        lines += ["", "## Where the bytes go", "",
                  f"One more process (`--worker memory`, {breakdown['threads']} threads) runs the steps of "
                  "`CRF().fit` one by one and reads /proc/self/status after each (resident MB; the "
                  "file-backed part is mostly the shared libraries numba and LLVM map):", "",
                  "| after | resident (MB) | step (MB) | anonymous | file-backed |", "|---|---|---|---|---|"]
        prev = 0.0
        for name, st in breakdown["marks"]:
            lines.append(f"| {name} | {st['VmRSS']:.0f} | {st['VmRSS'] - prev:+.0f} | {st['RssAnon']:.0f} | "
                         f"{st['RssFile']:.0f} |")
            prev = st["VmRSS"]
        lines += ["", "Arrays held: " + "; ".join(f"{k} {v:,.1f}" if isinstance(v, float) else f"{k} {v:,}"
                                                  for k, v in breakdown["held"].items()) + "."]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
