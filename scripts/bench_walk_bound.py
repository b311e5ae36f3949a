#!/usr/bin/env python3
"""Where a binary model's batch walk spends its time: the walk as it is, against the same
walk with every table line its sentence reads loaded just before (what any table layout
that let the walk prefetch all its probes could at best give: homes hashed from the words,
say, instead of from the record found one probe before):

    python scripts/bench_walk_bound.py --work /tmp/sbq      # writes benchmarks/walk_bound.{json,md}

Models: those of ``scripts/bench_lanes.py`` (made in --work when missing). Per model, in
one process, on one thread, PTB test (``score_sentences``'s walk, ``_walk``, a
sentence after the other), --repeats interleaved rounds, medians in ns a word:

- ``walk``: the walk alone (as ``score_ids`` with the lanes off);
- ``lanes``: eight sentences at a time (``_walk_lanes``);
- ``touch``: only the loads of the lines each sentence's walk reads (its words' records,
  the record of every part of the text found, and the home slot of the first part not
  found at each word: from ``_table_numpy.parts``), a sentence after the other;
- ``touch + walk``: those loads, then the sentence's walk, a sentence after the other;
- ``walk on loaded lines``: ``touch + walk`` less ``touch`` (the loads of a sentence are
  independent of each other, so they overlap: what they cost is about one miss a
  sentence).

The same sums with and without the loads (checked). A table the caches hold gains little
from the loads: the walk there is bound by its own instructions and branches, not by the
table's misses."""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _bench_common import ROOT  # noqa: E402
from bench_lanes import run_models  # noqa: E402

sys.path.insert(0, str(ROOT))


def touch_lists(m, ids, offsets):
    """(slots, their offsets per sentence): the int64 words of the table the walk of each
    sentence reads first on each of its lines."""
    import numpy as np

    from suffixlm.backoff import _table_numpy as TN

    D, V, S, order = m._D, m._V, m._S, m.order
    slot = 2 if D.dtype == np.int64 else 1
    k = len(offsets) - 1
    lengths = np.diff(offsets)
    ext = np.insert(ids, offsets[:-1], 0)  # <s> before each sentence
    starts = offsets[:-1] + np.arange(k)
    first = np.repeat(starts, lengths + 1)
    sent = np.repeat(np.arange(k), lengths + 1)
    R = TN.parts(D, V, S, order, ext, first)
    rows = [(sent, np.where(R[0] >= 0, R[0], 0) * slot)]
    for L in range(2, order + 1):
        e = np.flatnonzero(R[L - 1] >= 0)
        rows.append((sent[e], R[L - 1, e] * slot))
        miss = np.flatnonzero((R[L - 1] < 0) & (R[L - 2] >= 0) & (np.arange(len(ext)) - (L - 1) >= first))
        B, n = TN.region(D, V, S, L)
        if n:
            keys = R[L - 2, miss] * V + ext[miss - (L - 1)]
            rows.append((sent[miss], (V + B + TN.home(keys, n)) * slot))
    owner = np.concatenate([r[0] for r in rows])
    slots = np.concatenate([r[1] for r in rows])
    by = np.argsort(owner, kind="stable")
    return slots[by].astype(np.int64), np.searchsorted(owner[by], np.arange(k + 1)).astype(np.int64)


def kernel():
    import numpy as np
    from numba import njit

    from suffixlm.backoff import _binary_kernels as K

    @njit
    def touch_walk(D, V, S, order, ids, offsets, missing, touch, toffs, walk):
        F, regs, C, qb = K._walk_space(D, V, S, order)
        R = regs.reshape(-1)
        no_lp = np.empty(0, dtype=np.float64)
        n = offsets.shape[0] - 1
        sums = np.zeros(n, dtype=np.float32)
        acc = np.int64(0)
        for s in range(n):
            for t in range(toffs[s], toffs[s + 1]):
                acc += D[touch[t]]
            if walk:
                sums[s] = K._walk(D, F, qb, V, order, R, ids, offsets[s], offsets[s + 1], True, missing, no_lp,
                                  ids[:0], C)
        return sums, acc

    return touch_walk


def measure(path: Path, test: Path, repeats: int) -> dict:
    import numba
    import numpy as np

    import suffixlm
    from suffixlm.backoff import _binary_kernels as K

    numba.set_num_threads(1)
    m = suffixlm.Model(str(path))
    ids, offsets = [], [0]
    for line in open(test):
        ids.extend(m.vocab.id(w) for w in line.split())
        ids.append(m.vocab.id("</s>"))
        offsets.append(len(ids))
    ids, offsets = np.array(ids, dtype=np.int64), np.array(offsets, dtype=np.int64)
    D, V, S, order, miss = m._D, m._V, m._S, m.order, m._missing
    touch, toffs = touch_lists(m, ids, offsets)
    none = np.zeros(len(offsets), dtype=np.int64)
    tw = kernel()
    e = np.empty(0)
    calls = {"walk": lambda: tw(D, V, S, order, ids, offsets, miss, touch, none, True)[0],
             "lanes": lambda: K.score_sentences(D, V, S, order, ids, offsets, True, miss, e, ids[:0], True),
             "touch": lambda: tw(D, V, S, order, ids, offsets, miss, touch, toffs, False)[0],
             "touch + walk": lambda: tw(D, V, S, order, ids, offsets, miss, touch, toffs, True)[0]}
    ref = K.score_sentences(D, V, S, order, ids, offsets, True, miss, e, ids[:0], False).tobytes()
    for name, call in calls.items():
        out = call()
        assert name == "touch" or out.tobytes() == ref, name
    times: dict = {}
    for _ in range(repeats):
        for name, call in calls.items():
            t0 = time.perf_counter()
            call()
            times.setdefault(name, []).append(time.perf_counter() - t0)
    ns = {k: statistics.median(v) / len(ids) * 1e9 for k, v in times.items()}
    ns["walk on loaded lines"] = ns["touch + walk"] - ns["touch"]
    return {"table_bytes": int(D.nbytes), "words": int(len(ids)), "lines_per_word": len(touch) / len(ids),
            "ns_per_word": {k: round(v, 1) for k, v in ns.items()}}


COLUMNS = ("walk", "lanes", "touch", "touch + walk", "walk on loaded lines")


def table(payload: dict) -> str:
    info = payload["machine"]
    out = ["# A batch walk's bound: the walk against the walk on loaded lines", "",
           f"Command: `{info['command']}`, at {info['commit'][:7]} ({info['date']}). "
           f"{info['cpu']}, {info['cpu_count']} CPUs; 1-minute load before: {payload['load']:.2f}. "
           f"PTB test ({payload['rows'][0]['words']:,} words), one thread, medians of {payload['repeats']} "
           "interleaved rounds, ns a word (scripts/bench_walk_bound.py says what each column is).", "",
           "| model | table MB | lines loaded a word | " + " | ".join(COLUMNS) + " |",
           "|---|---|---|" + "---|" * len(COLUMNS)]
    for r in payload["rows"]:
        t = r["ns_per_word"]
        out.append(f"| {r['model']} | {r['table_bytes'] / 2**20:.1f} | {r['lines_per_word']:.2f} | "
                   + " | ".join(f"{t[c]:.1f}" for c in COLUMNS) + " |")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    run_models("walk_bound", __doc__,
               lambda model, path, test, repeats: [{"model": model, **measure(path, test, repeats)}], table, 25)
