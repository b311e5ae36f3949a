"""``SuffixTree.build(..., method="ukkonen")`` gives the identical tree as the sorting
build: every array, dtype included (the sorting build is itself checked against a
brute-force trie in test_suffixtree.py)."""

import dataclasses
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from suffixlm.corpus import Corpus, Vocabulary, load_training_corpus
from suffixlm.suffixtree import METHODS, SuffixTree

FIELDS = [f.name for f in dataclasses.fields(SuffixTree) if f.name != "_cache"]


def assert_identical(a: SuffixTree, b: SuffixTree) -> None:
    for name in FIELDS:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray) or isinstance(y, np.ndarray):
            assert isinstance(x, np.ndarray) and isinstance(y, np.ndarray), name
            assert x.dtype == y.dtype, (name, x.dtype, y.dtype)
            assert np.array_equal(x, y), name
        else:
            assert x == y, name


def both(corpus, m, collapse=True):
    return (SuffixTree.build(corpus, m, collapse, method="sort"),
            SuffixTree.build(corpus, m, collapse, method="ukkonen"))


def corpus_of(sentences, n_words):
    """A corpus from word-id sentences (ids 2 .. n_words + 1; 2 is <unk>)."""
    vocab = Vocabulary(["<s>", "</s>", "<unk>"] + [f"w{i}" for i in range(3, n_words + 2)], has_unk=True)
    tokens, offsets = [], [0]
    for s in sentences:
        tokens += [0] + [2 + w for w in s] + [1]
        offsets.append(len(tokens))
    return Corpus(np.array(tokens, np.int32), np.array(offsets, np.int64), vocab,
                  sum(map(len, sentences)), 0)


@st.composite
def corpora(draw):
    n_words = draw(st.integers(1, 30))
    word = st.integers(0, n_words - 1)
    sents = draw(st.lists(st.lists(word, max_size=draw(st.sampled_from([0, 3, 10, 25]))), min_size=1, max_size=12))
    # repeated sentences and shared tails make long chains and deep branching
    repeats = draw(st.lists(st.integers(0, len(sents) - 1), max_size=4))
    sents += [sents[r] for r in repeats]
    return corpus_of(sents, n_words)


def brute_context_position(corpus, tree):
    """The canonical context_position, by brute force: of the predictions whose context
    (at most m symbols, depth 1 first) starts with the node's, the one with the smallest
    (context, predicted word, token index), contexts compared lexicographically."""
    tok, off, m = corpus.tokens.tolist(), corpus.offsets.tolist(), tree.max_depth
    keys = sorted(
        (tuple(tok[i - d] for d in range(1, min(m, i - off[s]) + 1)), tok[i], i)
        for s in range(len(off) - 1)
        for i in range(off[s] + 1, off[s + 1])
    )
    out = []
    for j in range(tree.n_nodes):
        u = tuple(tree.context(j))
        out.append(next(i for ctx, _, i in keys if ctx[: len(u)] == u))
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(corpus=corpora(), m=st.integers(0, 6), collapse=st.booleans())
def test_ukkonen_build_is_identical(corpus, m, collapse):
    a, b = both(corpus, m, collapse)
    assert_identical(a, b)
    assert b.is_trie == (not collapse)
    assert b.context_position.tolist() == brute_context_position(corpus, b)


@pytest.mark.parametrize("m", [1, 2, 3, 5, 12])
def test_sample_corpus(m):
    from suffixlm.corpora import sample_path

    corpus = load_training_corpus(sample_path("tiny_lm.train.txt"))
    for collapse in (True, False):
        assert_identical(*both(corpus, m, collapse))


def test_long_repeats_and_empty_sentences():
    # the same sentence many times (deep unary chains in the uncapped GST) and
    # empty sentences (a context that is just <s>)
    corpus = corpus_of([[0, 1, 0, 1, 0, 1, 2]] * 5 + [[]] * 3 + [[1] * 30, [1] * 29], 3)
    for m in (0, 1, 4, 40):
        for collapse in (True, False):
            assert_identical(*both(corpus, m, collapse))


def test_bad_method():
    corpus = corpus_of([[0, 1]], 2)
    assert METHODS == ("sort", "ukkonen")
    with pytest.raises(ValueError, match="method"):
        SuffixTree.build(corpus, 2, method="Ukkonen")
    for method in METHODS:
        with pytest.raises(ValueError, match="max_depth"):
            SuffixTree.build(corpus, -1, method=method)


@pytest.mark.parametrize("method", METHODS)
def test_bad_offsets(method):
    # a sentence without its markers would make the kernels read out of bounds
    good = corpus_of([[0, 1], [1]], 2)
    bad = dataclasses.replace(good, offsets=np.array([0, 1, 7], np.int64))
    with pytest.raises(ValueError, match="offsets"):
        SuffixTree.build(bad, 2, method=method)
    bad = dataclasses.replace(good, tokens=good.tokens - 1)
    with pytest.raises(ValueError, match=">= 0"):
        SuffixTree.build(bad, 2, method=method)


def test_ptb(shared):
    corpus = load_training_corpus(shared("corpora", "ptb", "ptb.train.txt"))
    a, b = both(corpus, 4)
    assert_identical(a, b)
    assert a.n_nodes == 845006  # benchmarks/suffixtree.md, order 5


def test_cli_method(tmp_path):
    from click.testing import CliRunner

    from suffixlm.cli import main

    p = tmp_path / "t.txt"
    p.write_text("a b a c\nb a b\n\nc\nb a b\n", encoding="utf-8")
    runner = CliRunner()
    out = {}
    for method in METHODS:
        r = runner.invoke(main, ["tree", str(p), "--order", "4", "--method", method, "--json"])
        assert r.exit_code == 0, r.output
        out[method] = json.loads(r.output)
        assert out[method]["method"] == method
    sizes = {k: v for k, v in out["sort"].items() if k != "method" and not k.endswith("_seconds")}
    assert sizes == {k: out["ukkonen"][k] for k in sizes}
    assert sizes["tree_nodes"] == SuffixTree.build(load_training_corpus(p), 3).n_nodes
    r = runner.invoke(main, ["tree", str(p), "--order", "4"])
    assert r.exit_code == 0 and "construction" in r.output and "sort" in r.output
    r = runner.invoke(main, ["tree", str(p), "--order", "4", "--method", "suffix-array"])
    assert r.exit_code == 2 and "--method" in r.output and "Traceback" not in r.output


@pytest.mark.parametrize("seed", range(3))
def test_packed_and_plain_child_tables_give_the_same_tree(seed):
    """The GST with the child table's key and value packed in one int64 (where they fit)
    equals the one with 16-byte slots, node for node."""
    from suffixlm import _ukkonen_kernels as U

    rng = np.random.default_rng(seed)
    sents = [" ".join(f"w{int(x)}" for x in rng.integers(0, 6, size=int(rng.integers(1, 12)))) for _ in range(80)]
    sents += sents[:20]  # repeats: long shared contexts
    corpus = Corpus.from_strings(sents)
    n_symbols = int(corpus.tokens.max()) + 1
    text, _ = U.reversed_text(corpus.tokens, corpus.offsets, n_symbols)
    a = U.ukkonen(text, n_symbols)
    b = U.ukkonen(text, n_symbols, False)
    for x, y in zip(a, b):
        np.testing.assert_array_equal(x, y)
    assert a[0].shape[0] > text.shape[0]  # inner nodes too
