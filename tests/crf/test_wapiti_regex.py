"""Wapiti's regular expressions (crf._wapiti_regex) and the pattern commands that use them.

The reference is a plain-Python transcription of the control flow of Wapiti's
backtracking matcher (src/pattern.c: rex_match / rex_matchme / rex_matchit), which
returns the end of the path it finds instead of Wapiti's running length counter.
"""

import ctypes
import ctypes.util
import string
import unicodedata
import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crf import CRF
from crf._wapiti_regex import RegexError, compile_regex
from crf.features import FeatureSpace
from crf.patterns import PatternError, PatternWarning, expand_patterns, parse_patterns

# --------------------------------------------------------------------------- reference

# C's <ctype.h> in the "C" locale, from the C standard's definitions
C_ALPHA = string.ascii_letters
C_DIGIT = "0123456789"
C_LOWER = string.ascii_lowercase
C_UPPER = string.ascii_uppercase
C_SPACE = " \t\n\v\f\r"
C_PUNCT = "".join(chr(i) for i in range(0x21, 0x7F) if chr(i) not in C_ALPHA + C_DIGIT)


def ref_class(letter, c):
    """The documented classes: C on ASCII, Python's str methods / Unicode categories beyond."""
    ascii_ = ord(c) < 128
    tests = {
        "a": (lambda: c in C_ALPHA) if ascii_ else c.isalpha,
        "d": (lambda: c in C_DIGIT) if ascii_ else c.isdecimal,
        "l": (lambda: c in C_LOWER) if ascii_ else c.islower,
        "u": (lambda: c in C_UPPER) if ascii_ else c.isupper,
        "s": (lambda: c in C_SPACE) if ascii_ else c.isspace,
        "p": (lambda: c in C_PUNCT) if ascii_ else (lambda: unicodedata.category(c)[0] in "PS"),
    }
    tests["w"] = lambda: tests["a"]() or tests["d"]()
    if letter.islower():
        return tests[letter]()
    return not tests[letter.lower()]()


def reference_search(regex, s):
    """Wapiti's rex_match, with the match's end returned instead of a length counter."""
    n = len(regex)

    def matchit(r, k):
        if k >= len(s):
            return False
        if regex[r] == ".":
            return True
        if regex[r] == "\\":
            e = regex[r + 1]
            if e in "adlpsuwADLPSUW":
                return ref_class(e, s[k])
            return e == s[k]
        return regex[r] == s[k]

    def matchme(r, k):
        if r == n:
            return k
        if regex[r] == "$" and r + 1 == n:
            return k if k == len(s) else None
        nxt = r + 1 + (regex[r] == "\\")
        assert regex[r] not in "*?", "Wapiti: fatal('unescaped * or ?')"
        if nxt < n and regex[nxt] == "*":
            while True:  # fewest repetitions first
                end = matchme(nxt + 1, k)
                if end is not None:
                    return end
                if not matchit(r, k):
                    return None
                k += 1
        if nxt < n and regex[nxt] == "?":  # the atom first
            if matchit(r, k):
                end = matchme(nxt + 1, k + 1)
                if end is not None:
                    return end
            return matchme(nxt + 1, k)
        if matchit(r, k):
            return matchme(nxt, k + 1)
        return None

    if regex.startswith("^"):
        end = matchme(1, 0)
        return None if end is None else (0, end)
    for pos in range(len(s) + 1):
        end = matchme(0, pos)
        if end is not None:
            return pos, end
    return None


def wapiti_rejects(regex):
    """Walk the atoms as rex_matchme advances its pointer: is a '*'/'?' ever an atom, or a '\\' last?"""
    r = 1 if regex.startswith("^") else 0
    while r < len(regex):
        if regex[r] == "$" and r + 1 == len(regex):
            return False
        if regex[r] in "*?" or regex[r:] == "\\":
            return True
        r += 1 + (regex[r] == "\\")
        if r < len(regex) and regex[r] in "*?":
            r += 1
    return False


def search(regex, s):
    """The match, after checking that both matchers (Python's re on Latin-1 text, the Pike VM) agree."""
    rx = compile_regex(regex)
    found = rx.search(s)
    assert rx._search_nfa(s) == found
    return found


# --------------------------------------------------------------------------- classes


@pytest.mark.parametrize("letter", list("adlpsuw"))
def test_classes_on_ascii_are_c_ctype(letter):
    for i in range(128):
        c = chr(i)
        assert compile_regex("\\" + letter).test(c) == ref_class(letter, c), (letter, c)
        assert compile_regex("\\" + letter.upper()).test(c) != ref_class(letter, c), (letter.upper(), c)


