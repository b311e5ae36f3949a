"""End-to-end: ``suffixlm train`` / ``demo`` / ``ppl`` on the shipped sample corpus."""

import json

import numpy as np
import pytest
from click.testing import CliRunner
from suffixlm.corpora import sample_path

from suffixlm.cli import main
from suffixlm.corpus import Corpus, load_training_corpus
from suffixlm.model import LogLinearLM
from suffixlm.model_selection import lam_path

TRAIN = str(sample_path("tiny_lm.train.txt"))
TEST = str(sample_path("tiny_lm.test.txt"))


def run(*args):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def test_train_then_ppl(tmp_path):
    model = tmp_path / "tiny.model"
    r = run("train", TRAIN, "-o", str(model), "--order", "3", "--lam", "1e-4", "--epochs", "40", "--quiet", "--json")
    assert r.exit_code == 0, r.output
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["order"] == 3 and summary["nonzero"] <= summary["parameters"]
    assert model.exists()
    lm = LogLinearLM.load(model)
    r = run("ppl", str(model), TEST, "--json")
    assert r.exit_code == 0, r.output
    rep = json.loads(r.stdout)
    test = Corpus.from_text(TEST, lm.vocab_)
    lp = lm.log10_probs(test)
    expected = 10 ** (-np.nansum(lp) / np.isfinite(lp).sum())
    assert abs(rep["ppl"] - expected) <= 1e-6 * expected
    r = run("ppl", str(model), TEST)
    assert r.output.splitlines()[0].startswith(f"file {TEST}: 200 sentences, 1424 words, 0 OOVs")


def test_lam_auto_needs_valid_and_chooses_from_grid(tmp_path):
    model = tmp_path / "m"
    r = CliRunner().invoke(main, ["train", TRAIN, "-o", str(model), "--lam", "auto"])
    assert r.exit_code != 0 and "--valid" in r.output
    r = run("train", TRAIN, "-o", str(model), "--order", "2", "--lam", "auto", "--valid", TEST, "--epochs", "15",
            "--quiet", "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout.strip().splitlines()[-1])
    grid = [g for g in s["lam_grid"] if not g.get("refined")]
    refined = [g for g in s["lam_grid"] if g.get("refined")]
    # the path at a loose tolerance, then its choice and the lambda before it refined
    chosen = min(range(len(grid)), key=lambda i: grid[i]["valid_ppl"])
    assert [g["lam"] for g in refined] == [g["lam"] for g in grid[max(chosen - 1, 0):chosen + 1]]
    assert s["lam"] == min(refined, key=lambda g: g["valid_ppl"])["lam"]
    assert s["valid_ppl"] == pytest.approx(min(g["valid_ppl"] for g in refined), rel=1e-12)
    # --lam auto trains the best model measured unless told otherwise: KN base, signed weights
    assert s["base"] == "kn" and s["signed"] is True
    train = load_training_corpus(TRAIN)
    assert [g["lam"] for g in grid] == lam_path(train.n_tokens - train.n_sentences)[:len(grid)]


def test_bad_input_is_a_clean_error(tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\n\xff\xfe\n")
    r = CliRunner().invoke(main, ["train", str(bad), "-o", str(tmp_path / "m")])
    assert r.exit_code == 1
    assert "bad.txt:2: invalid UTF-8" in r.output
    assert "Traceback" not in r.output
    assert not (tmp_path / "m").exists()
    r = CliRunner().invoke(main, ["train", TRAIN, "-o", str(tmp_path / "m"), "--lam", "x"])
    assert r.exit_code == 2


def test_demo_runs():
    r = run("demo", "--order", "2")
    assert r.exit_code == 0
    assert "perplexity" in r.output


def test_compare_table_kn_loglinear_and_arpa(tmp_path):
    arpa = tmp_path / "kn2.arpa"
    r = run("kn", TRAIN, "-o", str(arpa), "--order", "2", "--min-count", "none")
    assert r.exit_code == 0, r.output
    try:
        import matplotlib  # noqa: F401  (in the test extra; the plot is optional for users)
    except ImportError:
        r = run("compare", TRAIN, TEST, "--orders", "2", "--plot", str(tmp_path / "c.png"))
        assert r.exit_code == 1 and "--plot needs matplotlib" in r.output
        pytest.skip("matplotlib is not installed: the plot is not tested")
    r = run("compare", TRAIN, TEST, "--orders", "2", "--penalty", "linf-tree", "--penalty", "l1", "--lam", "1e-4",
            "--epochs", "20", "--arpa", str(arpa), "--json", "--quiet", "--plot", str(tmp_path / "c.png"))
    assert r.exit_code == 0, r.output
    rows = json.loads(r.stdout)
    names = [x["model"] for x in rows]
    assert names[:3] == ["kn-modified", "loglinear-kn linf-tree", "loglinear-kn l1"] and names[3].startswith("arpa:")
    # our KN written as ARPA and read back scores the same as our KN in memory
    assert rows[3]["ppl"] == pytest.approx(rows[0]["ppl"], rel=1e-6)
    assert (tmp_path / "c.png").stat().st_size > 0
    r = CliRunner().invoke(main, ["compare", TRAIN, TEST, "--orders", "x-y"])
    assert r.exit_code == 2


def test_train_with_kn_base_and_signed_weights(tmp_path):
    """--base kn --signed: the model file keeps the base measure; with lambda large enough
    to keep every weight 0 the perplexity is that of `suffixlm kn --no-cutoffs`-style KN."""
    from suffixlm.evaluate import score
    from suffixlm.backoff.kn import KneserNeyLM

    model = tmp_path / "kn.model"
    r = run("train", TRAIN, "-o", str(model), "--order", "3", "--base", "kn", "--signed", "--lam", "1e3", "--quiet",
            "--json")
    assert r.exit_code == 0, r.output
    s = json.loads(r.stdout.strip().splitlines()[-1])
    assert s["base"] == "kn" and s["signed"] and s["nonzero"] == 0
    lm = LogLinearLM.load(model)
    test = Corpus.from_text(TEST, lm.vocab_)
    train = Corpus.from_text(TRAIN, lm.vocab_)
    kn = KneserNeyLM(order=3, min_counts=[1]).fit(train)
    assert lm.corpus_perplexity(test) == pytest.approx(score(kn, Corpus.from_text(TEST, kn.vocab_)).ppl, rel=1e-6)
    r = run("train", TRAIN, "-o", str(model), "--order", "3", "--base", "kn", "--signed", "--lam", "1e-5",
            "--epochs", "30", "--quiet", "--json")
    assert r.exit_code == 0 and json.loads(r.stdout.strip().splitlines()[-1])["nonzero"] > 0
    assert (LogLinearLM.load(model).weights_ < 0).any()


def test_outputs_never_replace_inputs_and_are_checked_before_work(tmp_path):
    from click.testing import CliRunner

    from suffixlm.cli import main

    text = tmp_path / "train.txt"
    text.write_text("the cat sat\nthe dog sat\na cat saw a dog\n")
    before = text.read_bytes()
    for args in (["train", str(text), "-o", str(text)], ["kn", str(text), "-o", str(text), "--order", "2"],
                 ["train", str(text), "-o", str(tmp_path / "m.lm"), "--lam", "auto", "--valid", str(text)]):
        r = CliRunner().invoke(main, args)
        if "--valid" in args:  # valid may be the training text; the output is elsewhere
            assert r.exit_code == 0, r.output
            continue
        assert r.exit_code != 0 and "refusing to overwrite" in r.output, r.output
        assert text.read_bytes() == before
