"""Numba kernels that write ARPA text: C's ``%.7g`` for log-probabilities and back-off
weights (``g7_text``, ``format_g7``), whole n-gram lines (``write_ngram_lines``), and the values a
model has after an ARPA round trip (``quantize_g7``)."""

from __future__ import annotations

import math

import numpy as np

from .._jit import njit

#: 10**k for k = 0..22, exact in float64 (the exponents of the exact fast paths)
POW10 = np.array([10.0 ** k for k in range(23)])


@njit(cache=True, nogil=True)
def _decimal7(a):
    """a > 0 -> (m, e) with a ~= m * 10^(e-6), 1e6 <= m < 1e7, m rounded to nearest
    (ties to even, as printf on the exact binary value). m = -1 when the scaled value is
    so close to a rounding tie that double arithmetic cannot decide (left to Python)."""
    # the decimal exponent from the binary one (off by at most one: the loop corrects it),
    # cheaper than log10
    e = int(math.floor((math.frexp(a)[1] - 1) * 0.30102999566398120))
    mant = 0.0
    for _ in range(4):  # a re-scale for the estimate, one for rounding up to 10^7, then the digits
        k = 6 - e
        y = a * POW10[k] if k >= 0 else a / POW10[-k]
        if y >= 1e7:  # the exponent was one too low: re-scale before any rounding decision
            e += 1
            continue
        mant = np.rint(y)
        if abs(abs(y - mant) - 0.5) < 1e-6:
            # a near-tie, checked before re-scaling: 9999999.4999... rounds up to 1e7
            # in double arithmetic, where printf writes 9.999999
            return -1.0, e
        if mant >= 1e7:
            e += 1
        elif mant < 1e6:
            e -= 1
        else:
            break
    return mant, e


@njit(cache=True, nogil=True, inline="always")
def _byte(word, i):
    """Byte ``i`` (0: the least significant) of the uint64 ``word``."""
    return (word >> np.uint64(8 * i)) & np.uint64(255)


@njit(cache=True, nogil=True, inline="always")
def _text_byte(lo, hi, k):
    """Byte ``k`` of a text packed in (lo, hi) (``g7_text``)."""
    return _byte(lo, k) if k < 8 else _byte(hi, k - 8)


@njit(cache=True, nogil=True, inline="always")
def _put(lo, hi, k, c):
    """Byte ``k`` (< 16) of a text packed in (lo, hi) set to ``c``: (lo, hi, k + 1)."""
    if k < 8:
        lo |= np.uint64(c) << np.uint64(8 * k)
    else:
        hi |= np.uint64(c) << np.uint64(8 * (k - 8))
    return lo, hi, k + 1


