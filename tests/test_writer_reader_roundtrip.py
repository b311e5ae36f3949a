"""Every writer refuses what its reader would refuse, before anything is written (issue 24,
item 3); what it accepts, its reader gives back unchanged.

Pairs: ``KneserNeyLM.fit`` + ``write_arpa`` / ``read_arpa``; ``Vocabulary.save`` /
``Vocabulary.from_file``; ``corpus.write_text`` / ``Corpus.from_text``;
``LogLinearLM.save`` / ``load``; ``CRF.fit`` + ``save`` / ``CRF.load`` (columns and feature
dicts); CRF labels written as a column file / ``crf.data.read_sequences``.

The words, labels and observations are drawn from an alphabet of what breaks readers:
the six ASCII white-space characters (``suffixlm.io.WHITESPACE``), the Unicode spaces
that are *not* separators (no-break space, U+2028, U+001C), a BOM, NUL, a lone surrogate,
the empty string, ``None`` and numbers. Property: the writer (or the estimator's ``fit``)
raises ``TypeError`` / ``ValueError`` and no output file exists, or the reader gives back
exactly what was written.
"""

import math
import os
import tempfile
import warnings

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crf import CRF
from crf.data import read_sequences
from crf.dicts import MAX_FEATURE_VALUE
from suffixlm.backoff.arpa import BackoffLM
from suffixlm.corpus import Corpus, Vocabulary, write_text
from suffixlm.backoff.kn import KneserNeyLM

SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

#: characters that break (or must not break) a text reader
NASTY = [" ", "\t", "\n", "\r", "\x0b", "\x0c", "\xa0", "\u2028", "\x1c", "\x85", "\ufeff", "\x00", "\udc80",
         "é", "a", "b", "c"]
WORD = st.text(alphabet=st.sampled_from(NASTY), min_size=0, max_size=4)
PLAIN = st.sampled_from(["a", "b", "c", "dé", "e\xa0f", "g\x1ch", "\ufeffi"])  # all valid words
LABEL = st.one_of(WORD, PLAIN, st.none(), st.integers(0, 3), st.just(1.5))


def _words_ok(words) -> bool:
    ws = " \t\n\r\x0b\x0c"
    return all(isinstance(w, str) and w and not any(c in w for c in ws) and "\udc80" not in w for w in words)


@SETTINGS
@given(words=st.lists(st.one_of(WORD, PLAIN), min_size=1, max_size=5, unique=True),
       order=st.integers(1, 3))
def test_kneser_ney_arpa_round_trip(words, order):
    words = [w for w in words if w not in ("<s>", "</s>", "<unk>")] or ["a"]
    sentences = [words, words[::-1], words[:1]]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.arpa")
        try:
            vocab = Vocabulary(["<s>", "</s>", "<unk>", *words])
            corpus = Corpus.from_sentences(sentences, vocab)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                lm = KneserNeyLM(order, min_counts=[1]).fit(corpus)
            lm.write_arpa(out)
        except (TypeError, ValueError):
            assert not _words_ok(words)
            assert os.listdir(d) == []  # nothing written, no temporary file left
            return
        assert _words_ok(words)
        back = BackoffLM.read_arpa(out)
        assert back.vocab.words == lm.vocab.words
        np.testing.assert_array_equal(back.log10_probs(Corpus.from_sentences(sentences, back.vocab)),
                                      lm.log10_probs(corpus))


@SETTINGS
@given(words=st.lists(st.one_of(WORD, PLAIN), min_size=0, max_size=5, unique=True), unk=st.booleans())
def test_vocabulary_file_round_trip(words, unk):
    words = [w for w in words if w not in ("<s>", "</s>", "<unk>")]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "v.txt")
        try:
            v = Vocabulary(["<s>", "</s>", "<unk>", *words], has_unk=unk)
            v.save(out)
        except (TypeError, ValueError):
            assert not _words_ok(words)
            assert os.listdir(d) == []
            return
        assert _words_ok(words)
        assert Vocabulary.from_file(out, unk=unk) == v


@SETTINGS
@given(sentences=st.lists(st.lists(PLAIN, min_size=1, max_size=4), min_size=1, max_size=4))
def test_written_text_reads_back(sentences):
    vocab = Vocabulary(["<s>", "</s>", "<unk>", *sorted({w for s in sentences for w in s})])
    corpus = Corpus.from_sentences(sentences, vocab)
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "t.txt")
        with open(out, "w", encoding="utf-8") as fh:
            write_text(corpus, fh)
        back = Corpus.from_text(out, vocab)
    np.testing.assert_array_equal(back.tokens, corpus.tokens)
    np.testing.assert_array_equal(back.offsets, corpus.offsets)


