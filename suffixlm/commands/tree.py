"""``suffixlm tree``: build the suffix tree of a training text and report its size."""

from __future__ import annotations

import json
import time

import click
import numpy as np

from ..options import TREE_METHODS

from .params import ORDER, min_word_count, min_word_count_option, threads_option


def _order_given(ctx, param, value):
    """``--order`` must be given. Not click's ``required``: ``max`` converts to None, which
    click 8.1 and 8.2 (``click>=8.1`` is supported) take for a missing value, refusing
    ``--order max`` with "Missing option"."""
    from click.core import ParameterSource

    if ctx.get_parameter_source(param.name) in (None, ParameterSource.DEFAULT):
        raise click.MissingParameter(ctx=ctx, param=param)
    return value


@click.command("tree")
@click.argument("train", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--order", "-n", type=ORDER, callback=_order_given,
              help="Model order N (contexts have at most N-1 words), or 'max': every context back to its "
                   "sentence start. Required.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of a table.")
@click.option("-q", "--quiet", is_flag=True, help="No progress lines (the sizes are still printed).")
@click.option("--vocab", "vocab_path", type=click.Path(dir_okay=False), default=None, help="Vocabulary file, one word per line.")
@min_word_count_option
@click.option("--unk", is_flag=True, help="Open vocabulary: out-of-vocabulary words map to <unk>.")
@click.option(
    "--method",
    type=click.Choice(TREE_METHODS),
    default="sort",
    show_default=True,
    help="Construction: radix sort of the contexts, or Ukkonen's suffix tree of the reversed text "
    "capped at N-1 (the same tree).",
)
@threads_option
def command(train, order, as_json, quiet, vocab_path, min_count, unk, method):
    """Suffix trie |S| and suffix tree |T| of the contexts of TRAIN (one sentence per
    line, '-' for stdin), with the (context, successor) parameter counts of both.

    tokens counts the words of the text (sentence markers excluded), vocab the
    vocabulary ids including <s>, </s> and <unk>. --method picks the construction; both
    give the identical tree, so only build_seconds differs.
    """
    from ..contexts import extract_contexts
    from ..corpus import CorpusError, load_training_corpus
    from ..suffixtree import SuffixTree

    from .params import check_text_input

    check_text_input(train, "the training text")
    t0 = time.perf_counter()
    try:
        corpus = load_training_corpus(train, vocab_path, min_count=min_word_count(min_count), unk=unk)
    except CorpusError as e:
        raise click.ClickException(str(e)) from None
    t1 = time.perf_counter()
    from ..progress import Progress

    progress = Progress(quiet)
    # numba's run time (its registries, loading compiled kernels) starts once per process:
    # timed on its own, so build seconds are the build's
    from .._tree_kernels import warm_up

    warm_up()
    t1b = time.perf_counter()
    max_depth = order - 1 if order is not None else int(np.diff(corpus.offsets).max()) - 1
    with progress.stage(f"building the suffix tree ({method})"):
        tree = SuffixTree.build(corpus, max_depth, method=method)
    t2 = time.perf_counter()
    with progress.stage("extracting the contexts"):
        contexts = extract_contexts(tree, corpus)
    t3 = time.perf_counter()
    st = tree.stats()
    out = {
        "order": order if order is not None else "max",  # an integer as before, or "max"
        "max_depth": max_depth,
        "method": method,
        "tokens": corpus.n_words,
        "sentences": corpus.n_sentences,
        "vocab": len(corpus.vocab),
        "oov": corpus.n_oov,
        "positions": st["positions"],
        "trie_nodes": st["trie_nodes"],
        "tree_nodes": st["tree_nodes"],
        "trie_params": st["trie_params"],
        "tree_params": st["tree_params"],
        "path_entries": int(contexts.nodes.shape[0]),
        "read_seconds": round(t1 - t0, 4),
        "startup_seconds": round(t1b - t1, 4),
        "build_seconds": round(t2 - t1b, 4),
        "extract_seconds": round(t3 - t2, 4),
    }
    if as_json:
        click.echo(json.dumps(out))
        return
    labels = {
        "order": "order",
        "max_depth": "deepest context (words)",
        "method": "construction",
        "tokens": "tokens (words)",
        "sentences": "sentences",
        "vocab": "vocabulary",
        "oov": "OOV words",
        "positions": "predictions",
        "trie_nodes": "suffix trie nodes |S|",
        "tree_nodes": "suffix tree nodes |T|",
        "trie_params": "trie parameters",
        "tree_params": "tree parameters",
        "path_entries": "context path entries",
        "read_seconds": "read seconds",
        "startup_seconds": "kernel start-up seconds",
        "build_seconds": "build seconds",
        "extract_seconds": "extraction seconds",
    }
    width = max(len(v) for v in labels.values())
    if order is None:
        out["order"] = f"max ({max_depth + 1})"  # the finite order it equals
    for key, label in labels.items():
        v = out[key]
        if isinstance(v, str):
            click.echo(f"{label:<{width}}  {v}")
        else:
            click.echo(f"{label:<{width}}  {v:,}" if isinstance(v, int) else f"{label:<{width}}  {v:.3f}")
