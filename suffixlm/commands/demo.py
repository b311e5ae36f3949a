"""``suffixlm demo``: train a small model on the sample corpus shipped with suffixlm."""

from __future__ import annotations

import time
import warnings

import click

from ..options import LM_BASES, LM_PENALTIES

from .params import FiniteFloat, threads_option


@click.command("demo")
@click.option("--order", default=4, show_default=True, type=click.IntRange(1, 16))
@click.option("--penalty", default="linf-tree", show_default=True,
              type=click.Choice(LM_PENALTIES))
@click.option("--lam", default=None, type=FiniteFloat(0.0), help="Default: 1 / training tokens.")
@click.option("--base", default="kn", show_default=True, type=click.Choice(LM_BASES),
              help="Base measure of the log-linear model, as `suffixlm train --base`.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines (the results are still printed).")
@threads_option
def command(order, penalty, lam, base, quiet):
    """Train a log-linear LM on the sample corpus tiny_lm.train.txt (suffixlm.corpora)
    and print its test perplexity beside modified Kneser-Ney's."""
    from suffixlm.corpora import sample_path

    from ..backoff import _kn_kernels
    from .. import _lm_kernels
    from ..corpus import Corpus, load_training_corpus
    from ..backoff.kn import KneserNeyLM
    from ..model import LogLinearLM
    from ..penalties import _linf_tree
    from ..progress import Progress, announce_compilation

    progress = Progress(quiet)
    train_path = sample_path("tiny_lm.train.txt")
    test_path = sample_path("tiny_lm.test.txt")
    train = load_training_corpus(train_path)
    test = Corpus.from_text(test_path, train.vocab)
    click.echo(f"train: {train_path.name}: {train.n_sentences} sentences, {train.n_words} words, "
               f"vocabulary {len(train.vocab)}")
    announce_compilation(progress, _kn_kernels, _lm_kernels, _linf_tree)
    t0 = time.perf_counter()
    with progress.stage("training"), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny corpus has too few singletons for modified KN's unigrams
        lm = LogLinearLM(order=order, penalty=penalty, lam=lam, max_iter=200, base=base,
                         positive=base != "kn").fit(train)
    model = f"{'KN-base signed' if base == 'kn' else 'paper'} {penalty}"
    click.echo(f"trained order-{order} {model} model (lam={lm.lam_:.3g}) in {time.perf_counter() - t0:.1f} s: "
               f"{lm.n_nonzero_} non-zero of {lm.n_params_} parameters")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the tiny corpus has too few singletons for modified KN's unigrams
        kn = KneserNeyLM(order=order).fit(train)
    click.echo(f"test:  {test_path.name}: {test.n_sentences} sentences, {test.n_words} words: "
               f"perplexity {lm.corpus_perplexity(test):.3f} (modified Kneser-Ney, order {order}: "
               f"{kn.corpus_perplexity(test):.3f})")
    for s in ("the cat saw a dog", "dog a saw cat the"):
        click.echo(f"  log10 P({s!r}) = {lm.score(s):.3f}")
