"""Mixtures (suffixlm.backoff.mix; `suffixlm ppl --mix-lm`, `suffixlm best-mix`) and SRILM's
-debug 1 lines."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff.arpa import BackoffLM
from suffixlm.cli import main
from suffixlm.corpus import Corpus
from suffixlm.evaluate import score
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.backoff.mix import MixtureLM, best_mix, full_weights, merge_static
from suffixlm.model import LogLinearLM
from suffixlm.query import State

A_TEXT = ["the cat sat on the mat", "the dog sat on the log", "a cat saw a dog", "the cat saw the dog on a mat"]
B_TEXT = ["a bird sat on the fence", "the cat saw a bird", "a dog saw the bird on the fence", "the bird sat"]
TEST = ["the cat sat on the fence", "a bird saw the dog", "the dog sat on a mat", "zebra saw the cat"]


@pytest.fixture(scope="module")
def models():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        a = KneserNeyLM(order=3, min_counts=[1]).fit(Corpus.from_strings(A_TEXT)).model_
        b = KneserNeyLM(order=2, min_counts=[1]).fit(Corpus.from_strings(B_TEXT)).model_
    return a, b


def test_weights_follow_srilm():
    np.testing.assert_allclose(full_weights([0.7], 2), [0.7, 0.3])
    np.testing.assert_allclose(full_weights([0.6, 0.2], 3), [0.6, 0.2, 0.2])  # -mix-lm gets the rest
    for bad in ([1.5], [float("nan")], [-0.1]):
        with pytest.raises(ValueError):
            full_weights(bad, 2)
    with pytest.raises(ValueError, match="more than 1"):
        full_weights([0.7, 0.5], 3)


def _prob(model, context, word, bos=True):
    s = State()
    (model.BeginSentenceWrite if bos else model.NullContextWrite)(s)
    for w in context:
        o = State()
        model.BaseScore(s, w, o)
        s = o
    return 10.0 ** model.BaseScore(s, word, State())


def test_dynamic_mixture_is_the_weighted_sum_with_a_shared_vocabulary(models):
    a, b = models
    mx = MixtureLM([a, b], [0.3, 0.7])
    vocab = [w for w in mx.vocab.words if w not in ("<s>", "<unk>")]
    c = Corpus.from_strings(TEST, vocab=mx.vocab)
    lp = mx.log10_probs(c)
    from suffixlm.corpus import predicted_positions

    scored = c.target_mask()[predicted_positions(c)]
    k = 0
    for line in TEST:
        words = line.split() + ["</s>"]
        for i, w in enumerate(words):
            # by hand: a model that does not know a word gives it 0, and its context
            # stops at the most recent word it does not know
            want = 0.0
            for m, lam in ((a, 0.3), (b, 0.7)):
                if w not in m and w != "</s>":
                    continue
                ctx = words[:i]
                unknown = [j for j, x in enumerate(ctx) if x not in m]
                if unknown:
                    want += lam * _prob(m, ctx[unknown[-1] + 1:], w, bos=False)
                else:
                    want += lam * _prob(m, ctx, w)
            if w == "zebra":
                assert not scored[k]  # an OOV of every model: left out, as SRILM does
            else:
                assert 10.0 ** lp[k] == pytest.approx(want, rel=1e-6), (line, w)
            k += 1
    # the KenLM API of the mixture agrees, and each distribution sums to 1
    for ctx in ([], ["the"], ["a", "bird"], ["cat", "zebra"]):
        total = sum(_prob(mx, ctx, w) for w in vocab)
        assert total == pytest.approx(1.0, abs=1e-5)


def test_static_merge_is_normalised_and_mixes_the_explicit_ngrams(models):
    a, b = models
    m = merge_static([a, b], [0.4, 0.6])
    vocab = [w for w in m.vocab.words if w not in ("<s>", "<unk>")]
    assert m.order == 3
    for ctx in ([], ["the"], ["a", "bird"], ["on", "the"], ["sat", "on"]):
        assert sum(_prob(m, ctx, w) for w in vocab) == pytest.approx(1.0, abs=1e-5)
    # every explicit n-gram of either model is explicit, with the mixed probability
    mx = MixtureLM([a, b], [0.4, 0.6])
    for rows, lp, _, _ in m.ngrams[1:]:
        for r, p in zip(rows[:40], lp[:40]):
            words = [m.vocab.words[t] for t in r]
            if words[0] != "<s>":
                continue
            want = _prob(mx, words[1:-1], words[-1])
            assert 10.0 ** float(p) == pytest.approx(want, rel=1e-5)
    # weight 1 on the first model is that model
    one = merge_static([a, b], [1.0, 0.0])
    ca = Corpus.from_strings(A_TEXT, vocab=a.vocab)
    co = Corpus.from_strings(A_TEXT, vocab=one.vocab)
    assert score(one, co).ppl == pytest.approx(score(a, ca).ppl, rel=1e-6)


def test_best_mix_maximises_the_likelihood():
    rng = np.random.default_rng(0)
    comp = np.log10(rng.dirichlet(np.ones(5), size=(3, 400))[..., 0])
    lam, history = best_mix(comp, precision=1e-12)
    assert lam.sum() == pytest.approx(1.0) and len(history) > 3

    def ll(x):
        return np.log(x @ np.power(10.0, comp)).sum()

    for _ in range(200):
        x = rng.dirichlet(np.ones(3))
        assert ll(x) <= ll(lam) + 1e-9
    # compute-best-mix's stop: no weight moved by more than the precision
    lam3, h = best_mix(comp, precision=1e-3)
    assert np.all(np.abs(h[-1] - h[-2]) <= 1e-3) and not np.all(np.abs(h[-2] - h[-3]) <= 1e-3)


def test_cli_mixes_log_linear_and_arpa_models(tmp_path, models):
    a, b = models
    pa, pb = tmp_path / "a.arpa", tmp_path / "b.arpa"
    a.write_arpa(pa)
    b.write_arpa(pb)
    lm = LogLinearLM(order=3, lam=0.02, max_iter=50).fit(Corpus.from_strings(A_TEXT + B_TEXT))
    pl = tmp_path / "m.lm"
    lm.save(pl)
    test = tmp_path / "test.txt"
    test.write_text("\n".join(TEST) + "\n")
    r = CliRunner().invoke(main, ["ppl", str(pl), str(test), "--mix-lm", str(pa), "--lambda", "0.6",
                                  "--mix-lm2", str(pb), "--mix-lambda2", "0.1", "--json"])
    assert r.exit_code == 0, r.output
    back_a, back_b = BackoffLM.read_arpa(pa), BackoffLM.read_arpa(pb)
    mx = MixtureLM([lm, back_a, back_b], [0.6, 0.3, 0.1])
    want = score(mx, Corpus.from_strings(TEST, vocab=mx.vocab)).ppl
    assert json.loads(r.output)["ppl"] == pytest.approx(want, rel=1e-9)
    # static: a log-linear model is converted exactly, then merged and written
    out = tmp_path / "merged.arpa"
    r = CliRunner().invoke(main, ["ppl", str(pl), str(test), "--mix-lm", str(pa), "--lambda", "0.5",
                                  "--write-lm", str(out), "--json"])
    assert r.exit_code == 0, r.output
    r2 = CliRunner().invoke(main, ["ppl", "--arpa", str(out), str(test), "--json"])
    assert json.loads(r2.output)["ppl"] == pytest.approx(json.loads(r.output)["ppl"], rel=1e-5)
    r = CliRunner().invoke(main, ["ppl", str(pl), str(test), "--mix-lm", str(pa), "--write-lm", str(pa)])
    assert r.exit_code != 0 and BackoffLM.read_arpa(pa).counts == a.counts
    r = CliRunner().invoke(main, ["ppl", str(pl), str(test), "--mix-lm", str(pa), "--mix-lm2", str(pb)])
    assert r.exit_code != 0 and "--mix-lambda2" in r.output
    r = CliRunner().invoke(main, ["best-mix", str(test), str(pl), str(pa), "--json"])
    assert r.exit_code == 0, r.output
    got = json.loads(r.output)
    assert sum(got["weights"]) == pytest.approx(1.0) and len(got["weights"]) == 2


# ------------------------------------------------------------------ SRILM's figures

@pytest.mark.parametrize("lam, ppl, ppl1", [(0.3, "174.9595", "223.9586"), (0.5, "159.6965", "203.5309"),
                                            (0.7, "151.5989", "192.7305")])
def test_static_merge_reproduces_srilm(shared, lam, ppl, ppl1):
    a = BackoffLM.read_arpa(shared("anchors", "srilm", "ptb.kn5.srilm-default.arpa.gz"))
    b = BackoffLM.read_arpa(shared("anchors", "srilm", "ptb100k.kn5.srilm-nocut.arpa.gz"))
    m = merge_static([a, b], full_weights([lam], 2))
    if lam == 0.7:
        assert m.counts == [10001, 264990, 131849, 115312, 103891]
    rep = score(m, Corpus.from_text(shared("corpora", "ptb", "ptb.test.txt"), m.vocab))
    assert ("%.7g" % rep.ppl, "%.7g" % rep.ppl1) == (ppl, ppl1)


def test_three_model_merge_and_best_mix_reproduce_srilm(shared, tmp_path):
    s = [str(shared("anchors", "srilm", f)) for f in
         ("ptb.kn5.srilm-default.arpa.gz", "ptb100k.kn5.srilm-nocut.arpa.gz", "ptb.kn3.srilm-nocut.arpa.gz")]
    test = str(shared("corpora", "ptb", "ptb.test.txt"))
    r = CliRunner().invoke(main, ["ppl", s[0], test, "--mix-lm", s[1], "--lambda", "0.6", "--mix-lm2", s[2],
                                  "--mix-lambda2", "0.2", "--static"])
    assert r.exit_code == 0, r.output
    assert "ppl= 145.3196 ppl1= 184.3743" in r.output
    r = CliRunner().invoke(main, ["best-mix", str(shared("corpora", "ptb", "ptb.valid.txt")), s[0], s[1]])
    assert r.exit_code == 0, r.output
    assert "best lambda (0.742928 0.257072)" in r.output


def test_debug_1_is_srilms_byte_for_byte(shared, tmp_path):
    text = tmp_path / "test3.txt"
    shutil.copy(shared("anchors", "srilm", "ptb.test.first3.txt"), text)
    want = shared("anchors", "srilm", "ptb.kn5.srilm-default.debug1.test3.txt").read_text()
    arpa = str(shared("anchors", "srilm", "ptb.kn5.srilm-default.arpa.gz"))
    import os

    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        r = CliRunner().invoke(main, ["ppl", "--arpa", arpa, "test3.txt", "--debug", "1"])
    finally:
        os.chdir(cwd)
    assert r.exit_code == 0, r.output
    assert r.output == want
