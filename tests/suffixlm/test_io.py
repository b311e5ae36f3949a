"""suffixlm.io: inputs (gzip by content, clear errors), atomic outputs, the model container."""

import gzip
import io
import json
import os
import sys

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crf.data import DataError, read_sequences
from suffixlm.backoff.arpa import ArpaError, is_arpa_file, read_arpa
from suffixlm.corpus import Corpus, CorpusError, load_training_corpus, read_lines
from suffixlm.io import (
    ContainerError,
    InputError,
    SameFileError,
    atomic_write,
    check_not_input,
    load_container,
    open_input,
    save_container,
)
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM, ModelFormatError

pytestmark = pytest.mark.filterwarnings(
    "ignore::suffixlm.backoff.kn.DiscountWarning")  # tiny texts: fallback discounts
TEXT = "a b c\nb c a\n\nc a b\n"
ARPA = """
\\data\\
ngram 1=4

\\1-grams:
-0.5\t</s>
-99\t<s>
-0.3\ta
-0.4\tb

\\end\\
"""


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def mode_of(path) -> int:
    return os.stat(path).st_mode & 0o777


# ---------------------------------------------------------------------- reading
@pytest.mark.parametrize("name", ["plain.gz", "plain.txt", "packed.txt", "packed.gz", "packed"])
def test_gzip_is_recognised_by_content_not_name(tmp_path, name):
    p = tmp_path / name
    p.write_bytes(gzip.compress(TEXT.encode()) if name.startswith("packed") else TEXT.encode())
    with open_input(p) as fh:
        assert fh.read() == TEXT.encode()
    with open_input(p, text=True) as fh:
        assert list(fh) == TEXT.splitlines(keepends=True)
    assert [n for n, _ in read_lines(p)] == [1, 2, 4]
    assert read_sequences(p) == [[["a", "b", "c"], ["b", "c", "a"]], [["c", "a", "b"]]]


def test_arpa_reader_recognises_gzip_by_content(tmp_path):
    for name, data in [("m.arpa", gzip.compress(ARPA.encode())), ("m.arpa.gz", ARPA.encode())]:
        p = tmp_path / name
        p.write_bytes(data)
        assert is_arpa_file(p)
        assert read_arpa(p).counts == [4]  # the file's count (<unk> is added in memory with log 0, not written)


def test_stdin_is_read_through_gzip_and_left_open(monkeypatch):
    stdin = io.TextIOWrapper(io.BytesIO(gzip.compress(TEXT.encode())))
    monkeypatch.setattr(sys, "stdin", stdin)
    assert [toks for _, toks in read_lines("-")][0] == ["a", "b", "c"]
    assert not stdin.buffer.closed


