"""CoNLL column reader: round trips and clear errors."""

import io

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crf.data import DataError, iter_sequences, read_sequences, split_labels

token = st.text(alphabet=st.characters(blacklist_categories=("Cs", "Cc", "Zs", "Zl", "Zp"),
                                       blacklist_characters="\x1c\x1d\x1e\x1f\x85"), min_size=1, max_size=5)


@settings(max_examples=50, deadline=None)
@given(st.integers(1, 4).flatmap(
    lambda n: st.lists(st.lists(st.lists(token, min_size=n, max_size=n), min_size=1, max_size=5),
                       min_size=0, max_size=4)))
def test_round_trip(seqs):
    text = "\n\n".join("\n".join(" ".join(row) for row in seq) for seq in seqs) + "\n\n\n"
    got = [rows for _, rows in iter_sequences(io.StringIO(text))]
    assert got == seqs


def test_errors_and_edge_cases(tmp_path):
    p = tmp_path / "f.txt"
    p.write_text("a\tb\tc\n\n\n\nd e f\r\ng h\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"f.txt:6: expected 3 columns, found 2"):
        read_sequences(p)
    p.write_bytes(b"a b\n\xff\xfe c\n")
    with pytest.raises(DataError, match="UTF-8"):
        read_sequences(p)
    p.write_text("\n \n", encoding="utf-8")
    assert read_sequences(p) == []
    p.write_text("x NN B\ny VB I\n\nz DT O\n", encoding="utf-8")
    X, y = split_labels(read_sequences(p))
    assert X == [[["x", "NN"], ["y", "VB"]], [["z", "DT"]]] and y == [["B", "I"], ["O"]]


def test_drop_docstart(tmp_path):
    p = tmp_path / "ned.txt"
    # CoNLL-2002 Dutch: -DOCSTART- opens the article's first sentence;
    # CoNLL-2003: a block of its own (and a different column count is no error once skipped)
    p.write_text("-DOCSTART- -DOCSTART- O\nDe Art O\nMorgen N B-ORG\n\nHij Pron O\n\n"
                 "-DOCSTART- -X- -X- O\n\n-DOCSTART- -DOCSTART- O\nZe Pron O\n", encoding="utf-8")
    seqs = read_sequences(p, drop_docstart=True)
    assert seqs == [[["De", "Art", "O"], ["Morgen", "N", "B-ORG"]], [["Hij", "Pron", "O"]],
                    [["Ze", "Pron", "O"]]]
    with open(p, encoding="utf-8") as fh:
        assert [start for start, _ in iter_sequences(fh, drop_docstart=True)] == [2, 5, 10]
    with pytest.raises(DataError, match="ned.txt:7: expected 3 columns, found 4"):
        read_sequences(p)  # kept by default, as Wapiti does
