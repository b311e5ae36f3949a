"""``suffixlm demo``: train a small model on the sample corpus shipped with suffixlm."""

from __future__ import annotations

import time

import click

from ..options import LM_PENALTIES, FiniteFloat


@click.command("demo")
@click.option("--order", default=4, show_default=True, type=click.IntRange(1, 16))
@click.option("--penalty", default="linf-tree", show_default=True,
              type=click.Choice(LM_PENALTIES))
@click.option("--lam", default=None, type=FiniteFloat(0.0), help="Default: 1 / training tokens.")
def command(order, penalty, lam):
    """Train a log-linear LM on the sample corpus tiny_lm.train.txt (suffixlm.corpora) and print its test perplexity."""
    from suffixlm.corpora import sample_path

    from ..corpus import Corpus, load_training_corpus
    from ..model import LogLinearLM

    train_path = sample_path("tiny_lm.train.txt")
    test_path = sample_path("tiny_lm.test.txt")
    train = load_training_corpus(train_path)
    test = Corpus.from_text(test_path, train.vocab)
    click.echo(f"train: {train_path.name}: {train.n_sentences} sentences, {train.n_words} words, "
               f"vocabulary {len(train.vocab)}")
    t0 = time.perf_counter()
    lm = LogLinearLM(order=order, penalty=penalty, lam=lam, max_iter=200).fit(train)
    click.echo(f"trained order-{order} {penalty} model (lam={lm.lam_:.3g}) in {time.perf_counter() - t0:.1f} s: "
               f"{lm.n_nonzero_} non-zero of {lm.n_params_} parameters")
    click.echo(f"test:  {test_path.name}: {test.n_sentences} sentences, {test.n_words} words: "
               f"perplexity {lm.corpus_perplexity(test):.3f}")
    for s in ("the cat saw a dog", "dog a saw cat the"):
        click.echo(f"  log10 P({s!r}) = {lm.score(s):.3f}")
