"""ARPA files: number formatting, hand-written files, round trips, bad files, SRILM's files."""

from __future__ import annotations

import gzip
import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suffixlm.backoff import _arpa_write_kernels as K
from suffixlm.backoff.arpa import ArpaError, BackoffLM, is_arpa_file, read_arpa
from suffixlm.corpus import Corpus
from suffixlm.evaluate import score
from suffixlm.backoff.kn import KneserNeyLM

HAND = """
\\data\\
ngram 1=5
ngram 2=3
ngram 3=1

\\1-grams:
-99\t<s>\t-0.5
-0.5\ta\t-0.3
-0.9\tb\t-0.2
-0.7\t</s>
-2.0\t<unk>

\\2-grams:
-0.2\t<s> a\t-0.1
-0.4\ta b\t-0.05
-0.1\ta </s>

\\3-grams:
-0.01\t<s> a b

\\end\\
"""


def _fmt_c(x: float) -> str:
    return "-99" if x == -math.inf else "%.7g" % x


def _g7(x: float) -> str:
    buf = np.zeros(64, dtype=np.uint8)
    n = K.format_g7(buf, np.int64(0), float(x))
    return None if n < 0 else buf[:n].tobytes().decode()


# _decimal7 leaves a value to Python when the scaled 7-digit mantissa is within this of a
# rounding tie (its test is |(y - rint(y))| - 0.5| < 1e-6 on the double y = a 10^(6-e));
# y carries one rounding (< 1e-9 at 1e7), so only a band of 1e-8 around it is undecided here.
_NEAR_TIE = 1e-6
_BAND = 1e-8


def _g7_expected(x: float):
    """What format_g7's docstring promises for x: ("text", s) — exactly C's %.7g text s
    (-inf as -99) — or ("fallback", None) — -1 for |x| < 1e-15 or >= 1e15, NaN, and a
    near-tie — or ("either", s) inside the band of double rounding around the near-tie
    threshold. The near-tie is measured exactly (fractions) at the scale of the correctly
    rounded 7 digits that Python prints."""
    if x == -math.inf:
        return "text", "-99"
    if x == 0:
        return "text", "0"  # either sign: the writer's contract (C would print -0.0 as "-0")
    if math.isnan(x) or not (1e-15 <= abs(x) < 1e15):
        return "fallback", None
    text = _fmt_c(x)
    e = int(("%.6e" % abs(x)).split("e")[1])
    y = Fraction(abs(x)) * Fraction(10) ** (6 - e)
    dist = abs(y - math.floor(y) - Fraction(1, 2))
    if ("%.6e" % abs(x)).startswith("1.000000"):
        # rounded up across a power of ten: the kernel first meets the value at the
        # scale below, where a near-tie also sends it to Python
        y_below = y * 10
        if abs(y_below - math.floor(y_below) - Fraction(1, 2)) < _NEAR_TIE + _BAND:
            return "either", text
    if dist < _NEAR_TIE - _BAND:
        return "fallback", None
    if dist > _NEAR_TIE + _BAND:
        return "text", text
    return "either", text


def _check_g7(x: float):
    kind, text = _g7_expected(x)
    got = _g7(x)
    if kind == "text":
        assert got == text, (x, got, text)
    elif kind == "fallback":
        assert got is None, (x, got)  # left to Python formatting by the writer
    else:
        assert got in (None, text), (x, got, text)


@settings(max_examples=300, deadline=None)
@given(st.floats(allow_nan=False, allow_infinity=False, width=32).filter(lambda v: abs(v) < 1e14))
def test_format_g7_is_printf(x):
    _check_g7(x)
    if x == 0:
        assert _g7(x) == "0"
    elif abs(x) < 1e-15:
        assert _g7(x) is None  # left to Python formatting by the writer


@settings(max_examples=300, deadline=None)
@given(st.floats(width=64) | st.floats(min_value=-2e15, max_value=2e15)
       | st.floats(min_value=1e-16, max_value=1e-14) | st.floats(min_value=-1e-14, max_value=-1e-16))
def test_format_g7_is_printf_on_doubles(x):
    _check_g7(x)


