"""Whole-command start-up: first run (empty numba cache) and warm runs of each command.

    python scripts/bench_startup.py [--runs 3] [--out startup.json]
    python scripts/bench_startup.py --exe before=/venv1/bin/suffixlm --exe after=/venv2/bin/suffixlm

With several ``--exe``, every command is run by each of them in turn (first runs, then
the warm runs interleaved), so that a busy machine slows all of them alike.

Each command is run as a user runs it (``suffixlm ...`` in a subprocess). "first" is one
run with an empty NUMBA_CACHE_DIR of its own (so a command compiles only the kernels it
uses, as on a fresh install); "warm" is the median of ``--runs`` further runs on that
cache. Peak RSS is the warm runs' median. The in-process time each command reports for
its own work (where it prints one) is not subtracted: the figures are what a user waits.

Uses ../shared/corpora (PTB, CoNLL-2000) when present; without them, only ``demo``
and the commands on the shipped sample corpus run.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import write_json  # noqa: E402


def _run(cmd: list[str], env: dict) -> float:
    """Wall seconds of one command."""
    t0 = time.perf_counter()
    r = subprocess.run(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - t0
    if r.returncode != 0:
        raise SystemExit(f"failed ({r.returncode}): {' '.join(cmd)}\n{r.stderr[-2000:]}")
    return wall


def _rss_of(cmd: list[str], env: dict) -> float:
    """Peak RSS of one run, measured in a fresh child (ru_maxrss of children is cumulative)."""
    probe = ("import resource, subprocess, sys; subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL, "
             "stderr=subprocess.DEVNULL, check=True); "
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    out = subprocess.run([sys.executable, "-c", probe, *cmd], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--out", default="startup.json")
    ap.add_argument("--exe", action="append", default=None, metavar="LABEL=PATH",
                    help="a suffixlm executable to time (repeat to compare; default: the one on PATH)")
    ap.add_argument("--only", nargs="*", default=None, help="names of the commands to run")
    args = ap.parse_args()

    from suffixlm.corpora import sample_path, shared_path

    if args.exe:
        exes = dict(e.split("=", 1) for e in args.exe)
    else:
        exes = {"": shutil.which("suffixlm") or sys.exit("the suffixlm command is not on PATH (pip install -e .)")}
    exe = next(iter(exes.values()))  # builds the set-up files
    work = Path(tempfile.mkdtemp(prefix="bench_startup_"))
    tiny_train, tiny_test = str(sample_path("tiny_lm.train.txt")), str(sample_path("tiny_lm.test.txt"))
    ptb, conll = shared_path("corpora", "ptb"), shared_path("corpora", "conll2000")
    chunk_pat = str(sample_path("patterns/chunk.pat"))

    # set-up outputs (not timed): a log-linear model and an ARPA file to score, a CRF to label
    setup_env = dict(os.environ, NUMBA_CACHE_DIR=str(work / "setup_cache"))
    commands: dict[str, list[str]] = {"demo": [exe, "demo"]}
    subprocess.run([exe, "train", tiny_train, "-o", str(work / "tiny.slm"), "--order", "4"], env=setup_env,
                   check=True, capture_output=True)
    commands["ppl (log-linear, sample)"] = [exe, "ppl", str(work / "tiny.slm"), tiny_test]
    if ptb is not None:
        train, test = str(ptb / "ptb.train.txt"), str(ptb / "ptb.test.txt")
        commands["kn (PTB, order 5)"] = [exe, "kn", train, "-o", str(work / "kn5.arpa"), "--order", "5"]
        commands["tree (PTB, order 13)"] = [exe, "tree", train, "--order", "13"]
        subprocess.run([exe, "kn", train, "-o", str(work / "kn5_ppl.arpa"), "--order", "5"], env=setup_env,
                       check=True, capture_output=True)
        commands["ppl --arpa (PTB KN5)"] = [exe, "ppl", "--arpa", str(work / "kn5_ppl.arpa"), test]
    else:
        commands["kn (sample, order 5)"] = [exe, "kn", tiny_train, "-o", str(work / "kn5.arpa"), "--order", "5"]
        commands["tree (sample, order 13)"] = [exe, "tree", tiny_train, "--order", "13"]
    if conll is not None:
        subprocess.run([exe, "crf", "train", "-p", chunk_pat, str(conll / "train.txt"), str(work / "chunk.crf")],
                       env=setup_env, check=True, capture_output=True)
        commands["crf label (CoNLL-2000 test)"] = [exe, "crf", "label", "-m", str(work / "chunk.crf"),
                                                   str(conll / "test.txt"), str(work / "labelled.txt")]
    if args.only:
        commands = {k: v for k, v in commands.items() if k.split()[0] in args.only or k in args.only}

    rows = []
    for name, cmd in commands.items():
        envs, first, warm = {}, {}, {label: [] for label in exes}
        for label, path in exes.items():
            cache = work / f"cache_{label}_{name.split()[0]}"
            shutil.rmtree(cache, ignore_errors=True)
            envs[label] = dict(os.environ, NUMBA_CACHE_DIR=str(cache))
            first[label] = _run([path] + cmd[1:], envs[label])
        for _ in range(args.runs):
            for label, path in exes.items():
                warm[label].append(_run([path] + cmd[1:], envs[label]))
        for label, path in exes.items():
            rss = statistics.median(_rss_of([path] + cmd[1:], envs[label]) for _ in range(min(args.runs, 3)))
            row = {"command": name, "exe": label, "argv": ["suffixlm"] + cmd[1:], "first_s": round(first[label], 2),
                   "warm_s": round(statistics.median(warm[label]), 2),
                   "warm_runs_s": [round(w, 3) for w in warm[label]], "warm_peak_rss_mb": round(rss)}
            rows.append(row)
            print(f"{name:30s} {label:8s} first {row['first_s']:6.2f} s   warm {row['warm_s']:5.2f} s   "
                  f"{row['warm_peak_rss_mb']:5d} MB", flush=True)
    shutil.rmtree(work, ignore_errors=True)
    out = write_json(args.out, {"executables": exes, "runs": args.runs, "load_average": os.getloadavg(),
                                "rows": rows})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
