"""Quantised binary models (``suffixlm build-binary --quantize 8``, KenLM's ``-q 8 -b 8``):
the probing table with 8-byte records instead of 16, each n-gram's log10 p and back-off
weight replaced by the code of a centre in a codebook of its length (the layout:
``_records``).

The codebooks are trained as KenLM trains them (Federico and Bertoldi 2006, "How many
bits are needed to store probabilities for phrase-based translation?"): for each n-gram
length from 2 on, the values sorted and cut into bins of equal counts, each bin's centre
the mean of its values (summed in float64), and each value coded as the nearest centre
(the upper one on a tie, as KenLM's ``Bins::Encode``; distances in float64). Values that must stay exact get
codes of their own: a back-off weight of 0 (KenLM also reserves its zero back-offs) and a
log10 p of -inf. Unigrams keep their exact values (KenLM does not quantise them either).

A quantised model answers every query through the same kernels as the exact one; its
numbers are those of the exact table with every value replaced by its centre
(:func:`dequantize_table` makes that table; the tests hold the two to the same bits).
"""

from __future__ import annotations

import numpy as np

from . import _table_numpy as T

#: bits a value's code may have (the record holds 8 for each)
MAX_BITS = 8


def make_bins(values: np.ndarray, n_bins: int) -> np.ndarray:
    """float32[n_bins]: the centres of ``n_bins`` bins of equal counts over ``values``
    (KenLM's ``MakeBins``): bin i holds the sorted values ``n i / n_bins .. n (i + 1) /
    n_bins``, its centre their mean; an empty bin repeats the centre before it (0 when
    there are no values at all)."""
    v = np.sort(np.asarray(values, dtype=np.float32))
    n = v.shape[0]
    out = np.zeros(n_bins, dtype=np.float32)
    if n == 0:
        return out
    csum = np.concatenate([[0.0], np.cumsum(v, dtype=np.float64)])
    edges = (n * np.arange(n_bins + 1, dtype=np.int64)) // n_bins
    prev = v[0]
    for i in range(n_bins):
        a, b = edges[i], edges[i + 1]
        if b > a:
            prev = np.float32((csum[b] - csum[a]) / (b - a))
        out[i] = prev
    return out


def encode(values: np.ndarray, centres: np.ndarray) -> np.ndarray:
    """int64: the code of each value, the index of its nearest centre (``centres``
    ascending; the upper one on a tie, below the first the first, above the last the
    last: KenLM's ``Bins::Encode``, with the distances in float64, where float32 ones
    can pick the farther centre)."""
    values = np.asarray(values, dtype=np.float32)
    above = np.searchsorted(centres, values, side="left")
    k = centres.shape[0]
    code = np.clip(above, 0, k - 1).astype(np.int64)
    mid = (above > 0) & (above < k)
    i = above[mid]
    v = values[mid].astype(np.float64)
    lower_closer = (v - centres[i - 1]) < (centres[i].astype(np.float64) - v)
    code[mid] = i - lower_closer
    return code


def codebook(values: np.ndarray, bits: int, exact: tuple = ()) -> tuple[np.ndarray, np.ndarray]:
    """(float32[2 ** bits] centres, int64 code of every value): the values equal to one
    of ``exact`` (present among them) coded as that value itself, the rest binned
    (``make_bins``) and coded to the nearest centre. Codes are in ascending order of
    their centres' bins, the exact values first."""
    values = np.asarray(values, dtype=np.float32)
    size = 1 << bits
    centres = np.zeros(size, dtype=np.float32)
    codes = np.zeros(values.shape[0], dtype=np.int64)
    rest = np.ones(values.shape[0], dtype=bool)
    k = 0
    for x in exact:
        hit = values == np.float32(x)
        if hit.any() or (x == 0.0):  # 0 always has its code (the weight of a part that does not extend)
            centres[k] = x
            codes[hit] = k
            rest &= ~hit
            k += 1
    if not np.isfinite(values[rest]).all():
        raise ValueError("a value to quantise is NaN or infinite")
    bins = make_bins(values[rest], size - k)
    centres[k:] = bins
    codes[rest] = k + encode(values[rest], bins)
    return centres, codes


