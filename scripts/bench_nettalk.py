#!/usr/bin/env python3
"""NETtalk letter-to-phoneme with every CRF solver, beside Wapiti's anchor.

Fixed split ../shared/corpora/nettalk/nettalk.{train,test}.txt (column 0 letter,
column 1 phoneme, '-' = silent letter).  Feature sets:

* ``anchor``: ../shared/anchors/patterns/nettalk.pat (letters at -3..+3, the 6
  letter bigrams and 5 trigrams of that window, ``B``), where Wapiti
  (``wapiti train -a l-bfgs``, i.e. OWL-QN rho1 0.5, rho2 1e-4) measured 7.47 %
  letter error in 216 s (../shared/anchors/README.md);
* ``1-grm``, ``3-grm``, ``5-grm`` (Lavergne et al. section 5.1.1): ``*`` patterns
  (unigram and bigram features) on the centred windows of 1, 3, ..., n letters,
  plus ``B``; ``3-grm+`` adds the windows of even size containing the current
  letter.  (The 5-grm sets have ~10^8 weights: pass them explicitly.)

Metrics: letter error (every letter, '-' counted), PER (Levenshtein distance
between the phoneme strings with '-' removed / gold phonemes), word error, active
features, training wall time (single runs: the 2-core machine is shared).

    python scripts/bench_nettalk.py [--sets anchor,1-grm,3-grm] [--solvers owlqn,sgd-l1,sag-nus,perceptron]

Writes benchmarks/nettalk.json and benchmarks/nettalk.md.
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

WAPITI = {"letter_error": 7.47, "per": 8.63, "word_error": 37.63, "active": 45354, "features": 1476093,
          "seconds": 216.2, "iterations": 38}
# Lavergne et al. Table 4 (10-fold protocol, their machine): error, active features, time
PAPER = {"1-grm": {"OWL-QN": (17.79, 4684, "11min"), "SGD": (18.21, 3540, None), "BCD": (18.27, 5017, "27min")},
         "5-grm+": {"OWL-QN": (7.89, 43429, "1h37min"), "SGD": (8.01, 34319, "45min"),
                    "BCD": (7.91, 47675, "2h18min")},
         "7-grm": {"OWL-QN": (8.12, 38214, "1h02min"), "BCD": (8.21, 3692, "1h22min")}}


def window(a: int, b: int) -> str:
    return "/".join(f"%x[{k},0]" for k in range(a, b + 1))


def pattern_lines(name: str) -> list[str]:
    base = name.rstrip("+")
    n = int(base.split("-")[0])
    lines = [f"*:w{2 * h + 1}={window(-h, h)}" for h in range((n - 1) // 2 + 1)]
    if name.endswith("+"):
        for size in range(2, n + 1, 2):
            for a in range(-(size - 1), 1):
                if -((n - 1) // 2) <= a and a + size - 1 <= (n - 1) // 2:
                    lines.append(f"*:v{size}.{a}={window(a, a + size - 1)}")
    return lines + ["B"]


def levenshtein(a: str, b: str) -> int:
    prev = list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i]
        for j, cb in enumerate(b, 1):
            cur.append(min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb)))
        prev = cur
    return prev[-1]


def scores(gold, pred):
    letters = sum(len(g) for g in gold)
    wrong = sum(a != b for g, p in zip(gold, pred) for a, b in zip(g, p))
    words = sum(any(a != b for a, b in zip(g, p)) for g, p in zip(gold, pred))
    dist = phon = 0
    for g, p in zip(gold, pred):
        gs = "".join(x for x in g if x != "-")
        ps = "".join(x for x in p if x != "-")
        dist += levenshtein(gs, ps)
        phon += len(gs)
    return {"letter_error": 100.0 * wrong / letters, "per": 100.0 * dist / phon,
            "word_error": 100.0 * words / len(gold)}


def window_stop(stopeps=0.02, stopwin=5):
    """Wapiti's rule as in crf.model: stop when the objective fell by < stopeps over stopwin iterations."""
    objs = []

    def cb(info, w):
        objs.append(info.objective)
        return len(objs) > stopwin and objs[-1 - stopwin] - objs[-1] < stopeps * abs(objs[-1])
    return cb


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sets", default="anchor,1-grm,3-grm")
    ap.add_argument("--solvers", default="owlqn,sgd-l1,sag-nus,perceptron")
    ap.add_argument("--rho1", type=float, default=0.5)
    ap.add_argument("--rho2", type=float, default=1e-4)
    ap.add_argument("--sag-rho2", type=float, default=1.0, help="l2 penalty of the SAG (ridge) runs")
    ap.add_argument("--sgd-epochs", type=int, default=20)
    ap.add_argument("--sgd-eta0", type=float, default=0.1)
    ap.add_argument("--sag-passes", type=int, default=20)
    ap.add_argument("--perceptron-epochs", type=int, default=10)
    ap.add_argument("--bcd-passes", type=int, default=3)
    ap.add_argument("--fista-kappa", type=float, default=0.5, help="kappa of the tree-penalty runs")
    ap.add_argument("--fista-iterations", type=int, default=100)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", default="nettalk")
    args = ap.parse_args()

    import numba

    from _bench_common import BENCH_DIR, write_json
    from corpora import shared_path
    from crf.data import read_sequences, split_labels
    from crf.features import FeatureSpace
    from crf.inference import Objective, viterbi
    from crf.patterns import parse_patterns, read_patterns
    from crf.train import owlqn
    from crf.train.bcd import bcd
    from crf.train.perceptron import averaged_perceptron
    from crf.train.proximal import feature_forest, fista
    from crf.train.sag import sag
    from crf.train.sgd_l1 import sgd_l1

    numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
    corpus = shared_path("corpora", "nettalk")
    if corpus is None:
        raise SystemExit("../shared/corpora/nettalk not found")
    X, y = split_labels(read_sequences(corpus / "nettalk.train.txt"))
    Xt, yt = split_labels(read_sequences(corpus / "nettalk.test.txt"))
    print(f"{len(X)} training words, {len(Xt)} test words")
    rows = []
    for fset in args.sets.split(","):
        if fset == "anchor":
            p = shared_path("anchors", "patterns", "nettalk.pat")
            _, pats = read_patterns(p)
        else:
            pats = parse_patterns("\n".join(pattern_lines(fset)) + "\n")
        t0 = time.perf_counter()
        space, train = FeatureSpace.build(pats, X, y, "train")
        test = space.encode(Xt, yt, "test")
        build_s = time.perf_counter() - t0
        print(f"* {fset}: {space.n_params} features, {space.n_labels} labels ({build_s:.1f}s)", flush=True)
        objective = Objective(space, train, n_chunks=numba.get_num_threads())
        objective.value_and_gradient(np.zeros(space.n_params))  # compile outside the clocks
        zeros = np.zeros(space.n_params)
        runs = {
            "owlqn": lambda: owlqn(objective.value_and_gradient_parts, zeros, rho1=args.rho1, rho2=args.rho2,
                                   callback=window_stop()),
            "sgd-l1": lambda: sgd_l1(space, train, rho1=args.rho1, rho2=args.rho2, max_epochs=args.sgd_epochs,
                                     eta0=args.sgd_eta0),
            "sag-nus": lambda: sag(space, train, rho2=args.sag_rho2, nus=True, max_passes=args.sag_passes),
            "sag": lambda: sag(space, train, rho2=args.sag_rho2, max_passes=args.sag_passes),
            "perceptron": lambda: averaged_perceptron(space, train, max_epochs=args.perceptron_epochs),
            "bcd": lambda: bcd(space, train, rho1=args.rho1, rho2=args.rho2, max_passes=args.bcd_passes),
            "fista-l2-tree": lambda: fista(objective.value_and_gradient, zeros, feature_forest(space, train),
                                           "l2-tree", kappa=args.fista_kappa, rho2=args.rho2,
                                           max_iterations=args.fista_iterations, tol=1e-4),
            "fista-linf-tree": lambda: fista(objective.value_and_gradient, zeros, feature_forest(space, train),
                                             "linf-tree", kappa=args.fista_kappa, rho2=args.rho2,
                                             max_iterations=args.fista_iterations, tol=1e-4),
        }
        for solver in args.solvers.split(","):
            t0 = time.perf_counter()
            res = runs[solver]()
            secs = time.perf_counter() - t0
            pred, _ = viterbi(res.x, space, test)
            off = test.seq_offsets
            guess = [[space.labels[k] for k in pred[off[i]:off[i + 1]]] for i in range(test.n_sequences)]
            sc = scores(yt, guess)
            row = {"set": fset, "solver": solver, "features": space.n_params,
                   "active": int(np.count_nonzero(res.x)), "seconds": secs, "iterations": res.iterations,
                   "stop": res.reason, **sc}
            rows.append(row)
            print(f"  {solver:<16} letter err {sc['letter_error']:5.2f}%  PER {sc['per']:5.2f}%  "
                  f"word err {sc['word_error']:5.2f}%  active {row['active']:>9}  {secs:7.1f}s  "
                  f"({res.iterations} it, {res.reason})", flush=True)
        del objective

    table = ["| features | solver | letter error | PER | word error | active / all features | train wall | iterations |",
             "|---|---|---|---|---|---|---|---|",
             f"| anchor | Wapiti l-bfgs (OWL-QN), anchor | {WAPITI['letter_error']:.2f} % | {WAPITI['per']:.2f} % | "
             f"{WAPITI['word_error']:.2f} % | {WAPITI['active']} / {WAPITI['features']} | {WAPITI['seconds']:.0f} s | "
             f"{WAPITI['iterations']} |"]
    for r in rows:
        table.append(f"| {r['set']} | {r['solver']} | {r['letter_error']:.2f} % | {r['per']:.2f} % | "
                     f"{r['word_error']:.2f} % | {r['active']} / {r['features']} | {r['seconds']:.1f} s | "
                     f"{r['iterations']} |")
    print("\n".join(table))
    write_json(f"{args.out}.json", {"settings": vars(args), "wapiti_anchor": WAPITI,
                                    "lavergne_table4": PAPER, "runs": rows})
    (BENCH_DIR / f"{args.out}.md").write_text(
        "NETtalk letter-to-phoneme (scripts/bench_nettalk.py; single runs on a shared 2-core machine; "
        "Wapiti row from ../shared/anchors/README.md)\n\n" + "\n".join(table) + "\n\n"
        "Lavergne et al. Table 4 (10-fold protocol, 1.6-billion-feature scale, their 8-core server):\n\n"
        "| set | solver | error | active | time |\n|---|---|---|---|---|\n"
        + "\n".join(f"| {s} | {m} | {e:.2f} % | {a} | {t or '-'} |"
                    for s, d in PAPER.items() for m, (e, a, t) in d.items()) + "\n")


if __name__ == "__main__":
    main()
