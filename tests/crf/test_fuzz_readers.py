"""Fuzz tests of every crf reader: mutated copies of valid files.

Readers: CoNLL column files (``crf.data.read_sequences``, plain and gzip), pattern files
(``crf.patterns.read_patterns`` / ``parse_patterns``, then ``expand_patterns``), and CRF
model files (``crf.CRF.load``).

The text mutations include those toward the text convention's paths (lone CR and CRLF
line ends, a byte-order mark, an over-long line) and run under a small
``$SUFFIXLM_MAX_LINE_BYTES`` in some examples: a line longer than the bound is refused
naming the file and line, and only such a line. Several pattern files given to ``crf
train -p A -p B`` are read by ``crf.cli._concatenated``, which must read as
``read_patterns`` does.

Property: a mutated file gives the reader's own error (``DataError``, ``PatternError``,
``ModelError``, all ``ValueError``) naming the file, or a result equal to the reference
one: for column and pattern files, what a plain-Python reading of the same bytes gives
(which a model then labels, or which expands over a corpus); for model files, the
labels and marginals of fixed sequences, equal to the unmutated model's. A model file's
checksum is also recomputed after the mutation (an attacker's or a careless tool's
edit): then the loader's own checks must refuse the file, or the model must label and
give marginals that sum to one. Never another exception, a crash or a hang. The
mutations and their replay are in ``tests/fuzz_util.py``.

The tests after the fuzz tests replay what the fuzz tests found, one case each, and
check in a child process that tampered model arrays never crash the interpreter.
"""

import json
import math
import re
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from suffixlm.corpora import sample_path

from crf import CRF, ModelError
from crf.data import DataError, read_sequences, split_labels
from crf.modelfile import digest, digest_v1
from crf.cli import _concatenated
from crf.patterns import PatternError, PatternWarning, expand_patterns, parse_patterns, read_patterns
from suffixlm.io import GZIP_MAGIC

from ..fuzz_util import (
    BYTE_MUTATION,
    BYTE_MUTATIONS,
    CONTAINER_MUTATIONS,
    CONVENTION_MUTATION,
    LINE_LIMITS,
    check_line_limit,
    convention_text,
    fuzz_settings,
    gunzip_or_none,
    gzip_bytes,
    line_limit,
    line_mutations,
    mutate_bytes,
    mutate_container,
    mutate_lines,
    read_container,
    watchdog,
    write_container,
)
from .conftest import TINY

CONLL = TINY + '\nthe DT B-NP\naccount NN I-NP\nreckons VBZ B-VP\n. . O\n'  # one more sentence
TEST_X = [[["He", "PRP"], ["sells", "VBZ"], ["the", "DT"], ["current", "JJ"], ["deficit", "NN"]],
          [["of", "IN"], ["zebra", "XX"]], [["Exchequer", "NNP"]]]
TOKENS = [b"He", b"the", b"B-NP", b"O", b"-DOCSTART-", b"\xff", b"\xc3\xa9", b"", b"a\x00b", b"\xe2\x80\xa8",
          b"\xc2\xa0", b"x y", b"\t"]
PATTERN_TOKENS = [b"%x[0,0]", b"%x[-1,5]", b"%x[@0,0]", b"%x[@-1,1]", b"%x[*1,0]", b"%x[*-1,0]", b"%x[*9,0]",
                  b'%t[0,0,"\\d"]', b'%m[0,0,"^..$"]', b'%M[0,0,"["]', b'%t[0,0,"\\"]', b'%m[0,0,"*?"]',
                  b"%x[99999999999999999999,0]", b"%x[0,99999999999999999999]", b"%x[@99999999999,0]",
                  b"%x[-99999999999,1]", b"%X", b"%", b"%x[0,0", b"[", b'"', b"\\", b"u", b"b", b"B", b"*", b"#",
                  b"U:", b"\xff", b"\xc3\xa9"]


