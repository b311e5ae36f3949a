#!/usr/bin/env python3
"""The sklearn-crfsuite tutorial on CoNLL-2002 Spanish: suffixlm's ``CRF().fit`` on the
tutorial's feature dicts against sklearn-crfsuite itself, side by side.

Data: ../shared/corpora/conll2002, esp.train (training) and esp.testb (test), columns
``word POS NE`` (no -DOCSTART- lines in the Spanish files).  Features: the tutorial's
``word2features`` (``crf.tutorial``, verbatim), one dict per token.  Systems:

* ``sklearn-crfsuite``: ``sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1,
  max_iterations=100, all_possible_transitions=True)``, the tutorial's settings;
* ``ours``: ``crf.CRF(rho1=0.1, rho2=0.2, max_iter=100)``: OWL-QN on the same elastic
  net.  CRFsuite minimises -log L + c1 |w|_1 + c2 |w|^2, ours -log L + rho1 |w|_1 +
  rho2/2 |w|^2, so rho1 = c1 and rho2 = 2 c2; our stopping rule is CRF()'s (objective
  down by < 2 % over 5 iterations), CRFsuite's its own (delta 1e-5 over 10);
* ``ours-defaults`` (``--systems``): ``crf.CRF()`` as it comes (rho1 0.5, rho2 1e-4).

Each system runs in a fresh process (peak RSS its own), ``--runs`` times; the tables
give medians.  Train time is given without and with the feature dict generation of the
training set; label time includes the test set's feature dicts.  Entity F1 is
conlleval's (crf.evaluate), on the tutorial's labels minus 'O' (entity chunks).

    python scripts/bench_sklearn_crfsuite.py [--runs 3] [--systems ours,sklearn-crfsuite,ours-defaults]

Writes benchmarks/sklearn_crfsuite.json and benchmarks/sklearn_crfsuite.md.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from crf.tutorial import sent2features  # noqa: E402 (plain Python: imports neither numpy nor numba)
from bench_second_order import chunks  # noqa: E402 (standard library only)

SYSTEMS = ("ours", "sklearn-crfsuite", "ours-defaults")
SETTINGS = {
    "ours": "crf.CRF(rho1=0.1, rho2=0.2, max_iter=100): OWL-QN, the tutorial's c1=0.1, c2=0.1 "
            "(rho1 = c1, rho2 = 2 c2), CRF()'s stopping rule",
    "ours-defaults": "crf.CRF(): OWL-QN, rho1=0.5, rho2=1e-4, CRF()'s stopping rule",
    "sklearn-crfsuite": "sklearn_crfsuite.CRF(algorithm='lbfgs', c1=0.1, c2=0.1, max_iterations=100, "
                        "all_possible_transitions=True) (the tutorial's)",
}


def read(path):
    """Sentences as lists of (word, POS, label) rows (plain Python: a worker loads only its system)."""
    sents, cur = [], []
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            cols = line.split()
            if not cols:
                if cur:
                    sents.append(cur)
                    cur = []
                continue
            if len(cols) != 3:
                raise SystemExit(f"{path}: expected 3 columns, found {len(cols)}: {line!r}")
            cur.append(cols)
    if cur:
        sents.append(cur)
    return sents


def chunk_scores(gold, pred):
    """(precision, recall, F1, token accuracy) in percent, conlleval's: IOB2 chunks, a chunk
    is right when its type and both ends are (plain Python, as ``read``)."""
    tp = fp = fn = right = n = 0
    for g, p in zip(gold, pred):
        cg, cp = chunks(g), chunks(p)
        tp += len(cg & cp)
        fp += len(cp - cg)
        fn += len(cg - cp)
        right += sum(a == b for a, b in zip(g, p))
        n += len(g)
    prec = 100.0 * tp / max(tp + fp, 1)
    rec = 100.0 * tp / max(tp + fn, 1)
    return prec, rec, 2 * prec * rec / (prec + rec) if prec + rec else 0.0, 100.0 * right / max(n, 1)


# ---------------------------------------------------------------- one system in one process
def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _estimator(system: str):
    if system == "sklearn-crfsuite":
        import sklearn_crfsuite

        return sklearn_crfsuite.CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100,
                                    all_possible_transitions=True)
    from crf import CRF

    return CRF(rho1=0.1, rho2=0.2, max_iter=100) if system == "ours" else CRF()


def worker(args) -> dict:
    train, test = read(Path(args.shared) / "esp.train"), read(Path(args.shared) / "esp.testb")
    y = [[row[2] for row in s] for s in train]
    yt = [[row[2] for row in s] for s in test]
    if args.warmup:
        from crf import CRF

        CRF(max_iter=2).fit([sent2features(s) for s in train[:50]], y[:50]).predict([sent2features(test[0])])
        return {}
    t0 = time.perf_counter()
    X = [sent2features(s) for s in train]
    features_s = time.perf_counter() - t0
    crf = _estimator(args.worker)
    c0 = _cpu()
    t0 = time.perf_counter()
    crf.fit(X, y)
    train_s = time.perf_counter() - t0
    train_cpu = _cpu() - c0
    t0 = time.perf_counter()
    Xt = [sent2features(s) for s in test]
    test_features_s = time.perf_counter() - t0
    pred = crf.predict(Xt)
    label_s = time.perf_counter() - t0
    labels = [lab for lab in crf.classes_ if lab != "O"]  # the tutorial's labels
    p, r, f, accuracy = chunk_scores(yt, pred)
    if args.worker == "sklearn-crfsuite":
        iterations = len(crf.training_log_.iterations)
        active = int(crf.training_log_.last_iteration.get("active_features", 0))
    else:
        iterations, active = crf.n_iter_, crf.n_active_features_
    return {"f1": f, "precision": p, "recall": r, "token_accuracy": accuracy, "labels": labels,
            "train_seconds": train_s, "train_cpu_seconds": train_cpu, "feature_seconds": features_s,
            "train_with_features_seconds": train_s + features_s, "label_seconds": label_s,
            "test_feature_seconds": test_features_s, "iterations": iterations, "active_features": active,
            "attributes": len(crf.attributes_), "train_tokens": sum(map(len, X)), "test_tokens": sum(map(len, Xt)),
            "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


def run_worker(system: str, args, warmup: bool = False) -> dict:
    cmd = [sys.executable, __file__, "--worker", system, "--shared", str(args.shared)] + (["--warmup"] if warmup else [])
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode != 0:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"{system} worker failed")
    return json.loads(res.stdout.strip().splitlines()[-1])


KEYS = ["f1", "precision", "recall", "token_accuracy", "train_seconds", "train_cpu_seconds", "feature_seconds",
        "train_with_features_seconds", "label_seconds", "test_feature_seconds", "iterations", "active_features",
        "attributes", "max_rss_mb"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--systems", default="ours,sklearn-crfsuite", help=f"comma-separated, of {', '.join(SYSTEMS)}")
    ap.add_argument("--shared", default=None, help="corpus folder (default ../shared/corpora/conll2002)")
    ap.add_argument("--worker", choices=SYSTEMS, default=None)
    ap.add_argument("--warmup", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "sklearn_crfsuite"))
    args = ap.parse_args()
    if args.shared is None:
        from suffixlm.corpora import shared_path

        args.shared = shared_path("corpora", "conll2002")
        if args.shared is None:
            print("skipped: ../shared/corpora/conll2002 not found; pass --shared")
            return
    if args.worker:
        print(json.dumps(worker(args)))
        return
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    if not systems or any(s not in SYSTEMS for s in systems) or "sklearn-crfsuite" not in systems:
        raise SystemExit(f"--systems: sklearn-crfsuite and some of {', '.join(SYSTEMS)}")
    try:
        import sklearn_crfsuite  # noqa: F401
    except ImportError:
        raise SystemExit("sklearn-crfsuite is not installed (a benchmark-only peer): pip install sklearn-crfsuite") \
            from None
    from bench_conll2000 import provenance

    load_start = os.getloadavg()
    t0 = time.perf_counter()
    run_worker("ours", args, warmup=True)  # numba compiles / loads its cache: not timed
    warmup_s = time.perf_counter() - t0
    runs: dict[str, list[dict]] = {s: [] for s in systems}
    for r in range(args.runs):
        for s in systems:
            res = run_worker(s, args)
            runs[s].append(res)
            print(f"run {r + 1} {s}: F1 {res['f1']:.2f} train {res['train_seconds']:.1f}s (+{res['feature_seconds']:.1f}s "
                  f"features) iters {res['iterations']} label {res['label_seconds']:.2f}s rss {res['max_rss_mb']:.0f} MB",
                  flush=True)
    med = {s: {k: statistics.median(x[k] for x in runs[s]) for k in KEYS} for s in systems}
    c = med["sklearn-crfsuite"]
    report = provenance("sklearn-crfsuite tutorial, CoNLL-2002 Spanish, esp.train -> esp.testb")
    report["machine"]["load_average_at_start"] = load_start
    report.update({"settings": {s: SETTINGS[s] for s in systems}, "runs": runs, "median": med,
                   "warmup_seconds_numba_compile_or_cache_load": warmup_s,
                   "ratios_to_sklearn_crfsuite": {s: {
                       "f1_difference": med[s]["f1"] - c["f1"],
                       "train_time_ratio": med[s]["train_seconds"] / c["train_seconds"],
                       "train_with_features_time_ratio": med[s]["train_with_features_seconds"]
                       / c["train_with_features_seconds"],
                       "label_time_ratio": med[s]["label_seconds"] / c["label_seconds"],
                       "memory_ratio": med[s]["max_rss_mb"] / c["max_rss_mb"]} for s in systems}})
    Path(args.out + ".json").write_text(json.dumps(report, indent=2) + "\n")
    cols = systems
    rows = [
        ("entity F1 (conlleval)", "{f1:.2f}"), ("precision / recall", "{precision:.2f} / {recall:.2f}"),
        ("token accuracy", "{token_accuracy:.2f}"), ("iterations", "{iterations:.0f}"),
        ("active features", "{active_features:,.0f}"), ("attributes in the model", "{attributes:,.0f}"),
        ("train wall, fit only (s)", "{train_seconds:.1f}"), ("train CPU, fit only (s)", "{train_cpu_seconds:.1f}"),
        ("train wall incl. feature dicts (s)", "{train_with_features_seconds:.1f}"),
        ("feature dicts of esp.train (s)", "{feature_seconds:.1f}"),
        ("label esp.testb incl. feature dicts (s)", "{label_seconds:.2f}"), ("peak RSS (MB)", "{max_rss_mb:.0f}"),
    ]
    m = report["machine"]
    lines = [
        "# sklearn-crfsuite's tutorial on CoNLL-2002 Spanish: suffixlm CRF vs sklearn-crfsuite",
        "",
        f"Command: `{report['command']}`  ",
        f"Date: {report['date']}, commit {report['git_commit']}, {m['platform']}, {m['cpu_count']} CPUs; load "
        f"average (1 min) {load_start[0]:.1f} at the start, {m['load_average_at_end'][0]:.1f} at the end (machine "
        "shared with other jobs).  ",
        f"Medians of {args.runs} run(s), each system in its own process; train esp.train "
        f"({runs[systems[0]][0]['train_tokens']:,} tokens), test esp.testb ({runs[systems[0]][0]['test_tokens']:,} "
        "tokens), the tutorial's `word2features` dicts.",
        "",
    ] + [f"- {s}: {SETTINGS[s]}" for s in systems] + [
        "",
        "| | " + " | ".join(cols) + " |",
        "|---|" + "---|" * len(cols),
    ] + ["| " + name + " | " + " | ".join(fmt.format(**med[s]) for s in cols) + " |" for name, fmt in rows] + [
        "",
        "Ratios to sklearn-crfsuite: " + "; ".join(
            f"{s}: F1 {report['ratios_to_sklearn_crfsuite'][s]['f1_difference']:+.2f}, train "
            f"{report['ratios_to_sklearn_crfsuite'][s]['train_time_ratio']:.2f}x (incl. features "
            f"{report['ratios_to_sklearn_crfsuite'][s]['train_with_features_time_ratio']:.2f}x), label "
            f"{report['ratios_to_sklearn_crfsuite'][s]['label_time_ratio']:.2f}x, peak RSS "
            f"{report['ratios_to_sklearn_crfsuite'][s]['memory_ratio']:.2f}x" for s in cols if s != "sklearn-crfsuite")
        + ".",
        "",
        f"Ours runs numba on {m['numba_threads']} thread(s), CRFsuite on one (compare the CPU row). The numba kernels "
        f"were compiled or loaded in an untimed warm-up process first ({warmup_s:.1f} s).",
    ]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
