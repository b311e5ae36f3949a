"""``suffixlm kn``: estimate an interpolated Kneser-Ney model and write it as ARPA."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import tempfile
import time
import warnings

import click

from ..options import INT32_MAX, order_text
from .params import (
    ORDER, FiniteFloat, binary_option, dask_client, distributed_options, threads_option, wants_binary, write_backoff,
    writing,
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


#: what a Dask worker holds beside the --memory budget of its tasks (the program itself)
WORKER_OVERHEAD = 256 << 20


def _budget_options(memory, temp_dir, order, workers, scheduler, memory_limit) -> int | None:
    """``--memory`` in bytes (None when not given), after checking its combinations."""
    if memory is None:
        if temp_dir is not None:
            raise click.UsageError("--temp-dir is where --memory spills: give --memory too")
        return None
    from ..memory import parse_size

    try:
        budget = parse_size(memory)
    except ValueError as e:
        raise click.BadParameter(str(e), param_hint="--memory") from None
    if order is None:
        raise click.UsageError("--order max is estimated on the suffix tree, in memory: --memory needs a fixed order")
    if memory_limit is not None:
        raise click.UsageError("--memory sets each worker's memory limit: leave out --memory-limit")
    if temp_dir is not None:
        if workers is not None or scheduler is not None:
            raise click.UsageError("--temp-dir: Dask workers spill to their own directory (dask's "
                                   "temporary-directory setting)")
        if not os.path.isdir(temp_dir):
            raise click.BadParameter(f"{temp_dir}: no such directory", param_hint="--temp-dir")
    return budget


#: texts below this many bytes are estimated on one thread under --memory
PARALLEL_TEXT_BYTES = 8 << 20

#: peak memory of gathering the model and building its binary table, per byte of text
#: (order 5, no cut-offs; measured 50 at 10M words: 2.9 GB for 57 MB of text), and of
#: gathering it alone (15): what ``--binary`` and ``--prune`` add beyond ``--memory``
BINARY_BYTES_PER_TEXT_BYTE = 50
GATHERED_BYTES_PER_TEXT_BYTE = 15


def _warn_beyond_budget(budget: int, train_file, binary: bool, echo) -> None:
    """Before any work: say so when ``--binary`` or ``--prune`` will take the process past
    the ``--memory`` budget (the whole model is gathered in memory after the estimate)."""
    from ..memory import human_bytes

    try:
        size = os.path.getsize(train_file) if os.path.isfile(train_file) else 0
    except OSError:
        size = 0
    need = size * (BINARY_BYTES_PER_TEXT_BYTE if binary else GATHERED_BYTES_PER_TEXT_BYTE)
    if need > budget:
        what = "--binary builds the binary model" if binary else "--prune prunes the model"
        size_of = "up to about" if binary else "at least about"  # pruning's own work comes on top
        echo(f"warning: {what} in memory after the estimate, {size_of} {human_bytes(need)} for this text "
             f"(5-grams, no cut-offs), beyond --memory {human_bytes(budget)}; without it the ARPA file is "
             "written within the budget")


def _spill_threads(train_file) -> int:
    """Worker threads of the spill client: numba's thread count (``--threads``), one for a
    small text."""
    import numba

    try:
        if os.path.getsize(train_file) < PARALLEL_TEXT_BYTES:
            return 1
    except OSError:
        pass
    return numba.get_num_threads()


def _plan(budget, train_file, order, spill, progress):
    """(the text to read, its ``MemoryPlan``); gzip and standard input are copied, plain,
    into the spill directory (shards are byte ranges of a file)."""
    from ..distributed.budget import plain_text, plan_memory
    from ..memory import human_bytes

    text = train_file
    if spill is not None:
        text = plain_text(train_file, spill.directory)
        if text != os.fspath(train_file):
            progress.line(f"copied {train_file} to the temporary directory, decompressed")
    plan = plan_memory(budget, os.path.getsize(text) if spill is not None or os.path.isfile(text) else 0, order,
                       spill.threads if spill is not None else 1)
    if spill is not None:
        spill.store.cache_bytes = plan.cache
    if spill is None or not plan.in_memory:
        progress.line(f"memory budget {human_bytes(budget)}: {plan.n_shards} shard(s) of the text, "
                      f"{plan.threads} thread(s), results beyond {human_bytes(plan.cache)} spilled")
    return text, plan


@click.command("kn")
@click.argument("train_file", metavar="TRAIN.txt")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="ARPA file to write (.gz compresses); '-' writes it to stdout (the report then goes to stderr).")
@click.option("--order", default="3", show_default=True, type=ORDER,
              help="n-gram order N, or 'max': every context back to its sentence start, estimated on the "
                   "suffix tree without cut-offs, orders above 4 sharing order 4's discounts (docs/unbounded.md).")
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
@click.option("--memory", "memory", default=None, metavar="SIZE",
              help="Estimate within about SIZE of memory (plus ~160 MB for the program itself), like lmplz -S: "
                   "the text is counted in shards, the n-grams merged and estimated in partitions sized to fit, "
                   "what does not fit spilled to --temp-dir, and the ARPA file streamed out; the same bytes as "
                   "without it. A budget that holds the whole estimate runs it in memory, the arrays a step does not "
                   "read kept in --temp-dir past half the budget. E.g. 2G, 500M, 80% (of this machine's memory). "
                   "With --prune or --binary the model is gathered in memory after the estimate. With --workers, the "
                   "budget of each worker.")
@click.option("--temp-dir", "temp_dir", default=None, metavar="DIR",
              help="Where --memory spills (default: $TMPDIR, else /tmp): a private directory made there and "
                   "removed on exit, on an error, on Ctrl-C and on SIGTERM/SIGHUP; one left by a run killed "
                   "outright on this host is removed by the next run.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of text.")
@click.option("-q", "--quiet", is_flag=True, help="Print nothing but errors.")
@distributed_options
@threads_option
def command(train_file, output, order, modified, min_count, vocab_path, unk, prune, binary, memory, temp_dir,
            as_json, quiet, workers, scheduler, memory_limit):
    """Estimate interpolated Kneser-Ney on TRAIN.txt exactly as SRILM's
    `ngram-count -kndiscount -interpolate -unk` and write MODEL.arpa."""
    binary = wants_binary(binary)  # --quantize implies --binary
    from ..backoff.arpa import ArpaError
    from ..corpus import CorpusError
    from ..backoff.kn import DiscountWarning, KneserNeyLM
    from ..distributed.budget import BudgetError
    from ..distributed.spill import SpillError
    from ..io import write_error_message
    from ..memory import human_bytes, return_freed_memory_to_os
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
    check_output(output, [train_file, vocab_path], binary=binary)  # before any work
    budget = _budget_options(memory, temp_dir, order, workers, scheduler, memory_limit)
    if budget is not None and (binary or prune is not None):
        _warn_beyond_budget(budget, train_file, binary, functools.partial(click.echo, err=True))
    if budget is not None and workers is not None:
        memory_limit = budget + WORKER_OVERHEAD  # each worker's budget, plus the program
    announce_compilation(progress, _kn_kernels, _ngram_kernels)
    return_freed_memory_to_os()
    t0 = time.perf_counter()
    lm = KneserNeyLM(order, modified=modified, min_counts=min_counts)
    # without pruning or a binary model, the ARPA file is streamed from the estimate: the
    # whole model is never in memory
    stream = order is not None and prune is None and not binary
    streamed = None
    spill = None
    with contextlib.ExitStack() as stack:
        client = stack.enter_context(dask_client(workers, scheduler, memory_limit))
        if client is not None and not quiet:
            click.echo(f"estimating on Dask: {len(client.scheduler_info()['workers'])} workers", err=True)
        if client is None and budget is not None:
            from ..distributed.spill import SpillClient

            try:
                client = spill = stack.enter_context(SpillClient(budget, temp_dir, threads=_spill_threads(train_file)))
            except OSError as e:
                raise click.ClickException(f"--temp-dir: {write_error_message(temp_dir or tempfile.gettempdir(), e)}")
            for path in spill.stale:
                progress.line(f"removed {path}, left by a run that was killed")
        caught = stack.enter_context(warnings.catch_warnings(record=True))
        warnings.simplefilter("always", DiscountWarning)
        try:
            if client is not None and (prune is None or budget is not None) and order is not None:
                # the n-grams stay on the workers (or in the spill store); the file is written
                # one partition at a time
                from ..distributed.kn_counts import estimate_text_kn

                text, plan = train_file, None
                if budget is not None:
                    text, plan = _plan(budget, train_file, order, spill, progress)
                if spill is not None and plan.in_memory:
                    progress.line(f"memory budget {human_bytes(budget)}: it holds the estimate in memory"
                                  + (", each step's idle arrays on disk" if plan.shelve and stream else ""))
                    with progress.stage(f"counting and estimating order-{order} Kneser-Ney on {train_file}"):
                        if stream:  # past half the budget, what the step at hand does not read waits on disk
                            streamed, stats = lm.estimate_text(text, vocab_path, unk=unk,
                                                               shelf=spill.shelf() if plan.shelve else None)
                        else:
                            lm.fit_text(text, vocab_path, unk=unk)
                    if streamed is None:
                        lm.model_.sources = (os.fspath(train_file),)
                else:
                    streamed, stats = estimate_text_kn(client, text, order, vocab_path, unk=unk, modified=modified,
                                                       min_counts=min_counts, n_shards=plan and plan.n_shards,
                                                       n_partitions=plan and plan.partitions,
                                                       whole=False if plan is not None else None,
                                                       progress=None if quiet else progress.line)
                if streamed is not None and (prune is not None or binary):  # pruning, binary: the model whole
                    with progress.stage("gathering the model"):
                        lm.model_, lm.info_, lm.vocab_ = streamed.model(), streamed.info, streamed.vocab
                    lm.model_.sources = (os.fspath(train_file),)
                    lm.n_sentences_, lm.n_words_ = stats.n_sentences, stats.n_words
                    streamed = None
            else:
                with progress.stage(f"counting and estimating order-{order_text(order)} Kneser-Ney on "
                                    f"{train_file}"):
                    if client is None and stream:
                        streamed, stats = lm.estimate_text(train_file, vocab_path, unk=unk)
                    else:
                        lm.fit_text(train_file, vocab_path, unk=unk, client=client)
        except (CorpusError, BudgetError) as e:
            raise click.ClickException(str(e)) from None
        except SpillError as e:
            raise click.ClickException(e.strerror) from None
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
                streamed.write_arpa(output, sources=(train_file,))
            elif binary:
                lm.model_.sources = (os.fspath(train_file),)
                write_backoff(lm.model_, output, True)
            else:
                lm.write_arpa(output)
        t2 = time.perf_counter()
        written, peak_disk = spill.disk_use() if spill is not None else (0, 0)
        if written and not quiet:
            progress.line(f"spilled {human_bytes(written)} to {temp_dir or tempfile.gettempdir()} "
                          f"(at most {human_bytes(peak_disk)} at once); removed")
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
