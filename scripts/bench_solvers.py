#!/usr/bin/env python3
"""CRF solvers on CoNLL-2000 chunking: objective minus best vs effective passes
(the figure of Schmidt et al.) and development / test F1 vs wall time.

Data: ../shared/corpora/conll2000; the last 10 % of train.txt is held out as the
development set, the solvers train on the first 90 %; patterns
corpora/patterns/chunk.pat.

Two objectives, as the solvers are built for:

* l2 (ridge):  sum_i -log p(y_i|x_i) + rho2/2 ||w||^2 (rho2 = 1, Schmidt et al.'s
  lambda = 1/n): L-BFGS, SAG, SAG-NUS*, SGD (inverse and exponential schedules);
* l1:  sum_i -log p(y_i|x_i) + rho1 |w|_1 (+ rho2/2 ||w||^2, rho2 = 0 by default):
  OWL-QN, SGD-l1, and (with --bcd) BCD.

The averaged perceptron has no objective: it is in the F1 plot only.

An *effective pass* is n per-sequence forward-backwards (for SAG the line-search
trials count too; for L-BFGS/OWL-QN one full gradient is one pass).  Wall time
is the solver's own: the objective (for SAG / SGD an extra full pass; L-BFGS,
OWL-QN and BCD report it exactly themselves), dev and test F1 at every checkpoint
are computed outside it (their time is subtracted).  The best objective is the lowest
value any solver reached (the quasi-Newton reference runs longest).

    python scripts/bench_solvers.py [--passes 30] [--sag-passes 80] [--qn-iterations 300] [--bcd] [--threads 2]

Writes benchmarks/solvers.json, benchmarks/solvers.png, benchmarks/solvers.md.
The machine is shared: timings are single runs, read them as indications.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))


def load(shared: Path, patterns: str, dev_fraction: float):
    from crf.data import read_sequences, split_labels
    from crf.features import FeatureSpace
    from crf.patterns import read_patterns

    X, y = split_labels(read_sequences(shared / "train.txt"))
    Xt, yt = split_labels(read_sequences(shared / "test.txt"))
    n_dev = int(round(dev_fraction * len(X)))
    Xd, yd = X[len(X) - n_dev:], y[len(y) - n_dev:]
    X, y = X[: len(X) - n_dev], y[: len(y) - n_dev]
    _, pats = read_patterns(patterns)
    space, train = FeatureSpace.build(pats, X, y, "train")
    dev = space.encode(Xd, yd, "dev")
    test = space.encode(Xt, yt, "test")
    return space, train, (dev, yd), (test, yt)


class Recorder:
    """Callback that records (passes, seconds, objective, dev F1, test F1) outside the solver's clock."""

    def __init__(self, name, objective, space, dev, test, rho1, rho2, passes_of, exact=True):
        self.name = name
        self.objective = objective
        self.space = space
        self.dev = dev
        self.test = test
        self.rho1 = rho1
        self.rho2 = rho2
        self.passes_of = passes_of
        self.exact = exact
        self.points = []
        self.outside = 0.0
        self.start = time.perf_counter()

    def f1(self, w, data_gold):
        from crf.evaluate import chunk_scores
        from crf.inference import viterbi

        data, gold = data_gold
        pred, _ = viterbi(w, self.space, data)
        labels = self.space.labels
        off = data.seq_offsets
        guess = [[labels[k] for k in pred[off[i]:off[i + 1]]] for i in range(data.n_sequences)]
        return chunk_scores(gold, guess).precision_recall_f1[2]

    def __call__(self, info, w):
        t_in = time.perf_counter()
        seconds = t_in - self.start - self.outside
        f = None
        if self.exact == "info":  # the solver's own objective is exact (quasi-Newton, BCD)
            f = float(info.objective)
        elif self.exact:
            v, _ = self.objective.value_and_gradient(w)
            f = float(v + self.rho1 * np.abs(w).sum() + 0.5 * self.rho2 * (w @ w))
        point = {"iteration": info.n_iter, "passes": float(self.passes_of(info)), "seconds": seconds,
                 "objective": f, "active": int(np.count_nonzero(w)),
                 "dev_f1": self.f1(w, self.dev), "test_f1": self.f1(w, self.test)}
        self.points.append(point)
        obj = f"{f:.4f}" if f is not None else "-"
        print(f"  {self.name:<16} it {info.n_iter:4d} passes {point['passes']:7.2f} t {seconds:7.1f}s "
              f"obj {obj} dev {point['dev_f1']:.2f} test {point['test_f1']:.2f}", flush=True)
        self.outside += time.perf_counter() - t_in
        return False


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shared", default=None, help="folder with train.txt/test.txt")
    ap.add_argument("--patterns", default=str(ROOT / "corpora" / "patterns" / "chunk.pat"))
    ap.add_argument("--dev-fraction", type=float, default=0.1)
    ap.add_argument("--passes", type=int, default=30, help="passes of SGD / SGD-l1")
    ap.add_argument("--sag-passes", type=int, default=80, help="passes of SAG / SAG-NUS*")
    ap.add_argument("--qn-iterations", type=int, default=300, help="L-BFGS / OWL-QN iterations (reference)")
    ap.add_argument("--rho2", type=float, default=1.0, help="l2 penalty of the ridge objective")
    ap.add_argument("--rho1", type=float, default=1.0, help="l1 penalty of the l1 objective")
    ap.add_argument("--l1-rho2", type=float, default=0.0, help="l2 part of the l1 objective")
    ap.add_argument("--eta0", type=float, default=0.1, help="SGD initial learning rate")
    ap.add_argument("--bcd", action="store_true", help="also run BCD on the l1 objective (slow)")
    ap.add_argument("--bcd-passes", type=int, default=2)
    ap.add_argument("--perceptron-epochs", type=int, default=15)
    ap.add_argument("--only", default=None, help="comma-separated solver names to run")
    ap.add_argument("--threads", type=int, default=2, help="numba threads (quasi-Newton gradient)")
    ap.add_argument("--out", default="solvers")
    ap.add_argument("--replot", default=None, help="redraw the table and PNG of this JSON and exit")
    args = ap.parse_args()
    if args.replot:
        replot(args.replot)
        return

    import numba
    from _bench_common import BENCH_DIR, write_json  # noqa: F401

    from crf.inference import Objective
    from crf.train import lbfgs, owlqn
    from crf.train.bcd import bcd
    from crf.train.perceptron import averaged_perceptron
    from crf.train.sag import sag
    from crf.train.sgd_l1 import sgd_l1

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    if args.shared is None:
        from suffixlm.corpora import shared_path

        shared = shared_path("corpora", "conll2000")
        if shared is None:
            raise SystemExit("../shared/corpora/conll2000 not found; pass --shared")
    else:
        shared = Path(args.shared)
    t0 = time.perf_counter()
    space, train, dev, test = load(shared, args.patterns, args.dev_fraction)
    n = train.n_sequences
    print(f"{n} training sequences, {train.n_tokens} tokens, {space.n_labels} labels, {space.n_params} features "
          f"({time.perf_counter() - t0:.1f}s); dev {dev[0].n_sequences}, test {test[0].n_sequences} sequences")
    objective = Objective(space, train, n_chunks=numba.get_num_threads())
    only = set(args.only.split(",")) if args.only else None
    runs = {}

    def run(name, group, rho1, rho2, fn, passes_of, exact=True):
        if only and name not in only:
            return
        rec = Recorder(name, objective, space, dev, test, rho1, rho2, passes_of, exact)
        print(f"* {name} ({group})", flush=True)
        t = time.perf_counter()
        res = fn(rec)
        total = time.perf_counter() - t - rec.outside
        extra = {k: getattr(res, k) for k in ("memory", "gradient_inf", "passes", "linesearch_evaluations",
                                                "safeguard_retries") if hasattr(res, k)}
        extra = {k: (float(v) if isinstance(v, (np.floating, float)) else v) for k, v in extra.items()}
        runs[name] = {"group": group, "rho1": rho1, "rho2": rho2, "seconds": total, "reason": res.reason,
                      "points": rec.points, **extra}

    # warm the numba caches outside the clocks
    objective.value_and_gradient(np.zeros(space.n_params))

    r2 = args.rho2
    run("L-BFGS", "l2", 0.0, r2,
        lambda cb: lbfgs(objective.value_and_gradient_parts, np.zeros(space.n_params), rho2=r2,
                         max_iter=args.qn_iterations, gtol=1e-9, callback=cb),
        lambda info: info.n_evals, exact="info")
    run("SAG", "l2", 0.0, r2, lambda cb: sag(space, train, rho2=r2, max_iter=args.sag_passes, tol=1e-9, callback=cb),
        lambda info: info.n_evals / n)
    run("SAG-NUS*", "l2", 0.0, r2,
        lambda cb: sag(space, train, rho2=r2, nus=True, max_iter=args.sag_passes, tol=1e-9, callback=cb),
        lambda info: info.n_evals / n)
    run("SGD (inverse)", "l2", 0.0, r2,
        lambda cb: sgd_l1(space, train, rho1=0.0, rho2=r2, max_iter=args.passes, eta0=args.eta0,
                          schedule="inverse", tau=1.0, callback=cb),
        lambda info: info.n_iter)
    r1, r12 = args.rho1, args.l1_rho2
    run("OWL-QN", "l1", r1, r12,
        lambda cb: owlqn(objective.value_and_gradient_parts, np.zeros(space.n_params), rho1=r1, rho2=r12,
                         max_iter=args.qn_iterations, gtol=1e-9, callback=cb),
        lambda info: info.n_evals, exact="info")
    run("SGD-l1", "l1", r1, r12,
        lambda cb: sgd_l1(space, train, rho1=r1, rho2=r12, max_iter=args.passes, eta0=args.eta0,
                          schedule="exponential", decay=0.85, callback=cb),
        lambda info: info.n_iter)
    if args.bcd:
        run("BCD", "l1", r1, r12,
            lambda cb: bcd(space, train, rho1=r1, rho2=r12, max_iter=args.bcd_passes, callback=cb),
            lambda info: info.n_evals / n, exact="info")
    run("perceptron", "none", 0.0, 0.0,
        lambda cb: averaged_perceptron(space, train, max_iter=args.perceptron_epochs, callback=cb),
        lambda info: info.n_iter, exact=False)

    payload = {"corpus": "CoNLL-2000 (train 90 % / dev 10 % of train.txt, test.txt)",
               "n_train_sequences": n, "n_features": space.n_params, "n_labels": space.n_labels,
               "settings": vars(args), "runs": runs}
    name = args.out
    if only:
        name += "_" + "_".join(sorted(only)).replace("*", "").replace(" ", "").replace("(", "").replace(")", "")
    best, table = summarise(runs)
    payload["best_objective"] = best
    out = write_json(f"{name}.json", payload)
    write_report(runs, best, table, BENCH_DIR / name)
    print(f"wrote {out}")


