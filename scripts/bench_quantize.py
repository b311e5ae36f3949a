#!/usr/bin/env python3
"""Quantised binary models: ``suffixlm build-binary --quantize 8`` against KenLM's
``build_binary -q 8 -b 8 trie`` on the same ARPA files, each queried from Python in a
process of its own (the kenlm module in a Python that has nothing of ours), interleaved,
medians: what 8 bits cost in perplexity and what they save in bytes.

    python scripts/bench_quantize.py --kenlm-python /path/to/venv-with-kenlm/bin/python \\
        --build-binary /path/to/kenlm/bin/build_binary --repeats 5 --work /tmp/sbq   # query beside it
    python scripts/bench_quantize.py ... --busy     # with two busy loops beside it (a section of its own)
    python scripts/bench_quantize.py --table        # benchmarks/quantize.md from quantize.json

The models are those of ``scripts/bench_query.py`` (PTB KN5 with SRILM's default cut-offs,
KN5 without cut-offs, the default log-linear model of order 5 exported to ARPA; made in
--work when missing). Each is written four ways: our exact binary (``build-binary``),
ours quantised (``build-binary --quantize 8``, 8 bits for log10 p and back-off weights),
KenLM's probing binary (``build_binary probing``, exact) and KenLM's quantised trie
(``build_binary -q 8 -b 8 trie``). Per file, ``scripts/bench_query.py``'s worker measures
``score`` over PTB test (second pass), a ``BaseScore`` loop, the open time; the log10 sum
of PTB test (``score`` with ``<s>`` and ``</s>``, KenLM's rule) gives the perplexity
(``10 ** (-sum / (words + sentences))``) and its change against the exact file of the same
peer. Bytes per n-gram are the file's; peak MB the worker process's RSS (for ours it
includes numpy and numba, about 60-90 MB before any model: compare the files' bytes).
``command s``: the whole command on PTB test, ``suffixlm ppl FILE ptb.test.txt`` for ours,
KenLM's ``query -v summary FILE < ptb.test.txt`` for KenLM (wall time, medians).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))

HERE = Path(__file__).resolve().parent
OUT = HERE.parent / "benchmarks"


def peak_worker(cmd: list[str]) -> tuple[dict, int]:
    """(the worker's JSON line, its peak RSS in MB from ``wait4``)."""
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, usage = os.wait4(p.pid, 0)
    if os.waitstatus_to_exitcode(status):
        raise SystemExit(f"{' '.join(cmd[:1] + cmd[3:])} failed:\n{err[-3000:]}")
    return json.loads(out.strip().splitlines()[-1]), usage.ru_maxrss // 1024


def build(args, models: dict, work: Path) -> dict:
    """The four files of every model (made when missing) and their build times."""
    files = {}
    for name, info in models.items():
        arpa = info["arpa"]
        paths = {("suffixlm", "exact"): work / f"{name}.bin", ("suffixlm", "q8"): work / f"{name}.q8.bin",
                 ("kenlm", "exact"): work / f"{name}.kenlm-probing.bin",
                 ("kenlm", "q8"): work / f"{name}.kenlm-q8-trie.bin"}
        cmds = {("suffixlm", "exact"): [sys.executable, "-m", "suffixlm.cli", "build-binary", arpa],
                ("suffixlm", "q8"): [sys.executable, "-m", "suffixlm.cli", "build-binary", "--quantize", "8", arpa],
                ("kenlm", "exact"): [args.build_binary, "probing", arpa],
                ("kenlm", "q8"): [args.build_binary, "-q", "8", "-b", "8", "trie", arpa]}
        files[name] = {}
        for key, path in paths.items():
            t0 = time.perf_counter()
            if not path.exists():
                subprocess.run(cmds[key] + [str(path)], check=True, capture_output=True)
            files[name][key] = {"path": str(path), "bytes": path.stat().st_size,
                                "build_s": time.perf_counter() - t0}
    return files


def run_all(args) -> dict:
    from _bench_common import machine_info, shared
    from bench_query import busy_loops, prepare

    work = Path(args.work)
    models = prepare(work)
    files = build(args, models, work)
    test = str(shared("corpora", "ptb", "ptb.test.txt"))
    with open(test) as f:
        lines = [x.strip() for x in f]
    n_tokens = sum(len(x.split()) + 1 for x in lines)
    runs = {"kenlm": [args.kenlm_python], "suffixlm": [sys.executable]}
    busy = busy_loops(2) if args.busy else []
    load = os.getloadavg()[0]
    rows = []
    try:
        _measure(args, models, files, runs, test, n_tokens, rows)
    finally:
        for p in busy:
            p.kill()
    return {"machine": machine_info(), "load_before": load, "busy_loops": len(busy), "repeats": args.repeats,
            "rows": rows, "tokens": n_tokens, "command": "python scripts/bench_quantize.py " + " ".join(sys.argv[1:])}


def _measure(args, models, files, runs, test, n_tokens, rows) -> None:
    """Every model's four files, interleaved, into ``rows``."""
    from bench_query import WORKER, n_grams

    for name, info in models.items():
        ngrams = n_grams(info["arpa"])
        got = {key: [] for key in files[name]}
        whole = {key: [] for key in files[name]}
        for _ in range(args.repeats):  # interleaved
            for (peer, kind), f in files[name].items():
                got[(peer, kind)].append(peak_worker(runs[peer] + ["-c", WORKER, peer, f["path"], test]))
                cmd = ([str(Path(sys.executable).with_name("suffixlm")), "ppl", f["path"], test] if peer == "suffixlm"
                       else [args.query, "-v", "summary", f["path"]])
                with open(test) as stdin:
                    t0 = time.perf_counter()
                    subprocess.run(cmd, stdin=stdin, check=True, capture_output=True)
                    whole[(peer, kind)].append(time.perf_counter() - t0)
        for (peer, kind), rs in got.items():
            out = [r for r, _ in rs]
            row = {"model": name, "peer": peer, "file": kind, "ngrams": ngrams,
                   "bytes_per_ngram": files[name][(peer, kind)]["bytes"] / ngrams,
                   "build_s": files[name][(peer, kind)]["build_s"],
                   "peak_mb": statistics.median(m for _, m in rs),
                   "log10_sum": out[0]["log10_sum"],
                   "ppl": 10 ** (-out[0]["log10_sum"] / n_tokens),
                   "command_s": statistics.median(whole[(peer, kind)])}
            for key in ("open_s", "score_s", "basescore_us"):
                row[key] = statistics.median(r[key] for r in out)
            rows.append(row)
        for row in rows[-4:]:
            exact = next(r for r in rows[-4:] if r["peer"] == row["peer"] and r["file"] == "exact")
            row["ppl_change_pct"] = 100 * (row["ppl"] / exact["ppl"] - 1)
            print(json.dumps(row), file=sys.stderr, flush=True)


def table(payloads: list[dict]) -> str:
    lines = ["# Quantised binary models: `build-binary --quantize 8` against KenLM's `-q 8 -b 8 trie`", "",
             "```", *[p["command"] for p in payloads], "```", "",
             "Written by `scripts/bench_quantize.py` (its docstring says what each column is). Each peer in a "
             "process of its own that imports only its own module (kenlm 0.3.0 from PyPI, KenLM's "
             "`build_binary` and `query` from kpu/kenlm), interleaved, medians. Machine: 2 CPUs. "
             "ppl: PTB test by KenLM's `score` with `<s>` and `</s>`; its change: against the same peer's "
             "exact file.", ""]
    for p in payloads:
        lines += _section(p)
    return "\n".join(lines) + "\n"


def _section(p: dict) -> list[str]:
    lines = [f"## {'with two busy loops beside it' if p.get('busy_loops') else 'quiet machine'} "
             f"(at {p['machine']['commit'][:7]}, {p['machine']['date']}; 1-minute load before: "
             f"{p['load_before']:.2f}; {p['repeats']} runs; {p['tokens']:,} words with `</s>`)", "",
             "| model | peer | file | bytes / n-gram | ppl | ppl change | `score` PTB test s | `BaseScore` µs "
             "| open (warm) ms | peak MB | command s |",
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    names = {"exact": "exact (ours: 16-byte records; KenLM: probing)", "q8": "8 bits (ours: 8-byte records; "
             "KenLM: trie -q 8 -b 8)"}
    for r in p["rows"]:
        lines.append(f"| {r['model']} | {r['peer']} | {names[r['file']]} | {r['bytes_per_ngram']:.1f} | "
                     f"{r['ppl']:.4f} | {r['ppl_change_pct']:+.3f} % | {r['score_s']:.4f} | "
                     f"{r['basescore_us']:.2f} | {r['open_s'] * 1e3:.2f} | {r['peak_mb']:.0f} | "
                     f"{r['command_s']:.3f} |")
    lines.append("")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kenlm-python", default=None, help="a Python with the kenlm module (and nothing of ours)")
    ap.add_argument("--build-binary", default=None, help="KenLM's build_binary")
    ap.add_argument("--query", default=None, help="KenLM's query (default: beside --build-binary)")
    ap.add_argument("--work", default="/tmp/suffixlm_bench_query")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="two busy loops beside the measurement")
    ap.add_argument("--table", action="store_true", help="only rewrite quantize.md from quantize.json")
    args = ap.parse_args()
    path = OUT / "quantize.json"
    old = json.loads(path.read_text()) if path.exists() else {"runs": []}
    if "runs" not in old:  # a file of one quiet run
        old = {"runs": [dict(old, busy_loops=0)]}
    if not args.table:
        if not args.kenlm_python or not args.build_binary:
            ap.error("--kenlm-python and --build-binary are needed (or --table)")
        args.query = args.query or str(Path(args.build_binary).with_name("query"))
        new = run_all(args)
        old["runs"] = [r for r in old["runs"] if r["busy_loops"] != new["busy_loops"]] + [new]
        path.write_text(json.dumps(old, indent=1) + "\n")
    text = table(sorted(old["runs"], key=lambda r: r["busy_loops"]))
    (OUT / "quantize.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
