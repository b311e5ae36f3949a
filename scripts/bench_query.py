#!/usr/bin/env python3
"""Queries at decoder speed: suffixlm's binary model (and its ARPA path) against the kenlm
Python module on the same models, each in a process of its own that loads only what it
needs (the kenlm worker never imports suffixlm or numpy), interleaved, medians.

    python scripts/bench_query.py --kenlm-python /path/to/venv-with-kenlm/bin/python
    python scripts/bench_query.py --kenlm-python ... --busy     # with two busy loops beside it
    python scripts/bench_query.py --table                       # benchmarks/query.md from query.json

Models (built first into --work, default /tmp/suffixlm_bench_query): PTB KN5 with SRILM's
default cut-offs (``../shared/anchors/srilm/ptb.kn5.srilm-default.arpa.gz``) and without
cut-offs (``suffixlm kn ptb.train.txt --order 5 --min-count none``), and the default
log-linear model of order 5 (``suffixlm train ptb.train.txt --order 5``) exported to ARPA
(``suffixlm export``), each as ARPA and as a binary model (``suffixlm build-binary``);
the log-linear model file itself too. Per model and peer, in a fresh process:

- ``fresh``: wall time of a whole process that imports the module, opens the model and
  scores one sentence (``python -c``), medians of --repeats;
- ``open``: opening the model again in a warm process (median of 3);
- ``score``: ``score(line, bos=True, eos=True)`` over every line of PTB test, the
  median of five passes after the first (``score_first_s``: the first, where a binary
  model's pages come in from the page cache);
- ``BaseScore``: a decoder-style loop, every word of PTB test through ``BaseScore`` with
  states carried (µs a call);
- ``batch`` (suffixlm): ``score_batch(lines)`` over PTB test, and ``score_ids`` on the
  ids already made, each the median of five passes after the first (the first loads
  their kernels and, for a batch this large, starts numba's threads: about 0.01 s
  more);
- ``distribution``: the whole next-word distribution at 200 states of PTB test (ms a
  call; for kenlm a ``BaseScore`` per vocabulary word, the only way it has);
- the file's bytes per n-gram.

The ppl of PTB test is checked equal between the peers (a ``score`` sum).

``--srilm-ngram PATH``: also the whole command ``suffixlm ppl MODEL.bin ptb.test.txt``
against SRILM's ``ngram -order 5 -unk -lm MODEL -ppl ptb.test.txt`` on each model, MODEL
the ARPA file and SRILM's own binary of it (``-write-bin-lm``), interleaved (wall time
and peak RSS of the process, medians; the ppl lines compared).

``--big MODEL.bin``: also the open times of a large binary model (fresh process, warm),
ours alone, e.g. KN5 (default cut-offs) on 50M words sampled from PTB's KN5::

    python scripts/sample_corpus.py ../shared/anchors/srilm/ptb.kn5.srilm-default.arpa.gz \
        --tokens 50000000 --seed 0 -o /tmp/s50m.txt
    suffixlm kn /tmp/s50m.txt --order 5 -o /tmp/s50m.kn5.bin --binary
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

WORKER = r'''
import json, sys, time
peer, path, test = sys.argv[1], sys.argv[2], sys.argv[3]
PASSES = 5  # timed passes of each whole-text query after its first, their median taken


def median_pass(call):
    passes = []
    for _ in range(PASSES):
        t0 = time.perf_counter(); got = call(); passes.append(time.perf_counter() - t0)
    return sorted(passes)[PASSES // 2], got


t0 = time.perf_counter()
if peer == "kenlm":
    import kenlm as M
    Model, State = M.Model, M.State
else:
    import suffixlm as M
    Model, State = M.Model, M.State
t_import = time.perf_counter() - t0
lines = [l.strip() for l in open(test)]
out = {"import_s": t_import}
t0 = time.perf_counter(); m = Model(path); out["first_open_s"] = time.perf_counter() - t0
m.score(lines[0])
opens = []
for _ in range(3):
    t0 = time.perf_counter(); m2 = Model(path); opens.append(time.perf_counter() - t0); del m2
out["open_s"] = sorted(opens)[1]
t0 = time.perf_counter(); total = 0.0
for l in lines:
    total += m.score(l, bos=True, eos=True)
out["score_first_s"] = time.perf_counter() - t0  # a binary model's pages come in on this pass
out["log10_sum"] = total
def score_lines():
    for l in lines:
        m.score(l, bos=True, eos=True)


out["score_s"] = median_pass(score_lines)[0]
words = [w for l in lines for w in (l.split() + ["</s>"])]
calls = 0
s, o = State(), State()
m.BeginSentenceWrite(s)
m.BaseScore(s, words[0], o)  # a first call, outside the timing (as for every other query)
t0 = time.perf_counter()
for w in words:
    m.BaseScore(s, w, o)
    calls += 1
    if w == "</s>":
        m.BeginSentenceWrite(s)
    else:
        s, o = o, s
out["basescore_us"] = (time.perf_counter() - t0) / calls * 1e6
# states at 200 positions of the test text
states = []
s = State(); m.BeginSentenceWrite(s)
for i, w in enumerate(words[:2000]):
    o = State(); m.BaseScore(s, w, o)
    s = o if w != "</s>" else State()
    if w == "</s>":
        m.BeginSentenceWrite(s)
    if i % 10 == 0:
        states.append(s)
if peer == "kenlm":
    vocab = sorted({w for l in lines for w in l.split()})  # kenlm has no vocabulary listing: the test's words
    t0 = time.perf_counter()
    for st in states[:20]:
        d = [m.BaseScore(st, w, State()) for w in vocab]
    out["distribution_ms"] = (time.perf_counter() - t0) / 20 * 1e3
    out["distribution_words"] = len(vocab)
else:
    m.distribution(states[0])
    t0 = time.perf_counter()
    for st in states:
        m.distribution(st)
    out["distribution_ms"] = (time.perf_counter() - t0) / len(states) * 1e3
    out["distribution_words"] = len(m.vocab)
    if hasattr(m, "score_batch"):
        m.score_batch(lines)  # a first pass, outside the timing (kernels loaded, threads started)
        out["batch_s"], sums = median_pass(lambda: m.score_batch(lines))
        out["batch_log10_sum"] = float(sums.sum())
        import numpy as np
        get = m.vocab.index.get
        ids, offs = [], [0]
        for l in lines:
            ids.extend([get(w, 2) for w in l.split()] + [1]); offs.append(len(ids))
        ids, offs = np.array(ids), np.array(offs)
        m.score_ids(ids, offs)  # a first pass, outside the timing
        out["score_ids_s"] = median_pass(lambda: m.score_ids(ids, offs))[0]
print(json.dumps(out))
'''

FRESH = {
    "kenlm": "import kenlm, sys; m = kenlm.Model(sys.argv[1]); m.score('the market fell')",
    "suffixlm": "import suffixlm, sys; m = suffixlm.Model(sys.argv[1]); m.score('the market fell')",
}

sys.path.insert(0, str(Path(__file__).resolve().parent))


def timed(cmd: list[str]) -> tuple[float, int, str]:
    """(wall seconds, peak RSS in MB, stdout) of a whole command."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    out = p.stdout.read()
    _, status, usage = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    if p.returncode:
        raise SystemExit(f"{' '.join(cmd)} failed ({p.returncode})")
    return wall, usage.ru_maxrss // 1024, out


