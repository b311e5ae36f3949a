#!/usr/bin/env python3
"""Benchmark: suffix tree construction and context extraction on a training text.

For every depth m (order - 1) it runs one worker subprocess that loads the corpus,
warms the numba kernels up on a tiny corpus (so no JIT compilation is timed), then
builds the tree and extracts the contexts of the whole training text ``--repeats``
times (median reported), builds the trie, and builds the same tree with
``method="ukkonen"`` (checking once that every array is identical to the sorting
build's) and Ukkonen's generalized suffix tree alone. Peak memory is the worker's
``ru_maxrss`` (resident set high-water mark, Linux KiB) at the end, and its growth over
the high-water mark measured just before the first build (so the corpus and the
interpreter are excluded from the "extra" column). tracemalloc is not used: it does not
see the arrays numba allocates. Because that mark only grows, the peak of one build
alone is measured in two more workers per depth, one per method, that do nothing but
that build.

Then the same at the largest m on the first 25 %, 50 % and 100 % of the sentences, to
show how the time scales with the corpus length.

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


def ukkonen_gst(corpus, clock: Clock) -> int:
    """Ukkonen's generalized suffix tree of the reversed text alone (stage "ukkonen_gst",
    the first step of the ukkonen build); returns its number of nodes."""
    from suffixlm import _ukkonen_kernels as U

    n_symbols = int(corpus.tokens.max()) + 1
    clock.start()
    text, _ = U.reversed_text(corpus.tokens, corpus.offsets, n_symbols)
    start = U.ukkonen(text, n_symbols)[0]
    clock.stop("ukkonen_gst")
    return int(start.shape[0])


def identical(a, b) -> bool:
    """Every array (and max_depth) of two SuffixTrees equal, dtypes included."""
    import dataclasses

    import numpy as np

    for f in dataclasses.fields(a):
        if f.name == "_cache":
            continue
        x, y = getattr(a, f.name), getattr(b, f.name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            if not (isinstance(x, np.ndarray) and isinstance(y, np.ndarray) and x.dtype == y.dtype
                    and np.array_equal(x, y)):
                return False
        elif x != y:
            return False
    return True


def load_part(corpus_path: str, fraction: float):
    from suffixlm.corpus import Corpus, load_training_corpus

    full = load_training_corpus(corpus_path)
    n_sent = max(1, int(round(fraction * full.n_sentences)))
    end = int(full.offsets[n_sent])
    return Corpus(
        full.tokens[:end].copy(), full.offsets[: n_sent + 1].copy(), full.vocab,
        int(end - 2 * n_sent), 0, full.source,
    )


def warm_up(m: int) -> None:
    """Compile (or load from the cache) every kernel timed."""
    from suffixlm.contexts import extract_contexts, walk_contexts
    from suffixlm.corpus import Corpus
    from suffixlm.suffixtree import SuffixTree

    warm = Corpus.from_strings(["a b c a b", "b c a"])
    for method in ("sort", "ukkonen"):
        for collapse in (True, False):
            wtree = SuffixTree.build(warm, m, collapse, method=method)
            extract_contexts(wtree, warm)
            walk_contexts(wtree, warm.tokens, warm.offsets)
    ukkonen_gst(warm, Clock())


def memory_worker(corpus_path: str, m: int, method: str) -> dict:
    """Peak resident memory of one build alone (after loading and warming up)."""
    import gc
    import resource

    from suffixlm.suffixtree import SuffixTree

    corpus = load_part(corpus_path, 1.0)
    warm_up(m)
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    tree = SuffixTree.build(corpus, m, method=method)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {"method": method, "n_nodes": tree.n_nodes, "maxrss_before_mb": before / 1024,
            "maxrss_mb": after / 1024, "extra_peak_mb": (after - before) / 1024}


def worker(corpus_path: str, m: int, fraction: float, repeats: int, trie: bool, ukkonen: bool) -> dict:
    import gc
    import resource

    from suffixlm.contexts import extract_contexts, walk_contexts
    from suffixlm.suffixtree import SuffixTree

    corpus = load_part(corpus_path, fraction)
    warm_up(m)
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
    same = None
    if ukkonen:
        for r in range(repeats):
            clock.start()
            tree_u = SuffixTree.build(corpus, m, method="ukkonen")
            clock.stop("ukkonen_build")
            if r == 0:
                same = identical(tree_u, SuffixTree.build(corpus, m))
                assert same, f"m = {m}: the ukkonen build differs from the sorting build"
            del tree_u
            gc.collect()
        for _ in range(repeats):
            ukkonen_gst(corpus, clock)
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
        "ukkonen_identical": same,
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
    r = json.loads(out.stdout.strip().splitlines()[-1])
    if fraction == 1.0 and ukkonen:
        for method in ("sort", "ukkonen"):
            cmd = [sys.executable, __file__, "--worker", "--corpus", args.corpus, "--m", str(m),
                   "--memory", method]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True, cwd=ROOT)
            mem = json.loads(out.stdout.strip().splitlines()[-1])
            assert mem["n_nodes"] == r["tree_nodes"]
            r[f"{method}_build_maxrss_mb"] = mem["maxrss_mb"]
            r[f"{method}_build_extra_peak_mb"] = mem["extra_peak_mb"]
    return r


def parse_depths(text: str) -> list[int]:
    """'2-12' or '2,4,12' or '2-4,12' -> sorted list of m."""
    out: set[int] = set()
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out.update(range(int(lo), int(hi or lo) + 1))
    return sorted(out)


def comparison(runs: list[dict]) -> str:
    """One sentence comparing the two builders on the measured depths (from the data)."""
    ratio = [r["ukkonen_build_cpu_seconds"] / r["build_cpu_seconds"] for r in runs]
    gst = [r["ukkonen_gst_cpu_seconds"] / r["ukkonen_build_cpu_seconds"] for r in runs]
    mem_s = [r["sort_build_extra_peak_mb"] for r in runs]
    mem_u = [r["ukkonen_build_extra_peak_mb"] for r in runs]
    m = [r["m"] for r in runs]
    contiguous = len(m) > 2 and m == list(range(m[0], m[-1] + 1))
    ms = f"m = {m[0]}-{m[-1]}" if contiguous else "m = " + ", ".join(map(str, m))
    def span(v: list[float], fmt: str) -> str:
        lo, hi = format(min(v), fmt), format(max(v), fmt)
        return lo if lo == hi else f"{lo}-{hi}"

    return (f"Over {ms} the Ukkonen build gives the identical tree in {span(ratio, '.1f')}x "
            f"the CPU time of the sorting build, {span(gst, '.0%')} of it spent in Ukkonen's "
            "construction of the uncapped generalized suffix tree (the same work whatever m); one build "
            f"raises the peak resident memory by {span(mem_u, '.0f')} MB (sorting: {span(mem_s, '.0f')} MB).")


def git_commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                              check=True).stdout.strip()
    except Exception:  # pragma: no cover
        return "unknown"


def git_dirty() -> bool | None:
    """Whether tracked files differ from the commit (the run then measured those changes too)."""
    try:
        return bool(subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                                   capture_output=True, text=True, check=True).stdout.strip())
    except Exception:  # pragma: no cover
        return None


def _wc(r: dict, name: str) -> str:
    if f"{name}_seconds" not in r:
        return "–"
    return f"{r[name + '_seconds']:.2f} ({r[name + '_cpu_seconds']:.2f})"


def markdown(result: dict) -> str:
    lines = [
        f"Suffix tree on `{Path(result['corpus']).name}` ({result['runs'][-1]['words']:,} words), "
        f"median of {result['repeats']} runs, JIT compilation excluded; "
        f"{result['machine']['cpu_count']} CPUs, {result['machine']['platform']}; commit {result['commit'][:10]}"
        f"{' + uncommitted changes' if result.get('commit_dirty') else ''}, "
        f"{result['date']}. Times in seconds as wall (CPU).",
        "",
        "| order | m | trie nodes \\|S\\| | tree nodes \\|T\\| | trie params | tree params | build | extract "
        "| build + extract | peak RSS MB (extra) | walk | trie build | Ukkonen build | Ukkonen / sort (CPU) "
        "| of which Ukkonen GST | build peak MB extra: sort / Ukkonen |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["runs"]:
        lines.append(
            f"| {r['order']} | {r['m']} | {r['trie_nodes']:,} | {r['tree_nodes']:,} | {r['trie_params']:,} | "
            f"{r['tree_params']:,} | {_wc(r, 'build')} | {_wc(r, 'extract')} | {_wc(r, 'total')} | "
            f"{r['maxrss_tree_mb']:.0f} (+{r['extra_peak_tree_mb']:.0f}) | {_wc(r, 'walk')} | "
            f"{_wc(r, 'trie_build')} | {_wc(r, 'ukkonen_build')} | "
            f"{r['ukkonen_build_cpu_seconds'] / r['build_cpu_seconds']:.1f}x | {_wc(r, 'ukkonen_gst')} | "
            f"+{r['sort_build_extra_peak_mb']:.0f} / +{r['ukkonen_build_extra_peak_mb']:.0f} |"
        )
    lines += [
        "",
        f"Scaling at m = {result['scaling'][-1]['m']} (first part of the corpus):",
        "",
        "| share | words | tree nodes | build + extract | CPU µs per word | Ukkonen build | CPU µs per word |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in result["scaling"]:
        ukk = r["ukkonen_build_cpu_seconds"]
        lines.append(
            f"| {r['fraction']:.0%} | {r['words']:,} | {r['tree_nodes']:,} | {_wc(r, 'total')} | "
            f"{1e6 * r['total_cpu_seconds'] / r['words']:.2f} | {_wc(r, 'ukkonen_build')} | "
            f"{1e6 * ukk / r['words']:.2f} |"
        )
    lines += [
        "",
        "build = the sorting construction with counts and successor lists (`SuffixTree.build`); "
        "extract = context paths of every training position (`extract_contexts`); "
        "walk = the same paths found by the general walk used for unseen text (reads edge labels); "
        "trie build = `collapse=False`; Ukkonen build = `SuffixTree.build(..., method=\"ukkonen\")`, "
        "the same tree (every array checked identical to the sorting build's, once per depth and corpus "
        "share) from Ukkonen's generalized suffix tree of the reversed text, capped at m, numbered in preorder, successor "
        "lists aggregated; of which Ukkonen GST = that suffix tree alone (reversed text + Ukkonen). "
        "Peak RSS = the worker's resident high-water mark after the build + extract runs, extra = "
        "its growth during them; build peak MB extra = the growth of the resident high-water mark "
        "during one build alone (tree kept, no extraction), measured in a separate process per method. "
        f"{result.get('comparison', '')} The machine was shared with other jobs (1-minute load average "
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
    ap.add_argument("--depths", default="2-12", help="values of m: a range and/or a list, e.g. 2-12 or 2,4,12")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(ROOT / "benchmarks"))
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--m", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--fraction", type=float, default=1.0, help=argparse.SUPPRESS)
    ap.add_argument("--trie", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--ukkonen", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--memory", choices=["sort", "ukkonen"], help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker and args.memory:
        print(json.dumps(memory_worker(args.corpus, args.m, args.memory)))
        return
    if args.worker:
        print(json.dumps(worker(args.corpus, args.m, args.fraction, args.repeats, args.trie, args.ukkonen)))
        return
    if not Path(args.corpus).exists():
        sys.exit(f"{args.corpus}: no such file (pass --corpus)")
    depths = parse_depths(args.depths)
    runs, scaling = [], []
    print(f"{'m':>3} {'|S|':>10} {'|T|':>10} {'trie par':>10} {'tree par':>10} {'build':>12} {'extract':>12} "
          f"{'trie':>12} {'ukkonen':>12} {'MB sort/ukk':>12} {'load':>5}   (wall (CPU) s)")
    for m in depths:
        r = run_worker(args, m, 1.0, trie=True)
        runs.append(r)
        mem = f"{r['sort_build_extra_peak_mb']:.0f}/{r['ukkonen_build_extra_peak_mb']:.0f}"
        print(f"{m:>3} {r['trie_nodes']:>10,} {r['tree_nodes']:>10,} {r['trie_params']:>10,} {r['tree_params']:>10,} "
              f"{_wc(r, 'build'):>12} {_wc(r, 'extract'):>12} {_wc(r, 'trie_build'):>12} "
              f"{_wc(r, 'ukkonen_build'):>12} {mem:>12} {r['loadavg_1min_end']:>5.1f}", flush=True)
    print(f"\n{'share':>6} {'words':>9} {'build+extract':>14} {'ukkonen':>12}")
    for fraction in (0.25, 0.5, 1.0):
        r = run_worker(args, depths[-1], fraction, trie=False)
        scaling.append(r)
        print(f"{fraction:>6.0%} {r['words']:>9,} {_wc(r, 'total'):>14} {_wc(r, 'ukkonen_build'):>12}", flush=True)
    import numba
    import numpy

    result = {
        "benchmark": "suffix tree build + context extraction",
        "corpus": str(args.corpus),
        "repeats": args.repeats,
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "commit": git_commit(),
        "commit_dirty": git_dirty(),
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
        "comparison": comparison(runs),
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