# ---------------------------------------------------------------------- fixtures
class ValidFiles(dict):
    """The fixture's files by name, with a short repr for hypothesis' reports."""

    def __repr__(self):
        return "<valid files>"


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The valid files, and a directory for the mutated ones."""
    return valid_files(tmp_path_factory.mktemp("fuzz_crf"))


def valid_files(d):
    data = d / "train.txt"
    data.write_text(CONLL, encoding="utf-8")
    X, y = split_labels(read_sequences(data))
    pattern_file = sample_path("patterns/chunk.pat")
    model = CRF(patterns=str(pattern_file), rho1=0.01, max_iter=30).fit(X, y)
    model.save(d / "m.crf")
    out = d / "out"
    out.mkdir()
    return ValidFiles(dir=out, conll=CONLL.encode("utf-8"), model=model, model_bytes=(d / "m.crf").read_bytes(),
                      patterns={name: sample_path(f"patterns/{name}").read_bytes() for name in ("chunk.pat", "ner.pat")},
                      X=X, outputs=labelling(model))


def write(files, name, data):
    p = files["dir"] / name
    p.write_bytes(data)
    return p


def read_or_error(read, path, classes, data=None, limit=None):
    """``read()``, or None when it raises one of ``classes`` naming ``path``. Any other
    exception propagates (the test fails with it). With ``data`` (the bytes of ``path``):
    read under ``$SUFFIXLM_MAX_LINE_BYTES`` = ``limit`` and checked by ``check_line_limit``."""
    error = None
    with watchdog(), warnings.catch_warnings(), line_limit(limit):
        warnings.simplefilter("ignore", PatternWarning)
        try:
            result = read()
        except classes as e:
            if str(path) not in str(e):
                raise AssertionError(f"the error does not name {path}: {type(e).__name__}: {e}") from e
            error, result = str(e), None
    if data is not None:
        check_line_limit(error, path, data, limit)
    return result


def labelling(model):
    """What a model says about TEST_X: labels, marginals, the 3 best labellings."""
    return model.predict(TEST_X), model.predict_marginals(TEST_X), model.predict_nbest(TEST_X[:1], 3)


def check_labels(model):
    """A model read from a file labels TEST_X, with marginals that sum to one and n-best
    labellings of decreasing probability (or refuses TEST_X for its number of columns)."""
    if model.space_.n_columns != 2:
        with pytest.raises(ValueError, match="column"):
            model.predict(TEST_X)
        return
    labels, marginals, nbest = labelling(model)
    for x, lab, marg in zip(TEST_X, labels, marginals):
        assert len(lab) == len(marg) == len(x) and set(lab) <= set(model.classes_)
        for m in marg:
            v = np.array(list(m.values()))
            assert np.all(np.isfinite(v)) and math.isclose(float(v.sum()), 1.0, rel_tol=1e-9), m
    lp = [p for _, p in nbest[0]]
    assert np.all(np.isfinite(lp)) and all(a >= b for a, b in zip(lp, lp[1:])) and lp[0] <= 1e-9, lp


# ---------------------------------------------------------------------- CoNLL column files
def reference_sequences(data: bytes, drop_docstart: bool):
    """The sequences of a column file as a plain-Python reading gives them (the text
    convention: a BOM skipped, lines ending at ``\\n``, ``\\r\\n`` or ``\\r``, columns split
    on ASCII white space only); None where the reader must refuse it (damaged gzip,
    invalid UTF-8, ragged rows)."""
    if data[:2] == GZIP_MAGIC:
        data = gunzip_or_none(data)
        if data is None:
            return None
    try:
        text = convention_text(data).decode("utf-8")
    except UnicodeDecodeError:
        return None
    seqs, rows, n_cols = [], [], None
    for line in text.split("\n"):
        cols = [c for c in re.split("[ \t\x0b\x0c]+", line) if c]
        if not cols:
            if rows:
                seqs.append(rows)
            rows = []
            continue
        if drop_docstart and cols[0] == "-DOCSTART-":
            continue
        if n_cols is None:
            n_cols = len(cols)
        elif len(cols) != n_cols:
            return None
        rows.append(cols)
    if rows:
        seqs.append(rows)
    return seqs


@fuzz_settings(200)
@given(mutations=st.lists(line_mutations(TOKENS) | BYTE_MUTATION | CONVENTION_MUTATION, min_size=1, max_size=4),
       gz=st.booleans(), drop_docstart=st.booleans(), limit=LINE_LIMITS)
def test_fuzz_column_file(files, mutations, gz, drop_docstart, limit):
    """read_sequences: a mutated CoNLL file (lines swapped, deleted, duplicated or
    blanked, columns replaced, added or removed, bytes flipped, inserted, deleted,
    truncated), plain or gzip, reads as a plain-Python reading of its bytes does, or
    raises DataError naming it; the model then labels what was read."""
    data = mutate_lines(files["conll"], mutations)
    p = write(files, "data.txt.gz" if gz else "data.txt", gzip_bytes(data) if gz else data)
    seqs = read_or_error(lambda: read_sequences(p, drop_docstart=drop_docstart), p, DataError, data, limit)
    if seqs is None:
        return
    want = reference_sequences(data, drop_docstart)
    assert want is not None, "read a file with ragged rows or invalid UTF-8 without an error"
    assert seqs == want
    X, y = split_labels(seqs)
    if X and len(X[0][0]) == 2:
        with watchdog():
            labels = files["model"].predict(X)
        assert [len(s) for s in labels] == [len(s) for s in X]


@fuzz_settings(80)
@given(mutations=BYTE_MUTATIONS)
def test_fuzz_gzip_column_file(files, mutations):
    """The bytes of a gzip column file mutated: DataError naming it, or the sequences of
    what Python's gzip module reads from it."""
    data = mutate_bytes(gzip_bytes(files["conll"]), mutations)
    p = write(files, "data.gz", data)
    seqs = read_or_error(lambda: read_sequences(p), p, DataError)
    if seqs is not None:
        want = reference_sequences(data, False)
        assert want is not None, "read a damaged gzip stream without an error"
        assert seqs == want


