#!/usr/bin/env python3
"""Seen states only: ``suffixlm crf train --states seen`` against CRFsuite (python-crfsuite) on
CoNLL-2000 chunking with the same pattern file: F1, time and peak memory.

Data: ../shared/corpora/conll2000 (train.txt, test.txt: ``word POS chunk``; ``--corpus``).
Features: ``corpora/patterns/chunk.pat`` (``--patterns``) on both sides. Both keep only the
(observation, label) pairs seen in training (ours ``--states seen``, CRFsuite its default
``feature.possible_states=False``) and every label transition (the lone ``B`` pattern;
CRFsuite ``feature.possible_transitions=True``), with L-BFGS and the same l2 penalty
(``--rho2`` R, CRFsuite c1 = 0, c2 = R / 2), or with ``--rho1`` R1 > 0 the same elastic net
(ours OWL-QN, CRFsuite's lbfgs, which runs OWL-QN when c1 = R1 > 0); each solver stops by
its own default rule (``--ours-args '["--stopeps", "1e-5", "--stopwin", "10"]'`` gives ours
CRFsuite's rule: delta 1e-5 over a period of 10 iterations).

- ours: the command lines ``suffixlm crf train -p PAT --states seen -a lbfgs --rho2 R -q
  TRAIN MODEL`` (then ``--ours-args``, a JSON list of further arguments: a repeated
  option's last value wins) and ``suffixlm crf label -m MODEL TEST OUT``; F1 from OUT.
- CRFsuite: this script's worker mode (``--worker crfsuite``) under ``--crfsuite-python``,
  a Python with python-crfsuite and nothing of ours: it imports only the standard library
  and pycrfsuite, expands the pattern file's ``%x[row,col]`` commands itself (Wapiti's
  padding ``_x-1``, ``_x-2``, ... before the sentence, ``_x+1``, ... after it), appends the
  training sentences one at a time (with ``--held``, a third system in the same rounds
  makes every sentence's attribute lists first and then appends them, as user code
  usually does), trains, tags the test sentences one at a time and
  prints one JSON line (its own peak RSS after training and at the end, its times, F1,
  the number of features from CRFsuite's training log).

Every run is a fresh process, measured by this script with ``os.wait4`` (peak RSS,
``ru_maxrss``) and ``time.perf_counter`` (wall time); the systems alternate within each
round (ours, CRFsuite, ours, ...); the tables give medians of ``--runs``. One untimed
training and labelling of ours on a few sentences first loads numba's kernel cache.

    python scripts/bench_seen_states.py [--runs 3] [--busy] [--rho1 0] [--rho2 2.0] [--held]
        [--ours-args JSON] [--out PATH] [--crfsuite-python PY]

Writes benchmarks/seen_states.json and .md (``_busy`` with two busy loops beside every
run).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATTERNS = ROOT / "corpora" / "patterns" / "chunk.pat"
DEFAULT_CORPUS = ROOT.parent / "shared" / "corpora" / "conll2000"
DEFAULT_CRFSUITE_PYTHON = ROOT.parent / "crfsuite-venv" / "bin" / "python"
#: sentences of the untimed warm-up run of ours
WARMUP_SENTENCES = 50

sys.path.insert(0, str(ROOT / "scripts"))
from bench_second_order import chunks  # noqa: E402 (standard library only: the CRFsuite worker stays lean)


# ---------------------------------------------------------------------- data (standard library only)
def read_sentences(path, limit=None):
    """The sentences of a CoNLL column file, one at a time: lists of rows (lists of columns)."""
    n, cur = 0, []
    with open(path, encoding="utf-8") as f:
        for line in f:
            parts = line.split()
            if parts:
                cur.append(parts)
                continue
            if cur:
                yield cur
                n += 1
                cur = []
                if limit is not None and n >= limit:
                    return
    if cur and (limit is None or n < limit):
        yield cur


_CMD_RE = re.compile(r"%([A-Za-z])\[([^\]]*)\]")
_X_ARGS_RE = re.compile(r"\s*([+-]?\d+)\s*,\s*(\d+)\s*$")


def read_patterns(path):
    """The ``u`` lines of a pattern file as (pieces, commands, lower) with ``commands``
    [(row offset, column)], and whether it has the lone ``B`` line (label transitions).
    Only what CRFsuite can express: ``%x`` / ``%X`` commands with a relative row; a ``b``
    line only as the lone ``B``. The attribute is the line less its ``u:``: ``name=`` and
    the values with the line's literal text (``|``) between them."""
    patterns, transitions = [], False
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            where = f"{path}:{lineno}"
            kind = text[0].lower()
            if kind == "b" and text.lower() == "b":
                transitions = True
                continue
            if kind != "u":
                raise SystemExit(f"{where}: only u lines and the lone B line have a CRFsuite equivalent: {text!r}")
            body = text[2:] if text[1:2] == ":" else text[1:]
            pieces, commands, lower, pos = [], [], [], 0
            for m in _CMD_RE.finditer(body):
                args = _X_ARGS_RE.match(m.group(2))
                if m.group(1) not in "xX" or args is None:
                    raise SystemExit(f"{where}: only %x[row,col] commands (a relative row) are supported: "
                                     f"{m.group(0)!r}")
                pieces.append(body[pos:m.start()])
                commands.append((int(args.group(1)), int(args.group(2))))
                lower.append(m.group(1) == "X")
                pos = m.end()
            pieces.append(body[pos:])
            patterns.append((pieces, commands, lower))
    if not patterns:
        raise SystemExit(f"{path}: no u pattern")
    return patterns, transitions