def test_classes_on_ascii_agree_with_libc():
    name = ctypes.util.find_library("c")
    if name is None:
        pytest.skip("no C library found")
    libc = ctypes.CDLL(name)
    for letter, fn in zip("adlpsuw", ("isalpha", "isdigit", "islower", "ispunct", "isspace", "isupper", "isalnum")):
        f = getattr(libc, fn)
        for i in range(128):
            assert compile_regex("\\" + letter).test(chr(i)) == bool(f(i)), (letter, i)


@pytest.mark.parametrize("c, members", [
    ("é", "a l w"), ("É", "a u w"), ("ß", "a l w"), ("ж", "a l w"), ("٣", "d w"), ("²", ""),
    ("\u00a0", "s"), ("\u2003", "s"), ("«", "p"), ("€", "p"), ("—", "p"), ("_", "p"), ("\x1c", ""),
    ("\t", "s"), ("\x7f", ""),
])
def test_classes_beyond_ascii_and_edge_characters(c, members):
    members = members.split()
    for letter in "adlpsuw":
        assert compile_regex("\\" + letter).test(c) == (letter in members), (letter, c)
        assert compile_regex("\\" + letter.upper()).test(c) == (letter not in members), (letter.upper(), c)


def test_word_class_is_letters_and_digits_only():
    # unlike Python's \w: no underscore
    assert compile_regex("\\w").search("_a") == (1, 2)
    assert compile_regex("^\\w\\w*$").test("ab12")
    assert not compile_regex("^\\w\\w*$").test("ab_12")


# --------------------------------------------------------------------------- syntax


@pytest.mark.parametrize("regex, text, expected", [
    # anchors
    ("^a", "ba", None), ("^a", "ab", (0, 1)), ("a$", "ab", None), ("a$", "ba", (1, 2)),
    ("^$", "", (0, 0)), ("^$", "a", None), ("$", "abc", (3, 3)), ("", "abc", (0, 0)), ("^", "abc", (0, 0)),
    ("a^b", "xa^b", (1, 4)), ("a$b", "a$b", (0, 3)), ("$$", "x$", (1, 2)), ("$*", "ab", (0, 0)),
    ("a$*", "a$$", (0, 1)),
    # . * ?
    (".", "", None), (".", "xy", (0, 1)), ("a.c", "abc", (0, 3)), ("ab*c", "ac", (0, 2)), ("ab*c", "abbbc", (0, 5)),
    ("ab?c", "abbc", None), ("ab?c", "abc", (0, 3)), ("ab?c", "ac", (0, 2)),
    # escapes: a backslash before a non-class character makes it literal
    ("\\.", "a.b", (1, 2)), ("\\.", "ab", None), ("\\\\", "a\\b", (1, 2)), ("\\t", "\tt", (1, 2)),
    ("\\n", "n", (0, 1)), ("\\*", "a*", (1, 2)), ("\\?", "?", (0, 1)), ("\\$", "$a", (0, 1)),
    ("\\^a", "x^a", (1, 3)), ("a\\$", "a$", (0, 2)), ('\\"', 'a"', (1, 2)),
    # characters that are operators for Python's re are literal
    ("[a]", "a[a]", (1, 4)), ("a+", "aa+", (1, 3)), ("(a|b)", "(a|b)", (0, 5)), ("a{2}", "aa", None),
])
def test_syntax(regex, text, expected):
    assert search(regex, text) == expected
    assert search(regex, text) == reference_search(regex, text)


@pytest.mark.parametrize("regex, text, expected", [
    # '*' takes the fewest repetitions that let the rest match (Wapiti tries 0, 1, 2, ...)
    ("\\d*", "123", (0, 0)), ("\\d\\d*", "a123b", (1, 2)), ("\\d\\d*$", "a12b345", (4, 7)),
    (".*b", "aabab", (0, 3)), ("a*", "aaa", (0, 0)), ("a*b", "caab", (1, 4)), ("x*", "", (0, 0)),
    # '?' takes the atom when the rest can match after it
    ("\\d?\\d", "12", (0, 2)), ("a?a", "aa", (0, 2)), ("a?b?", "ab", (0, 2)), ("^.?.?.?.?", "ab", (0, 2)),
    ("^.?.?.?.?", "abcdef", (0, 4)), ("a.?", "xaaa", (1, 3)),
    # the leftmost start wins over a longer match further right
    ("a\\d?", "ab a1", (0, 1)), ("b*c", "bbxbbbc", (3, 7)),
    # suffixes
    ("....$", "abcdef", (2, 6)), ("....$", "abc", None),
    # Wapiti's length counter is off here (it would copy 3 bytes); the match is "ab"
    ("a?ab", "ab", (0, 2)),
])
def test_which_match_is_found(regex, text, expected):
    assert search(regex, text) == expected
    assert search(regex, text) == reference_search(regex, text)


