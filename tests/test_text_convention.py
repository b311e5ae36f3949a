"""One text convention in every reader (issue 24, items 1 and 2): ``\\n``, ``\\r\\n`` and a
lone ``\\r`` end a line; a UTF-8 byte-order mark opening the file is skipped; words and
columns split on ASCII white space only (``suffixlm.io.WHITESPACE``: a no-break space,
U+2028 or U+001C is part of a word, as in SRILM and KenLM); a line longer than
``$SUFFIXLM_MAX_LINE_BYTES`` is refused while it is read, naming the file and line.

Readers: training texts (``load_training_corpus``, gzip too), vocabulary files, ARPA
files, CoNLL column files, pattern files. Property (hypothesis): the same lines written
with any mix of line ends, with or without a BOM, read exactly as the ``\\n`` file does.
"""

from __future__ import annotations

import gzip
import os

import numpy as np
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crf.data import DataError, read_sequences
from crf.patterns import read_patterns
from suffixlm.backoff.arpa import ArpaError, BackoffLM
from suffixlm.cli import main
from suffixlm.corpus import CorpusError, Vocabulary, load_training_corpus
from suffixlm.io import BOM, MAX_LINE_ENV, split_words

SETTINGS = settings(max_examples=60, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
ENDS = st.sampled_from([b"\n", b"\r\n", b"\r"])


def written(lines: list[bytes], ends: list[bytes], bom: bool, last_end: bool = True) -> bytes:
    out = b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines))
    if not last_end:
        out = out[: -len(ends[(len(lines) - 1) % len(ends)])]
    return (BOM if bom else b"") + out


TEXT = [b"the cat sat", b"a\xc2\xa0b c", b"", b"x\x1cy \t z", b"\xe2\x80\xa8 d"]


@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=5), bom=st.booleans(), last_end=st.booleans(), gz=st.booleans())
def test_training_text_reads_the_same_whatever_the_line_ends(tmp_path, ends, bom, last_end, gz):
    ref = tmp_path / "ref.txt"
    ref.write_bytes(written(TEXT, [b"\n"], False))
    p = tmp_path / "t.txt"
    data = written(TEXT, ends, bom, last_end)
    p.write_bytes(gzip.compress(data) if gz else data)
    a, b = load_training_corpus(ref), load_training_corpus(p)
    assert a.vocab == b.vocab and a.n_sentences == 4
    np.testing.assert_array_equal(a.tokens, b.tokens)
    assert "a\xa0b" in b.vocab.index and "x\x1cy" in b.vocab.index and "\u2028" in b.vocab.index
    assert "\ufeffthe" not in b.vocab.index


@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=4), bom=st.booleans())
def test_vocabulary_file_reads_the_same_whatever_the_line_ends(tmp_path, ends, bom):
    p = tmp_path / "v.txt"
    p.write_bytes(written([b"the", b"cat 3", b"a\xc2\xa0b"], ends, bom))
    assert Vocabulary.from_file(p).words[3:] == ["the", "cat", "a\xa0b"]


ARPA = [b"", b"\\data\\", b"ngram 1=4", b"ngram 2=1", b"", b"\\1-grams:", b"-1 <s>\t-0.3", b"-1 </s>",
        b"-0.5 a\xc2\xa0b\t-0.2", b"-0.6 c", b"", b"\\2-grams:", b"-0.2 <s> a\xc2\xa0b", b"", b"\\end\\"]


@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=4), bom=st.booleans(), gz=st.booleans())
def test_arpa_file_reads_the_same_whatever_the_line_ends(tmp_path, ends, bom, gz):
    p = tmp_path / "m.arpa"
    data = written(ARPA, ends, bom)
    p.write_bytes(gzip.compress(data) if gz else data)
    lm = BackoffLM.read_arpa(p)
    assert lm.vocab.words == ["<s>", "</s>", "<unk>", "a\xa0b", "c"] and lm.counts == [4, 1]


CONLL = [b"The\xc2\xa0x DT B-NP", b"cat NN I-NP", b"", b"", b"sat VBD B-VP", b""]


@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=4), bom=st.booleans(), gz=st.booleans())
def test_conll_file_reads_the_same_whatever_the_line_ends(tmp_path, ends, bom, gz):
    p = tmp_path / "d.txt"
    data = written(CONLL, ends, bom)
    p.write_bytes(gzip.compress(data) if gz else data)
    assert read_sequences(p) == [[["The\xa0x", "DT", "B-NP"], ["cat", "NN", "I-NP"]], [["sat", "VBD", "B-VP"]]]