def _pad(i, T):
    """Wapiti's value of row i outside a sentence of T rows: _x-1 ... _x-4, _x-# before, _x+1 ... _x+# after."""
    k = -i if i < 0 else i - T + 1
    return ("_x-" if i < 0 else "_x+") + (str(k) if k <= 4 else "#")


def attributes(sentence, patterns):
    """Attribute strings of every token of a sentence (rows of observation columns)."""
    T = len(sentence)
    out = []
    for t in range(T):
        attrs = []
        for pieces, commands, lower in patterns:
            parts = [pieces[0]]
            for (off, col), low, piece in zip(commands, lower, pieces[1:]):
                i = t + off
                v = sentence[i][col] if 0 <= i < T else _pad(i, T)
                parts.append(v.lower() if low else v)
                parts.append(piece)
            attrs.append("".join(parts))
        out.append(attrs)
    return out


class ChunkScore:
    """conlleval's chunk F1, one sentence at a time (a chunk is right when its type and both ends are)."""

    def __init__(self):
        self.tp = self.fp = self.fn = 0

    def add(self, gold, pred):
        cg, cp = chunks(gold), chunks(pred)
        self.tp += len(cg & cp)
        self.fp += len(cp - cg)
        self.fn += len(cg - cp)

    def f1(self):
        prec = 100.0 * self.tp / max(self.tp + self.fp, 1)
        rec = 100.0 * self.tp / max(self.tp + self.fn, 1)
        return 2 * prec * rec / (prec + rec) if prec + rec else 0.0


