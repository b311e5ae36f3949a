"""The declarative checks of ``suffixlm.checks`` (``Field``, ``check_fields``, ``check_header``)
and the model-file modules of both packages (``suffixlm.modelfile``, ``crf.modelfile``)."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from suffixlm.checks import (CHECK, KIND, MISSING, RANGE, REQUIRED, UNEXPECTED, Field, check_fields, check_header,
                             shown)


def _raise(key, reason, text):
    raise ValueError((key, reason, text))


def _problem(mapping, spec, **kw):
    with pytest.raises(ValueError) as e:
        check_fields(mapping, spec, _raise, **kw)
    return e.value.args[0]


@pytest.mark.parametrize("field, what", [
    (Field("int"), "an integer"),
    (Field("int", low=0, high=10), "an integer in [0, 10]"),
    (Field("finite", low=0), "a finite number >= 0"),
    (Field("finite", above=0), "a finite number > 0"),
    (Field("number", high=1), "a number <= 1"),
    (Field("bool"), "true or false"),
    (Field("str", choices=("a", "b")), "one of a, b"),
    (Field("int", low=1, what="an integer >= 1 or None"), "an integer >= 1 or None"),
])
def test_a_field_says_what_a_valid_value_is(field, what):
    assert field.describe() == what


@pytest.mark.parametrize("field, value, reason", [
    (Field("int"), 3, None), (Field("int"), np.int64(3), None), (Field("int"), True, KIND),
    (Field("int"), np.bool_(True), KIND), (Field("int"), 3.0, KIND), (Field("int"), None, KIND),
    (Field("int", none=True), None, None), (Field("int", low=1), 0, RANGE), (Field("int", high=1), 2, RANGE),
    (Field("finite"), float("nan"), KIND), (Field("finite"), np.float32(1.5), None),
    (Field("number", low=0), float("nan"), RANGE), (Field("finite", above=0), 0, RANGE),
    (Field(choices=("a", "b")), "c", RANGE), (Field(choices=("a", "b")), ["a"], RANGE),
    (Field("str", choices=("a",)), 1, KIND), (Field("list", low=1), [], RANGE), (Field("list"), (1,), KIND),
    (Field("list", items="str"), ["a", 1], KIND), (Field("list", items="str"), ["a"], None),
    (Field("dict"), [], KIND), (Field("bool"), 1, KIND),
])
def test_a_field_tells_a_wrong_kind_from_a_value_out_of_range(field, value, reason):
    assert field.reason(value) == reason


SPEC = {"a": Field("int", low=0), "b": Field("str", default="x"), "c": Field("finite", none=True, default=None)}


def test_check_fields_fills_in_defaults_and_returns_the_values():
    assert check_fields({"a": 1}, SPEC, _raise) == {"a": 1, "b": "x", "c": None}
    assert check_fields({"a": 1, "b": "y", "c": 0.5, "z": 0}, SPEC, _raise, known=("z",)) == \
        {"a": 1, "b": "y", "c": 0.5}


def test_check_fields_reports_unexpected_then_missing_then_values_in_the_specs_order():
    assert _problem({"b": 1, "q": 0}, SPEC) == ("q", UNEXPECTED, "unexpected entry 'q'")
    assert _problem({"b": 1}, SPEC) == ("a", MISSING, "missing entry 'a'")
    assert _problem({"c": "no", "b": 1, "a": -1}, SPEC) == ("a", RANGE, "-1 is not an integer >= 0")
    assert _problem({"c": "no", "b": 1, "a": 0}, SPEC) == ("b", KIND, "1 is not a string")
    assert REQUIRED is Field().default and repr(REQUIRED) == "REQUIRED"


def test_the_message_shape_is_the_callers_or_the_fields():
    spec = {"n": Field("int", low=1), "s": Field(choices=("p", "q"), problem="unknown {key} {v}; expected {what}")}
    shape = "{key} must be {what}, got {v}"
    assert _problem({"n": 0, "s": "p"}, spec, problem=shape) == ("n", RANGE, "n must be an integer >= 1, got 0")
    assert _problem({"n": 1, "s": "z"}, spec, problem=shape) == ("s", RANGE, "unknown s 'z'; expected one of p, q")
    assert _problem({"n": "x" * 50, "s": "p"}, spec, show=shown)[2] == f"{shown('x' * 50)} is not an integer >= 1"


def test_a_fields_own_check_runs_once_the_rest_holds_and_may_read_earlier_values():
    seen = []

    def under_a(v):
        seen.append(v)
        return None if v < mapping["a"] else f"{v} is not under a"

    spec = {"a": Field("int"), "b": Field("int", check=under_a)}
    mapping = {"a": 2, "b": "no"}
    assert _problem(mapping, spec)[1] == KIND and seen == []
    mapping = {"a": 2, "b": 5}
    assert _problem(mapping, spec) == ("b", CHECK, "5 is not under a")
    mapping = {"a": 2, "b": 1}
    assert check_fields(mapping, spec, _raise) == mapping


def test_a_fail_that_returns_lets_the_check_go_on():
    found = []
    check_fields({"a": -1, "b": 2, "q": 0}, SPEC, lambda *p: found.append(p))
    assert [p[:2] for p in found] == [("q", UNEXPECTED), ("a", RANGE), ("b", KIND)]


def test_check_header_words_the_model_files_messages():
    class Bad(ValueError):
        pass

    spec = {"order": Field("int", low=1)}
    for meta, msg in (({"order": 0, "x": 1}, "f.npz: header: unexpected entry 'x'"),
                      ({"format": "f", "version": 1}, "f.npz: header: missing entry 'order'"),
                      ({"order": 0}, "f.npz: header entry 'order': 0 is not an integer >= 1")):
        with pytest.raises(Bad) as e:
            check_header("f.npz", meta, spec, Bad)
        assert str(e.value) == msg
    assert check_header("f.npz", {"format": "f", "version": 1, "sha": ""}, spec | {"order": Field(default=3)}, Bad,
                        known=("sha",)) == {"order": 3}


def test_shown_cuts_long_values():
    assert shown("ab") == "'ab'"
    assert shown("x" * 60) == repr("x" * 60)[:37] + "..." and len(shown("x" * 60)) == 40


def test_the_model_files_names_stay_importable_from_the_estimators_modules():
    import crf.model
    import crf.modelfile
    import suffixlm.model
    import suffixlm.modelfile

    for name in ("FORMAT", "FORMAT_VERSION", "ModelFormatError"):
        assert getattr(suffixlm.model, name) is getattr(suffixlm.modelfile, name)
    for name in ("FORMAT_NAME", "FORMAT_VERSION", "ModelError", "INPUT_KINDS", "MAX_COLUMNS", "MAX_TRANSITION_SCORE"):
        assert getattr(crf.model, name) is getattr(crf.modelfile, name)


def test_the_crf_model_and_its_file_load_no_numba():
    code = "import sys, crf.modelfile, crf.model, crf.cli; print('numba' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
