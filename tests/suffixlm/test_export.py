"""A log-linear LM written as ARPA (suffixlm.export) is the same model."""

from __future__ import annotations

import random

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff.arpa import BackoffLM
from suffixlm.cli import main
from suffixlm.corpus import Corpus
from suffixlm.export import loglinear_to_backoff
from suffixlm.model import LogLinearLM

TRAIN = ["the cat sat on the mat", "the dog sat on the log", "a cat saw a dog", "the cat saw the dog on a mat",
         "on the mat sat a cat", "a dog sat", "the big cat sat on the big mat today"]
UNSEEN = ["the cat sat on a log", "a mat saw the cat", "dog dog the on", "big dog saw the mat on the log",
          "today the cat", "the zebra sat on the mat"]

VARIANTS = {
    "tree-o3": dict(order=3),
    "tree-o5": dict(order=5),  # collapsed edges: contexts inside them are ARPA contexts of their own
    "trie-l2": dict(order=4, penalty="l2-tree"),
    "kn-base-signed": dict(order=4, base="kn", positive=False),
    "open-vocab": dict(order=3),
}


def _fit(name):
    lines = TRAIN + (["the <unk> sat"] if name == "open-vocab" else [])
    return LogLinearLM(lam=0.01, max_iter=80, **VARIANTS[name]).fit(Corpus.from_strings(lines))


def _random_text(words, n=40, seed=0):
    rng = random.Random(seed)
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(1, 9))) for _ in range(n)]


@pytest.mark.parametrize("name", list(VARIANTS))
def test_arpa_file_scores_like_the_model(name):
    lm = _fit(name)
    if name == "tree-o5":
        assert np.any(lm.tree_.collapsed[lm.tree_.parent >= 0] > 1)
    bo = loglinear_to_backoff(lm)
    assert bo.order == lm.order
    back = BackoffLM.from_arpa_bytes(bo.arpa_bytes())
    assert back.counts == bo.counts
    words = [w for w in lm.vocab_.words if w not in ("<s>", "</s>")]
    for text in (TRAIN, UNSEEN, _random_text(words)):
        c = Corpus.from_strings(text, vocab=lm.vocab_)
        want = lm.log10_probs(c)
        seen = ~np.isnan(want)
        np.testing.assert_allclose(bo.log10_probs(c)[seen], want[seen], rtol=0, atol=1e-6)  # float32
        c2 = Corpus.from_strings(text, vocab=back.vocab)
        np.testing.assert_allclose(back.log10_probs(c2)[seen], want[seen], rtol=0, atol=2e-6)  # %.7g
    # the KenLM API agrees state by state, n-gram lengths and OOVs included
    for s in UNSEEN + _random_text(words + ["zebra"], seed=1):
        ours, theirs = list(lm.full_scores(s)), list(back.full_scores(s))
        assert [x[1:] for x in ours] == [x[1:] for x in theirs], s
        np.testing.assert_allclose([x[0] for x in ours], [x[0] for x in theirs], rtol=1e-7, atol=2e-6)


def test_every_distribution_of_the_arpa_file_sums_to_one():
    lm = _fit("tree-o5")
    bo = loglinear_to_backoff(lm)
    vocab = lm.vocab_
    targets = [w for w in vocab.words if w != "<s>" and (w != "<unk>" or vocab.has_unk)]
    for s in ["", "the", "the cat", "on the big", "zebra", "mat today the"]:
        for bos in (True, False):
            from suffixlm.query import State

            st = State()
            (bo.BeginSentenceWrite if bos else bo.NullContextWrite)(st)
            for w in s.split():
                o = State()
                bo.BaseScore(st, w, o)
                st = o
            total = sum(10.0 ** bo.BaseScore(st, w, State()) for w in targets)
            assert total == pytest.approx(1.0, abs=1e-5), (s, bos)


def test_kenlm_reads_the_export_as_suffixlm_does(tmp_path):
    kenlm = pytest.importorskip("kenlm")
    lm = _fit("tree-o5")
    p = tmp_path / "m.arpa"
    loglinear_to_backoff(lm).write_arpa(p)
    km = kenlm.Model(str(p))
    back = BackoffLM.read_arpa(p)
    for s in TRAIN + UNSEEN:
        assert [(float(a), n, bool(o)) for a, n, o in km.full_scores(s)] == list(back.full_scores(s))
        assert km.perplexity(s) == pytest.approx(lm.perplexity(s), rel=1e-5)


def test_export_command(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("\n".join(TRAIN * 3) + "\n")
    test = tmp_path / "test.txt"
    test.write_text("\n".join(UNSEEN) + "\n")
    model = tmp_path / "m.lm"
    r = CliRunner().invoke(main, ["train", str(train), "-o", str(model), "--order", "4", "--lam", "0.01",
                                  "--epochs", "50"])
    assert r.exit_code == 0, r.output
    for out in (tmp_path / "m.arpa", tmp_path / "m.arpa.gz"):
        r = CliRunner().invoke(main, ["export", str(model), "-o", str(out)])
        assert r.exit_code == 0, r.output
        assert "4-grams" in r.output or "ngram 4" in r.output
        a = CliRunner().invoke(main, ["ppl", str(model), str(test), "--json"])
        b = CliRunner().invoke(main, ["ppl", "--arpa", str(out), str(test), "--json"])
        assert a.exit_code == 0 and b.exit_code == 0, a.output + b.output
        import json

        assert json.loads(b.output)["ppl"] == pytest.approx(json.loads(a.output)["ppl"], rel=1e-5)
    # never over its input
    r = CliRunner().invoke(main, ["export", str(model), "-o", str(model)])
    assert r.exit_code != 0 and model.read_bytes()[:2] == b"PK"
