#!/usr/bin/env python3
"""First- against second-order CRFs on CoNLL-2000 (NP chunking and full chunking), with
python-crfsuite (first order) in the same run.

    python scripts/bench_second_order.py [--runs 3] [--busy] [--crfsuite-python PY]

Tasks:

- ``np``: NP chunking (``scripts/np_chunking.py``: B-NP / I-NP kept, every other chunk
  tag O), Sha & Pereira's predicates (``corpora/patterns/sha-pereira.pat``): order 2 with
  it as shipped, order 1 with the same file less its ``T`` line;
- ``full``: the 23 tags of the full task, ``corpora/patterns/chunk.pat`` at order 1 and at
  order 2 (which adds the pure label-triple pattern ``T``);
- ``rich``: the full task with ``corpora/patterns/chunk-rich.pat`` (chunk.pat and more
  predicates: word and tag conjunctions, suffixes, capitals, a wider tag window), both
  orders; no CRFsuite run (its attributes here are made from %x commands only);
- ``iobes``: ``rich`` trained with ``tags="iobes"`` (``--tags iobes``: the IOB2 labels
  rewritten as IOBES for training, the labellings given back in IOB2; ``crf.tagschemes``).

The training parameters of each task are chosen first, among ``GRID``, by the sum of the
two orders' F1 on a development split (the last tenth of the training sentences, trained
on the other nine tenths): both orders then train with the same parameters. The test set
is read only by the timed runs. Every run is a fresh process (its
own peak RSS, ``ru_maxrss``), the systems alternate within each round, and the tables give
medians. CRFsuite runs in a process that imports only the standard library and
pycrfsuite (``--crfsuite-python``: a Python whose environment has python-crfsuite and
nothing of ours), with L-BFGS and the same penalty (c1 = rho1, c2 = rho2 / 2) on the
unigram attributes of the same patterns (its own label transitions). ``--busy`` adds two busy loops beside
every run. Writes benchmarks/second_order.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PATTERNS = ROOT / "corpora" / "patterns"

#: (name, CRF parameters) tried on the development split
GRID = [("owlqn rho1 0.5 rho2 1e-4 (defaults)", {}),
        ("owlqn rho1 0.1 rho2 1", {"rho1": 0.1, "rho2": 1.0}),
        ("lbfgs rho2 0.1", {"algorithm": "lbfgs", "rho1": 0.0, "rho2": 0.1})]


# ---------------------------------------------------------------------- data (no numpy, no crf)
def read_conll(path):
    seqs, cur = [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if not parts:
                if cur:
                    seqs.append(cur)
                cur = []
            else:
                cur.append(parts)
    if cur:
        seqs.append(cur)
    return [[r[:-1] for r in s] for s in seqs], [[r[-1] for r in s] for s in seqs]


def task_data(task, corpus, split):
    """(X, y, X_eval, y_eval): split "dev" = nine tenths of train and its last tenth; "test"."""
    sys.path.insert(0, str(ROOT / "scripts"))
    from np_chunking import np_labels

    X, y = read_conll(Path(corpus) / "train.txt")
    if split == "dev":
        cut = len(X) * 9 // 10
        Xe, ye = X[cut:], y[cut:]
        X, y = X[:cut], y[:cut]
    else:
        Xe, ye = read_conll(Path(corpus) / "test.txt")
    if task == "np":
        y, ye = np_labels(y), np_labels(ye)
    return X, y, Xe, ye


def chunks(seq):
    """conlleval's chunks (IOB2) of a label sequence: {(start, end, type)}."""
    out, start, typ = set(), None, None
    for i, tag in enumerate(list(seq) + ["O"]):
        b, _, t = tag.partition("-")
        if start is not None and (b in ("B", "O") or t != typ):
            out.add((start, i, typ))
            start = None
        if b == "B" or (b == "I" and start is None):
            start, typ = i, t
    return out