def _damaged_gzip_streams():
    good = gzip.compress((TEXT * 200).encode())
    crc = bytearray(good)
    crc[-8] ^= 0xFF  # CRC-32 of the trailer
    body = bytearray(good)
    body[20] ^= 0xFF  # inside the deflate data
    return {"truncated": good[: len(good) // 2], "bad crc": bytes(crc), "bad deflate data": bytes(body),
            "trailing garbage": good + b"garbage!"}


@pytest.mark.parametrize("case", sorted(_damaged_gzip_streams()))
def test_damaged_gzip_gives_a_clear_error_naming_the_file(tmp_path, case):
    p = tmp_path / "damaged.txt"
    p.write_bytes(_damaged_gzip_streams()[case])
    for read in (lambda: open_input(p).read(), lambda: list(open_input(p, text=True))):
        with pytest.raises(InputError, match="damaged.txt: damaged gzip data"):
            read()
    with pytest.raises(CorpusError, match="damaged.txt: damaged gzip data"):
        list(read_lines(p))
    with pytest.raises(DataError, match="damaged.txt: damaged gzip data"):
        read_sequences(p)
    with pytest.raises(ArpaError, match="damaged.txt: damaged gzip data"):
        read_arpa(p)
    assert not is_arpa_file(p)


@pytest.mark.parametrize("packed", [False, True])
def test_invalid_utf8_names_file_and_true_line(tmp_path, packed):
    # far beyond the first read buffer: a decoder reading ahead would name an earlier line
    data = b"w NN O\n" * 3000 + b"caf\xe9 NN O\n" + b"w NN O\n" * 10
    p = tmp_path / "bad.txt"
    p.write_bytes(gzip.compress(data) if packed else data)
    with pytest.raises(DataError, match=r"bad.txt:3001: invalid UTF-8 at byte 4 of the line"):
        read_sequences(p)
    with pytest.raises(CorpusError, match=r"bad.txt:3001: invalid UTF-8"):
        list(read_lines(p))
    with pytest.raises(InputError, match=r"bad.txt:3001: invalid UTF-8"):
        list(open_input(p, text=True))


def test_crlf_line_ends_read_as_newlines(tmp_path):
    p = tmp_path / "dos.txt"
    p.write_bytes(b"a b\r\nc\r\n")
    with open_input(p, text=True) as fh:
        assert fh.read() == "a b\nc\n"


def test_inputs_that_cannot_be_opened_raise_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        open_input(tmp_path / "missing.txt")
    with pytest.raises(IsADirectoryError):
        open_input(tmp_path)
    with pytest.raises(CorpusError, match="is a directory"):
        list(read_lines(tmp_path))


# ---------------------------------------------------------------------- writing
class Boom(Exception):
    pass


@pytest.mark.parametrize("exc", [Boom, KeyboardInterrupt])
@pytest.mark.parametrize("name", ["out.txt", "out.txt.gz"])
def test_atomic_write_keeps_the_old_file_when_the_writer_fails(tmp_path, exc, name):
    p = tmp_path / name
    p.write_bytes(b"old content\n")
    with pytest.raises(exc):
        with atomic_write(p) as fh:
            fh.write(b"new, partial")
            raise exc()
    assert p.read_bytes() == b"old content\n"
    assert os.listdir(tmp_path) == [name]


def test_atomic_write_text_and_gzip_by_output_name(tmp_path):
    with atomic_write(tmp_path / "a.txt.gz", binary=False) as fh:
        fh.write("héllo\n")
    assert gzip.decompress((tmp_path / "a.txt.gz").read_bytes()) == "héllo\n".encode()
    with atomic_write(tmp_path / "b.txt", binary=False) as fh:
        fh.write("héllo\n")
    assert (tmp_path / "b.txt").read_bytes() == "héllo\n".encode()
    with atomic_write(tmp_path / "c.gz", compress=False) as fh:
        fh.write(b"raw")
    assert (tmp_path / "c.gz").read_bytes() == b"raw"
    assert sorted(os.listdir(tmp_path)) == ["a.txt.gz", "b.txt", "c.gz"]


def test_atomic_write_through_a_symbolic_link_replaces_its_target(tmp_path):
    (tmp_path / "real.txt").write_bytes(b"old")
    os.symlink("real.txt", tmp_path / "link.txt")
    with atomic_write(tmp_path / "link.txt") as fh:
        fh.write(b"new")
    assert os.path.islink(tmp_path / "link.txt") and (tmp_path / "real.txt").read_bytes() == b"new"
    assert sorted(os.listdir(tmp_path)) == ["link.txt", "real.txt"]


@pytest.mark.parametrize("umask", [0o022, 0o077, 0o002, 0o027])
def test_final_mode_follows_the_umask(tmp_path, umask):
    lm = KneserNeyLM(1, min_counts=[1]).fit(Corpus.from_strings(["a b", "b c"]))
    old = os.umask(umask)
    try:
        with atomic_write(tmp_path / "x.bin") as fh:
            fh.write(b"x")
        lm.write_arpa(tmp_path / "m.arpa.gz")  # this writer used to leave 0600
        save_container(tmp_path / "c.npz", {"a": np.arange(3)}, {}, "test", 1)
        (tmp_path / "existing").write_bytes(b"")
        os.chmod(tmp_path / "existing", 0o600)
        with atomic_write(tmp_path / "existing") as fh:
            fh.write(b"y")
    finally:
        os.umask(old)
    assert current_umask() == old
    for name in ("x.bin", "m.arpa.gz", "c.npz", "existing"):
        assert mode_of(tmp_path / name) == 0o666 & ~umask, name


def test_same_file_output_is_refused(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("a b c\nb c a\na b\n")
    before = train.read_bytes()
    os.link(train, tmp_path / "hard.txt")
    os.symlink(train, tmp_path / "soft.txt")
    for out in (train, tmp_path / "hard.txt", tmp_path / "soft.txt", tmp_path / "." / "train.txt"):
        with pytest.raises(SameFileError, match="refusing to overwrite an input"):
            check_not_input(out, ["-", None, tmp_path / "missing.txt", train])
    check_not_input(tmp_path / "new.txt", [train])  # does not exist yet
    check_not_input(tmp_path / "hard.txt", ["-", tmp_path / "missing.txt"])
    # the writers: KN estimated from the file, an ARPA model read from a file, model files
    lm = KneserNeyLM(2, min_counts=[1]).fit(load_training_corpus(train))
    with pytest.raises(SameFileError):
        lm.write_arpa(tmp_path / "soft.txt")
    assert train.read_bytes() == before
    lm.write_arpa(tmp_path / "m.arpa")
    back = read_arpa(tmp_path / "m.arpa")
    with pytest.raises(SameFileError):
        back.write_arpa(tmp_path / "m.arpa")
    with pytest.raises(SameFileError):
        save_container(train, {}, {}, "test", 1, inputs=[train])
    loglinear = LogLinearLM(order=2, lam=1e-3).fit(load_training_corpus(train))
    with pytest.raises(OSError):  # an OSError as well, which the command-line writers report
        loglinear.save(train, inputs=[train])
    assert train.read_bytes() == before
    assert issubclass(SameFileError, ValueError)
    assert sorted(os.listdir(tmp_path)) == ["hard.txt", "m.arpa", "soft.txt", "train.txt"]


# ---------------------------------------------------------------------- container
ARRAYS = {
    "weights": np.array([0.5, 1.25, -3.0]),
    "counts": np.arange(6, dtype=np.int32).reshape(2, 3),
    "fortran": np.asfortranarray(np.arange(6, dtype=np.int64).reshape(2, 3)),
    "empty": np.zeros(0, dtype=np.int64),
    "scalar": np.array(7, dtype=np.int64),
    "blob": np.frombuffer("é\n".encode(), dtype=np.uint8),
}
SPEC = {"weights": (np.float64, 1), "counts": ((np.int32, np.int64), 2), "fortran": (np.int64, 2),
        "empty": (np.int64, 1), "scalar": (np.int64, 0), "blob": (np.uint8, 1)}
META = {"name": "x", "values": [1, 2.5, None], "nested": {"a": True}}


def saved(tmp_path, name="c.npz", arrays=ARRAYS, meta=META, fmt="test-format", version=2):
    p = tmp_path / name
    save_container(p, arrays, meta, fmt, version)
    return p


def load(p, **kw):
    kw.setdefault("spec", SPEC)
    return load_container(p, kw.pop("format", "test-format"), kw.pop("versions", (1, 2)), **kw)


def test_container_round_trip(tmp_path):
    p = saved(tmp_path)
    arrays, meta = load(p)
    assert meta == {"format": "test-format", "version": 2, **META}
    assert arrays.keys() == ARRAYS.keys()
    for k, a in ARRAYS.items():
        np.testing.assert_array_equal(arrays[k], a)
        assert arrays[k].dtype == a.dtype and arrays[k].flags.writeable
    with np.load(p, allow_pickle=False) as z:  # numpy's own layout
        assert set(z.files) == set(ARRAYS) | {"meta_json"}
    assert saved(tmp_path, "again.npz").read_bytes() == p.read_bytes()  # deterministic
    assert sorted(os.listdir(tmp_path)) == ["again.npz", "c.npz"]


def _savez(path, meta, **arrays):
    """A container as np.savez writes it; ``meta`` None: a valid header."""
    meta = {"format": "test-format", "version": 2} if meta is None else meta
    np.savez(path, meta_json=np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8), **arrays)
    return path


def test_container_reads_numpy_savez_files(tmp_path):
    """Files written by np.savez (all model files before suffixlm.io) still load."""
    arrays, meta = load(_savez(tmp_path / "old.npz", {"format": "test-format", "version": 1}, **ARRAYS))
    assert meta["version"] == 1
    np.testing.assert_array_equal(arrays["fortran"], ARRAYS["fortran"])


def test_container_rejects_bad_files(tmp_path):
    p = saved(tmp_path)
    raw = p.read_bytes()
    cases = {"missing.npz": "cannot read: no such file"}
    (tmp_path / "text.npz").write_bytes(b"not a container\n" * 20)
    cases["text.npz"] = "this is a text file, not a test-format file"
    for i, cut in enumerate((len(raw) // 2, len(raw) - 30, 100, 10, 0)):
        (tmp_path / f"trunc{i}.npz").write_bytes(raw[:cut])
        cases[f"trunc{i}.npz"] = "this is an empty file" if cut == 0 else "truncated"
    json_err = bytearray(raw)
    json_err[raw.index(b'"test-format"')] = ord("{")
    (tmp_path / "crc.npz").write_bytes(bytes(json_err))  # the zip's CRC catches it first
    cases["crc.npz"] = "Bad CRC-32"
    np.savez(tmp_path / "nometa.npz", **ARRAYS)
    cases["nometa.npz"] = "this is a numpy .npz archive of other arrays"
    np.savez(tmp_path / "badjson.npz", meta_json=np.frombuffer(b'{"format": ', np.uint8), **ARRAYS)
    cases["badjson.npz"] = "corrupt header"
    for name, meta, msg in [("list.npz", [1], "not a test-format file"),
                            ("format.npz", {"format": "other", "version": 2}, "not a test-format file .*'other'"),
                            ("version.npz", {"format": "test-format", "version": 3},
                             "test-format format version 3 is not supported .*reads 1, 2"),
                            ("boolversion.npz", {"format": "test-format", "version": True}, "version True")]:
        _savez(tmp_path / name, meta, **ARRAYS)
        cases[name] = msg
    bad_arrays = [
        ("member.npz", {k: v for k, v in ARRAYS.items() if k != "scalar"}, "missing member 'scalar'"),
        ("extra.npz", {**ARRAYS, "x": np.zeros(1)}, "unexpected member 'x'"),
        ("dtype.npz", {**ARRAYS, "weights": ARRAYS["weights"].astype(np.float32)},
         r"member 'weights' is float32\[1-d\], expected float64\[1-d\]"),
        ("ndim.npz", {**ARRAYS, "empty": np.zeros((0, 1), np.int64)}, r"member 'empty' is int64\[2-d\]"),
        ("endian.npz", {**ARRAYS, "weights": ARRAYS["weights"].astype(">f8")}, "member 'weights' is >f8"),
        ("pickle.npz", {**ARRAYS, "weights": np.array([object()], dtype=object)}, "pickled Python objects"),
    ]
    for name, arrays, msg in bad_arrays:
        _savez(tmp_path / name, None, **arrays)
        cases[name] = msg
    np.savez_compressed(tmp_path / "compressed.npz", meta_json=np.zeros(2, np.uint8), **ARRAYS)
    cases["compressed.npz"] = "compressed"
    for name, msg in cases.items():
        with pytest.raises(ContainerError, match=msg) as e:
            load(tmp_path / name)
        assert str(e.value).startswith(str(tmp_path / name) + ": "), name
    with pytest.raises(ModelFormatError, match="trunc0.npz"):  # the caller's own error class
        load(tmp_path / "trunc0.npz", error=ModelFormatError)


def test_save_container_refuses_objects_and_reserved_names(tmp_path):
    with pytest.raises(ValueError, match="Python objects"):
        save_container(tmp_path / "o.npz", {"a": np.array([None])}, {}, "f", 1)
    for arrays, meta in (({"meta_json": np.zeros(1)}, {}), ({}, {"version": 2}), ({}, {"format": "x"})):
        with pytest.raises(ValueError, match="container's own"):
            save_container(tmp_path / "o.npz", arrays, meta, "f", 1)
    assert os.listdir(tmp_path) == []


@pytest.fixture(scope="module")
def container_bytes(tmp_path_factory):
    return saved(tmp_path_factory.mktemp("fuzz")).read_bytes()


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_container_gives_the_error_or_the_same_arrays(tmp_path, container_bytes, data):
    n = len(container_bytes)
    raw = bytearray(container_bytes)
    for pos, value in data.draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, 255)),
                                         min_size=1, max_size=4)):
        raw[pos] = value
    cut = data.draw(st.one_of(st.just(n), st.integers(0, n)))
    p = tmp_path / "fuzz.npz"
    p.write_bytes(bytes(raw[:cut]))
    try:
        arrays, meta = load(p)
    except ContainerError as e:
        assert str(e).startswith(f"{p}: ")
        return
    assert meta == {"format": "test-format", "version": 2, **META}
    for k, a in ARRAYS.items():
        assert arrays[k].dtype == a.dtype and arrays[k].shape == a.shape
        np.testing.assert_array_equal(arrays[k], a)


