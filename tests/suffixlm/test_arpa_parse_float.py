"""``_arpa_read_kernels.parse_float`` (the ARPA reader's number parser) against Python's float().

The grammar it reads is ``[+-]? digits [. digits] [(e|E) [+-]? digits]`` with at least
one mantissa digit (no spaces, no ``inf`` / ``nan``, no ``_``); every such text is a
valid float() literal, so the status is NOT_A_NUMBER exactly for the texts outside it.

Exactness: with value = M * 10^E (M the integer of the significant digits as written,
E the exponent minus the number of fraction digits), the kernel says EXACT only where
M <= 2^53 and |E| <= 22 (M and 10^|E| are then exact doubles and one multiplication or
division rounds once: Clinger's fast path), or M = 0, and the value is then bit-exact;
everywhere else it says INEXACT, and the ARPA reader parses that text with float().
"""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from suffixlm.backoff._arpa_read_kernels import EXACT, INEXACT, NOT_A_NUMBER
from suffixlm.backoff._arpa_read_kernels import parse_float as _parse_float

GRAMMAR = re.compile(r"([+-]?)(\d*)(?:\.(\d*))?(?:[eE]([+-]?\d+))?")


def grammar(text):
    """(int digits, fraction digits, exponent) if text is in the documented grammar, else None."""
    m = GRAMMAR.fullmatch(text)
    if m is None or not (m.group(2) or m.group(3)):
        return None
    return m.group(2), m.group(3) or "", int(m.group(4) or 0)


def parse(text):
    """Run the kernel on text placed inside other bytes: it must read buf[s:e] only."""
    body = text.encode("utf-8")
    buf = np.frombuffer(b"7" + body + b"5e5", dtype=np.uint8)
    v, status = _parse_float(buf, 1, 1 + len(body))
    assert status in (EXACT, INEXACT, NOT_A_NUMBER)
    return float(v), int(status)


def same_double(a, b):
    return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)


def check(text):
    v, status = parse(text)
    g = grammar(text)
    assert (status != NOT_A_NUMBER) == (g is not None), text
    if g is None:
        return
    want = float(text)  # the grammar is a subset of Python's float syntax
    int_digits, frac_digits, exp = g
    digits = (int_digits + frac_digits).lstrip("0")
    M = int(digits) if digits else 0
    E = exp - len(frac_digits)
    fast = M == 0 or (abs(E) <= 22 and M <= 2**53)
    assert status == (EXACT if fast else INEXACT), (text, status)
    if fast:
        assert same_double(v, want), (text, v, want)


FORMATS = [repr, str, "%.7g", "%e", "%E", "%.15g", "%.3f", "%+.5g", "%.0f", "%+.10e", "%g", "%.1e"]


def fmt(x, f):
    return f(x) if callable(f) else f % x


_digits = st.text(alphabet="0123456789", max_size=22)
decimal_texts = st.builds(
    lambda sign, i, dot, frac, e, esign, edigits: sign + i + (("." + frac) if dot else "")
    + ((e + esign + edigits) if e else ""),
    st.sampled_from(["", "+", "-"]), _digits, st.booleans(), _digits,
    st.sampled_from(["", "e", "E"]), st.sampled_from(["", "+", "-"]), st.text(alphabet="0123456789", max_size=3),
)
garbage = st.text(alphabet="0123456789+-.eEinfatyINFAx _\t", max_size=12)


@settings(max_examples=700, deadline=None)
@given(st.floats(allow_nan=True, allow_infinity=True) | st.floats(width=32), st.sampled_from(FORMATS))
@example(-99.0, "%.7g")
@example(-0.0, repr)
@example(float("inf"), repr)
@example(float("nan"), "%e")
@example(1e22, "%.0f")
@example(9007199254740992.0, "%.0f")
def test_formatted_floats_read_as_python_does(x, f):
    check(fmt(x, f))


@settings(max_examples=700, deadline=None)
@given(decimal_texts | garbage)
@example("")
@example(".")
@example("-.5")
@example("5.")
@example("+-1")
@example("1e")
@example("1e+")
@example("e5")
@example(" 1")
@example("1_0")
@example("infinity")
@example("1.5e-7")
@example("00000000000000000000000001.5")
@example("0.000000000000000000000000000000012345")
@example("123456789012345678")
@example("1234567890123456789012345")
def test_decimal_texts_and_garbage(text):
    check(text)


@pytest.mark.parametrize("text", ["-99", "-0.30103", "-4.447065", "0", "-0", "+1.5E+02", "1e-22", "9.999999e-14",
                                  "-1.0000001", "0.1", "123456789012345", ".25e1", "0e400"])
def test_typical_arpa_values_are_exact(text):
    v, status = parse(text)
    assert status == EXACT and same_double(v, float(text))


@pytest.mark.parametrize("text", ["-11.746496104293263", "187.06961832885779", "0.42709547929238323",
                                  "64708321257442331e-9", "90071992547409930e-1", "1.7976931348623157e308",
                                  "100000000000000000e-320", "1e-323", "1e23", "1234567e-28", "1234567890123456789012345"])
def test_beyond_the_fast_path_the_kernel_says_so(text):
    # one rounding is not possible here (mantissa above 2^53, or |E| > 22): the
    # caller must not take the value as exact
    _, status = parse(text)
    assert status == INEXACT