def chunk_f1(gold, pred):
    """conlleval's F1 (IOB2 chunks; a chunk is right when its type and both ends are)."""
    tp = fp = fn = 0
    for g, p in zip(gold, pred):
        cg, cp = chunks(g), chunks(p)
        tp += len(cg & cp)
        fp += len(cp - cg)
        fn += len(cg - cp)
    prec = 100.0 * tp / max(tp + fp, 1)
    rec = 100.0 * tp / max(tp + fn, 1)
    return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


#: the pattern file of each task
TASK_PATTERNS = {"np": "sha-pereira.pat", "full": "chunk.pat", "rich": "chunk-rich.pat", "iobes": "chunk-rich.pat"}
#: the CRF parameters of a task besides the selected ones
TASK_PARAMS = {"iobes": {"tags": "iobes"}}
#: the tasks whose patterns CRFsuite's attributes are made from (%x commands only)
CRFSUITE_TASKS = ("np", "full")


def patterns_of(task, order):
    """The pattern lines of (task, order): order 1 drops a lone T line (order 2 adds it)."""
    lines = (PATTERNS / TASK_PATTERNS[task]).read_text(encoding="utf-8").splitlines()
    return [ln for ln in lines if ln.strip() != "T"] if order == 1 else lines


def pattern_digest(task) -> str:
    """SHA-256 of the task's pattern file (and of its own parameters, if any): development
    scores are reused only for the same file and parameters."""
    import hashlib

    digest = hashlib.sha256((PATTERNS / TASK_PATTERNS[task]).read_bytes())
    if task in TASK_PARAMS:
        digest.update(json.dumps(TASK_PARAMS[task], sort_keys=True).encode())
    return digest.hexdigest()


def crfsuite_penalty(params):
    """CRFsuite's (c1, c2) of our parameters: it minimises -log L + c1 |w|_1 + c2 |w|^2,
    we -log L + rho1 |w|_1 + rho2 / 2 |w|^2 (CRF's defaults rho1 0.5, rho2 1e-4)."""
    return float(params.get("rho1", 0.5)), float(params.get("rho2", 1e-4)) / 2


def _rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------- workers
def worker_ours(args) -> dict:
    sys.path.insert(0, str(ROOT))
    from crf import CRF

    X, y, Xe, ye = task_data(args.task, args.corpus, args.split)
    params = {**json.loads(args.params), **TASK_PARAMS.get(args.task, {})}
    lines = patterns_of(args.task, args.order)
    t0 = time.perf_counter()
    m = CRF(patterns=lines, order=args.order, **params).fit(X, y)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    pred = m.predict(Xe)
    label_s = time.perf_counter() - t0
    return {"f1": chunk_f1(ye, pred), "train_seconds": train_s, "label_seconds": label_s, "iterations": m.n_iter_,
            "features": m.n_features_, "active_features": m.n_active_features_,
            "pairs": int(m.space_.allowed.sum()) if m.space_.allowed is not None else m.space_.n_labels ** 2}


def _attributes(lines, X):
    """The unigram attributes of %x-only pattern lines (Wapiti's padding _x-1 ... _x+1)."""
    import re

    cmd = re.compile(r"%x\[\s*([+-]?\d+)\s*,\s*(\d+)\s*\]")
    pats = [ln.strip() for ln in lines if ln.strip() and not ln.strip().startswith("#")
            and ln.strip()[0] in "uU*"]
    parsed = []
    for p in pats:
        pieces, cmds, pos = [], [], 0
        for m in cmd.finditer(p):
            pieces.append(p[pos:m.start()])
            cmds.append((int(m.group(1)), int(m.group(2))))
            pos = m.end()
        pieces.append(p[pos:])
        parsed.append((pieces, cmds))
    out = []
    for seq in X:
        T = len(seq)

        def val(i, c):
            if i < 0:
                return f"_x{i}"
            if i >= T:
                return f"_x+{i - T + 1}"
            return seq[i][c]

        rows = []
        for t in range(T):
            a = []
            for pieces, cmds in parsed:
                s = pieces[0]
                for (off, col), piece in zip(cmds, pieces[1:]):
                    s += val(t + off, col) + piece
                a.append(s)
            rows.append(a)
        out.append(rows)
    return out


