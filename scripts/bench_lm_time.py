#!/usr/bin/env python3
"""Time to a tuned log-linear LM on full PTB, order 5, against the targets of the
project (one fit to convergence within 60 s; ``--lam auto`` within 5 minutes on this
2-core machine): the two command lines users run, timed from outside.

    python scripts/bench_lm_time.py [--threads 1,2] [--lam LAM] [--skip-auto]

1. ``suffixlm train ptb.train.txt --lam LAM --base kn --signed`` (one fit from w = 0 to
   the default tolerance; LAM: the lambda ``--lam auto`` chose, read from the auto run
   of this script when it ran first, else ``--lam``);
2. ``suffixlm train ptb.train.txt --lam auto --valid ptb.valid.txt`` (the path).
Each with NUMBA_NUM_THREADS from ``--threads``; wall seconds, peak RSS, test perplexity
(``suffixlm ppl``), the solver's iterations. The machine's load average is recorded
before each run (other jobs share it). Writes benchmarks/lm_time.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _bench_common import BENCH_DIR, shared, write_json

#: The console script of the Python running this (the same installation).
SUFFIXLM = str(Path(sys.executable).with_name("suffixlm"))
TARGET_FIT_S = 60.0
TARGET_AUTO_S = 300.0


def run(cmd: list[str], threads: int) -> tuple[float, float, str]:
    """(wall seconds, peak RSS MB of this child, stdout)."""
    env = dict(os.environ, NUMBA_NUM_THREADS=str(threads))
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        out.seek(0)
        err.seek(0)
        if p.returncode != 0:
            raise SystemExit(f"{' '.join(cmd)} failed:\n{err.read()}")
        return wall, usage.ru_maxrss / 1024.0, out.read()


def test_ppl(model: str, test: str) -> float:
    """SRILM's ppl of ``test`` as ``suffixlm ppl --json`` reports it."""
    out = subprocess.run([SUFFIXLM, "ppl", model, test, "--json"], capture_output=True, text=True, check=True).stdout
    return float(json.loads(out)["ppl"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--threads", default="2")
    ap.add_argument("--lam", type=float, default=None, help="lambda of the single fit (default: --lam auto's)")
    ap.add_argument("--skip-auto", action="store_true")
    args = ap.parse_args()
    train, valid, test = (str(shared("corpora", "ptb", f)) for f in ("ptb.train.txt", "ptb.valid.txt", "ptb.test.txt"))
    exe = [SUFFIXLM, "train", train, "--json", "--quiet"]
    rows = []
    lam = args.lam
    with tempfile.TemporaryDirectory() as tmp:
        for threads in [int(t) for t in args.threads.split(",")]:
            for kind in (["auto"] if not args.skip_auto else []) + ["fit"]:
                model = os.path.join(tmp, f"{kind}{threads}.slm")
                if kind == "auto":
                    cmd = exe + ["-o", model, "--lam", "auto", "--valid", valid]
                else:
                    if lam is None:
                        raise SystemExit("--lam is needed with --skip-auto")
                    cmd = exe + ["-o", model, "--lam", repr(lam), "--base", "kn", "--signed"]
                load = os.getloadavg()[0]
                wall, rss, out = run(cmd, threads)
                summary = json.loads(out.strip().splitlines()[-1])
                if kind == "auto" and lam is None:
                    lam = summary["lam"]
                grid = summary.get("lam_grid", [])
                row = {"run": kind, "threads": threads, "wall_s": wall, "train_s": summary["train_seconds"],
                       "peak_rss_mb": rss, "lam": summary["lam"], "steps": summary["steps"],
                       "converged": summary["converged"], "fits": len(grid) or 1,
                       "refined": sum(1 for g in grid if g.get("refined")), "test_ppl": test_ppl(model, test),
                       "valid_ppl": summary.get("valid_ppl"), "load_before": load,
                       "target_s": TARGET_AUTO_S if kind == "auto" else TARGET_FIT_S, "lam_grid": grid,
                       "command": " ".join(["suffixlm"] + cmd[1:]).replace(tmp + "/", "")}
                rows.append(row)
                print(f"{kind:<5} threads {threads}: {wall:7.1f} s wall (target {row['target_s']:.0f}), "
                      f"test ppl {row['test_ppl']:.4f}, lam {row['lam']:.4g}, {row['steps']} steps, "
                      f"{rss:.0f} MB, load before {load:.2f}", flush=True)
    write_json("lm_time.json", {"rows": rows})
    lines = ["# Time to a tuned log-linear LM (full PTB, order 5, KN base, signed weights)", "",
             "`python scripts/bench_lm_time.py " + " ".join(sys.argv[1:]) + "`. Wall seconds of the command, from "
             "reading the text to the written model; targets: one fit within 60 s, `--lam auto` within 300 s. "
             "Load: the 1-minute load average before the run (the machine is shared).", "",
             "| run | threads | wall s | target s | steps (last fit) | fits (refined) | lambda | test ppl | "
             "peak RSS MB | load before |", "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['run']} | {r['threads']} | {r['wall_s']:.1f} | {r['target_s']:.0f} | {r['steps']} | "
                     f"{r['fits']} ({r['refined']}) | {r['lam']:.4g} | {r['test_ppl']:.4f} | "
                     f"{r['peak_rss_mb']:.0f} | {r['load_before']:.2f} |")
    lines += ["", "Commands:", ""] + [f"    {r['command']}" for r in rows]
    (BENCH_DIR / "lm_time.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