@pytest.mark.parametrize(
    "x", [1.2890625, -0.5, 1e-5, 123456.75, 9999999.5, -99.0, 0.00012345675, 1e14, -4.447065, 1e-15,
          9.99999e-16, 1e15, -1e15, 999999999999999.9, float("nan"), float("inf"), -math.inf, 0.0,
          0.12345675, 1234567.5, 1234568.5, 1234567.5000001, 1234567.4999999, 9999999.4, 0.1, 5e-5, 1e7, 1e-4,
          123456.7, 1.5e-10, 1234567.5000005, 1234567.4999995, 1234567.500002, 1234567.499998,
          1.2345675000005e-08, 1.234567500002e+14])
def test_format_g7_edge_cases(x):
    _check_g7(x)
    assert _g7(0.00012345675) is None  # a near-tie in double arithmetic: Python decides
    assert _g7(1.2890625) is None and _g7(123456.75) is None  # exact ties of the binary value
    # an exact tie at 7 digits (to even: 10^7); the kernel may leave it to Python, never misprint it
    assert _g7(9999999.5) in (None, "1e+07") and "%.7g" % 9999999.5 == "1e+07"


# doubles just below (10^7 - 1/2) 10^k: printf rounds them down to 9.999999 10^k
_BELOW_TIE_AT_TEN_TO_THE_SEVEN = [9.9999995, 0.99999995, 9.9999995e-07, 9.999999499999999e-12]


def test_values_just_below_a_tie_at_ten_to_the_seven_are_near_ties():
    for x in _BELOW_TIE_AT_TEN_TO_THE_SEVEN:
        assert _g7_expected(x) == ("fallback", None)
        assert ("%.6e" % x).startswith("9.999999e")


@pytest.mark.parametrize("x", _BELOW_TIE_AT_TEN_TO_THE_SEVEN)
def test_format_g7_near_a_tie_below_ten_to_the_seven(x):
    assert _g7(x) in (None, "%.7g" % x)


@settings(max_examples=200, deadline=None)
@given(st.floats(min_value=-1e9, max_value=1e9, allow_nan=False, width=32))
def test_quantize_is_read_back_of_written_text(x):
    from suffixlm.backoff.kn_steps import quantize_g7

    q = quantize_g7(np.array([x], dtype=np.float32))[0]
    if x == 0 or abs(x) < 1e-15:
        return
    assert q == np.float32(float("%.7g" % x))


def _hand_lm():
    return BackoffLM.from_arpa_bytes(HAND.encode(), "hand.arpa")


def test_hand_written_file_back_off_rule():
    lm = _hand_lm()
    assert lm.order == 3 and lm.counts == [5, 3, 1] and lm.vocab.has_unk
    c = Corpus.from_sentences([["a", "b"], ["a", "a"], ["b", "zzz"]], lm.vocab)
    got = lm.log10_probs(c)
    want = [
        -0.2,                 # p(a | <s>): bigram
        -0.01,                # p(b | <s> a): trigram
        -0.05 + -0.2 + -0.7,  # p(</s> | a b): bow(a b) + bow(b) + p(</s>)
        -0.2,                 # p(a | <s>)
        -0.1 + -0.3 + -0.5,   # p(a | <s> a): bow(<s> a) + bow(a) + p(a)
        -0.1,                 # p(</s> | a a): no node "a a"; p(</s> | a)
        -0.5 + -0.9,          # p(b | <s>): bow(<s>) + p(b)
        -0.2 + -2.0,          # p(<unk> | <s> b): zzz is scored as <unk>; bow(b) + p(<unk>)
        -0.7,                 # p(</s> | b <unk>): <unk> has no bow (0)
    ]
    np.testing.assert_allclose(got, want, atol=1e-6)
    probs, hit = lm.query(c)
    assert list(hit[:3]) == [2, 3, 1]


@pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")  # tiny text: fallback discounts
def test_round_trip_identical_scores(tmp_path):
    train = Corpus.from_strings(["a b c a b", "b c d", "a b d d", "c a b c", "d a"] * 3, unk=True)
    test = Corpus.from_strings(["a b c d", "d d a x", "c"], train.vocab)
    lm = KneserNeyLM(3, min_counts=[1]).fit(train)
    for name in ("m.arpa", "m.arpa.gz"):
        lm.write_arpa(tmp_path / name)
        assert is_arpa_file(tmp_path / name)
        back = read_arpa(tmp_path / name)
        assert back.counts == lm.model_.counts
        test2 = Corpus.from_sentences(list(test.sentences_as_words()), back.vocab)
        np.testing.assert_array_equal(back.log10_probs(test2), lm.log10_probs(test))
        assert back.arpa_bytes() == lm.model_.arpa_bytes()  # and it writes the same file again
    assert gzip.open(tmp_path / "m.arpa.gz").read() == (tmp_path / "m.arpa").read_bytes()


@pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")
@pytest.mark.parametrize("min_counts", [None, [1]])
def test_reading_only_what_a_text_needs_keeps_its_scores(tmp_path, min_counts):
    train = Corpus.from_strings(["a b c a b", "b c d", "a b d d", "c a b c", "d a", "b c a b d"] * 3, unk=True)
    sents = [["a", "b", "c", "d"], ["d", "d", "a", "x"], ["c"], ["b", "c", "a", "b", "d", "d"]]
    lm = KneserNeyLM(4, min_counts=min_counts).fit(train)
    lm.write_arpa(tmp_path / "m.arpa")
    full = read_arpa(tmp_path / "m.arpa")
    part = read_arpa(tmp_path / "m.arpa", only_for=sents)
    assert part.restricted and sum(part.counts) < sum(full.counts) and part.counts[0] == full.counts[0]
    c = Corpus.from_sentences(sents, full.vocab)
    np.testing.assert_array_equal(part.log10_probs(c), full.log10_probs(c))
    with pytest.raises(ValueError, match="not writing"):
        part.write_arpa(tmp_path / "x.arpa")


def _expect_error(tmp_path, text, line, what):
    p = tmp_path / "bad.arpa"
    p.write_text(text)
    with pytest.raises(ArpaError) as e:
        read_arpa(p)
    msg = str(e.value)
    assert f"bad.arpa:{line}:" in msg, msg
    assert what in msg, msg
    assert "\n" not in msg


def test_bad_files_give_line_numbers(tmp_path):
    lines = HAND.split("\n")  # line k of the file is lines[k-1]
    n3 = lines.index("-0.01\t<s> a b") + 1
    _expect_error(tmp_path, HAND.replace("-0.4\ta b", "-0.4x\ta b"), lines.index("-0.4\ta b\t-0.05") + 1,
                  "probability is not a number")
    _expect_error(tmp_path, HAND.replace("a b\t-0.05", "a b\tzero"), lines.index("-0.4\ta b\t-0.05") + 1,
                  "back-off weight is not a number")
    _expect_error(tmp_path, HAND.replace("-0.5\ta\t-0.3", "abc\ta\t-0.3"), lines.index("-0.5\ta\t-0.3") + 1,
                  "not a number")
    _expect_error(tmp_path, HAND.replace("<s> a b", "<s> a q"), n3, "word not among the 1-grams")
    _expect_error(tmp_path, HAND.replace("<s> a b", "<s> a"), n3, "fields")
    _expect_error(tmp_path, HAND.replace("ngram 2=3", "ngram 2=4"), lines.index("\\3-grams:") + 1,
                  "header says ngram 2=4 but the section has 3")
    _expect_error(tmp_path, HAND.replace("ngram 2=3", "ngram 2=2"), lines.index("-0.1\ta </s>") + 1,
                  "more 2-grams than the header")
    _expect_error(tmp_path, HAND.replace("ngram 3=1", "ngram 3 = one"), lines.index("ngram 3=1") + 1, "ngram N=count")
    truncated = HAND[:HAND.index("\\3-grams:")]
    _expect_error(tmp_path, truncated, truncated.count("\n") + 1, "truncated")
    no_end = HAND.replace("\\end\\", "")
    _expect_error(tmp_path, no_end, no_end.count("\n") + 1, "without \\end\\")
    p = tmp_path / "bad.arpa"
    p.write_text("hello\n")
    with pytest.raises(ArpaError, match="no \\\\data\\\\"):
        read_arpa(p)
    with pytest.raises(ArpaError, match="cannot read"):
        read_arpa(tmp_path / "missing.arpa")


def test_kenlm_style_file():
    # KenLM writes spaces/tabs like SRILM, a <unk> unigram with a real probability, and
    # 0 back-off weights explicitly; "-0" and exponents must parse
    text = HAND.replace("-0.3\n", "-3e-1\n").replace("-0.2\t<s> a", "-2.0E-1\t<s> a").replace("-0.1\ta </s>", "-0.1 a </s>")
    lm = BackoffLM.from_arpa_bytes(text.encode(), "kenlm.arpa")
    ref = _hand_lm()
    c = Corpus.from_sentences([["a", "b"], ["a"]], ref.vocab)
    np.testing.assert_array_equal(lm.log10_probs(c), ref.log10_probs(c))


