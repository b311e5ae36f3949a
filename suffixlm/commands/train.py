"""``suffixlm train``: fit a log-linear LM with a structured penalty."""

from __future__ import annotations

import json
import time
import warnings

import click

from ..model_selection import PATH_FACTOR, PATH_START, PATH_TOL, PATIENCE
from ..options import INT32_MAX, LM_BASES, LM_INITS, LM_PENALTIES, LM_SOLVERS, SEED_MAX
from .params import (
    ORDER, FiniteFloat, checkpoint_options, dask_client, distributed_options, min_word_count, min_word_count_option,
    parse_lam, quantize_bits, quantize_option, threads_option, writing,
)


@click.command("train")
@click.argument("train_file", metavar="TRAIN.txt")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False, allow_dash=True),
              help="Model file to write (exactly this path; '-': stdout, never a terminal).")
@click.option("--order", default="5", show_default=True, type=ORDER,
              help="n-gram order N (contexts of N-1 words), or 'max': every context back to its sentence start, "
                   "the model on the collapsed suffix tree (docs/unbounded.md).")
@click.option("--penalty", default="linf-tree", show_default=True, type=click.Choice(LM_PENALTIES))
@click.option("--lam", "lam_text", default=None,
              help="Regularisation strength (per-token mean loss + lam * Omega). Default: 'auto' with --valid, "
                   "else 'default'. 'default' = 1/(training tokens); "
                   f"'auto' chooses it on --valid along a warm-started path from {PATH_START:g} times that, "
                   f"divided by {PATH_FACTOR:g} per fit until the validation perplexity has been worse than the best "
                   f"{PATIENCE} time(s); the path's fits stop at tolerance {PATH_TOL:g}, then the chosen lambda and "
                   f"the one before it are refined to --tol.")
@click.option("--alpha", type=FiniteFloat(0.0, min_open=True), default=None, help="Weight groups at depth d by alpha**d (weighted penalties).")
@click.option("--base", default=None, type=click.Choice(LM_BASES),
              help="Base measure inside the softmax: kn (default): P(v|x) proportional to P_KN(v|x) exp(score), "
                   "modified Kneser-Ney without cut-offs, so all weights 0 is that model (the best model measured, "
                   "benchmarks/lm_variants.md); none: the paper's model.")
@click.option("--signed/--positive", default=None,
              help="Weights of either sign (with --base kn they can also lower the base's probabilities) or "
                   "weights >= 0 as in the paper. Default: --signed with --base kn, else --positive.")
@click.option("--discount", default=0.0, show_default=True, type=FiniteFloat(0.0),
              help="Multiplier of count-class l1 weights (modified KN's discounts D1, D2, D3+ per depth) "
                   "added under the tree penalty; 0 = none.")
@click.option("--solver", default="fista", show_default=True, type=click.Choice(LM_SOLVERS),
              help="fista: full-batch accelerated proximal gradient (fastest, measured); "
                   "sage: Algorithm 1 (accelerated stochastic proximal gradient over mini-batches).")
@click.option("--epochs", default=2000, show_default=True, type=click.IntRange(1, INT32_MAX),
              help="Maximum epochs (a cap: training stops by --tol first; full PTB, order 5: 45 to 173).")
@click.option("--batch-size", type=click.IntRange(1, INT32_MAX), default=None,
              help="Initial mini-batch size (sage). Default: tokens/32.")
@click.option("--batch-growth", default=2.0, show_default=True, type=FiniteFloat(1.0),
              help="Batch growth per epoch (sage).")
@click.option("--tol", default=1e-6, show_default=True, type=FiniteFloat(0.0),
              help="Stop when the objective's relative decrease stays below this.")
@click.option("--init", default="smoothed", show_default=True, type=click.Choice(LM_INITS))
@click.option("--valid", "valid_file", default=None, metavar="VALID.txt",
              help="Held-out text: lambda is chosen on it (--lam auto, the default with --valid) and its perplexity "
                   "is reported.")
