"""Wapiti's regular expressions (``%t`` / ``%m`` pattern commands), matched in linear time.

The dialect is the one of Wapiti's ``src/pattern.c`` (``rex_match``):

- ``.`` any character; any other character matches itself;
- ``\\x`` a class: ``\\a`` alphabetic, ``\\d`` digit, ``\\l`` lower case, ``\\u`` upper case,
  ``\\p`` punctuation, ``\\s`` white space, ``\\w`` alphanumeric (``\\a`` or ``\\d``: no
  ``_``), the upper-case letter (``\\A`` ... ``\\W``) the complement; a backslash before
  any other character makes it literal (``\\.``, ``\\*``, ``\\\\``; ``\\t`` is a ``t``);
- ``*`` (any number of) and ``?`` (at most one) after a single atom (character, ``.``
  or class); nothing else is special: no groups, ``+``, ``|``, brackets or braces;
- ``^`` as the first character anchors at the start, ``$`` as the last at the end;
  anywhere else they are literal characters.

Which match (what ``%m`` returns): Wapiti's backtracking matcher tries start positions
left to right and returns the first path it finds, trying ``X?`` with the ``X`` first
(greedy) and ``X*`` with the fewest repetitions first (lazy: ``\\d*`` always matches the
empty string at 0, ``\\d\\d*`` on ``a123`` gives ``1``).  :class:`WapitiRegex` gives the
same (start, end) by simulating the NFA of the atoms with thread priorities (a Pike VM:
R. Cox, "Regular Expression Matching: the Virtual Machine Approach", 2009), in
O(len(text) * n_atoms) time where the backtracking takes exponential time on patterns
such as ``a*a*a*a*b``.  Where backtracking is linear too (no ``*``, or one ``*`` after
``^``) and the text is Latin-1, the same search is run by Python's ``re`` on an
equivalent pattern (``X*?`` for ``X*``, each atom as its set of Latin-1 characters):
the usual prefix, suffix and shape tests, at C speed.

Where this differs from Wapiti, on purpose:

- characters, not bytes: Wapiti matches UTF-8 bytes (``.`` takes one byte of ``é``);
  here ``.``, a class or a literal matches one Unicode character.  ASCII characters are
  classified exactly as C's ``<ctype.h>`` in the "C" locale (Wapiti's behaviour);
  other characters by Python's ``str`` methods: ``\\a`` ``isalpha``, ``\\d``
  ``isdecimal``, ``\\l`` ``islower``, ``\\u`` ``isupper``, ``\\s`` ``isspace``, ``\\w``
  ``\\a`` or ``\\d``, ``\\p`` Unicode category P* (punctuation) or S* (symbol), which
  on ASCII is exactly C's ``ispunct``.  (In Wapiti no byte >= 0x80 is in any class.)
- Wapiti's ``%m`` length bookkeeping is not restored after a failed ``X?`` branch, so
  e.g. ``a?ab`` on ``ab`` makes Wapiti copy 3 bytes (past the match); here the match
  is always the substring the successful path consumed.
- a ``*`` or ``?`` with no atom before it (``*a``, ``a**``, ``^?``) and a trailing lone
  backslash are errors when the expression is compiled; Wapiti stops with "unescaped *
  or ?" only when a match attempt reaches them, and reads past the end of a trailing
  backslash.
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["RegexError", "WapitiRegex", "compile_regex"]

# C "C"-locale <ctype.h> classes on ASCII (string.punctuation is exactly ispunct).
_ASCII_ALPHA = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_DIGIT = frozenset("0123456789")
_ASCII_LOWER = frozenset("abcdefghijklmnopqrstuvwxyz")
_ASCII_UPPER = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_ASCII_PUNCT = frozenset("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")
_ASCII_SPACE = frozenset(" \t\n\v\f\r")


def _is_alpha(c: str) -> bool:
    return c in _ASCII_ALPHA if c < "\x80" else c.isalpha()


def _is_digit(c: str) -> bool:
    return c in _ASCII_DIGIT if c < "\x80" else c.isdecimal()


def _is_lower(c: str) -> bool:
    return c in _ASCII_LOWER if c < "\x80" else c.islower()


def _is_upper(c: str) -> bool:
    return c in _ASCII_UPPER if c < "\x80" else c.isupper()


def _is_punct(c: str) -> bool:
    return c in _ASCII_PUNCT if c < "\x80" else unicodedata.category(c)[0] in "PS"


def _is_space(c: str) -> bool:
    return c in _ASCII_SPACE if c < "\x80" else c.isspace()


def _is_alnum(c: str) -> bool:
    return _is_alpha(c) or _is_digit(c)


CLASSES = {"a": _is_alpha, "d": _is_digit, "l": _is_lower, "u": _is_upper, "p": _is_punct, "s": _is_space,
           "w": _is_alnum}
"""Class letter -> predicate on one character; the upper-case letter is the complement."""


def _complement(pred):
    return lambda c: not pred(c)


_CLASS_TESTS = {**CLASSES, **{k.upper(): _complement(v) for k, v in CLASSES.items()}}


def _any(c: str) -> bool:
    return True


class RegexError(ValueError):
    """A string that is not a regular expression of Wapiti's dialect."""