def _rss_mb():
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ---------------------------------------------------------------------- CRFsuite worker
def worker_crfsuite(args) -> dict:
    """Runs under the CRFsuite Python: the standard library and pycrfsuite only."""
    import pycrfsuite

    corpus = Path(args.corpus)
    patterns, _ = read_patterns(args.patterns)  # CRFsuite has its transitions anyway
    t0 = time.perf_counter()
    trainer = pycrfsuite.Trainer(verbose=False)
    n_train = 0
    if args.held:  # every sentence's attribute lists first, then appended: what user code usually does
        data = [([row[-1] for row in sentence], attributes([row[:-1] for row in sentence], patterns))
                for sentence in read_sentences(corpus / "train.txt")]
        for labels, xseq in data:
            trainer.append(xseq, labels)
            n_train += 1
    else:  # one sentence at a time: the leanest use of the API
        for sentence in read_sentences(corpus / "train.txt"):
            labels = [row[-1] for row in sentence]
            xseq = attributes([row[:-1] for row in sentence], patterns)
            trainer.append(xseq, labels)
            del xseq, labels, sentence
            n_train += 1
    trainer.set_params(crfsuite_params(args))
    trainer.train(args.model)
    if args.held:
        del data
    train_s = time.perf_counter() - t0
    train_rss = _rss_mb()
    log = trainer.logparser
    info = {"features": log.featgen_num_features, "iterations": len(log.iterations),
            "active_features": (log.last_iteration or {}).get("active_features"),
            "train_sentences": n_train, "train_rss_mb": train_rss, "model_bytes": os.path.getsize(args.model)}
    del trainer, log
    t0 = time.perf_counter()
    tagger = pycrfsuite.Tagger()
    tagger.open(args.model)
    score, n_test = ChunkScore(), 0
    for sentence in read_sentences(corpus / "test.txt"):
        score.add([row[-1] for row in sentence], tagger.tag(attributes([row[:-1] for row in sentence], patterns)))
        n_test += 1
    tagger.close()
    label_s = time.perf_counter() - t0
    foreign = sorted(m for m in ("numpy", "crf", "suffixlm", "numba") if m in sys.modules)
    return {"f1": score.f1(), "train_seconds": train_s, "label_seconds": label_s, **info,
            "test_sentences": n_test, "foreign_modules": foreign}


# ---------------------------------------------------------------------- driver
def measured(cmd, stdout_path, stderr_path) -> tuple[float, float]:
    """Run ``cmd`` (stdout and stderr to files): (wall seconds, peak RSS MB by os.wait4).
    A failure ends the benchmark with the command's stderr."""
    with open(stdout_path, "wb") as out, open(stderr_path, "wb") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=out, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)  # reaped here: Popen must not wait again
    if proc.returncode:
        sys.stderr.write(Path(stderr_path).read_text(errors="replace"))
        raise SystemExit(f"{' '.join(map(str, cmd))} failed (exit status {proc.returncode})")
    return wall, usage.ru_maxrss / 1024


def suffixlm_command() -> list[str]:
    exe = Path(sys.executable).parent / "suffixlm"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("suffixlm")
    if found is None:
        raise SystemExit("suffixlm not found: activate the environment it is installed in")
    return [found]


def solver_args(args) -> list[str]:
    """Ours: L-BFGS for l2 alone, OWL-QN with an l1 part (CRFsuite's lbfgs runs OWL-QN when c1 > 0)."""
    if args.rho1:
        return ["-a", "owlqn", "--rho1", repr(args.rho1), "--rho2", repr(args.rho2)]
    return ["-a", "lbfgs", "--rho2", repr(args.rho2)]


def crfsuite_params(args) -> dict:
    return {"c1": args.rho1, "c2": args.rho2 / 2, "feature.possible_states": False,
            "feature.possible_transitions": True}


def ours_commands(args, corpus, tmp) -> tuple[list[str], list[str]]:
    model, out = str(Path(tmp) / "ours.model"), str(Path(tmp) / "ours.label")
    train = suffixlm_command() + ["crf", "train", "-p", str(args.patterns), "--states", "seen", *solver_args(args),
                                  "-q", *args.ours_args, str(Path(corpus) / "train.txt"), model]
    label = suffixlm_command() + ["crf", "label", "-m", model, str(Path(corpus) / "test.txt"), out]
    return train, label


def label_output_f1(path) -> float:
    """F1 of ``suffixlm crf label`` output: input line, a tab, the predicted label; gold = the input's last column."""
    score, gold, pred = ChunkScore(), [], []
    with open(path, encoding="utf-8") as f:
        for line in f:
            line = line.rstrip("\n")
            if not line.strip():
                if gold:
                    score.add(gold, pred)
                gold, pred = [], []
                continue
            inp, p = line.rsplit("\t", 1)
            gold.append(inp.split()[-1])
            pred.append(p)
    if gold:
        score.add(gold, pred)
    return score.f1()


def ours_features(model) -> dict:
    import numpy as np

    with np.load(model, allow_pickle=False) as z:
        meta = json.loads(z["meta"].tobytes()) if "meta" in z.files else {}
        theta = z["theta"]
        return {"features": int(meta.get("n_features") or theta.size),
                "active_features": int(np.count_nonzero(theta))}


