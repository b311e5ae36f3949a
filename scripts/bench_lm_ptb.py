"""Full PTB, one log-linear model beside SRILM's Kneser-Ney: test perplexity, wall time
per epoch (one full-batch FISTA iteration = one pass over the data) and to convergence,
non-zero parameters against |T| and |S|.

    python scripts/bench_lm_ptb.py [--order 5] [--penalty linf-tree] [--alpha 0.85]
                                   [--grid 3e-6,1e-6,3e-7] [--iters 300]

lambda is chosen on ptb.valid.txt along the grid (warm starts, largest first).
Writes benchmarks/lm_ptb.json and prints a table.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from _bench_common import ROOT, shared, write_json

sys.path.insert(0, str(ROOT))


def srilm_kn(order: int) -> dict:
    text = shared("anchors", "README.md").read_text()
    sect = text.split("### Full PTB", 1)[1].split("###", 1)[0]
    for m in re.finditer(r"^\| (\d+) \| ([\d.]+) / [\d.]+ \| \**([\d.]+)\** / [\d.]+ \|", sect, re.M):
        if int(m.group(1)) == order:
            return {"default": float(m.group(2)), "nocut": float(m.group(3))}
    return {}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--penalty", default="linf-tree")
    ap.add_argument("--alpha", type=float, default=0.85)
    ap.add_argument("--grid", default="3e-6,1e-6,3e-7")
    ap.add_argument("--iters", type=int, default=300)
    ap.add_argument("--tol", type=float, default=1e-6, help="stop when the relative decrease stays below this")
    ap.add_argument("--out", default="lm_ptb.json")
    args = ap.parse_args()

    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.model import LogLinearLM
    from suffixlm.suffixtree import SuffixTree

    t0 = time.perf_counter()
    train = load_training_corpus(shared("corpora", "ptb", "ptb.train.txt"), unk=True)
    valid = Corpus.from_text(shared("corpora", "ptb", "ptb.valid.txt"), train.vocab)
    test = Corpus.from_text(shared("corpora", "ptb", "ptb.test.txt"), train.vocab)
    read_s = time.perf_counter() - t0
    trie = SuffixTree.build(train, args.order - 1, collapse=False).stats()
    lm = LogLinearLM(order=args.order, penalty=args.penalty, alpha=args.alpha, max_iter=args.iters, tol=args.tol,
                     warm_start=True)
    path = []
    best = None
    for lam in [float(x) for x in args.grid.split(",")]:
        lm.lam = lam
        iter_times = []

        def cb(info, w, iter_times=iter_times):
            iter_times.append(info.elapsed)

        t1 = time.perf_counter()
        lm.fit(train, callback=cb)
        fit_s = time.perf_counter() - t1
        per_iter = [b - a for a, b in zip(iter_times, iter_times[1:])]
        per_iter.sort()
        point = {
            "lam": lam,
            "valid_ppl": lm.corpus_perplexity(valid),
            "test_ppl": lm.corpus_perplexity(test),
            "objective": lm.objective_,
            "iterations": lm.n_iter_,
            "converged": lm.converged_,
            "fit_seconds": fit_s,
            "build_seconds": lm.seconds_build_,
            "median_epoch_seconds": per_iter[len(per_iter) // 2] if per_iter else None,
            "prox_seconds": lm.prox_seconds_,
            "gradient_seconds": lm.gradient_seconds_,
            "nonzero": lm.n_nonzero_,
            "tree_params": lm.n_params_,
        }
        path.append(point)
        print(f"lam {lam:.0e}: valid {point['valid_ppl']:.2f} test {point['test_ppl']:.2f} "
              f"iterations {lm.n_iter_} ({'converged' if lm.converged_ else 'not converged'}) "
              f"fit {fit_s:.0f} s, epoch {point['median_epoch_seconds']:.2f} s, nnz {lm.n_nonzero_}", flush=True)
        if best is None or point["valid_ppl"] < best["valid_ppl"]:
            best = point
    kn = srilm_kn(args.order)
    out = write_json(args.out, {
        "order": args.order, "penalty": args.penalty, "alpha": args.alpha, "read_seconds": read_s,
        "tree_nodes_T": lm.tree_.n_nodes, "trie_nodes_S": trie["trie_nodes"], "trie_params": trie["trie_params"],
        "tree_params": lm.n_params_, "path": path, "best": best, "srilm_kn": kn,
    })
    print(f"\nchosen lam {best['lam']:.0e}: test ppl {best['test_ppl']:.2f}  vs SRILM KN{args.order} "
          f"{kn.get('nocut')} (no cut-offs) / {kn.get('default')} (default cut-offs)")
    print(f"non-zero parameters {best['nonzero']} of {lm.n_params_} tree params (|T| = {lm.tree_.n_nodes} nodes; "
          f"trie: |S| = {trie['trie_nodes']} nodes, {trie['trie_params']} params)")
    print("wrote", out)


if __name__ == "__main__":
    main()