LM_TRAIN = ["a b c a b", "b c d", "a b d d", "c a b c", "d a"]


@pytest.fixture(scope="module")
def lm_file(tmp_path_factory):
    lm = LogLinearLM(order=3, lam=1e-3).fit(LM_TRAIN)
    p = tmp_path_factory.mktemp("lm") / "m.lm"
    lm.save(p)
    return lm, p.read_bytes()


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_mutated_model_file_gives_model_error_or_the_same_model(tmp_path, lm_file, data):
    lm, good = lm_file
    raw = bytearray(good)
    for pos, value in data.draw(st.lists(st.tuples(st.integers(0, len(raw) - 1), st.integers(0, 255)),
                                         min_size=1, max_size=3)):
        raw[pos] = value
    p = tmp_path / "fuzz.lm"
    p.write_bytes(bytes(raw))
    try:
        back = LogLinearLM.load(p)
    except ModelFormatError as e:
        assert str(p) in str(e)
        return
    np.testing.assert_array_equal(back.weights_, lm.weights_)
    test = Corpus.from_strings(["a b c d", "d d a"], vocab=lm.vocab_)
    np.testing.assert_array_equal(back.log10_probs(test), lm.log10_probs(test))


def test_model_files_keep_numpy_layout(tmp_path, lm_file):
    """A model file re-written by np.savez (the writer before suffixlm.io) loads the same."""
    lm, good = lm_file
    (tmp_path / "m.lm").write_bytes(good)
    with np.load(tmp_path / "m.lm", allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    assert json.loads(arrays["meta_json"].tobytes())["format"] == "suffixlm-loglinear"
    with open(tmp_path / "old.lm", "wb") as fh:
        np.savez(fh, **arrays)
    back = LogLinearLM.load(tmp_path / "old.lm")
    np.testing.assert_array_equal(back.weights_, lm.weights_)
    back.save(tmp_path / "again.lm")  # a loaded model saves again, to the same bytes
    assert (tmp_path / "again.lm").read_bytes() == good


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_tampered_model_values_give_model_error_never_a_crash(tmp_path, lm_file, data):
    """A valid archive with changed numbers (which no checksum can catch): the loader's
    checks refuse it, or the model it gives scores without reading outside an array."""
    lm, good = lm_file
    (tmp_path / "m.lm").write_bytes(good)
    with np.load(tmp_path / "m.lm", allow_pickle=False) as z:
        arrays = {k: z[k].copy() for k in z.files if k != "meta_json"} | {"meta_json": z["meta_json"]}
    for _ in range(data.draw(st.integers(1, 2))):
        key = data.draw(st.sampled_from(sorted(k for k, a in arrays.items() if a.size and k != "meta_json")))
        flat = arrays[key].reshape(-1)
        i = data.draw(st.integers(0, flat.size - 1))
        if flat.dtype.kind == "f":
            flat[i] = data.draw(st.sampled_from([0.0, -1.0, np.nan, 1e300, 2 * flat[i]]))
        else:
            lo, hi = np.iinfo(flat.dtype).min, np.iinfo(flat.dtype).max
            flat[i] = data.draw(st.sampled_from([int(flat[i]) - 1, int(flat[i]) + 1, 0, -1, 10**6]).filter(
                lambda v: lo <= v <= hi))
    with open(tmp_path / "tampered.lm", "wb") as fh:
        np.savez(fh, **arrays)
    try:
        back = LogLinearLM.load(tmp_path / "tampered.lm")
    except ModelFormatError:
        return
    test = Corpus.from_strings(["a b c d", "d d a", "x a"], vocab=back.vocab_)
    assert back.log10_probs(test).shape == (12,)  # 9 words + 3 sentence ends
