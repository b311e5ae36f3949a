"""Pattern parsing and expansion against hand-written cases."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crf.patterns import BIGRAM, UNIGRAM, PatternError, expand_patterns, parse_patterns

SEQ = [["The", "DT"], ["Cat", "NN"], ["sat", "VBD"]]


def expand(text, seqs=(SEQ,)):
    pats = parse_patterns(text)
    rows = [r for s in seqs for r in s]
    cols = [list(c) for c in zip(*rows)]
    return [list(x) for x in expand_patterns(pats, cols, [len(s) for s in seqs])]


def test_offsets_and_wapiti_padding():
    out = expand("u:%x[-1,0]\nu:%x[0,1]\nu:%x[2,0]\nu:%x[-6,1]")
    assert out[0] == ["u:_x-1", "u:The", "u:Cat"]
    assert out[1] == ["u:DT", "u:NN", "u:VBD"]
    assert out[2] == ["u:sat", "u:_x+1", "u:_x+2"]
    assert out[3] == ["u:_x-#", "u:_x-#", "u:_x-4"]


def test_row_offset_comes_first():
    # %x[1,0] is the next row's word (CRF++ order, Wapiti's code), not column 1
    assert expand("u:%x[1,0]")[0] == ["u:Cat", "u:sat", "u:_x+1"]


def test_combinations_literals_and_kinds():
    pats = parse_patterns("# comment\n\nU01:w=%x[0,0]/p=%x[-1,1]\nb:%x[0,1]\n*:%x[0,0]\nB\n")
    assert [p.kind for p in pats] == [UNIGRAM, BIGRAM, UNIGRAM | BIGRAM, BIGRAM]
    out = expand("U01:w=%x[0,0]/p=%x[-1,1]\nB\nu:{braces}%x[0,0]")
    assert out[0] == ["U01:w=The/p=_x-1", "U01:w=Cat/p=DT", "U01:w=sat/p=NN"]
    assert out[1] == ["B", "B", "B"]
    assert out[2] == ["u:{braces}The", "u:{braces}Cat", "u:{braces}sat"]


def test_test_match_and_lowercase_commands():
    # Wapiti's regular expressions; an upper-case letter lower-cases the result, not the value matched
    out = expand('u:%t[0,0,"^\\u"]\nu:%m[0,0,"a."]\nu:%X[0,0]\nu:%T[0,0,"^c"]\nu:%M[0,1,"\\u\\u*$"]\n'
                 'u:%T[0,0,"^C"]')
    assert out[0] == ["u:true", "u:true", "u:false"]
    assert out[1] == ["u:", "u:at", "u:at"]
    assert out[2] == ["u:the", "u:cat", "u:sat"]
    assert out[3] == ["u:false", "u:false", "u:false"]
    assert out[4] == ["u:dt", "u:nn", "u:vbd"]
    assert out[5] == ["u:false", "u:true", "u:false"]


def test_absolute_positions():
    # Wapiti's convention: @1 is the first row, @-1 the last, @0 the padding before the start
    out = expand("u:%x[@1,0]\nu:%x[@-1,1]\nu:%x[@5,0]\nu:%x[@0,0]\nu:%x[@-4,0]\nu:%x[@3,0]")
    assert out[0] == ["u:The"] * 3
    assert out[1] == ["u:VBD"] * 3
    assert out[2] == ["u:_x+2"] * 3
    assert out[3] == ["u:_x-1"] * 3
    assert out[4] == ["u:_x-1"] * 3
    assert out[5] == ["u:sat"] * 3


def test_sequences_do_not_leak_into_each_other():
    out = expand("u:%x[-1,0]/%x[1,0]", seqs=(SEQ, [["A", "X"]]))
    assert out[0] == ["u:_x-1/Cat", "u:The/sat", "u:Cat/_x+1", "u:_x-1/_x+1"]


@pytest.mark.parametrize("bad", ["x:%x[0,0]", "u:%t[0,0]", 'u:%x[0,0,"a"]', "u:%x[0]", 'u:%t[0,0,"*a"]',
                                 'u:%m[0,0,"a**"]', "u:%x[*-1,0]"])
def test_malformed_patterns_are_rejected(bad):
    with pytest.raises(PatternError):
        parse_patterns(bad, "pats")


def test_missing_column_is_a_clear_error():
    with pytest.raises(PatternError, match="column 5"):
        expand("u:%x[0,5]")


def test_empty_pattern_file():
    with pytest.raises(PatternError, match="no pattern"):
        parse_patterns("# only a comment\n")


words = st.lists(st.lists(st.sampled_from(["a", "B", "c1", "D-e"]), min_size=1, max_size=6), min_size=1, max_size=4)


@settings(max_examples=40, deadline=None)
@given(words, st.integers(-3, 3))
def test_x_command_matches_naive_indexing(seqs, off):
    data = [[[w] for w in s] for s in seqs]
    out = expand(f"u:%x[{off},0]", seqs=data)[0]
    ref = []
    for s in seqs:
        for t in range(len(s)):
            i = t + off
            if i < 0:
                ref.append(f"u:_x{i}")
            elif i >= len(s):
                ref.append(f"u:_x+{i - len(s) + 1}")
            else:
                ref.append(f"u:{s[i]}")
    assert out == ref
