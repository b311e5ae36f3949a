"""Figure 2 of Nelakanti et al. (2013) on PTB: test perplexity vs order for every
penalty, unweighted and weighted, beside interpolated Kneser-Ney.

Regime of the paper: train on the first 100k words of PTB train
(``ptb.train.100k.txt``), test on the first 20k words of PTB test (``ptb.test.20k.txt``),
lambda chosen on ``ptb.valid.txt``, the paper's alpha for each weighted penalty (§6).

Lambda search, per (penalty, order): n * lambda (n predicted training tokens; the
discount-like quantity) starts at the penalty's ``start`` and is divided by ``--step``
until the validation perplexity rises past the best; if the first value was the best,
the search goes up from it by the same factor until it rises there too, so every
chosen lambda has a worse neighbour on both sides. Each fit is warm-started from the
previous one and runs FISTA until the objective's relative decrease stays below
``--tol`` (cap ``--iters``); the runs that hit the cap are listed in the table.
Kneser-Ney: our modified KN (``suffixlm.backoff.kn``, which reproduces SRILM) with SRILM's
default cut-offs and with none, computed in the same run; SRILM's own figures from
../shared/anchors are printed beside them.

    python scripts/reproduce_figure2.py [--orders 2-6,8,10,12] [--penalties all]
        [--step 1.4] [--tol 1e-6] [--iters 5000] [--jobs 2]

Writes benchmarks/figure2.json (updated after every job, so a partial run keeps its
results; ``--resume`` skips the jobs already in it), benchmarks/figure2.md and
benchmarks/figure2.png.
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import sys
import time
import warnings

from _bench_common import BENCH_DIR, ROOT, shared, write_json

sys.path.insert(0, str(ROOT))

# (label, penalty, alpha, start): alphas are the paper's best (§6); start is the first
# n * lambda of the search, about 3x the optimum a coarse grid found (the search
# goes up from it when needed)
CONFIGS = [
    ("l1", "l1", None, 3.0),
    ("l2sq", "l2sq", None, 1.0),
    ("l2-tree", "l2-tree", None, 1.0),
    ("linf-tree", "linf-tree", None, 3.0),
    ("wl1", "l1", 0.7, 10.0),
    ("wl2sq", "l2sq", 0.5, 3.0),
    ("wl2-tree", "l2-tree", 1.1, 1.0),
    ("wlinf-tree", "linf-tree", 0.85, 3.0),
]


def parse_orders(text):
    out = []
    for part in text.split(","):
        if "-" in part:
            a, b = part.split("-")
            out += list(range(int(a), int(b) + 1))
        else:
            out.append(int(part))
    return out


def srilm_anchor_table():
    """SRILM's ppl on the 100k/20k split from ../shared/anchors/README.md:
    {order: {"default": ppl, "nocut": ppl}}."""
    p = shared("anchors", "README.md")
    text = p.read_text()
    sect = text.split("Small-data regime", 1)[1].split("###", 1)[0]
    out = {}
    for m in re.finditer(r"^\| (\d+) \| ([\d.]+) / [\d.]+ \| \**([\d.]+)\** / [\d.]+ \|", sect, re.M):
        out[int(m.group(1))] = {"default": float(m.group(2)), "nocut": float(m.group(3))}
    return out


def _load():
    from suffixlm.corpus import Corpus, load_training_corpus

    train = load_training_corpus(shared("corpora", "ptb", "ptb.train.100k.txt"), unk=True)
    test = Corpus.from_text(shared("corpora", "ptb", "ptb.test.20k.txt"), train.vocab)
    valid = Corpus.from_text(shared("corpora", "ptb", "ptb.valid.txt"), train.vocab)
    return train, test, valid


def run_job(job):
    label, penalty, alpha, start, order, step, iters, tol = job
    from suffixlm.model import LogLinearLM

    train, test, valid = _load()
    n = train.n_tokens - train.n_sentences
    lm = LogLinearLM(order=order, penalty=penalty, alpha=alpha, max_iter=iters, tol=tol, warm_start=True)
    path = []
    t0 = time.perf_counter()

    def fit_at(m):
        t = time.perf_counter()
        lm.lam = m / n
        lm.fit(train)
        point = {"n_lam": m, "lam": m / n, "valid_ppl": lm.corpus_perplexity(valid), "test_ppl": lm.corpus_perplexity(test),
                 "objective": lm.objective_, "iterations": lm.n_iter_, "converged": bool(lm.converged_),
                 "nonzero": lm.n_nonzero_, "parameters": lm.n_params_, "seconds": time.perf_counter() - t}
        path.append(point)
        return point

    def walk(m, factor, best):
        while 1e-4 < m < 1e4:
            p = fit_at(m)
            if best is None or p["valid_ppl"] < best["valid_ppl"]:
                best = p
            else:
                break
            m *= factor
        return best

    best = walk(start, 1.0 / step, None)
    if best is path[0]:
        best = walk(start * step, step, best)
    return {"config": label, "penalty": penalty, "alpha": alpha, "order": order, "best": best,
            "path": sorted(path, key=lambda p: -p["n_lam"]), "seconds": time.perf_counter() - t0,
            "cap_hits": sum(not p["converged"] for p in path)}


def kn_rows(orders):
    from suffixlm.evaluate import score
    from suffixlm.backoff.kn import KneserNeyLM

    train, test, _ = _load()
    rows = []
    for order in orders:
        for name, mc in (("kn-default", None), ("kn-nocut", [1])):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                kn = KneserNeyLM(order=order, modified=True, min_counts=mc).fit(train)
            rows.append({"model": name, "order": order, "test_ppl": score(kn, test).ppl,
                         "parameters": int(kn.model_.n_parameters)})
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--orders", default="2-6,8,10,12")
    ap.add_argument("--penalties", default="all", help="comma list of labels: " + ",".join(c[0] for c in CONFIGS))
    ap.add_argument("--step", type=float, default=1.4, help="factor between consecutive lambdas")
    ap.add_argument("--tol", type=float, default=1e-6, help="FISTA's relative-decrease tolerance")
    ap.add_argument("--iters", type=int, default=5000, help="iteration cap per fit")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--resume", action="store_true", help="keep the jobs already in figure2.json")
    args = ap.parse_args()
    orders = parse_orders(args.orders)
    wanted = [c for c in CONFIGS if args.penalties == "all" or c[0] in args.penalties.split(",")]
    srilm = srilm_anchor_table()
    kn = kn_rows(orders)
    results = []
    done = set()
    if args.resume and (BENCH_DIR / "figure2.json").exists():
        import json

        old = json.loads((BENCH_DIR / "figure2.json").read_text())
        results = [r for r in old.get("loglinear", []) if "cap_hits" in r]
        done = {(r["config"], r["order"]) for r in results}
    payload = {"train": "ptb.train.100k.txt", "test": "ptb.test.20k.txt", "valid": "ptb.valid.txt",
               "step": args.step, "tol": args.tol, "iters": args.iters, "srilm": srilm, "kn": kn,
               "loglinear": results,
               "command": "python scripts/reproduce_figure2.py " + " ".join(sys.argv[1:])}
    jobs = [(label, pen, alpha, start, order, args.step, args.iters, args.tol)
            for order in orders for (label, pen, alpha, start) in wanted if (label, order) not in done]
    # small orders first: a partial run has whole low-order rows
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for res in pool.imap_unordered(run_job, jobs):
            results.append(res)
            b = res["best"]
            print(f"{res['config']:11s} order {res['order']:2d}  n*lam {b['n_lam']:.3g}  valid {b['valid_ppl']:8.2f}  "
                  f"test {b['test_ppl']:8.2f}  nnz {b['nonzero']:8d}/{b['parameters']:8d}  fits {len(res['path'])}  "
                  f"cap hits {res['cap_hits']}  {res['seconds']:.0f} s",
                  flush=True)
            write_json("figure2.json", payload)
    labels = [c[0] for c in wanted]
    write_table(payload, orders, labels)
    plot(payload, orders, labels)


def write_table(payload, orders, labels):
    runs = {(r["config"], r["order"]): r for r in payload["loglinear"]}
    kn = {(r["model"], r["order"]): r["test_ppl"] for r in payload["kn"]}
    head = ["order"] + labels + ["our KN (default)", "our KN (nocut)", "SRILM KN (default)", "SRILM KN (nocut)"]
    lines = ["Test perplexity, PTB 100k / 20k, lambda chosen on ptb.valid.txt "
             f"(`{payload.get('command', 'python scripts/reproduce_figure2.py')}`).", "",
             "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in orders:
        cells = [str(o)] + [f"{runs[(lab, o)]['best']['test_ppl']:.1f}" if (lab, o) in runs else "" for lab in labels]
        cells += [f"{kn.get(('kn-default', o), float('nan')):.1f}", f"{kn.get(('kn-nocut', o), float('nan')):.1f}"]
        s = payload["srilm"].get(o) or payload["srilm"].get(str(o))
        cells += [f"{s['default']:.1f}" if s else "fails", f"{s['nocut']:.1f}" if s else "fails"]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Chosen n * lambda (fits on the path; * where it is at the end of the searched range):", "",
              "| order | " + " | ".join(labels) + " |", "|" + "---|" * (len(labels) + 1)]
    for o in orders:
        cells = [str(o)]
        for lab in labels:
            r = runs.get((lab, o))
            if r is None:
                cells.append("")
                continue
            edge = r["best"] is r["path"][0] or r["best"] is r["path"][-1] or \
                r["best"]["n_lam"] in (r["path"][0]["n_lam"], r["path"][-1]["n_lam"])
            cells.append(f"{r['best']['n_lam']:.3g} ({len(r['path'])}){'*' if edge else ''}")
        lines.append("| " + " | ".join(cells) + " |")
    fits = [p for r in runs.values() for p in r["path"]]
    capped = [f"{r['config']} order {r['order']} n*lam {p['n_lam']:.3g}" for r in runs.values()
              for p in r["path"] if not p["converged"]]
    lines += ["", f"{len(fits)} fits, tol {payload.get('tol')}, cap {payload.get('iters')} iterations; "
              f"{len(capped)} hit the cap" + (": " + "; ".join(capped) if capped else "."),
              f"Iterations per fit: median {sorted(p['iterations'] for p in fits)[len(fits) // 2] if fits else 0}, "
              f"max {max((p['iterations'] for p in fits), default=0)}; "
              f"total {sum(r['seconds'] for r in runs.values()):.0f} s of fitting."]
    (BENCH_DIR / "figure2.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def plot(payload, orders, labels):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    for ax, weighted in zip(axes, (False, True)):
        for lab in labels:
            if lab.startswith("w") != weighted:
                continue
            pts = sorted((r["order"], r["best"]["test_ppl"]) for r in payload["loglinear"] if r["config"] == lab)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], "-o", label=lab)
        pts = sorted((r["order"], r["test_ppl"]) for r in payload["kn"] if r["model"] == "kn-nocut")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "k--", label="KN (modified, no cut-offs)")
        ax.set_xlabel("order")
        ax.set_title("weighted penalties" if weighted else "unweighted penalties")
        ax.legend(fontsize=8)
    axes[0].set_ylabel("test perplexity (PTB 100k / 20k)")
    fig.tight_layout()
    fig.savefig(BENCH_DIR / "figure2.png", dpi=100)


if __name__ == "__main__":
    main()
