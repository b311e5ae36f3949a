"""The steps of Kneser-Ney estimation that the single-process ``kn.estimate_kneser_ney``
and the Dask ``distributed.kn_estimate.ClusterKN`` share, element by element: cut-offs,
counts-of-counts and discounts, context ranges, the unigram mass, the back-off walk and
SRILM's fix-ups, and the ``%.7g`` quantisation of what an ARPA file holds."""

from __future__ import annotations

import math
import warnings

import numpy as np

from ..corpus import BOS_ID, CorpusError

INT32_MAX = 2**31 - 1

SRILM_DEFAULT_MIN_COUNTS = (1, 1, 2, 2, 2, 2, 2, 2, 2)  # -gt1min .. -gt9min; -gtmin (orders > 9) is 1


class DiscountWarning(UserWarning):
    """A modified-KN discount could not be estimated; a fallback was used."""


def srilm_min_counts(order: int) -> list[int]:
    """SRILM's default cut-offs for orders 1..order (n-grams of order 3..9 seen once are dropped)."""
    return [SRILM_DEFAULT_MIN_COUNTS[n - 1] if n <= 9 else 1 for n in range(1, order + 1)]


def count_of_counts(kn_count: np.ndarray, word: np.ndarray, nonevent: np.ndarray) -> np.ndarray:
    """int64[5]: n_0..n_4, the number of n-grams with (modified) count k, n-grams
    predicting a non-event excluded (n_0 unused)."""
    from . import _kn_kernels as K

    return K.count_of_counts(kn_count, word, nonevent)


def estimate_discounts(n: np.ndarray, modified: bool, order: int) -> tuple[float, float, float]:
    """(D1, D2, D3+) from counts-of-counts ``n`` (index k = count k); SRILM's formulas,
    with a warned fallback where SRILM would fail."""
    n1, n2, n3, n4 = (int(x) for x in n[1:5])
    if modified:
        if n1 > 0 and n2 > 0 and n3 > 0 and n4 > 0:
            y = n1 / (n1 + 2 * n2)
            d1 = 1 - 2 * y * n2 / n1
            d2 = 2 - 3 * y * n3 / n2
            d3 = 3 - 4 * y * n4 / n3
            if d1 >= 0 and d2 >= 0 and d3 >= 0:
                return d1, d2, d3
            why = f"a discount is negative (D1={d1:.4g}, D2={d2:.4g}, D3+={d3:.4g})"
        else:
            why = f"a count-of-counts is zero (n1..n4 = {n1}, {n2}, {n3}, {n4})"
        if n1 > 0 and n2 > 0:
            d = n1 / (n1 + 2 * n2)
            warnings.warn(f"order {order}: modified Kneser-Ney impossible ({why}); "
                          f"using the original-KN discount D = {d:.6g} for all counts", DiscountWarning, stacklevel=3)
            return d, d, d
        warnings.warn(f"order {order}: modified Kneser-Ney impossible ({why}); "
                      "using fallback discounts 0.5, 1, 1.5", DiscountWarning, stacklevel=3)
        return 0.5, 1.0, 1.5
    if n1 > 0 and n2 > 0:
        d = n1 / (n1 + 2 * n2)
        return d, d, d
    warnings.warn(f"order {order}: Kneser-Ney count-of-counts n1={n1}, n2={n2} has a zero; "
                  "using fallback discount 0.5", DiscountWarning, stacklevel=3)
    return 0.5, 0.5, 0.5


def context_ranges(prefix: np.ndarray, n_ctx: int) -> tuple[np.ndarray, np.ndarray]:
    """(start, end) int64[n_ctx]: the n-grams of each context (``prefix`` sorted), two
    views of one array of bounds (``_kn_kernels.context_bounds``); an order above the
    longest sentence has no n-gram and no context: empty arrays."""
    from . import _kn_kernels as K

    bounds = K.context_bounds(prefix, n_ctx)
    return bounds[:-1], bounds[1:]


