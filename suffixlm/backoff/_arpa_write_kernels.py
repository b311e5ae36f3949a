"""Numba kernels that write ARPA text: C's ``%.7g`` for log-probabilities and back-off
weights (``format_g7``), whole n-gram lines (``write_ngram_lines``), and the values a
model has after an ARPA round trip (``quantize_g7``)."""

from __future__ import annotations

import math

import numpy as np
from .._jit import njit

#: 10**k for k = 0..22, exact in float64 (the exponents of the exact fast paths)
POW10 = np.array([10.0 ** k for k in range(23)])


@njit(cache=True, nogil=True)
def _put_int(buf, pos, v):
    # non-negative integer < 1000, decimal
    if v >= 100:
        buf[pos] = 48 + v // 100
        pos += 1
    if v >= 10:
        buf[pos] = 48 + (v // 10) % 10
        pos += 1
    buf[pos] = 48 + v % 10
    return pos + 1


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


@njit(cache=True, nogil=True)
def format_g7(buf, pos, x, scratch):
    """Write ``x`` as C's ``%.7g`` at ``buf[pos:]`` (scratch: uint8[8] work space); -inf
    is written as -99 (SRILM's log-zero). Returns the new position, or -1 when the value is outside the range
    handled exactly here (|x| < 1e-15 or >= 1e15, NaN); the caller then falls back to
    Python formatting."""
    if x == 0.0:
        buf[pos] = 48
        return pos + 1
    if x == -np.inf:
        buf[pos] = 45
        buf[pos + 1] = 57
        buf[pos + 2] = 57
        return pos + 3
    if not (abs(x) >= 1e-15 and abs(x) < 1e15):
        return -1
    if x < 0:
        buf[pos] = 45
        pos += 1
        a = -x
    else:
        a = x
    mant, e = _decimal7(a)
    if mant < 0:
        return -1
    v = np.uint64(mant)  # unsigned: the divisions by 10 compile to multiplications
    for i in range(6, -1, -1):  # the 7 digits, as ASCII, into scratch
        q = v // np.uint64(10)
        scratch[i] = np.uint8(48 + (v - q * np.uint64(10)))
        v = q
    last = 6  # index of the last significant digit (trailing zeros dropped)
    while last > 0 and scratch[last] == 48:
        last -= 1
    if -4 <= e < 7:
        if e >= 0:
            for i in range(e + 1):
                buf[pos] = scratch[i]
                pos += 1
            if last > e:
                buf[pos] = 46
                pos += 1
                for i in range(e + 1, last + 1):
                    buf[pos] = scratch[i]
                    pos += 1
        else:
            buf[pos] = 48
            buf[pos + 1] = 46
            pos += 2
            for i in range(-e - 1):
                buf[pos] = 48
                pos += 1
            for i in range(last + 1):
                buf[pos] = scratch[i]
                pos += 1
    else:
        buf[pos] = scratch[0]
        pos += 1
        if last > 0:
            buf[pos] = 46
            pos += 1
            for i in range(1, last + 1):
                buf[pos] = scratch[i]
                pos += 1
        buf[pos] = 101
        pos += 1
        if e < 0:
            buf[pos] = 45
            e = -e
        else:
            buf[pos] = 43
        pos += 1
        if e < 10:
            buf[pos] = 48
            pos += 1
        pos = _put_int(buf, pos, e)
    return pos


@njit(cache=True, nogil=True)
def write_ngram_lines(rows, lp, bow, has_bow, word_bytes, word_offsets, buf):
    """ARPA n-gram lines ``prob<TAB>w1 .. wn[<TAB>bow]\\n`` into ``buf`` (uint8, large
    enough). Returns (bytes written, -1), or (start of line i, i) when line i holds a
    value that needs Python formatting (the caller writes it and resumes)."""
    m, n = rows.shape
    scratch = np.empty(8, dtype=np.uint8)
    pos = np.int64(0)  # not the literal 0: one compiled format_g7, not two
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
                pos = format_g7(buf, pos, np.float64(lp[i] if field == 0 else bow[i]), scratch)
                if pos < 0:
                    return line_start, i
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