# Characters that are operators in Python's ``re`` but literal here: a pattern file
# written for ``re`` still compiles, with another meaning.
_RE_ONLY = "[](){}+|"


class WapitiRegex:
    """A compiled Wapiti regular expression.

    ``atoms`` are ``(text, quantifier)`` pairs (``quantifier`` in ``""``, ``"*"``,
    ``"?"``), ``anchored_start`` / ``anchored_end`` the ``^`` / ``$`` anchors.
    """

    __slots__ = ("pattern", "atoms", "anchored_start", "anchored_end", "literal_re_operators", "_tests",
                 "_quantifiers", "_backtracking")

    def __init__(self, pattern: str):
        self.pattern = pattern
        atoms: list[tuple[str, str]] = []
        tests = []
        operators: list[str] = []
        i, n = 0, len(pattern)
        self.anchored_start = n > 0 and pattern[0] == "^"
        self.anchored_end = False
        if self.anchored_start:
            i = 1
        while i < n:
            c = pattern[i]
            if c == "$" and i == n - 1:
                self.anchored_end = True
                break
            if c in "*?":
                before = "the start anchor '^'" if i == 1 and self.anchored_start else (
                    "nothing" if i == 0 else f"another {pattern[i - 1]!r}")
                raise RegexError(f"{c!r} at position {i} of {pattern!r} follows {before}: '*' and '?' "
                                 f"repeat the single character or class before them (write \\{c} for a literal {c})")
            if c == "\\":
                if i + 1 == n:
                    raise RegexError(f"{pattern!r} ends with a lone backslash (write \\\\ for a literal backslash)")
                e = pattern[i + 1]
                tests.append(_CLASS_TESTS.get(e) or e.__eq__)
                text = pattern[i : i + 2]
                i += 2
            else:
                tests.append(_any if c == "." else c.__eq__)
                if c in _RE_ONLY and c not in operators:
                    operators.append(c)
                text = c
                i += 1
            quantifier = ""
            if i < n and pattern[i] in "*?":
                quantifier = pattern[i]
                i += 1
            atoms.append((text, quantifier))
        self.atoms = tuple(atoms)
        self.literal_re_operators = "".join(operators)
        self._tests = tuple(tests)
        self._quantifiers = tuple(q for _, q in atoms)
        self._backtracking = _as_python_re(self)

    def __repr__(self) -> str:
        return f"WapitiRegex({self.pattern!r})"

    def search(self, text: str) -> tuple[int, int] | None:
        """``(start, end)`` of the match Wapiti's matcher finds in ``text``, or None."""
        if self._backtracking is not None and (not text or max(text) <= "\xff"):
            found = self._backtracking.search(text)
            return None if found is None else found.span()
        return self._search_nfa(text)

    def _search_nfa(self, text: str) -> tuple[int, int] | None:
        """:meth:`search` by a Pike VM.

        State i < m waits to match atom i, state m is the match.  ``threads`` holds
        (state, start of its match) best first; a state entered twice at one position
        keeps its first (best) thread, so a step costs O(m) and a search O(len(text) m).
        """
        n = len(text)
        tests, quantifiers = self._tests, self._quantifiers
        m = len(tests)
        end_anchor = self.anchored_end
        unanchored = not self.anchored_start
        nxt: list[tuple[int, int]] = []
        seen: set[int] = set()

        def enter(j: int, start: int, q: int) -> None:
            # follow the moves that consume nothing from state j at position q, best first:
            # "X?" tries X before skipping it (greedy), "X*" skips X before trying it (lazy)
            stars = []
            while j not in seen:
                seen.add(j)
                if j == m:
                    if not end_anchor or q == n:
                        nxt.append((m, start))
                    break
                quantifier = quantifiers[j]
                if quantifier == "*":
                    stars.append(j)
                else:
                    nxt.append((j, start))
                    if quantifier == "":
                        break
                j += 1
            for j in reversed(stars):
                nxt.append((j, start))

        enter(0, 0, 0)
        threads = nxt
        best = None
        p = 0
        while True:
            nxt = []
            seen = set()
            ch = text[p] if p < n else ""
            for s, start in threads:
                if s == m:
                    best = (start, p)
                    break  # every later thread has a lower priority
                if ch and tests[s](ch):
                    enter(s if quantifiers[s] == "*" else s + 1, start, p + 1)
            if p == n:
                return best
            p += 1
            if best is None and unanchored:
                enter(0, p, p)  # Wapiti's next start position: the lowest priority
            elif not nxt:
                return best
            threads = nxt

    def test(self, text: str) -> bool:
        """Whether the expression matches anywhere in ``text`` (``%t``)."""
        return self.search(text) is not None

    def first_match(self, text: str) -> str:
        """The substring ``%m`` gives: the match found, or ``""`` if none."""
        r = self.search(text)
        return "" if r is None else text[r[0] : r[1]]