# ---------------------------------------------------------------------- pattern files
def reference_pattern_lines(data: bytes):
    """The pattern lines of a file (the text convention's lines, stripped; no blank or
    comment line), None where the reader must refuse it (invalid UTF-8)."""
    try:
        text = convention_text(data).decode("utf-8")
    except UnicodeDecodeError:
        return None
    return [line.strip() for line in text.split("\n") if line.strip() and not line.strip().startswith("#")]


@fuzz_settings(200)
@given(name=st.sampled_from(["chunk.pat", "ner.pat"]), limit=LINE_LIMITS,
       mutations=st.lists(line_mutations(PATTERN_TOKENS) | BYTE_MUTATION | CONVENTION_MUTATION, min_size=1,
                          max_size=4))
def test_fuzz_pattern_file(files, name, mutations, limit):
    """read_patterns: a mutated pattern file (commands replaced by malformed ones, huge
    or negative offsets and columns, bad regular expressions, lines swapped, bytes
    changed) gives PatternError naming it, or one pattern per non-comment line; those
    expand over a corpus (or PatternError for a column it lacks) into one observation
    string per token."""
    data = mutate_lines(files["patterns"][name], mutations)
    p = write(files, name, data)
    got = read_or_error(lambda: read_patterns(p), p, PatternError, data, limit)
    if got is None:
        return
    text, patterns = got
    want = reference_pattern_lines(data)
    assert want is not None, "read a pattern file that is not UTF-8 without an error"
    assert [pat.text for pat in patterns] == want
    # `crf train -p A -p B` reads the files' lines as read_patterns does
    with line_limit(limit):
        assert [pat.text for pat in parse_patterns("\n".join(_concatenated([p, p])))] == want + want
    X = files["X"]
    columns = [[row[c] for seq in X for row in seq] for c in range(2)]
    with watchdog(), warnings.catch_warnings():
        warnings.simplefilter("ignore", PatternWarning)
        try:
            observations = list(expand_patterns(patterns, columns, [len(s) for s in X], "data"))
        except PatternError as e:
            assert "column" in str(e), e
            return
    assert len(observations) == len(patterns)
    for obs in observations:
        assert len(obs) == len(columns[0]) and all(isinstance(s, str) for s in obs)


# ---------------------------------------------------------------------- model files
def check_model_load(files, path, may_differ):
    """``path`` loads as a model labelling TEST_X as the original does (or, if
    ``may_differ``, as some working model), or raises ModelError naming it."""
    m = read_or_error(lambda: CRF.load(path), path, ModelError)
    if m is None:
        return
    with watchdog():
        if may_differ:
            check_labels(m)
        else:
            got = labelling(m)
            assert got == files["outputs"]


@fuzz_settings(150)
@given(mutations=BYTE_MUTATIONS)
def test_fuzz_model_file_bytes(files, mutations):
    """CRF.load: a model file with bytes flipped, inserted, deleted, duplicated or cut
    off gives ModelError naming it, or loads and labels as the original."""
    p = write(files, "bytes.crf", mutate_bytes(files["model_bytes"], mutations))
    check_model_load(files, p, False)


