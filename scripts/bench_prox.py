"""Time one l-infinity tree proximal step against tree size (paper Figure 3).

Methods, on the same problem (kappa * sum_x eta_x ||w_subtree(x)||_inf, w >= 0):

- heap   : ``linf-tree``, Algorithm 4 (k-best pairing heaps), collapsed tree;
- pivot  : ``linf-tree-pivot``, Algorithm 3 (Bruckner's random pivots), collapsed tree;
- spams  : ``spams.proximalTree(regul='tree-linf', pos=True)`` on the expanded trie
           (SPAMS takes no counts), when ``import spams`` works (pip install spams-bin).

Shapes: ``pa-forest`` (PTB-like: a forest of n/160 trees grown by linear
preferential attachment, so heavy-tailed branching, with counts drawn like the PTB
order-5 parameter forest: P(c=1,2,3) = .67,.22,.11), ``random-recursive`` (one tree,
uniform attachment: deeper, ~ln n), ``deep`` (parent uniform among the previous 32
nodes: depth ~ n/16, the pivot's O(|T|^2) worst case of Table 1, not PTB-like), and
the real PTB order-5 parameter forest
(``SuffixTree.build(ptb.train, 4).param_parent()``, counts ``collapsed[param_node()]``),
and at order 12, when ../shared/corpora/ptb is there. Node ids are in creation order (parents first),
not post-order. Values are i.i.d. Exp(1), kappa = 0.05, weights = counts.

Every row checks heap == pivot (and SPAMS == heap on the trie) to 1e-9. Reports
medians of ``--repeats`` calls after one warm-up call; the structure is built once
(its time is reported separately). Writes benchmarks/prox.json, .md and .png.

    python scripts/bench_prox.py                       # 1e3 .. 1e7, ~5-10 minutes
    python scripts/bench_prox.py --sizes 1000,100000 --repeats 3 --out /tmp/prox
"""

from __future__ import annotations

import datetime
import json
import math
import os
import platform
import subprocess
import sys
import time
from pathlib import Path

import click
import numpy as np
from numba import njit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from suffixlm.corpora import shared_path  # noqa: E402

from suffixlm.penalties import ForestStructure, prox_inplace  # noqa: E402

KAPPA = 0.05
COUNT_PROBS = (0.67, 0.22, 0.11)


@njit(cache=True)
def _pa_forest(n, n_roots, seed):
    """Linear preferential attachment: half the time a uniform node, half the time
    the parent of a uniform non-root node (probability ~ number of children)."""
    np.random.seed(seed)
    parent = np.full(n, -1, dtype=np.int64)
    for x in range(n_roots, n):
        if x > n_roots and np.random.random() < 0.5:
            parent[x] = parent[n_roots + np.random.randint(x - n_roots)]
        else:
            parent[x] = np.random.randint(x)
    return parent


@njit(cache=True)
def _random_recursive(n, seed):
    np.random.seed(seed)
    parent = np.full(n, -1, dtype=np.int64)
    for x in range(1, n):
        parent[x] = np.random.randint(x)
    return parent


@njit(cache=True)
def _deep_random(n, window, seed):
    """Parent uniform among the previous ``window`` nodes: depth ~ 2n / window,
    the worst case of the pivot method (Table 1: O(|T|^2))."""
    np.random.seed(seed)
    parent = np.full(n, -1, dtype=np.int64)
    for x in range(1, n):
        parent[x] = x - 1 - np.random.randint(min(x, window))
    return parent


@njit(cache=True)
def _expand(parent, counts, values):
    """Trie of a collapsed forest, in pre-order (SPAMS' layout): node x becomes a
    chain of counts[x] trie nodes with its value. Returns (trie_parent, trie_values,
    bottom) with bottom[x] the trie id of the deepest node of x's chain."""
    n = parent.shape[0]
    n_children = np.zeros(n + 1, dtype=np.int64)
    for x in range(n):
        if parent[x] >= 0:
            n_children[parent[x] + 1] += 1
    for x in range(n):
        n_children[x + 1] += n_children[x]
    fill = n_children[:-1].copy()
    kids = np.empty(n, dtype=np.int64)
    roots = []
    for x in range(n):
        p = parent[x]
        if p < 0:
            roots.append(x)
        else:
            kids[fill[p]] = x
            fill[p] += 1
    m = 0
    for x in range(n):
        m += counts[x]
    trie_parent = np.empty(m, dtype=np.int64)
    trie_values = np.empty(m, dtype=np.float64)
    bottom = np.empty(n, dtype=np.int64)
    stack = np.empty(n, dtype=np.int64)
    above = np.empty(n, dtype=np.int64)  # trie parent of the chain top
    nxt = 0
    for r in roots:
        top = 0
        stack[0] = r
        above[0] = -1
        while top >= 0:
            x = stack[top]
            up = above[top]
            top -= 1
            for k in range(counts[x]):
                trie_parent[nxt] = up
                trie_values[nxt] = values[x]
                up = nxt
                nxt += 1
            bottom[x] = up
            for j in range(n_children[x + 1] - 1, n_children[x] - 1, -1):
                top += 1
                stack[top] = kids[j]
                above[top] = up
    return trie_parent, trie_values, bottom


