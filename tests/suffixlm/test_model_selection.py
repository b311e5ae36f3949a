"""--lam auto as a library function: the grid and the choice on held-out text."""

from types import SimpleNamespace

import pytest

from suffixlm.corpus import load_training_corpus
from suffixlm.model_selection import PATH_FACTOR, PATH_MIN, PATH_START, lam_path, select_lam

TRAIN = ["the cat sat", "the dog sat", "a cat ran"]


class _Fake:
    def __init__(self, lam, ppl):
        self.lam_, self._ppl = lam, ppl

    def corpus_perplexity(self, valid):
        assert valid == "held-out"
        return self._ppl


def test_path_is_geometric_in_multiples_of_one_over_predictions():
    path = lam_path(200)
    assert path[0] == PATH_START / 200
    for a, b in zip(path, path[1:]):
        assert a / b == pytest.approx(PATH_FACTOR)
    assert path[-1] * 200 >= PATH_MIN * (1 - 1e-9) and path[-1] * 200 / PATH_FACTOR < PATH_MIN
    assert lam_path(10, start=1.0, factor=2.0, smallest=0.25) == [0.1, 0.05, 0.025]
    with pytest.raises(ValueError):
        lam_path(0)
    with pytest.raises(ValueError):
        lam_path(10, factor=1.0)


def test_select_keeps_the_lowest_validation_perplexity_and_stops_when_it_rises(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    corpus = load_training_corpus(path)
    n = corpus.n_tokens - corpus.n_sentences
    assert n == 12  # 9 words + 3 </s>
    lams = lam_path(n)
    ppls = [50.0, 20.0, 10.0, 12.0, 11.0, 30.0, 5.0]  # patience 2: stops after two fits worse than 10
    ppl_of = dict(zip(lams, ppls))
    seen = []
    best, results = select_lam(lambda lam: _Fake(lam, ppl_of[lam]), corpus, "held-out", patience=2,
                               report=lambda lam, p: seen.append((lam, p)))
    assert best.lam_ == lams[2]
    assert results == [{"lam": lam, "valid_ppl": p} for lam, p in zip(lams[:5], ppls[:5])]
    assert seen == list(zip(lams[:5], ppls[:5]))
    # the default (one rise) stops at the first fit worse than the best
    best, results = select_lam(lambda lam: _Fake(lam, ppl_of[lam]), corpus, "held-out")
    assert best.lam_ == lams[2] and len(results) == 4
    # patience 4 goes on past three fits worse than the best and finds the later minimum
    best, results = select_lam(lambda lam: _Fake(lam, ppl_of.get(lam, 99.0)), corpus, "held-out", patience=4)
    assert best.lam_ == lams[6] and len(results) == 11
    with pytest.raises(ValueError, match="held-out"):
        select_lam(lambda lam: _Fake(lam, 1.0), corpus, None)


def test_select_with_one_refitted_estimator_keeps_the_best_fit(tmp_path):
    """The CLI refits one warm-started estimator along the path: the model returned is a
    snapshot of the best fit that scores as it did then."""
    from suffixlm.model import LogLinearLM

    corpus = load_training_corpus_lines(tmp_path, TRAIN * 3)
    valid = ["the cat ran", "a dog sat"]
    lm = LogLinearLM(order=2, warm_start=True, max_iter=50)
    scores = {}

    def fit(lam):
        lm.lam = lam
        lm.fit(corpus)
        scores[lam] = lm.corpus_perplexity(valid)
        return lm

    best, results = select_lam(fit, corpus, valid)
    assert best is not lm
    want = min(results, key=lambda r: r["valid_ppl"])
    assert best.lam_ == want["lam"]
    assert best.corpus_perplexity(valid) == pytest.approx(want["valid_ppl"], rel=1e-12)
    assert lm.corpus_perplexity(valid) == pytest.approx(results[-1]["valid_ppl"], rel=1e-12)


def load_training_corpus_lines(tmp_path, lines):
    path = tmp_path / "train.txt"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return load_training_corpus(path)


def test_select_lam_refines_the_choice_and_its_larger_neighbour():
    """With ``refine`` (a loose path), the chosen lambda and the one before it are
    refined, largest first, and the refined fit of lowest validation perplexity wins,
    even when the loose path preferred the smaller lambda."""
    n = 200
    corpus = SimpleNamespace(n_tokens=n + 20, n_sentences=20)
    lams = lam_path(n)
    loose = {lams[0]: 150.0, lams[1]: 140.0, lams[2]: 130.0, lams[3]: 135.0}  # loose minimum at lams[2]
    exact = {lams[1]: 120.0, lams[2]: 125.0}  # refined: lams[1] is better
    refined = []

    def refine(m):
        refined.append(m.lam_)
        return _Fake(m.lam_, exact[m.lam_])

    best, results = select_lam(lambda lam: _Fake(lam, loose[lam]), corpus, "held-out", refine=refine)
    assert refined == [lams[1], lams[2]]
    assert best.lam_ == lams[1]
    assert [r.get("refined", False) for r in results] == [False] * 4 + [True, True]
    assert [r["valid_ppl"] for r in results[-2:]] == [120.0, 125.0]


def test_a_level_fit_is_no_rise():
    """A fit within RISE_TOL of the best (a loose fit that hardly moved) neither becomes
    the best nor ends the path; a real rise does."""
    from suffixlm.model_selection import RISE_TOL

    n = 200
    corpus = SimpleNamespace(n_tokens=n + 20, n_sentences=20)
    lams = lam_path(n)
    ppls = [147.73, 147.71, 147.71 * (1 + RISE_TOL / 2), 147.60, 150.0, 99.0]
    ppl_of = dict(zip(lams, ppls))
    best, results = select_lam(lambda lam: _Fake(lam, ppl_of.get(lam, 99.0)), corpus, "held-out")
    assert best.lam_ == lams[3] and len(results) == 5


def test_fit_auto_lam_is_the_commands_lam_auto(tmp_path):
    """``fit_auto_lam`` (the library call) chooses what ``suffixlm train --lam auto``'s loop
    chooses, with the same weights, the loose path refined to the estimator's tol."""
    import numpy as np

    from suffixlm.commands.train import fit_lm
    from suffixlm.corpus import Corpus
    from suffixlm.model import LogLinearLM
    from suffixlm.model_selection import fit_auto_lam
    from suffixlm.progress import Progress

    corpus = load_training_corpus_lines(tmp_path, TRAIN * 3)
    valid = Corpus.from_strings(["the cat ran", "a dog sat"], corpus.vocab)

    def estimator():
        return LogLinearLM(order=2, max_iter=200, tol=1e-6, base="kn", positive=False)

    best, results = fit_auto_lam(estimator(), corpus, valid)
    assert any(r.get("refined") for r in results) and best.tol == 1e-6
    cli, cli_results = fit_lm(estimator(), corpus, valid, "auto", Progress(True))
    assert cli_results == results and cli.lam_ == best.lam_
    np.testing.assert_array_equal(cli.weights_, best.weights_)