def ppl_commands(args, models: dict, test: str) -> list[dict]:
    """``suffixlm ppl`` on the binary model against SRILM's ``ngram -ppl`` on the ARPA file."""
    suffixlm = str(Path(sys.executable).with_name("suffixlm"))
    rows = []
    for name, info in models.items():
        srilm_bin = Path(args.work) / f"{name}.srilm.bin"  # SRILM's own binary format, as ours is to our ARPA
        if not srilm_bin.exists():
            subprocess.run([args.srilm_ngram, "-order", "5", "-unk", "-lm", info["arpa"], "-write-bin-lm",
                            str(srilm_bin)], check=True, capture_output=True)
        ngram = [args.srilm_ngram, "-order", "5", "-unk", "-ppl", test, "-lm"]
        cases = {"srilm ngram -ppl (arpa)": ngram + [info["arpa"]],
                 "srilm ngram -ppl (its binary, -write-bin-lm)": ngram + [str(srilm_bin)],
                 "suffixlm ppl (binary)": [suffixlm, "ppl", info["binary"], test]}
        got = {c: [] for c in cases}
        for _ in range(args.repeats):
            for c, cmd in cases.items():
                got[c].append(timed(cmd))
        ppl = {c: v[0][2].strip().splitlines()[-1].split("ppl=")[1].split()[0] for c, v in got.items()}
        for c, v in got.items():
            rows.append({"model": name, "command": c, "wall_s": statistics.median(x[0] for x in v),
                         "peak_mb": statistics.median(x[1] for x in v), "ppl": ppl[c]})
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    return rows


