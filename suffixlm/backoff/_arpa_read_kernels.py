"""Numba kernels that read ARPA text: the word table (FNV-1a hashing of the 1-gram
words), decimal numbers (``parse_float``; ``is_minus_infinity`` for printf's ``-inf``,
read as a probability of zero as SRILM and KenLM read it) and whole ``\\n-grams:``
sections."""

from __future__ import annotations

import numpy as np

from .._jit import njit
from ._arpa_write_kernels import POW10
from .._tree_kernels import grow
from .._text_kernels import same_bytes, word_hash

# error codes of parse_ngram_section
ERR_NONE = 0
ERR_FIELDS = 1      # wrong number of fields on the line
ERR_PROB = 2        # probability is not a number
ERR_BOW = 3         # back-off weight is not a number
ERR_WORD = 4        # word not among the unigrams
ERR_TOO_MANY = 5    # more entries than the header announced

@njit(cache=True)
def build_word_table(word_bytes, word_offsets):
    """Open-addressing hash table word bytes -> id. Returns table int64[size] holding
    id + 1 (0 = empty); size is a power of two >= 2 V."""
    v = word_offsets.shape[0] - 1
    size = 1
    while size < 2 * v + 2:
        size *= 2
    table = np.zeros(size, dtype=np.int64)
    mask = np.uint64(size - 1)
    for w in range(v):
        h = word_hash(word_bytes, word_offsets[w], word_offsets[w + 1]) & mask
        while table[h] != 0:
            h = (h + np.uint64(1)) & mask
        table[h] = w + 1
    return table


@njit(cache=True)
def _lookup_word(buf, s, e, table, word_bytes, word_offsets):
    mask = np.uint64(table.shape[0] - 1)
    h = word_hash(buf, s, e) & mask
    while table[h] != 0:
        w = table[h] - 1
        a = word_offsets[w]
        b = word_offsets[w + 1]
        if b - a == e - s and same_bytes(word_bytes, a, buf, s, e - s):
            return w
        h = (h + np.uint64(1)) & mask
    return -1


_INFINITY = np.frombuffer(b"infinity", dtype=np.uint8)


@njit(cache=True)
def is_minus_infinity(buf, s, e):
    """Whether buf[s:e] is ``-inf`` or ``-infinity`` in any letter case (how printf
    writes log10 0; SRILM and KenLM read it as a probability of zero)."""
    n = e - s
    if (n != 4 and n != 9) or buf[s] != 45:
        return False
    for i in range(n - 1):
        c = np.int64(buf[s + 1 + i])
        if 65 <= c <= 90:
            c += 32
        if c != _INFINITY[i]:
            return False
    return True


#: parse_float's status: not a number / exact / a number to parse in Python (``float()``)
NOT_A_NUMBER = 0
EXACT = 1
INEXACT = 2

_TWO53 = np.int64(1) << np.int64(53)


@njit(cache=True)
def parse_float(buf, s, e):
    """Decimal number in buf[s:e] -> (value, status).

    status EXACT: value is the correctly rounded double, computed with one rounding (the
    significant digits fit in 2**53 and the decimal exponent is within +-22: strtod's
    fast path, which covers every number SRILM and KenLM write). status INEXACT: a valid
    number outside that path (more significant digits, or a larger exponent); value is
    then only close, and the caller must parse the text with Python's ``float()``.
    status NOT_A_NUMBER: not ``[+-]digits[.digits][(e|E)[+-]digits]``.
    """
    i = s
    neg = False
    if i < e and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    mant = np.int64(0)
    nd = 0
    exp10 = 0
    seen = False
    dropped = False  # a non-zero digit beyond the 18 kept
    while i < e and 48 <= buf[i] <= 57:
        seen = True
        if nd < 18:
            mant = mant * 10 + (buf[i] - 48)
            if mant > 0:
                nd += 1
        else:
            exp10 += 1
            dropped = dropped or buf[i] != 48
        i += 1
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            seen = True
            if nd < 18:
                mant = mant * 10 + (buf[i] - 48)
                exp10 -= 1
                if mant > 0:
                    nd += 1
            else:
                dropped = dropped or buf[i] != 48
            i += 1
    if not seen:
        return 0.0, NOT_A_NUMBER
    if i < e and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        ev = 0
        eseen = False
        while i < e and 48 <= buf[i] <= 57:
            eseen = True
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            i += 1
        if not eseen:
            return 0.0, NOT_A_NUMBER
        exp10 += -ev if eneg else ev
    if i != e:
        return 0.0, NOT_A_NUMBER
    v = np.float64(mant)
    status = EXACT
    if mant == 0:
        pass  # zero digits are never dropped: 0 is exact whatever the exponent
    elif dropped or mant > _TWO53 or exp10 > 22 or exp10 < -22:
        status = INEXACT
        v = v * 10.0 ** max(min(exp10, 308), -308)
    elif exp10 > 0:
        v = v * POW10[exp10]
    elif exp10 < 0:
        v = v / POW10[-exp10]
    return (-v if neg else v), status


