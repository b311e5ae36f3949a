#!/usr/bin/env python3
"""CRFsuite's five algorithms by their names: ``crf.CRF(algorithm=...)`` against
python-crfsuite's same algorithm, on CoNLL-2000 chunking with tutorial-style feature dicts.

Data: ../shared/corpora/conll2000 (train.txt, test.txt: ``word POS chunk``). Features:
sklearn-crfsuite's tutorial ``word2features`` (word, its lower case, suffixes, shape
tests, POS and its prefix, the same of the neighbours, BOS / EOS), written out here so
that the CRFsuite worker imports nothing of ours. Each algorithm runs with the same
sklearn-crfsuite parameters on both sides (``ALGORITHMS``): ours as
``crf.CRF(algorithm, **params)``, CRFsuite as ``pycrfsuite.Trainer`` with
``set_params(params)`` and ``feature.possible_transitions`` (sklearn-crfsuite's
``all_possible_transitions=True``). CRFsuite keeps only the (attribute, label) pairs seen
in training (its default ``all_possible_states=False``); ours has a weight for every pair.

Every run is a fresh process that loads only what its system needs (CRFsuite's: a Python
with python-crfsuite only, ``--crfsuite-python``); the systems alternate within each
round; the tables give medians of ``--runs``. Train time counts the feature dicts'
generation and the fit; label time the test set's dicts and the labelling. F1 is
conlleval's on the chunks.

    python scripts/bench_crfsuite_algorithms.py --crfsuite-python VENV/bin/python [--runs 3] [--busy]

Writes benchmarks/crfsuite_algorithms.json and .md (``_busy`` with two busy loops beside
every run).
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
sys.path.insert(0, str(ROOT / "scripts"))

from bench_second_order import _rss_mb, busy_loops, chunk_f1, read_conll  # noqa: E402 (no numpy, no crf)

#: algorithm -> sklearn-crfsuite parameters (the tutorial's for lbfgs, CRFsuite's defaults otherwise)
ALGORITHMS = {
    "lbfgs": {"c1": 0.1, "c2": 0.1, "max_iterations": 100},
    "l2sgd": {"c2": 1.0, "max_iterations": 100},
    "ap": {"max_iterations": 100},
    "pa": {"max_iterations": 100},
    "arow": {"max_iterations": 100},
}


def word2features(sent, i):
    """sklearn-crfsuite's tutorial features of token i of [(word, POS), ...]."""
    word, postag = sent[i][0], sent[i][1]
    f = {"bias": 1.0, "word.lower()": word.lower(), "word[-3:]": word[-3:], "word[-2:]": word[-2:],
         "word.isupper()": word.isupper(), "word.istitle()": word.istitle(), "word.isdigit()": word.isdigit(),
         "postag": postag, "postag[:2]": postag[:2]}
    if i > 0:
        w1, p1 = sent[i - 1][0], sent[i - 1][1]
        f.update({"-1:word.lower()": w1.lower(), "-1:word.istitle()": w1.istitle(),
                  "-1:word.isupper()": w1.isupper(), "-1:postag": p1, "-1:postag[:2]": p1[:2]})
    else:
        f["BOS"] = True
    if i < len(sent) - 1:
        w1, p1 = sent[i + 1][0], sent[i + 1][1]
        f.update({"+1:word.lower()": w1.lower(), "+1:word.istitle()": w1.istitle(),
                  "+1:word.isupper()": w1.isupper(), "+1:postag": p1, "+1:postag[:2]": p1[:2]})
    else:
        f["EOS"] = True
    return f


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]


def worker(args) -> dict:
    X, y = read_conll(Path(args.corpus) / "train.txt")
    Xe, ye = read_conll(Path(args.corpus) / "test.txt")
    params = ALGORITHMS[args.algorithm]
    t0 = time.perf_counter()
    feats = [sent2features(s) for s in X]
    if args.worker == "ours":
        sys.path.insert(0, str(ROOT))
        from crf import CRF

        model = CRF(args.algorithm, all_possible_transitions=True, **params).fit(feats, y)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        pred = model.predict([sent2features(s) for s in Xe])
        label_s = time.perf_counter() - t0
        info = {"iterations": model.n_iter_, "features": int(model.n_features_),
                "active_features": int(model.n_active_features_)}
    else:
        import pycrfsuite

        path = f"/tmp/bench_crfsuite_algorithms_{os.getpid()}.crfsuite"
        trainer = pycrfsuite.Trainer(algorithm=args.algorithm, verbose=False)
        for xs, ys in zip(feats, y):
            trainer.append(xs, ys)
        trainer.set_params({**params, "feature.possible_transitions": True})
        trainer.train(path)
        train_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        tagger = pycrfsuite.Tagger()
        tagger.open(path)
        pred = [tagger.tag(sent2features(s)) for s in Xe]
        label_s = time.perf_counter() - t0
        last = trainer.logparser.last_iteration
        info = {"iterations": len(trainer.logparser.iterations),
                "active_features": int(last.get("active_features", 0) or 0)}
        os.unlink(path)
    return {"f1": chunk_f1(ye, pred), "train_seconds": train_s, "label_seconds": label_s, **info}


