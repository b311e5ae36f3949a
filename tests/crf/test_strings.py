"""crf.strings.StringTable: the observation strings of a feature space in one buffer."""

import random

import numpy as np
import pytest

from crf.strings import StringTable

ALPHABET = ["a", "b", "=", " ", "\u00e9", "\u4e2d", "\U0001f600", "\ud800", "\udcff", "\x00"]


def random_strings(rng, n, alphabet=ALPHABET):
    return ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 6))) for _ in range(n)]


@pytest.mark.parametrize("seed", range(6))
def test_round_trip_index_iterate_and_select(seed):
    rng = random.Random(seed)
    strings = random_strings(rng, rng.randrange(0, 40), ALPHABET if seed % 2 else ALPHABET[:4])
    t = StringTable.of(strings)
    assert len(t) == len(strings)
    assert list(t) == strings
    assert [t[i] for i in range(len(strings))] == strings
    assert [t[-i] for i in range(1, len(strings) + 1)] == [strings[-i] for i in range(1, len(strings) + 1)]
    assert t[1:7:2] == strings[1:7:2]
    assert t == strings and t == tuple(strings) and t == StringTable.of(strings)
    keep = np.array([rng.random() < 0.5 for _ in strings], dtype=bool)
    chosen = [s for s, k in zip(strings, keep) if k]
    assert list(t.select(keep)) == chosen
    assert list(t.select(np.flatnonzero(keep))) == chosen
    # the buffer is the UTF-8 of the strings (surrogates passed through), as a model file stores it
    assert t.blob.tobytes() == "".join(strings).encode("utf-8", "surrogatepass")


def test_utf8_error_names_the_first_string_strict_utf8_cannot_hold():
    assert StringTable.of(["a", "\u00e9", "\U0001f600"]).utf8_error() is None
    assert StringTable.of(["a", "x\ud800", "\udcff"]).utf8_error() == "x\ud800"


def test_indexing_errors():
    t = StringTable.of(["a", "b"])
    with pytest.raises(IndexError):
        t[2]
    with pytest.raises(IndexError):
        t[-3]
    with pytest.raises(TypeError):
        t[0.5]
    assert t != ["a"] and t != ["a", "c"]
    assert StringTable.of([]) == [] and list(StringTable.of([""])) == [""]
    assert StringTable.of(t) is t