@njit(cache=True)
def parse_ngram_section(buf, start, end, n, expected, table, word_bytes, word_offsets):
    """Parse the lines of one ``\\n-grams:`` section, buf[start:end].

    Each non-blank line is ``prob w1 .. wn [bow]`` (tabs or spaces). Returns rows
    int32[count, n], lp float32[count], bow float32[count], has_bow bool[count],
    count, error code (ERR_*), and the 0-based line index of the error within the
    section. -99 (SRILM's log-zero) is kept as the number -99; a probability written
    ``-inf`` (``is_minus_infinity``) is -inf. The caller checks the values' ranges.

    Also returns the numbers :func:`parse_float` cannot round exactly (rare: no tool
    writes them), for the caller to parse in Python: ``slow_key`` int64[n_slow]
    (2 * entry + 0 for the probability, + 1 for the back-off weight) and the tokens'
    ``slow_start`` / ``slow_end`` int64[n_slow].
    """
    rows = np.zeros((expected, n), dtype=np.int32)
    lp = np.zeros(expected, dtype=np.float32)
    bow = np.zeros(expected, dtype=np.float32)
    has_bow = np.zeros(expected, dtype=np.bool_)
    tok_s = np.empty(n + 3, dtype=np.int64)
    tok_e = np.empty(n + 3, dtype=np.int64)
    slow_key = np.empty(8, dtype=np.int64)
    slow_start = np.empty(8, dtype=np.int64)
    slow_end = np.empty(8, dtype=np.int64)
    n_slow = 0
    count = 0
    line = 0
    err = ERR_NONE
    pos = start
    while pos < end:
        le = pos
        while le < end and buf[le] != 10:
            le += 1
        # tokenise on spaces, tabs and \r
        nt = 0
        i = pos
        while i < le and nt < n + 3:
            while i < le and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13 or buf[i] == 11 or buf[i] == 12):
                i += 1
            if i >= le:
                break
            tok_s[nt] = i
            while i < le and not (buf[i] == 32 or buf[i] == 9 or buf[i] == 13 or buf[i] == 11 or buf[i] == 12):
                i += 1
            tok_e[nt] = i
            nt += 1
        if nt > 0:
            if count >= expected:
                err = ERR_TOO_MANY
                break
            if nt != n + 1 and nt != n + 2:
                err = ERR_FIELDS
                break
            for f in range(2 if nt == n + 2 else 1):
                k = 0 if f == 0 else n + 1
                v, status = parse_float(buf, tok_s[k], tok_e[k])
                if status == NOT_A_NUMBER and f == 0 and is_minus_infinity(buf, tok_s[k], tok_e[k]):
                    v, status = -np.inf, EXACT
                if status == NOT_A_NUMBER:
                    err = ERR_PROB if f == 0 else ERR_BOW
                    break
                if status == INEXACT:
                    slow_key = grow(slow_key, n_slow + 1)
                    slow_start = grow(slow_start, n_slow + 1)
                    slow_end = grow(slow_end, n_slow + 1)
                    slow_key[n_slow] = 2 * count + f
                    slow_start[n_slow] = tok_s[k]
                    slow_end[n_slow] = tok_e[k]
                    n_slow += 1
                if f == 0:
                    lp[count] = np.float32(v)
                else:
                    bow[count] = np.float32(v)
                    has_bow[count] = True
            if err != ERR_NONE:
                break
            for j in range(n):
                w = _lookup_word(buf, tok_s[j + 1], tok_e[j + 1], table, word_bytes, word_offsets)
                if w < 0:
                    err = ERR_WORD
                    break
                rows[count, j] = w
            if err != ERR_NONE:
                break
            count += 1
        line += 1
        pos = le + 1
    return rows, lp, bow, has_bow, count, err, line, slow_key[:n_slow], slow_start[:n_slow], slow_end[:n_slow]