@click.option("--vocab", "vocab_file", default=None, help="Vocabulary file (one word per line).")
@min_word_count_option
@click.option("--unk/--no-unk", default=True, show_default=True,
              help="Open vocabulary: unseen test words are scored as <unk> (SRILM's -unk, as `suffixlm kn`).")
@click.option("--seed", default=0, show_default=True, type=click.IntRange(0, SEED_MAX))
@checkpoint_options()
@click.option("--write-binary", "binary_path", default=None, type=click.Path(dir_okay=False), metavar="OUT.bin",
              help="Also write the model as a binary model there: its exact back-off form (`suffixlm export`'s), "
                   "memory-mapped at load and queried at a back-off model's speed, for decoders; what `suffixlm "
                   "build-binary MODEL OUT.bin` writes. The model file is written first.")
@quantize_option("With --write-binary: a quantised binary model, each log10 p and back-off weight in BITS bits "
                 "(`suffixlm build-binary --quantize BITS`, KenLM's -q / -b).")
@click.option("-q", "--quiet", is_flag=True, help="No progress output.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary at the end.")
@distributed_options
@threads_option
def command(train_file, output, order, penalty, lam_text, alpha, base, signed, discount, solver, epochs, batch_size,
            batch_growth, tol, init, valid_file, vocab_file, min_count, unk, seed, checkpoint_path, checkpoint_every,
            resume, binary_path, quiet, as_json, workers, scheduler, memory_limit):
    """Train a log-linear language model on TRAIN.txt (one sentence per line).

    With --workers/--scheduler the text's (context, target) events are counted on Dask
    (workers read byte ranges of TRAIN.txt) and the model is built from the merged
    counts: the same model as in one process; training itself runs here."""
    from ..corpus import Corpus, CorpusError, load_training_corpus
    from ..model import LogLinearLM
    from .params import check_output, check_text_input, open_checkpoint, training_interrupts

    from ..progress import Progress, announce_compilation

    progress = Progress(quiet)
    min_count = min_word_count(min_count)
    if lam_text is None:
        lam_text = "auto" if valid_file is not None else "default"
    lam = parse_lam(lam_text)
    inputs = [train_file, valid_file, vocab_file]
    for path, what in ((train_file, "the training text"), (valid_file, "the validation text")):
        check_text_input(path, what)
    check_output(output, inputs, binary=True)  # before any work: the model never replaces an input, and can be written
    if quantize_bits() is not None and binary_path is None:
        raise click.UsageError("--quantize needs --write-binary (the model file itself is never quantised)")
    if binary_path is not None:
        if str(binary_path) == "-":
            raise click.UsageError("--write-binary names a file (the binary model is memory-mapped where it lies)")
        check_output(binary_path, inputs + [output, checkpoint_path], binary=True)
        for other, what in ((output, "the model file -o"), (checkpoint_path, "the checkpoint --checkpoint")):
            if other not in (None, "-") and _same_path(binary_path, other):
                raise click.UsageError(f"--write-binary {binary_path} is {what} {other}: give another name")
    if lam == "auto" and valid_file is None:
        raise click.UsageError("--lam auto needs --valid VALID.txt to choose lambda on")
    if base is None:
        base = "kn"
    if signed is None:
        signed = base == "kn"
    # the options that change the model (--epochs is a cap, except along a lambda path)
    context = {"command": "suffixlm train", "order": order, "penalty": penalty, "lam": lam, "alpha": alpha,
               "base": base, "signed": signed, "discount": discount, "solver": solver, "batch_size": batch_size,
               "batch_growth": batch_growth, "tol": tol, "init": init, "seed": seed,
               **({"epochs": epochs} if lam == "auto" else {})}
    distributed = workers is not None or bool(scheduler)
    if distributed and solver != "fista":
        raise click.UsageError(f"--solver {solver} draws mini-batches of training positions; with "
                               "--workers/--scheduler the model is built from counts: use --solver fista")
    ck = open_checkpoint(checkpoint_path, checkpoint_every, resume, context, output, inputs)
    try:
        if distributed:
            corpus = _count_on_dask(train_file, order, vocab_file, min_count, unk, base == "kn" and order is not None,
                                    workers, scheduler, memory_limit, quiet)
        else:
            corpus = load_training_corpus(train_file, vocab_path=vocab_file, min_count=min_count, unk=unk)
        valid = Corpus.from_text(valid_file, corpus.vocab) if valid_file else None
    except CorpusError as e:
        raise click.ClickException(str(e)) from None
    if not quiet:
        click.echo(f"{train_file}: {corpus.n_sentences} sentences, {corpus.n_words} words, vocabulary {len(corpus.vocab)}",
                   err=True)
        click.echo(describe_model(order, base, signed, penalty, alpha, discount, lam,
                                  corpus.n_words + corpus.n_sentences, valid_file),
                   err=True)
        from .. import _lm_kernels
        from ..penalties import _linf_tree

        announce_compilation(progress, _lm_kernels, _linf_tree)

    lm = LogLinearLM(order=order, penalty=penalty, alpha=alpha, solver=solver, max_iter=epochs,
                     batch_size=batch_size, batch_growth=batch_growth, tol=tol, seed=seed, init=init, base=base,
                     positive=not signed, discount=discount)

    def train_all():
        return fit_lm(lm, corpus, valid, lam, progress, ck)

    try:
        with training_interrupts(ck, output):
            model, grid_results = train_all()
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    with writing(output), training_interrupts(ck, output, saving=True):
        model.save(output, inputs=[p for p in inputs if p is not None])
    binary_info = None
    if binary_path is not None:
        from ..backoff.binary import to_binary

        with writing(binary_path), progress.stage(f"writing {binary_path} (the binary model)"):
            binary_info = to_binary(model, binary_path,
                                    sources=[p for p in inputs + [output, checkpoint_path] if p not in (None, "-")],
                                    quantize=quantize_bits())
    if ck is not None:
        ck.remove()  # the model it led to is written
    summary = {
        "model": output,
        "order": order if order is not None else "max",
        "fitted_order": model.order_,
        "penalty": penalty,
        "lam": model.lam_,
        "alpha": alpha,
        "base": base,
        "signed": bool(signed),
        "discount": discount,
        "objective": model.objective_,
        "steps": model.n_iter_,
        "converged": model.converged_,
        "parameters": model.n_params_,
        "nonzero": model.n_nonzero_,
        "train_seconds": model.seconds_train_,
        "prox_seconds": model.prox_seconds_,
        "gradient_seconds": model.gradient_seconds_,
    }
    if binary_info is not None:
        summary["binary"] = binary_path
        summary["binary_bytes"] = binary_info["file_size"]
    if valid is not None:
        summary["valid_ppl"] = model.corpus_perplexity(valid)
    if grid_results:
        summary["lam_grid"] = grid_results
    if as_json:
        from .params import report_stream

        click.echo(json.dumps(summary), err=report_stream(output))
    elif not quiet:
        click.echo(f"wrote {output}" + (f" and {binary_path}" if binary_info is not None else "")
                   + (f" (valid ppl {summary['valid_ppl']:.2f})" if valid is not None else ""), err=True)


