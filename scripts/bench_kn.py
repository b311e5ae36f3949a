#!/usr/bin/env python
"""Kneser-Ney against SRILM and KenLM: exactness and speed.

1. Perplexities: our KN for every order in ../shared/anchors/README.md (full PTB orders
   2-5; 100k/20k orders 2-10; modified KN with default cut-offs, modified without
   cut-offs, original without cut-offs) beside SRILM's printed ppl / ppl1.
2. SRILM's ARPA files in ../shared/anchors/srilm/ read and scored by us, beside the ppl
   SRILM prints for them; our ARPA files compared line by line with SRILM's.
3. Speed and memory: ``suffixlm kn`` estimating KN5 on full PTB (default cut-offs and
   none) and ``suffixlm ppl`` scoring ptb.test.txt, each a fresh process (wall clock,
   max RSS from wait4), one warm-up then the median of --runs; SRILM's and KenLM's
   figures from the anchors README beside ours as ratios. Plus an in-process breakdown.

Writes benchmarks/kn.json and benchmarks/kn.md (and kn.png).

    python scripts/bench_kn.py [--runs 3] [--quick]
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suffixlm.corpora import shared_path  # noqa: E402


def parse_anchor_tables(readme: str) -> dict:
    """{(subset, method, kind, order): (ppl, ppl1)} from the SRILM tables of the README."""
    out = {}
    subset = None
    for line in readme.splitlines():
        if line.startswith("### Full PTB"):
            subset = "full"
        elif line.startswith("### Small-data"):
            subset = "100k"
        elif line.startswith("### ") or line.startswith("## "):
            subset = None if not line.startswith("### Full") and not line.startswith("### Small") else subset
        m = re.match(r"\|\s*(\d+)\s*\|(.*)\|\s*$", line)
        if subset and m:
            cells = [c.strip().replace("*", "") for c in m.group(2).split("|")]
            for cell, (method, kind) in zip(cells, [("modified", "default"), ("modified", "nocut"),
                                                     ("original", "nocut")]):
                mm = re.match(r"([\d.]+)\s*/\s*([\d.]+)", cell)
                if mm:
                    out[(subset, method, kind, int(m.group(1)))] = (mm.group(1), mm.group(2))
    return out


def parse_anchor_speed(readme: str) -> dict:
    """Tool timings (lists of seconds) and max RSS (MB) from the README."""
    out = {}
    pats = {
        "srilm_default": r"\| SRILM `ngram-count`, default cut-offs \| ([^|]+) \| ([^|]+) \|",
        "srilm_nocut": r"\| SRILM `ngram-count`, no cut-offs \| ([^|]+) \| ([^|]+) \|",
        "kenlm_S1G": r"\| KenLM `lmplz -o 5 -S 1G` \| ([^|]+) \| ([^|]+) \|",
    }
    for k, p in pats.items():
        m = re.search(p, readme)
        if m:
            secs = [float(x) for x in re.findall(r"[\d.]+", m.group(1))]
            rss = m.group(2).strip()
            num = float(re.findall(r"[\d.]+", rss)[0]) * (1000 if "GB" in rss else 1)
            out[k] = {"wall_s": secs, "max_rss_mb": num}
    m = re.search(r"SRILM `ngram -ppl` ([\d.]+) s \(default model\) / ([\d.]+) s \(nocut model\);\s*KenLM `query` ([\d.]+) s",
                  readme)
    if m:
        out["srilm_ppl_default"] = {"wall_s": [float(m.group(1))]}
        out["srilm_ppl_nocut"] = {"wall_s": [float(m.group(2))]}
        out["kenlm_query"] = {"wall_s": [float(m.group(3))]}
    return out


def run_timed(cmd: list[str]) -> tuple[float, float]:
    """(wall seconds, max RSS MB) of one child process (run from the repository, so it
    uses this checkout whatever is installed)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=ROOT, env=env)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    err = p.stderr.read().decode()
    p.stderr.close()
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed: {err}")
    return wall, ru.ru_maxrss / 1024.0


