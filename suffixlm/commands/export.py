"""``suffixlm export``: a log-linear model as an ARPA file."""

from __future__ import annotations

import os
import time

import click

from .params import binary_option, threads_option, wants_binary, write_backoff, writing


@click.command("export")
@click.argument("model_path", metavar="MODEL")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="ARPA file to write (exactly this path; a name ending in .gz is compressed; '-': stdout).")
@binary_option
@click.option("-q", "--quiet", is_flag=True, help="No summary, no progress.")
@threads_option
def command(model_path, output, binary, quiet):
    """Write the log-linear model MODEL (from `suffixlm train`) as an ARPA back-off
    model, for decoders that read ARPA or KenLM (KenLM, Kaldi, Moses, pyctcdecode...).
    The file gives the model's own probabilities (to the printed precision): every
    (context, word) pair seen in training with its probability, every context with its
    back-off weight (the ratio of normalisers). `suffixlm ppl --arpa OUT` and KenLM on
    it give the perplexity of `suffixlm ppl MODEL`."""
    from ..export import loglinear_to_backoff
    from .params import check_output, report_stream
    from ..progress import Progress
    from .ppl import load_model

    check_output(output, [model_path], binary=wants_binary(binary))  # before any work
    t0 = time.perf_counter()
    progress = Progress(quiet)
    with progress.stage(f"reading {model_path}"):
        model = load_model(model_path, False)
    if not hasattr(model, "weights_"):
        raise click.ClickException(f"{model_path}: an ARPA file already; nothing to export")
    with progress.stage("converting to a back-off model"):
        backoff = loglinear_to_backoff(model)
    backoff.sources = (os.fspath(model_path),)
    with writing(output), progress.stage(f"writing {output}"):
        write_backoff(backoff, output, binary)
    if not quiet:
        counts = ", ".join(f"{c} {n}-grams" for n, c in enumerate(backoff.counts, start=1))
        size = f"{os.path.getsize(output)} bytes " if os.path.isfile(output) else ""
        click.echo(f"wrote {output}: {counts}; {size}in {time.perf_counter() - t0:.1f} s", err=report_stream(output))
