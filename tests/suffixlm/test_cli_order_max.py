"""``--order max`` on the command line (train, kn, tree, compare) and
``KneserNeyLM(order=None)``: unbounded context, every context back to its sentence start."""

from __future__ import annotations

import json
import warnings

import click
import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.commands.compare import parse_orders
from suffixlm.corpora import sample_path
from suffixlm.corpus import Corpus, load_training_corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM
from suffixlm.options import order_text
from suffixlm.commands.params import ORDER

pytestmark = pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")
TINY = str(sample_path("tiny_lm.train.txt"))
TINY_TEST = str(sample_path("tiny_lm.test.txt"))


def _longest(path=TINY) -> int:
    return int(np.diff(load_training_corpus(path, unk=True).offsets).max())


@pytest.mark.parametrize("text, want", [("max", None), ("MAX", None), (" Max ", None), ("1", 1), ("64", 64)])
def test_order_type_accepts_integers_and_max(text, want):
    assert ORDER.convert(text, None, None) == want
    assert order_text(want) == ("max" if want is None else str(want))


@pytest.mark.parametrize("text", ["0", "-1", "65", "abc", "maxx", "3.5", ""])
def test_order_type_refuses_the_rest(text):
    with pytest.raises(click.BadParameter, match="max"):
        ORDER.convert(text, None, None)


def test_compare_orders_take_max_last():
    assert parse_orders("2-12,max") == list(range(2, 13)) + [None]
    assert parse_orders("max,3") == [3, None]
    assert parse_orders("max") == [None]
    for bad in ("max,,3", "0,max", "2-65"):
        with pytest.raises(click.BadParameter):
            parse_orders(bad)


def test_kn_max_is_the_longest_sentence_order():
    """KneserNeyLM(order=None) (KN on the suffix tree) lists the same n-grams as the n-gram
    estimator at the longest sentence's order without cut-offs, with SRILM's discounts for
    orders 1 .. UNBOUNDED_OWN_ORDERS and the last of them beyond (``kn_tree``); its ARPA
    form scores as it does, to single precision; where every order of the text keeps
    SRILM's discounts (order 4), both are SRILM's model."""
    from suffixlm.backoff.kn_tree import UNBOUNDED_OWN_ORDERS as U

    corpus = load_training_corpus(TINY, unk=True)
    test = Corpus.from_text(TINY_TEST, corpus.vocab)
    N = _longest()
    a = KneserNeyLM(None).fit(corpus)
    b = KneserNeyLM(N, min_counts=[1]).fit(corpus)
    assert a.order is None and a.order_ == b.order_ == N
    assert a.model_.counts == b.model_.counts
    assert a.discounts_[:U] == b.discounts_[:U] and a.discounts_[U:] == [b.discounts_[U - 1]] * (N - U)
    np.testing.assert_allclose(a.model_.log10_probs(test), a.log10_probs(test), rtol=0, atol=2e-6)
    short = Corpus.from_strings([" ".join(corpus.vocab.words[int(t)] for t in corpus.tokens[lo + 1:min(lo + 3, hi - 1)])
                                 for lo, hi in zip(corpus.offsets[:-1], corpus.offsets[1:])],
                                corpus.vocab)  # the first (at most) 2 words of each sentence
    a4 = KneserNeyLM(None).fit(short)
    b4 = KneserNeyLM(a4.order_, min_counts=[1]).fit(short)
    assert a4.order_ <= U and a4.discounts_ == b4.discounts_
    t4 = Corpus.from_strings(["a b", "the of"], short.vocab)
    np.testing.assert_allclose(a4.log10_probs(t4), b4.log10_probs(t4), rtol=0, atol=2e-6)


def test_kn_max_refuses_cut_offs_and_backoff():
    text = Corpus.from_strings(["a b a", "b a"])
    with pytest.raises(ValueError, match="every n-gram"):
        KneserNeyLM(None, min_counts=[1, 1, 2]).fit(text)
    with pytest.raises(ValueError, match="interpolated"):
        KneserNeyLM(None, interpolate=False).fit(text)
    KneserNeyLM(None, min_counts=[1]).fit(text)  # no cut-off: fine


