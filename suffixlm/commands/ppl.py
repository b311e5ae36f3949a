"""``suffixlm ppl``: perplexity of a test text, printed as SRILM's ``ngram -ppl`` does."""

from __future__ import annotations

import json
import math

import click

from .params import FiniteFloat, threads_option, writing


def load_model(path: str, arpa: bool, only_for=None):
    """``suffixlm.load.load_model`` with its errors as one-line CLI errors."""
    from ..load import load_model as load

    from ..io import open_error_message

    try:
        return load(path, arpa, only_for)
    except OSError as e:
        raise click.ClickException(open_error_message(path, e) if e.filename is not None else str(e)) from None
    except ValueError as e:
        raise click.ClickException(str(e)) from None


def _fmt_prob(lp: float) -> tuple[str, str]:
    if lp == -math.inf:
        return "0", "-inf"
    return f"{10.0 ** lp:.6g}", f"{lp:.6g}"


def debug_lines(model, corpus, lp, level=2, texts=None):
    """SRILM's -debug lines: each sentence (``texts``: its words as read), at level 2
    p( w | context ) per word, then the sentence's statistics and a blank line."""
    import numpy as np

    from ..corpus import Corpus
    from ..evaluate import perplexity_report

    words = corpus.vocab.words
    hits = None
    if hasattr(model, "query"):
        hits = model.query(corpus)[1]
    target = corpus.target_mask()
    k = 0
    for s in range(corpus.n_sentences):
        sent = corpus.sentence(s)
        a = corpus.offsets[s]
        yield " ".join(texts[s]) if texts is not None else " ".join(words[t] for t in sent[1:-1])
        for j in range(1, len(sent) if level >= 2 else 1):
            w = words[sent[j]]
            prev = words[sent[j - 1]]
            ctx = prev + (" ..." if j > 1 else "")
            if not target[a + j]:
                yield f"\tp( {w} | {ctx}) \t= [OOV] 0 [ -inf ]"
            else:
                p, l = _fmt_prob(lp[k])
                tag = f"[{hits[k]}gram] " if hits is not None else ""
                yield f"\tp( {w} | {ctx}) \t= {tag}{p} [ {l} ]"
            k += 1
        k += 0 if level >= 2 else len(sent) - 1
        n_oov = 0 if corpus.vocab.has_unk else int((sent[1:-1] == 2).sum())
        one = Corpus(sent.copy(), np.array([0, len(sent)], dtype=np.int64), corpus.vocab, len(sent) - 2, n_oov)
        first, second = perplexity_report(one, lp[k - (len(sent) - 1):k], "").srilm_text().split("\n")
        yield first.split(": ", 1)[1]
        yield second
        yield ""


def _mix_options(f):
    for k in range(9, 1, -1):
        f = click.option(f"--mix-lambda{k}", f"mix_lambda{k}", type=FiniteFloat(0.0, 1.0), default=None,
                         help=f"Weight of --mix-lm{k}." if k == 2 else None, hidden=k > 2)(f)
        f = click.option(f"--mix-lm{k}", f"mix_lm{k}", default=None, metavar="MODEL",
                         help="More models to mix (--mix-lm2 .. --mix-lm9), each with its --mix-lambdaK."
                         if k == 2 else None, hidden=k > 2)(f)
    return f


@click.command("ppl")
@click.argument("files", nargs=-1, required=True, metavar="[MODEL] TEST.txt")
@click.option("--arpa", "arpa_path", type=click.Path(dir_okay=False), default=None,
              help="ARPA model (SRILM, KenLM or suffixlm kn; .gz too).")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--debug", type=click.IntRange(0, 2), default=0, show_default=True,
              help="1: a line per sentence; 2: also p( w | context ) per word (SRILM's -debug 1 / 2).")
@click.option("--mix-lm", "mix_lm", default=None, metavar="MODEL",
              help="Interpolate with this model (log-linear or ARPA); MODEL gets 1 - the other weights.")
@click.option("--lambda", "lam", type=FiniteFloat(0.0, 1.0), default=0.5, show_default=True,
              help="Weight of the main model in a mixture (SRILM's -lambda).")
@_mix_options
@click.option("--static", is_flag=True,
              help="Merge the models into one back-off model (SRILM's default for -mix-lm with back-off models; "
                   "log-linear models are converted exactly first) instead of interpolating word probabilities.")
@click.option("--write-lm", "write_lm", default=None, type=click.Path(dir_okay=False, allow_dash=True),
              metavar="OUT.arpa",
              help="Write the statically merged model as ARPA (implies --static; '-': stdout, the report then "
                   "goes to stderr).")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines (the report is still printed).")
