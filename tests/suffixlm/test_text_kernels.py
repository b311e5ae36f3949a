"""The text kernels' word lookup (``_text_kernels``: the word table, ``text_ids``, the
eight-bytes-at-a-time white space and word end) against Python's own splitting
(``io.split_words``) and a dict, on random vocabularies and texts: words of 1 to 20 bytes
(multi-byte UTF-8, NUL bytes, words that are prefixes of others, words of exactly 8 and 9
bytes), every white space byte, windows that end mid-text and texts that end anywhere in
the last eight bytes."""

from __future__ import annotations

import random

import numpy as np
import pytest

from suffixlm import _text_kernels as K
from suffixlm.io import split_words

WHITE = b" \t\n\r\x0b\x0c"
ALPHABET = ["a", "b", "z", "é", "€", "\x00", "日", "Q", "-", "7", "\x7f", "\x80"]


def test_the_space_mask_is_the_byte_test_in_every_lane():
    for lane in range(8):
        for b in range(256):
            filler = [ord("x")] * 8
            filler[lane] = b
            v = np.uint64(int.from_bytes(bytes(filler), "little"))
            expected = (1 << (8 * lane + 7)) if K._is_space(b) else 0
            assert int(K._space_mask(v)) == expected, (lane, b)
    # every lane white space at once, and none
    assert int(K._space_mask(np.uint64(int.from_bytes(b" \t\n\r\x0b\x0c  ", "little")))) == 0x8080808080808080
    assert int(K._space_mask(np.uint64(int.from_bytes(b"\xff\xa0\x8a\x89\x00\x1f\x21\x0e", "little")))) == 0


def _vocabulary(rng: random.Random, n: int) -> list[str]:
    words = set()
    while len(words) < n:
        length = rng.choice([1, 2, 3, 5, 7, 8, 8, 9, 9, 12, 16, 17, 20])
        w = "".join(rng.choice(ALPHABET) for _ in range(length))
        words.add(w)
        if rng.random() < 0.2 and len(w) > 1:
            words.add(w[:-1])  # a prefix of another word
    return sorted(words)


@pytest.mark.parametrize("seed", range(6))
def test_text_ids_are_python_splitting_and_a_dict(seed):
    rng = random.Random(seed)
    vocab = _vocabulary(rng, rng.choice([3, 50, 2000]))
    index = {w: i for i, w in enumerate(vocab)}
    W, blob = K.word_table_of(vocab)
    unk, eos_id = 2, 1
    for _ in range(40):
        words = [rng.choice(vocab) if rng.random() < 0.8 else "".join(rng.choice(ALPHABET) for _ in range(
            rng.randint(1, 12))) for _ in range(rng.randint(0, 30))]
        parts = [bytes(rng.choice(WHITE) for _ in range(rng.randint(0, 2)))]
        for w in words:
            parts.append(w.encode())
            parts.append(bytes(rng.choice(WHITE) for _ in range(rng.randint(1, 3))))
        if rng.random() < 0.5:
            parts.pop()  # the text ends in a word
        text = b"".join(parts)
        pos = rng.randint(0, len(text))
        end = rng.randint(pos, len(text))
        words_in = split_words(text[pos:end].decode("utf-8", "surrogateescape"))
        expected = [index.get(w, unk) for w in words_in] + [eos_id]
        for buf in (text, np.frombuffer(text, dtype=np.uint8)):
            out = np.full(len(text) // 2 + 4, -7, dtype=np.int64)
            n = K.text_ids(W, blob, buf, pos, end, True, unk, eos_id, out, 1)
            assert out[1:n].tolist() == expected, (text, pos, end)
            assert out[0] == -7 and (n == len(out) or out[n] == -7)


def test_every_word_of_a_large_vocabulary_is_found_by_both_lookups():
    rng = random.Random(7)
    vocab = _vocabulary(rng, 5000)
    W, blob = K.word_table_of(vocab)
    for i, w in enumerate(vocab):
        b = w.encode()
        for pad in (b"", b" tail of the buffer"):  # one load, or bytes at the buffer's end
            buf = np.frombuffer(b + pad, dtype=np.uint8)
            assert K.word_id(W, blob, buf, 0, len(b), -1) == i
            assert K.text_word_id(W, blob, buf, 0, len(b), -1) == i
            assert K.word_end(buf, 0, len(buf)) == len(b)
    for w in ["nothere", "a" * 30, "é" * 4]:
        if w not in vocab:
            buf = np.frombuffer(w.encode() + b"  ", dtype=np.uint8)
            assert K.text_word_id(W, blob, buf, 0, len(w.encode()), -1) == -1


@pytest.mark.parametrize("seed", range(4))
def test_line_starts_are_pythons_line_feeds(seed):
    """``line_starts`` (eight bytes at a time while a load fits) against a plain search."""

    def reference(text: bytes, n_lines: int) -> list[int]:
        starts, pos = [0], 0
        for _ in range(n_lines):
            feed = text.find(b"\n", pos)
            pos = min((len(text) if feed < 0 else feed) + 1, len(text) + 1)
            starts.append(pos)
        return starts

    rng = random.Random(seed)
    for _ in range(50):
        text = bytes(rng.choice(b"ab \n") for _ in range(rng.randint(0, 40)))
        data = np.frombuffer(text, dtype=np.uint8)
        for n_lines in (0, 1, text.count(b"\n"), text.count(b"\n") + 1, text.count(b"\n") + 3):
            assert K.line_starts(data, n_lines).tolist() == reference(text, n_lines), (text, n_lines)
            assert K.line_starts(text, n_lines).tolist() == reference(text, n_lines), (text, n_lines)


def test_joined_lines_gives_the_kernels_text_or_none():
    from suffixlm.query import joined_lines

    assert joined_lines(["a b", "c"]) == (["a b", "c"], b"a b\nc")
    # any iterable; bytes decoded
    assert joined_lines(s for s in ["é", b"\xe2\x82\xac"]) == (["é", "€"], "é\n€".encode())
    assert joined_lines([]) == ([], b"")
    assert joined_lines(["a\nb", "c"])[1] is None  # a line end inside a sentence
    assert joined_lines(["a", "\udc80"])[1] is None  # a lone surrogate: no UTF-8
    with pytest.raises(TypeError, match="Cannot convert int"):
        joined_lines(["a", 3])