def test_cli_kn_max_writes_the_equivalent_arpa_file(tmp_path):
    out = tmp_path / "m.arpa"
    r = CliRunner().invoke(main, ["kn", TINY, "--order", "max", "-o", str(out), "--json"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output[r.output.index("{"):])
    assert info["order"] == "max" and info["arpa_order"] == _longest() and info["min_counts"] == [1]
    r = CliRunner().invoke(main, ["ppl", "--arpa", str(out), TINY_TEST])
    assert r.exit_code == 0, r.output
    ppl = float(r.output.split("ppl=")[1].split()[0])
    corpus = load_training_corpus(TINY, unk=True)
    want = KneserNeyLM(None).fit(corpus).corpus_perplexity(Corpus.from_text(TINY_TEST, corpus.vocab))
    assert abs(ppl - want) < 1e-3 * want


@pytest.mark.parametrize("args", [["--min-count", "1,1,2"], ["--order", "maxx"]])
def test_cli_kn_max_refusals_are_one_line_and_write_nothing(tmp_path, args):
    out = tmp_path / "m.arpa"
    argv = ["kn", TINY, "-o", str(out)] + (["--order", "max"] if "--order" not in args else []) + args
    r = CliRunner().invoke(main, argv)
    assert r.exit_code == 2 and "Traceback" not in r.output and not out.exists(), r.output


def test_cli_tree_max_reports_the_longest_order_tree():
    runner = CliRunner()
    a = runner.invoke(main, ["tree", TINY, "--order", "max", "--unk", "--json", "-q"])
    b = runner.invoke(main, ["tree", TINY, "--order", str(_longest()), "--unk", "--json", "-q"])
    assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
    ja, jb = json.loads(a.output), json.loads(b.output)
    assert ja["order"] == "max" and ja["max_depth"] == jb["max_depth"] == _longest() - 1
    for key in ("tree_nodes", "trie_nodes", "tree_params", "trie_params", "path_entries"):
        assert ja[key] == jb[key], key


def test_cli_train_max_is_the_python_model(tmp_path):
    out = tmp_path / "m.lm"
    r = CliRunner().invoke(main, ["train", TINY, "--order", "max", "-o", str(out), "--epochs", "20", "--json", "-q"])
    assert r.exit_code == 0, r.output
    info = json.loads(r.output[r.output.index("{"):])
    assert info["order"] == "max" and info["fitted_order"] == _longest()
    got = LogLinearLM.load(out)
    assert got.order is None and got.base_.on_edges
    corpus = Corpus.from_text(TINY, got.vocab_)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ref = LogLinearLM(order=None, base="kn", positive=False, max_iter=20, lam=got.lam_).fit(corpus)
    test = Corpus.from_text(TINY_TEST, got.vocab_)
    assert got.corpus_perplexity(test) == pytest.approx(ref.corpus_perplexity(test), rel=1e-6)


def test_cli_compare_with_max(tmp_path):
    r = CliRunner().invoke(main, ["compare", TINY, TINY_TEST, "--orders", "2,max", "--epochs", "10", "--json", "-q",
                                  "--plot", str(tmp_path / "p.png")])
    assert r.exit_code == 0, r.output
    rows = json.loads(r.output[r.output.index("["):])
    assert [(x["model"].split()[0], x["order"]) for x in rows] == [
        ("kn-modified", 2), ("loglinear-kn", 2), ("kn-modified", "max"), ("loglinear-kn", "max")]
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_kn_max_on_cluster_counts_is_the_single_process_model(killable_client):
    got = KneserNeyLM(None).fit_text(TINY, client=killable_client)
    ref = KneserNeyLM(None).fit_text(TINY)
    assert got.order_ == ref.order_ and got.model_.counts == ref.model_.counts
    test = Corpus.from_text(TINY_TEST, ref.vocab_)
    np.testing.assert_allclose(got.log10_probs(test), ref.log10_probs(test), rtol=0, atol=1e-12)