@threads_option
def command(files, arpa_path, as_json, debug, mix_lm, lam, static, write_lm, quiet, **mix):
    """Score TEST.txt with an ARPA model (--arpa MODEL.arpa) or a model file (MODEL),
    printing SRILM's `ngram -ppl` lines: sentences, words, OOVs, zeroprobs, logprob
    (log10), ppl (</s> counted) and ppl1 (</s> not counted).

    Mixtures (SRILM's -mix-lm, -lambda, -mix-lm2 ... -mix-lambda2 ...): MODEL gets
    --lambda, --mix-lmK gets --mix-lambdaK, --mix-lm the rest. By default the word
    probabilities are interpolated (SRILM's `-bayes 0`); --static merges back-off models
    into one (what SRILM's `ngram -mix-lm` does by default, and writes with -write-lm)."""
    from ..corpus import Corpus, CorpusError, read_lines
    from ..evaluate import perplexity_report

    if arpa_path is not None:
        if len(files) != 1:
            raise click.UsageError("with --arpa give exactly one argument: TEST.txt")
        model_path, test_path = arpa_path, files[0]
    else:
        if len(files) != 2:
            raise click.UsageError("give MODEL TEST.txt, or --arpa MODEL.arpa TEST.txt")
        model_path, test_path = files
    extra = [(mix[f"mix_lm{k}"], mix[f"mix_lambda{k}"]) for k in range(2, 10)]
    for k, (m, w) in enumerate(extra, start=2):
        if (m is None) != (w is None):
            raise click.UsageError(f"--mix-lm{k} and --mix-lambda{k} go together")
        if m is not None and mix_lm is None:
            raise click.UsageError(f"--mix-lm{k} needs --mix-lm")
    extra = [(m, w) for m, w in extra if m is not None]
    if write_lm is not None:
        static = True
        if mix_lm is None:
            raise click.UsageError("--write-lm writes a merged model: give --mix-lm")
        from .params import check_output

        check_output(write_lm, [model_path, test_path, mix_lm] + [m for m, _ in extra])  # before any work
    from ..load import is_binary_model
    from ..memory import return_freed_memory_to_os, reuse_freed_memory

    # a binary model alone (the common decoder case): mapped, not parsed, and the text read
    # at once by Corpus.from_text, with no word lists kept for the model
    mapped = arpa_path is None and mix_lm is None and debug == 0 and is_binary_model(model_path)
    if mapped:
        reuse_freed_memory()  # the text's numpy temporaries reused from the heap (docs in memory.py)
    else:
        return_freed_memory_to_os()  # a parsed model's big arrays go back to the system once freed
    from .params import check_text_input

    check_text_input(test_path, "the test text")
    lines = None
    if not mapped:
        try:
            lines = [toks for _, toks in read_lines(test_path)]
        except CorpusError as e:
            raise click.ClickException(str(e)) from None
    # a merge recomputes back-off weights from every n-gram: no restriction to the text
    only_for = None if static and mix_lm is not None else lines
    from ..progress import Progress

    progress = Progress(quiet)
    with progress.stage(f"reading {model_path}"):
        model = load_model(model_path, arpa_path is not None, only_for=only_for)
    if mix_lm is not None:
        with progress.stage("reading and mixing " + ", ".join([mix_lm] + [m for m, _ in extra])):
            model = _mixture(model, mix_lm, lam, extra, static, write_lm, only_for, [model_path, test_path])
    vocab = getattr(model, "vocab", None) or getattr(model, "vocab_", None)
    if lines is None:
        try:
            corpus = Corpus.from_text(test_path, vocab)
        except CorpusError as e:
            raise click.ClickException(str(e)) from None
    else:
        corpus = Corpus.from_sentences(lines, vocab, source=str(test_path))
    with progress.stage(f"scoring {test_path}"):
        lp = model.log10_probs(corpus)
    try:
        report = perplexity_report(corpus, lp, str(test_path))
    except ValueError as e:  # a model whose back-off weights give a probability above 1
        raise click.ClickException(f"{model_path}: {e}") from None
    from .params import report_stream

    to_err = report_stream(write_lm)
    if as_json:
        d = report.as_dict()
        d["model"] = str(model_path)
        d["order"] = getattr(model, "order", None)
        click.echo(json.dumps(d, indent=2), err=to_err)
        return
    if debug >= 1:
        for line in debug_lines(model, corpus, lp, debug, lines):
            click.echo(line, err=to_err)
    click.echo(report.srilm_text(), err=to_err)


def _mixture(main, mix_lm, lam, extra, static, write_lm, only_for, inputs):
    from ..backoff.mix import MixtureLM, full_weights, merge_static

    paths = [mix_lm] + [m for m, _ in extra]
    models = [main] + [load_model(p, False, only_for=only_for) for p in paths]
    try:
        weights = full_weights([lam] + [w for _, w in extra], len(models))
    except ValueError as e:
        raise click.UsageError(str(e)) from None
    if not static:
        return MixtureLM(models, weights)
    backoff = [m if hasattr(m, "ngrams") else m.to_backoff() for m in models]
    merged = merge_static(backoff, weights)
    if write_lm is not None:
        merged.sources = tuple(str(p) for p in inputs + paths)
        with writing(write_lm):
            merged.write_arpa(write_lm)
    return merged