def spams_call(trie_parent, trie_values):
    """A callable running SPAMS on a pre-ordered trie (one group per node, weight 1)."""
    import scipy.sparse as ssp
    import spams

    m = trie_parent.shape[0]
    roots = np.flatnonzero(trie_parent < 0)
    if roots.shape[0] == 1:
        own = np.arange(m, dtype=np.int32)
        n_own = np.ones(m, dtype=np.int32)
        eta = np.ones(m)
        rows = np.arange(1, m)
        cols = trie_parent[1:]
        size = m
    else:  # virtual root group 0 without variables, weight 0 (trie node k -> group k + 1)
        own = np.concatenate([[0], np.arange(m)]).astype(np.int32)
        n_own = np.concatenate([[0], np.ones(m)]).astype(np.int32)
        eta = np.concatenate([[0.0], np.ones(m)])
        rows = np.arange(1, m + 1)
        cols = trie_parent + 1
        cols[trie_parent < 0] = 0
        size = m + 1
    groups = ssp.csc_matrix((np.ones(rows.shape[0], dtype=bool), (rows, cols)), shape=(size, size))
    tree = {"eta_g": eta, "groups": groups, "own_variables": own, "N_own_variables": n_own}
    u = np.asfortranarray(trie_values.reshape(-1, 1))

    def run():
        return spams.proximalTree(u, tree, lambda1=KAPPA, regul="tree-linf", pos=True,
                                  numThreads=1)[:, 0]

    return run


def predicted(history, n):
    """Time per call at size n extrapolated from the last two sizes (power law,
    exponent >= 1), or n log n from the last one."""
    if not history:
        return 0.0
    n2, t2 = history[-1]
    exponent = 1.0
    if len(history) >= 2:
        n1, t1 = history[-2]
        exponent = max(1.0, math.log(t2 / t1) / math.log(n2 / n1))
    return t2 * (n / n2) ** exponent * math.log(n) / math.log(n2)


