"""Choosing the regularisation of the log-linear LM on held-out text (``--lam auto``)."""

from __future__ import annotations

from typing import Callable, Sequence

#: Multiples of 1 / (predicted training tokens): the scale at which the best lambda was
#: found on PTB-100k and full PTB (scripts/reproduce_figure2.py, scripts/bench_lm_ptb.py).
LAM_MULTIPLES = (10.0, 3.0, 1.0, 0.3, 0.1)


def lam_grid(n_predictions: int, multiples: Sequence[float] = LAM_MULTIPLES) -> list[float]:
    """The lambdas ``m / n_predictions`` for each multiple m."""
    if n_predictions < 1:
        raise ValueError(f"n_predictions = {n_predictions}: expected >= 1")
    return [float(m) / n_predictions for m in multiples]


def select_lam(fit: Callable[[float], object], corpus, valid, multiples: Sequence[float] = LAM_MULTIPLES,
               report: Callable[[float, float], None] | None = None):
    """Train one model per lambda of :func:`lam_grid` and keep the one of lowest perplexity
    on ``valid``.

    fit(lam) -> a fitted :class:`suffixlm.model.LogLinearLM` (e.g.
    ``lambda lam: LogLinearLM(order=5, lam=lam).fit(corpus)``); corpus: the training
    :class:`suffixlm.corpus.Corpus` (its size sets the grid); valid: held-out text the
    model's ``perplexity`` accepts. ``report(lam, valid_ppl)`` after each fit.
    Returns (best model, [{"lam": ..., "valid_ppl": ...} per lambda]).
    """
    if valid is None:
        raise ValueError("choosing lambda needs held-out text (valid)")
    best = None
    results = []
    for lam in lam_grid(corpus.n_tokens - corpus.n_sentences, multiples):
        model = fit(lam)
        ppl = float(model.perplexity(valid))
        results.append({"lam": lam, "valid_ppl": ppl})
        if report is not None:
            report(lam, ppl)
        if best is None or ppl < best[0]:
            best = (ppl, model)
    return best[1], results
