#!/usr/bin/env python3
"""Log-linear models where decoders use them: ARPA export (size, time, load time,
perplexity through suffixlm and KenLM) and mixtures with Kneser-Ney (weights fitted by
EM on ``ptb.valid.txt``, test perplexity), beside modified KN without cut-offs.

    python scripts/bench_lm_export_mix.py [--data 100k,full]

Models: the paper's weighted linf-tree (alpha 0.85, no base measure) and the KN base
with signed weights, order 5, each at the lambda its ``--lam auto`` path chose
(benchmarks/lm_variants_*.json; for the paper's model on full PTB, the default lambda
1/n). KN: ``suffixlm kn`` modified KN without cut-offs (SRILM's figures exactly).
Writes benchmarks/lm_export_mix.json and benchmarks/lm_export_mix.md.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
import warnings

from _bench_common import BENCH_DIR, ROOT, machine_info, shared, write_json

sys.path.insert(0, str(ROOT))

DATA = {"100k": ("ptb.train.100k.txt", "ptb.test.20k.txt"), "full": ("ptb.train.txt", "ptb.test.txt")}
# (name, data set, LogLinearLM options, lambda: ("n", x) for x / n, ("abs", x), or None for
# the default 1 / n). kn-signed on 100k: lm_variants' path (alpha 0.85); on full PTB the
# model `suffixlm train --lam auto` chose (no alpha).
VARIANTS = [
    ("wlinf-tree (paper)", "100k", {"penalty": "linf-tree", "alpha": 0.85}, ("n", 0.9807157918722051)),
    ("wlinf-tree (paper)", "full", {"penalty": "linf-tree", "alpha": 0.85}, None),
    ("kn-signed, alpha 0.85", "100k", {"penalty": "linf-tree", "alpha": 0.85, "base": "kn", "positive": False},
     ("n", 1.2749305294338669)),
    ("kn-signed (--lam auto's)", "full", {"penalty": "linf-tree", "base": "kn", "positive": False},
     ("abs", 8.914744517544994e-07)),
]


def kenlm_ppl(path, lines):
    try:
        import kenlm
    except ImportError:
        return None, None
    t = time.perf_counter()
    km = kenlm.Model(str(path))
    load = time.perf_counter() - t
    total = sum(km.score(" ".join(x)) for x in lines)
    n = sum(len(x) + 1 for x in lines)
    return 10.0 ** (-total / n), load


def run(data, out_rows, only=None):
    import numpy as np

    from suffixlm.backoff.arpa import BackoffLM
    from suffixlm.corpus import Corpus, load_training_corpus, read_lines
    from suffixlm.evaluate import score
    from suffixlm.backoff.kn import KneserNeyLM
    from suffixlm.backoff.mix import MixtureLM, best_mix, merge_static
    from suffixlm.model import LogLinearLM

    train_name, test_name = DATA[data]
    train = load_training_corpus(shared("corpora", "ptb", train_name), unk=True)
    n = train.n_tokens - train.n_sentences
    valid_lines = [t for _, t in read_lines(shared("corpora", "ptb", "ptb.valid.txt"))]
    test_lines = [t for _, t in read_lines(shared("corpora", "ptb", test_name))]
    valid = Corpus.from_sentences(valid_lines, train.vocab)
    test = Corpus.from_sentences(test_lines, train.vocab)
    tmp = tempfile.mkdtemp(prefix="bench_export_")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        kn = KneserNeyLM(order=5, min_counts=[1]).fit(train)
    kn_path = os.path.join(tmp, "kn5.arpa")
    kn.write_arpa(kn_path)
    kn.model_.write_arpa(kn_path + ".gz")
    kn_ppl = score(kn, test).ppl
    kn_row = {"data": data, "model": "modified KN, no cut-offs", "test_ppl": kn_ppl, "ngrams": kn.model_.counts,
              "arpa_bytes": os.path.getsize(kn_path), "arpa_gz_bytes": os.path.getsize(kn_path + ".gz")}
    t = time.perf_counter()
    BackoffLM.read_arpa(kn_path)
    kn_row["suffixlm_load_s"] = time.perf_counter() - t
    kn_row["kenlm_ppl"], kn_row["kenlm_load_s"] = kenlm_ppl(kn_path, test_lines)
    if only is None:
        out_rows.append(kn_row)
    print(kn_row, flush=True)
    kn_valid = kn.log10_probs(valid)
    kn_test = kn.log10_probs(test)
    for name, where, opts, spec in VARIANTS:
        if where != data or (only is not None and name not in only):
            continue
        lam = None if spec is None else (spec[1] / n if spec[0] == "n" else spec[1])
        lm = LogLinearLM(order=5, lam=lam, **opts)
        t = time.perf_counter()
        lm.fit(train)
        fit_s = time.perf_counter() - t
        model_path = os.path.join(tmp, "m.lm")
        lm.save(model_path)
        arpa = os.path.join(tmp, "m.arpa")
        t = time.perf_counter()
        bo = lm.to_backoff()
        bo.write_arpa(arpa)
        export_s = time.perf_counter() - t
        bo.write_arpa(arpa + ".gz")
        t = time.perf_counter()
        back = BackoffLM.read_arpa(arpa)
        load_s = time.perf_counter() - t
        row = {"data": data, "model": name, "lam": lm.lam_, "fit_s": fit_s, "iterations": lm.n_iter_,
               "converged": bool(lm.converged_), "test_ppl": lm.corpus_perplexity(test),
               "arpa_test_ppl": score(back, Corpus.from_sentences(test_lines, back.vocab)).ppl,
               "ngrams": bo.counts, "model_bytes": os.path.getsize(model_path), "arpa_bytes": os.path.getsize(arpa),
               "arpa_gz_bytes": os.path.getsize(arpa + ".gz"), "export_s": export_s, "suffixlm_load_s": load_s}
        row["kenlm_ppl"], row["kenlm_load_s"] = kenlm_ppl(arpa, test_lines)
        # mixture with KN: EM weights on valid (each model scores on its own), test ppl
        comp = np.array([lm.log10_probs(valid), kn_valid])
        w, hist = best_mix(comp)
        mx = MixtureLM([lm, kn], w)
        row["mix_weights"] = w.tolist()
        row["mix_test_ppl"] = score(mx, Corpus.from_sentences(test_lines, mx.vocab)).ppl
        ctest = np.array([lm.log10_probs(test), kn_test])
        row["mix_test_ppl_check"] = float(10.0 ** (-np.log10(w @ np.power(10.0, ctest)).mean()))
        merged = merge_static([bo, kn.model_], w)
        row["static_mix_test_ppl"] = score(merged, Corpus.from_sentences(test_lines, merged.vocab)).ppl
        row["static_mix_ngrams"] = merged.counts
        out_rows[:] = [r for r in out_rows if (r["data"], r["model"]) != (data, name)] + [row]
        print(row, flush=True)


def table(rows):
    lines = ["| data | model | test ppl | via ARPA (suffixlm / KenLM) | n-grams | ARPA MB (gz) | export s | "
             "load s (suffixlm / KenLM) | + KN: weights | + KN: test ppl (dynamic / static merge) |",
             "|" + "---|" * 10]
    for r in rows:
        kl = f"{r['kenlm_ppl']:.4f}" if r.get("kenlm_ppl") else "-"
        klo = f"{r['kenlm_load_s']:.1f}" if r.get("kenlm_load_s") else "-"
        mix = (f"{r['mix_weights'][0]:.3f} / {r['mix_weights'][1]:.3f}", f"{r['mix_test_ppl']:.2f} / "
               f"{r['static_mix_test_ppl']:.2f}") if "mix_weights" in r else ("", "")
        lines.append(f"| {r['data']} | {r['model']} | {r['test_ppl']:.2f} | "
                     f"{r.get('arpa_test_ppl', r['test_ppl']):.4f} / {kl} | {' / '.join(map(str, r['ngrams']))} | "
                     f"{r['arpa_bytes'] / 1e6:.1f} ({r['arpa_gz_bytes'] / 1e6:.1f}) | {r.get('export_s', 0):.1f} | "
                     f"{r['suffixlm_load_s']:.1f} / {klo} | {mix[0]} | {mix[1]} |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default="100k,full")
    ap.add_argument("--only", default=None, help="rerun just these models (comma list) and replace their rows")
    args = ap.parse_args()
    rows = []
    command = "python scripts/bench_lm_export_mix.py " + " ".join(sys.argv[1:])
    payload = {"machine": machine_info(), "command": command, "rows": rows}
    only = None
    if args.only:
        import json

        only = args.only.split(",")
        old = json.loads((BENCH_DIR / "lm_export_mix.json").read_text())
        rows.extend(old["rows"])
        payload["command"] = old["command"] + "; " + command
        payload["earlier_machine"] = old["machine"]
    for d in args.data.split(","):
        run(d, rows, only)
        write_json("lm_export_mix.json", payload)
    text = ("# Log-linear models as ARPA, and mixed with Kneser-Ney\n\n"
            f"`{payload['command']}` (order 5; mixture weights by EM on ptb.valid.txt, log-linear first)\n\n"
            + table(rows) + "\n")
    (BENCH_DIR / "lm_export_mix.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
