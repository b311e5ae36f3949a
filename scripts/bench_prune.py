#!/usr/bin/env python
"""Relative-entropy pruning against SRILM 1.7.3's ``ngram -prune``: exactness and speed.

For every row of the "Pruning and mixing" table of ../shared/anchors/README.md (SRILM's
full-PTB KN5 default and KN3 nocut models pruned at 1e-9 .. 1e-6): our
``prune_entropy`` on the same input file at the same threshold, the n-gram counts and
``ppl`` / ``ppl1`` on ptb.test.txt beside SRILM's; where SRILM's pruned file is in
anchors/srilm/, whether ours is the same file byte for byte. Times: in-process
``prune_entropy`` (one warm-up, then the median of --runs; reading the input and
scoring excluded), and one end-to-end ``suffixlm prune`` per input (a fresh process:
read, prune, write).

Writes benchmarks/prune.json and benchmarks/prune.md.

    python scripts/bench_prune.py [--runs 3]
"""

from __future__ import annotations

import argparse
import gzip
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from _bench_common import BENCH_DIR, shared, write_json  # noqa: E402

INPUTS = {"ptb.kn5.srilm-default": "ptb.kn5.srilm-default.arpa.gz", "ptb.kn3.srilm-nocut": "ptb.kn3.srilm-nocut.arpa.gz"}
SRILM_FILES = {  # (input, threshold) -> SRILM's pruned file in anchors/srilm/
    ("ptb.kn5.srilm-default", "1e-8"): "ptb.kn5.default.prune1e-8.srilm.arpa.gz",
    ("ptb.kn5.srilm-default", "1e-7"): "ptb.kn5.default.prune1e-7.srilm.arpa.gz",
    ("ptb.kn3.srilm-nocut", "1e-7"): "ptb.kn3.nocut.prune1e-7.srilm.arpa.gz",
}


def parse_prune_table(readme: str) -> list[dict]:
    """The rows of the README's pruning table: input, threshold (text), counts, ppl, ppl1 (text)."""
    rows = []
    section = readme.split("### Pruning and mixing", 1)[-1]
    current = None
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not line.startswith("|"):
            continue
        m = re.match(r"`([^`]+)`", cells[0])
        if m:
            current = m.group(1)
        elif cells[0] != "same":
            continue
        if not re.fullmatch(r"[\d.]+e-\d+", cells[1]):
            continue
        ppl = re.fullmatch(r"([\d.]+)\s*/\s*([\d.]+)", cells[3])
        rows.append({"input": current, "threshold": cells[1],
                     "srilm_counts": [int(x) for x in cells[2].split("/")],
                     "srilm_ppl": ppl.group(1), "srilm_ppl1": ppl.group(2)})
    return rows


