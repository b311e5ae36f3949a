#!/usr/bin/env python3
"""CoNLL-2000 NP chunking: the data Sha & Pereira (2003) report on, from the full task.

Every token keeps its word and part of speech; its chunk tag stays if it is ``B-NP`` or
``I-NP`` and becomes ``O`` otherwise, so the NP chunks are exactly those of the full
task and every other chunk is outside (Sha & Pereira's labels O, B, I with the ``-NP``
suffix kept, so that conlleval scores NP chunks).

    python scripts/np_chunking.py OUTDIR [--corpus DIR]

writes OUTDIR/train.txt and OUTDIR/test.txt (never over the corpus files). Then, e.g.::

    suffixlm crf train --order 2 -p sha-pereira.pat OUTDIR/train.txt np.crf
    suffixlm crf label -m np.crf OUTDIR/test.txt | suffixlm crf eval
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def np_tag(tag: str) -> str:
    """The NP-chunking tag of a full-chunking tag."""
    return tag if tag in ("B-NP", "I-NP") else "O"


def np_labels(y: list[list[str]]) -> list[list[str]]:
    """The NP-chunking labels of label sequences of the full task."""
    return [[np_tag(t) for t in seq] for seq in y]


def convert(src: Path, dst: Path) -> int:
    """Write ``src`` (a CoNLL-2000 file) with NP-chunking tags to ``dst``; returns the token count."""
    sys.path.insert(0, str(ROOT))
    from suffixlm.io import atomic_write

    n = 0
    with open(src, encoding="utf-8") as fin, atomic_write(dst, binary=False, inputs=[src]) as out:
        for line in fin:
            parts = line.split()
            if not parts:
                out.write("\n")
                continue
            parts[-1] = np_tag(parts[-1])
            out.write(" ".join(parts) + "\n")
            n += 1
    return n


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir")
    ap.add_argument("--corpus", default=None, help="the CoNLL-2000 folder (default ../shared/corpora/conll2000)")
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    if args.corpus is None:
        from suffixlm.corpora import shared_path

        corpus = shared_path("corpora", "conll2000")
        if corpus is None:
            sys.exit("needs ../shared/corpora/conll2000 (or --corpus DIR)")
    else:
        corpus = Path(args.corpus)
    os.makedirs(args.outdir, exist_ok=True)
    for name in ("train.txt", "test.txt"):
        n = convert(Path(corpus) / name, Path(args.outdir) / name)
        print(f"{Path(args.outdir) / name}: {n:,} tokens")


if __name__ == "__main__":
    main()
