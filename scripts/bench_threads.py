#!/usr/bin/env python3
"""Threads on an idle and on a loaded machine: each main command on 1 and 2 threads,
before and after the thread policy of ``suffixlm.threads`` (docs/threads.md).

    python scripts/bench_threads.py            # 3 runs of each: about 10 minutes on 2 quiet cores
    python scripts/bench_threads.py --quick    # 1 run of each: about 4 minutes
    python scripts/bench_threads.py --table    # benchmarks/threads.md again from threads.json

(12.5 minutes for 3 runs with other jobs' load on the machine.) ``--note TEXT`` adds a
paragraph to the table's page (e.g. how quiet the machine was).

Commands (each in a subprocess, as a user runs it; the numba cache is warmed first):
``suffixlm train`` on PTB 100k (``ptb.train.100k.txt``) order 5; ``suffixlm kn`` order 5 on
full PTB; ``suffixlm ppl`` of that order-5 log-linear model on the PTB test set;
``suffixlm demo``; ``suffixlm crf train`` on CoNLL-2000 with ``chunk.pat``, 3 iterations.

Configurations, all with ``NUMBA_NUM_THREADS`` = the thread count:

- ``1 thread``: no parallel region has a team, so the policy does not matter;
- ``2 before``: the old default, reproduced on the current code by the environment:
  ``GOMP_SPINCOUNT=300000`` (libgomp's spin when ``OMP_WAIT_POLICY`` is unset: it
  overrides the policy's spin count) and ``SUFFIXLM_MIN_PARALLEL=0`` (no one-thread rule
  for small models); only the serial small tree levels of ``_lm_kernels`` stay;
- ``2 after``: the default now (``OMP_WAIT_POLICY``, ``GOMP_SPINCOUNT`` and
  ``SUFFIXLM_MIN_PARALLEL`` removed from the environment).

Loads: ``idle`` (nothing started beside it; the 1-minute load average before each run is
recorded, since the machine may not be idle) and ``busy`` (two ``while True: pass``
Python processes started beside it for the block, killed after). Runs are interleaved:
for each repetition, each load, each command, each configuration. The tables give the
median wall seconds and the median CPU seconds (user + system) of the command.

Writes benchmarks/threads.json and benchmarks/threads.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, ROOT, run_sampled, shared, write_json  # noqa: E402

CONFIGS = {
    "1 thread": (1, {}),
    "2 before": (2, {"GOMP_SPINCOUNT": "300000", "SUFFIXLM_MIN_PARALLEL": "0"}),
    "2 after": (2, {}),
}
LOADS = ("idle", "busy")
POLICY_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "SUFFIXLM_MIN_PARALLEL", "NUMBA_NUM_THREADS",
               "NUMBA_THREADING_LAYER")


def suffixlm(*args) -> list[str]:
    return [sys.executable, "-m", "suffixlm.cli", *map(str, args)]


def commands(tmp: Path) -> dict[str, list[str]]:
    ptb = shared("corpora", "ptb")
    conll = shared("corpora", "conll2000")
    return {
        "train": suffixlm("train", ptb / "ptb.train.100k.txt", "-o", tmp / "m5.npz", "--order", 5, "--quiet"),
        "kn": suffixlm("kn", ptb / "ptb.train.txt", "-o", tmp / "kn5.arpa", "--order", 5, "--quiet"),
        "ppl": suffixlm("ppl", tmp / "model5.npz", ptb / "ptb.test.txt"),
        "demo": suffixlm("demo", "--quiet"),
        "crf train": suffixlm("crf", "train", "-p", "chunk", "--maxiter", 3, "--quiet", conll / "train.txt",
                              tmp / "chunk.crf"),
    }


def shown(cmd: list[str]) -> str:
    """``suffixlm ...`` with file names for paths."""
    return " ".join(["suffixlm"] + [Path(a).name if "/" in a else a for a in cmd[3:]])


def environment(config: str) -> dict:
    threads, extra = CONFIGS[config]
    env = {k: v for k, v in os.environ.items() if k not in POLICY_VARS}
    env.update(extra, NUMBA_NUM_THREADS=str(threads))
    return env


def load1() -> float:
    return float(Path("/proc/loadavg").read_text().split()[0])


def uptime() -> str:
    try:
        return subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    except OSError:
        return ""


def timed(cmd: list[str], env: dict) -> dict:
    """Wall and CPU seconds (the child's user + system time) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    load = load1()
    wall, rss, _, _ = run_sampled(cmd, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"wall": round(wall, 3), "cpu": round(cpu, 3), "load1": load, "rss_mb": round(rss / 2**20, 1)}


class BusyLoops:
    """``n`` Python processes spinning beside the benchmark while the block runs."""

    def __init__(self, n: int):
        self.n = n
        self.procs: list[subprocess.Popen] = []

    def __enter__(self):
        self.procs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(self.n)]
        time.sleep(0.5)
        return self

    def __exit__(self, *exc):
        for p in self.procs:
            p.kill()
        for p in self.procs:
            p.wait()


def median(xs):
    return statistics.median(xs) if xs else float("nan")


