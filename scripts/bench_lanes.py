#!/usr/bin/env python3
"""A binary model's batch walk one sentence at a time against eight at a time (the
lanes, ``_binary_kernels._walk_lanes``), for the rule that chooses between them
(``backoff.table.lanes_pay``), on tables of three sizes, hot and cold:

    python scripts/bench_lanes.py --work /tmp/sbq        # writes benchmarks/lanes.{json,md}

Models: PTB-100k KN5 and PTB KN5 with SRILM's default cut-offs (``../shared/anchors``),
and PTB KN5 without cut-offs (``suffixlm kn ptb.train.txt --order 5 --min-count none``),
each made a binary model in --work (the no-cut-off one reused from
``scripts/bench_query.py``'s work folder when it is there). Per model, in one process:
``score_ids`` and ``score_batch`` over PTB test, on one and two numba threads, with the
lanes off and on, interleaved, --repeats rounds (medians):

- hot: each call right after the one before (the table's lines in cache from the last
  call, as in a loop of batches);
- cold: a pause of 10 ms before each call (on a machine shared with other jobs the
  processor's caches are not ours while we sleep: the first batch after other work).

The same sums either way (checked)."""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import BENCH_DIR, ROOT, machine_info, shared, write_json  # noqa: E402

sys.path.insert(0, str(ROOT))


def prepare(work: Path) -> dict[str, Path]:
    work.mkdir(parents=True, exist_ok=True)
    cli = [sys.executable, "-m", "suffixlm.cli"]
    sources = {"ptb100k-kn5-default": shared("anchors", "srilm", "ptb100k.kn5.srilm-default.arpa.gz"),
               "kn5-default": shared("anchors", "srilm", "ptb.kn5.srilm-default.arpa.gz"),
               "kn5-nocut": work / "kn5-nocut.arpa"}
    if not sources["kn5-nocut"].exists():
        subprocess.run(cli + ["kn", str(shared("corpora", "ptb", "ptb.train.txt")), "--order", "5", "--min-count",
                              "none", "-o", str(sources["kn5-nocut"]), "-q"], check=True)
    out = {}
    for name, arpa in sources.items():
        b = work / f"{name}.bin"
        if not b.exists():
            subprocess.run(cli + ["build-binary", str(arpa), str(b), "-q"], check=True)
        out[name] = b
    return out


def measure(path: Path, test: Path, repeats: int, pause: float) -> dict:
    import numba
    import numpy as np

    import suffixlm
    import suffixlm.backoff.table as T

    T.TIER = "compiled"
    m = suffixlm.Model(str(path))
    lines = [line.strip() for line in open(test)]
    ids, offsets = [], [0]
    for line in lines:
        ids.extend(m.vocab.id(w) for w in line.split())
        ids.append(m.vocab.id("</s>"))
        offsets.append(len(ids))
    ids, offsets = np.array(ids), np.array(offsets)
    calls = {"score_ids": lambda: m.score_ids(ids, offsets), "score_batch": lambda: m.score_batch(lines)}
    sums = {}
    for lanes in (False, True):
        T.LANES = lanes
        for name, call in calls.items():
            sums.setdefault(name, call().tobytes())
            assert call().tobytes() == sums[name], "the lanes changed a sum"
    times: dict = {}
    for _ in range(repeats):
        for threads in (1, 2):
            numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
            for lanes in (False, True):
                T.LANES = lanes
                for name, call in calls.items():
                    if pause:
                        time.sleep(pause)
                    t0 = time.perf_counter()
                    call()
                    times.setdefault(f"{name} {threads}t {'lanes' if lanes else 'one'}", []).append(
                        time.perf_counter() - t0)
    return {"table_bytes": int(m._D.nbytes), "words": int(len(ids)),
            "median_ms": {k: round(statistics.median(v) * 1e3, 3) for k, v in times.items()}}


def table(payload: dict) -> str:
    from suffixlm.backoff.table import last_level_cache_bytes

    info = payload["machine"]
    out = ["# Batch walks: one sentence at a time or eight (the lanes)", "",
           f"Command: `{info['command']}`, at {info['commit'][:7]} ({info['date']}). "
           f"{info['cpu']}, {info['cpu_count']} CPUs; last-level cache listed: "
           f"{last_level_cache_bytes() >> 20} MB; 1-minute load before: {payload['load']:.2f}. "
           f"PTB test ({payload['rows'][0]['words']:,} words), medians of {payload['repeats']} interleaved "
           "rounds, ms. `one`: a sentence at a time; `lanes`: eight at a time "
           "(`backoff.table.LANES`). Hot: each call right after the last; cold: 10 ms of sleep before "
           "each (scripts/bench_lanes.py says why). The same sums either way.", "",
           "| model | table MB | regime | call | 1 thread: one / lanes | 2 threads: one / lanes |",
           "|---|---|---|---|---|---|"]
    for r in payload["rows"]:
        t = r["median_ms"]
        for call in ("score_ids", "score_batch"):
            out.append(f"| {r['model']} | {r['table_bytes'] / 2**20:.1f} | {r['regime']} | `{call}` | "
                       f"{t[f'{call} 1t one']:.2f} / {t[f'{call} 1t lanes']:.2f} | "
                       f"{t[f'{call} 2t one']:.2f} / {t[f'{call} 2t lanes']:.2f} |")
    return "\n".join(out) + "\n"


def run_models(name: str, doc: str, rows_of, table_of, repeats: int) -> None:
    """A benchmark's command line (``--work``, ``--repeats``, default ``repeats``; ``doc``:
    its docstring), every model's rows (``rows_of(model name, path, PTB test, repeats)``:
    a list of row dicts), then ``benchmarks/NAME.json`` and ``NAME.md``
    (``table_of(payload)``)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/suffixlm_bench_query")
    ap.add_argument("--repeats", type=int, default=repeats)
    args = ap.parse_args()
    models = prepare(Path(args.work))
    test = shared("corpora", "ptb", "ptb.test.txt")
    load = os.getloadavg()[0]
    rows = []
    for model, path in models.items():
        for row in rows_of(model, path, test, args.repeats):
            rows.append(row)
            print(row, file=sys.stderr, flush=True)
    payload = {"load": load, "repeats": args.repeats, "rows": rows}
    write_json(f"{name}.json", payload)
    payload["machine"] = machine_info()
    (BENCH_DIR / f"{name}.md").write_text(table_of(payload))


if __name__ == "__main__":
    run_models("lanes", __doc__,
               lambda model, path, test, repeats: [{"model": model, "regime": regime,
                                                    **measure(path, test, repeats, pause)}
                                                   for regime, pause in (("hot", 0.0), ("cold", 0.01))],
               table, 15)
