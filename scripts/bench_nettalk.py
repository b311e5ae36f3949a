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
    python scripts/bench_nettalk.py --grow --out nettalk_grow   # incremental feature set vs all at once

Writes benchmarks/nettalk.json and benchmarks/nettalk.md.
"""

from __future__ import annotations

import argparse
import resource
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


GROW_ROUNDS = [
    ["u:w1=%x[0,0]", "B"],
    ["u:w2a=" + window(-1, 0), "u:w2b=" + window(0, 1), "u:w3=" + window(-1, 1)],
    ["u:w4a=" + window(-2, 1), "u:w4b=" + window(-1, 2), "u:w5=" + window(-2, 2)],
    ["u:w6a=" + window(-3, 2), "u:w6b=" + window(-2, 3), "u:w7=" + window(-3, 3)],
]
"""Incremental structured feature set (--grow): windows containing the current letter,
grown by one letter on each side per round; each window refines the largest
window of the previous rounds inside it (crf.train.proximal.pattern_parents)."""


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
    ap.add_argument("--stopeps", type=float, default=0.02,
                    help="OWL-QN stop: objective decrease below this fraction over 5 iterations (Wapiti: 0.02)")
    ap.add_argument("--limit", type=int, default=0, help="use only the first N training words (smoke tests)")
    ap.add_argument("--grow", action="store_true",
                    help="instead: incremental feature set (GROW_ROUNDS, OWL-QN per round) against the full set "
                         "trained at once; writes benchmarks/<out>.json/.md")
    args = ap.parse_args()

    import numba
    from _bench_common import BENCH_DIR, write_json
    from suffixlm.corpora import shared_path

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
    if args.limit:
        X, y = X[: args.limit], y[: args.limit]
    print(f"{len(X)} training words, {len(Xt)} test words")
    if args.grow:
        return grow_experiment(args, X, y, Xt, yt)
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
        # the full-gradient solvers' objective holds per-thread gradient buffers (n_params
        # each): built only when one of them runs, so SGD-l1 / BCD fit the 10^8-weight sets
        objective = None
        if any(s in ("owlqn", "fista-l2-tree", "fista-linf-tree") for s in args.solvers.split(",")):
            objective = Objective(space, train, n_chunks=numba.get_num_threads())
            objective.value_and_gradient(np.zeros(space.n_params))  # compile outside the clocks
        zeros = np.zeros(space.n_params)
        runs = {
            "owlqn": lambda: owlqn(objective.value_and_gradient_parts, zeros, rho1=args.rho1, rho2=args.rho2,
                                   callback=window_stop(args.stopeps)),
            "sgd-l1": lambda: sgd_l1(space, train, rho1=args.rho1, rho2=args.rho2, max_iter=args.sgd_epochs,
                                     eta0=args.sgd_eta0),
            "sag-nus": lambda: sag(space, train, rho2=args.sag_rho2, nus=True, max_iter=args.sag_passes),
            "sag": lambda: sag(space, train, rho2=args.sag_rho2, max_iter=args.sag_passes),
            "perceptron": lambda: averaged_perceptron(space, train, max_iter=args.perceptron_epochs),
            "bcd": lambda: bcd(space, train, rho1=args.rho1, rho2=args.rho2, max_iter=args.bcd_passes),
            "fista-l2-tree": lambda: fista(objective.value_and_gradient, zeros, feature_forest(space, train),
                                           "l2-tree", kappa=args.fista_kappa, rho2=args.rho2,
                                           max_iter=args.fista_iterations, tol=1e-4),
            "fista-linf-tree": lambda: fista(objective.value_and_gradient, zeros, feature_forest(space, train),
                                             "linf-tree", kappa=args.fista_kappa, rho2=args.rho2,
                                             max_iter=args.fista_iterations, tol=1e-4),
        }
        for solver in args.solvers.split(","):
            t0 = time.perf_counter()
            res = runs[solver]()
            secs = time.perf_counter() - t0
            peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
            pred, _ = viterbi(res.x, space, test)
            off = test.seq_offsets
            guess = [[space.labels[k] for k in pred[off[i]:off[i + 1]]] for i in range(test.n_sequences)]
            sc = scores(yt, guess)
            row = {"set": fset, "solver": solver, "features": space.n_params,
                   "active": int(np.count_nonzero(res.x)), "seconds": secs, "iterations": res.n_iter,
                   "peak_rss_gb_so_far": peak_gb,
                   "stop": res.reason, **sc}
            rows.append(row)
            print(f"  {solver:<16} letter err {sc['letter_error']:5.2f}%  PER {sc['per']:5.2f}%  "
                  f"word err {sc['word_error']:5.2f}%  active {row['active']:>9}  {secs:7.1f}s  "
                  f"({res.n_iter} it, {res.reason})", flush=True)
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
        "Lavergne et al. Table 4 as extracted from the paper text (10-fold protocol, their 8-core server; times are cumulated CPU):\n\n"
        "| set | solver | error | active | time |\n|---|---|---|---|---|\n"
        + "\n".join(f"| {s} | {m} | {e:.2f} % | {a} | {t or '-'} |"
                    for s, d in PAPER.items() for m, (e, a, t) in d.items()) + "\n")


def grow_experiment(args, X, y, Xt, yt):
    import numba
    from _bench_common import BENCH_DIR, write_json

    from crf.features import FeatureSpace
    from crf.inference import Objective, viterbi
    from crf.patterns import parse_patterns
    from crf.train import owlqn
    from crf.train.proximal import grow

    rows = []

    def evaluate(space, theta):
        test = space.encode(Xt, yt, "test")
        pred, _ = viterbi(theta, space, test)
        off = test.seq_offsets
        return scores(yt, [[space.labels[k] for k in pred[off[i]:off[i + 1]]] for i in range(test.n_sequences)])

    last = {}

    def train_round(space, data, x0):
        obj = Objective(space, data, n_chunks=numba.get_num_threads())
        res = owlqn(obj.value_and_gradient_parts, x0, rho1=args.rho1, rho2=args.rho2,
                    callback=window_stop(args.stopeps))
        last["model"] = (space, res.x)
        return res

    def on_round(g):  # test scores of the round's model, outside the round's clock
        sc = evaluate(*last["model"])
        rows.append({"run": "grow", "round": g.round, "patterns": g.n_patterns, "features": g.n_features,
                     "candidate_features": g.n_candidates, "active": g.active, "seconds": g.seconds,
                     "stop": g.reason, **sc})
        print(f"  round {g.round}: {g.n_features} of {g.n_candidates} candidate features, {g.active} active, "
              f"letter err {sc['letter_error']:.2f}% PER {sc['per']:.2f}% {g.seconds:.1f}s ({g.reason})", flush=True)

    rounds = [parse_patterns("\n".join(r) + "\n") for r in GROW_ROUNDS]
    grow(X, y, rounds, train_round, callback=on_round)
    print(f"  grown: {sum(r['seconds'] for r in rows):.1f}s in all rounds", flush=True)
    # the full set at once
    t0 = time.perf_counter()
    pats = [p for r in rounds for p in r]
    full, data = FeatureSpace.build(pats, X, y, "train")
    res = train_round(full, data, np.zeros(full.n_params))
    secs = time.perf_counter() - t0
    sc = evaluate(full, res.x)
    rows.append({"run": "full", "round": None, "patterns": len(pats), "features": full.n_params,
                 "candidate_features": full.n_params, "active": int(np.count_nonzero(res.x)), "seconds": secs,
                 "stop": res.reason, **sc})
    print(f"  full set: {full.n_params} features, {rows[-1]['active']} active, letter err {sc['letter_error']:.2f}% "
          f"PER {sc['per']:.2f}% ({secs:.1f}s)", flush=True)
    table = ["| run | round | features (of candidates) | active | round wall | letter error | PER | word error |",
             "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        err = (f"{r['letter_error']:.2f} % | {r['per']:.2f} % | {r['word_error']:.2f} %" if "per" in r
               else "- | - | -")
        table.append(f"| {r['run']} | {'' if r['round'] is None else r['round']} | {r['features']} "
                     f"({r['candidate_features']}) | {r['active']} | {r['seconds']:.1f} s | {err} |")
    print("\n".join(table))
    write_json(f"{args.out}.json", {"settings": vars(args), "rounds": GROW_ROUNDS, "runs": rows})
    (BENCH_DIR / f"{args.out}.md").write_text(
        "NETtalk, incremental structured feature set (scripts/bench_nettalk.py --grow; OWL-QN rho1 "
        f"{args.rho1}, rho2 {args.rho2}, stopped at < {args.stopeps:g} decrease over 5 iterations, per round; "
        "single run on a shared 2-core machine)\n\n"
        + "\n".join(table) + "\n")


if __name__ == "__main__":
    main()