def median_runs(cmd: list[str], runs: int) -> dict:
    run_timed(cmd)  # warm-up: numba cache, page cache
    res = [run_timed(cmd) for _ in range(runs)]
    walls = [w for w, _ in res]
    return {"command": " ".join(cmd), "wall_s": walls, "median_s": statistics.median(walls),
            "max_rss_mb": max(r for _, r in res)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the full-PTB accuracy rows except orders 3 and 5")
    ap.add_argument("--out", default=str(ROOT / "benchmarks"))
    args = ap.parse_args()

    # speed and memory first, while this process is small: a forked child's max RSS
    # counts the parent's pages until it execs
    readme_path = shared_path("anchors", "README.md")
    if readme_path is None:
        sys.exit("../shared/anchors not found")
    ptb = shared_path("corpora", "ptb")
    load_before = os.getloadavg()
    tmp = Path(tempfile.mkdtemp(prefix="bench_kn."))
    py = [sys.executable, "-m", "suffixlm.cli"]
    train_full, test_full = ptb / "ptb.train.txt", ptb / "ptb.test.txt"
    speed = {}
    for kind, mc in (("default", "srilm"), ("nocut", "none")):
        out = tmp / f"kn5.{kind}.arpa"
        speed[f"estimate_{kind}"] = median_runs(py + ["kn", str(train_full), "-o", str(out), "--order", "5",
                                                      "--min-count", mc, "-q"], args.runs)
        speed[f"score_{kind}"] = median_runs(py + ["ppl", "--arpa", str(out), str(test_full)], args.runs)
    speed["python_startup"] = median_runs(py + ["--help"], args.runs)
    for k, v in speed.items():
        print(f"{k:18} median {v['median_s']:.2f} s  max RSS {v['max_rss_mb']:.0f} MB   ({v['command']})")

    load_after = os.getloadavg()

    from suffixlm.backoff.arpa import read_arpa
    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.evaluate import score
    from suffixlm.backoff.kn import DiscountWarning, KneserNeyLM

    readme = readme_path.read_text()
    anchors = parse_anchor_tables(readme)
    speed_ref = parse_anchor_speed(readme)
    files = {"full": (ptb / "ptb.train.txt", ptb / "ptb.test.txt"),
             "100k": (ptb / "ptb.train.100k.txt", ptb / "ptb.test.20k.txt")}

    # 1. perplexities
    rows = []
    data = {}
    for subset in ("100k", "full"):
        train = load_training_corpus(files[subset][0], unk=True)
        test = Corpus.from_text(files[subset][1], train.vocab)
        data[subset] = (train, test)
        for (s, method, kind, order), (ppl, ppl1) in sorted(anchors.items()):
            if s != subset or (args.quick and subset == "full" and order not in (3, 5)):
                continue
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DiscountWarning)
                lm = KneserNeyLM(order, modified=method == "modified",
                                 min_counts=None if kind == "default" else [1]).fit(train)
            r = score(lm, test)
            ours, ours1 = "%.7g" % r.ppl, "%.7g" % r.ppl1
            rows.append({
                "subset": subset, "method": method, "cutoffs": kind, "order": order,
                "srilm_ppl": float(ppl), "srilm_ppl1": float(ppl1), "ppl": r.ppl, "ppl1": r.ppl1,
                "same_printed_digits": ours == "%.7g" % float(ppl) and ours1 == "%.7g" % float(ppl1),
                "same_4_digits": "%.4g" % r.ppl == "%.4g" % float(ppl) and "%.4g" % r.ppl1 == "%.4g" % float(ppl1),
                "seconds": round(time.perf_counter() - t0, 3),
            })
            print(f"{subset:5} {method:8} {kind:7} {order:2}  SRILM {ppl:>9} / {ppl1:>9}  ours {ours:>9} / {ours1:>9}"
                  f"  {'=' if rows[-1]['same_printed_digits'] else ('~4' if rows[-1]['same_4_digits'] else 'DIFF')}")

    # 2. SRILM's ARPA files
    arpa_rows = []
    for f in sorted((shared_path("anchors", "srilm")).glob("*.arpa.gz")):
        m = re.match(r"(ptb100k|ptb)\.kn(\d+)\.srilm-(default|nocut)\.arpa\.gz", f.name)
        if not m:
            continue
        subset = "100k" if m.group(1) == "ptb100k" else "full"
        order, kind = int(m.group(2)), m.group(3)
        ppl, ppl1 = anchors[(subset, "modified", kind, order)]
        t0 = time.perf_counter()
        lm = read_arpa(f)
        t1 = time.perf_counter()
        test = Corpus.from_text(files[subset][1], lm.vocab)
        r = score(lm, test)
        t2 = time.perf_counter()
        train = data[subset][0]
        ours_file = KneserNeyLM(order, min_counts=None if kind == "default" else [1]).fit(train).model_.arpa_bytes()
        import gzip

        theirs = gzip.open(f).read()
        same_lines = sorted(ours_file.splitlines()) == sorted(theirs.splitlines())
        arpa_rows.append({"file": f.name, "srilm_ppl": float(ppl), "ppl": r.ppl, "ppl1": r.ppl1,
                          "same_printed_digits": "%.7g" % r.ppl == "%.7g" % float(ppl)
                          and "%.7g" % r.ppl1 == "%.7g" % float(ppl1),
                          "our_arpa_same_lines_as_srilm": same_lines,
                          "read_s": round(t1 - t0, 3), "score_s": round(t2 - t1, 3)})
        print(f"{f.name:34} SRILM {ppl:>9}  ours {r.ppl:.7g}  {'=' if arpa_rows[-1]['same_printed_digits'] else 'DIFF'}"
              f"  our ARPA file {'identical' if same_lines else 'differs'} (as sorted lines)")

    # in-process breakdown (warm)
    train, test = data["full"]
    breakdown = {}
    for kind, mc in (("default", None), ("nocut", [1])):
        t0 = time.perf_counter()
        lm = KneserNeyLM(5, min_counts=mc).fit(train)
        t1 = time.perf_counter()
        lm.write_arpa(tmp / "x.arpa")
        t2 = time.perf_counter()
        m = read_arpa(tmp / "x.arpa")
        t3 = time.perf_counter()
        m.index  # built on first use
        t4 = time.perf_counter()
        score(m, Corpus.from_text(test_full, m.vocab))
        t5 = time.perf_counter()
        breakdown[kind] = {"count_and_estimate_s": t1 - t0, "write_arpa_s": t2 - t1, "read_arpa_s": t3 - t2,
                           "build_index_s": t4 - t3, "score_test_s": t5 - t4, "ngrams": lm.model_.counts,
                           "arpa_mb": (tmp / "x.arpa").stat().st_size / 1e6}
    t0 = time.perf_counter()
    load_training_corpus(train_full, unk=True)
    breakdown["load_training_text_s"] = time.perf_counter() - t0

    def ratio(ours, ref):
        return None if ref is None else ours / ref

    ref_med = {k: statistics.median(v["wall_s"]) for k, v in speed_ref.items()}
    ref_best = {k: min(v["wall_s"]) for k, v in speed_ref.items()}
    comparisons = [
        ("estimate KN5, default cut-offs", speed["estimate_default"], "srilm_default", "kenlm_S1G"),
        ("estimate KN5, no cut-offs", speed["estimate_nocut"], "srilm_nocut", "kenlm_S1G"),
        ("score ptb.test.txt, default model", speed["score_default"], "srilm_ppl_default", "kenlm_query"),
        ("score ptb.test.txt, nocut model", speed["score_nocut"], "srilm_ppl_nocut", "kenlm_query"),
    ]
    table = []
    for what, ours, srilm, kenlm in comparisons:
        table.append({
            "task": what, "ours_median_s": ours["median_s"], "ours_max_rss_mb": ours["max_rss_mb"],
            "srilm_median_s": ref_med.get(srilm), "srilm_best_s": ref_best.get(srilm),
            "srilm_max_rss_mb": speed_ref.get(srilm, {}).get("max_rss_mb"),
            "kenlm_median_s": ref_med.get(kenlm), "kenlm_max_rss_mb": speed_ref.get(kenlm, {}).get("max_rss_mb"),
            "ours_over_srilm_median": ratio(ours["median_s"], ref_med.get(srilm)),
            "ours_over_kenlm_median": ratio(ours["median_s"], ref_med.get(kenlm)),
        })

    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True).stdout.strip()
    dirty = bool(subprocess.run(["git", "status", "--porcelain", "--", "suffixlm"], cwd=ROOT, capture_output=True,
                                text=True).stdout.strip())
    import numba
    import numpy

    result = {
        "benchmark": "Kneser-Ney vs SRILM/KenLM (../shared/anchors)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "commit": commit + ("+dirty" if dirty else ""),
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "machine": {"platform": platform.platform(), "cpu_count": os.cpu_count(), "python": platform.python_version(),
                    "numpy": numpy.__version__, "numba": numba.__version__},
        "runs": args.runs,
        "load_average_before_after_speed_runs": [load_before, load_after],
        "perplexities": rows, "srilm_arpa_files": arpa_rows,
        "speed": table, "speed_raw": speed, "reference_speed": speed_ref, "in_process_breakdown": breakdown,
    }
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "kn.json").write_text(json.dumps(result, indent=2) + "\n")

    # markdown
    n_same = sum(r["same_printed_digits"] for r in rows)
    n_4 = sum(r["same_4_digits"] for r in rows)
    md = ["# Kneser-Ney vs SRILM / KenLM", "",
          f"{result['date']}, commit {result['commit']}, {platform.platform()}, {os.cpu_count()} CPUs.",
          f"Command: `{result['command']}`",
          f"Load average (1, 5, 15 min) before / after the timed runs: "
          f"{'/'.join(f'{x:.1f}' for x in load_before)} / {'/'.join(f'{x:.1f}' for x in load_after)} "
          f"(a shared 2-core machine: other jobs were running).", "",
          "## Speed and memory (full PTB, 5-gram; fresh process each run, median of "
          f"{args.runs} after one warm-up; SRILM/KenLM: anchors README, median of their 3 runs)", "",
          "| task | ours | ours max RSS | SRILM | SRILM max RSS | ours / SRILM | KenLM | KenLM max RSS | ours / KenLM |",
          "|---|---|---|---|---|---|---|---|---|"]

    def f(x, fmt="{:.2f}"):
        return "" if x is None else fmt.format(x)

    for t in table:
        md.append(f"| {t['task']} | {f(t['ours_median_s'])} s | {f(t['ours_max_rss_mb'], '{:.0f}')} MB | "
                  f"{f(t['srilm_median_s'])} s | {f(t['srilm_max_rss_mb'], '{:.0f} MB')} | "
                  f"{f(t['ours_over_srilm_median'])} | {f(t['kenlm_median_s'])} s | "
                  f"{f(t['kenlm_max_rss_mb'], '{:.0f} MB')} | {f(t['ours_over_kenlm_median'])} |")
    md += ["", f"Python start-up alone (`suffixlm --help`): {speed['python_startup']['median_s']:.2f} s, "
               f"{speed['python_startup']['max_rss_mb']:.0f} MB.", "",
           "In-process breakdown (warm, seconds): " + "; ".join(
               f"{k}: " + ", ".join(f"{kk.replace('_s', '')} {vv:.2f}" for kk, vv in v.items() if kk.endswith("_s"))
               for k, v in breakdown.items() if isinstance(v, dict))
           + f"; reading the training text {breakdown['load_training_text_s']:.2f}.", "",
           f"## Perplexities ({n_same} of {len(rows)} identical to SRILM's printed digits, "
           f"{n_4} of {len(rows)} to 4 significant digits)", "",
           "| text | method | cut-offs | order | SRILM ppl / ppl1 | ours ppl / ppl1 | same |", "|---|---|---|---|---|---|---|"]
    for r in rows:
        md.append(f"| {r['subset']} | {r['method']} | {r['cutoffs']} | {r['order']} | {r['srilm_ppl']:.7g} / "
                  f"{r['srilm_ppl1']:.7g} | {r['ppl']:.7g} / {r['ppl1']:.7g} | "
                  f"{'all digits' if r['same_printed_digits'] else ('4 digits' if r['same_4_digits'] else 'NO')} |")
    md += ["", "## SRILM's ARPA files scored by suffixlm", "",
           "| file | SRILM ppl | ours | same | our ARPA file = SRILM's (sorted lines) | read s |", "|---|---|---|---|---|---|"]
    for r in arpa_rows:
        md.append(f"| {r['file']} | {r['srilm_ppl']:.7g} | {r['ppl']:.7g} | {'yes' if r['same_printed_digits'] else 'NO'} "
                  f"| {'yes' if r['our_arpa_same_lines_as_srilm'] else 'no'} | {r['read_s']:.2f} |")
    (outdir / "kn.md").write_text("\n".join(md) + "\n")

    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 3.2))
        labels = [t["task"].replace("ptb.test.txt, ", "") for t in table]
        xs = range(len(table))
        w = 0.27
        ax.bar([x - w for x in xs], [t["ours_median_s"] for t in table], w, label="suffixlm")
        ax.bar(list(xs), [t["srilm_median_s"] or 0 for t in table], w, label="SRILM")
        ax.bar([x + w for x in xs], [t["kenlm_median_s"] or 0 for t in table], w, label="KenLM")
        ax.set_xticks(list(xs), labels, fontsize=7)
        ax.set_ylabel("wall seconds")
        ax.legend(fontsize=8)
        ax.set_title("KN5 on full PTB: estimate and score (fresh process)", fontsize=9)
        fig.tight_layout()
        fig.savefig(outdir / "kn.png", dpi=120)
    except ImportError:
        pass
    print(f"wrote {outdir / 'kn.json'} and {outdir / 'kn.md'}")


if __name__ == "__main__":
    main()