def worker_crfsuite(args) -> dict:
    import pycrfsuite

    X, y, Xe, ye = task_data(args.task, args.corpus, args.split)
    lines = patterns_of(args.task, 1)
    model = f"/tmp/bench_second_order_{os.getpid()}.crfsuite"
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    for a, lab in zip(_attributes(lines, X), y):
        trainer.append(a, lab)
    trainer.select("lbfgs")
    c1, c2 = crfsuite_penalty(json.loads(args.params))
    trainer.set_params({"c1": c1, "c2": c2})
    trainer.train(model)
    train_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    tagger = pycrfsuite.Tagger()
    tagger.open(model)
    pred = [tagger.tag(a) for a in _attributes(lines, Xe)]
    label_s = time.perf_counter() - t0
    info = trainer.logparser.last_iteration
    os.unlink(model)
    return {"f1": chunk_f1(ye, pred), "train_seconds": train_s, "label_seconds": label_s,
            "iterations": len(trainer.logparser.iterations), "active_features": int(info.get("active_features", 0))}


# ---------------------------------------------------------------------- driver
def run(args, kind, task, split, order=1, params=None, python=None) -> dict:
    cmd = [python or sys.executable, __file__, "--worker", kind, "--task", task, "--split", split,
           "--order", str(order), "--params", json.dumps(params or {}), "--corpus", str(args.corpus)]
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"{kind} {task} order {order} failed")
    out = json.loads(res.stdout.strip().splitlines()[-1])
    out["process_seconds"] = time.perf_counter() - t0
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tasks", default=",".join(TASK_PATTERNS))
    ap.add_argument("--busy", action="store_true", help="two busy loops beside every timed run")
    ap.add_argument("--crfsuite-python", default=None,
                    help="a Python with python-crfsuite (default: skip CRFsuite if this one lacks it)")
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--select", default=None, help="JSON {task: grid index}: skip the selection")
    ap.add_argument("--worker", choices=["ours", "crfsuite"], default=None)
    ap.add_argument("--task", default="np")
    ap.add_argument("--split", default="test")
    ap.add_argument("--order", type=int, default=1)
    ap.add_argument("--params", default="{}")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "second_order"))
    args = ap.parse_args()
    if args.worker:
        out = (worker_ours if args.worker == "ours" else worker_crfsuite)(args)
        out["max_rss_mb"] = _rss_mb()
        print(json.dumps(out))
        return
    sys.path.insert(0, str(ROOT / "scripts"))
    from _bench_common import busy_loops, machine_info

    if args.corpus is None:
        sys.path.insert(0, str(ROOT))
        from suffixlm.corpora import shared_path

        args.corpus = shared_path("corpora", "conll2000")
        if args.corpus is None:
            print("skipped: ../shared/corpora/conll2000 not found; pass --corpus")
            return
    py = args.crfsuite_python
    if py is None:
        try:
            import pycrfsuite  # noqa: F401 (is it here?)

            py = sys.executable
        except ImportError:
            print("python-crfsuite not found: CRFsuite skipped (pass --crfsuite-python)")
    tasks = args.tasks.split(",")
    # warm-up: numba compiles or loads the kernels of both orders, untimed
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); from crf import CRF; "
                    "X=[[['a','b']]*3]*4; y=[['x','y','x']]*4; "
                    "[CRF(patterns=['u:%%x[0,0]','B'], order=o, max_iter=2).fit(X, y).predict(X) for o in (1, 2)]"
                    % str(ROOT)], check=True)
    chosen = json.loads(args.select) if args.select else {}
    selection = {}
    out = Path(args.out + ("_busy" if args.busy else ""))
    earlier = out.with_suffix(".json")
    before = json.loads(earlier.read_text()) if earlier.exists() else None  # the file this run replaces
    if chosen and before is not None:  # the development scores of the tasks chosen before
        selection = {t: v for t, v in before.get("selection", {}).items()
                     if t in chosen and before["chosen"].get(t) == GRID[chosen[t]][0]
                     and before.get("patterns", {}).get(t) == pattern_digest(t)}  # same file, same scores
    for task in tasks:
        if task in chosen:
            continue
        scores = [0.0] * len(GRID)
        for order in (1, 2):
            for i, (name, params) in enumerate(GRID):
                r = run(args, "ours", task, "dev", order, params)
                scores[i] += r["f1"]
                selection.setdefault(task, {}).setdefault(str(order), []).append(
                    {"params": name, "dev_f1": r["f1"], "train_seconds": r["train_seconds"]})
                print(f"select {task} order {order} {name}: dev F1 {r['f1']:.2f} ({r['train_seconds']:.1f}s)",
                      flush=True)
        chosen[task] = max(range(len(GRID)), key=lambda i: scores[i])
    results = {task: {"order 1": [], "order 2": [], "crfsuite": []} for task in tasks}
    busy = busy_loops(2) if args.busy else []
    try:
        for r in range(args.runs):
            for task in tasks:
                for order in (1, 2):
                    res = run(args, "ours", task, "test", order, GRID[chosen[task]][1])
                    results[task][f"order {order}"].append(res)
                    print(f"run {r + 1} {task} order {order}: F1 {res['f1']:.2f} train {res['train_seconds']:.1f}s "
                          f"label {res['label_seconds']:.2f}s rss {res['max_rss_mb']:.0f} MB "
                          f"iters {res['iterations']}", flush=True)
                if py and task in CRFSUITE_TASKS:
                    res = run(args, "crfsuite", task, "test", params=GRID[chosen[task]][1], python=py)
                    results[task]["crfsuite"].append(res)
                    print(f"run {r + 1} {task} crfsuite: F1 {res['f1']:.2f} train {res['train_seconds']:.1f}s "
                          f"label {res['label_seconds']:.2f}s rss {res['max_rss_mb']:.0f} MB", flush=True)
    finally:
        for p in busy:
            p.kill()
    load = os.getloadavg()[0]
    med = {task: {k: {key: statistics.median(x[key] for x in v) for key in v[0] if isinstance(v[0][key], (int, float))}
                  for k, v in res_t.items() if v} for task, res_t in results.items()}
    payload = {"machine": machine_info(), "busy_loops": len(busy), "load_average_end": load, "runs": args.runs,
               "grid": [name for name, _ in GRID], "selection": selection,
               "chosen": {t: GRID[i][0] for t, i in chosen.items()},
               "results": results, "medians": med, "patterns": {t: pattern_digest(t) for t in tasks}}
    keep_earlier_tasks(payload, before, tasks)
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    write_markdown(out.with_suffix(".md"), payload)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


