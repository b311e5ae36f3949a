"""Wapiti / CRF++ pattern files -> observation strings.

A pattern file has one pattern per line::

    # comment (a line whose first non-blank character is '#')
    U00:%x[-1,0]/%x[0,0]      unigram pattern (first letter u or U)
    b:%x[0,1]                 bigram pattern (first letter b or B)
    *:%x[0,0]                 both unigram and bigram features
    B                         the lone bigram pattern: pure label transitions

The first character gives the kind: ``u`` -> unigram features (y, x),
``b`` -> bigram features (y', y, x), ``*`` -> both, ``t`` -> trigram features
(y'', y', y, x) of a second-order model (an extension: Wapiti has none). In Sha &
Pereira's (2003) terms, where the label of a second-order model is the pair of tags
y = (c', c): ``u`` conjoins the observation with the current tag c(y), ``b`` with the
pair y, ``t`` with the transition between pairs (the tag triple).  The observation string of a
pattern at position t is the whole line with every command replaced by its value,
so ``U00:%x[-1,0]`` gives e.g. ``U00:the`` and the lone ``B`` gives ``B`` at every
position (one observation, hence the L x L transition block).

Commands:

- ``%x[off,col]``       the value of column ``col`` at row ``t + off``;
- ``%t[off,col,"re"]``  ``true`` / ``false``: does the regular expression match the
  value (anywhere; anchor with ``^``/``$``);
- ``%m[off,col,"re"]``  the substring the regular expression matches (empty if none).

**Row offset first**, as in CRF++ and in Wapiti's code (Wapiti's man page says
``[col,off]`` but its reader takes the offset first).  Positions outside the sequence
take Wapiti's padding values ``_x-1`` ... ``_x-4``, ``_x-#`` before the start and
``_x+1`` ... ``_x+4``, ``_x+#`` after the end.  Columns count from 0 over the
observation columns (the label column cannot be referenced).  As in Wapiti, ``off``
may also be written

- ``@n``: an absolute row, the same for every t: ``@1`` is the first row, ``@2`` the
  second, ``@-1`` the last, ``@-2`` the one before; ``@0`` is the padding before the
  start (``_x-1``);
- ``*c``: an indirect row: column ``c`` of the current row holds the offset, read as
  C's ``atoi`` reads it (leading white space, a sign, decimal digits; anything else
  reads as 0), so ``%x[*2,0]`` is column 0 at row ``t + int(column 2 at t)``.

An upper-case command letter (``%X``, ``%T``, ``%M``) lower-cases the command's result,
as Wapiti does: ``%M`` matches the value as it is and lower-cases the substring, ``%T``
is the same as ``%t`` (``^\\u`` still tests for a capital).

Regular expressions are Wapiti's small dialect, not Python's ``re`` (see
``crf._wapiti_regex``): ``.`` any character; classes ``\\a`` alphabetic, ``\\d`` digit,
``\\l`` lower case, ``\\u`` upper case, ``\\p`` punctuation, ``\\s`` space, ``\\w``
letter or digit, upper case for the complement (``\\D`` a non-digit); ``\\`` before any
other character makes it literal; ``*`` (lazy: fewest repetitions first) and ``?``
(greedy) after one character or class; ``^`` first and ``$`` last are anchors.
Nothing else is special: ``[``, ``(``, ``+``, ``|``, ``{`` are literal characters (a
:class:`PatternWarning` says so, as a pattern file written for ``re`` still parses).
``%m`` gives the match Wapiti gives: the leftmost start, then the first path of
Wapiti's backtracking (so ``%m[0,0,"\\d*"]`` is always empty and
``%m[0,0,"\\d\\d*$"]`` the digits the value ends with), found in time linear in the
length of the value.  ASCII characters are classified as C's ``<ctype.h>`` does
(Wapiti); other characters, which Wapiti sees as bytes outside every class, by
Python's ``str`` methods (``isalpha``, ``isdecimal``, ``islower``, ``isupper``,
``isspace``; punctuation: Unicode categories P* and S*), one character at a time.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from pathlib import Path

from ._wapiti_regex import RegexError, WapitiRegex, compile_regex

__all__ = ["PatternError", "PatternWarning", "Command", "Pattern", "parse_patterns", "read_patterns",
           "resolve_pattern_file", "expand_patterns", "UNIGRAM", "BIGRAM", "TRIGRAM"]

UNIGRAM = 1
BIGRAM = 2
TRIGRAM = 4

_PAD_BEFORE = ("_x-1", "_x-2", "_x-3", "_x-4", "_x-#")
_PAD_AFTER = ("_x+1", "_x+2", "_x+3", "_x+4", "_x+#")


class PatternError(ValueError):
    """Malformed pattern file or pattern referring to a missing column."""


class PatternWarning(UserWarning):
    """A regular expression using characters that are operators in Python's ``re`` but literal in Wapiti's."""


@dataclass(frozen=True)
class Command:
    """One ``%x``/``%t``/``%m`` command of a pattern.

    ``offset`` is a row offset, an absolute row (``absolute``: ``@offset``) or, for
    ``indirect`` (``*offset``), the column holding the row offset.
    """

    op: str  # "x", "t" or "m"
    lower: bool  # upper-case command letter: lower-case the result
    offset: int
    absolute: bool
    column: int
    regex: str | None = None
    indirect: bool = False


@dataclass(frozen=True)
class Pattern:
    """A parsed pattern: ``kind`` (UNIGRAM | BIGRAM bit mask, or TRIGRAM), literal pieces and commands.

    ``pieces`` has ``len(commands) + 1`` literal strings; the observation string is
    ``pieces[0] + v0 + pieces[1] + v1 + ...``.
    """

    kind: int
    text: str
    pieces: tuple[str, ...]
    commands: tuple[Command, ...]


_CMD_RE = re.compile(r'%([xtmXTM])\[\s*([@*]?)\s*([+-]?\d+)\s*,\s*(\d+)\s*(?:,\s*"((?:[^"\\]|\\.)*)"\s*)?\]')


@lru_cache(maxsize=None)
def _compiled(regex: str) -> WapitiRegex:
    return compile_regex(regex)


def _parse_line(text: str, where: str) -> Pattern:
    first = text[0].lower()
    if first == "u":
        kind = UNIGRAM
    elif first == "b":
        kind = BIGRAM
    elif first == "*":
        kind = UNIGRAM | BIGRAM
    elif first == "t":
        kind = TRIGRAM
    else:
        raise PatternError(f"{where}: a pattern must start with 'u', 'b', '*' or 't', got {text[0]!r}")
    pieces: list[str] = []
    commands: list[Command] = []
    pos = 0
    for m in _CMD_RE.finditer(text):
        op = m.group(1)
        regex = m.group(5)
        if op.lower() in "tm" and regex is None:
            raise PatternError(f'{where}: %{op} needs a regular expression: %{op}[off,col,"re"]')
        if op.lower() == "x" and regex is not None:
            raise PatternError(f"{where}: %x takes [off,col] only")
        if regex is not None:
            try:
                rx = _compiled(regex)
            except RegexError as exc:
                raise PatternError(f"{where}: bad regular expression {regex!r}: {exc}") from None
            if rx.literal_re_operators:
                chars = " ".join(rx.literal_re_operators)
                warnings.warn(f"{where}: in {regex!r}, {chars} match themselves: Wapiti's regular expressions "
                              f"have no classes, groups, '+' or '|' (escape them, e.g. \\[, to say so)",
                              PatternWarning, stacklevel=3)
        offset = int(m.group(3))
        if m.group(2) == "*" and offset < 0:
            raise PatternError(f"{where}: %{op}[*{offset},...]: the column holding the row offset cannot be negative")
        pieces.append(text[pos : m.start()])
        commands.append(Command(op.lower(), op.isupper(), offset, m.group(2) == "@", int(m.group(4)), regex,
                                m.group(2) == "*"))
        pos = m.end()
    pieces.append(text[pos:])
    for piece in pieces:
        bad = re.search(r"%[xtmXTM]", piece)
        if bad:
            raise PatternError(f"{where}: malformed command near {piece[bad.start():bad.start() + 12]!r}")
    return Pattern(kind, text, tuple(pieces), tuple(commands))


def parse_patterns(text: str, name: str = "<patterns>") -> list[Pattern]:
    """Parse the text of a pattern file (see module docstring)."""
    patterns = []
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), 1):  # not str.splitlines: \x0c, \x85, U+2028
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        patterns.append(_parse_line(stripped, f"{name}:{lineno}"))
    if not patterns:
        raise PatternError(f"{name}: no pattern found")
    return patterns


def read_patterns(path: str | Path) -> tuple[str, list[Pattern]]:
    """Read a pattern file: ``(text, patterns)``. The text convention of every reader
    (``suffixlm.io.open_input``): ``\\n``, ``\\r\\n`` or a lone ``\\r`` ends a line (the
    text comes back with ``\\n``), a leading byte-order mark is skipped, invalid UTF-8 and
    a line longer than ``suffixlm.io.max_line_bytes()`` are refused naming the line."""
    from suffixlm.io import InputError, open_error_message, open_input

    try:
        with open_input(path, text=True, error=PatternError) as fh:
            text = fh.read()
    except OSError as exc:
        raise PatternError(open_error_message(path, exc)) from None
    except InputError as exc:
        raise PatternError(str(exc)) from None
    return text, parse_patterns(text, str(path))


def resolve_pattern_file(name: str | os.PathLike) -> str:
    """The pattern file ``-p NAME`` means: ``NAME`` itself when it exists, else, for a bare
    name (no folder), the pattern file suffixlm ships under that name, with or without
    ``.pat`` (``"chunk"``, ``"ner.pat"``: ``suffixlm patterns`` lists them), found in the
    installed package. Otherwise :class:`PatternError`, one line naming the shipped files.
    """
    text = os.fspath(name)
    if os.path.exists(text) or os.path.islink(text):  # a link loop or to nothing: read_patterns says which
        return text
    from suffixlm.corpora import pattern_files

    shipped = pattern_files()
    if os.path.basename(text) == text:
        key = text[:-len(".pat")] if text.endswith(".pat") else text
        if key in shipped:
            return str(shipped[key])
    raise PatternError(f"{text}: no such file, nor a shipped pattern file of that name "
                       f"(shipped: {', '.join(shipped)}; `suffixlm patterns` lists them)")


def max_column(patterns: list[Pattern]) -> int:
    """Largest column index used by the patterns (-1 if none)."""
    return max((max(c.column, c.offset) if c.indirect else c.column for p in patterns for c in p.commands),
               default=-1)


_ATOI_RE = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")


def _atoi(value: str) -> int:
    """C's ``atoi`` (what Wapiti reads an indirect offset with): 0 where no number starts the string."""
    m = _ATOI_RE.match(value)
    return int(m.group(1)) if m else 0


