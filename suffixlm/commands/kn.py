"""``suffixlm kn``: estimate an interpolated Kneser-Ney model and write it as ARPA."""

from __future__ import annotations

import functools
import json
import os
import time
import warnings

import click

from ..options import INT32_MAX, order_text
from .params import (
    ORDER, FiniteFloat, binary_option, dask_client, distributed_options, threads_option, write_backoff, writing,
)


def parse_min_counts(text: str | None, order: int, option: str = "--min-count") -> list[int] | None:
    """``--min-count`` value -> per-order cut-offs (None = SRILM's defaults).

    'srilm' = SRILM's defaults (1 for orders 1-2 and above 9, else 2); 'none' = keep
    every n-gram; or a comma list '1,1,2' for orders 1, 2, 3, ... (the last repeats),
    each from 1 to ``INT32_MAX`` (counts are 32-bit); values for orders above ``order``
    are ignored (as SRILM ignores ``-gtNmin`` above ``-order``)."""
    if text is None or text.strip().lower() == "srilm":
        return None
    if text.strip().lower() == "none":
        return [1] * order
    try:
        vals = [int(x) for x in text.split(",") if x.strip()]
        if not vals:
            raise ValueError
    except ValueError:
        raise click.BadParameter(f"{text!r}: expected 'srilm', 'none' or comma-separated integers like 1,1,2",
                                 param_hint=option) from None
    if min(vals) < 1 or max(vals) > INT32_MAX:
        raise click.BadParameter(f"{text!r}: cut-offs must be integers from 1 to {INT32_MAX}", param_hint=option)
    return vals


@click.command("kn")
@click.argument("train_file", metavar="TRAIN.txt")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="ARPA file to write (.gz compresses); '-' writes it to stdout (the report then goes to stderr).")
@click.option("--order", default="3", show_default=True, type=ORDER,
              help="n-gram order N, or 'max': every context back to its sentence start, estimated on the "
                   "suffix tree without cut-offs (docs/unbounded.md).")
@click.option("--modified/--original", default=True, show_default=True,
              help="Modified KN (3 discounts per order, SRILM -kndiscount) or original KN (1 discount, -ukndiscount).")
@click.option("--min-count", "min_count", default="srilm", show_default=True,
              help="Cut-offs per order (SRILM -gtNmin): 'srilm' (n-grams of order 3-9 seen once are dropped), "
                   "'none' (keep all), or a list like 1,1,2 (last value repeats).")
@click.option("--vocab", "vocab_path", type=click.Path(dir_okay=False), default=None,
              help="Vocabulary file (one word per line); other words become <unk>.")
@click.option("--unk/--no-unk", default=True, show_default=True,
              help="Keep <unk> as a word (open vocabulary, SRILM -unk).")
@click.option("--prune", "prune", type=FiniteFloat(0.0), default=None,
              help="Prune the model by relative entropy at this threshold before writing it "
                   "(SRILM -prune; see `suffixlm prune`).")