def timed(fn, repeats):
    fn()  # warm-up (numba compilation, caches)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def make_shape(shape, n, seed):
    rng = np.random.default_rng(seed)
    if shape.startswith("ptb-order"):
        from suffixlm.corpus import load_training_corpus
        from suffixlm.suffixtree import SuffixTree

        corpus = load_training_corpus(shared_path("corpora", "ptb", "ptb.train.txt"))
        tree = SuffixTree.build(corpus, int(shape[len("ptb-order"):]) - 1)
        parent = np.ascontiguousarray(tree.param_parent(), dtype=np.int64)
        counts = np.ascontiguousarray(tree.collapsed[tree.param_node()], dtype=np.int64)
    else:
        if shape == "pa-forest":
            parent = _pa_forest(n, max(1, n // 160), seed)
        elif shape == "deep":
            parent = _deep_random(n, 32, seed)
        else:
            parent = _random_recursive(n, seed)
        counts = rng.choice(np.arange(1, 4), size=n, p=COUNT_PROBS).astype(np.int64)
    values = rng.exponential(size=parent.shape[0])
    return parent, counts, values


def git_commit():
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                              text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


@click.command()
@click.option("--sizes", default="1000,10000,100000,1000000,10000000", show_default=True,
              help="Comma-separated node counts of the synthetic trees.")
@click.option("--shapes", default="pa-forest,random-recursive,deep,ptb-order5,ptb-order12",
              show_default=True,
              help="pa-forest, random-recursive, deep, ptb-orderK (the PTB parameter forest at order K).")
@click.option("--repeats", default=5, show_default=True, help="Timed calls per cell (median).")
@click.option("--budget", default=20.0, show_default=True,
              help="Skip pivot / SPAMS at a size when their predicted time per call exceeds this (s).")
@click.option("--spams/--no-spams", "use_spams", default=True, show_default=True)
@click.option("--out", default=str(ROOT / "benchmarks" / "prox"), show_default=True,
              help="Output path without extension (.json, .md, .png written).")
@click.option("--replot", is_flag=True, help="Only rewrite .md and .png from the existing .json.")
def main(sizes, shapes, repeats, budget, use_spams, out, replot):
    """Benchmark the linf-tree proximal step: heap-merge vs random pivot vs SPAMS."""
    if replot:
        data = json.loads(Path(out).with_suffix(".json").read_text())
        _write_atomic(Path(out).with_suffix(".md"), markdown(data["meta"], data["rows"]))
        plot(data["rows"], Path(out).with_suffix(".png"))
        return
    sizes = [int(float(s)) for s in sizes.split(",")]
    shapes = shapes.split(",")
    if use_spams:
        try:
            import spams  # noqa: F401
        except ImportError:
            click.echo("spams not importable: SPAMS column skipped")
            use_spams = False
    if shared_path("corpora", "ptb", "ptb.train.txt") is None:
        for shape in [s for s in shapes if s.startswith("ptb-order")]:
            click.echo(f"shared/corpora/ptb/ptb.train.txt not found: {shape} row skipped")
            shapes.remove(shape)
    started = time.time()
    load_before = os.getloadavg()
    rows = []
    header = (f"{'shape':<17}{'nodes':>10}{'trie':>10} {'method':<7}{'median s':>11}{'min s':>11}"
              f"{'ns/node':>9}  check")
    click.echo(header)
    for shape in shapes:
        skip = {}
        cells = [None] if shape.startswith("ptb-order") else sizes
        last = {}
        history = {}
        for n in cells:
            parent, counts, values = make_shape(shape, n, seed=1 + (n or 0) % 1000)
            n = parent.shape[0]
            t0 = time.perf_counter()
            structure = ForestStructure.from_parent(parent, counts)
            build_s = time.perf_counter() - t0
            mean_subtree = float(structure.subtree_size.mean())
            results = {}
            methods = ["heap", "pivot"] + (["spams"] if use_spams else [])
            trie = None
            for method in methods:
                if method != "heap" and predicted(history.get(method, []), n) > budget:
                    skip[method] = True
                if skip.get(method):
                    click.echo(f"{shape:<17}{n:>10}{'':>10} {method:<7}{'skipped (budget)':>20}")
                    rows.append({"shape": shape, "nodes": n, "method": method, "skipped": True})
                    continue
                if method == "spams":
                    if trie is None:
                        trie = _expand(parent, counts, values)
                    run_spams = spams_call(trie[0], trie[1])
                    out_vals = {}

                    def fn():
                        out_vals["w"] = run_spams()
                else:
                    name = "linf-tree" if method == "heap" else "linf-tree-pivot"
                    w = np.empty_like(values)

                    def fn(name=name, w=w):
                        w[:] = values
                        prox_inplace(name, w, structure, KAPPA, nonneg=True)
                times = timed(fn, repeats)
                med = float(np.median(times))
                last[method] = (n, med)
                history.setdefault(method, []).append((n, med))
                if method == "spams":
                    results[method] = out_vals["w"]
                else:
                    results[method] = w.copy()
                check = {}
                if method == "pivot":
                    check["max_abs_pivot_minus_heap"] = float(np.abs(results["pivot"] - results["heap"]).max())
                if method == "spams":
                    heap_on_trie = trie[1].copy()
                    trie_structure = ForestStructure.from_parent(trie[0])
                    prox_inplace("linf-tree", heap_on_trie, trie_structure, KAPPA, nonneg=True)
                    check["max_abs_spams_minus_heap_on_trie"] = float(np.abs(results["spams"] - heap_on_trie).max())
                    check["max_abs_heap_trie_minus_heap_tree"] = float(
                        np.abs(heap_on_trie[trie[2]] - results["heap"]).max())
                rows.append({"shape": shape, "nodes": n,
                             "trie_nodes": int(counts.sum()), "method": method,
                             "median_s": med, "min_s": float(min(times)), "times_s": times,
                             "ns_per_node": 1e9 * med / n,
                             "structure_build_s": build_s, "mean_subtree_size": mean_subtree,
                             "check": check})
                click.echo(f"{shape:<17}{n:>10}{int(counts.sum()):>10} {method:<7}{med:>11.4g}"
                           f"{min(times):>11.4g}{1e9 * med / n:>9.1f}  " + ", ".join(f"{k} {v:.1e}" for k, v in check.items()))
                if any(v > 1e-9 for v in check.values()):
                    raise SystemExit(f"{shape} n={n} {method}: results differ: {check}")
            if "heap" in results and "pivot" in results:
                click.echo(f"{'':<17}{'':>10}{'':>10} pivot/heap = "
                           f"{last['pivot'][1] / last['heap'][1]:.1f}x   "
                           f"(mean subtree size {mean_subtree:.2f}, structure build {build_s:.2f} s)")
    meta = {
        "command": " ".join([Path(sys.executable).name] + sys.argv),
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "git_commit": git_commit(),
        "platform": platform.platform(),
        "processor": platform.processor(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "numba": __import__("numba").__version__,
        "load_average_before": load_before,
        "load_average_after": os.getloadavg(),
        "kappa": KAPPA,
        "repeats": repeats,
        "wall_s": time.time() - started,
    }
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    _write_atomic(out.with_suffix(".json"), json.dumps({"meta": meta, "rows": rows}, indent=1))
    _write_atomic(out.with_suffix(".md"), markdown(meta, rows))
    plot(rows, out.with_suffix(".png"))
    click.echo(f"wrote {out}.json, .md, .png in {meta['wall_s']:.0f} s")


def _write_atomic(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def markdown(meta, rows) -> str:
    lines = [
        "# linf-tree proximal step: heap-merge (Algorithm 4) vs random pivot (Algorithm 3) vs SPAMS",
        "",
        f"`{meta['command']}` — {meta['date']}, commit {meta['git_commit']}, {meta['platform']}, "
        f"{meta['cpu_count']} CPUs, load average {meta['load_average_before'][0]:.1f} before / "
        f"{meta['load_average_after'][0]:.1f} after (shared machine), kappa = {meta['kappa']}, "
        f"median of {meta['repeats']} calls after a warm-up.",
        "",
        "Seconds per call: median (min) over the calls. Ratios of medians. Node ids in creation "
        "order; SPAMS runs on the expanded trie (it takes no counts).",
        "",
        "| shape | nodes | trie nodes | mean subtree | heap s | pivot s | SPAMS s (trie) | pivot / heap | SPAMS / heap |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    keys = []
    for r in rows:
        if (r["shape"], r["nodes"]) not in keys:
            keys.append((r["shape"], r["nodes"]))
    for shape, n in keys:
        cell = {r["method"]: r for r in rows if r["shape"] == shape and r["nodes"] == n}
        heap = cell.get("heap", {})

        def t(m):
            r = cell.get(m)
            if r is None or r.get("skipped"):
                return "—"
            return f"{r['median_s']:.3g} ({r['min_s']:.3g})"

        def ratio(m):
            r = cell.get(m)
            if r is None or r.get("skipped") or not heap:
                return "—"
            return f"{r['median_s'] / heap['median_s']:.1f}×"

        lines.append(f"| {shape} | {n:,} | {heap.get('trie_nodes', 0):,} | "
                     f"{heap.get('mean_subtree_size', float('nan')):.2f} | {t('heap')} | {t('pivot')} | "
                     f"{t('spams')} | {ratio('pivot')} | {ratio('spams')} |")
    lines += ["", "— : not run (SPAMS not installed, or skipped because the predicted time "
              "exceeded the budget).", ""]
    add = meta.get("addendum")
    if add:  # cells measured in a separate, longer run and merged into the JSON
        lines += [f"Addendum ({add['rows']}): `{add['command']}` — {add['date']}, commit {add['git_commit']}, "
                  f"load average {add['load_average_before'][0]:.1f} before / {add['load_average_after'][0]:.1f} "
                  "after; rows marked `\"run\": \"deep-1e6 addendum\"` in the JSON.", ""]
    return "\n".join(lines)


def plot(rows, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    shapes = [s for s in dict.fromkeys(r["shape"] for r in rows)]
    fig, ax = plt.subplots(figsize=(9.5, 5))
    styles = {"heap": "o-", "pivot": "s--", "spams": "^:"}
    colors = {shape: f"C{k}" for k, shape in enumerate(shapes)}
    for shape in shapes:
        for method, style in styles.items():
            pts = sorted((r["nodes"], r["median_s"]) for r in rows
                         if r["shape"] == shape and r["method"] == method and not r.get("skipped"))
            if pts:
                x, y = zip(*pts)
                ax.loglog(x, y, style, color=colors[shape], label=f"{method} — {shape}",
                          markersize=8 if shape.startswith("ptb-order") else 5)
    ax.set_xlabel("nodes of the (collapsed) tree")
    ax.set_ylabel("seconds per proximal step (median)")
    ax.set_title("linf-tree prox: k-best heap vs random pivot vs SPAMS (trie)")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    tmp = path.with_name(path.stem + ".tmp.png")
    fig.savefig(tmp, dpi=120)
    os.replace(tmp, path)


if __name__ == "__main__":
    main()
