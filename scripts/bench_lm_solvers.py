"""Objective vs wall time for the LM solvers on the same problem: SAGE (Algorithm 1)
with the paper's mini-batches of 400, SAGE with growing batches, and full-batch FISTA.

    python scripts/bench_lm_solvers.py [--order 5] [--penalty linf-tree] [--lam 1e-5] [--seconds 60]

Writes benchmarks/lm_solvers.json and benchmarks/lm_solvers.png.
"""

from __future__ import annotations

import argparse
import time

from _bench_common import BENCH_DIR, shared, write_json


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--penalty", default="linf-tree")
    ap.add_argument("--lam", type=float, default=1e-5)
    ap.add_argument("--seconds", type=float, default=60.0, help="time budget per solver")
    ap.add_argument("--train", default=None)
    args = ap.parse_args()

    from suffixlm.corpus import load_training_corpus
    from suffixlm.model import LogLinearLM

    train = load_training_corpus(args.train or shared("corpora", "ptb", "ptb.train.100k.txt"))
    n = train.n_tokens - train.n_sentences
    configs = [
        ("sage, batch 400 (paper)", dict(solver="sage", batch_size=400, batch_growth=1.0)),
        ("sage, batch n/32 growing x2", dict(solver="sage", batch_size=n // 32, batch_growth=2.0)),
        ("fista (full batch)", dict(solver="fista")),
    ]
    # warm the JIT
    LogLinearLM(order=args.order, penalty=args.penalty, lam=args.lam, max_iter=2, solver="fista").fit(train)
    LogLinearLM(order=args.order, penalty=args.penalty, lam=args.lam, max_iter=1, solver="sage", batch_size=n // 2).fit(train)
    runs = []
    for name, kw in configs:
        trace = []
        t0 = time.perf_counter()

        def cb(info, w, trace=trace, t0=t0):
            trace.append({"seconds": time.perf_counter() - t0, "objective": info.objective,
                          "prox_seconds": info.extra.get("prox_seconds"),
                          "gradient_seconds": info.extra.get("gradient_seconds")})
            return time.perf_counter() - t0 > args.seconds

        lm = LogLinearLM(order=args.order, penalty=args.penalty, lam=args.lam, max_iter=100000, tol=0.0, **kw)
        lm.fit(train, callback=cb)
        runs.append({"solver": name, "params": kw, "trace": trace, "final_objective": lm.objective_,
                     "steps": lm.n_iter_, "prox_seconds": lm.prox_seconds_, "gradient_seconds": lm.gradient_seconds_,
                     "seconds": trace[-1]["seconds"] if trace else None})
        print(f"{name:32s} steps {lm.n_iter_:6d}  objective {lm.objective_:.6f}  "
              f"prox {lm.prox_seconds_:.1f} s  gradient {lm.gradient_seconds_:.1f} s  total {runs[-1]['seconds']:.1f} s",
              flush=True)
    best = min(r["final_objective"] for r in runs)
    out = write_json("lm_solvers.json", {"order": args.order, "penalty": args.penalty, "lam": args.lam,
                                         "tokens": int(n), "params": lm.n_params_, "runs": runs})
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(6, 4))
        for r in runs:
            xs = [p["seconds"] for p in r["trace"]]
            ys = [max(p["objective"] - best, 1e-9) for p in r["trace"]]
            ax.semilogy(xs, ys, label=r["solver"])
        ax.set_xlabel("wall time (s)")
        ax.set_ylabel("objective - best")
        ax.set_title(f"PTB 100k, order {args.order}, {args.penalty}, lam={args.lam:g}")
        ax.legend()
        fig.tight_layout()
        fig.savefig(BENCH_DIR / "lm_solvers.png", dpi=100)
    except ImportError:
        pass
    print("wrote", out)


if __name__ == "__main__":
    main()