def _shifted(columns: list[list[str]], bounds: list[tuple[int, int]], cmd: Command) -> list[str]:
    """Value of column ``cmd.column`` at the commanded row for every token of the corpus."""
    column = columns[cmd.column]
    out: list[str] = []
    off = cmd.offset
    if cmd.indirect:
        offsets = columns[off]
        for s, e in bounds:
            T = e - s
            for t in range(T):
                i = t + _atoi(offsets[s + t])
                out.append(_PAD_BEFORE[min(-i - 1, 4)] if i < 0 else
                           _PAD_AFTER[min(i - T, 4)] if i >= T else column[s + i])
        return out
    for s, e in bounds:
        T = e - s
        if cmd.absolute:
            i = off - 1 if off >= 0 else T + off  # Wapiti: @1 is the first row, @-1 the last
            if i < 0:
                v = _PAD_BEFORE[min(-i - 1, 4)]
            elif i >= T:
                v = _PAD_AFTER[min(i - T, 4)]
            else:
                v = column[s + i]
            out.extend([v] * T)
            continue
        if off == 0:
            out.extend(column[s:e])
        elif off > 0:
            k = min(off, T)
            out.extend(column[s + k : e])
            out.extend(_PAD_AFTER[min(i, 4)] for i in range(off - k, off))
        else:
            k = min(-off, T)
            out.extend(_PAD_BEFORE[min(i, 4)] for i in range(-off - 1, -off - 1 - k, -1))
            out.extend(column[s : e - k])
    return out