def run_ours(args, corpus, tmp) -> dict:
    train, label = ours_commands(args, corpus, tmp)
    log = Path(tmp) / "ours"
    train_s, train_rss = measured(train, f"{log}.train.out", f"{log}.train.err")
    label_s, label_rss = measured(label, f"{log}.label.out", f"{log}.label.err")
    model, out = train[-1], label[-1]
    res = {"f1": label_output_f1(out), "train_seconds": train_s, "label_seconds": label_s,
           "max_rss_mb": train_rss, "label_rss_mb": label_rss, "model_bytes": os.path.getsize(model),
           **ours_features(model)}
    os.unlink(model)
    os.unlink(out)
    return res


def crfsuite_command(args, corpus, tmp, held=False) -> list[str]:
    cmd = [str(args.crfsuite_python), str(Path(__file__).resolve()), "--worker", "crfsuite", "--corpus", str(corpus),
           "--patterns", str(args.patterns), "--rho1", repr(args.rho1), "--rho2", repr(args.rho2),
           "--model", str(Path(tmp) / "crfsuite.model")]
    return cmd + ["--held"] if held else cmd


def run_crfsuite(args, corpus, tmp, held=False) -> dict:
    cmd = crfsuite_command(args, corpus, tmp, held)
    out, err = Path(tmp) / "crfsuite.out", Path(tmp) / "crfsuite.err"
    wall, rss = measured(cmd, out, err)
    res = json.loads(out.read_text().strip().splitlines()[-1])
    if res["foreign_modules"]:
        raise SystemExit(f"the CRFsuite worker imported {res['foreign_modules']}: use a Python with pycrfsuite only")
    res.update(process_seconds=wall, max_rss_mb=rss)
    os.unlink(str(Path(tmp) / "crfsuite.model"))
    return res


