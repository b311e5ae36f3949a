#!/usr/bin/env python3
"""Batched scoring back to back, and what the OpenMP wait policy does to it: ``score_ids``
over PTB test on a binary model, call after call, against the kenlm module's line loop
over the same text, each in a process of its own (the kenlm one imports only kenlm).

    python scripts/bench_batch_wait.py --kenlm-python /path/to/venv-with-kenlm/bin/python
    python scripts/bench_batch_wait.py --kenlm-python ... --busy   # two busy loops beside it

``import suffixlm`` sets ``OMP_WAIT_POLICY=PASSIVE`` unless the environment names a
policy (docs/threads.md): the second thread of a parallel kernel sleeps as soon as it
waits, so every ``score_ids`` call wakes it. Variants, each a fresh process:

- ``default``: the environment as a user has it (``PASSIVE`` set by the import; the
  call's threads held on CPUs apart, ``threads.spread``);
- ``SUFFIXLM_SPREAD=0``: the same without ``spread`` (Linux then often runs the woken
  thread on the caller's CPU, after the caller's half: docs/threads.md);
- ``GOMP_SPINCOUNT=100000``: libgomp's threads spin about that many iterations before
  they sleep (set before the import; what a decoder that calls batches back to back
  may choose);
- ``OMP_WAIT_POLICY=ACTIVE``: they spin until the process ends;
- ``NUMBA_NUM_THREADS=1``: one thread;
- ``kenlm``: ``model.score(line, bos=True, eos=True)`` for every line (its line loop).

Each process opens the model, makes the ids, runs 10 calls untimed, then --rounds
rounds of: sleep 0.3 s (the threads go idle), then --passes calls timed one by one.
Reported: the median of all timed calls, of the first call after the sleep, and of
the calls from the fourth of a round on; and the CPU time the process burns in the
0.2 s after a call (a spinning thread's cost), median of 3. The processes are run
interleaved, --repeats times; the table gives medians over them.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = r'''
import json, sys, time
peer, path, test, rounds, passes = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
lines = [l.strip() for l in open(test)]
if peer == "kenlm":
    import kenlm
    m = kenlm.Model(path)
    def call():
        for l in lines:
            m.score(l, bos=True, eos=True)
else:
    import numpy as np
    import suffixlm
    m = suffixlm.Model(path)
    get = m.vocab.index.get
    ids, offs = [], [0]
    for l in lines:
        ids.extend([get(w, 2) for w in l.split()] + [1]); offs.append(len(ids))
    ids, offs = np.array(ids), np.array(offs)
    def call():
        m.score_ids(ids, offs)
for _ in range(10):
    call()
times = []
for _ in range(rounds):
    time.sleep(0.3)
    row = []
    for _ in range(passes):
        t0 = time.perf_counter(); call(); row.append(time.perf_counter() - t0)
    times.append(row)
burn = []
for _ in range(3):
    call()
    c0 = time.process_time(); time.sleep(0.2); burn.append(time.process_time() - c0)
print(json.dumps({"times": times, "burn_s": sorted(burn)[1]}))
'''

VARIANTS = {
    "default": {},
    "SUFFIXLM_SPREAD=0": {"SUFFIXLM_SPREAD": "0"},
    "GOMP_SPINCOUNT=100000": {"GOMP_SPINCOUNT": "100000"},
    "OMP_WAIT_POLICY=ACTIVE": {"OMP_WAIT_POLICY": "ACTIVE"},
    "NUMBA_NUM_THREADS=1": {"NUMBA_NUM_THREADS": "1"},
}
POLICY_VARS = ("OMP_WAIT_POLICY", "GOMP_SPINCOUNT", "NUMBA_NUM_THREADS", "SUFFIXLM_SPREAD")


def run_one(python: str, peer: str, env_add: dict, args) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in POLICY_VARS}
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.update(env_add)
    model = args.arpa if peer == "kenlm" else args.model
    r = subprocess.run([python, "-c", WORKER, peer, model, args.test, str(args.rounds), str(args.passes)],
                       capture_output=True, text=True, env=env, check=True)
    return json.loads(r.stdout.strip().splitlines()[-1])


def summary(outs: list[dict]) -> dict:
    allp = [t for o in outs for row in o["times"] for t in row]
    first = [row[0] for o in outs for row in o["times"]]
    steady = [t for o in outs for row in o["times"] for t in row[3:]]
    return {"median_s": statistics.median(allp), "first_after_idle_s": statistics.median(first),
            "steady_s": statistics.median(steady), "burn_s": statistics.median(o["burn_s"] for o in outs),
            "calls": len(allp)}


def table(runs: list[dict]) -> str:
    out = ["# Batched scoring back to back: the OpenMP wait policy", "",
           "Written by `scripts/bench_batch_wait.py` (its docstring says what is timed): `score_ids` over PTB "
           "test (3,761 sentences, 86,191 words with `</s>`) on a binary KN5, call after call, and the kenlm "
           "module's line loop over the same text on the same model's ARPA, each in a process of its own. "
           "Times in ms a call; `x kenlm`: kenlm's median over ours.", ""]
    for run in runs:
        m = run["machine"]
        out += [f"## {run['busy_loops']} busy loops beside it", "",
                f"Commit `{m['commit'][:7]}`, {m['date']}, {m['cpu']} ({m['cpu_count']} cores), load before the "
                f"run {run['load_before']}. Command: `{m['command']}`. Model `{run['model']}`; {run['repeats']} "
                f"interleaved processes a variant, each {run['rounds']} rounds of {run['passes']} calls.", "",
                "| variant | median | first call after 0.3 s idle | calls 4.. of a round | x kenlm (median) "
                "| CPU burnt in 0.2 s after a call |", "|---|---|---|---|---|---|"]
        ken = run["results"]["kenlm"]["median_s"]
        for name, r in run["results"].items():
            ratio = "" if name == "kenlm" else f"{ken / r['median_s']:.1f}"
            out.append(f"| {name} | {r['median_s'] * 1e3:.2f} | {r['first_after_idle_s'] * 1e3:.2f} | "
                       f"{r['steady_s'] * 1e3:.2f} | {ratio} | {r['burn_s'] * 1e3:.1f} ms |")
        out.append("")
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--kenlm-python", required=True, help="a Python with the kenlm module (and nothing of ours)")
    ap.add_argument("--model", default="/tmp/suffixlm_bench_query/kn5-default.bin",
                    help="binary model (bench_query.py makes it)")
    ap.add_argument("--arpa", default=None, help="its ARPA for kenlm (default: PTB's SRILM KN5 anchor)")
    ap.add_argument("--test", default=None, help="default: PTB test")
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--passes", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--busy", action="store_true", help="two busy loops beside the measurement")
    args = ap.parse_args()
    if args.passes < 4 or args.rounds < 1 or args.repeats < 1:
        ap.error("--passes must be at least 4 (calls 4.. of a round are reported), --rounds and --repeats at least 1")
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from _bench_common import BENCH_DIR, busy_loops, machine_info, shared, write_json

    args.test = args.test or str(shared("corpora", "ptb", "ptb.test.txt"))
    args.arpa = args.arpa or str(shared("anchors", "srilm", "ptb.kn5.srilm-default.arpa.gz"))
    busy = busy_loops(2 if args.busy else 0)
    load = open("/proc/loadavg").read().split()[0]
    outs: dict[str, list] = {name: [] for name in [*VARIANTS, "kenlm"]}
    try:
        for _ in range(args.repeats):
            for name, env_add in VARIANTS.items():
                outs[name].append(run_one(sys.executable, "suffixlm", env_add, args))
            outs["kenlm"].append(run_one(args.kenlm_python, "kenlm", {}, args))
    finally:
        for p in busy:
            p.kill()
    new = {"busy_loops": len(busy), "load_before": load, "model": args.model, "repeats": args.repeats,
           "rounds": args.rounds, "passes": args.passes, "results": {k: summary(v) for k, v in outs.items()}}
    path = BENCH_DIR / "batch_wait.json"
    old = json.loads(path.read_text())["runs"] if path.exists() else []
    runs = [r for r in old if r["busy_loops"] != new["busy_loops"]] + [{**new, "machine": machine_info()}]
    write_json("batch_wait.json", {"runs": runs})
    (BENCH_DIR / "batch_wait.md").write_text(table(sorted(runs, key=lambda r: r["busy_loops"])))
    print((BENCH_DIR / "batch_wait.md").read_text())


if __name__ == "__main__":
    main()