def run(args, system, algorithm, python) -> dict:
    cmd = [python, __file__, "--worker", system, "--algorithm", algorithm, "--corpus", str(args.corpus)]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode:
        sys.stderr.write(res.stderr)
        raise SystemExit(f"{system} {algorithm} failed")
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--algorithms", default=",".join(ALGORITHMS))
    ap.add_argument("--busy", action="store_true", help="two busy loops beside every run")
    ap.add_argument("--crfsuite-python", default=None, help="a Python with python-crfsuite only")
    ap.add_argument("--corpus", default=None)
    ap.add_argument("--worker", choices=["ours", "crfsuite"], default=None)
    ap.add_argument("--algorithm", default="lbfgs")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "crfsuite_algorithms"))
    args = ap.parse_args()
    if args.worker:
        out = worker(args)
        out["max_rss_mb"] = _rss_mb()
        print(json.dumps(out))
        return
    from _bench_common import machine_info

    if args.corpus is None:
        sys.path.insert(0, str(ROOT))
        from suffixlm.corpora import shared_path

        args.corpus = shared_path("corpora", "conll2000")
        if args.corpus is None:
            print("skipped: ../shared/corpora/conll2000 not found; pass --corpus")
            return
    if args.crfsuite_python is None:
        raise SystemExit("pass --crfsuite-python: a Python with python-crfsuite and nothing of ours")
    algorithms = args.algorithms.split(",")
    # warm-up: numba compiles or loads the kernels, untimed
    subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, %r); from crf import CRF; "
                    "X=[[{'a': 'x'}, {'b': 1.5}]]*3; y=[['x', 'y']]*3; "
                    "[CRF(a, max_iterations=2).fit(X, y).predict(X) for a in %r]" % (str(ROOT), algorithms)],
                   check=True)
    results = {a: {"ours": [], "crfsuite": []} for a in algorithms}
    busy = busy_loops(2) if args.busy else []
    try:
        for r in range(args.runs):
            for a in algorithms:
                for system, python in (("ours", sys.executable), ("crfsuite", args.crfsuite_python)):
                    res = run(args, system, a, python)
                    results[a][system].append(res)
                    print(f"run {r + 1} {a} {system}: F1 {res['f1']:.2f} train {res['train_seconds']:.1f}s "
                          f"label {res['label_seconds']:.2f}s rss {res['max_rss_mb']:.0f} MB "
                          f"iters {res['iterations']}", flush=True)
    finally:
        for p in busy:
            p.kill()
    load = os.getloadavg()[0]
    med = {a: {s: {k: statistics.median(x[k] for x in v) for k in v[0] if isinstance(v[0][k], (int, float))}
               for s, v in by.items()} for a, by in results.items()}
    payload = {"machine": machine_info(), "busy_loops": len(busy), "load_average_end": load, "runs": args.runs,
               "params": {a: ALGORITHMS[a] for a in algorithms}, "results": results, "medians": med}
    out = Path(args.out + ("_busy" if args.busy else ""))
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    write_markdown(out.with_suffix(".md"), payload)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


def write_markdown(path, p) -> None:
    m = p["machine"]
    lines = ["# CRFsuite's algorithms: crf.CRF against python-crfsuite (CoNLL-2000, tutorial features)", "",
             f"Command: `{m['command']}`  ",
             f"Date: {m['date']}, commit {m['commit']}, {m['platform']}, {m['cpu_count']} CPUs, "
             f"{'two busy loops beside every run, ' if p['busy_loops'] else ''}load average at the end "
             f"{p['load_average_end']:.1f}. Medians of {p['runs']} fresh processes; the systems alternate.", "",
             "Both sides get the same sklearn-crfsuite parameters and all_possible_transitions=True. CRFsuite "
             "keeps only the (attribute, label) pairs seen in training; ours has every pair. Train time includes "
             "the feature dicts; label time the test set's dicts.", "",
             "| algorithm | parameters | F1 ours | F1 CRFsuite | train ours | train CRFsuite | label ours | "
             "label CRFsuite | peak RSS ours | peak RSS CRFsuite | iterations ours / CRFsuite |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for a, by in p["medians"].items():
        o, c = by["ours"], by["crfsuite"]
        lines.append(f"| {a} | `{json.dumps(p['params'][a])}` | {o['f1']:.2f} | {c['f1']:.2f} | "
                     f"{o['train_seconds']:.1f} s | {c['train_seconds']:.1f} s | {o['label_seconds']:.2f} s | "
                     f"{c['label_seconds']:.2f} s | {o['max_rss_mb']:.0f} MB | {c['max_rss_mb']:.0f} MB | "
                     f"{o['iterations']:.0f} / {c['iterations']:.0f} |")
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
