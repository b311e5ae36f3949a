#!/usr/bin/env python3
"""Benchmark: suffix tree construction and context extraction on a training text.

For every depth m (order - 1) it runs one worker subprocess that loads the corpus,
warms the numba kernels up on a tiny corpus (so no JIT compilation is timed), then
builds the tree and extracts the contexts of the whole training text ``--repeats``
times (median reported). Peak memory is the worker's ``ru_maxrss`` (resident set
high-water mark, Linux KiB) at the end, and its growth over the high-water mark
measured just before the first build (so the corpus and the interpreter are
excluded from the "extra" column). tracemalloc is not used: it does not see the
arrays numba allocates.

Then the same at m = 12 on the first 25 %, 50 % and 100 % of the sentences, to show
how the time scales with the corpus length.

Writes benchmarks/suffixtree.json and benchmarks/suffixtree.md.

    python scripts/bench_suffixtree.py [--corpus ../shared/corpora/ptb/ptb.train.txt]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ukkonen_build(corpus, m: int) -> tuple[float, float, int]:
    """Seconds of Ukkonen's generalized suffix tree of the reversed text, seconds of
    capping it at depth m, and the number of context nodes found."""
    from suffixlm import _ukkonen_kernels as U

    n_symbols = int(corpus.tokens.max()) + 1
    alphabet = n_symbols + corpus.n_sentences
    t0 = time.perf_counter()
    text, sent_end = U.reversed_text(corpus.tokens, corpus.offsets, n_symbols)
    start, end, _, keys, vals, _ = U.ukkonen(text, alphabet)
    t1 = time.perf_counter()
    is_node = U.cap_tree(text, sent_end, start, end, keys, vals, alphabet, m)[2]
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, int(is_node.sum())


def worker(corpus_path: str, m: int, fraction: float, repeats: int, trie: bool, ukkonen: bool) -> dict:
    import gc
    import resource

    import numpy as np

    from suffixlm.contexts import extract_contexts, walk_contexts
    from suffixlm.corpus import Corpus, load_training_corpus
    from suffixlm.suffixtree import SuffixTree

    full = load_training_corpus(corpus_path)
    n_sent = max(1, int(round(fraction * full.n_sentences)))
    end = int(full.offsets[n_sent])
    corpus = Corpus(
        full.tokens[:end].copy(), full.offsets[: n_sent + 1].copy(), full.vocab,
        int(end - 2 * n_sent), 0, full.source,
    )
    del full
    warm = Corpus.from_strings(["a b c a b", "b c a"])
    for collapse in (True, False):
        wtree = SuffixTree.build(warm, m, collapse)
        extract_contexts(wtree, warm)
        walk_contexts(wtree, warm.tokens, warm.offsets)
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    build, extract, trie_build, walk, cpu = [], [], [], [], []
    stats = None
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        tree = SuffixTree.build(corpus, m)
        t1 = time.perf_counter()
        ctx = extract_contexts(tree, corpus)
        t2 = time.perf_counter()
        cpu.append(time.process_time() - c0)
        walk_contexts(tree, corpus.tokens, corpus.offsets)
        t3 = time.perf_counter()
        build.append(t1 - t0)
        extract.append(t2 - t1)
        walk.append(t3 - t2)
        stats = tree.stats()
        stats["path_entries"] = int(ctx.nodes.shape[0])
        del tree, ctx
        gc.collect()
    rss_tree = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trie:
        for _ in range(repeats):
            t0 = time.perf_counter()
            trie_s = SuffixTree.build(corpus, m, collapse=False)
            trie_build.append(time.perf_counter() - t0)
            assert trie_s.n_nodes == stats["trie_nodes"]
            del trie_s
            gc.collect()
    rss_end = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    ukk, cap = [], []
    if ukkonen:
        ukkonen_build(warm, m)
        for _ in range(repeats):
            t_build, t_cap, n_nodes = ukkonen_build(corpus, m)
            assert n_nodes == stats["tree_nodes"]
            ukk.append(t_build)
            cap.append(t_cap)
            gc.collect()
    total = [b + e for b, e in zip(build, extract)]
    return {
        "m": m,
        "order": m + 1,
        "fraction": fraction,
        "words": int(corpus.n_words),
        "sentences": int(corpus.n_sentences),
        **stats,
        "build_seconds": statistics.median(build),
        "extract_seconds": statistics.median(extract),
        "total_seconds": statistics.median(total),
        "walk_seconds": statistics.median(walk),
        "total_cpu_seconds": statistics.median(cpu),
        "build_seconds_all": build,
        "extract_seconds_all": extract,
        "trie_build_seconds": statistics.median(trie_build) if trie_build else None,
        "ukkonen_seconds": statistics.median(ukk) if ukk else None,
        "ukkonen_cap_seconds": statistics.median(cap) if cap else None,
        "maxrss_before_mb": rss_before / 1024,
        "maxrss_tree_mb": rss_tree / 1024,
        "extra_peak_tree_mb": (rss_tree - rss_before) / 1024,
        "maxrss_end_mb": rss_end / 1024,
        "loadavg_1min_end": os.getloadavg()[0],
    }


def run_worker(args, m: int, fraction: float, trie: bool, ukkonen: bool = True) -> dict:
    cmd = [sys.executable, __file__, "--worker", "--corpus", args.corpus, "--m", str(m),
           "--fraction", str(fraction), "--repeats", str(args.repeats)]
    if trie:
        cmd.append("--trie")
    if ukkonen:
        cmd.append("--ukkonen")
    out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
    return json.loads(out.stdout.strip().splitlines()[-1])


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # pragma: no cover
        return "unknown"


def markdown(result: dict) -> str:
    lines = [
        f"Suffix tree on `{Path(result['corpus']).name}` ({result['runs'][-1]['words']:,} words), "
        f"median of {result['repeats']}, JIT compilation excluded; "
        f"{result['machine']['cpu_count']} CPUs, {result['machine']['platform']}; commit {result['commit'][:10]}.",
        "",
        "| order | m | trie nodes \\|S\\| | tree nodes \\|T\\| | trie params | tree params | build s | extract s | build+extract s (CPU s) | peak RSS MB (extra) | walk s | trie build s | Ukkonen GST s + cap s |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        trie = f"{r['trie_build_seconds']:.2f}" if r["trie_build_seconds"] is not None else "–"
        ukk = (f"{r['ukkonen_seconds']:.2f} + {r['ukkonen_cap_seconds']:.2f}"
               if r.get("ukkonen_seconds") is not None else "–")
        lines.append(
            f"| {r['order']} | {r['m']} | {r['trie_nodes']:,} | {r['tree_nodes']:,} | {r['trie_params']:,} | "
            f"{r['tree_params']:,} | {r['build_seconds']:.3f} | {r['extract_seconds']:.3f} | "
            f"{r['total_seconds']:.3f} ({r['total_cpu_seconds']:.3f}) | {r['maxrss_tree_mb']:.0f} (+{r['extra_peak_tree_mb']:.0f}) | {r['walk_seconds']:.3f} | {trie} | {ukk} |"
        )
    lines += [
        "",
        f"Scaling at m = {result['scaling'][-1]['m']} (first part of the corpus):",
        "",
        "| share | words | tree nodes | build+extract s | µs per word | CPU s | CPU µs per word | Ukkonen GST + cap s | µs per word |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["scaling"]:
        ukk = r["ukkonen_seconds"] + r["ukkonen_cap_seconds"]
        lines.append(
            f"| {r['fraction']:.0%} | {r['words']:,} | {r['tree_nodes']:,} | {r['total_seconds']:.3f} | "
            f"{1e6 * r['total_seconds'] / r['words']:.2f} | {r['total_cpu_seconds']:.3f} | "
            f"{1e6 * r['total_cpu_seconds'] / r['words']:.2f} | {ukk:.3f} | {1e6 * ukk / r['words']:.2f} |"
        )
    lines += [
        "",
        "build = sorting construction of the tree with counts and successor lists (what "
        "`SuffixTree.build` does); extract = context paths of every training position; "
        "walk = the same paths found by the general walk used for unseen text (reads edge labels); "
        "times are wall-clock medians, CPU s the process CPU time of build+extract; "
        "trie build = `collapse=False`; the last column times Ukkonen's construction of the "
        "uncapped generalized suffix tree of the reversed text plus capping it at m "
        "(node set and counts only: no successor lists, no preorder) for comparison. "
        f"Peak RSS = worker high-water mark, extra = its growth during the builds. "
        f"1-minute load average during the runs: {result['loadavg']}.",
        "",
        f"Command: `{result['command']}`",
        "",
    ]
    return "\n".join(lines)


def atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_corpus = ROOT.parent / "shared" / "corpora" / "ptb" / "ptb.train.txt"
    ap.add_argument("--corpus", default=str(default_corpus))
    ap.add_argument("--depths", default="2-12", help="range of m, e.g. 2-12")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--m", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--fraction", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--trie", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ukkonen", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        print(json.dumps(worker(args.corpus, args.m, args.fraction, args.repeats, args.trie, args.ukkonen)))
        return
    if not Path(args.corpus).exists():
        sys.exit(f"{args.corpus}: no such file (pass --corpus)")
    lo, hi = (int(x) for x in args.depths.split("-"))
    runs, scaling = [], []
    print(f"{'m':>3} {'|S|':>10} {'|T|':>10} {'trie par':>10} {'tree par':>10} {'build':>7} {'extract':>7} {'RSS MB':>7} {'trie':>6} {'ukk':>6} {'load':>5}")
    for m in range(lo, hi + 1):
        r = run_worker(args, m, 1.0, trie=True)
        runs.append(r)
        print(f"{m:>3} {r['trie_nodes']:>10,} {r['tree_nodes']:>10,} {r['trie_params']:>10,} {r['tree_params']:>10,} "
              f"{r['build_seconds']:>7.3f} {r['extract_seconds']:>7.3f} {r['maxrss_tree_mb']:>7.0f} {r['trie_build_seconds']:>6.2f} "
              f"{r['ukkonen_seconds'] + r['ukkonen_cap_seconds']:>6.2f} {r['loadavg_1min_end']:>5.1f}",
              flush=True)
    print(f"\n{'share':>6} {'words':>9} {'build+extract s':>16}")
    for fraction in (0.25, 0.5, 1.0):
        r = run_worker(args, hi, fraction, trie=False)
        scaling.append(r)
        print(f"{fraction:>6.0%} {r['words']:>9,} {r['total_seconds']:>16.3f}", flush=True)
    import numba
    import numpy

    result = {
        "benchmark": "suffix tree build + context extraction",
        "corpus": str(args.corpus),
        "repeats": args.repeats,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "command": "python " + " ".join([os.path.relpath(__file__, ROOT)] + sys.argv[1:]),
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor(),
            "cpu_count": os.cpu_count(),
            "python": platform.python_version(),
            "numpy": numpy.__version__,
            "numba": numba.__version__,
        },
        "memory_note": "maxrss = worker resident-set high-water mark; extra = growth over the mark before the first build",
        "loadavg": sorted({round(r["loadavg_1min_end"], 1) for r in runs + scaling}),
        "runs": runs,
        "scaling": scaling,
    }
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "suffixtree.json", json.dumps(result, indent=1) + "\n")
    atomic_write(out / "suffixtree.md", markdown(result))
    print(f"\nwrote {out / 'suffixtree.json'} and {out / 'suffixtree.md'}")


if __name__ == "__main__":
    main()