_LATIN1 = [chr(i) for i in range(256)]


def _as_python_re(rx: WapitiRegex) -> re.Pattern | None:
    """The same search as a Python ``re`` pattern, valid on text of Latin-1 characters only,
    where backtracking stays linear in the text's length; None elsewhere.

    ``re`` tries start positions left to right and ``X?`` / ``X*?`` in Wapiti's order,
    so it finds the same match; each atom becomes the set of Latin-1 characters it
    matches.  With no ``*``, or one ``*`` and the ``^`` anchor, a search takes at most
    O(len(text) * 2**n_optional * n_atoms) steps; with more stars backtracking can take
    O(len(text)**n_stars) and the Pike VM is used.
    """
    quantifiers = rx._quantifiers
    n_stars = quantifiers.count("*")
    if quantifiers.count("?") > 6 or n_stars > (1 if rx.anchored_start else 0):
        return None
    parts = ["^" if rx.anchored_start else ""]
    for test, quantifier in zip(rx._tests, quantifiers):
        chars = "".join(c for c in _LATIN1 if test(c))
        # an atom matching no Latin-1 character: a class of the characters above U+00FF
        parts.append("[" + re.escape(chars) + "]" if chars else "[^\\x00-\\xff]")
        parts.append("*?" if quantifier == "*" else quantifier)
    parts.append("\\Z" if rx.anchored_end else "")
    return re.compile("".join(parts))


def compile_regex(pattern: str) -> WapitiRegex:
    """Compile ``pattern`` (Wapiti's dialect, see the module docstring); :class:`RegexError` if malformed."""
    return WapitiRegex(pattern)