def _distribute_unigram_mass(lp: np.ndarray, explicit: np.ndarray, nonevent: np.ndarray) -> None:
    """SRILM's ``distributeProb`` for the unigram level: mass left after the explicit
    unigrams goes to the words without a probability (else to all words)."""
    ok = lp[explicit & ~nonevent]
    num = 1.0 - float(np.exp(ok.astype(np.float64)[np.isfinite(ok)] * math.log(10)).sum())
    if -3e-6 < num < 0.0:
        num = 0.0
    if num < 0.0:
        return  # improper model; SRILM keeps the probabilities as they are
    words = ~nonevent
    zero = words & (~explicit | (lp == -np.inf))
    if zero.any():
        add = num / int(zero.sum())
        lp[zero] = np.float32(math.log10(add)) if add > 0 else -np.inf
        explicit[zero] = True
    else:
        add = num / int(words.sum())
        cur = np.exp(lp[words].astype(np.float64) * math.log(10))
        lp[words] = np.log10(cur + add).astype(np.float32)


def estimate_unigrams(kn1: np.ndarray, nonevent: np.ndarray, min_count: int, d, vocab_size: int,
                      interpolate: bool) -> tuple[np.ndarray, np.ndarray, int]:
    """The unigram level: probabilities interpolated with 1/|V| (``estimate_order`` over one
    context holding every word), then the left-over mass spread (``distributeProb``).
    Returns (lp float32[V], explicit bool[V], SRILM retries)."""
    from . import _kn_kernels as K

    V = len(kn1)
    lower = np.full(V, np.float32(-math.log10(vocab_size)), dtype=np.float32)
    lp, explicit, n_retry = K.estimate_order(
        np.zeros(1, dtype=np.int64), np.full(1, V, dtype=np.int64), np.zeros(1, dtype=bool), kn1,
        np.arange(V, dtype=np.int32), lower, nonevent, int(min_count), float(d[0]), float(d[1]), float(d[2]),
        vocab_size, bool(interpolate), True)
    _distribute_unigram_mass(lp, explicit, nonevent)
    return lp, explicit, int(n_retry)


def listed_unigrams(explicit: np.ndarray, nonevent: np.ndarray) -> np.ndarray:
    """Ids of the unigrams an ARPA file lists: the explicit ones that can be predicted, and <s>."""
    idx = np.flatnonzero(explicit)
    return idx[~nonevent[idx] | (idx == BOS_ID)]


def walk_step(found_suffix, acc_suffix, bow_ctx, prefix, lp, explicit):
    """(found, acc) of the n-grams of an order from their suffixes' (found, acc), aligned
    with the n-grams, and their contexts' back-off weights ``bow_ctx[prefix]``
    (``_kn_kernels.walk_order``, which the in-memory estimator calls with its gathers)."""
    from . import _kn_kernels as K

    return K.walk_order(found_suffix, acc_suffix, bow_ctx, None, prefix, lp, explicit)


def fixup_order(lp, explicit, found, acc, fix) -> None:
    """SRILM's ``fixupProbs`` on one order, in place: the n-grams ``fix`` (contexts, or
    prefixes of contexts, without a probability) get their back-off probability."""
    lp[fix] = (found[fix] + acc[fix]).astype(np.float32)
    explicit[fix] = True
    found[fix] = lp[fix]
    acc[fix] = 0


def quantize_g7(x: np.ndarray) -> np.ndarray:
    """float32 values as read back from their ``%.7g`` text (what an ARPA file holds)."""
    from . import _arpa_write_kernels as K

    out, python = K.quantize_g7(np.ascontiguousarray(x, dtype=np.float32))
    for i in np.flatnonzero(python):
        out[i] = np.float32(float("%.7g" % float(x[i])))
    return out


def arpa_entries(rows: np.ndarray, lp: np.ndarray, bow: np.ndarray | None, node: np.ndarray | None,
                 idx: np.ndarray):
    """What an ARPA file lists of the n-grams ``idx`` of an order: (``rows``, their word
    ids; log10 p, back-off weight, has back-off), the values as read back from ``%.7g``
    (SRILM scores its files, too). ``bow`` None: the highest order (no back-off weights);
    ``node``: the context-node flags that say which n-grams list one."""
    if bow is None:
        return rows, quantize_g7(lp[idx]), np.zeros(len(idx), dtype=np.float32), np.zeros(len(idx), dtype=bool)
    return rows, quantize_g7(lp[idx]), quantize_g7(bow[idx]), node[idx]


def check_int32_counts(cnt: np.ndarray, n: int) -> np.ndarray:
    """The counts of n-grams of order n as int32, or ``CorpusError`` if one does not fit."""
    if len(cnt) and int(cnt.max()) > INT32_MAX:
        raise CorpusError(f"a {n}-gram is seen more than {INT32_MAX} times (counts are 32-bit)")
    return cnt.astype(np.int32)
