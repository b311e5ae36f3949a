"""Choosing the regularisation of the log-linear LM on held-out text (``--lam auto``).

A warm-started path: lambda starts large (where the model is nearly its starting point
and a fit takes few iterations) and shrinks by a constant factor; each fit starts from
the previous weights; the path stops once the validation perplexity has been worse than
the best ``patience`` times in a row. Along every path measured it had a single minimum
(benchmarks/lm_variants_100k.json, and full PTB with the KN base: README), so one rise
ends it.
"""

from __future__ import annotations

import copy
from typing import Callable

#: First lambda of the path, times 1 / (predicted training tokens).
PATH_START = 4.0
#: Factor between consecutive lambdas (the discount-like quantity n * lambda moves by it).
PATH_FACTOR = 1.3
#: Smallest lambda of the path, times 1 / (predicted training tokens).
PATH_MIN = 0.01
#: Rises of the validation perplexity past the best that end the path.
PATIENCE = 1


def lam_path(n_predictions: int, start: float = PATH_START, factor: float = PATH_FACTOR,
             smallest: float = PATH_MIN) -> list[float]:
    """The lambdas ``start / n, start / (n factor), ...`` down to ``smallest / n``."""
    if n_predictions < 1:
        raise ValueError(f"n_predictions = {n_predictions}: expected >= 1")
    if not (factor > 1.0 and start > 0.0 and smallest > 0.0):
        raise ValueError("the path needs start > 0, smallest > 0 and factor > 1")
    out, m = [], float(start)
    while m >= smallest * (1.0 - 1e-12):
        out.append(m / n_predictions)
        m /= factor
    return out


def select_lam(fit: Callable[[float], object], corpus, valid, start: float = PATH_START,
               factor: float = PATH_FACTOR, smallest: float = PATH_MIN, patience: int = PATIENCE,
               report: Callable[[float, float], None] | None = None,
               refine: Callable[[object], object] | None = None):
    """Fit along :func:`lam_path` and keep the model of lowest perplexity on ``valid``.

    fit(lam) -> a fitted :class:`suffixlm.model.LogLinearLM`. It may return the same
    object every time, refitted from its previous weights (``warm_start=True``, the
    fast way): the best fit is kept as a shallow copy (``fit`` rebinds the weights, it
    never changes them in place). corpus: the training :class:`suffixlm.corpus.Corpus`
    (its size scales the path); valid: held-out text the model's ``perplexity``
    accepts. ``report(lam, valid_ppl)`` after each fit.
    ``refine(best) -> model``: run on the chosen fit at the end (e.g. the path at a
    looser tolerance, then the chosen lambda to the final tolerance from its weights);
    its validation perplexity is added to the results with ``"refined": True``.
    Returns (best model, [{"lam": ..., "valid_ppl": ...} per fit]).
    """
    if valid is None:
        raise ValueError("choosing lambda needs held-out text (valid)")
    if patience < 1:
        raise ValueError("patience must be >= 1")
    best = None
    results = []
    worse = 0
    for lam in lam_path(corpus.n_tokens - corpus.n_sentences, start, factor, smallest):
        model = fit(lam)
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": lam, "valid_ppl": ppl})
        if report is not None:
            report(lam, ppl)
        if best is None or ppl < best[0]:
            best = (ppl, copy.copy(model))
            worse = 0
        else:
            worse += 1
            if worse >= patience:
                break
    model = best[1]
    if refine is not None:
        model = refine(model)
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": model.lam_, "valid_ppl": ppl, "refined": True})
        if report is not None:
            report(model.lam_, ppl)
    return model, results
