#!/usr/bin/env python3
"""CoNLL-2002 Dutch named-entity recognition: suffixlm's CRF against python-crfsuite.

Data: ../shared/corpora/conll2002, ned.train (training), ned.testa (development),
ned.testb (test); columns ``word POS NE``, IOB2 entity tags.  The
``-DOCSTART- -DOCSTART- O`` lines (article boundaries, each the first line of the
first sentence of an article) are dropped on reading (``read_sequences(...,
drop_docstart=True)``), the usual practice: they are neither tokens to label nor
context for the first word, which sees the sentence-start padding instead.
Hence 202,644 / 37,687 / 68,875 tokens, as in the shared task's figures.

Both systems see the same attributes: the observation strings of the unigram
patterns of corpora/patterns/ner.pat (ours also uses its ``B`` label bigram
pattern; CRFsuite always has its label transitions).  Our solvers (``--solvers``,
any of crf.model.ALGORITHMS; by default OWL-QN with CRF()'s defaults, L-BFGS and
SAG with an l2 penalty (``--l2-rho2``), SGD-l1 and the averaged perceptron with
their defaults; BCD and FISTA are slow here) are all trained; the one with the
best median development F1 (ned.testa) is the one set beside CRFsuite in the
table.  Every system runs in a fresh subprocess (so peak
RSS is its own), each run is repeated, the tables give medians.  Shared code:
scripts/bench_conll2000.py.

    python scripts/bench_conll2002.py [--runs 3] [--solvers owlqn,lbfgs,sgd-l1,sag,perceptron] [--l2-rho2 1]

Writes benchmarks/conll2002.json and benchmarks/conll2002.md.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from bench_conll2000 import (  # noqa: E402
    SUMMARY_KEYS,
    _scores,
    add_arguments,
    comparison_rows,
    crfsuite_setting,
    fit_crfsuite,
    fit_ours,
    header_lines,
    print_run,
    provenance,
    resolve_shared,
    run_worker,
    summarise,
    timing_note,
    warm_up,
    warm_up_process,
    worker_main,
)

FILES = ("ned.train", "ned.testa", "ned.testb")
TYPES = ("PER", "ORG", "LOC", "MISC")
L2_ONLY = ("lbfgs", "sag", "sag-nus")  # trained with rho2 = --l2-rho2 (CRF()'s 1e-4 is meant for l1)
SETTINGS = {
    "owlqn": "CRF() defaults: OWL-QN, rho1=0.5, rho2=1e-4, stop when the objective improves by "
             "< 2 % over 5 iterations",
    "lbfgs": "CRF(algorithm='lbfgs', rho2={rho2}): L-BFGS, l2 penalty only, same stopping rule",
}


def _setting(solver: str, rho2: float) -> str:
    if solver in SETTINGS:
        return SETTINGS[solver].format(rho2=rho2)
    extra = f", rho2={rho2}" if solver in L2_ONLY else ""
    return f"CRF(algorithm='{solver}'{extra}), other parameters CRF()'s defaults (crf.model.CRF)"


def _params(solver: str, rho2: float) -> dict:
    if solver == "owlqn":
        return {}
    return {"algorithm": solver, **({"rho2": rho2} if solver in L2_ONLY else {})}


def _data(shared: Path):
    """``X, y, X_dev, y_dev, X_test, y_test`` with the -DOCSTART- lines dropped."""
    from crf.data import read_sequences, split_labels

    out = []
    for name in FILES:
        out += split_labels(read_sequences(shared / name, drop_docstart=True))
    return out


def _by_type(gold, pred) -> dict:
    from crf.evaluate import chunk_scores

    sc = chunk_scores(gold, pred)
    return {t: sc.by_type(t)[2] for t in TYPES}


def worker_ours(args) -> dict:
    X, y, Xd, yd, Xt, yt = _data(Path(args.shared))
    if args.warmup:
        return warm_up(args, X, y, Xt)
    out, model = fit_ours(args, X, y, Xt, yt, **_params(args.algorithm, args.l2_rho2))
    # outside the timings: development F1 and per-type test F1
    out.update(dev_f1=_scores(yd, model.predict(Xd))["f1"], f1_by_type=_by_type(yt, model.predict(Xt)),
               test_tokens=sum(map(len, Xt)))
    return out


def worker_crfsuite(args) -> dict:
    X, y, Xd, yd, Xt, yt = _data(Path(args.shared))
    out, label = fit_crfsuite(args, X, y, Xt, yt)
    out.update(dev_f1=_scores(yd, label(Xd))["f1"], f1_by_type=_by_type(yt, label(Xt)),
               test_tokens=sum(map(len, Xt)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_arguments(ap, "conll2002", "ner.pat", "conll2002", ["ours", "crfsuite"])
    ap.add_argument("--solvers", default="owlqn,lbfgs,sgd-l1,sag,perceptron",
                    help="our solvers to train, comma-separated (best by development F1 is compared)")
    ap.add_argument("--l2-rho2", type=float, default=1.0, help="l2 penalty of the l2-only solvers "
                    f"({', '.join(L2_ONLY)})")
    ap.add_argument("--algorithm", default="owlqn", help=argparse.SUPPRESS)
    args = ap.parse_args()
    resolve_shared(args, "conll2002", skip=True)
    if args.worker:
        worker_main(args, worker_ours if args.worker == "ours" else worker_crfsuite)
        return
    solvers = [s.strip() for s in args.solvers.split(",") if s.strip()]
    from crf.model import ALGORITHMS

    bad = [s for s in solvers if s not in ALGORITHMS]
    if bad or not solvers:
        raise SystemExit(f"--solvers: expected some of {', '.join(ALGORITHMS)}, got {args.solvers!r}")
    try:
        import pycrfsuite  # noqa: F401
    except ImportError:
        raise SystemExit("python-crfsuite is not installed: pip install -e '.[bench]'") from None

    load_at_start = os.getloadavg()
    warmup_s = warm_up_process(args, __file__)
    runs: dict[str, list[dict]] = {s: [] for s in solvers}
    runs["crfsuite"] = []
    for r in range(args.runs):
        for kind in runs:
            if kind == "crfsuite":
                res = run_worker("crfsuite", args, __file__)
            else:
                res = run_worker("ours", args, __file__, ["--algorithm", kind, "--l2-rho2", str(args.l2_rho2)])
            runs[kind].append(res)
            print_run(r, kind, res)
            print(f"      dev F1 {res['dev_f1']:.2f}", flush=True)

    best = max(solvers, key=lambda s: statistics.median(x["dev_f1"] for x in runs[s]))
    summary, ratios = summarise(runs, runs["crfsuite"][0]["test_tokens"], ours=best,
                                keys=SUMMARY_KEYS + ["dev_f1"])
    for kind in runs:
        summary[kind]["f1_by_type"] = {t: statistics.median(x["f1_by_type"][t] for x in runs[kind])
                                       for t in TYPES}
    settings = {s: _setting(s, args.l2_rho2) for s in solvers}
    settings["crfsuite"] = crfsuite_setting(args)
    report = provenance("CoNLL-2002 Dutch NER, ned.train -> ned.testb (development ned.testa)")
    report["machine"]["load_average_at_start"] = load_at_start
    report.update({
        "patterns": os.path.relpath(args.patterns, ROOT),
        "data": "ned.train / ned.testa / ned.testb, -DOCSTART- lines dropped on reading",
        "settings": settings, "best_solver_by_dev_f1": best,
        "warmup_seconds_numba_compile_or_cache_load": warmup_s,
        "runs": runs, "median": summary, "ratios": ratios,
    })
    Path(args.out + ".json").write_text(json.dumps(report, indent=2) + "\n")

    o, c = summary[best], summary["crfsuite"]
    rows = [("dev F1 (ned.testa)", f"{o['dev_f1']:.2f}", f"{c['dev_f1']:.2f}",
             f"{o['dev_f1'] - c['dev_f1']:+.2f}")] + comparison_rows(o, c, ratios)
    rows.insert(2, ("test F1 PER / ORG / LOC / MISC", " / ".join(f"{o['f1_by_type'][t]:.2f}" for t in TYPES),
                    " / ".join(f"{c['f1_by_type'][t]:.2f}" for t in TYPES), ""))
    lines = header_lines("CoNLL-2002 Dutch NER: suffixlm CRF vs python-crfsuite", report, args.runs) + [
        "Train ned.train, development ned.testa, test ned.testb (F1, P/R and accuracy below are on "
        "ned.testb unless marked). `-DOCSTART-` lines are dropped on reading (not labelled, not "
        "scored, not context), so 202,644 / 37,687 / 68,875 tokens.",
        "",
    ] + [f"- {k}: {v}" for k, v in settings.items()] + [
        "",
        "Our solvers; the best by median development F1 is compared with CRFsuite below:",
        "",
        "| system | dev F1 | test F1 | iterations | active features | train wall (s) | train CPU (s) | peak RSS (MB) |",
        "|---|---|---|---|---|---|---|---|",
    ] + [f"| {k}{' (best dev)' if k == best else ''} | {v['dev_f1']:.2f} | {v['f1']:.2f} | {v['iterations']:.0f} | "
         f"{v['active_features']:,.0f} | {v['train_seconds']:.1f} | {v['train_cpu_seconds']:.1f} | "
         f"{v['max_rss_mb']:.0f} |" for k, v in summary.items()] + [
        "",
        f"| | suffixlm crf ({best}) | CRFsuite | ratio / difference |",
        "|---|---|---|---|",
    ] + [f"| {a} | {b} | {c_} | {d} |" for a, b, c_, d in rows]
    lines += ["", timing_note(warmup_s) + " Development F1 and the per-type figures are computed after "
              f"the timings. Load average (1 min) at the start {load_at_start[0]:.1f}: when other jobs hold "
              "the cores, our two threads get less than two cores (train CPU close to wall), and wall-time "
              "ratios move with the load.",
              "",
              f"Ours is the best of {len(solvers)} solver setting(s) by development F1, CRFsuite runs with one "
              "fixed setting (that of benchmarks/conll2000.md); compare rows of the first table for "
              "like-for-like settings (OWL-QN with CRF() defaults vs CRFsuite's elastic net)."]
    Path(args.out + ".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