def test_test_and_first_match():
    rx = compile_regex("\\u\\l*$")
    assert rx.test("McDonald") and rx.test("ABC") and not rx.test("Ab1")
    assert rx.first_match("McDonald") == "Donald"
    assert rx.first_match("abc") == ""
    assert compile_regex("\\d*").first_match("123") == ""


@pytest.mark.parametrize("bad, why", [
    ("*", "follows nothing"), ("*a", "follows nothing"), ("?", "follows nothing"), ("a**", "another '\\*'"),
    ("a?*", "another '\\?'"), ("a*?", "another '\\*'"), ("^*", "start anchor"), ("^?a", "start anchor"),
    ("a\\", "lone backslash"), ("\\", "lone backslash"), ("ab??", "another"),
])
def test_malformed_regexes(bad, why):
    assert wapiti_rejects(bad)
    with pytest.raises(RegexError, match=why):
        compile_regex(bad)


@pytest.mark.parametrize("bad", ['u:%t[0,0,"*a"]', 'u:%m[0,0,"a**"]', 'u:%M[0,0,"^?"]', 'u:%t[0,0,"x\\\\\\"]'])
def test_malformed_regexes_in_pattern_files(bad):
    with pytest.raises(PatternError, match="pats:2: (bad regular expression|malformed command)"):
        parse_patterns("u:%x[0,0]\n" + bad, "pats")


# --------------------------------------------------------------------------- reference


ATOMS = ["a", "b", "1", "A", ".", "\\d", "\\a", "\\u", "\\l", "\\w", "\\p", "\\s", "\\D", "\\A", "\\U", "\\W",
         "\\.", "\\\\", "\\*", "^", "$", "é"]


@st.composite
def regexes(draw):
    atoms = draw(st.lists(st.tuples(st.sampled_from(ATOMS), st.sampled_from(["", "", "*", "?"])), max_size=6))
    body = "".join(a + q for a, q in atoms)
    return draw(st.sampled_from(["", "^"])) + body + draw(st.sampled_from(["", "", "$"]))


texts = st.text(alphabet="ab1A .*\\$^é-É_ж", max_size=10)


@settings(max_examples=400, deadline=None)
@given(regexes(), texts)
def test_matches_the_backtracking_reference(regex, text):
    if wapiti_rejects(regex):  # a '^' atom drawn first with a quantifier: "^*"
        with pytest.raises(RegexError):
            compile_regex(regex)
        return
    assert search(regex, text) == reference_search(regex, text)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="ab.*?\\^$d", max_size=8), texts)
def test_random_strings_compile_exactly_when_wapiti_accepts_them(regex, text):
    if wapiti_rejects(regex):
        with pytest.raises(RegexError):
            compile_regex(regex)
    else:
        assert search(regex, text) == reference_search(regex, text)


# --------------------------------------------------------------------------- linear time