def prepare(work: Path) -> dict:
    from _bench_common import shared

    work.mkdir(parents=True, exist_ok=True)
    train = shared("corpora", "ptb", "ptb.train.txt")
    models = {"kn5-default": shared("anchors", "srilm", "ptb.kn5.srilm-default.arpa.gz"),
              "kn5-nocut": work / "kn5-nocut.arpa", "loglinear5": work / "loglinear5.arpa"}
    cli = [sys.executable, "-m", "suffixlm.cli"]
    if not models["kn5-nocut"].exists():
        subprocess.run(cli + ["kn", str(train), "--order", "5", "--min-count", "none",
                              "-o", str(models["kn5-nocut"]), "-q"], check=True)
    if not models["loglinear5"].exists():  # the default model of `suffixlm train`, and its exact export
        subprocess.run(cli + ["train", str(train), "--order", "5", "-o", str(work / "loglinear5.slm"), "-q"], check=True)
        subprocess.run(cli + ["export", str(work / "loglinear5.slm"), "-o", str(models["loglinear5"]), "-q"],
                       check=True)
    out = {}
    for name, arpa in models.items():
        b = work / f"{name}.bin"
        t0 = time.perf_counter()
        if not b.exists():
            subprocess.run([sys.executable, "-m", "suffixlm.cli", "build-binary", str(arpa), str(b), "-q"], check=True)
        out[name] = {"arpa": str(arpa), "binary": str(b), "build_binary_s": time.perf_counter() - t0,
                     "binary_bytes": b.stat().st_size}
    return out


def n_grams(arpa: str) -> int:
    import gzip

    opener = gzip.open if arpa.endswith(".gz") else open
    total = 0
    with opener(arpa, "rt") as f:
        for line in f:
            if line.startswith("ngram "):
                total += int(line.split("=")[1])
            elif line.startswith("\\1-grams"):
                break
    return total


def run_all(args) -> dict:
    from _bench_common import busy_loops, machine_info, shared

    work = Path(args.work)
    models = prepare(work)
    test = str(shared("corpora", "ptb", "ptb.test.txt"))
    runs = {"kenlm": [args.kenlm_python], "suffixlm": [sys.executable]}
    busy = busy_loops(2) if args.busy else []
    load = os.getloadavg()[0]
    rows = []
    try:
        for name, info in models.items():
            info["ngrams"] = n_grams(info["arpa"])
            cases = [("kenlm", "arpa", info["arpa"]), ("suffixlm", "binary", info["binary"]),
                     ("suffixlm", "arpa", info["arpa"])]
            if name == "loglinear5":
                cases.append(("suffixlm", "model file", str(work / "loglinear5.slm")))
            results = {c[:2]: [] for c in cases}
            fresh = {c[:2]: [] for c in cases}
            for _ in range(args.repeats):  # interleaved
                for peer, kind, path in cases:
                    r = subprocess.run(runs[peer] + ["-c", WORKER, peer, path, test], capture_output=True, text=True)
                    if r.returncode:
                        raise SystemExit(f"{peer} {kind} {name} failed:\n{r.stderr[-3000:]}")
                    results[(peer, kind)].append(json.loads(r.stdout.strip().splitlines()[-1]))
                    t0 = time.perf_counter()
                    subprocess.run(runs[peer] + ["-c", FRESH[peer], path], check=True, capture_output=True)
                    fresh[(peer, kind)].append(time.perf_counter() - t0)
            for (peer, kind), rs in results.items():
                row = {"model": name, "peer": peer, "file": kind, "ngrams": info["ngrams"],
                       "bytes_per_ngram": {"binary": info["binary_bytes"], "arpa": os.path.getsize(info["arpa"]),
                                           "model file": os.path.getsize(work / "loglinear5.slm")
                                           if name == "loglinear5" else 0}[kind] / info["ngrams"],
                       "fresh_s": statistics.median(fresh[(peer, kind)])}
                for key in rs[0]:
                    vals = [r[key] for r in rs]
                    row[key] = statistics.median(vals) if isinstance(vals[0], float) else vals[0]
                rows.append(row)
                print(json.dumps(row), file=sys.stderr, flush=True)
        ppl_rows = ppl_commands(args, models, test) if args.srilm_ngram else []
    finally:
        for p in busy:
            p.kill()
    big = None
    if args.big:
        code = ("import time, sys; t = time.perf_counter(); import suffixlm; m = suffixlm.Model(sys.argv[1]); "
                "m.score('the market fell'); f = time.perf_counter() - t; w = []\n"
                "for _ in range(5):\n    t = time.perf_counter(); suffixlm.Model(sys.argv[1]); "
                "w.append(time.perf_counter() - t)\n"
                "print(f, sorted(w)[2], sum(m.counts), m.file_size, m.load)")
        outs = [subprocess.run([sys.executable, "-c", code, args.big], check=True, capture_output=True,
                               text=True).stdout.split() for _ in range(args.repeats)]
        big = {"path": args.big, "fresh_s": statistics.median(float(o[0]) for o in outs),
               "open_warm_s": statistics.median(float(o[1]) for o in outs), "ngrams": int(outs[0][2]),
               "file_bytes": int(outs[0][3]), "load": outs[0][4]}
        print(json.dumps(big), file=sys.stderr, flush=True)
    return {"machine": machine_info(), "load_before": load, "busy_loops": len(busy), "repeats": args.repeats,
            "models": models, "rows": rows, "big": big, "ppl_rows": ppl_rows,
            "command": "python scripts/bench_query.py " + " ".join(sys.argv[1:])}


