"""``suffixlm ppl``: perplexity of a test text, printed as SRILM's ``ngram -ppl`` does."""

from __future__ import annotations

import json
import math

import click


def load_model(path: str, arpa: bool, only_for=None):
    """``suffixlm.load.load_model`` with its errors as one-line CLI errors."""
    from ..load import load_model as load

    try:
        return load(path, arpa, only_for)
    except (ValueError, OSError) as e:
        raise click.ClickException(str(e)) from None


def _fmt_prob(lp: float) -> tuple[str, str]:
    if lp == -math.inf:
        return "0", "-inf"
    return f"{10.0 ** lp:.6g}", f"{lp:.6g}"


def debug_lines(model, corpus, lp):
    """SRILM -debug 2 style lines: each sentence, p( w | context ) per word, sentence stats."""
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
        yield " ".join(words[t] for t in sent[1:-1])
        for j in range(1, len(sent)):
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
        n_oov = 0 if corpus.vocab.has_unk else int((sent[1:-1] == 2).sum())
        one = Corpus(sent.copy(), np.array([0, len(sent)], dtype=np.int64), corpus.vocab, len(sent) - 2, n_oov)
        first, second = perplexity_report(one, lp[k - (len(sent) - 1):k], "").srilm_text().split("\n")
        yield first.split(": ", 1)[1]
        yield second
        yield ""


@click.command("ppl")
@click.argument("files", nargs=-1, required=True, metavar="[MODEL] TEST.txt")
@click.option("--arpa", "arpa_path", type=click.Path(dir_okay=False), default=None,
              help="ARPA model (SRILM, KenLM or suffixlm kn; .gz too).")
@click.option("--json", "as_json", is_flag=True, help="Print the statistics as JSON.")
@click.option("--debug", type=click.IntRange(0, 2), default=0, show_default=True,
              help="2: print p( w | context ) for every word, like SRILM -debug 2.")
def command(files, arpa_path, as_json, debug):
    """Score TEST.txt with an ARPA model (--arpa MODEL.arpa) or a model file (MODEL),
    printing SRILM's `ngram -ppl` lines: sentences, words, OOVs, zeroprobs, logprob
    (log10), ppl (</s> counted) and ppl1 (</s> not counted)."""
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
    from .kn import return_freed_memory_to_os

    return_freed_memory_to_os()
    try:
        sentences = [toks for _, toks in read_lines(test_path)]
    except CorpusError as e:
        raise click.ClickException(str(e)) from None
    model = load_model(model_path, arpa_path is not None, only_for=sentences)
    vocab = getattr(model, "vocab", None) or getattr(model, "vocab_", None)
    corpus = Corpus.from_sentences(sentences, vocab, source=str(test_path))
    lp = model.log10_probs(corpus)
    report = perplexity_report(corpus, lp, str(test_path))
    if as_json:
        d = report.as_dict()
        d["model"] = str(model_path)
        d["order"] = getattr(model, "order", None)
        click.echo(json.dumps(d, indent=2))
        return
    if debug >= 2:
        for line in debug_lines(model, corpus, lp):
            click.echo(line)
    click.echo(report.srilm_text())
