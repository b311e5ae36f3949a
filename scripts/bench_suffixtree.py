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


class Clock:
    """Wall-clock and process CPU time of named stages, several runs each."""

    def __init__(self):
        self.wall: dict[str, list[float]] = {}
        self.cpu: dict[str, list[float]] = {}
        self._t = None

    def start(self):
        self._t = (time.perf_counter(), time.process_time())

    def stop(self, name: str):
        w, c = self._t
        self.wall.setdefault(name, []).append(time.perf_counter() - w)
        self.cpu.setdefault(name, []).append(time.process_time() - c)
        self.start()

    def medians(self) -> dict:
        out = {}
        for name in self.wall:
            out[f"{name}_seconds"] = statistics.median(self.wall[name])
            out[f"{name}_cpu_seconds"] = statistics.median(self.cpu[name])
            out[f"{name}_seconds_all"] = self.wall[name]
        return out


def ukkonen_build(corpus, m: int, clock: Clock) -> int:
    """Ukkonen's generalized suffix tree of the reversed text (stage "ukkonen"), then
    capping it at depth m (stage "ukkonen_cap"); returns the number of context nodes."""
    from suffixlm import _ukkonen_kernels as U

    n_symbols = int(corpus.tokens.max()) + 1
    alphabet = n_symbols + corpus.n_sentences
    clock.start()
    text, sent_end = U.reversed_text(corpus.tokens, corpus.offsets, n_symbols)
    start, end, _, keys, vals, _ = U.ukkonen(text, alphabet)
    clock.stop("ukkonen")
    is_node = U.cap_tree(text, sent_end, start, end, keys, vals, alphabet, m)[2]
    clock.stop("ukkonen_cap")
    return int(is_node.sum())


