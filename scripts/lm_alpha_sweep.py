#!/usr/bin/env python3
"""Does training to convergence, or another depth weight alpha, close the gap to
Kneser-Ney on the paper's 100k/20k PTB split?

Order-N weighted linf-tree models (default N = 5) on ``ptb.train.100k.txt``, for each
alpha a lambda path (largest first, warm starts), each lambda trained with FISTA until
the relative decrease stays below 1e-7 or ``--iters`` iterations; lambda chosen on
``ptb.valid.txt``, test perplexity on ``ptb.test.20k.txt`` beside SRILM's KN figures
(../shared/anchors/README.md: 192.33 default cut-offs, 188.72 none, at order 5).

    python scripts/lm_alpha_sweep.py [--order 5] [--alphas 0.5,0.7,0.8,0.85,0.9]
                                     [--grid 3e-5,1.5e-5,1e-5,7e-6,5e-6] [--iters 1500]

Writes benchmarks/lm_alpha_100k.json and prints a table.
"""

from __future__ import annotations

import argparse
import sys
import time

from _bench_common import ROOT, shared, write_json

sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--penalty", default="linf-tree")
    ap.add_argument("--alphas", default="0.5,0.7,0.8,0.85,0.9")
    ap.add_argument("--grid", default="3e-5,1.5e-5,1e-5,7e-6,5e-6")
    ap.add_argument("--iters", type=int, default=1500)
    ap.add_argument("--tol", type=float, default=1e-7)
    ap.add_argument("--out", default="lm_alpha_100k.json")
    args = ap.parse_args()

    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.evaluate import score
    from suffixlm.model import LogLinearLM

    train = load_training_corpus(shared("corpora", "ptb", "ptb.train.100k.txt"), unk=True)
    valid = Corpus.from_text(shared("corpora", "ptb", "ptb.valid.txt"), train.vocab)
    test = Corpus.from_text(shared("corpora", "ptb", "ptb.test.20k.txt"), train.vocab)
    runs = []
    for alpha in [float(a) for a in args.alphas.split(",")]:
        lm = LogLinearLM(order=args.order, penalty=args.penalty, alpha=alpha, max_iter=args.iters, tol=args.tol,
                         warm_start=True)
        for lam in [float(x) for x in args.grid.split(",")]:
            lm.lam = lam
            t0 = time.perf_counter()
            lm.fit(train)
            row = {"alpha": alpha, "lam": lam, "iterations": lm.n_iter_, "converged": bool(lm.converged_),
                   "objective": lm.objective_, "valid_ppl": score(lm, valid, "valid").ppl,
                   "test_ppl": score(lm, test, "test").ppl, "seconds": time.perf_counter() - t0}
            runs.append(row)
            print(f"alpha {alpha:<5g} lam {lam:<8.2g} valid {row['valid_ppl']:8.2f} test {row['test_ppl']:8.2f} "
                  f"({row['iterations']} it{', converged' if row['converged'] else ''}, {row['seconds']:.0f} s)",
                  flush=True)
    best = {}
    for r in runs:
        if r["alpha"] not in best or r["valid_ppl"] < best[r["alpha"]]["valid_ppl"]:
            best[r["alpha"]] = r
    print("\nlambda chosen on ptb.valid.txt, per alpha:")
    for a, r in best.items():
        print(f"  alpha {a:<5g} lam {r['lam']:<8.2g} test ppl {r['test_ppl']:.2f}")
    write_json(args.out, {"settings": vars(args), "runs": runs, "best_per_alpha": list(best.values())})


if __name__ == "__main__":
    main()
