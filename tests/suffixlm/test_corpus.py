import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from suffixlm.corpora import sample_path

from suffixlm.corpus import (
    BOS_ID,
    EOS_ID,
    UNK_ID,
    Corpus,
    CorpusError,
    Vocabulary,
    load_training_corpus,
    read_lines,
)


def write(tmp_path, name, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_encoding_markers_and_offsets(tmp_path):
    p = write(tmp_path, "t.txt", b"a b a\n\n  c a \n")
    c = load_training_corpus(p)
    assert c.n_sentences == 2
    assert c.n_words == 5
    v = c.vocab
    assert v.words[:3] == ["<s>", "</s>", "<unk>"]
    assert v.words[3] == "a"  # most frequent first
    assert list(c.offsets) == [0, 5, 9]
    s0 = c.sentence(0)
    assert s0[0] == BOS_ID and s0[-1] == EOS_ID
    assert [v.words[i] for i in s0[1:-1]] == ["a", "b", "a"]
    assert c.tokens.dtype == np.int32 and c.offsets.dtype == np.int64
    assert not v.has_unk
    assert v.n_predicted == len(v) - 2


def test_oov_counted_and_excluded_without_unk(tmp_path):
    v = Vocabulary.from_counts({"a": 2, "b": 1})
    c = Corpus.from_strings(["a x b", "y"], vocab=v)
    assert c.n_oov == 2
    mask = c.target_mask()
    # predicted: a x b </s> | y </s>; x and y excluded
    expected = [False, True, False, True, True, False, False, True]
    assert list(mask) == expected


def test_oov_maps_to_unk_when_unk_is_a_word(tmp_path):
    p = write(tmp_path, "t.txt", b"a <unk> b\n")
    c = load_training_corpus(p)
    assert c.vocab.has_unk
    t = Corpus.from_strings(["a zz"], vocab=c.vocab)
    assert t.n_oov == 0
    assert t.tokens[2] == UNK_ID
    assert t.target_mask().sum() == 3


def test_min_count_opens_vocabulary(tmp_path):
    p = write(tmp_path, "t.txt", b"a a b\n")
    c = load_training_corpus(p, min_count=2)
    assert "b" not in c.vocab and c.vocab.has_unk
    assert c.n_oov == 0


def test_existing_markers_are_stripped():
    c = Corpus.from_strings(["<s> a b </s>"])
    assert c.n_words == 2 and len(c.tokens) == 4


def test_vocab_file_roundtrip(tmp_path):
    v = Vocabulary.from_counts({"x": 3, "y": 1, "<unk>": 1})
    p = tmp_path / "v.txt"
    v.save(p)
    assert Vocabulary.from_file(p) == v


@pytest.mark.parametrize(
    "data,msg",
    [
        (b"", "is empty"),
        (b"\n  \n\n", "only blank lines"),
        (b"ok line\nbad \xff byte\n", ":2: invalid UTF-8"),
    ],
)
def test_bad_input_errors_name_file_and_line(tmp_path, data, msg):
    p = write(tmp_path, "bad.txt", data)
    with pytest.raises(CorpusError, match=msg) as e:
        list(read_lines(p))
    assert "bad.txt" in str(e.value)


def test_missing_file(tmp_path):
    with pytest.raises(CorpusError, match="no such file"):
        list(read_lines(tmp_path / "nope.txt"))


def test_sample_corpus_loads():
    c = load_training_corpus(sample_path("tiny_lm.train.txt"))
    assert c.n_sentences == 1500
    assert c.n_oov == 0


def test_ptb_counts(shared):
    p = shared("corpora", "ptb", "ptb.train.100k.txt")
    c = load_training_corpus(p)
    assert c.n_sentences == 4730
    assert c.n_words == 99993
    assert c.vocab.has_unk


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.sampled_from(["a", "b", "c", "dd", "<unk>", "<s>", "</s>", "é"]), max_size=6),
                min_size=1, max_size=12),
       st.integers(1, 3), st.booleans())
def test_one_pass_training_read_equals_vocabulary_then_encoding(tmp_path_factory, sents, min_count, unk):
    """load_training_corpus (one pass, provisional ids) == Vocabulary.from_text + Corpus.from_text."""
    if not any(sents):
        return
    path = tmp_path_factory.mktemp("c") / "t.txt"
    path.write_text("".join(" ".join(s) + "\n" for s in sents), encoding="utf-8")
    try:
        vocab = Vocabulary.from_text(path, min_count=min_count, unk=unk)
    except CorpusError:
        with pytest.raises(CorpusError):
            load_training_corpus(path, min_count=min_count, unk=unk)
        return
    ref = Corpus.from_text(path, vocab)
    got = load_training_corpus(path, min_count=min_count, unk=unk)
    assert got.vocab == ref.vocab
    np.testing.assert_array_equal(got.tokens, ref.tokens)
    np.testing.assert_array_equal(got.offsets, ref.offsets)
    assert (got.n_words, got.n_oov) == (ref.n_words, ref.n_oov)
    assert got.tokens.dtype == np.int32 and got.offsets.dtype == np.int64