def write_subset(corpus, limit, dest) -> Path:
    """The first ``limit`` sentences of train.txt and test.txt, in ``dest``."""
    dest = Path(dest)
    dest.mkdir(parents=True, exist_ok=True)
    for name in ("train.txt", "test.txt"):
        with open(dest / name, "w", encoding="utf-8") as f:
            for sentence in read_sentences(Path(corpus) / name, limit):
                f.write("".join(" ".join(row) + "\n" for row in sentence) + "\n")
    return dest


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="two busy loops beside every timed run")
    ap.add_argument("--rho1", type=float, default=0.0,
                    help="l1 penalty rho1 (CRFsuite's c1; > 0: ours runs owlqn, CRFsuite's lbfgs OWL-QN)")
    ap.add_argument("--rho2", type=float, default=2.0, help="l2 penalty rho2 (CRFsuite's c2 = rho2 / 2)")
    ap.add_argument("--held", action="store_true",
                    help="also CRFsuite holding every sentence's attribute lists before appending them (as user code "
                         "usually does), a third system in the same rounds")
    ap.add_argument("--ours-args", type=json.loads, default=[],
                    help='JSON list of further arguments of ours\' train command, e.g. \'["-a", "owlqn", '
                         '"--rho1", "0.1"]\'')
    ap.add_argument("--crfsuite-python", default=None,
                    help=f"a Python with python-crfsuite only (default: {DEFAULT_CRFSUITE_PYTHON} if it exists)")
    ap.add_argument("--corpus", default=None, help=f"folder of train.txt and test.txt (default: {DEFAULT_CORPUS})")
    ap.add_argument("--patterns", default=str(DEFAULT_PATTERNS))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "seen_states"))
    ap.add_argument("--limit", type=int, default=None, help=argparse.SUPPRESS)  # first N sentences: a quick check
    ap.add_argument("--worker", choices=["crfsuite"], default=None, help=argparse.SUPPRESS)
    ap.add_argument("--model", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        out = worker_crfsuite(args)
        out["self_rss_mb"] = _rss_mb()
        print(json.dumps(out))
        return
    if not isinstance(args.ours_args, list) or not all(isinstance(a, str) for a in args.ours_args):
        raise SystemExit("--ours-args: a JSON list of strings")
    sys.path.insert(0, str(ROOT / "scripts"))
    from _bench_common import busy_loops, machine_info

    corpus = Path(args.corpus) if args.corpus else DEFAULT_CORPUS
    if not (corpus / "train.txt").exists() or not (corpus / "test.txt").exists():
        raise SystemExit(f"{corpus}: no train.txt and test.txt; pass --corpus")
    if args.crfsuite_python is None:
        if not DEFAULT_CRFSUITE_PYTHON.exists():
            raise SystemExit("pass --crfsuite-python: a Python with python-crfsuite and nothing of ours")
        args.crfsuite_python = str(DEFAULT_CRFSUITE_PYTHON)
    args.patterns = str(Path(args.patterns).resolve())
    read_patterns(args.patterns)  # refuse what CRFsuite cannot express before any run
    tmp = tempfile.mkdtemp(prefix="bench_seen_states_")
    busy = []
    try:
        full_corpus = corpus
        if args.limit:
            corpus = write_subset(corpus, args.limit, Path(tmp) / "corpus")
        # warm-up, untimed: numba compiles or loads its kernels
        run_ours(args, write_subset(full_corpus, WARMUP_SENTENCES, Path(tmp) / "warmup"), tmp)
        commands = {"ours": [" ".join(c) for c in ours_commands(args, corpus, "TMP")],
                    "crfsuite": [" ".join(crfsuite_command(args, corpus, "TMP"))]}
        systems = [("ours", run_ours), ("crfsuite", run_crfsuite)]
        if args.held:
            commands["crfsuite_held"] = [" ".join(crfsuite_command(args, corpus, "TMP", held=True))]
            systems.append(("crfsuite_held", lambda a, c, t: run_crfsuite(a, c, t, held=True)))
        results = {name: [] for name, _ in systems}
        busy = busy_loops(2 if args.busy else 0)
        for r in range(args.runs):
            for system, runner in systems:
                res = runner(args, corpus, tmp)
                results[system].append(res)
                print(f"run {r + 1} {system}: F1 {res['f1']:.2f} train {res['train_seconds']:.1f}s "
                      f"label {res['label_seconds']:.2f}s peak RSS {res['max_rss_mb']:.0f} MB "
                      f"features {res['features']}", flush=True)
    finally:
        for p in busy:
            p.kill()
            p.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    load = os.getloadavg()
    med = {s: {k: statistics.median(x[k] for x in v) for k in v[0]
               if isinstance(v[0][k], (int, float)) and not isinstance(v[0][k], bool)}
           for s, v in results.items()}
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT, capture_output=True,
                           text=True).stdout.splitlines()
    machine = machine_info()
    machine["command"] = shlex.join([Path(sys.executable).name] + sys.argv)  # --ours-args quoted as typed
    payload = {"machine": machine, "uncommitted": dirty, "busy_loops": len(busy), "load_average_end": load,
               "runs": args.runs,
               "corpus": str(full_corpus), "limit": args.limit, "patterns": os.path.relpath(args.patterns, ROOT),
               "rho1": args.rho1, "rho2": args.rho2, "crfsuite_params": crfsuite_params(args),
               "ours_args": args.ours_args, "commands": commands, "results": results, "medians": med}
    out = Path(args.out + ("_busy" if args.busy else "") + (f"_limit{args.limit}" if args.limit else ""))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps(payload, indent=1) + "\n")
    write_markdown(out.with_suffix(".md"), payload)
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")