@njit(cache=True, nogil=True, inline="always")
def g7_text(x):
    """C's ``%.7g`` of ``x`` as (lo, hi, n): its n <= 13 ASCII bytes packed in two uint64,
    byte k of the text in byte k % 8 (least significant first) of lo (k < 8) or hi; -inf
    is written as -99 (SRILM's log-zero); n = -1 when the value is outside the range handled
    exactly here (|x| < 1e-15 or >= 1e15, NaN, a near-tie of ``_decimal7``), which the
    caller formats in Python. Scalars in and out: a kernel that writes many values calls
    it without handing an array to a callee (numba counts the references of an array
    passed to a function, inlined or not, with atomic operations: a third of
    ``write_ngram_lines``' samples under perf when it called ``format_g7`` per value)."""
    lo = np.uint64(0)
    hi = np.uint64(0)
    if x == 0.0:
        return np.uint64(48), hi, 1
    if x == -np.inf:
        return np.uint64(45 | (57 << 8) | (57 << 16)), hi, 3
    if not (abs(x) >= 1e-15 and abs(x) < 1e15):
        return lo, hi, -1
    k = 0
    a = x
    if x < 0:
        lo, hi, k = _put(lo, hi, k, 45)
        a = -x
    mant, e = _decimal7(a)
    if mant < 0:
        return lo, hi, -1
    v = np.uint64(mant)  # unsigned: the divisions by 10 compile to multiplications
    digits = np.uint64(0)  # the 7 digits, as ASCII, digit i in byte i
    for i in range(6, -1, -1):
        q = v // np.uint64(10)
        digits |= (np.uint64(48) + (v - q * np.uint64(10))) << np.uint64(8 * i)
        v = q
    last = 6  # index of the last significant digit (trailing zeros dropped)
    while last > 0 and _byte(digits, last) == 48:
        last -= 1
    if -4 <= e < 7:
        if e >= 0:
            for i in range(e + 1):
                lo, hi, k = _put(lo, hi, k, _byte(digits, i))
            if last > e:
                lo, hi, k = _put(lo, hi, k, 46)
                for i in range(e + 1, last + 1):
                    lo, hi, k = _put(lo, hi, k, _byte(digits, i))
        else:
            lo, hi, k = _put(lo, hi, k, 48)
            lo, hi, k = _put(lo, hi, k, 46)
            for i in range(-e - 1):
                lo, hi, k = _put(lo, hi, k, 48)
            for i in range(last + 1):
                lo, hi, k = _put(lo, hi, k, _byte(digits, i))
    else:
        lo, hi, k = _put(lo, hi, k, _byte(digits, 0))
        if last > 0:
            lo, hi, k = _put(lo, hi, k, 46)
            for i in range(1, last + 1):
                lo, hi, k = _put(lo, hi, k, _byte(digits, i))
        lo, hi, k = _put(lo, hi, k, 101)
        if e < 0:
            lo, hi, k = _put(lo, hi, k, 45)
            e = -e
        else:
            lo, hi, k = _put(lo, hi, k, 43)
        if e >= 100:
            lo, hi, k = _put(lo, hi, k, 48 + e // 100)
        lo, hi, k = _put(lo, hi, k, 48 + (e // 10) % 10)  # two digits at least, as C writes them
        lo, hi, k = _put(lo, hi, k, 48 + e % 10)
    return lo, hi, k


@njit(cache=True, nogil=True)
def format_g7(buf, pos, x):
    """Write ``x`` as C's ``%.7g`` at ``buf[pos:]`` (``g7_text``; -inf as -99). Returns the
    new position, or -1 when the value is outside the range handled exactly here (the
    caller then formats it in Python)."""
    lo, hi, n = g7_text(x)
    if n < 0:
        return -1
    for k in range(n):
        buf[pos + k] = _text_byte(lo, hi, k)
    return pos + n


@njit(cache=True, nogil=True)
def write_ngram_lines(rows, lp, bow, has_bow, word_bytes, word_offsets, buf):
    """ARPA n-gram lines ``prob<TAB>w1 .. wn[<TAB>bow]\\n`` into ``buf`` (uint8, large
    enough). Returns (bytes written, -1), or (start of line i, i) when line i holds a
    value that needs Python formatting (the caller writes it and resumes)."""
    m, n = rows.shape
    pos = np.int64(0)
    for i in range(m):
        line_start = pos
        # fields: the probability, the words, then the back-off weight when there is one
        for field in range(3 if has_bow[i] else 2):
            if field == 1:
                for j in range(n):
                    w = rows[i, j]
                    for t in range(word_offsets[w], word_offsets[w + 1]):
                        buf[pos] = word_bytes[t]
                        pos += 1
                    buf[pos] = 32  # the last one becomes the field's end below
                    pos += 1
                pos -= 1
            else:
                lo, hi, k = g7_text(np.float64(lp[i] if field == 0 else bow[i]))
                if k < 0:
                    return line_start, i
                for b in range(k):  # written here: format_g7 would take buf (see g7_text)
                    buf[pos + b] = _text_byte(lo, hi, b)
                pos += k
            buf[pos] = 9  # the last one becomes the line's end below
            pos += 1
        buf[pos - 1] = 10
    return pos, -1


@njit(cache=True, nogil=True)
def quantize_g7(x):
    """float32[n] -> (float32[n], bool[n]): each value replaced by what reading back its
    ``%.7g`` text gives (same digits as ``format_g7``, same arithmetic as
    ``parse_float``), so a model scores identically before and after an ARPA round
    trip. The mask marks near-tie values left unchanged for the caller to do in Python;
    -inf and values outside format_g7's exact range are kept as they are."""
    out = x.copy()
    python = np.zeros(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        a = abs(v)
        if v == 0.0 or not (a >= 1e-15 and a < 1e15):
            continue
        mant, e = _decimal7(a)
        if mant < 0:
            python[i] = True
            continue
        k = 6 - e
        q = mant / POW10[k] if k >= 0 else mant * POW10[-k]
        out[i] = np.float32(-q if v < 0 else q)
    return out, python