def gradient_passes(name, point):
    """Passes counting gradients only: SAG's line-search trials (a loss each) left out."""
    return float(point["iteration"]) if name.startswith("SAG") else point["passes"]


def summarise(runs):
    best = {}
    for r in runs.values():
        for p in r["points"]:
            if p["objective"] is not None:
                best[r["group"]] = min(best.get(r["group"], np.inf), p["objective"])
    table = ["| solver | objective | passes (all forward-backwards) | gradient passes | time (s) "
             "| passes / gradient passes to rel. gap 1e-4 | final rel. gap | dev F1 | test F1 | active |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in runs.items():
        pts = r["points"]
        if not pts:
            continue
        last = pts[-1]
        gap = reach = "-"
        if last["objective"] is not None:
            b = best[r["group"]]
            rel = [(p["objective"] - b) / abs(b) for p in pts]
            gap = f"{rel[-1]:.1e}"
            hit = [p for p, g in zip(pts, rel) if g <= 1e-4]
            reach = (f"{hit[0]['passes']:.1f} / {gradient_passes(name, hit[0]):.1f}" if hit
                     else f"> {last['passes']:.1f}")
            r["best_objective"] = b
            r["passes_to_1e-4"] = hit[0]["passes"] if hit else None
            r["gradient_passes_to_1e-4"] = gradient_passes(name, hit[0]) if hit else None
        table.append(f"| {name} | {r['group']} | {last['passes']:.1f} | {gradient_passes(name, last):.1f} | "
                     f"{r['seconds']:.1f} | {reach} | {gap} | {last['dev_f1']:.2f} | {last['test_f1']:.2f} | "
                     f"{last['active']} |")
    print("\n".join(table))
    return best, table


def write_report(runs, best, table, stem):
    mem = runs.get("SAG-NUS*", runs.get("SAG", {})).get("memory")
    extra = ""
    if mem:
        extra = ("\nSAG state: unary marginals {:.0f} MB, pairwise marginals {:.0f} MB ({} rows), weight-sized "
                 "vectors {:.0f} MB; storing the n gradients instead would take {:.0f} GB.\n").format(
            mem["unary_marginals"] / 2**20, mem["pairwise_marginals"] / 2**20, mem["n_pairwise_rows"],
            mem["weight_vectors"] / 2**20, mem["stored_gradients_instead"] / 2**30)
    Path(f"{stem}.md").write_text(
        "CRF solvers on CoNLL-2000 (scripts/bench_solvers.py; single runs on a shared 2-core machine)\n\n"
        + "\n".join(table) + "\n" + extra)
    plot(runs, best, Path(f"{stem}.png"))


def replot(path):
    """Redraw the table and figure of an existing JSON (the JSON itself is left as it is)."""
    import json

    data = json.loads(Path(path).read_text())
    best, table = summarise(data["runs"])
    write_report(data["runs"], best, table, Path(path).with_suffix(""))


def plot(runs, best, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 4, figsize=(20, 4.5))
    for ax, group in zip(axes[:2], ("l2", "l1")):
        for name, r in runs.items():
            if r["group"] != group or not r["points"]:
                continue
            # the point that defines the best value has gap 0: left out of the log plot
            pts = [p for p in r["points"] if p["objective"] > best[group]]
            ys = [(p["objective"] - best[group]) / abs(best[group]) for p in pts]
            line, = ax.semilogy([p["passes"] for p in pts], ys, marker=".", ms=3, label=name)
            if name.startswith("SAG"):
                ax.semilogy([gradient_passes(name, p) for p in pts], ys, ls="--", color=line.get_color(),
                            label=f"{name} (gradient passes)")
        ax.set_xlabel("effective passes (forward-backwards / n)")
        ax.set_ylabel("(objective - best) / |best|")
        ax.set_title(f"{group} objective (best = lowest value reached by any solver)", fontsize=9)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    for ax, key in zip(axes[2:], ("dev_f1", "test_f1")):
        for name, r in runs.items():
            ax.semilogx([p["seconds"] for p in r["points"]], [p[key] for p in r["points"]], marker=".", ms=3,
                        label=name)
        ax.set_xlabel("solver wall time (s, log scale)")
        ax.set_ylabel(key.replace("_", " ") + " (chunks)")
        ax.set_ylim(91, 95)
        ax.legend(fontsize=8)
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=110)


if __name__ == "__main__":
    main()