def quantize_table(D: np.ndarray, V: int, S: int, order: int, prob_bits: int = 8,
                   backoff_bits: int | None = None) -> np.ndarray:
    """The quantised table (uint64, ``_records``) of the 16-byte table ``D``
    (``table.build_table``): the same keys, flags, slots and directory; codebooks of
    ``2 ** prob_bits`` log10 p and ``2 ** backoff_bits`` back-off weights for every
    n-gram length from 2 on; the unigrams' values exact."""
    if backoff_bits is None:
        backoff_bits = prob_bits
    for name, b in (("prob_bits", prob_bits), ("backoff_bits", backoff_bits)):
        if not 1 <= b <= MAX_BITS:
            raise ValueError(f"{name}={b}: quantised values take 1 to {MAX_BITS} bits")
    if (V + S) * V >= 2 ** T.QKEY_BITS:
        raise ValueError(f"the model is too large for the quantised format ({V} words, {S} slots): its keys need "
                         f"more than {T.QKEY_BITS} bits; write it without --quantize")
    F = D.view(np.float32)
    n_rec = V + S
    words = D[0:2 * n_rec:2]
    P, B = F[2:4 * n_rec:4], F[3:4 * n_rec:4]
    Q = np.zeros(T.quantised_words(V, S, order), dtype=np.uint64)
    Qi = Q.view(np.int64)
    QF = Q.view(np.float32)
    used = words != T.EMPTY
    key = words & T.KEY_MASK
    flags = words & (T.EXTENDS | T.EXPLICIT)
    rec = np.where(used, key | flags, np.int64(T.EMPTY))
    directory = D[2 * n_rec:2 * n_rec + 2 * (order + 1)]
    ub, cb = T.quantised_bases(V, S, order)
    for L in range(2, order + 1):
        first, n = int(directory[2 * L]), int(directory[2 * L + 1])
        lo, hi = V + first, V + first + n
        here = np.flatnonzero(used[lo:hi]) + lo
        pc, pcode = codebook(P[here], prob_bits, exact=(-np.inf,))
        bc, bcode = codebook(B[here], backoff_bits, exact=(0.0,))
        rec[here] |= (pcode << T.QPROB_SHIFT) | (bcode << T.QBOW_SHIFT)
        QF[2 * (cb + L * T.QCODES):2 * (cb + L * T.QCODES) + 2 * pc.shape[0]:2] = pc
        QF[2 * (cb + L * T.QCODES) + 1:2 * (cb + L * T.QCODES) + 2 * bc.shape[0]:2] = bc
    Qi[:n_rec] = rec
    Qi[n_rec:n_rec + 2 * (order + 1)] = directory
    QF[2 * ub:2 * (ub + V):2] = P[:V]
    QF[2 * ub + 1:2 * (ub + V):2] = B[:V]
    return Q


def dequantize_table(Q: np.ndarray, V: int, S: int, order: int) -> np.ndarray:
    """The 16-byte table (int64, ``_binary_kernels``) whose every record holds the centres
    the quantised table ``Q`` codes: the same keys, flags, slots and directory, so the
    exact kernels on it give the quantised model's numbers."""
    n_rec = V + S
    rd = T.Records(Q, V, S, order)
    D = np.full(2 * (n_rec + order + 1), -1, dtype=np.int64)
    F = D.view(np.float32)
    words = rd.words(np.arange(n_rec))
    used = words != T.EMPTY
    D[0:2 * n_rec:2] = np.where(used, (words & T.QKEY_MASK) | (words & (T.EXTENDS | T.EXPLICIT)), np.int64(T.EMPTY))
    D[2 * n_rec:] = Q.view(np.int64)[n_rec:n_rec + 2 * (order + 1)]
    for L in range(1, order + 1):  # the unigrams, then the region of each length
        if L == 1:
            here = np.arange(V)
        else:
            first, n = int(D[2 * n_rec + 2 * L]), int(D[2 * n_rec + 2 * L + 1])
            here = np.flatnonzero(used[V + first:V + first + n]) + V + first
        F[4 * here + 2] = rd.prob(here, L)
        F[4 * here + 3] = rd.bow(here, L)
    return D