# (file, test text) -> (ppl, ppl1) printed by SRILM, ../shared/anchors/README.md
SRILM_FILES = {
    "ptb.kn3.srilm-default": ("ptb.test.txt", 152.9853, 194.5778),
    "ptb.kn5.srilm-default": ("ptb.test.txt", 147.8525, 187.7429),
    "ptb.kn3.srilm-nocut": ("ptb.test.txt", 148.2813, 188.3136),
    **{f"ptb100k.kn{n}.srilm-default": ("ptb.test.20k.txt", *v) for n, v in
       {2: (210.5271, 268.9843), 3: (194.1698, 247.1677), 4: (192.8925, 245.4676), 5: (192.3328, 244.7228)}.items()},
    **{f"ptb100k.kn{n}.srilm-nocut": ("ptb.test.20k.txt", *v) for n, v in
       {2: (210.5271, 268.9843), 3: (191.7179, 243.9046), 4: (189.4165, 240.8435), 5: (188.7199, 239.9173)}.items()},
}


@pytest.mark.parametrize("name", sorted(SRILM_FILES))
def test_srilm_arpa_files_exact_ppl(shared, name):
    test_name, ppl, ppl1 = SRILM_FILES[name]
    path = shared("anchors", "srilm", f"{name}.arpa.gz")
    lm = read_arpa(path)
    test = Corpus.from_text(shared("corpora", "ptb", test_name), lm.vocab)
    r = score(lm, test)
    assert r.oovs == 0 and r.zeroprobs == 0
    assert "%.7g" % r.ppl == "%.7g" % ppl and "%.7g" % r.ppl1 == "%.7g" % ppl1
    # the lean path of `suffixlm ppl`: only the n-grams of the test text
    part = read_arpa(path, only_for=list(test.sentences_as_words()))
    np.testing.assert_array_equal(part.log10_probs(test), lm.log10_probs(test))


def test_our_arpa_equals_srilm_file(shared):
    """Our estimate written as ARPA has the same lines as SRILM's file."""
    from suffixlm.corpus import load_training_corpus

    train = load_training_corpus(shared("corpora", "ptb", "ptb.train.100k.txt"), unk=True)
    ours = KneserNeyLM(4).fit(train).model_.arpa_bytes().decode().splitlines()
    theirs = gzip.open(shared("anchors", "srilm", "ptb100k.kn4.srilm-default.arpa.gz")).read().decode().splitlines()
    assert ours[:8] == theirs[:8]  # header
    assert sorted(ours) == sorted(theirs)


def test_numbers_outside_the_exact_fast_path_are_parsed_by_python(tmp_path):
    """17 significant digits or a large exponent: the kernel hands the text to float()."""
    probs = ["-0.42709547929238323", "-1.1746496104293263", "-2e-30", "-0.5"]
    bows = ["-0.30102999566398120", "-1e-25", "0", "-0.25"]
    text = ("\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n"
            f"{probs[0]}\t<s>\t{bows[0]}\n{probs[1]}\t</s>\n{probs[2]}\ta\t{bows[1]}\n{probs[3]}\tb\t{bows[3]}\n\n"
            "\\2-grams:\n-0.12345678901234567\t<s> a\n-3.0000000000000001e-40\ta b\n\n\\end\\\n")
    p = tmp_path / "m.arpa"
    p.write_text(text, encoding="utf-8")
    lm = BackoffLM.from_arpa_bytes(text.encode(), str(p))
    rows, lp, bow, hb = lm.ngrams[1]
    want = {("<s>", "a"): np.float32(float("-0.12345678901234567")), ("a", "b"): np.float32(float("-3.0000000000000001e-40"))}
    words = lm.vocab.words
    got = {(words[r[0]], words[r[1]]): v for r, v in zip(rows.tolist(), lp)}
    assert got == want


def test_header_counts_the_file_cannot_hold_are_refused_before_allocating():
    import resource

    from suffixlm.backoff.arpa import ArpaError, BackoffLM

    text = ("\n\\data\\\nngram 1=2\nngram 2=100000000000\n\n\\1-grams:\n-1\ta\n-1\t</s>\n\n"
            "\\2-grams:\n-1\ta </s>\n\n\\end\\\n").encode()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(ArpaError, match="ngram 2=100000000000, more than"):
        BackoffLM.from_arpa_bytes(text, name="big.arpa")
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 200_000  # KB: nothing sized by the header