def worker(corpus_path: str, m: int, fraction: float, repeats: int, trie: bool, ukkonen: bool) -> dict:
    import gc
    import resource

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
    # warm-up: compile (or load from the cache) every kernel timed below
    warm = Corpus.from_strings(["a b c a b", "b c a"])
    for collapse in (True, False):
        wtree = SuffixTree.build(warm, m, collapse)
        extract_contexts(wtree, warm)
        walk_contexts(wtree, warm.tokens, warm.offsets)
    ukkonen_build(warm, m, Clock())
    gc.collect()
    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    clock = Clock()
    stats = None
    for _ in range(repeats):
        clock.start()
        tree = SuffixTree.build(corpus, m)
        clock.stop("build")
        ctx = extract_contexts(tree, corpus)
        clock.stop("extract")
        walk_contexts(tree, corpus.tokens, corpus.offsets)
        clock.stop("walk")
        clock.wall.setdefault("total", []).append(clock.wall["build"][-1] + clock.wall["extract"][-1])
        clock.cpu.setdefault("total", []).append(clock.cpu["build"][-1] + clock.cpu["extract"][-1])
        stats = tree.stats()
        stats["path_entries"] = int(ctx.nodes.shape[0])
        del tree, ctx
        gc.collect()
    rss_tree = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if trie:
        for _ in range(repeats):
            clock.start()
            trie_s = SuffixTree.build(corpus, m, collapse=False)
            clock.stop("trie_build")
            assert trie_s.n_nodes == stats["trie_nodes"]
            del trie_s
            gc.collect()
    rss_end = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    if ukkonen:
        for _ in range(repeats):
            assert ukkonen_build(corpus, m, clock) == stats["tree_nodes"]
            gc.collect()
    return {
        "m": m,
        "order": m + 1,
        "fraction": fraction,
        "words": int(corpus.n_words),
        "sentences": int(corpus.n_sentences),
        **stats,
        **clock.medians(),
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


def _wc(r: dict, name: str) -> str:
    if f"{name}_seconds" not in r:
        return "–"
    return f"{r[name + '_seconds']:.2f} ({r[name + '_cpu_seconds']:.2f})"


def markdown(result: dict) -> str:
    lines = [
        f"Suffix tree on `{Path(result['corpus']).name}` ({result['runs'][-1]['words']:,} words), "
        f"median of {result['repeats']} runs, JIT compilation excluded; "
        f"{result['machine']['cpu_count']} CPUs, {result['machine']['platform']}; commit {result['commit'][:10]}, "
        f"{result['date']}. Times in seconds as wall (CPU).",
        "",
        "| order | m | trie nodes \\|S\\| | tree nodes \\|T\\| | trie params | tree params | build | extract "
        "| build + extract | peak RSS MB (extra) | walk | trie build | Ukkonen GST | Ukkonen cap |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['order']} | {r['m']} | {r['trie_nodes']:,} | {r['tree_nodes']:,} | {r['trie_params']:,} | "
            f"{r['tree_params']:,} | {_wc(r, 'build')} | {_wc(r, 'extract')} | {_wc(r, 'total')} | "
            f"{r['maxrss_tree_mb']:.0f} (+{r['extra_peak_tree_mb']:.0f}) | {_wc(r, 'walk')} | "
            f"{_wc(r, 'trie_build')} | {_wc(r, 'ukkonen')} | {_wc(r, 'ukkonen_cap')} |"
        )
    lines += [
        "",
        f"Scaling at m = {result['scaling'][-1]['m']} (first part of the corpus):",
        "",
        "| share | words | tree nodes | build + extract | CPU µs per word | Ukkonen GST + cap CPU s | CPU µs per word |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["scaling"]:
        ukk = r["ukkonen_cpu_seconds"] + r["ukkonen_cap_cpu_seconds"]
        lines.append(
            f"| {r['fraction']:.0%} | {r['words']:,} | {r['tree_nodes']:,} | {_wc(r, 'total')} | "
            f"{1e6 * r['total_cpu_seconds'] / r['words']:.2f} | {ukk:.2f} | {1e6 * ukk / r['words']:.2f} |"
        )
    lines += [
        "",
        "build = the sorting construction with counts and successor lists (`SuffixTree.build`); "
        "extract = context paths of every training position (`extract_contexts`); "
        "walk = the same paths found by the general walk used for unseen text (reads edge labels); "
        "trie build = `collapse=False`; Ukkonen GST = Ukkonen's construction of the uncapped "
        "generalized suffix tree of the reversed text, Ukkonen cap = capping it at m (node set and "
        "counts only: no successor lists, no preorder), for comparison. "
        "Peak RSS = the worker's resident high-water mark after the build + extract runs, extra = "
        "its growth during them. The machine was shared with other jobs (1-minute load average "
        f"{min(result['loadavg'])}–{max(result['loadavg'])} on {result['machine']['cpu_count']} CPUs), "
        "so CPU time is the steadier figure for this single-threaded code.",
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
    print(f"{'m':>3} {'|S|':>10} {'|T|':>10} {'trie par':>10} {'tree par':>10} {'build':>12} {'extract':>12} "
          f"{'trie':>12} {'ukkonen+cap':>12} {'load':>5}   (wall (CPU) s)")
    for m in range(lo, hi + 1):
        r = run_worker(args, m, 1.0, trie=True)
        runs.append(r)
        u = f"{r['ukkonen_seconds'] + r['ukkonen_cap_seconds']:.2f} ({r['ukkonen_cpu_seconds'] + r['ukkonen_cap_cpu_seconds']:.2f})"
        print(f"{m:>3} {r['trie_nodes']:>10,} {r['tree_nodes']:>10,} {r['trie_params']:>10,} {r['tree_params']:>10,} "
              f"{_wc(r, 'build'):>12} {_wc(r, 'extract'):>12} {_wc(r, 'trie_build'):>12} {u:>12} "
              f"{r['loadavg_1min_end']:>5.1f}", flush=True)
    print(f"\n{'share':>6} {'words':>9} {'build+extract':>14}")
    for fraction in (0.25, 0.5, 1.0):
        r = run_worker(args, hi, fraction, trie=False)
        scaling.append(r)
        print(f"{fraction:>6.0%} {r['words']:>9,} {_wc(r, 'total'):>14}", flush=True)
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
        "time_note": "*_seconds = wall-clock median, *_cpu_seconds = process CPU time median",
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
