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
import math
from typing import Callable

#: First lambda of the path, times 1 / (predicted training tokens).
PATH_START = 4.0
#: Factor between consecutive lambdas (the discount-like quantity n * lambda moves by it).
PATH_FACTOR = 1.3
#: Smallest lambda of the path, times 1 / (predicted training tokens).
PATH_MIN = 0.01
#: Rises of the validation perplexity past the best that end the path.
PATIENCE = 1
#: Solver tolerance along the path; the chosen lambda and the one before it are then
#: refitted from their weights to the final tolerance (``select_lam(refine=...)``). On
#: PTB 100k/20k with the KN base and signed weights this chose what the path at 1e-6
#: chose at orders 3 and 4 (457 and 520 solver iterations in all, against 511 and 637),
#: test perplexity within 0.03.
PATH_TOL = 3e-5
#: A validation perplexity counts as a rise past the best only when it exceeds it by this
#: relative amount: at a loose tolerance a fit may stop after the minimum three steps
#: and sit level with the previous one (full PTB, KN base, positive weights: 147.72
#: after 147.71), which must not end the path.
RISE_TOL = 1e-4
#: Lambdas before the loose path's choice that are refined too (``select_lam``).
REFINE_LARGER = 1


def fit_auto_lam(lm, corpus, valid, *, path_tol: float = PATH_TOL, checkpoint=None,
                 fit: Callable[[float, float, str, bool], object] | None = None,
                 report: Callable[[float, float], None] | None = None):
    """``--lam auto`` as a library call: lambda chosen on ``valid`` for the estimator ``lm``
    (a :class:`suffixlm.model.LogLinearLM`, refitted from its previous weights along the
    path: ``warm_start`` is set), its ``tol`` the final tolerance: the path runs at
    ``max(lm.tol, path_tol)`` and, when that is looser, its choice and the lambda before
    it are refined to ``lm.tol`` (:func:`select_lam`'s ``refine``). ``checkpoint``: a
    :class:`suffixlm.checkpoint.Checkpoint` that the path and every fit write to and go
    on from. ``fit(lam, tol, label, show_valid)``: one fit of ``lm`` (default: ``lm.fit``
    at those values; a caller's may show progress: ``label`` names the fit, and
    ``show_valid`` says whether a validation score each iteration is wanted). Returns
    (the chosen model, [{"lam": ..., "valid_ppl": ...} per fit])."""
    tol = lm.tol
    lm.warm_start = True
    if fit is None:
        def fit(lam_value, tol_value, label, show_valid):
            lm.lam, lm.tol = lam_value, tol_value
            lm.fit(corpus, valid=valid if show_valid else None, checkpoint=checkpoint)
            return lm

    path_tol = max(tol, path_tol)

    def refine(chosen):
        lm.weights_ = chosen.weights_  # warm start from that fit of the path
        return fit(chosen.lam_, tol, f" lam={chosen.lam_:.3g} to tol {tol:g}", False)

    def restore(arrays, meta):  # a fit of the path, from a checkpoint
        return copy.copy(lm.restore_fit(corpus, arrays, meta))

    return select_lam(lambda x: fit(x, path_tol, f" lam={x:.3g}", False), corpus, valid, report=report,
                      refine=refine if path_tol > tol else None, checkpoint=checkpoint, restore=restore)


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
               refine: Callable[[object], object] | None = None, refine_larger: int = REFINE_LARGER,
               checkpoint=None, restore: Callable[[dict, dict], object] | None = None):
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

    ``checkpoint``: a :class:`suffixlm.checkpoint.Checkpoint` that ``fit`` and ``refine``
    hand to the estimator. The path's own state (the results so far, and the fits it may
    still choose, refine or start from, each as ``model.fit_record()``) goes into every
    checkpoint, which is also written between fits when due; with ``checkpoint.resume``
    the path goes on from it: finished fits are not done again and the fit under way
    goes on from its solver state, so the result is the uninterrupted one, bit for bit.
    ``restore(arrays, meta) -> model`` makes a fitted model of such a record (and is
    called last for the fit the next one starts from, so that a warm-started estimator
    starts from it). The checkpoint's ``context`` must name the estimator's options:
    between fits the file holds no fit to compare them with.
    """
    if valid is None:
        raise ValueError("choosing lambda needs held-out text (valid)")
    if patience < 1:
        raise ValueError("patience must be >= 1")
    if checkpoint is not None and restore is None:
        raise ValueError("select_lam with a checkpoint needs restore=")
    lams = lam_path(corpus.n_tokens - corpus.n_sentences, start, factor, smallest)
    fits: dict[int, tuple[float, object]] = {}  # path index -> (valid ppl, model copy), those still needed
    results: list[dict] = []
    worse = 0
    best_i = None
    last = None  # index of the last fit of the path
    position = 0  # next path index, then next index to refine
    phase = "path"
    refined = None  # (valid ppl, model copy) of the best refined fit so far
    identity = None
    if checkpoint is not None:
        identity = _path_identity(corpus, valid, start, factor, smallest, patience, refine is not None, refine_larger)
        loaded = checkpoint.loaded_outer if checkpoint.resume else None
        if loaded is not None:
            checkpoint.check_identity(loaded[1].get("identity"), identity, "the path")
            phase, position, worse, best_i, last, results, fits, refined = _restored_path(
                checkpoint.path, loaded, restore, len(lams))

    def keep() -> set[int]:
        """The fits the path may still return, refine or start from."""
        if best_i is None:
            return set()
        if phase == "refine":
            return set(range(position, best_i + 1))
        # the best and the fits before it; the last fit and those before it (a later best's neighbours)
        return set(range(max(best_i - refine_larger, 0), best_i + 1)) | set(range(max(last - refine_larger, 0),
                                                                                   last + 1))

    def save_state(where: str) -> None:
        for i in set(fits) - keep():
            del fits[i]
        if checkpoint is not None:
            checkpoint.outer = _path_state(identity, phase, position, worse, best_i, last, results, fits, refined,
                                           where)

    while phase == "path":
        lam = lams[position]
        save_state(f"lambda {position + 1} of the path ({lam:.3g})")
        model = fit(lam)
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": lam, "valid_ppl": ppl})
        if report is not None:
            report(lam, ppl)
        fits[position] = (ppl, copy.copy(model))
        last = position
        if best_i is None or ppl < fits[best_i][0]:
            best_i = position
            worse = 0
        elif ppl > fits[best_i][0] * (1.0 + RISE_TOL):
            worse += 1
        # else: level with the best (a loose fit that has hardly moved): neither better nor a rise
        position += 1
        if worse >= patience or position >= len(lams):
            phase = "refine"
            position = max(best_i - refine_larger, 0) if refine is not None else best_i
        save_state(f"lambda {last + 1} of the path, finished")
        if checkpoint is not None:
            checkpoint.at_boundary("LogLinearLM")
    if refine is None:
        return fits[best_i][1], results
    while position <= best_i:
        i = position
        save_state(f"refinement of lambda {i + 1} of the path")
        model = refine(fits[i][1])
        ppl = float(model.corpus_perplexity(valid))
        results.append({"lam": model.lam_, "valid_ppl": ppl, "refined": True})
        if report is not None:
            report(model.lam_, ppl)
        if refined is None or ppl < refined[0]:
            refined = (ppl, copy.copy(model))
        position += 1
        save_state(f"refinement of lambda {i + 1} of the path, finished")
        if checkpoint is not None and position <= best_i:
            checkpoint.at_boundary("LogLinearLM")
    return refined[1], results


def _path_identity(corpus, valid, *settings) -> dict:
    """What a path's checkpoint must match: the training and validation data (their
    content) and the path's settings."""
    import os

    from .checkpoint import content_digest
    from .corpus import Corpus
    from .events import ContextEvents

    def digest(c):
        if isinstance(c, ContextEvents):  # a text counted on a cluster
            return c.digest()
        if isinstance(c, Corpus):
            return content_digest(c.vocab.words, bool(c.vocab.has_unk), c.tokens, c.offsets)
        if isinstance(c, (str, os.PathLike)):
            with open(c, "rb") as fh:
                return content_digest(fh.read().decode("latin-1"))
        return content_digest([str(x) for x in c])

    return {"training data": digest(corpus), "validation data": digest(valid), "path": list(settings)}