def keep_earlier_tasks(payload, before: dict | None, tasks) -> None:
    """Carry the tasks of ``before`` (the payload of the file this run replaces, or None)
    that this run did not measure into ``payload``, each with the run it came from
    (``payload["earlier"]``): rerunning one task keeps the others' tables, marked with
    their own commit and date."""
    if before is None:
        return
    for task, med in before.get("medians", {}).items():
        if task in tasks or task not in TASK_PATTERNS:
            continue
        src = before.get("earlier", {}).get(task) or {
            "machine": before["machine"], "runs": before["runs"], "load_average_end": before["load_average_end"],
            "busy_loops": before["busy_loops"]}
        payload.setdefault("earlier", {})[task] = src
        payload["medians"][task] = med
        payload["results"][task] = before["results"][task]
        for key in ("chosen", "selection", "patterns"):
            if task in before.get(key, {}):
                payload[key][task] = before[key][task]


def in_task_order(items):
    """(task, value) pairs in the order of TASK_PATTERNS."""
    return sorted(items, key=lambda kv: list(TASK_PATTERNS).index(kv[0]))


def write_markdown(path, p) -> None:
    m = p["machine"]
    names = {t: f"{'NP' if t == 'np' else 'full'} chunking ({f}{', tags iobes' if t == 'iobes' else ''})"
             for t, f in TASK_PATTERNS.items()}
    lines = ["# Second-order CRFs: CoNLL-2000 NP chunking and full chunking", "",
             f"Command: `{m['command']}`  ",
             f"Date: {m['date']}, commit {m['commit']}, {m['platform']}, {m['cpu_count']} CPUs, "
             f"{'two busy loops beside every run, ' if p['busy_loops'] else ''}load average at the end "
             f"{p['load_average_end']:.1f}.  ",
             f"Medians of {p['runs']} runs, each a fresh process; the systems alternate within each round. "
             "Ours at numba's default thread count (all cores); CRFsuite single-threaded (it has no "
             "threads), in a process that loads only pycrfsuite, L-BFGS with the same penalty as ours (c1 = rho1, "
             "c2 = rho2 / 2), the unigram attributes of the same patterns (its own label transitions; tasks "
             f"{', '.join(CRFSUITE_TASKS)}: their patterns are %x commands only).", "",
             "Training parameters of each task (the same for both orders), chosen by F1 on a development split "
             "(train on the first nine tenths of the training sentences, score the last tenth; the test set is "
             "not read):", ""]
    for task, by_order in in_task_order(p["selection"].items()):
        for order, rows in by_order.items():
            cells = ", ".join(f"{r['params']}: {r['dev_f1']:.2f}" for r in rows)
            lines.append(f"- {names[task]}, order {order}: {cells}")
    for task, c in in_task_order(p["chosen"].items()):
        how = ("the largest sum of the two orders' F1" if task in p["selection"] else
               "not selected on this task: given with --select")
        lines.append(f"- chosen for {names[task]} ({how}): {c}")
    lines += [""]
    for task, res in in_task_order(p["medians"].items()):
        lines += [f"## {names[task]}", ""]
        if task in p.get("earlier", {}):
            e = p["earlier"][task]
            lines += [f"Kept from an earlier run of this script (not rerun with the command above): commit "
                      f"{e['machine']['commit']}, {e['machine']['date']}, medians of {e['runs']} runs, "
                      f"{'two busy loops beside every run, ' if e['busy_loops'] else ''}load average at its end "
                      f"{e['load_average_end']:.1f}; its command: `{e['machine']['command']}`.", ""]
        lines += ["| | F1 | train (s) | peak RSS (MB) | label test set (s) | iterations | "
                  "features (active) |", "|---|---|---|---|---|---|---|"]
        for k, v in res.items():
            feats = f"{v['features']:,.0f} ({v['active_features']:,.0f})" if "features" in v else \
                f"({v['active_features']:,.0f})"
            lines.append(f"| {k} | {v['f1']:.2f} | {v['train_seconds']:.1f} | {v['max_rss_mb']:.0f} | "
                         f"{v['label_seconds']:.2f} | {v['iterations']:.0f} | {feats} |")
        if "order 1" in res and "order 2" in res:
            a, b = res["order 1"], res["order 2"]
            lines += ["", f"Order 2 / order 1: train {b['train_seconds'] / a['train_seconds']:.2f}x, peak RSS "
                          f"{b['max_rss_mb'] / a['max_rss_mb']:.2f}x, labelling {b['label_seconds'] / a['label_seconds']:.2f}x, "
                          f"F1 {b['f1'] - a['f1']:+.2f}."]
        lines += [""]
    Path(path).write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
