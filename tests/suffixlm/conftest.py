"""Fixtures of the language-model tests."""

from __future__ import annotations

import warnings

import pytest

from suffixlm.backoff.kn import DiscountWarning, KneserNeyLM
from suffixlm.corpora import sample_path
from suffixlm.sample import BackoffSampler


@pytest.fixture(scope="module")
def sampled_corpus(tmp_path_factory):
    """About 50k words drawn from a trigram model of the tiny corpus (a text for the
    sharded and partitioned Kneser-Ney paths)."""
    d = tmp_path_factory.mktemp("sampled")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)  # the tiny corpus is too small for some discounts
        lm = KneserNeyLM(3, min_counts=[1]).fit_text(str(sample_path("tiny_lm.train.txt")), unk=True)
    path = d / "sampled.txt"
    with open(path, "w") as fh:
        for text in BackoffSampler(lm.model_).sample_lines(50_000, seed=3):
            fh.write(text)
    return str(path)
