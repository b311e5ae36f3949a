"""``suffixlm build-binary``: an ARPA file or a log-linear model file as a binary model
(memory-mapped at load, queried in compiled code: :mod:`suffixlm.backoff.binary`)."""

from __future__ import annotations

import os
import time

import click

from .params import threads_option, writing


@click.command("build-binary")
@click.argument("model_path", metavar="IN")
@click.argument("output", metavar="OUT", required=False, type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--verify", is_flag=True,
              help="Check the binary model IN in full (header, vocabulary and the whole table's checksum) and "
                   "write nothing.")
@click.option("--quantize", "quantize", type=click.IntRange(1, 8), default=None, metavar="BITS",
              help="Quantise each n-gram's log10 p (of two words and more) to BITS bits (KenLM's `build_binary "
                   "-q BITS`; here -q is --quiet): a table of 8-byte records instead of 16, about half the file, "
                   "each value replaced by the centre of its bin (equal-count bins per n-gram length); unigrams "
                   "stay exact. `suffixlm ppl` on both files shows what it costs.")
@click.option("--backoff-bits", type=click.IntRange(1, 8), default=None, metavar="BITS",
              help="With --quantize: the bits of each back-off weight (KenLM's -b; default: --quantize's).")
@click.option("-q", "--quiet", is_flag=True, help="No summary, no progress.")
@threads_option
def command(model_path, output, verify, quantize, backoff_bits, quiet):
    """Write IN (an ARPA file, plain or .gz, or a log-linear model file from `suffixlm
    train`, converted exactly as `suffixlm export` does) as the binary model OUT, which
    `suffixlm ppl`, `suffixlm.Model` and decoders open without parsing (it is
    memory-mapped) and query in compiled code, KenLM's `build_binary` role. The numbers
    are those of the ARPA file, bit for bit. OUT is written atomically and never over IN."""
    from ..backoff.binary import BinaryLM, to_binary
    from .params import check_output
    from ..progress import Progress
    from .ppl import load_model

    t0 = time.perf_counter()
    if verify:
        if output is not None:
            raise click.UsageError("--verify checks IN and writes nothing: give no OUT")
        try:
            m = BinaryLM(model_path)
            m.verify()
        except (OSError, ValueError) as e:
            raise click.ClickException(str(e)) from None
        if not quiet:
            click.echo(f"{model_path}: a valid binary model: order {m.order}, {len(m.vocab)} words, "
                       f"{sum(m.counts)} n-grams, {m.file_size} bytes", err=True)
        return
    if output is None:
        raise click.UsageError("give IN OUT (or --verify IN)")
    if backoff_bits is not None and quantize is None:
        raise click.UsageError("--backoff-bits needs --quantize")
    check_output(output, [model_path])  # before any work
    progress = Progress(quiet)
    with progress.stage(f"reading {model_path}"):
        model = load_model(model_path, False)
    if isinstance(model, BinaryLM):
        raise click.ClickException(f"{model_path}: a binary model already")
    with writing(output), progress.stage(f"writing {output}"):
        info = to_binary(model, output, sources=(os.fspath(model_path),), quantize=quantize, backoff_bits=backoff_bits)
    if not quiet:
        report_binary(output, info, time.perf_counter() - t0)


def report_binary(output, info: dict, seconds: float) -> None:
    """The summary line of a binary model written."""
    from .params import report_stream

    counts = ", ".join(f"{c} {n}-grams" for n, c in enumerate(info["counts"], start=1))
    total = max(sum(info["counts"]), 1)
    q = info.get("quantization")
    kind = "binary" if q is None else f"binary, quantised to {q['prob_bits']}/{q['backoff_bits']} bits"
    click.echo(f"wrote {output} ({kind}): {counts}; {info['file_size']} bytes "
               f"({info['file_size'] / total:.1f} bytes an n-gram) in {seconds:.1f} s", err=report_stream(output))