def _apply(values: list[str], cmd: Command) -> list[str]:
    """The command's result for every value; matching is done once per distinct value."""
    if cmd.op == "x":
        if cmd.lower:
            cache_l: dict[str, str] = {}
            values = [cache_l.get(v) or cache_l.setdefault(v, v.lower()) for v in values]
        return values
    rx = _compiled(cmd.regex)  # type: ignore[arg-type]
    cache: dict[str, str] = {}
    out = []
    for v in values:
        r = cache.get(v)
        if r is None:
            if cmd.op == "t":
                r = "true" if rx.search(v) is not None else "false"
            else:
                # Wapiti lower-cases %M's result, not the value it matches
                r = rx.first_match(v).lower() if cmd.lower else rx.first_match(v)
            cache[v] = r
        out.append(r)
    return out


def expand_patterns(
    patterns: list[Pattern], columns: list[list[str]], lengths: list[int], name: str = "<input>"
) -> Iterator[list[str]]:
    """Observation strings of every pattern at every token (a generator, one list per pattern).

    ``columns[c]`` is the list of column-c values of all tokens of the corpus
    (sequences concatenated), ``lengths`` the sequence lengths.  Returns, for each
    pattern, the list of its observation strings over all tokens.
    """
    bounds = []
    s = 0
    for T in lengths:
        bounds.append((s, s + T))
        s += T
    for p in patterns:
        for cmd in p.commands:
            for col in (cmd.column, cmd.offset) if cmd.indirect else (cmd.column,):
                if col >= len(columns):
                    raise PatternError(
                        f"pattern {p.text!r} uses column {col} but {name} has "
                        f"{len(columns)} observation column(s) (columns count from 0)"
                    )
    return _expand(patterns, columns, bounds, s)


def _expand(patterns, columns, bounds, s) -> Iterator[list[str]]:
    cache: dict[Command, list[str]] = {}
    for p in patterns:
        lists = []
        for cmd in p.commands:
            vals = cache.get(cmd)
            if vals is None:
                vals = cache[cmd] = _apply(_shifted(columns, bounds, cmd), cmd)
            lists.append(vals)
        if not lists:
            yield [p.pieces[0]] * s
            continue
        if len(lists) == 1 and not p.pieces[1]:
            yield list(map(p.pieces[0].__add__, lists[0]))
            continue
        parts: list = []
        for piece, vals in zip(p.pieces, lists + [None]):
            if piece:
                parts.append(repeat(piece))
            if vals is not None:
                parts.append(vals)
        yield list(map("".join, zip(*parts)))
