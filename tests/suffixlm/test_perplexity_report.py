"""SRILM's perplexity statistics from per-position log-probabilities; the CLI commands."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.corpus import Corpus, Vocabulary
from suffixlm.evaluate import LanguageModel, perplexity_report, score


def test_report_by_hand():
    vocab = Vocabulary(["<s>", "</s>", "<unk>", "a", "b"], has_unk=True)
    c = Corpus.from_strings(["a b", "b"], vocab)
    # predicted positions: a b </s> b </s>
    lp = np.array([-1.0, -2.0, -0.5, -1.5, -0.25])
    r = perplexity_report(c, lp, "t.txt")
    assert (r.sentences, r.words, r.oovs, r.zeroprobs) == (2, 3, 0, 0)
    assert r.logprob == pytest.approx(-5.25)
    assert r.ppl == pytest.approx(10 ** (5.25 / 5))
    assert r.ppl1 == pytest.approx(10 ** (5.25 / 3))
    assert r.srilm_text() == ("file t.txt: 2 sentences, 3 words, 0 OOVs\n"
                              "0 zeroprobs, logprob= -5.25 ppl= 11.22018 ppl1= 56.23413")
    assert r.as_dict()["ppl1"] == r.ppl1


def test_oovs_and_zeroprobs_are_excluded():
    vocab = Vocabulary(["<s>", "</s>", "<unk>", "a", "b"], has_unk=False)  # closed: x is an OOV
    c = Corpus.from_strings(["a x b", "b"], vocab)
    lp = np.array([-1.0, np.nan, -np.inf, -0.5, -1.5, -0.25])  # a x b </s> b </s>
    r = perplexity_report(c, lp, "t.txt")
    assert (r.words, r.oovs, r.zeroprobs) == (4, 1, 1)
    assert r.logprob == pytest.approx(-3.25)
    denom = 4 - 1 - 1 + 2
    assert r.ppl == pytest.approx(10 ** (3.25 / denom)) and r.ppl1 == pytest.approx(10 ** (3.25 / (denom - 2)))
    assert r.srilm_text().startswith("file t.txt: 2 sentences, 4 words, 1 OOVs\n1 zeroprobs, logprob= -3.25 ppl= ")


def test_bad_input():
    c = Corpus.from_strings(["a b"])
    with pytest.raises(ValueError, match="expected 3"):
        perplexity_report(c, np.zeros(2))
    with pytest.raises(ValueError, match="<= 0"):
        perplexity_report(c, np.array([-1.0, 0.5, -1.0]))
    r = perplexity_report(c, np.full(3, -np.inf))
    assert r.ppl is None and r.ppl1 is None and "ppl= undefined ppl1= undefined" in r.srilm_text()


class Uniform:
    """Any object with order, vocab and log10_probs can be scored."""

    def __init__(self, vocab):
        self.vocab = vocab
        self.order = 1

    def log10_probs(self, corpus):
        n = corpus.n_tokens - corpus.n_sentences
        return np.full(n, -math.log10(self.vocab.n_predicted))


def test_score_protocol():
    c = Corpus.from_strings(["a b c", "c b", "a"], unk=True)
    m = Uniform(c.vocab)
    assert isinstance(m, LanguageModel)
    r = score(m, c, "x")
    v = c.vocab.n_predicted
    assert r.ppl == pytest.approx(v)
    assert r.ppl1 == pytest.approx(v ** ((r.words + r.sentences) / r.words))  # </s> mass spread over words


def test_cli_kn_and_ppl(tmp_path):
    train = tmp_path / "train.txt"
    test = tmp_path / "test.txt"
    train.write_text("a b c a b\nb c d\na b d d\nc a b c\nd a\n" * 4)
    test.write_text("a b c d\nd d a x\n")
    arpa = tmp_path / "m.arpa"
    runner = CliRunner()
    r = runner.invoke(main, ["kn", str(train), "-o", str(arpa), "--order", "3", "--original", "--min-count", "none"])
    assert r.exit_code == 0, r.output
    assert arpa.read_text().startswith("\n\\data\\\nngram 1=")
    r = runner.invoke(main, ["ppl", "--arpa", str(arpa), str(test)])
    assert r.exit_code == 0, r.output
    assert r.output.startswith(f"file {test}: 2 sentences, 8 words, 0 OOVs\n0 zeroprobs, logprob= ")
    r2 = runner.invoke(main, ["ppl", str(arpa), str(test), "--json"])
    d = json.loads(r2.output)
    assert d["words"] == 8 and d["order"] == 3 and f"ppl= {d['ppl']:.7g}" in r.output
    r3 = runner.invoke(main, ["ppl", "--arpa", str(arpa), str(test), "--debug", "2"])
    assert "\tp( a | <s>) \t= [2gram] " in r3.output and r3.output.endswith(r.output)
    # errors: one line, no traceback
    bad = tmp_path / "bad.arpa"
    bad.write_text(arpa.read_text().replace("ngram 2=", "ngram 2=1"))
    r4 = runner.invoke(main, ["ppl", "--arpa", str(bad), str(test)])
    assert r4.exit_code == 1 and "bad.arpa:" in r4.output and "Traceback" not in r4.output
    r5 = runner.invoke(main, ["kn", str(tmp_path / "none.txt"), "-o", str(arpa)])
    assert r5.exit_code == 1 and "none.txt" in r5.output
    r6 = runner.invoke(main, ["kn", str(train), "-o", str(arpa), "--min-count", "1,x"])
    assert r6.exit_code == 2 and "min-count" in r6.output
