"""``corpus.encode_text`` (the compiled reader of training and test texts) against the
Python reader it replaces, ``encode_lines(read_lines(path))``: the same tokens, offsets,
word counts, vocabulary and errors on texts made to hit every rule (line ends, white
space, markers, blank lines, a BOM, UTF-8, gzip), at block sizes down to a few bytes
and with a word table that must grow."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest

from suffixlm import corpus as C
from suffixlm.corpus import (SPECIALS, Corpus, CorpusError, FirstSeenIds, UnknownIsUnk, Vocabulary, encode_lines,
                             load_training_corpus, read_lines)

PIECES = ["a", "b", "the", "<s>", "</s>", "<unk>", "é", "日本", "x\u00a0y", "w\x1cz", "\x00", "abc" * 5]
SPACES = [" ", "  ", "\t", "\x0b", "\x0c"]
ENDS = ["\n", "\r\n", "\r", "\n\n", "\r\r\n"]


def random_text(rng: random.Random, n_lines: int, bos_ok_only: bool = True) -> str:
    """Lines of random words, spaces and line ends; ``<s>`` only where it opens a line
    unless ``bos_ok_only`` is False."""
    out = []
    for _ in range(n_lines):
        words = [rng.choice(PIECES) for _ in range(rng.randrange(0, 6))]
        if bos_ok_only:
            words = [w for k, w in enumerate(words) if w != "<s>" or k == 0]
        line = "".join(rng.choice(SPACES) + w for w in words) + rng.choice(["", " ", "\t"])
        out.append(line + rng.choice(ENDS))
    text = "".join(out)
    return text if rng.random() < 0.7 else text.rstrip("\r\n")


def reference(path, vocab=None):
    """What the Python reader gives: (tokens, offsets, words, first-seen word list)."""
    if vocab is None:
        first = FirstSeenIds({w: i for i, w in enumerate(SPECIALS)})
        tok, off, n = encode_lines(read_lines(path), first.__getitem__, f"{path}:")
        return tok, off, n, list(first)
    tok, off, n = encode_lines(read_lines(path), UnknownIsUnk(vocab.index).__getitem__, f"{path}:")
    return tok, off, n, None


def compiled(path, vocab=None):
    table = C.WordTable(list(SPECIALS) if vocab is None else vocab.words, frozen=vocab is not None)
    tok, off, n = C.encode_text(path, table)
    return tok, off, n, (table.words() if vocab is None else None)


def error_of(f, *args):
    with pytest.raises(CorpusError) as e:
        f(*args)
    return str(e.value)


@pytest.fixture(params=[C.TEXT_BLOCK, 1, 5, 64])
def block(request, monkeypatch):
    monkeypatch.setattr(C, "TEXT_BLOCK", request.param)
    return request.param


@pytest.mark.parametrize("seed", range(12))
def test_same_as_the_python_reader(tmp_path, seed, block):
    rng = random.Random(seed)
    text = random_text(rng, rng.randrange(1, 40))
    path = tmp_path / "t.txt"
    data = ("\ufeff" if seed % 3 == 0 else "") + text
    path.write_bytes(data.encode("utf-8"))
    if not any(w.strip(" \t\x0b\x0c\r\n") for w in text.splitlines()):
        assert error_of(compiled, str(path)) == error_of(reference, str(path))
        return
    want, got = reference(str(path)), compiled(str(path))
    for a, b in zip(want[:2], got[:2]):
        assert a.dtype == b.dtype and np.array_equal(a, b)
    assert want[2:] == got[2:]
    vocab = Vocabulary.from_counts({"a": 3, "the": 2, "é": 1, "zz": 1}, unk=seed % 2 == 0)
    want, got = reference(str(path), vocab), compiled(str(path), vocab)
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]) and want[2] == got[2]


def test_the_corpus_readers_give_the_python_readers_corpora(tmp_path, block):
    rng = random.Random(7)
    path = tmp_path / "t.txt"
    path.write_text(random_text(rng, 200), encoding="utf-8", newline="")
    corpus = load_training_corpus(str(path), unk=True)
    first = FirstSeenIds({w: i for i, w in enumerate(SPECIALS)})
    prov, off, n = encode_lines(read_lines(str(path)), first.__getitem__, "")
    assert np.array_equal(corpus.tokens, np.array([corpus.vocab.index[w] for w in first], np.int32)[prov])
    assert np.array_equal(corpus.offsets, off) and corpus.n_words == n
    closed = Vocabulary.from_counts({"a": 3, "b": 2}, unk=False)
    test = Corpus.from_text(str(path), closed)
    ref = Corpus.from_sentences([t for _, t in read_lines(str(path))], closed)
    assert np.array_equal(test.tokens, ref.tokens) and np.array_equal(test.offsets, ref.offsets)
    assert (test.n_words, test.n_oov) == (ref.n_words, ref.n_oov) and test.n_oov > 0


def test_a_table_that_grows(tmp_path, block):
    words = [f"w{i}" for i in range(9000)]  # past the table's first room (4096 words)
    random.Random(1).shuffle(words)
    path = tmp_path / "t.txt"
    path.write_text("\n".join(" ".join(words[i:i + 7]) for i in range(0, len(words), 7)) + "\n")
    want, got = reference(str(path)), compiled(str(path))
    assert np.array_equal(want[0], got[0]) and np.array_equal(want[1], got[1]) and want[2:] == got[2:]


def test_a_long_word_grows_the_arena(tmp_path):
    word = "y" * 300_000
    path = tmp_path / "t.txt"
    path.write_text(f"a {word} b\n{word}\n")
    want, got = reference(str(path)), compiled(str(path))
    assert np.array_equal(want[0], got[0]) and want[3] == got[3]


@pytest.mark.parametrize("text", [
    "a b\nc <s> d\n",  # <s> inside a line
    "a\n<s> b <s>\n",  # a second <s>
    "ok\n\n  \r\nb <s>",  # after blank lines, no final line end
    "a\nb \xff c\n<s> <s>\n",  # invalid UTF-8 first
    "a\nb <s> c\n\xff\n",  # the <s> comes first
    "a\r\nb\rc\n\xe9t\xe9\n",  # invalid UTF-8 after mixed line ends
])
def test_the_same_errors(tmp_path, text, block):
    path = tmp_path / "t.txt"
    path.write_bytes(text.encode("latin-1"))
    message = error_of(compiled, str(path))
    assert message == error_of(reference, str(path))
    assert message == error_of(load_training_corpus, str(path))


@pytest.mark.parametrize("data", [b"", b"\n", b"  \n\t\r\n\r", b"\xef\xbb\xbf", b"\xef\xbb\xbf \n"])
def test_empty_and_blank_texts(tmp_path, data, block):
    path = tmp_path / "t.txt"
    path.write_bytes(data)
    message = error_of(compiled, str(path))
    assert message == error_of(reference, str(path))
    assert "is empty" in message or "only blank lines" in message


def test_gzip_and_long_lines(tmp_path, monkeypatch):
    rng = random.Random(3)
    text = random_text(rng, 50)
    path = tmp_path / "t.txt.gz"
    path.write_bytes(gzip.compress(text.encode("utf-8")))
    want, got = reference(str(path)), compiled(str(path))
    assert np.array_equal(want[0], got[0]) and want[2:] == got[2:]
    long = tmp_path / "long.txt"
    long.write_text("a b\n" + "c " * 100 + "\nd\n")
    monkeypatch.setenv("SUFFIXLM_MAX_LINE_BYTES", "50")
    message = error_of(compiled, str(long))
    assert message == error_of(reference, str(long)) and ":2: line longer than 50 bytes" in message


def test_a_missing_file(tmp_path):
    path = str(tmp_path / "nothing.txt")
    assert error_of(compiled, path) == error_of(reference, path)


class Trickle:
    """A stream whose reads give the pieces it was made with, one a read (a pipe)."""

    def __init__(self, pieces):
        self.pieces = list(pieces)

    def read1(self, n):
        return self.pieces.pop(0) if self.pieces else b""

    read = read1


def test_a_first_read_of_the_bom_alone():
    from suffixlm.io import BOM, byte_lines

    assert list(byte_lines(Trickle([BOM, b"ab\r", b"\ncd"]), "x", ValueError)) == [b"ab\r\n", b"cd"]
    assert list(byte_lines(Trickle([BOM[:2], BOM[2:], b"", b"z\n"]), "x", ValueError)) == []
    assert list(byte_lines(Trickle([BOM[:2], BOM[2:] + b"z\n"]), "x", ValueError)) == [b"z\n"]


def shard_reference(path, start, end):
    from suffixlm.distributed import kn_counts as KC

    first = FirstSeenIds({w: i for i, w in enumerate(SPECIALS)})
    name = str(path)
    where = f"{name}: bytes {start}..{end}, line "
    tok, off, n = encode_lines(KC._shard_lines(name, start, end), first.__getitem__, where)
    return list(first), tok, off, n


@pytest.mark.parametrize("seed", range(6))
def test_shards_of_a_text(tmp_path, seed, block):
    from suffixlm.distributed import kn_counts as KC

    monkey = pytest.MonkeyPatch()
    monkey.setattr(KC, "TEXT_BLOCK", block)
    rng = random.Random(seed)
    path = tmp_path / "t.txt"
    path.write_bytes(("\ufeff" if seed % 2 else "").encode() + random_text(rng, 60).encode("utf-8"))
    try:
        for n_shards in (1, 3, 7):
            for start, end in KC.split_text(str(path), n_shards):
                want, got = shard_reference(path, start, end), KC.read_shard(str(path), start, end)
                assert want[0] == got[0] and want[3] == got[3]
                assert np.array_equal(want[1], got[1]) and np.array_equal(want[2], got[2])
        bad = tmp_path / "bad.txt"
        bad.write_bytes(b"a b\n" * 5 + b"c <s>\n" + b"d \xff\n")
        for start, end in KC.split_text(str(bad), 3):
            if end > 20:
                assert error_of(KC.read_shard, str(bad), start, end) == error_of(shard_reference, bad, start, end)
    finally:
        monkey.undo()


def test_when_the_compiled_reader_pays(tmp_path, monkeypatch):
    import importlib
    import sys

    importlib.import_module("numba")  # started, as by any kernel

    path = tmp_path / "t.txt"
    path.write_text("a b\n" * 10)
    assert C.compiled_reader_pays(str(path))
    monkeypatch.delitem(sys.modules, "numba")
    assert not C.compiled_reader_pays(str(path)) and not C.compiled_reader_pays("-")
    assert not C.compiled_reader_pays(str(tmp_path / "missing.txt"))
    monkeypatch.setattr(C, "COMPILED_READER_BYTES", 40)
    assert C.compiled_reader_pays(str(path))
    vocab = Vocabulary.from_counts({"a": 2}, unk=True)
    monkeypatch.setattr(C, "COMPILED_READER_BYTES", 1 << 30)
    small = Corpus.from_text(str(path), vocab)  # the Python reader
    monkeypatch.setattr(C, "COMPILED_READER_BYTES", 0)
    big = Corpus.from_text(str(path), vocab)
    assert np.array_equal(small.tokens, big.tokens) and np.array_equal(small.offsets, big.offsets)
    assert small.n_words == big.n_words == 20
