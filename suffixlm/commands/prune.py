"""``suffixlm prune``: relative-entropy pruning of an ARPA model, as SRILM's ``ngram -prune``."""

from __future__ import annotations

import functools
import json
import os
import time

import click

from ..options import INT32_MAX

from .params import FiniteFloat, binary_option, threads_option, wants_binary, write_backoff, writing


def parse_threshold(value, option: str = "--threshold") -> float:
    """The ``--threshold`` (``suffixlm kn --prune``) value checked as ``prune_entropy`` wants it."""
    from ..backoff.prune import check_threshold

    try:
        return check_threshold(value)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint=option) from None


@click.command("prune")
@click.argument("model_path", metavar="MODEL.arpa", type=click.Path(dir_okay=False))
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="ARPA file to write (a name ending in .gz is compressed; '-': stdout); never the input.")
@click.option("--threshold", "-t", required=True, type=FiniteFloat(0.0),
              help="Relative perplexity change below which an n-gram is removed (SRILM -prune), e.g. 1e-8.")
@click.option("--min-order", default=2, show_default=True, type=click.IntRange(1, INT32_MAX),
              help="Prune only n-grams of at least this order (SRILM -minprune; unigrams are never pruned).")
@binary_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@threads_option
def command(model_path, output, threshold, min_order, binary, as_json, quiet):
    """Prune MODEL.arpa (plain or gzip) by relative entropy exactly as SRILM 1.7.3's
    `ngram -unk -lm MODEL.arpa -prune T -write-lm OUT.arpa`: the same n-grams kept,
    the same back-off weights. An n-gram that is the context of a kept longer one is
    kept."""
    from ..backoff.arpa import ArpaError, BackoffLM
    from .params import check_output, report_stream
    from ..backoff.prune import prune_entropy

    t = parse_threshold(threshold)
    check_output(output, [model_path], binary=wants_binary(binary))  # before any work
    from ..progress import Progress

    progress = Progress(quiet)
    t0 = time.perf_counter()
    try:
        with progress.stage(f"reading {model_path}"):
            model = BackoffLM.read_arpa(model_path)
    except (ArpaError, OSError, ValueError) as e:
        raise click.ClickException(str(e)) from None
    t1 = time.perf_counter()
    try:
        with progress.stage(f"pruning {sum(model.counts)} n-grams at threshold {t:g}"):
            pruned = prune_entropy(model, t, min_order)
    except ValueError as e:
        raise click.ClickException(f"{model_path}: {e}") from None
    t2 = time.perf_counter()
    pruned.sources = (os.fspath(model_path),)
    with writing(output), progress.stage(f"writing {output}"):
        write_backoff(pruned, output, binary)
    t3 = time.perf_counter()
    if quiet:
        return
    echo = functools.partial(click.echo, err=report_stream(output))
    summary = {
        "model": str(model_path), "output": str(output), "threshold": t, "min_order": min_order,
        "ngrams_before": model.counts, "ngrams_after": pruned.counts,
        "read_seconds": round(t1 - t0, 3), "prune_seconds": round(t2 - t1, 3), "write_seconds": round(t3 - t2, 3),
    }
    if as_json:
        echo(json.dumps(summary, indent=2))
        return
    echo(f"{model_path}: order {model.order}, pruning at threshold {t:g} (orders >= {min_order})")
    for n, (a, b) in enumerate(zip(model.counts, pruned.counts), start=1):
        echo(f"  {n}-grams: {a:>10} -> {b:>10}")
    echo(f"wrote {output} in {t3 - t0:.2f} s (read {t1 - t0:.2f} s, prune {t2 - t1:.2f} s, "
               f"write {t3 - t2:.2f} s)")