#: what the checksum alone protects: with it recomputed, other values make another model
FREE = {"theta", "obs_blob", "obs_offsets", "kinds", "meta:labels", "meta:patterns", "meta:n_columns", "meta:*"}


def rehashed(members):
    """The members with the header's sha256 recomputed over the mutated content (left
    as it is where it cannot be: a header that is not JSON, a member not an array)."""
    try:
        meta = json.loads(members["meta"].tobytes())
        arrays = {k: members[k] for k in ("obs_blob", "obs_offsets", "kinds", "theta")}
        if not isinstance(meta, dict) or not all(isinstance(a, np.ndarray) for a in arrays.values()):
            return members
        meta["sha256"] = digest_v1(arrays) if meta.get("version") == 1 else digest(meta, arrays)
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return members
    return {**members, "meta": np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)}


@fuzz_settings(500)
@given(mutations=CONTAINER_MUTATIONS, rehash=st.booleans())
def test_fuzz_model_file_members(files, mutations, rehash):
    """CRF.load on well-formed containers whose members were tampered with: arrays
    permuted, entries swapped or set out of range or non-finite, arrays swapped, of
    another dtype, shape or length, dropped or added, ``.npy`` headers that lie, header
    entries (labels, patterns, n_columns, params, version...) changed, removed, added or
    their JSON bytes damaged; the checksum left (the file must be refused unless
    nothing changed) or recomputed (then the model must work)."""
    src = write(files, "src.crf", files["model_bytes"])
    members, touched = mutate_container(read_container(src), "meta", mutations)
    if rehash:
        members = rehashed(members)
    p = files["dir"] / "members.crf"
    write_container(p, members)
    check_model_load(files, p, rehash and bool(touched & FREE))


def test_container_writer_rewrites_the_model_file_byte_for_byte(files):
    p = write(files, "src.crf", files["model_bytes"])
    write_container(files["dir"] / "copy.crf", read_container(p))
    assert (files["dir"] / "copy.crf").read_bytes() == files["model_bytes"]
    write_container(files["dir"] / "copy.crf", rehashed(read_container(p)))
    assert (files["dir"] / "copy.crf").read_bytes() == files["model_bytes"]


# ---------------------------------------------------------------------- found by the fuzz tests
@pytest.mark.parametrize("weight", [800.0, 1e308])
def test_model_file_with_huge_weights_is_refused_or_labels(files, weight):
    """Finite weights too large for the forward-backward recursion, checksum recomputed
    (the loader checks finiteness only): ModelError, or a model that labels with
    marginals summing to one; not NaN marginals, NaN n-best log-probabilities, or an
    IndexError from predict (every Viterbi score non-finite, no labelling left)."""
    members = read_container(write(files, "src.crf", files["model_bytes"]))
    members["theta"][:] = weight
    p = files["dir"] / "huge.crf"
    write_container(p, rehashed(members))
    check_model_load(files, p, True)


# ---------------------------------------------------------------------- crashes, in a child process
TAMPERED = [("obs_offsets", 10**6), ("obs_offsets", -3), ("kinds", 0), ("kinds", 7), ("theta", "drop_last"),
            ("obs_blob", "drop_last"), ("meta", "labels"), ("meta", "n_columns"), ("meta", "patterns")]


def test_tampered_model_arrays_do_not_crash_the_process(files):
    """Arrays and header entries of a CRF model file set out of range, checksum
    recomputed: loading and labelling, in a child process (a kernel reading out of
    bounds may kill it), gives ModelError naming the file, never a signal."""
    paths = []
    for k, (member, change) in enumerate(TAMPERED):
        members = read_container(write(files, "src.crf", files["model_bytes"]))
        if member == "meta":
            meta = json.loads(members["meta"].tobytes())
            meta[change] = {"labels": [], "n_columns": 1, "patterns": "u:%x[0,7]"}[change]
            members["meta"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
        elif change == "drop_last":
            members[member] = members[member][:-1]
        else:
            members[member][len(members[member]) // 2] = change
        p = files["dir"] / f"tampered{k}.crf"
        write_container(p, rehashed(members))
        paths.append(str(p))
    code = f"""
        from crf import CRF, ModelError
        for p in {paths!r}:
            try:
                m = CRF.load(p)
                m.predict({TEST_X!r})
                m.predict_marginals({TEST_X!r})
                print("loaded", p)
            except ModelError as e:
                print("refused", p if p in str(e) else "without the file name: " + str(e))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:-1] == [f"refused {p}" for p in paths], r.stdout