def _path_state(identity, phase, position, worse, best_i, last, results, fits, refined, where):
    """(arrays, meta) of the path for a checkpoint (``Checkpoint.outer``)."""
    arrays, records = {}, {}
    for i, (ppl, model) in fits.items():
        a, m = model.fit_record()
        arrays.update({f"fit{i}.{k}": v for k, v in a.items()})
        records[str(i)] = {"valid_ppl": ppl, "record": m}
    best = None
    if refined is not None:
        a, m = refined[1].fit_record()
        arrays.update({f"refined.{k}": v for k, v in a.items()})
        best = {"valid_ppl": refined[0], "record": m}
    meta = {"kind": "lambda path", "identity": identity, "phase": phase, "position": position, "worse": worse,
            "best": best_i, "last": last, "results": results, "fits": records, "refined": best, "where": where}
    return arrays, meta


def _restored_path(path, loaded, restore, n_lams):
    """The path's variables from a checkpoint's ``outer`` state, every entry checked."""
    from .checkpoint import CheckpointError
    from .solvers.state import StateError

    arrays, meta = loaded

    def bad(what):
        return CheckpointError(f"{path}: outer.{what}")

    if meta.get("kind") != "lambda path":
        raise bad(f"kind: {meta.get('kind')!r}, expected 'lambda path'")

    def integer(key, none=False):
        v = meta.get(key)
        if (v is None and none) or (isinstance(v, int) and not isinstance(v, bool) and v >= 0):
            return v
        raise bad(f"{key}: {v!r} is not an integer >= 0")

    phase = meta.get("phase")
    if phase not in ("path", "refine"):
        raise bad(f"phase: {phase!r}")
    position, worse, best_i, last = integer("position"), integer("worse"), integer("best", True), integer("last", True)
    if (best_i is None) != (last is None) or (last is not None and not best_i <= last < n_lams):
        raise bad(f"best, last: {best_i!r}, {last!r} are not fits of a path of {n_lams} lambdas")
    if phase == "path" and not (position < n_lams and position == (0 if last is None else last + 1)):
        raise bad(f"position: {position} is not the fit after the last one ({last!r}) on the path")
    if phase == "refine" and (best_i is None or position > best_i + 1):
        raise bad(f"position: {position} is past the fits to refine")

    def number(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    results = meta.get("results")
    if not (isinstance(results, list) and all(
            isinstance(r, dict) and set(r) <= {"lam", "valid_ppl", "refined"} and number(r.get("lam"))
            and number(r.get("valid_ppl")) and r.get("refined", True) is True for r in results)):
        raise bad("results: not a list of fit results")
    records = meta.get("fits")
    if not isinstance(records, dict):
        raise bad("fits: not an object")

    def model_of(prefix, entry):
        if not (isinstance(entry, dict) and isinstance(entry.get("record"), dict)
                and isinstance(entry.get("valid_ppl"), float)):
            raise bad(f"{prefix}: not a fit record")
        mine = {k[len(prefix) + 1:]: v for k, v in arrays.items() if k.startswith(prefix + ".")}
        try:
            return entry["valid_ppl"], restore(mine, entry["record"])
        except StateError as e:
            raise bad(f"{prefix}.{e}") from None

    fits = {}
    for key in sorted(records, key=lambda k: (k == str(last), k)):  # the last fit restored last: warm start
        if not key.isdigit():
            raise bad(f"fits: key {key!r} is not a path index")
        fits[int(key)] = model_of(f"fit{key}", records[key])
    refined = None if meta.get("refined") is None else model_of("refined", meta["refined"])
    if phase == "refine" and best_i is None:
        raise bad("best: null after the path")
    needed = range(position, best_i + 1) if phase == "refine" else [i for i in (best_i, last) if i is not None]
    if any(i not in fits for i in needed):
        raise bad("fits: a fit the path still needs is missing")
    return phase, position, worse, best_i, last, results, fits, refined