def table(runs: list[dict], names: list[str]) -> list[str]:
    out = ["| command | load | load avg (1 min) | " + " | ".join(f"{c} s" for c in CONFIGS) +
           " | 2 after / 1 thread | 2 after / 2 before | CPU s: 1 thread / 2 before / 2 after |",
           "|---|---|---|" + "---:|" * (len(CONFIGS) + 3)]
    for name in names:
        for load in LOADS:
            sel = [r for r in runs if r["command"] == name and r["load"] == load]
            if not sel:
                continue
            wall = {c: median([r["wall"] for r in sel if r["config"] == c]) for c in CONFIGS}
            cpu = {c: median([r["cpu"] for r in sel if r["config"] == c]) for c in CONFIGS}
            loads = [r["load1"] for r in sel]
            out.append(f"| {name} | {load} | {min(loads):.1f}-{max(loads):.1f} | "
                       + " | ".join(f"{wall[c]:.2f}" for c in CONFIGS)
                       + f" | {wall['2 after'] / wall['1 thread']:.2f} | {wall['2 after'] / wall['2 before']:.2f} | "
                       + " / ".join(f"{cpu[c]:.1f}" for c in CONFIGS) + " |")
    return out


def write_md(payload: dict) -> Path:
    names = list(payload["commands"])
    lines = [
        "# Threads on an idle and a loaded machine",
        "",
        "`python scripts/bench_threads.py" + (" --quick" if payload["reps"] == 1 else "") + "` "
        f"({payload['reps']} run(s) of each, interleaved; medians). numba {payload['numba']}, threading layer "
        f"`{payload['threading_layer']}`, {payload['cpu_count']} cores. Commands: "
        + "; ".join(f"`{n}`: `{c}`" for n, c in payload["commands"].items()) + ".",
        "",
        "Configurations (all with `NUMBA_NUM_THREADS` = the count): **1 thread**; **2 before**: the old default "
        "(`GOMP_SPINCOUNT=300000`, libgomp's spin when `OMP_WAIT_POLICY` is unset, and `SUFFIXLM_MIN_PARALLEL=0`: "
        "no one-thread rule for small models); **2 after**: the default now (idle threads sleep, "
        "`OMP_WAIT_POLICY=PASSIVE`; models under 50,000 parameters on one thread). Loads: **idle** (nothing "
        "started beside the command: the load average column says how idle the machine was) and **busy** (two "
        "`python -c 'while True: pass'` processes beside it). CPU s: user + system time of the command "
        "(spinning threads show there).",
        "",
        f"Started: `{payload['uptime_start']}`; ended: `{payload['uptime_end']}`; {payload['seconds']:.0f} s in all.",
        "",
        *([payload["note"], ""] if payload.get("note") else []),
        *table(payload["runs"], names),
        "",
        "See docs/threads.md for the causes and the policy; benchmarks/threads.json has every run.",
        "",
    ]
    out = BENCH_DIR / "threads.md"
    out.write_text("\n".join(lines))
    return out


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="runs of each command and configuration (default 3)")
    ap.add_argument("--quick", action="store_true", help="one run of each (about 3 minutes)")
    ap.add_argument("--commands", default=None, help="comma-separated subset: train,kn,ppl,demo,crf train")
    ap.add_argument("--busy", type=int, default=2, help="busy-loop processes of the busy load (default 2)")
    ap.add_argument("--note", default="", help="a paragraph for benchmarks/threads.md")
    ap.add_argument("--table", action="store_true", help="only write threads.md from threads.json")
    args = ap.parse_args(argv)
    if args.table:
        import json

        payload = json.loads((BENCH_DIR / "threads.json").read_text())
        payload["note"] = args.note or payload.get("note", "")
        print(f"wrote {write_md(payload)}", file=sys.stderr)
        return
    reps = 1 if args.quick else args.reps
    import numba

    layer = subprocess.run([sys.executable, "-c", "import suffixlm, numba, numpy as np\n"
                            "from suffixlm.solvers._kernels import extrapolate\n"
                            "x = np.ones(4); extrapolate(x, x, 0.5, np.empty(4)); print(numba.threading_layer())"],
                           capture_output=True, text=True, cwd=ROOT).stdout.strip()
    t_start = time.perf_counter()
    start = uptime()
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        cmds = commands(tmp)
        if args.commands:
            want = [c.strip() for c in args.commands.split(",")]
            unknown = set(want) - set(cmds)
            if unknown:
                sys.exit(f"unknown command(s): {', '.join(sorted(unknown))}; choose among {', '.join(cmds)}")
            cmds = {k: v for k, v in cmds.items() if k in want}
        # the model ppl scores, and a warm numba cache for every command (untimed)
        subprocess.run(suffixlm("train", shared("corpora", "ptb", "ptb.train.100k.txt"), "-o", tmp / "model5.npz",
                                "--order", 5, "--quiet"), check=True, env=environment("2 after"))
        for name, cmd in cmds.items():
            print(f"warm-up: {name}", file=sys.stderr, flush=True)
            run_sampled(cmd, environment("2 after"))
        runs = []
        for rep in range(reps):
            for load in LOADS:
                with BusyLoops(args.busy if load == "busy" else 0):
                    for name, cmd in cmds.items():
                        for config in CONFIGS:
                            r = timed(cmd, environment(config))
                            r.update(command=name, load=load, config=config, rep=rep)
                            runs.append(r)
                            print(f"[{rep + 1}/{reps}] {load:4s} {name:9s} {config:8s} {r['wall']:7.2f} s "
                                  f"(cpu {r['cpu']:.1f} s, load {r['load1']:.2f})", file=sys.stderr, flush=True)
    payload = {
        "reps": reps, "busy_loops": args.busy, "numba": numba.__version__, "threading_layer": layer,
        "cpu_count": os.cpu_count(), "configs": {c: {"threads": t, "env": e} for c, (t, e) in CONFIGS.items()},
        "commands": {k: shown(v) for k, v in cmds.items()},
        "uptime_start": start, "uptime_end": uptime(), "seconds": time.perf_counter() - t_start, "note": args.note,
        "runs": runs,
    }
    path = write_json("threads.json", payload)
    print(f"wrote {path} and {write_md(payload)}", file=sys.stderr)


if __name__ == "__main__":
    main()