def _same_path(a, b) -> bool:
    """Whether the paths ``a`` and ``b`` name the same file (existing or not)."""
    import os

    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.realpath(a) == os.path.realpath(b)


def fit_lm(lm, corpus, valid, lam, progress, ck=None):
    """Fit ``lm`` (a ``LogLinearLM``; its ``tol`` is the final tolerance) on ``corpus`` at
    ``lam`` (a number, None: 1/tokens, or "auto": chosen on ``valid`` along a
    warm-started path, refitting the same estimator): ``(model, lambda path results)``.
    Each fit reports its iterations and its end on ``progress``. The one training loop
    of ``suffixlm train`` and ``suffixlm compare``."""
    tol = lm.tol
    lm.warm_start = lam == "auto"

    def train_one(lam_value, label="", tol_value=tol, show_valid=True):
        lm.lam = lam_value
        lm.tol = tol_value
        t0 = time.perf_counter()
        shown = valid if show_valid else None  # a validation score each iteration costs a forward pass
        if progress.quiet:
            lm.fit(corpus, valid=shown, checkpoint=ck)
            return lm

        def cb(info, w):
            if info.n_iter == 0:
                return
            text = f"training{label}: step {info.n_iter}, objective {info.objective:.6f}"
            if "valid_ppl" in info.extra:
                text += f", valid ppl {info.extra['valid_ppl']:.2f}"
            progress.iteration(text)

        try:
            lm.fit(corpus, valid=shown, callback=cb, checkpoint=ck)
        finally:
            progress.end_iterations()
        progress.line(f"  {lm.n_iter_} steps, {time.perf_counter() - t0:.1f} s, objective {lm.objective_:.6f}, "
                      f"{'converged' if lm.converged_ else 'stopped at --epochs'}, "
                      f"{lm.n_nonzero_} non-zero of {lm.n_params_} parameters")
        return lm

    from ..solvers.result import ConvergenceWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        warnings.simplefilter("ignore", ConvergenceWarning)  # the progress says "stopped at --epochs"
        result = _fit_path(lm, corpus, valid, lam, progress, ck, train_one)
    # after a fit that ended (a failing or interrupted run reports its error alone)
    for message in dict.fromkeys(str(w.message) for w in caught):
        click.echo(f"warning: {message}", err=True)
    return result


