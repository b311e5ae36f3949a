#!/usr/bin/env python3
"""Which estimator changes close the gap between the log-linear LM and modified
Kneser-Ney? One row per (variant, order): the lambda path from large to small (warm
starts), lambda chosen on ``ptb.valid.txt``, test perplexity on the test text, beside
SRILM's modified KN from ../shared/anchors/README.md.

    python scripts/lm_variants.py [--data 100k|full] [--orders 3,4,5,6]
        [--variants base,loo,discount,loo+discount] [--alpha 0.85] [--step 1.5]

Variants (options of ``LogLinearLM``): ``base`` the paper's weighted linf-tree;
``loo`` leave-one-out novel-context events (``loo=1``); ``discount`` count-class l1
weights under the tree penalty (``discount=1``); ``loo+discount`` both; ``kn`` the Kneser-Ney base measure (``base="kn"``),
``kn-signed`` with signed weights. A variant ``name:key=value,...`` sets other
values (e.g. ``kn-signed:alpha=0.5,penalty=l1``); separate such variants by ``;``.
``lam_n=X`` fits once at lambda = X / n instead of a path.

``--table`` writes benchmarks/lm_variants.md from lm_variants_100k.json and
lm_variants_full.json (the best row of each variant and order).

The path starts at 30 / n (n predicted training tokens) and divides lambda by
``--step`` until the validation perplexity has risen twice in a row (or at
``--lam-min`` / n); every fit runs FISTA to ``--tol`` (cap ``--iters``). Writes
benchmarks/<out>.json and prints a table.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from _bench_common import BENCH_DIR, ROOT, machine_info, shared, write_json

sys.path.insert(0, str(ROOT))

from suffixlm.model_selection import PATH_FACTOR, PATH_START, PATH_TOL, PATIENCE, select_lam  # noqa: E402

PRESETS = {
    "base": {},
    "loo": {"loo": 1.0},
    "discount": {"discount": 1.0},
    "loo+discount": {"loo": 1.0, "discount": 1.0},
    "kn": {"base": "kn"},
    "kn-signed": {"base": "kn", "positive": False},
}

DATA = {
    "100k": ("ptb.train.100k.txt", "ptb.test.20k.txt", "Small-data regime"),
    "full": ("ptb.train.txt", "ptb.test.txt", None),
}


def parse_variant(spec: str) -> tuple[str, dict]:
    name, _, rest = spec.partition(":")
    opts = dict(PRESETS.get(name, {}))
    if name not in PRESETS and not rest:
        raise SystemExit(f"unknown variant {name!r}; presets: {', '.join(PRESETS)}")
    for kv in filter(None, rest.split(",")):
        k, v = kv.split("=")
        try:
            opts[k] = float(v)
        except ValueError:
            opts[k] = v
    return spec, opts


def kn_anchors(data: str) -> dict[int, tuple[float, float]]:
    """{order: (modified KN default ppl, modified KN nocut ppl)} from the anchors README."""
    text = shared("anchors", "README.md").read_text()
    if data == "100k":
        text = text[text.index("Small-data regime"):]
    out = {}
    for m in re.finditer(r"^\| (\d+) \| \**([\d.]+)\** / [\d.]+ \| \**([\d.]+)\** / [\d.]+ \|", text, re.M):
        out.setdefault(int(m.group(1)), (float(m.group(2)), float(m.group(3))))
    return out


def write_table() -> None:
    """benchmarks/lm_variants.md from the two JSON files of this script."""
    data = {}
    for name in ("100k", "full"):
        path = BENCH_DIR / f"lm_variants_{name}.json"
        if path.exists():
            data[name] = json.loads(path.read_text())
    variants = []
    best = {}
    for name, d in data.items():
        for r in d["rows"]:
            if r["variant"] not in variants:
                variants.append(r["variant"])
            best[(r["variant"], name, r["order"])] = r
    kn = {name: kn_anchors(name) for name in data}
    cols = [("100k", o) for o in (3, 4, 5, 6)] + [("full", 5)]
    lines = ["# Log-linear LM variants against modified Kneser-Ney", "",
             "Test perplexity, lambda chosen on `ptb.valid.txt` along a warm-started path (`python "
             "scripts/lm_variants.py --data 100k|full ...`, commands below). 100k: `ptb.train.100k.txt` -> "
             "`ptb.test.20k.txt`; full: `ptb.train.txt` -> `ptb.test.txt`. KN: SRILM's modified KN from "
             "../shared/anchors/README.md.", "",
             "| variant | " + " | ".join(f"{d} order {o}" for d, o in cols) +
             " | best fit s (100k o5 / full o5) | path s (full o5) | nonzero / params (full o5) |",
             "|---" * (len(cols) + 4) + "|"]
    for v in variants:
        cells = []
        for d, o in cols:
            r = best.get((v, d, o))
            cells.append("" if r is None else f"{r['test_ppl']:.2f}" + ("" if r.get("converged", True) else " (cap)"))
        r5, rf = best.get((v, "100k", 5)), best.get((v, "full", 5))
        fit_s = " / ".join("" if r is None else f"{r['seconds']:.0f}" for r in (r5, rf))
        path_s = "" if rf is None else f"{rf['path_seconds']:.0f}"
        sizes = "" if rf is None else f"{rf['nonzero']:,} / {rf['params']:,}"
        lines.append(f"| {v} | " + " | ".join(cells) + f" | {fit_s} | {path_s} | {sizes} |")
    for label, k in (("SRILM modified KN, no cut-offs", 1), ("SRILM modified KN, default cut-offs", 0)):
        cells = [str(kn.get(d, {}).get(o, ("", ""))[k]) for d, o in cols]
        lines.append(f"| {label} | " + " | ".join(cells) + " | | | |")
    timing = BENCH_DIR / "lm_time.json"
    if timing.exists():
        rows_t = json.loads(timing.read_text())["rows"]
        lines += ["", "Time to a tuned model, full PTB order 5, KN base, signed weights (`python scripts/"
                  "bench_lm_time.py`, benchmarks/lm_time.md; wall seconds of the command; the machine is shared):", "",
                  "| run | threads | wall s | target s | test ppl | solver steps (last fit) | fits (refined) |",
                  "|---|---|---|---|---|---|---|"]
        for r in rows_t:
            lines.append(f"| {'--lam auto' if r['run'] == 'auto' else 'one fit at its lambda'} | {r['threads']} | "
                         f"{r['wall_s']:.0f} | {r['target_s']:.0f} | {r['test_ppl']:.2f} | {r['steps']} | "
                         f"{r['fits']} ({r['refined']}) |")
    lines += ["", "Commands:", ""]
    for d in data.values():
        lines += list(dict.fromkeys(f"    {c['command']}" for c in d.get("commands", []))) or [
            f"    {d['machine']['command']}"]
    (BENCH_DIR / "lm_variants.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def record_cli(argv: list[str]) -> None:
    """Add a row to lm_variants_full.json from a ``suffixlm train --json`` summary (the
    timed command line run on full PTB): ``--record-cli SUMMARY.json VARIANT TEST_PPL
    WALL_SECONDS COMMAND``; TEST_PPL is what ``suffixlm ppl MODEL ptb.test.txt`` printed."""
    summary_path, variant, test_ppl, wall, command = argv
    summary = json.loads(open(summary_path).read().strip().splitlines()[-1])
    path = BENCH_DIR / "lm_variants_full.json"
    data = json.loads(path.read_text()) if path.exists() else {"rows": [], "commands": []}
    data["rows"] = [r for r in data["rows"] if r["variant"] != variant]
    n_fits = len(summary.get("lam_grid", [])) or 1
    data["rows"].append({"variant": variant, "order": summary["order"], "test_ppl": float(test_ppl),
                         "valid_ppl": summary.get("valid_ppl"), "lam": summary["lam"],
                         "seconds": summary["train_seconds"], "path_seconds": float(wall), "fits": n_fits,
                         "converged": summary["converged"], "nonzero": summary["nonzero"],
                         "params": summary["parameters"], "lam_grid": summary.get("lam_grid")})
    data["commands"] = [c for c in data["commands"] if c["variant"] != variant] + [
        {"variant": variant, "command": command, "machine": machine_info()}]
    data["machine"] = machine_info()
    path.write_text(json.dumps(data, indent=1) + "\n")


def main() -> None:
    if "--table" in sys.argv:
        write_table()
        return
    if sys.argv[1:2] == ["--record-cli"]:
        record_cli(sys.argv[2:])
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", choices=list(DATA), default="100k")
    ap.add_argument("--orders", default="3,4,5,6")
    ap.add_argument("--variants", default="base,loo,discount,loo+discount")
    ap.add_argument("--penalty", default="linf-tree")
    ap.add_argument("--alpha", type=float, default=None)
    ap.add_argument("--lam-max", type=float, default=PATH_START, help="first lambda, times 1/n")
    ap.add_argument("--lam-min", type=float, default=0.01, help="last lambda at most, times 1/n")
    ap.add_argument("--step", type=float, default=PATH_FACTOR)
    ap.add_argument("--iters", type=int, default=3000)
    ap.add_argument("--tol", type=float, default=1e-6, help="final solver tolerance")
    ap.add_argument("--path-tol", type=float, default=PATH_TOL,
                    help="solver tolerance along the path (the chosen lambda is refitted to --tol)")
    ap.add_argument("--patience", type=int, default=PATIENCE, help="rises of the valid ppl that end the path")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()

    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.evaluate import score
    from suffixlm.model import LogLinearLM

    train_name, test_name, _ = DATA[args.data]
    train = load_training_corpus(shared("corpora", "ptb", train_name), unk=True)
    valid = Corpus.from_text(shared("corpora", "ptb", "ptb.valid.txt"), train.vocab)
    test = Corpus.from_text(shared("corpora", "ptb", test_name), train.vocab)
    n = train.n_tokens - train.n_sentences
    anchors = kn_anchors(args.data)
    rows, runs = [], []
    specs = args.variants.split(";") if ";" in args.variants else args.variants.split(",")
    for spec, opts in map(parse_variant, specs):
        for order in [int(o) for o in args.orders.split(",")]:
            kwargs = dict(order=order, penalty=args.penalty, alpha=args.alpha, max_iter=args.iters, tol=args.tol,
                          warm_start=True)
            kwargs.update(opts)  # a variant may set alpha or the penalty too
            fixed = kwargs.pop("lam_n", None)  # one fit at this lambda * n instead of a path
            lm = LogLinearLM(**kwargs)
            t_variant = time.perf_counter()
            variant_runs = []

            def fit(lam, tol, refined=False):
                lm.lam, lm.tol = lam, tol
                t0 = time.perf_counter()
                lm.fit(train)
                run = {"variant": spec, "order": order, "lam_n": lam * n, "iterations": lm.n_iter_,
                       "converged": bool(lm.converged_), "tol": tol, "refined": refined,
                       "valid_ppl": score(lm, valid, "valid").ppl, "test_ppl": score(lm, test, "test").ppl,
                       "seconds": time.perf_counter() - t0, "nonzero": lm.n_nonzero_, "params": lm.n_params_}
                variant_runs.append(run)
                print(f"{spec:<14} order {order} lam*n {lam * n:8.3g} valid {run['valid_ppl']:8.2f} "
                      f"test {run['test_ppl']:8.2f} ({run['iterations']} it at tol {tol:g}"
                      f"{', converged' if run['converged'] else ', CAP'}{', refined' if refined else ''}, "
                      f"{run['seconds']:.1f} s)", flush=True)
                return lm

            def refine(chosen):
                lm.weights_ = chosen.weights_  # warm start from that fit of the path
                return fit(chosen.lam_, args.tol, refined=True)

            if fixed is not None:
                fit(float(fixed) / n, args.tol)
            else:
                select_lam(lambda lam: fit(lam, args.path_tol), train, valid, start=args.lam_max, factor=args.step,
                           smallest=args.lam_min, patience=args.patience,
                           refine=refine if args.path_tol != args.tol else None)
            runs += variant_runs
            final = [r for r in variant_runs if r["refined"]] or variant_runs
            best = min(final, key=lambda r: r["valid_ppl"])
            kn = anchors.get(order, (None, None))
            row = dict(best, path_seconds=time.perf_counter() - t_variant, kn_default=kn[0], kn_nocut=kn[1],
                       fits=len(variant_runs), path_iterations=sum(r["iterations"] for r in variant_runs))
            rows.append(row)
            print(f"== {spec} order {order}: test {row['test_ppl']:.2f} at lam*n {row['lam_n']:.3g} "
                  f"(KN nocut {kn[1]}, default {kn[0]}), path {row['path_seconds']:.0f} s", flush=True)
    print("\n| variant | order | lam*n | valid ppl | test ppl | KN nocut | KN default | nonzero / params | "
          "path s |\n|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['variant']} | {r['order']} | {r['lam_n']:.3g} | {r['valid_ppl']:.2f} | {r['test_ppl']:.2f} | "
              f"{r['kn_nocut']} | {r['kn_default']} | {r['nonzero']:,} / {r['params']:,} | "
              f"{r['path_seconds']:.0f} |")
    out = args.out or f"lm_variants_{args.data}"
    # merged into the file: a run replaces the rows of its (variant, order) pairs only
    path = BENCH_DIR / (out + ".json")
    old = json.loads(path.read_text()) if path.exists() else {}
    done = {(r["variant"], r["order"]) for r in rows}
    keep = [r for r in old.get("rows", []) if (r["variant"], r["order"]) not in done]
    keep_runs = [r for r in old.get("runs", []) if (r["variant"], r["order"]) not in done]
    variants_run = {r["variant"] for r in rows}
    commands = [c for c in old.get("commands", []) if c["variant"] not in variants_run]
    commands += [{"variant": v, "command": machine_info()["command"], "settings": vars(args)} for v in variants_run]
    write_json(out + ".json", {"rows": keep + rows, "runs": keep_runs + runs, "commands": commands})


if __name__ == "__main__":
    main()