def table(payloads: list[dict]) -> str:
    lines = ["# Queries at decoder speed: suffixlm's binary model against the kenlm module", "",
             "```", *[p["command"] for p in payloads], "```", "",
             "Written by `scripts/bench_query.py` (its docstring says what each column is). Each peer in a "
             "process of its own that imports only its own module (kenlm 0.3.0 from PyPI, built here), "
             "interleaved, medians, Python's bytecode cached as an installed package has it. "
             "Machine: 2 CPUs. Lower is better everywhere.", ""]
    for p in payloads:
        lines += [f"## {'with two busy loops beside it' if p['busy_loops'] else 'quiet machine'} "
                  f"(1-minute load before: {p['load_before']:.2f}; {p['repeats']} runs)", "",
                  "| model | peer | file | bytes / n-gram | fresh process s | open (warm) ms | `score` PTB test s "
                  "| `score` first pass s | `BaseScore` µs | batch s (`score_batch` / `score_ids`) | distribution ms (words) | log10 sum |",
                  "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in p["rows"]:
            batch = f"{r['batch_s']:.4f} / {r['score_ids_s']:.4f}" if "batch_s" in r else ""
            lines.append(f"| {r['model']} | {r['peer']} | {r['file']} | {r['bytes_per_ngram']:.1f} | "
                         f"{r['fresh_s']:.3f} | {r['open_s'] * 1e3:.2f} | {r['score_s']:.4f} | {r['score_first_s']:.4f} | "
                         f"{r['basescore_us']:.2f} | {batch} | {r['distribution_ms']:.2f} ({r['distribution_words']}) | "
                         f"{r['log10_sum']:.4f} |")
        lines.append("")
        if p.get("ppl_rows"):
            lines += ["Whole commands on PTB test (wall time and peak RSS of the process, medians):", "",
                      "| model | command | s | peak MB | ppl |", "|---|---|---|---|---|"]
            lines += [f"| {r['model']} | {r['command']} | {r['wall_s']:.3f} | {r['peak_mb']:.0f} | {r['ppl']} |"
                      for r in p["ppl_rows"]]
            lines.append("")
        b = p.get("big")
        if b:
            lines += [f"Large model `{b['path']}` ({b['ngrams']:,} n-grams, {b['file_bytes'] / b['ngrams']:.1f} bytes "
                      f"an n-gram, load {b['load']}): opened in {b['open_warm_s'] * 1e3:.1f} ms in a warm process; "
                      f"a fresh process (import, open, first score) {b['fresh_s']:.2f} s.", ""]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kenlm-python", default=None, help="a Python with the kenlm module (and nothing of ours)")
    ap.add_argument("--work", default="/tmp/suffixlm_bench_query")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="two busy loops beside the measurement")
    ap.add_argument("--table", action="store_true", help="only rewrite query.md from query.json")
    ap.add_argument("--big", default=None, help="a large binary model: its open times too")
    ap.add_argument("--srilm-ngram", default=None, help="SRILM's ngram: suffixlm ppl against ngram -ppl too")
    args = ap.parse_args()
    from _bench_common import BENCH_DIR, write_json

    path = BENCH_DIR / "query.json"
    old = json.loads(path.read_text()) if path.exists() else {"runs": []}
    if not args.table:
        if not args.kenlm_python:
            raise SystemExit("give --kenlm-python")
        # every process may cache its bytecode, as an installed package has it (pip
        # compiles on install): with PYTHONDONTWRITEBYTECODE set, each of our processes
        # would compile the package's source anew (about 0.03 s), which no user pays
        os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
        subprocess.run([sys.executable, "-c", "import suffixlm.cli, suffixlm.backoff.binary, suffixlm.commands.ppl"],
                       check=True)
        new = run_all(args)
        old["runs"] = [r for r in old["runs"] if r["busy_loops"] != new["busy_loops"]] + [new]
        write_json("query.json", old)
    (BENCH_DIR / "query.md").write_text(table(sorted(old["runs"], key=lambda r: r["busy_loops"])))


if __name__ == "__main__":
    main()