@settings(SETTINGS, max_examples=10)
@given(words=st.lists(st.one_of(WORD, PLAIN), min_size=1, max_size=3, unique=True))
def test_log_linear_model_round_trip(words):
    from suffixlm.model import LogLinearLM

    words = [w for w in words if w not in ("<s>", "</s>", "<unk>")] or ["a"]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.npz")
        try:
            vocab = Vocabulary(["<s>", "</s>", "<unk>", *words])
            corpus = Corpus.from_sentences([words, words[::-1]], vocab)
            lm = LogLinearLM(order=2, lam=0.1, max_iter=5).fit(corpus)
            lm.save(out)
        except (TypeError, ValueError):
            assert not _words_ok(words)
            assert os.listdir(d) == []
            return
        assert _words_ok(words)
        back = LogLinearLM.load(out)
        assert back.vocab.words == lm.vocab.words
        np.testing.assert_allclose(back.log10_probs(corpus), lm.log10_probs(corpus))


def _labels_ok(labels) -> bool:
    return _words_ok(labels)


@SETTINGS
@given(labels=st.lists(LABEL, min_size=2, max_size=3), column=st.one_of(WORD, PLAIN))
def test_crf_columns_model_round_trip(labels, column):
    X = [[["a", column], ["b", "x"]], [["b", "y"], ["a", column]]]
    y = [[labels[0], labels[1]], [labels[-1], labels[0]]]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.crf")
        try:
            m = CRF(patterns=["u:%x[0,0]", "u:%x[0,1]", "b"], max_iter=5).fit(X, y)
            m.save(out)
        except (TypeError, ValueError):
            assert not (_labels_ok(labels) and ("\udc80" not in column))
            assert os.listdir(d) == []
            return
        assert _labels_ok(labels)
        back = CRF.load(out)
        assert back.classes_ == m.classes_
        np.testing.assert_array_equal(back.theta_, m.theta_)
        assert back.predict(X) == m.predict(X)
        # the labels as a column file (what `crf label` writes) read back as written
        table = os.path.join(d, "out.txt")
        with open(table, "w", encoding="utf-8") as fh:
            for seq, lab in zip(X, m.predict(X)):
                fh.write("".join(f"{row[0]}\t{t}\n" for row, t in zip(seq, lab)) + "\n")
        assert [[r[1] for r in s] for s in read_sequences(table)] == m.predict(X)


FEATURE_VALUE = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10**20, 10**20),
                          st.sampled_from([MAX_FEATURE_VALUE, -MAX_FEATURE_VALUE, np.nextafter(MAX_FEATURE_VALUE, 2e5),
                                           1e300, 1e-300, 0.0]))


@SETTINGS
@given(value=FEATURE_VALUE, label=LABEL)
def test_crf_feature_dicts_round_trip(value, label):
    X = [[{"w": "a", "v": value}, {"w": "b", "v": 1.0}], [{"w": "b"}, {"w": "a", "v": 2.0}]]
    y = [["A", label], [label, "A"]]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "m.crf")
        try:
            m = CRF(max_iter=5).fit(X, y)
            m.save(out)
        except (TypeError, ValueError):
            assert not (_labels_ok([label]) and math.isfinite(float(value)) and abs(float(value)) <= MAX_FEATURE_VALUE)
            assert os.listdir(d) == []
            return
        assert _labels_ok([label]) and abs(float(value)) <= MAX_FEATURE_VALUE
        back = CRF.load(out)
        assert back.classes_ == m.classes_
        assert back.predict(X) == m.predict(X)


@pytest.mark.parametrize("bad", [None, 3, "", "B I", "B\tI", "x\ny", "\udc80"])
def test_crf_fit_refuses_labels_no_file_could_hold(bad):
    X = [[["a"], ["b"]]]
    with pytest.raises((TypeError, ValueError), match=r"y\[0\]\[1\]: label"):
        CRF(patterns=["u:%x[0,0]"], max_iter=2).fit(X, [["A", bad]])


@pytest.mark.parametrize("value", [1e300, -1e6, 10**20, float("nan")])
def test_crf_refuses_absurd_feature_values(value):
    with pytest.raises(ValueError, match="feature 'v'"):
        CRF(max_iter=2).fit([[{"v": value}, {"v": 1.0}]], [["A", "B"]])


@pytest.mark.parametrize("bad", ["a b", "a\tb", "", "a\nb", "a\rb", "a\x0bb", None, "\udc80"])
def test_kneser_ney_fit_refuses_words_no_arpa_file_could_hold(bad, tmp_path):
    with pytest.raises((TypeError, ValueError), match="vocabulary word 4"):
        vocab = Vocabulary(["<s>", "</s>", "<unk>", "x", bad])
        KneserNeyLM(2).fit(Corpus.from_sentences([["x", bad]], vocab)).write_arpa(tmp_path / "m.arpa")
    assert list(tmp_path.iterdir()) == []
