"""scikit-learn's estimator protocol on the language models: get_params / set_params,
clone, GridSearchCV over lambda, cross_val_score, and score(X) = -log10 ppl."""

import math

import numpy as np
import pytest
from suffixlm.corpora import sample_path

from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM

SENTENCES = sample_path("tiny_lm.train.txt").read_text().splitlines()[:120]


def test_get_and_set_params_follow_the_constructor():
    lm = LogLinearLM(order=3, lam=0.01, base="kn", positive=False)
    p = lm.get_params()
    assert p["order"] == 3 and p["lam"] == 0.01 and p["base"] == "kn" and p["positive"] is False
    assert set(p) == {"order", "penalty", "lam", "alpha", "solver", "max_iter", "batch_size", "batch_growth", "tol",
                      "seed", "init", "warm_start", "penalize_root", "precondition", "loo", "discount", "base",
                      "positive", "threads", "n_jobs"}
    assert lm.set_params(order=4, lam=0.02) is lm and (lm.order, lm.lam) == (4, 0.02)
    with pytest.raises(ValueError, match="no parameter 'lambda'.*lam"):
        lm.set_params(**{"lambda": 1.0})
    assert KneserNeyLM(order=4, min_counts=[1]).get_params() == {"order": 4, "modified": True, "min_counts": [1],
                                                                  "interpolate": True, "threads": None,
                                                                  "n_jobs": None}


def test_score_of_a_corpus_is_minus_log10_ppl_and_of_a_sentence_kenlms():
    lm = LogLinearLM(order=3, max_iter=30).fit(SENTENCES[:80])
    test = SENTENCES[80:]
    assert lm.score(test) == pytest.approx(-math.log10(lm.corpus_perplexity(test)), rel=1e-12)
    assert lm.score(test, None) == lm.score(test)  # scikit-learn passes y=None
    s = test[0]
    assert lm.score(s) == pytest.approx(sum(lp for lp, _, _ in lm.full_scores(s)), rel=1e-12)


def test_clone_gives_an_unfitted_copy_with_the_same_parameters():
    base = pytest.importorskip("sklearn.base")
    lm = LogLinearLM(order=3, lam=0.01).fit(SENTENCES[:50])
    c = base.clone(lm)
    assert c is not lm and c.get_params() == lm.get_params() and not hasattr(c, "weights_")
    kn = base.clone(KneserNeyLM(order=3, min_counts=[1]))
    assert kn.get_params()["min_counts"] == [1]


def test_grid_search_over_lambda_and_cross_validation():
    ms = pytest.importorskip("sklearn.model_selection")
    n = sum(len(s.split()) + 1 for s in SENTENCES)
    grid = [1.0 / n, 30.0 / n]
    search = ms.GridSearchCV(LogLinearLM(order=3, max_iter=40), {"lam": grid}, cv=3).fit(SENTENCES)
    assert search.best_params_["lam"] in grid
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and np.all(scores < 0)
    assert search.best_score_ == max(scores)
    assert search.best_estimator_.weights_.shape[0] > 0  # refitted on everything
    # cross_val_score: each fold's score is -log10 of the fold's ppl under a model of the rest
    folds = ms.KFold(3)
    got = ms.cross_val_score(KneserNeyLM(order=3, min_counts=[1]), SENTENCES, cv=folds)
    for value, (tr, te) in zip(got, folds.split(SENTENCES)):
        kn = KneserNeyLM(order=3, min_counts=[1]).fit([SENTENCES[i] for i in tr])
        assert value == pytest.approx(-math.log10(kn.corpus_perplexity([SENTENCES[i] for i in te])), rel=1e-12)