@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=4), bom=st.booleans())
def test_pattern_file_reads_the_same_whatever_the_line_ends(tmp_path, ends, bom):
    p = tmp_path / "p.pat"
    p.write_bytes(written([b"# comment", b"u:w=%x[0,0]", b"", b"u:p=%x[-1,0]/%x[0,0]", b"b"], ends, bom))
    assert [q.text for q in read_patterns(p)[1]] == ["u:w=%x[0,0]", "u:p=%x[-1,0]/%x[0,0]", "b"]


def test_split_words_splits_on_ascii_white_space_only():
    assert split_words(" a\tb\x0bc\x0cd\re\nf ") == list("abcdef")
    assert split_words("a\xa0b c\u2028d e\x1cf \u3000") == ["a\xa0b", "c\u2028d", "e\x1cf", "\u3000"]


def test_lone_cr_text_is_sentences_not_one_line(tmp_path):
    """Before: a file with lone-CR line ends read as one long sentence (kn and ppl exit 0
    with other numbers)."""
    p = tmp_path / "cr.txt"
    p.write_bytes(b"a b\rb a\ra a b\r")
    assert load_training_corpus(p).n_sentences == 3


# ---------------------------------------------------------------------- bounded reading
@pytest.fixture
def small_limit(monkeypatch):
    monkeypatch.setenv(MAX_LINE_ENV, "1000")
    return 1000


def test_long_lines_are_refused_while_read_naming_file_and_line(tmp_path, small_limit):
    long = b"w " * 600
    cases = {
        "text": (lambda p: load_training_corpus(p), CorpusError, b"a b\n" + long + b"\n"),
        "gzip": (lambda p: load_training_corpus(p), CorpusError, gzip.compress(b"a b\n" + long + b"\n")),
        "conll": (read_sequences, DataError, b"a B\n" + long + b"\n"),
        # (a regular plain ARPA file is bounded by its size; compressed and streamed ones are checked)
        "arpa": (BackoffLM.read_arpa, ArpaError, gzip.compress(b"\n\\data\\\n" + b"ngram 1=" + b"1" * 1200 + b"\n")),
        "patterns": (read_patterns, ValueError, b"u:%x[0,0]\n" + b"u:" + b"x" * 1200 + b"\n"),
        "no line end": (lambda p: load_training_corpus(p), CorpusError, b"a b\n" + b"x" * 5000),
    }
    for name, (read, error, data) in cases.items():
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(error, match=rf"{p}:\d: line longer than 1000 bytes .*{MAX_LINE_ENV}"):
            read(p)
    p = tmp_path / "ok"
    p.write_bytes(b"a b\n" + b"w " * 499 + b"\n")  # 998 bytes: read
    assert load_training_corpus(p).n_sentences == 2


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("args", [["kn", "/dev/zero", "-o", "{out}"], ["ppl", "--arpa", "/dev/zero", "{text}"],
                                  ["crf", "train", "-p", "{pat}", "/dev/zero", "{out}"]])
def test_dev_zero_ends_in_one_line_not_out_of_memory(tmp_path, small_limit, args):
    (tmp_path / "t.txt").write_text("a b\n")
    (tmp_path / "p.pat").write_text("u:%x[0,0]\n")
    args = [a.format(out=tmp_path / "out", text=tmp_path / "t.txt", pat=tmp_path / "p.pat") for a in args]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 1, r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "/dev/zero:1: line longer than 1000 bytes" in errors[0], r.output