def test_pathological_patterns_on_long_tokens():
    # a backtracking matcher takes ~n^k steps on these; the NFA simulation n * k
    n = 10_000
    stars = "a*" * 20
    assert search(stars + "b", "a" * n) is None
    assert search(stars + "b", "a" * n + "b") == (0, n + 1)
    assert search("a?" * 25 + "a" * 25, "a" * 25) == (0, 25)
    assert search(".*.*.*.*.*x", "y" * n) is None
    assert compile_regex("^.*a")._backtracking is not None  # one '*' after '^': Python's re, still linear
    assert compile_regex(".*a")._backtracking is None
    assert search("^.*a", "b" * n + "a") == (0, n + 1)
    assert search("(a*)*b", "a" * 36) is None  # '(' and ')' are literal characters
    assert search("(a*)*b", "x(aaa)))b") == (1, 9)
    assert search(".*a", "b" * n) is None
    assert search("^" + "\\w*" * 10 + "$", "ab1" * (n // 3) + "!") is None
    assert search("\\D*\\d\\d*$", "a" * n + "42") == (0, n + 2)
    assert search("\\d\\d*$", "1a" * n + "42") == (2 * n, 2 * n + 2)


# --------------------------------------------------------------------------- pattern files

SEQ = [["Paris", "NNP", "1"], ["a12b", "NN", "-1"], ["3", "CD", "x"], ["Jean-Luc", "NNP", " +2"]]


def expand(text, seqs=(SEQ,)):
    pats = parse_patterns(text)
    rows = [r for s in seqs for r in s]
    cols = [list(c) for c in zip(*rows)]
    return [list(x) for x in expand_patterns(pats, cols, [len(s) for s in seqs])]


def test_wapiti_pattern_file_commands():
    out = expand('u:%t[0,0,"^\\u"]\nu:%m[0,0,"\\d*"]\nu:%m[0,0,"\\d\\d*"]\nu:%M[0,0,"^\\u\\l*"]\n'
                 'u:%T[0,0,"^\\u"]\nu:%m[0,0,"\\p\\a*$"]\nu:%t[0,0,"^\\u\\u*$"]\nu:%M[0,0,"^\\u\\l*$"]')
    assert out[0] == ["u:true", "u:false", "u:false", "u:true"]
    assert out[1] == ["u:"] * 4  # '*' is lazy: the empty match at 0
    assert out[2] == ["u:", "u:1", "u:3", "u:"]
    assert out[3] == ["u:p", "u:", "u:", "u:j"]  # lazy again: nothing after \l* asks for more
    assert out[7] == ["u:paris", "u:", "u:", "u:"]
    assert out[4] == out[0]  # %T lower-cases "true"/"false": the value is matched as it is
    assert out[5] == ["u:", "u:", "u:", "u:-Luc"]
    assert out[6] == ["u:false"] * 4


def test_indirect_positions_read_the_offset_from_a_column():
    # column 2 holds the offsets: 1, -1, "x" (atoi: 0), " +2" (atoi: 2)
    out = expand("u:%x[*2,0]\nu:%X[*2,1]")
    assert out[0] == ["u:a12b", "u:Paris", "u:3", "u:_x+2"]
    assert out[1] == ["u:nn", "u:nnp", "u:cd", "u:_x+2"]
    pad = expand("u:%x[*1,0]", seqs=([["w", "-3"], ["v", "12"]],))[0]
    assert pad == ["u:_x-3", "u:_x+#"]
    with pytest.raises(PatternError, match="column 7"):
        expand("u:%x[*7,0]")


def test_python_re_syntax_is_warned_about():
    with pytest.warns(PatternWarning, match=r"pats:1: .*\[ \] \+"):
        parse_patterns('u:%t[0,0,"^[A-Z]+$"]', "pats")
    with pytest.warns(PatternWarning):
        assert expand('u:%t[0,0,"^[A-Z]"]\nu:%t[0,0,"^\\[A"]')[0] == ["u:false"] * 4  # no class: a literal '['
    assert expand('u:%t[0,0,"^\\[A"]', seqs=([["[A]"], ["A"]],))[0] == ["u:true", "u:false"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        parse_patterns('u:%t[0,0,"^\\[\\u\\]"]\nu:%m[0,0,"\\d\\d*"]', "pats")


PATTERNS = ['u:w=%x[0,0]', 'u:cap=%t[0,0,"^\\u"]', 'u:num=%m[0,0,"\\d\\d*"]', 'u:pre=%M[0,0,"^\\u\\l*$"]', "B"]


def test_regex_observations_through_the_feature_space():
    X = [[["Paris", "NNP"], ["a12b", "NN"], ["3", "CD"]], [["Lyon", "NNP"], ["7x", "NN"]]]
    y = [["L", "O", "N"], ["L", "N"]]
    space, corpus = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    assert {"u:cap=true", "u:cap=false", "u:num=", "u:num=1", "u:num=3", "u:num=7", "u:pre=paris", "u:pre=",
            "u:pre=lyon"} <= set(space.observations)
    name_of = {space.unigram_offset[i]: s for i, s in enumerate(space.observations) if space.unigram_offset[i] >= 0}
    rows = [[name_of[b] for b in row[1:4]] for row in corpus.unigram_base]
    assert rows == [["u:cap=true", "u:num=", "u:pre=paris"], ["u:cap=false", "u:num=1", "u:pre="],
                    ["u:cap=false", "u:num=3", "u:pre="], ["u:cap=true", "u:num=", "u:pre=lyon"],
                    ["u:cap=false", "u:num=7", "u:pre="]]
    new = space.encode([[["Nantes", "NNP"], ["12", "CD"]]])
    assert [name_of.get(b) for b in new.unigram_base[:, 1]] == ["u:cap=true", "u:cap=false"]
    assert list(new.unigram_base[:, 3]) == [-1, space.unigram_offset[space.obs_index["u:pre="]]]


def test_stored_models_reparse_wapiti_patterns(tiny_file, tmp_path):
    from crf.data import read_sequences, split_labels

    X, y = split_labels(read_sequences(tiny_file))
    crf = CRF(patterns=PATTERNS, max_iter=30, rho1=0.0).fit(X, y)
    crf.save(tmp_path / "m.crf")
    back = CRF.load(tmp_path / "m.crf")
    assert [c.regex for p in back.space_.patterns for c in p.commands] == [None, "^\\u", "\\d\\d*", "^\\u\\l*$"]
    assert {"u:cap=true", "u:cap=false", "u:pre=he"} <= set(back.space_.observations)
    assert back.predict(X) == crf.predict(X)
    np.testing.assert_array_equal(back.theta_, crf.theta_)
