"""CoNLL-style column files: one token per line, columns separated by ASCII white space
(``suffixlm.io.WHITESPACE``: a no-break space is part of a column),
a blank line between sequences, the label in the last column.

Reading is streaming (:func:`iter_sequences` yields one sequence at a time).
A *sequence* is a list of token rows, a row is a list of column strings.

Documented behaviour on odd input:

- every row of a file must have the same number of columns; a ragged row raises
  :class:`DataError` naming the file and line;
- several blank lines in a row count as one separator; a file with no token line
  gives zero sequences (the training code refuses that with a clear error);
- lines whose first column is ``-DOCSTART-`` (CoNLL article boundaries) are kept
  as ordinary tokens by default (as Wapiti does); ``drop_docstart=True`` skips
  them as if they were not in the file, so a ``-DOCSTART-`` line that opens a
  sentence (CoNLL-2002 Dutch) leaves the rest of that sentence, and one that is a
  block of its own (CoNLL-2003) leaves no empty sequence;
- a label met at labelling/evaluation time that was not seen in training is kept
  as gold (it simply never matches a prediction, so it counts as an error);
- input is opened by :func:`suffixlm.io.open_input`: gzip content is decompressed
  whatever the file name, ``\r\n`` and lone ``\r`` line ends read as ``\n``, a
  leading byte-order mark skipped, a line longer than ``suffixlm.io.max_line_bytes()``
  refused, and invalid UTF-8 is reported with its true line number.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TextIO

from suffixlm.io import InputError, TextInput, open_input, split_words

__all__ = ["DataError", "iter_sequences", "read_sequences", "split_labels", "open_text"]


class DataError(InputError):
    """Bad CRF input data (message names the file and line)."""


def open_text(path: str | Path, mode: str = "r") -> TextInput | TextIO:
    """Open UTF-8 text; ``-`` is stdin/stdout.

    Reading (``"r"``): the lines of a plain or gzip file (``suffixlm.io.open_input``);
    invalid UTF-8 raises :class:`DataError` naming the file and line, a file that
    cannot be opened raises ``OSError``. Writing: a plain text file, or stdout.
    """
    if "r" in mode:
        return open_input(path, text=True, error=DataError)
    if str(path) == "-":
        return sys.stdout
    return open(path, mode, encoding="utf-8")


def iter_sequences(
    lines: Iterable[str], name: str = "<input>", n_columns: int | None = None, raw: list[str] | None = None,
    drop_docstart: bool = False, strings: dict[str, str] | None = None,
) -> Iterator[tuple[int, list[list[str]]]]:
    """Yield ``(first_line_number, rows)`` for each blank-line separated sequence.

    ``n_columns``: expected number of columns (None: fixed by the first row).
    ``raw``: if given, the text of each token line (without its line end) is
    appended to it, so callers can echo lines unchanged.
    ``drop_docstart``: skip lines whose first column is ``-DOCSTART-``.
    ``strings``: if given, every column string is replaced by the equal one kept there
    (added when new): a corpus held in memory keeps one object per distinct string
    (CoNLL-2000's 211,727 tokens: ~60 MB less).
    Raises DataError on ragged rows or undecodable bytes (lines from
    :func:`open_text` name the right line; a text stream of another kind that
    decodes ahead of the lines can only name the line after the last one read).
    """
    rows: list[list[str]] = []
    start = 0
    lineno = 0
    try:
        for lineno, line in enumerate(lines, 1):
            cols = split_words(line)
            if not cols:
                if rows:
                    yield start, rows
                    rows = []
                continue
            if drop_docstart and cols[0] == "-DOCSTART-":
                continue
            if n_columns is None:
                n_columns = len(cols)
            elif len(cols) != n_columns:
                raise DataError(
                    f"{name}:{lineno}: expected {n_columns} columns, found {len(cols)}"
                )
            if not rows:
                start = lineno
            if strings is not None:
                cols = [strings.setdefault(c, c) for c in cols]
            rows.append(cols)
            if raw is not None:
                raw.append(line.rstrip("\r\n"))
    except UnicodeDecodeError as exc:
        raise DataError(f"{name}:{lineno + 1}: not valid UTF-8 ({exc.reason})") from None
    if rows:
        yield start, rows


def read_sequences(path: str | Path, n_columns: int | None = None,
                   drop_docstart: bool = False) -> list[list[list[str]]]:
    """All sequences of a column file (``-`` for stdin) as a list of row lists."""
    with open_text(path) as fh:
        return [rows for _, rows in iter_sequences(fh, str(path), n_columns, drop_docstart=drop_docstart,
                                                   strings={})]


def split_labels(sequences: list[list[list[str]]]) -> tuple[list[list[list[str]]], list[list[str]]]:
    """Split the last column off: ``(X, y)`` with X rows without the label."""
    X = [[row[:-1] for row in seq] for seq in sequences]
    y = [[row[-1] for row in seq] for seq in sequences]
    return X, y
