#!/usr/bin/env python
"""Kneser-Ney estimation at scale: ``suffixlm kn`` (in memory, and within ``--memory``
budgets) against KenLM's ``lmplz -S`` at the same budgets and SRILM's ``ngram-count``,
each a fresh process, interleaved, in the same run: wall time, CPU time, peak RSS
(``wait4``), temporary disk used (sampled every second) and whether the ARPA files agree.

    suffixlm kn ../shared/corpora/ptb/ptb.train.txt -o /tmp/ptb.kn5.arpa --order 5
    python scripts/sample_corpus.py /tmp/ptb.kn5.arpa --tokens 10000000 --seed 0 -o /tmp/s10m.txt
    python scripts/bench_kn_scale.py --lmplz PATH/lmplz --ngram-count PATH/ngram-count \\
        --corpus ptb=../shared/corpora/ptb/ptb.train.txt --corpus 10M=/tmp/s10m.txt \\
        --budgets 1G,4G --runs 3 [--busy] [--cutoffs none,srilm] [--no-single] [--out kn_scale]

lmplz refuses ``<unk>`` in its text: it reads a copy with ``<unk>`` rewritten to an
ordinary word (made once, beside the temporary directory), and runs with
``--discount_fallback`` (sampled corpora have a zero count-of-counts at high orders,
which lmplz otherwise refuses; suffixlm warns and falls back the same way). lmplz and
SRILM have no counterpart of SRILM's default cut-offs in lmplz: ``srilm`` rows compare
with ``ngram-count`` only. ``--busy`` runs everything again beside two busy loops.
Writes benchmarks/<out>.json and benchmarks/<out>.md.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, busy_loops, write_json  # noqa: E402

MB = 1 << 20
#: seconds between samples of the temporary directory's size (a walk over a spill
#: directory of many files costs CPU beside the run measured)
DU_EVERY = 1.0


def du(path: str) -> int:
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.lstat(os.path.join(root, f)).st_blocks * 512
            except OSError:
                pass
    return total


def run(cmd: list[str], temp: str, stdout=None) -> dict:
    """Run ``cmd``; wall and CPU seconds, peak RSS, peak bytes under ``temp``."""
    os.makedirs(temp, exist_ok=True)
    peak_disk = [0]
    done = threading.Event()

    def sample():
        while not done.is_set():
            peak_disk[0] = max(peak_disk[0], du(temp))
            done.wait(DU_EVERY)

    th = threading.Thread(target=sample, daemon=True)
    th.start()
    t0 = time.perf_counter()
    with open(os.devnull, "wb") if stdout is None else open(stdout, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.PIPE)
        _, status, ru = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    done.set()
    th.join()
    err = proc.stderr.read().decode(errors="replace")
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}):\n{err[-3000:]}")
    return {"wall_s": round(wall, 3), "cpu_s": round(ru.ru_utime + ru.ru_stime, 3),
            "peak_mb": round(ru.ru_maxrss / 1024, 1), "temp_mb": round(peak_disk[0] / MB, 1)}


def md5(path: str) -> str:
    h = hashlib.md5()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()


def lmplz_text(path: str, work: str) -> str:
    out = os.path.join(work, Path(path).name + ".lmplz.txt")
    if not os.path.exists(out):
        with open(path, "rb") as src, open(out + ".tmp", "wb") as dst:
            for line in src:
                dst.write(line.replace(b"<unk>", b"UNKTOK"))
        os.replace(out + ".tmp", out)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", action="append", required=True, help="NAME=PATH")
    ap.add_argument("--budgets", default="1G,4G")
    ap.add_argument("--cutoffs", default="none,srilm")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--order", type=int, default=5)
    ap.add_argument("--lmplz", default=None)
    ap.add_argument("--ngram-count", default=None)
    ap.add_argument("--srilm-max-words", type=int, default=2_000_000, help="SRILM only on corpora up to this size")
    ap.add_argument("--no-single", action="store_true", help="no in-memory suffixlm run (too big)")
    ap.add_argument("--busy", action="store_true", help="beside two busy loops")
    ap.add_argument("--work", default=None, help="scratch directory (default: a new one under /tmp)")
    ap.add_argument("--out", default="kn_scale")
    args = ap.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="bench-kn-scale-")
    os.makedirs(work, exist_ok=True)
    budgets = [b for b in args.budgets.split(",") if b]
    # every process may cache its bytecode, as an installed package has it (pip compiles on
    # install): with PYTHONDONTWRITEBYTECODE set, each run would compile the package's source
    # anew (about 0.03 s), which no user pays
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    subprocess.run([sys.executable, "-c", "import suffixlm.cli, suffixlm.commands.kn, suffixlm.backoff.kn"],
                   check=True)
    suffixlm = [sys.executable, "-m", "suffixlm.cli", "kn"]
    rows = []
    loops = busy_loops(2) if args.busy else []
    try:
        for spec in args.corpus:
            name, path = spec.split("=", 1)
            n_words = sum(len(line.split()) for line in open(path, "rb"))
            peer_text = lmplz_text(path, work) if args.lmplz else None
            for cut in args.cutoffs.split(","):
                mc = ["--min-count", "none"] if cut == "none" else []
                tools = {}
                ref = os.path.join(work, f"{name}.{cut}.ref.arpa")
                if not args.no_single:
                    tools["suffixlm (in memory)"] = (suffixlm + [path, "-o", ref, "--order", str(args.order),
                                                                 "-q", *mc], ref)
                for b in budgets:
                    out = os.path.join(work, f"{name}.{cut}.{b}.arpa")
                    tmp = os.path.join(work, f"tmp-ours-{b}")
                    tools[f"suffixlm --memory {b}"] = (suffixlm + [path, "-o", out, "--order", str(args.order), "-q",
                                                                   "--memory", b, "--temp-dir", tmp, *mc], out, tmp)
                    if args.lmplz and cut == "none":
                        out = os.path.join(work, f"{name}.lmplz.{b}.arpa")
                        tmp = os.path.join(work, f"tmp-lmplz-{b}")
                        tools[f"lmplz -S {b}"] = ([args.lmplz, "-o", str(args.order), "-S", b, "-T", tmp + "/x",
                                                   "--discount_fallback", "--text", peer_text, "--arpa", out], out, tmp)
                if args.ngram_count and n_words <= args.srilm_max_words:
                    out = os.path.join(work, f"{name}.srilm.{cut}.arpa")
                    gt = [] if cut == "srilm" else [f"-gt{n}min" for n in range(1, args.order + 1)]
                    gt = [x for g in gt for x in (g, "1")]
                    tools["SRILM ngram-count"] = ([args.ngram_count, "-order", str(args.order), "-kndiscount",
                                                   "-interpolate", "-unk", "-text", path, "-lm", out, *gt], out)
                results: dict = {t: [] for t in tools}
                for r in range(args.runs):
                    for tool, spec_t in tools.items():
                        cmd, out = spec_t[0], spec_t[1]
                        tmp = spec_t[2] if len(spec_t) > 2 else os.path.join(work, "tmp-none")
                        res = run(cmd, tmp)
                        shutil.rmtree(tmp, ignore_errors=True)
                        res["md5"] = md5(out)
                        results[tool].append(res)
                        print(f"{name} {cut} run {r + 1}: {tool}: {res}", flush=True)
                        os.unlink(out)  # every tool writes a new file: none pays for replacing one
                ref_md5 = results.get("suffixlm (in memory)", [{}])[0].get("md5")
                for tool, rs in results.items():
                    row = {"corpus": name, "words": n_words, "cutoffs": cut, "tool": tool, "runs": len(rs),
                           "busy": args.busy}
                    for k in ("wall_s", "cpu_s", "peak_mb", "temp_mb"):
                        row[k] = statistics.median(x[k] for x in rs)
                    row["wall_all"] = [x["wall_s"] for x in rs]
                    if tool.startswith("suffixlm --memory") and ref_md5:
                        row["identical"] = all(x["md5"] == ref_md5 for x in rs)
                    rows.append(row)
                for f in Path(work).glob(f"{name}.{cut}.*.arpa"):
                    f.unlink()
    finally:
        for p in loops:
            p.kill()
    load = os.getloadavg()
    payload = {"command": " ".join(sys.argv), "order": args.order, "load_after": load, "rows": rows}
    write_json(f"{args.out}.json", payload)
    lines = ["# Kneser-Ney at scale: suffixlm kn vs lmplz -S and ngram-count", "",
             f"Command: `python {' '.join(sys.argv)}`. Order {args.order}; each tool a fresh process, "
             f"interleaved run by run; medians of {args.runs} run(s); Python's bytecode cached as an installed "
             f"package has it; peak RSS from wait4; temporary disk "
             f"sampled every {DU_EVERY:g} s; {'beside two busy loops; ' if args.busy else ''}load average after the "
             f"run {load[0]:.2f}. lmplz reads the text with <unk> rewritten and runs with --discount_fallback. "
             "`identical`: the --memory ARPA file equals the in-memory one byte for byte.", "",
             "| corpus | words | cut-offs | tool | wall s | CPU s | peak MB | temp MB | identical |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['corpus']} | {r['words']:,} | {r['cutoffs']} | {r['tool']} | {r['wall_s']:.2f} | "
                     f"{r['cpu_s']:.2f} | {r['peak_mb']:.0f} | {r['temp_mb']:.0f} | {r.get('identical', '')} |")
    md = BENCH_DIR / f"{args.out}.md"
    md.write_text("\n".join(lines) + "\n")
    print(md.read_text())


if __name__ == "__main__":
    main()
