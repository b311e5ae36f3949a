"""``suffixlm best-mix``: mixture weights fitted by EM on held-out text (SRILM's compute-best-mix)."""

from __future__ import annotations

import json

import click

from .params import FiniteFloat, threads_option


@click.command("best-mix")
@click.argument("valid_path", metavar="VALID.txt")
@click.argument("models", nargs=-1, required=True, metavar="MODEL MODEL2 [MODEL3 ...]")
@click.option("--precision", default=0.001, show_default=True, type=FiniteFloat(0.0, 1.0, min_open=True),
              help="Stop when no weight changes by more than this (compute-best-mix's precision).")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines (the result is still printed).")
@threads_option
def command(valid_path, models, precision, as_json, quiet):
    """Fit the weights of a mixture of MODELs (log-linear or ARPA) on VALID.txt by EM,
    as SRILM's compute-best-mix does on each model's `ngram -debug 2 -ppl` output: every
    model scores the text on its own (a word it does not know is its <unk>), words that
    some model leaves out (closed-vocabulary OOVs) are skipped, the weights start equal.
    Prints the weights in the order given, and the options that use them with
    `suffixlm ppl MODEL TEST --mix-lm MODEL2 ...`."""
    import numpy as np

    from ..corpus import Corpus, CorpusError, read_lines
    from ..backoff.mix import best_mix
    from .ppl import load_model

    if len(models) < 2:
        raise click.UsageError("give two or more models")
    try:
        lines = [toks for _, toks in read_lines(valid_path)]
    except CorpusError as e:
        raise click.ClickException(str(e)) from None
    from ..progress import Progress

    progress = Progress(quiet)
    comps = []
    for path in models:
        with progress.stage(f"reading {path}"):
            m = load_model(path, False, only_for=lines)
        vocab = getattr(m, "vocab", None) or getattr(m, "vocab_", None)
        comps.append(np.asarray(m.log10_probs(Corpus.from_sentences(lines, vocab)), dtype=np.float64))
    comp = np.array(comps)
    comp = comp[:, ~np.any(np.isnan(comp), axis=0)]
    try:
        lam, history = best_mix(comp, precision=precision)
    except ValueError as e:
        raise click.ClickException(f"{valid_path}: {e}") from None
    with np.errstate(divide="ignore"):
        lp = np.log10(lam @ np.power(10.0, comp))
    ppl = float(10.0 ** (-lp.mean()))
    opts = [f"--lambda {lam[0]:.6g}"] + [f"--mix-lm{k + 1} {models[k]} --mix-lambda{k + 1} {lam[k]:.6g}"
                                         for k in range(2, len(models))]
    if as_json:
        click.echo(json.dumps({"models": list(models), "weights": lam.tolist(), "iterations": len(history),
                               "positions": int(comp.shape[1]), "ppl": ppl}))
        return
    click.echo(f"{len(history)} iterations over {comp.shape[1]} words, ppl {ppl:.6g}")
    click.echo("best lambda (" + " ".join(f"{x:.6g}" for x in lam) + ")")
    click.echo(f"suffixlm ppl {models[0]} TEST --mix-lm {models[1]} " + " ".join(opts))
