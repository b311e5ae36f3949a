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
#: Solver tolerance along the path; the chosen lambda is then refitted from its weights
#: to the final tolerance (``select_lam(refine=...)``). On PTB 100k/20k order 5 (KN base)
#: the path at 3e-5 chose the lambda the path at 1e-6 chose, with 408 solver iterations
#: in all instead of 1,043, and the same test perplexity to 0.004.
PATH_TOL = 3e-5
#: Lambdas before the loose path's choice that are refined too (``select_lam``).
REFINE_LARGER = 1


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
               refine: Callable[[object], object] | None = None, refine_larger: int = REFINE_LARGER):
    """Fit along :func:`lam_path` and keep the model of lowest perplexity on ``valid``.

    fit(lam) -> a fitted :class:`suffixlm.model.LogLinearLM`. It may return the same
    object every time, refitted from its previous weights (``warm_start=True``, the
    fast way): each fit is kept as a shallow copy (``fit`` rebinds the weights, it
    never changes them in place). corpus: the training :class:`suffixlm.corpus.Corpus`
    (its size scales the path); valid: held-out text the model's ``perplexity``
    accepts. ``report(lam, valid_ppl)`` after each fit.

    ``refine(fit) -> model``: when the path ran at a looser solver tolerance, the final
    fits: the chosen lambda and the ``refine_larger`` lambdas before it on the path are
    refined (largest first), and the refined model of lowest validation perplexity is
    returned. A loose path lags behind the exact one (each fit stops early, near the
    previous lambda's weights, i.e. more regularised than it should be), so its minimum
    can sit one step below the exact path's: refining the larger neighbour as well
    corrects that. Refined fits are in the results with ``"refined": True``.
    Returns (best model, [{"lam": ..., "valid_ppl": ...} per fit]).
    """
    if valid is None:
        raise ValueError("choosing lambda needs held-out text (valid)")
    if patience < 1:
        raise ValueError("patience must be >= 1")
    fits = []  # (valid ppl, model copy) along the path
    results = []
    worse = 0
    best_i = None
    for lam in lam_path(corpus.n_tokens - corpus.n_sentences, start, factor, smallest):
        model = fit(lam)
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": lam, "valid_ppl": ppl})
        if report is not None:
            report(lam, ppl)
        fits.append((ppl, copy.copy(model)))
        if best_i is None or ppl < fits[best_i][0]:
            best_i = len(fits) - 1
            worse = 0
        else:
            worse += 1
            if worse >= patience:
                break
    if refine is None:
        return fits[best_i][1], results
    best = None
    for i in range(max(best_i - refine_larger, 0), best_i + 1):
        model = refine(fits[i][1])
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": model.lam_, "valid_ppl": ppl, "refined": True})
        if report is not None:
            report(model.lam_, ppl)
        if best is None or ppl < best[0]:
            best = (ppl, copy.copy(model))
    return best[1], results
