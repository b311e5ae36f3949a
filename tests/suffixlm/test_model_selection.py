"""--lam auto as a library function: the grid and the choice on held-out text."""

import pytest

from suffixlm.corpus import load_training_corpus
from suffixlm.model_selection import LAM_MULTIPLES, lam_grid, select_lam

TRAIN = ["the cat sat", "the dog sat", "a cat ran"]


class _Fake:
    def __init__(self, lam, ppl):
        self.lam_, self._ppl = lam, ppl

    def perplexity(self, valid):
        assert valid == "held-out"
        return self._ppl


def test_grid_is_multiples_of_one_over_predictions():
    assert lam_grid(200) == [m / 200 for m in LAM_MULTIPLES]
    with pytest.raises(ValueError):
        lam_grid(0)


def test_select_keeps_the_lowest_validation_perplexity(tmp_path):
    path = tmp_path / "train.txt"
    path.write_text("\n".join(TRAIN) + "\n", encoding="utf-8")
    corpus = load_training_corpus(path)
    n = corpus.n_tokens - corpus.n_sentences
    assert n == 12  # 9 words + 3 </s>
    ppl_of = {lam: p for lam, p in zip(lam_grid(n), [50.0, 20.0, 10.0, 12.0, 30.0])}
    seen = []
    best, results = select_lam(lambda lam: _Fake(lam, ppl_of[lam]), corpus, "held-out",
                               report=lambda lam, p: seen.append((lam, p)))
    assert best.lam_ == lam_grid(n)[2]
    assert results == [{"lam": lam, "valid_ppl": p} for lam, p in ppl_of.items()]
    assert seen == list(ppl_of.items())
    with pytest.raises(ValueError, match="held-out"):
        select_lam(lambda lam: _Fake(lam, 1.0), corpus, None)