def write_markdown(path, p) -> None:
    m = p["machine"]
    subset = f" (first {p['limit']} sentences of each file)" if p["limit"] else ""
    rho1 = p.get("rho1", 0.0)
    solver = (f"-a owlqn --rho1 {rho1!r} --rho2 {p['rho2']!r}" if rho1 else f"-a lbfgs --rho2 {p['rho2']!r}")
    ours_train = " ".join(["suffixlm crf train -p", p["patterns"], "--states seen", solver, "-q", *p["ours_args"],
                           "TRAIN MODEL"])
    penalty = (f"L-BFGS / OWL-QN with the same elastic net (l1 {rho1!r}, l2 rho2 {p['rho2']!r})" if rho1
               else "L-BFGS with the same l2 penalty")
    lines = ["# Seen states only: suffixlm crf --states seen against python-crfsuite (CoNLL-2000, chunk.pat)", "",
             f"Command: `{m['command']}`  ",
             f"Date: {m['date']}, commit {m['commit']}, {m['platform']}, {m['cpu_count']} CPUs, "
             f"{'two busy loops beside every run, ' if p['busy_loops'] else ''}load average at the end "
             f"{p['load_average_end'][0]:.1f}. Medians of {p['runs']} fresh processes; the systems alternate."
             + (f" Uncommitted changes to tracked files: {', '.join(x[3:] for x in p['uncommitted'])}."
                if p["uncommitted"] else ""), "",
             f"Data: CoNLL-2000 train.txt and test.txt{subset}. Features: `{p['patterns']}` on both sides; both keep "
             "only the (observation, label) pairs seen in training and every label transition. "
             f"{penalty}; each stops by its own default rule unless `--ours-args` says otherwise."
             + (" Ours with `--ours-args` (a repeated option's last value wins): "
                f"`{' '.join(p['ours_args'])}`." if p["ours_args"] else ""), "",
             f"- ours: `{ours_train}`, then `suffixlm crf label -m MODEL TEST OUT` (numba's default thread count: "
             "all cores; one untimed run on a few sentences first loads numba's kernel cache).",
             f"- CRFsuite: `pycrfsuite.Trainer` with `{json.dumps(p['crfsuite_params'])}`, attributes from the same "
             "pattern file (its `%x` commands expanded in the worker, Wapiti's padding), in a process with the "
             "standard library and pycrfsuite only (single-threaded). It appends each training sentence as soon as "
             "its attributes are made"
             + ("; *CRFsuite, lists held* makes every sentence's attribute lists first and then appends them, as "
                "user code (and sklearn-crfsuite's `fit`, which takes lists) usually does." if "crfsuite_held"
                in p["medians"] else "."), "",
             "Train s: ours, the wall time of the train command (start-up, imports, reading, training, writing "
             "the model); CRFsuite, the worker's time for reading train.txt, making the attributes, appending and "
             "training (with writing the model; not its start-up). Label s: ours, the wall time of the label command "
             "(start-up, loading, labelling, writing the output); CRFsuite, opening the model, reading test.txt, "
             "making the attributes and tagging. Peak RSS train: `ru_maxrss` of the process by `os.wait4` in this "
             "script: ours, the train command; CRFsuite, the whole worker (training and labelling; its own "
             "`getrusage` after training is given too). Features: ours, the model's weights; CRFsuite, the "
             "number of features in its training log (state features and transitions).", "",
             "| system | F1 | train s | label s | peak RSS MB train | features | CRFsuite self-reported RSS after "
             "training MB | model MB |",
             "|---|---|---|---|---|---|---|---|"]
    for s, name in (("ours", "ours (--states seen)"), ("crfsuite", "CRFsuite"),
                    ("crfsuite_held", "CRFsuite, lists held")):
        if s not in p["medians"]:
            continue
        r = p["medians"][s]
        self_rss = f"{r['train_rss_mb']:.0f}" if "train_rss_mb" in r else "-"
        lines.append(f"| {name} | {r['f1']:.2f} | {r['train_seconds']:.1f} | {r['label_seconds']:.2f} | "
                     f"{r['max_rss_mb']:.0f} | {r['features']:,.0f} | {self_rss} | {r['model_bytes'] / 1e6:.1f} |")
    c = p["medians"]["crfsuite"]
    if "iterations" in c:
        lines += ["", f"CRFsuite: {c['iterations']:.0f} {'OWL-QN' if rho1 else 'L-BFGS'} iterations (median), "
                  "process wall time "
                  f"{c['process_seconds']:.1f} s (start-up, training and labelling)."]
    path.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