def _fit_path(lm, corpus, valid, lam, progress, ck, train_one):
    if lam != "auto":
        return train_one(lam), []
    from ..model_selection import fit_auto_lam

    def report(x, ppl):
        progress.line(f"  lam={x:.3g}: valid ppl {ppl:.3f}")

    model, results = fit_auto_lam(lm, corpus, valid, checkpoint=ck, report=report,
                                  fit=lambda x, t, label, show: train_one(x, label, t, show))
    progress.line(f"chose lam={model.lam_:.3g}")
    return model, results


def describe_model(order, base, signed, penalty, alpha, discount, lam, n_tokens, valid_file) -> str:
    """The one line that names the model a command trains: base, sign, penalty, lambda."""
    what = "modified-KN base measure" if base == "kn" else "no base measure (the paper's model)"
    if base == "kn" and order is None:
        what += " (order 4's discounts deeper) + leave-one-out events"
    sign = "signed weights" if signed else "weights >= 0"
    pen = penalty + (f" (alpha={alpha:g})" if alpha is not None else "") + \
        (f" + count-class discounts x{discount:g}" if discount else "")
    if lam == "auto":
        how = f"lambda chosen on {valid_file}"
    elif lam is None:
        how = f"lambda 1/tokens = {1.0 / max(n_tokens, 1):.3g}" + \
            ("" if valid_file else " (give --valid VALID.txt to choose it on held-out text)")
    else:
        how = f"lambda {lam:g}"
    shown = "max (every context back to its sentence start)" if order is None else order
    return f"model: order {shown}, {what}, {sign}, {pen} penalty, {how}"


def _count_on_dask(train_file, order, vocab_file, min_count, unk, keep_ngram_counts, workers, scheduler, memory_limit,
                   quiet):
    """The training text's counted events (``distributed.lm_events.count_text_events``); the cluster is
    closed before training, which runs in this process."""
    from ..distributed.lm_events import count_text_events

    if order is None:
        from ..model import longest_sentence_order

        order = longest_sentence_order(train_file)
    with dask_client(workers, scheduler, memory_limit) as client:
        if not quiet:
            click.echo(f"counting on Dask: {len(client.scheduler_info()['workers'])} workers", err=True)
        try:
            return count_text_events(client, train_file, order, vocab_path=vocab_file, min_count=min_count, unk=unk,
                                     keep_ngram_counts=keep_ngram_counts)
        except Exception as e:
            if type(e).__name__ != "KilledWorker":
                raise
            raise click.ClickException(f"Dask workers kept dying on a task (memory limit too low?): "
                                       f"{str(e).splitlines()[0]}") from None