@binary_option
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@distributed_options
@threads_option
def command(train_file, output, order, modified, min_count, vocab_path, unk, prune, binary, as_json, quiet,
            workers, scheduler, memory_limit):
    """Estimate interpolated Kneser-Ney on TRAIN.txt exactly as SRILM's
    `ngram-count -kndiscount -interpolate -unk` and write MODEL.arpa."""
    from ..backoff.arpa import ArpaError
    from ..corpus import CorpusError
    from ..backoff.kn import DiscountWarning, KneserNeyLM
    from ..memory import return_freed_memory_to_os
    from .params import check_output, check_text_input, report_stream

    from ..backoff import _kn_kernels
    from .. import _ngram_kernels
    from ..progress import Progress, announce_compilation

    echo = functools.partial(click.echo, err=report_stream(output))
    progress = Progress(quiet)
    if order is None:  # the tree's closed forms need every n-gram: SRILM's default cut-offs do not apply
        given = parse_min_counts(min_count, 1)
        if given is not None and any(v != 1 for v in given):
            raise click.UsageError("--order max keeps every n-gram: give --min-count none (or leave it out)")
        min_counts = [1]
    else:
        min_counts = parse_min_counts(min_count, order)
    check_text_input(train_file, "the training text")
    if prune is not None:
        from .prune import parse_threshold

        prune = parse_threshold(prune, "--prune")
    check_output(output, [train_file, vocab_path])  # before any work
    announce_compilation(progress, _kn_kernels, _ngram_kernels)
    return_freed_memory_to_os()
    t0 = time.perf_counter()
    lm = KneserNeyLM(order, modified=modified, min_counts=min_counts)
    streamed = None
    with dask_client(workers, scheduler, memory_limit) as client:
        if client is not None and not quiet:
            click.echo(f"estimating on Dask: {len(client.scheduler_info()['workers'])} workers", err=True)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", DiscountWarning)
            try:
                if client is not None and prune is None and order is not None:
                    # the n-grams stay on the workers; the file is written one partition at a time
                    from ..distributed.kn_counts import estimate_text_kn

                    streamed, stats = estimate_text_kn(client, train_file, order, vocab_path, unk=unk,
                                                       modified=modified, min_counts=min_counts,
                                                       progress=None if quiet else progress.line)
                else:
                    with progress.stage(f"counting and estimating order-{order_text(order)} Kneser-Ney on "
                                        f"{train_file}"):
                        lm.fit_text(train_file, vocab_path, unk=unk, client=client)
            except CorpusError as e:
                raise click.ClickException(str(e)) from None
            except Exception as e:
                if type(e).__name__ != "KilledWorker":
                    raise
                raise click.ClickException(f"Dask workers kept dying on a task (memory limit too low?): "
                                           f"{str(e).splitlines()[0]}") from None
        if prune is not None:
            from ..backoff.prune import prune_entropy

            unpruned_counts = lm.model_.counts
            with progress.stage(f"pruning at threshold {prune:g}"):
                lm.model_ = prune_entropy(lm.model_, prune)
        t1 = time.perf_counter()
        with writing(output, (ArpaError,)), progress.stage(f"writing {output}"):
            if streamed is not None:
                if binary:
                    raise click.ClickException("--binary: the model estimated on the cluster is streamed "
                                               "to ARPA; write it as ARPA, then run suffixlm build-binary")
                streamed.write_arpa(output, sources=(train_file,))
            elif binary:
                lm.model_.sources = (os.fspath(train_file),)
                write_backoff(lm.model_, output, True)
            else:
                lm.write_arpa(output)
        t2 = time.perf_counter()
    for w in caught:
        click.echo(f"warning: {w.message}", err=True)
    if quiet:
        return
    if streamed is not None:
        info, counts, n_parameters, vocab_size = streamed.info, streamed.counts, streamed.n_parameters, \
            len(streamed.vocab)
        n_sentences, n_words = stats.n_sentences, stats.n_words
    else:
        info, counts, n_parameters, vocab_size = lm.info_, lm.model_.counts, lm.model_.n_parameters, len(lm.vocab_)
        n_sentences, n_words = lm.n_sentences_, lm.n_words_
    summary = {
        "train": str(train_file), "output": str(output), "order": order if order is not None else "max",
        "arpa_order": len(counts),
        "method": "modified" if modified else "original",
        "min_counts": min_counts if min_counts is not None else "srilm",
        "sentences": n_sentences, "words": n_words, "vocabulary": vocab_size,
        "ngrams": counts, "discounts": [list(d) for d in info["discounts"]],
        "count_of_counts": info["count_of_counts"], "parameters": n_parameters,
        "estimate_seconds": round(t1 - t0, 3), "write_seconds": round(t2 - t1, 3),
    }
    if prune is not None:
        summary["prune"] = prune
        summary["ngrams_unpruned"] = unpruned_counts
    if as_json:
        echo(json.dumps(summary, indent=2))
        return
    echo(f"{train_file}: {n_sentences} sentences, {n_words} words, vocabulary {vocab_size}")
    if order is None:
        echo(f"order max: contexts of up to {len(counts) - 1} symbols, <s> included (an order-{len(counts)} "
             "ARPA file, every n-gram kept)")
    for n, (c, d) in enumerate(zip(counts, info["discounts"]), start=1):
        ds = f"D={d[0]:.6g}" if not modified else f"D1={d[0]:.6g} D2={d[1]:.6g} D3+={d[2]:.6g}"
        echo(f"  {n}-grams: {c:>10}  {ds}")
    if prune is not None:
        echo(f"pruned at threshold {prune:g}: n-grams {unpruned_counts} -> {lm.model_.counts}")
    echo(f"wrote {output} ({summary['parameters']} parameters) in {t2 - t0:.2f} s "
               f"(estimate {t1 - t0:.2f} s, write {t2 - t1:.2f} s)")
