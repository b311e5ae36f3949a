"""Value checks shared by the estimators' parameter checks and the model-file readers of
both packages (a JSON header's ints are Python ints; a parameter may be a numpy scalar),
and one declarative check of named values: a spec (name -> :class:`Field`: its kind,
range, choices, default) checked by :func:`check_fields`, which reports the first problem
through the caller's ``fail``, so that each caller keeps its own messages and errors;
:func:`check_header` is that check on a model file's JSON header."""

from __future__ import annotations

import math
import numbers
from typing import Any, Callable, NamedTuple

__all__ = ["is_finite", "is_int", "is_number", "Field", "REQUIRED", "UNEXPECTED", "MISSING", "KIND", "RANGE",
           "CHECK", "check_fields", "check_header", "shown"]


def is_int(v) -> bool:
    """An integer (Python's or numpy's), not a bool."""
    return isinstance(v, numbers.Integral) and not isinstance(v, bool)


def is_number(v) -> bool:
    """A real number (an integer or a float, Python's or numpy's), not a bool."""
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def is_finite(v) -> bool:
    """A real number that is neither infinite nor NaN."""
    return is_number(v) and math.isfinite(v)


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


#: the default of a field that must be present
REQUIRED: Any = _Required()

#: why a value fails (the second argument of ``fail``): a name the spec has not, a
#: required name absent, a value not of its field's kind, out of its range or choices,
#: or refused by its field's own ``check``
UNEXPECTED, MISSING, KIND, RANGE, CHECK = "unexpected", "missing", "kind", "range", "check"

#: kind -> (test, what a value of it is)
_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "any": (lambda v: True, "a value"),
    "int": (is_int, "an integer"),
    "number": (is_number, "a number"),
    "finite": (is_finite, "a finite number"),
    "str": (lambda v: isinstance(v, str), "a string"),
    "bool": (lambda v: isinstance(v, bool), "true or false"),
    "list": (lambda v: isinstance(v, list), "a list"),
    "dict": (lambda v: isinstance(v, dict), "an object"),
}


class Field(NamedTuple):
    """What one named value may be.

    kind     one of "any", "int", "number", "finite" (``is_int``, ``is_number``,
             ``is_finite``: bools are none of them), "str", "bool", "list", "dict"
    low, high, above   value >= low, <= high, > above (of a list: its length)
    choices  the values it may take
    none     None is valid too
    items    the kind of every item of a list
    default  the value of an absent name; ``REQUIRED``: it must be present
    what     what a valid value is, in the messages; "": said from kind, range and
             choices ("an integer in [0, 10]", "a finite number >= 0", "one of a, b")
    problem  the message of a value of another kind or out of range, if not the
             caller's: ``{key}`` the name, ``{v}`` the value shown, ``{what}``
    check    value -> what is wrong with it (the message), or None; run once the rest
             holds, in the spec's order (so it may read the names checked before it)
    """

    kind: str = "any"
    low: float | None = None
    high: float | None = None
    above: float | None = None
    choices: tuple = ()
    none: bool = False
    items: str | None = None
    default: Any = REQUIRED
    what: str = ""
    problem: str = ""
    check: Callable[[Any], str | None] | None = None

    def describe(self) -> str:
        """What a valid value is (``what``, or said from the constraints)."""
        if self.what:
            return self.what
        if self.choices:
            return "one of " + ", ".join(map(str, self.choices))
        text = _KINDS[self.kind][1]
        if self.low is not None and self.high is not None:
            return f"{text} in [{self.low}, {self.high}]"
        bounds = [f"{op} {b}" for op, b in ((">=", self.low), (">", self.above), ("<=", self.high)) if b is not None]
        return " ".join([text, *bounds])

    def reason(self, v) -> str | None:
        """``KIND``, ``RANGE`` or None (kind, range and choices hold; ``check`` not run)."""
        if v is None and self.none:
            return None
        if not _KINDS[self.kind][0](v) or (self.items is not None and not all(map(_KINDS[self.items][0], v))):
            return KIND
        n = len(v) if self.kind == "list" else v
        if ((self.low is not None and not n >= self.low) or (self.high is not None and not n <= self.high)
                or (self.above is not None and not n > self.above) or (self.choices and v not in self.choices)):
            return RANGE
        return None


def shown(v, width: int = 40) -> str:
    """``repr(v)``, cut to ``width`` characters (ending in "...")."""
    r = repr(v)
    return r if len(r) <= width else r[: width - 3] + "..."


def check_fields(mapping, spec: dict[str, Field], fail: Callable[[str, str, str], Any], *, known=(),
                 problem: str = "{v} is not {what}", show: Callable[[Any], str] = repr) -> dict:
    """The values of ``mapping`` for the names of ``spec`` (defaults filled in), checked in
    this order: no name outside ``spec`` and ``known``, every required name present, then
    each value in the spec's order (kind, range and choices, then its ``check``).

    A problem calls ``fail(key, reason, text)``: ``reason`` one of ``UNEXPECTED``,
    ``MISSING``, ``KIND``, ``RANGE``, ``CHECK``; ``text`` "unexpected entry 'k'",
    "missing entry 'k'", the field's ``problem`` (else ``problem``: ``{key}``, ``{v}``
    the value as ``show`` writes it, ``{what}``: :meth:`Field.describe`), or what the
    check returned. ``fail`` raises the caller's error; if it returns, checking goes on."""
    for key in mapping:
        if key not in spec and key not in known:
            fail(key, UNEXPECTED, f"unexpected entry {key!r}")
    for key, field in spec.items():
        if key not in mapping and field.default is REQUIRED:
            fail(key, MISSING, f"missing entry {key!r}")
    out = {}
    for key, field in spec.items():
        if key not in mapping:
            out[key] = field.default
            continue
        v = out[key] = mapping[key]
        why = field.reason(v)
        if why is not None:
            fail(key, why, (field.problem or problem).format(key=key, v=show(v), what=field.describe()))
        elif field.check is not None:
            text = field.check(v)
            if text is not None:
                fail(key, CHECK, text)
    return out


def check_header(path, meta: dict, spec: dict[str, Field], error: type[Exception], show=repr, known=()) -> dict:
    """:func:`check_fields` on the JSON header of the model file ``path`` (besides the
    container's ``format`` and ``version``, and ``known``): ``error`` with
    "PATH: header: unexpected entry 'k'", "PATH: header: missing entry 'k'" or
    "PATH: header entry 'k': <what is wrong>"."""
    def fail(key, reason, text):
        where = "header" if reason in (UNEXPECTED, MISSING) else f"header entry {key!r}"
        raise error(f"{path}: {where}: {text}")

    return check_fields(meta, spec, fail, known=("format", "version", *known), show=show)
