#!/usr/bin/env python3
"""Unbounded context (``--order max``) against fixed orders on PTB: test perplexity of the
default log-linear model and of modified Kneser-Ney (no cut-offs) for orders 2-12 and
max, with the tree's size, the model's size, build and fit time and peak memory.

    python scripts/bench_unbounded.py                  # PTB 100k/20k and full PTB (about 35 min on 2 cores)
    python scripts/bench_unbounded.py --corpus 100k    # PTB 100k/20k only (about 3 min)
    python scripts/bench_unbounded.py --table          # benchmarks/unbounded.md again from unbounded.json
    python scripts/bench_unbounded.py --variants --corpus all   # variants (about 20 min), into the same files

Each model is trained in a subprocess of its own (its peak RSS is the process's
``ru_maxrss``), one after the other:

- ``loglinear``: the default model of ``suffixlm train`` (modified-KN base measure, signed
  weights, linf-tree penalty) at lambda = 1 / training tokens (train's default without
  ``--valid``); at order max it lives on the collapsed suffix tree with Kneser-Ney computed
  on the tree (``suffixlm.backoff.kn_tree``), at fixed orders on the suffix trie with the KN base
  read from the n-gram estimator, as ``suffixlm train`` does;
- ``loglinear-auto``: the same with ``--lam auto`` on ``ptb.valid.txt`` (orders given by
  ``--auto-orders``, default 4-7 and max);
- ``kn``: interpolated modified KN without cut-offs, SRILM's n-gram estimator at fixed
  orders (``KneserNeyLM(order, min_counts=[1])``), the tree's KN at max (the model is
  the log-linear one with every weight 0: its base).

``--variants``: the default model at order max with one thing changed (``VARIANTS``), on
the PTB splits and (``--corpus all``) the CoNLL-2002 Spanish and Dutch words, each at
lambda = 1 / tokens and at ``--lam auto``, with test and validation perplexity and its KN
base alone: the leave-one-out events' weight, the orders that keep their own Kneser-Ney
discounts (``kn_tree.UNBOUNDED_OWN_ORDERS``), depth weights alpha**d of the penalty
groups, and (PTB 100k) the events at fixed orders.

Writes benchmarks/unbounded.json, benchmarks/unbounded.md and benchmarks/unbounded.png.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, ROOT, machine_info, shared, write_json  # noqa: E402

CORPORA = {
    "100k": ("ptb.train.100k.txt", "ptb.test.20k.txt"),
    "full": ("ptb.train.txt", "ptb.test.txt"),
}
ORDERS = [str(n) for n in range(2, 13)] + ["max"]


def one(train: str, test: str, valid: str, order: str, model: str) -> dict:
    """Train one model (in this process) and measure it."""
    import resource
    import warnings

    sys.path.insert(0, str(ROOT))
    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.model import LogLinearLM

    warnings.simplefilter("ignore")
    o = None if order == "max" else int(order)
    t0 = time.perf_counter()
    corpus = load_training_corpus(train, unk=True)
    t_load = time.perf_counter() - t0
    test_c = Corpus.from_text(test, corpus.vocab)
    out = {"order": order, "model": model}
    t0 = time.perf_counter()
    if model == "kn" and o is not None:
        from suffixlm.backoff.kn import KneserNeyLM

        lm = KneserNeyLM(o, min_counts=[1]).fit(corpus)
        out["fit_seconds"] = time.perf_counter() - t0
        out["n_parameters"] = int(lm.model_.n_parameters)
    else:
        lm = LogLinearLM(order=o, base="kn", positive=False)
        if model == "kn":  # the base alone: every weight 0
            lm.lam, lm.max_iter = 1e6, 2
        if model == "loglinear-auto":
            from suffixlm.commands.train import fit_lm
            from suffixlm.progress import Progress

            lm, path = fit_lm(lm, corpus, Corpus.from_text(valid, corpus.vocab), "auto", Progress(quiet=True))
            out["lam"] = float(lm.lam_)
        else:
            lm.fit(corpus)
        out["fit_seconds"] = time.perf_counter() - t0
        out["build_seconds"] = float(lm.seconds_build_)
        out["tree_nodes"] = int(lm.tree_.n_nodes)
        out["tree_params"] = int(lm.tree_.n_params)
        out["trie_contexts"] = int(lm.tree_.collapsed.sum())
        out["on_trie"] = bool((lm.tree_.collapsed == 1).all())
        out["n_parameters"] = int(lm.n_nonzero_) if model != "kn" else int(lm.tree_.n_params)
        out["deepest_context"] = int(lm.tree_.depth.max())
        if model != "kn":
            out["n_iter"] = int(lm.n_iter_)
    out["load_seconds"] = t_load
    out["ppl"] = float(lm.corpus_perplexity(test_c))
    out["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return out


#: The variants at order max: LogLinearLM parameters, and ``own_orders`` (the orders whose
#: own SRILM discounts the tree's KN keeps: ``kn_tree.UNBOUNDED_OWN_ORDERS``, None = all).
VARIANTS = {
    "default": {},
    "loo=0": {"loo": 0.0},
    "loo=2": {"loo": 2.0},
    "SRILM's discounts at every order": {"own_orders": None},
    "SRILM's discounts at every order, loo=0 (the model before)": {"own_orders": None, "loo": 0.0},
    "own discounts to order 3": {"own_orders": 3},
    "own discounts to order 5": {"own_orders": 5},
    "alpha=0.97": {"alpha": 0.97},
    # the events at fixed orders (PTB 100k only: ``FIXED_ORDER_CORPORA``)
    "order 5 (fixed)": {"order": 5},
    "order 5 (fixed), loo=1": {"order": 5, "loo": 1.0},
    "order 7 (fixed)": {"order": 7},
    "order 7 (fixed), loo=1": {"order": 7, "loo": 1.0},
}
FIXED_ORDER_CORPORA = ("100k",)
#: Text of the CoNLL-2002 corpora for the variants: (train, test, valid) files of the
#: shared directory; their first column, lower-cased, a sentence a line.
CONLL_TEXT = {"esp": ("esp.train", "esp.testb", "esp.testa"), "ned": ("ned.train", "ned.testb", "ned.testa")}


def corpus_files(name: str, work: Path) -> tuple[str, str, str]:
    """(train, test, valid) text files of a corpus: PTB's, or CoNLL-2002's words written
    under ``work``."""
    if name in CORPORA:
        train, test = (str(shared("corpora", "ptb", f)) for f in CORPORA[name])
        return train, test, str(shared("corpora", "ptb", "ptb.valid.txt"))
    out = []
    for src in CONLL_TEXT[name]:
        dst = work / f"{src}.txt"
        sents, cur = [], []
        for line in shared("corpora", "conll2002", src).read_text(encoding="latin-1").split("\n"):
            cols = line.split()
            if not cols:
                if cur:
                    sents.append(" ".join(cur))
                cur = []
            elif cols[0] != "-DOCSTART-":
                cur.append(cols[0].lower())
        if cur:
            sents.append(" ".join(cur))
        dst.write_text("\n".join(sents) + "\n")
        out.append(str(dst))
    return out[0], out[1], out[2]


def one_variant(train: str, test: str, valid: str, name: str) -> dict:
    """The default log-linear model at order max with one variant, at lambda = 1 / tokens
    and at ``--lam auto`` on the validation text, and its KN base alone."""
    import warnings

    sys.path.insert(0, str(ROOT))
    import suffixlm.backoff.kn_tree as KT
    from suffixlm.commands.train import fit_lm
    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.model import LogLinearLM
    from suffixlm.progress import Progress

    warnings.simplefilter("ignore")
    kw = dict(VARIANTS[name])
    if "own_orders" in kw:
        own = kw.pop("own_orders")
        KT.UNBOUNDED_OWN_ORDERS = own if own is not None else 1 << 30
    kw.setdefault("order", None)
    corpus = load_training_corpus(train, unk=True)
    t, v = Corpus.from_text(test, corpus.vocab), Corpus.from_text(valid, corpus.vocab)
    t0 = time.perf_counter()
    lm = LogLinearLM(base="kn", positive=False, **kw).fit(corpus)
    out = {"variant": name, "fit_seconds": time.perf_counter() - t0, "ppl": lm.corpus_perplexity(t),
           "valid_ppl": lm.corpus_perplexity(v), "n_iter": int(lm.n_iter_)}
    t0 = time.perf_counter()
    lm, _ = fit_lm(LogLinearLM(base="kn", positive=False, **kw), corpus, v, "auto", Progress(quiet=True))
    out.update(auto_fit_seconds=time.perf_counter() - t0, auto_lam=float(lm.lam_), auto_ppl=lm.corpus_perplexity(t),
               auto_valid_ppl=lm.corpus_perplexity(v))
    kn = LogLinearLM(base="kn", lam=1e6, max_iter=2, **kw).fit(corpus)
    out["kn_ppl"], out["kn_valid_ppl"] = kn.corpus_perplexity(t), kn.corpus_perplexity(v)
    if name == "default":
        from suffixlm.backoff.kn import KneserNeyLM

        kn5 = KneserNeyLM(5, min_counts=[1]).fit(corpus)
        out["kn5_ppl"], out["kn5_valid_ppl"] = kn5.corpus_perplexity(t), kn5.corpus_perplexity(v)
    return out


def run_variants(corpora: list[str]) -> list[dict]:
    import tempfile

    rows = []
    work = Path(tempfile.mkdtemp(prefix="bench_unbounded_"))
    for name in corpora:
        train, test, valid = corpus_files(name, work)
        for variant in VARIANTS:
            if "order" in VARIANTS[variant] and name not in FIXED_ORDER_CORPORA:
                continue
            r = subprocess.run([sys.executable, __file__, "--one-variant", train, test, valid, variant],
                               capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"{name} variant {variant} failed")
            row = json.loads(r.stdout.strip().splitlines()[-1])
            row["corpus"] = name
            rows.append(row)
            print(f"{name:5s} {variant:28s} ppl {row['ppl']:8.3f} valid {row['valid_ppl']:8.3f}  "
                  f"auto {row['auto_ppl']:8.3f} valid {row['auto_valid_ppl']:8.3f}  KN {row['kn_ppl']:8.3f}",
                  file=sys.stderr, flush=True)
    import shutil

    shutil.rmtree(work, ignore_errors=True)
    return rows


def run_all(corpora: list[str], orders: list[str], auto_orders: list[str]) -> dict:
    rows = []
    valid = str(shared("corpora", "ptb", "ptb.valid.txt"))
    commit = machine_info().get("commit", "")
    for name in corpora:
        train, test = (str(shared("corpora", "ptb", f)) for f in CORPORA[name])
        jobs = [(o, m) for o in orders for m in ("kn", "loglinear")] + [(o, "loglinear-auto") for o in auto_orders]
        for order, model in jobs:
            cmd = [sys.executable, __file__, "--one", train, test, valid, order, model]
            t0 = time.perf_counter()
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode != 0:
                print(r.stderr[-2000:], file=sys.stderr)
                raise SystemExit(f"{name} order {order} {model} failed")
            row = json.loads(r.stdout.strip().splitlines()[-1])
            row["corpus"] = name
            row["wall_seconds"] = time.perf_counter() - t0
            row["commit"] = commit[:10]
            rows.append(row)
            print(f"{name:5s} {model:15s} order {order:>3s}  ppl {row['ppl']:8.3f}  fit {row['fit_seconds']:6.1f} s  "
                  f"peak {row['peak_rss_mb']:6.0f} MB", file=sys.stderr, flush=True)
    return {"machine": machine_info(), "load_before": os.getloadavg()[0], "rows": rows,
            "command": "python scripts/bench_unbounded.py " + shlex.join(sys.argv[1:])}


def table(payload: dict) -> str:
    rows = payload["rows"]
    lines = ["# Unbounded context (`--order max`) against fixed orders on PTB", "",
             "```", *[c.strip() for c in payload.get("commands", [payload["command"]])],
             *payload.get("variants_commands", [payload["variants_command"]] if payload.get("variants_command")
                          else []), "```", "",
             "Written by `scripts/bench_unbounded.py` (its docstring says what each model is). "
             f"Machine: {payload['machine'].get('cpu_count', '?')} CPUs; 1-minute load average before the run "
             f"{payload['load_before']:.2f}; nothing else of ours ran beside it. Each model in a process of "
             "its own; `peak MB` is that process's peak resident memory (corpus loading and scoring "
             "included); `fit s` the training wall time (tree build, statistics and solver), `build s` "
             "the suffix tree, the context paths and the training statistics (`seconds_build_`). At fixed "
             "orders the log-linear model lives on the suffix trie (its Kneser-Ney base read on the trie), "
             "at max on the collapsed tree; under linf-tree the two are the same model (the penalty keeps "
             "the weights of a collapsed chain equal), so the rows differ only by the contexts' depth.", ""]
    for name in ("100k", "full"):
        sub = [r for r in rows if r["corpus"] == name]
        if not sub:
            continue
        train, test = CORPORA[name]
        lines += [f"## {train} -> {test}", "",
                  "| order | KN ppl | log-linear ppl | log-linear `--lam auto` ppl (lambda; fit s, peak MB) | "
                  "tree nodes | "
                  "trie contexts | params | non-zero | fit s (KN / log-linear) | build s | peak MB (KN / log-linear) |",
                  "|---|---|---|---|---|---|---|---|---|---|---|"]
        for order in ORDERS:
            kn = next((r for r in sub if r["order"] == order and r["model"] == "kn"), None)
            ll = next((r for r in sub if r["order"] == order and r["model"] == "loglinear"), None)
            au = next((r for r in sub if r["order"] == order and r["model"] == "loglinear-auto"), None)
            if ll is None:
                continue
            auto = (f"{au['ppl']:.3f} ({au['lam']:.3g}; {au['fit_seconds']:.0f} s, {au['peak_rss_mb']:.0f} MB)"
                    if au else "")
            lines.append(f"| {order} | {kn['ppl']:.3f} | {ll['ppl']:.3f} | {auto} | {ll['tree_nodes']:,} "
                         f"{'(trie)' if ll['on_trie'] else ''} | {ll['trie_contexts']:,} | {ll['tree_params']:,} | "
                         f"{ll['n_parameters']:,} | {kn['fit_seconds']:.1f} / {ll['fit_seconds']:.1f} | "
                         f"{ll['build_seconds']:.2f} | {kn['peak_rss_mb']:.0f} / {ll['peak_rss_mb']:.0f} |")
        mx = next(r for r in sub if r["order"] == "max" and r["model"] == "loglinear")
        lines += ["", f"At order max the deepest context has {mx['deepest_context']} words; the model lives on "
                  f"the collapsed tree ({mx['tree_nodes']:,} nodes for {mx['trie_contexts']:,} trie contexts).", ""]
        runs: dict = {}
        for r in sub:
            runs.setdefault(r.get("commit") or "an earlier run (commit not recorded)", []).append(
                f"{r['order']} {r['model']}")
        if len(runs) > 1:
            lines += ["Rows by the commit they were measured at: " + "; ".join(
                f"{c}: {', '.join(v)}" for c, v in runs.items()) + ".", ""]
    lines += ["![test perplexity against order](unbounded.png)", ""]
    variants = payload.get("variants")
    if variants:
        lines += ["## Variants at order max (`--variants`)", "",
                  "The default model at order max with one thing changed (`VARIANTS` in the script), at lambda = "
                  "1 / training tokens and at `--lam auto` (lambda chosen on the validation text), and its KN "
                  "base alone. Corpora: PTB (validation text `ptb.valid.txt`), and the words of CoNLL-2002 "
                  "Spanish (`esp`) and Dutch (`ned`), lower-cased, a sentence a line: train on `*.train`, test "
                  "on `*.testb`, validate on `*.testa`. `own discounts to order k`: the tree's KN keeps SRILM's "
                  "discounts for orders 1..k and order k's beyond (the default: 4, "
                  "`kn_tree.UNBOUNDED_OWN_ORDERS`); `loo`: the weight of the leave-one-out novel-context "
                  "events (default 1 at order max, `model.UNBOUNDED_LOO`, 0 at fixed orders); `order k (fixed)`: "
                  "the default model at that order instead (its KN base: SRILM's).", "",
                  "| corpus | variant | test ppl (lambda 1/tokens) | valid | test ppl (`--lam auto`) | valid | "
                  "its KN base alone: test / valid ppl |",
                  "|---|---|---|---|---|---|---|"]
        for r in variants:
            auto = (f"{r['auto_ppl']:.3f} | {r['auto_valid_ppl']:.3f}" if "auto_ppl" in r else " | ")
            lines.append(f"| {r['corpus']} | {r['variant']} | {r['ppl']:.3f} | {r['valid_ppl']:.3f} | {auto} | "
                         f"{r['kn_ppl']:.3f} / {r['kn_valid_ppl']:.3f} |")
        kn5 = [r for r in variants if "kn5_ppl" in r]
        if kn5:
            lines += ["", "KN at order 5 (SRILM's, no cut-offs) on the same texts, test / valid: " +
                      "; ".join(f"{r['corpus']} {r['kn5_ppl']:.3f} / {r['kn5_valid_ppl']:.3f}" for r in kn5) + "."]
        lines.append("")
    return "\n".join(lines)


def plot(payload: dict, path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib missing: no plot", file=sys.stderr)
        return
    corpora = [c for c in ("100k", "full") if any(r["corpus"] == c for r in payload["rows"])]
    fig, axes = plt.subplots(1, len(corpora), figsize=(6 * len(corpora), 4), squeeze=False)
    for ax, name in zip(axes[0], corpora):
        for model, label in (("kn", "modified KN (no cut-offs)"), ("loglinear", "log-linear (defaults)"),
                             ("loglinear-auto", "log-linear, --lam auto")):
            pts = [(ORDERS.index(r["order"]), r["ppl"]) for r in payload["rows"]
                   if r["corpus"] == name and r["model"] == model]
            if pts:
                pts.sort()
                ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        ax.set_xticks(range(len(ORDERS)))
        ax.set_xticklabels(ORDERS)
        ax.set_xlabel("order")
        ax.set_ylabel("test perplexity")
        ax.set_title(f"PTB {name}")
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=100)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--one", nargs=5, metavar=("TRAIN", "TEST", "VALID", "ORDER", "MODEL"), help=argparse.SUPPRESS)
    ap.add_argument("--one-variant", nargs=4, metavar=("TRAIN", "TEST", "VALID", "VARIANT"), help=argparse.SUPPRESS)
    ap.add_argument("--variants", action="store_true", help="the variants at order max (added to unbounded.json)")
    ap.add_argument("--corpus", choices=["100k", "full", "both", "esp", "ned", "all"], default="both",
                    help="both: the PTB splits; esp, ned, all: CoNLL-2002 words too (--variants only)")
    ap.add_argument("--orders", default=",".join(ORDERS),
                    help="orders to run (the page keeps the other orders' rows of the same corpus from the last run)")
    ap.add_argument("--auto-orders", default="4,5,6,7,max")
    ap.add_argument("--table", action="store_true", help="rewrite the page from benchmarks/unbounded.json")
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(*args.one)))
        return
    if args.one_variant:
        print(json.dumps(one_variant(*args.one_variant)))
        return
    if args.variants:
        payload = json.loads((BENCH_DIR / "unbounded.json").read_text())
        corpora = {"both": ["100k", "full"], "all": ["100k", "full", "esp", "ned"]}.get(args.corpus, [args.corpus])
        payload["variants"] = [r for r in payload.get("variants", []) if r["corpus"] not in corpora] + \
            run_variants(corpora)
        payload["variants_commands"] = [c for c in payload.pop("variants_commands", [payload.pop(
            "variants_command", "")]) if c] + ["python scripts/bench_unbounded.py " + shlex.join(sys.argv[1:])]
        write_json("unbounded.json", payload)
    elif args.table:
        payload = json.loads((BENCH_DIR / "unbounded.json").read_text())
    else:
        corpora = ["100k", "full"] if args.corpus == "both" else [args.corpus]
        if any(c not in CORPORA for c in corpora):
            raise SystemExit("the order tables are on PTB only (--corpus 100k, full or both)")
        orders = [o for o in args.orders.split(",") if o]
        payload = run_all(corpora, orders, [o for o in args.auto_orders.split(",") if o])
        old = BENCH_DIR / "unbounded.json"
        if old.exists():  # the rows not rerun (and the variants) stay
            prev = json.loads(old.read_text())
            auto = [o for o in args.auto_orders.split(",") if o]
            payload["rows"] = [r for r in prev.get("rows", []) if r["corpus"] not in corpora or
                               r["order"] not in (auto if r["model"] == "loglinear-auto" else orders)] + payload["rows"]
            payload["commands"] = [c for c in prev.get("commands", [prev.get("command", "")]) if c] + \
                [payload["command"]]
            for key in ("variants", "variants_command", "variants_commands"):
                if key in prev:
                    payload[key] = prev[key]
        write_json("unbounded.json", payload)
    (BENCH_DIR / "unbounded.md").write_text(table(payload))
    plot(payload, BENCH_DIR / "unbounded.png")


if __name__ == "__main__":
    main()