# ---------------------------------------------------------------------- the last readers
@SETTINGS
@given(ends=st.lists(ENDS, min_size=1, max_size=4), bom=st.booleans())
def test_several_pattern_files_read_as_one_does(tmp_path, ends, bom):
    """``crf train -p A -p B`` concatenates the files' lines as ``read_patterns`` reads each:
    before, ``str.splitlines`` also split at a form feed and U+2028 (a pattern cut in two)."""
    from crf.cli import _concatenated
    from crf.patterns import parse_patterns

    a, b = tmp_path / "a.pat", tmp_path / "b.pat"
    a.write_bytes(written([b"u:w=%x[0,0]\x0cx", b"u:p=%x[-1,0]"], ends, bom))
    b.write_bytes(written(["u:q=%x[1,0]\u2028y".encode(), "# c\x85d".encode()], ends[::-1], bom, last_end=False))
    lines = _concatenated([a, b])
    assert lines == ["u:w=%x[0,0]\x0cx", "u:p=%x[-1,0]", "u:q=%x[1,0]\u2028y", "# c\x85d"]
    together = [p.text for p in parse_patterns("\n".join(lines))]
    assert together == [p.text for f in (a, b) for p in read_patterns(f)[1]]


def test_kenlm_scoring_splits_sentences_as_the_readers_do():
    """``score``, ``full_scores`` and ``perplexity`` split a sentence on ASCII white space
    (``split_words``): a no-break space or U+2028 is inside a word, as in a text file
    (before: ``str.split`` made two words of 'a\\xa0b')."""
    from suffixlm.backoff.kn import KneserNeyLM

    lm = KneserNeyLM(2, min_counts=[1]).fit(["a b c", "b c a", "a\xa0b c"])
    assert len(list(lm.full_scores("a\xa0b c", eos=False))) == 2
    assert [oov for _, _, oov in lm.full_scores("a\u2028b c\tb", eos=False)] == [True, False, False]
    assert lm.score("a\xa0b c") == pytest.approx(sum(lp for lp, _, _ in lm.full_scores("a\xa0b c")))
    assert lm.perplexity("a\xa0b c") == pytest.approx(10 ** (-lm.score("a\xa0b c") / 3))
    with pytest.raises(TypeError, match="single words"):
        lm.score(["a", "b"])
    lm.score(["a\xa0b c"])  # a list of one sentence holding a no-break space: a corpus, not single words


PIECES = st.sampled_from(["the", "cat", "<unk>", "a\xa0b", "x\x1cy", "\u2028", "é", "<s>", "</s>", " ", "\t", "\x0b",
                          "\x0c", "\n", "\r", "\r\n", "  ", "\n\n", "zz"])


@settings(max_examples=300, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(pieces=st.lists(PIECES, max_size=40), bom=st.booleans())
def test_a_small_text_read_at_once_encodes_as_the_line_reader_does(tmp_path, pieces, bom):
    """``corpus.encode_plain_text`` (a small file read whole) gives ``encode_lines`` of
    ``read_lines``'s arrays bit for bit, or hands the text to the line reader (None)."""
    from suffixlm.corpus import UnknownIsUnk, encode_lines, encode_plain_text, read_lines

    p = tmp_path / "t.txt"
    p.write_bytes((BOM if bom else b"") + "".join(pieces).encode("utf-8"))
    lookup = UnknownIsUnk({"<s>": 0, "</s>": 1, "<unk>": 2, "the": 3, "cat": 4, "a\xa0b": 5, "x\x1cy": 6}).__getitem__
    fast = encode_plain_text(p, lookup)
    try:
        slow = encode_lines(read_lines(p), lookup, "t:")
    except CorpusError:
        assert fast is None
        return
    if fast is None:  # handed over: only for what the line reader must see
        assert bom or any(c in "".join(pieces) for c in ("<s>", "</s>", "\x1c", "\xa0", "\u2028"))
        return
    for a, b in zip(fast, slow):
        np.testing.assert_array_equal(a, b)
        assert np.asarray(a).dtype == np.asarray(b).dtype


def test_a_small_text_read_at_once_is_the_path_corpus_from_text_takes(tmp_path, monkeypatch):
    from suffixlm import corpus as C

    p = tmp_path / "t.txt"
    p.write_bytes(b"the cat\r\n\r\nsat the\rcat\n")
    vocab = Vocabulary.from_counts({"the": 2, "cat": 2})
    calls = []
    real = C.encode_plain_text
    monkeypatch.setattr(C, "encode_plain_text", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(C, "compiled_reader_pays", lambda path: False)
    c = C.Corpus.from_text(p, vocab)
    the, cat = vocab.index["the"], vocab.index["cat"]
    assert calls and c.n_sentences == 3 and c.n_words == 5 and c.n_oov == 1  # a lone \r ends a line
    assert c.tokens.tolist() == [0, the, cat, 1, 0, 2, the, 1, 0, cat, 1]