def end_to_end(model_path: Path, threshold: str) -> float:
    """Wall seconds of ``suffixlm prune`` in a fresh process (warm numba cache)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "suffixlm.cli", "prune", str(model_path), "-o", str(Path(tmp) / "out.arpa"),
               "--threshold", threshold, "-q"]
        subprocess.run(cmd, env=env, check=True, cwd=ROOT)  # warm-up (numba cache)
        t0 = time.perf_counter()
        subprocess.run(cmd, env=env, check=True, cwd=ROOT)
        return time.perf_counter() - t0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()

    from suffixlm.backoff.arpa import BackoffLM
    from suffixlm.corpus import Corpus
    from suffixlm.evaluate import score
    from suffixlm.backoff.prune import prune_entropy

    table = parse_prune_table(shared("anchors", "README.md").read_text())
    if not table:
        sys.exit("no pruning table found in anchors/README.md")
    test_path = shared("corpora", "ptb", "ptb.test.txt")
    rows = []
    inputs = {}
    for name, fname in INPUTS.items():
        path = shared("anchors", "srilm", fname)
        t0 = time.perf_counter()
        model = BackoffLM.read_arpa(path)
        t_read = time.perf_counter() - t0
        t0 = time.perf_counter()
        prune_entropy(model, 1e-7)  # first call in this process (numba cache loaded, or compiled)
        t_first = time.perf_counter() - t0
        inputs[name] = {"file": fname, "counts": model.counts, "read_s": round(t_read, 3),
                        "first_prune_call_s": round(t_first, 3),
                        "end_to_end_cli_1e-7_s": round(end_to_end(path, "1e-7"), 3)}
        corpus = Corpus.from_text(test_path, model.vocab)
        for row in (r for r in table if r["input"] == name):
            t = float(row["threshold"])
            times = []
            for _ in range(args.runs):
                t0 = time.perf_counter()
                pruned = prune_entropy(model, t)
                times.append(time.perf_counter() - t0)
            rep = score(pruned, corpus)
            ppl, ppl1 = f"{rep.ppl:.7g}", f"{rep.ppl1:.7g}"
            out = {**row, "counts": pruned.counts, "ppl": ppl, "ppl1": ppl1,
                   "same_counts": pruned.counts == row["srilm_counts"],
                   "same_ppl": (ppl, ppl1) == (row["srilm_ppl"], row["srilm_ppl1"]),
                   "prune_s": [round(x, 3) for x in times], "prune_median_s": round(statistics.median(times), 3)}
            ref = SRILM_FILES.get((name, row["threshold"]))
            if ref:
                theirs = gzip.decompress(shared("anchors", "srilm", ref).read_bytes())
                ours = pruned.arpa_bytes()
                out["srilm_file"] = ref
                out["byte_identical"] = ours == theirs
                if ours != theirs:
                    a, b = set(ours.split(b"\n")), set(theirs.split(b"\n"))
                    out["lines_only_ours"], out["lines_only_srilm"] = len(a - b), len(b - a)
            rows.append(out)
            print(f"{name} {row['threshold']}: {pruned.counts} ppl {ppl} / {ppl1} "
                  f"(SRILM {row['srilm_ppl']} / {row['srilm_ppl1']}) {out['prune_median_s']:.2f} s"
                  + (f" byte-identical={out['byte_identical']}" if ref else ""))
        del model, corpus

    load = os.getloadavg()
    result = {"runs": args.runs, "inputs": inputs, "rows": rows, "load_average_at_end": [round(x, 2) for x in load],
              "note": "SRILM figures from ../shared/anchors/README.md (SRILM 1.7.3 `ngram -order N -unk -lm IN "
                      "-prune T -write-lm OUT`, then `ngram -order N -unk -lm OUT -ppl ptb.test.txt`); "
                      "prune_s: in-process prune_entropy only (the input already read); "
                      "the machine had another long job running on its 2 cores"}
    path = write_json("prune.json", result)
    import json

    machine = json.loads(path.read_text())["machine"]
    md = ["# Relative-entropy pruning vs SRILM 1.7.3 `ngram -prune`", "",
          f"Command: `{machine['command']}` ({machine['date']}, {machine['cpu']}, {machine['cpu_count']} cores, "
          f"Python {machine['python']}; load average at the end {load[0]:.2f}: another job was running).", "",
          "Input: SRILM's own ARPA files; SRILM ran `ngram -order N -unk -lm IN -prune T -write-lm OUT` and scored "
          "OUT on ptb.test.txt. Ours: `suffixlm.backoff.prune.prune_entropy(BackoffLM.read_arpa(IN), T)`, scored "
          "the same way. Time: `prune_entropy` alone, median of "
          f"{args.runs} (the input already in memory).", "",
          "| input | threshold | n-grams kept, ours | same as SRILM | ppl / ppl1, ours | SRILM | same file as SRILM "
          "| prune time |",
          "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        same_file = {True: "byte for byte", False: "NO"}.get(r.get("byte_identical"), "(no SRILM file)")
        md.append(f"| {r['input']} | {r['threshold']} | {' / '.join(map(str, r['counts']))} | "
                  f"{'yes' if r['same_counts'] else 'NO: ' + ' / '.join(map(str, r['srilm_counts']))} | "
                  f"{r['ppl']} / {r['ppl1']} | {r['srilm_ppl']} / {r['srilm_ppl1']}"
                  f"{'' if r['same_ppl'] else ' (DIFFERENT)'} | {same_file} | {r['prune_median_s']:.2f} s |")
    md += ["", "| input | n-grams | read ARPA | first `prune_entropy` call | `suffixlm prune` end to end (T = 1e-7) |",
           "|---|---|---|---|---|"]
    for name, v in inputs.items():
        md.append(f"| {v['file']} | {' / '.join(map(str, v['counts']))} | {v['read_s']:.2f} s | "
                  f"{v['first_prune_call_s']:.2f} s | {v['end_to_end_cli_1e-7_s']:.2f} s |")
    md += ["", "The README gives no SRILM timing for pruning, so there is no speed ratio here."]
    (BENCH_DIR / "prune.md").write_text("\n".join(md) + "\n")
    print(f"wrote {path} and {BENCH_DIR / 'prune.md'}")


if __name__ == "__main__":
    main()
