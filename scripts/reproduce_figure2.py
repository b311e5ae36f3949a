"""Figure 2 of Nelakanti et al. (2013) on PTB: test perplexity vs order for every
penalty, unweighted and weighted, beside interpolated Kneser-Ney.

Regime of the paper: train on the first 100k words of PTB train
(``ptb.train.100k.txt``), test on the first 20k words of PTB test (``ptb.test.20k.txt``),
lambda chosen on ``ptb.valid.txt``. For every (penalty, order) the models are fitted
along a decreasing lambda grid, each warm-started from the previous one (FISTA,
``--iters`` iterations at most per lambda); the lambda with the best validation
perplexity is kept and its test perplexity reported. The path stops once the
validation perplexity has risen twice in a row. Kneser-Ney: our modified KN
(``suffixlm.kn``, which reproduces SRILM) with SRILM's default cut-offs and with
none, computed in the same run; SRILM's own figures from ../shared/anchors are
printed beside them.

    python scripts/reproduce_figure2.py [--orders 2-12] [--penalties all] [--iters 150] [--jobs 2]

Writes benchmarks/figure2.json (updated after every job, so a partial run keeps its
results), benchmarks/figure2.md and benchmarks/figure2.png.
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

# (label, penalty, alpha): alphas are the paper's best (§6)
CONFIGS = [
    ("l1", "l1", None),
    ("l2sq", "l2sq", None),
    ("l2-tree", "l2-tree", None),
    ("linf-tree", "linf-tree", None),
    ("wl1", "l1", 0.7),
    ("wl2sq", "l2sq", 0.5),
    ("wl2-tree", "l2-tree", 1.1),
    ("wlinf-tree", "linf-tree", 0.85),
]
GRID = (3e-5, 1e-5, 3e-6, 1e-6)


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
    label, penalty, alpha, order, grid, iters = job
    from suffixlm.model import LogLinearLM

    train, test, valid = _load()
    lm = LogLinearLM(order=order, penalty=penalty, alpha=alpha, max_iter=iters, tol=1e-6, warm_start=True)
    path = []
    best = None
    rises = 0
    t0 = time.perf_counter()
    for lam in grid:
        lm.lam = lam
        lm.fit(train)
        v = lm.perplexity(valid)
        point = {"lam": lam, "valid_ppl": v, "test_ppl": lm.perplexity(test), "objective": lm.objective_,
                 "iterations": lm.n_iter_, "converged": lm.converged_, "nonzero": lm.n_nonzero_,
                 "parameters": lm.n_params_}
        path.append(point)
        if best is None or v < best["valid_ppl"]:
            best, rises = point, 0
        else:
            rises += 1
            if rises >= 2:
                break
    return {"config": label, "penalty": penalty, "alpha": alpha, "order": order, "best": best, "path": path,
            "seconds": time.perf_counter() - t0}


def kn_rows(orders):
    from suffixlm.evaluate import score
    from suffixlm.kn import KneserNeyLM

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
    ap.add_argument("--orders", default="2-12")
    ap.add_argument("--penalties", default="all", help="comma list of labels: " + ",".join(c[0] for c in CONFIGS))
    ap.add_argument("--grid", default=",".join(map(str, GRID)))
    ap.add_argument("--iters", type=int, default=150)
    ap.add_argument("--jobs", type=int, default=2)
    args = ap.parse_args()
    orders = parse_orders(args.orders)
    wanted = [c for c in CONFIGS if args.penalties == "all" or c[0] in args.penalties.split(",")]
    grid = [float(x) for x in args.grid.split(",")]
    srilm = srilm_anchor_table()
    kn = kn_rows(orders)
    results = []
    payload = {"train": "ptb.train.100k.txt", "test": "ptb.test.20k.txt", "valid": "ptb.valid.txt",
               "grid": grid, "iters": args.iters, "srilm": srilm, "kn": kn, "loglinear": results}
    jobs = [(label, pen, alpha, order, grid, args.iters) for order in orders for (label, pen, alpha) in wanted]
    # the biggest jobs first keeps both workers busy to the end
    jobs.sort(key=lambda j: -j[3])
    with mp.get_context("spawn").Pool(args.jobs) as pool:
        for res in pool.imap_unordered(run_job, jobs):
            results.append(res)
            b = res["best"]
            print(f"{res['config']:11s} order {res['order']:2d}  lam {b['lam']:.0e}  valid {b['valid_ppl']:8.2f}  "
                  f"test {b['test_ppl']:8.2f}  nnz {b['nonzero']:8d}/{b['parameters']:8d}  {res['seconds']:.0f} s",
                  flush=True)
            write_json("figure2.json", payload)
    write_table(payload, orders, [c[0] for c in wanted])
    plot(payload, orders, [c[0] for c in wanted])


def write_table(payload, orders, labels):
    best = {(r["config"], r["order"]): r["best"]["test_ppl"] for r in payload["loglinear"]}
    kn = {(r["model"], r["order"]): r["test_ppl"] for r in payload["kn"]}
    head = ["order"] + labels + ["our KN (default)", "our KN (nocut)", "SRILM KN (default)", "SRILM KN (nocut)"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for o in orders:
        cells = [str(o)] + [f"{best[(lab, o)]:.1f}" if (lab, o) in best else "" for lab in labels]
        cells += [f"{kn.get(('kn-default', o), float('nan')):.1f}", f"{kn.get(('kn-nocut', o), float('nan')):.1f}"]
        s = payload["srilm"].get(o) or payload["srilm"].get(str(o))
        cells += [f"{s['default']:.1f}" if s else "fails", f"{s['nocut']:.1f}" if s else "fails"]
        lines.append("| " + " | ".join(cells) + " |")
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
