"""Perplexity exactly as SRILM's ``ngram -ppl`` reports it, for any model.

The scoring protocol: a model is any object with ``order``, ``vocab`` and
``log10_probs(corpus) -> float64[n_pos]``, the log10 probability of every predicted
position of the corpus (every token but ``<s>``: the words and each ``</s>``, in corpus
order; ``-inf`` for probability zero). ``perplexity_report`` turns those into SRILM's
statistics:

* sentences, words (``</s>`` not counted), OOVs (words outside a closed vocabulary;
  their positions are skipped), zeroprobs (positions with probability 0, skipped);
* logprob = sum of log10 p over the remaining positions;
* ppl  = 10^(-logprob / (words - OOVs - zeroprobs + sentences))   (``</s>`` counted)
* ppl1 = 10^(-logprob / (words - OOVs - zeroprobs))               (``</s>`` not counted)

``PerplexityReport.srilm_text()`` prints SRILM's two lines with its number format
(C++ stream precision 7, i.e. ``%.7g``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Protocol, runtime_checkable

import numpy as np

from .corpus import Corpus, Vocabulary


@runtime_checkable
class LanguageModel(Protocol):
    """What ``score`` needs from a model."""

    order: int

    @property
    def vocab(self) -> Vocabulary: ...

    def log10_probs(self, corpus: Corpus) -> np.ndarray: ...


def predicted_mask(corpus: Corpus) -> np.ndarray:
    """bool[n_tokens]: True at every predicted position (all tokens but ``<s>``)."""
    m = np.ones(corpus.n_tokens, dtype=bool)
    m[corpus.offsets[:-1]] = False
    return m


def _g7(x: float) -> str:
    if x != x:
        return "nan"
    if x in (float("inf"), float("-inf")):
        return "inf" if x > 0 else "-inf"
    return "%.7g" % x


@dataclass
class PerplexityReport:
    """SRILM's ``-ppl`` statistics for one text."""

    file: str
    sentences: int
    words: int
    oovs: int
    zeroprobs: int
    logprob: float
    ppl: float | None
    ppl1: float | None

    def srilm_text(self) -> str:
        """SRILM's two summary lines (no trailing newline)."""
        ppl = "undefined" if self.ppl is None else _g7(self.ppl)
        ppl1 = "undefined" if self.ppl1 is None else _g7(self.ppl1)
        return (f"file {self.file}: {self.sentences} sentences, {self.words} words, {self.oovs} OOVs\n"
                f"{self.zeroprobs} zeroprobs, logprob= {_g7(self.logprob)} ppl= {ppl} ppl1= {ppl1}")

    def as_dict(self) -> dict:
        return asdict(self)


def perplexity_report(corpus: Corpus, log10probs: np.ndarray, file_name: str | None = None) -> PerplexityReport:
    """SRILM statistics from per-position log10 probabilities.

    log10probs : float64[n_pos] for the predicted positions of ``corpus`` (all tokens but
                 ``<s>``, in corpus order). OOV positions (``corpus.target_mask()`` False)
                 are ignored whatever their value; ``-inf`` counts as a zeroprob.
    """
    pred = predicted_mask(corpus)
    lp = np.asarray(log10probs, dtype=np.float64)
    n_pos = int(pred.sum())
    if lp.shape != (n_pos,):
        raise ValueError(f"expected {n_pos} log-probabilities (one per predicted position), got shape {lp.shape}")
    target = corpus.target_mask()[pred]
    vals = lp[target]
    if np.any(np.isnan(vals)) or np.any(vals > 1e-6):
        raise ValueError("log10 probabilities must be <= 0 and not NaN")
    zero = np.isneginf(vals)
    zeroprobs = int(zero.sum())
    logprob = float(vals[~zero].sum())
    sentences = corpus.n_sentences
    words = corpus.n_words
    oovs = corpus.n_oov
    denom = words - oovs - zeroprobs + sentences
    ppl = float(10.0 ** (-logprob / denom)) if denom > 0 else None
    denom1 = denom - sentences
    ppl1 = float(10.0 ** (-logprob / denom1)) if denom1 > 0 else None
    return PerplexityReport(file_name if file_name is not None else (corpus.source or "-"),
                            sentences, words, oovs, zeroprobs, logprob, ppl, ppl1)


def score(model: LanguageModel, corpus: Corpus, file_name: str | None = None) -> PerplexityReport:
    """Score ``corpus`` with any model following the protocol."""
    return perplexity_report(corpus, model.log10_probs(corpus), file_name)
