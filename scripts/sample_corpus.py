"""Sample a corpus of any size from an ARPA model, reproducibly.

    python scripts/sample_corpus.py MODEL.arpa[.gz] --tokens 50000000 --seed 0 -o OUT.txt[.gz]

Sentences are drawn from the back-off model's distribution (from <s> until </s>; an
empty sentence is redrawn, as a reader would skip its blank line) until at least
--tokens words (markers excluded) are written. Same model, seed and --tokens: same text.
Build the PTB KN5 model first with
``suffixlm kn ../shared/corpora/ptb/ptb.train.txt -o /tmp/ptb.kn5.arpa --order 5``.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import click

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))


@click.command()
@click.argument("model", metavar="MODEL.arpa")
@click.option("--tokens", "n_words", required=True, type=click.IntRange(1), help="Words to draw (at least).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, 2**32 - 1))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="Text file (.gz compresses).")
@click.option("-q", "--quiet", is_flag=True)
def main(model, n_words, seed, output, quiet):
    from suffixlm.backoff.arpa import ArpaError, read_arpa
    from suffixlm.io import atomic_write
    from suffixlm.sample import BackoffSampler

    t0 = time.perf_counter()
    try:
        lm = read_arpa(model)
    except ArpaError as e:
        raise click.ClickException(str(e)) from None
    sampler = BackoffSampler(lm)
    t1 = time.perf_counter()
    written = 0
    with atomic_write(output, binary=False, inputs=(model,)) as fh:
        for text in sampler.sample_lines(n_words, seed):
            fh.write(text)
            written += text.count("\n")
    t2 = time.perf_counter()
    if not quiet:
        click.echo(f"{output}: {written} sentences, >= {n_words} words, seed {seed}; "
                   f"model read in {t1 - t0:.1f} s, sampled in {t2 - t1:.1f} s", err=True)


if __name__ == "__main__":
    main()
