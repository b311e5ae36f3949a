"""Mutations of valid files for the fuzz tests of the readers (tests/*/test_fuzz_readers.py).

A mutation is a plain tuple (``("flip", 120, 4)``), a list of them is a test's argument,
so hypothesis prints a falsifying example as a short list that ``mutate_*`` replays on the
same valid file. Positions are drawn from a fixed range and taken modulo the size of the
file (the files are built by fixtures, after the strategies exist).

Every fuzz test runs with ``fuzz_settings(n)``: derandomized (the same examples on every
run, for CI), a finite deadline, and ``SUFFIXLM_FUZZ_EXAMPLES=k`` multiplying the number
of examples for a longer local search (``SUFFIXLM_FUZZ_EXAMPLES=20 pytest -k fuzz``).
``watchdog`` turns a hang into a run that ends (exit code 1) with the stacks of every
thread, instead of a CI job that never ends.
"""

import contextlib
import faulthandler
import gzip
import io
import json
import os
import re
import zipfile

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

_SCALE = float(os.environ.get("SUFFIXLM_FUZZ_EXAMPLES", "1"))


def fuzz_settings(max_examples: int) -> settings:
    """Derandomized settings for a fuzz test (``max_examples`` times the scale)."""
    return settings(max_examples=max(1, int(max_examples * _SCALE)), deadline=5000, derandomize=True,
                    database=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


@contextlib.contextmanager
def watchdog(seconds: float = 300):
    """End the process, printing every thread's stack, if the block runs longer than
    ``seconds``: a numba loop cannot be interrupted, and one example takes milliseconds
    (the fixtures compile the kernels before any block runs)."""
    faulthandler.dump_traceback_later(seconds, exit=True)
    try:
        yield
    finally:
        faulthandler.cancel_dump_traceback_later()


# ---------------------------------------------------------------------- bytes
POS = st.integers(0, 1 << 16)
#: bytes worth inserting: line and field separators, invalid UTF-8, NUL, gzip magic, signs
INTERESTING_BYTES = [b"\n", b"\n\n", b" ", b"\t", b"\r", b"\r\n", b"\x00", b"\xff", b"\xc3", b"\xe2\x80",
                     b"\xc3\xa9", b"\x1f\x8b", b"\x0b", b"\x1c", b"\xc2\x85", b"\xe2\x80\xa8", b"-", b"9", b"e",
                     b"\\", b"#", b"%", b"\""]

BYTE_MUTATION = st.one_of(
    st.tuples(st.just("flip"), POS, st.integers(1, 255)),
    st.tuples(st.just("truncate"), POS),
    st.tuples(st.just("insert"), POS, st.sampled_from(INTERESTING_BYTES) | st.binary(min_size=1, max_size=6)),
    st.tuples(st.just("delete"), POS, st.integers(1, 16)),
    st.tuples(st.just("duplicate"), POS, st.integers(1, 64)),
)
BYTE_MUTATIONS = st.lists(BYTE_MUTATION, min_size=1, max_size=3)


def mutate_bytes(data: bytes, mutations) -> bytes:
    """``data`` with the byte mutations applied in order."""
    b = bytearray(data)
    for m in mutations:
        kind, pos = m[0], m[1] % (len(b) + 1)
        if kind == "flip" and b:
            b[pos % len(b)] ^= m[2]
        elif kind == "truncate":
            del b[pos:]
        elif kind == "insert":
            b[pos:pos] = m[2]
        elif kind == "delete":
            del b[pos:pos + m[2]]
        elif kind == "duplicate":
            b[pos:pos] = b[pos:pos + m[2]]
    return bytes(b)


# ---------------------------------------------------------------------- lines
LINE = st.integers(0, 1 << 12)


def line_mutations(tokens) -> st.SearchStrategy:
    """Line-level mutations of a text file; ``tokens``: replacement tokens worth trying."""
    return st.one_of(
        st.tuples(st.just("swap_lines"), LINE, LINE),
        st.tuples(st.just("delete_line"), LINE),
        st.tuples(st.just("duplicate_line"), LINE),
        st.tuples(st.just("blank_line"), LINE),
        st.tuples(st.just("replace_token"), LINE, st.integers(0, 8), st.sampled_from(tokens)),
        st.tuples(st.just("insert_token"), LINE, st.integers(0, 8), st.sampled_from(tokens)),
        st.tuples(st.just("delete_token"), LINE, st.integers(0, 8)),
    )


#: A UTF-8 byte-order mark (the readers skip one opening a file)
BOM = b"\xef\xbb\xbf"
#: Mutations toward the paths of the text convention (suffixlm.io): line ends made a lone
#: ``\\r``, ``\\r\\n`` or ``\\n`` (every k-th line end, from line j), a byte-order mark put
#: in front, one line made long (a word ``n`` bytes longer, or ``n`` more words) for the
#: tests' small ``$SUFFIXLM_MAX_LINE_BYTES`` (``LINE_LIMITS``, ``line_limit``).
CONVENTION_MUTATION = st.one_of(
    st.tuples(st.just("line_ends"), st.sampled_from([b"\r", b"\r\n", b"\n"]), st.integers(1, 4), LINE),
    st.tuples(st.just("bom"), st.booleans()),
    st.tuples(st.just("long_line"), LINE, st.integers(1, 300), st.sampled_from([b"word", b"words"])),
)
#: ``$SUFFIXLM_MAX_LINE_BYTES`` of an example (None: the default bound)
LINE_LIMITS = st.sampled_from([None, None, 40, 120])


@contextlib.contextmanager
def line_limit(limit: int | None):
    """``$SUFFIXLM_MAX_LINE_BYTES`` set to ``limit`` in the block (None: as it was)."""
    if limit is None:
        yield
        return
    old = os.environ.get("SUFFIXLM_MAX_LINE_BYTES")
    os.environ["SUFFIXLM_MAX_LINE_BYTES"] = str(limit)
    try:
        yield
    finally:
        if old is None:
            del os.environ["SUFFIXLM_MAX_LINE_BYTES"]
        else:
            os.environ["SUFFIXLM_MAX_LINE_BYTES"] = old


def convention_text(data: bytes) -> bytes:
    """``data`` as the text convention reads it: a leading BOM dropped, ``\\r\\n`` and a lone
    ``\\r`` made ``\\n`` (the bytes the reference readings of the tests split)."""
    return data.removeprefix(BOM).replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def longest_line(data: bytes) -> int | None:
    """The bytes of the longest line of ``data`` (decompressed when it is gzip; a leading
    BOM and the line ends not counted), None for a damaged gzip stream."""
    if data[:2] == b"\x1f\x8b":
        data = gunzip_or_none(data)
        if data is None:
            return None
    return max(len(line) for line in re.split(rb"\r\n|\r|\n", data.removeprefix(BOM)))


def check_line_limit(error: str | None, path, data: bytes, limit: int | None, bounded: bool = True) -> None:
    """A read of the file ``path`` holding ``data`` under ``line_limit(limit)`` ended with
    ``error`` (its message, None when it read): a "line longer than" error names the file,
    the line and the bound, and only a file with a line about that long gets it; a file
    read without error has no line much longer than the bound (``bounded``: the reader
    bounds this input; a plain ARPA file on disk is bounded by its size instead)."""
    too_long = error is not None and "line longer than" in error
    if limit is None:
        assert not too_long, error
        return
    n = longest_line(data)
    if too_long:
        assert re.search(rf"{re.escape(str(path))}:\d+: line longer than {limit} bytes", error), error
        assert n is None or n > limit - 2, (n, limit, error)
    elif error is None and bounded and n is not None:
        assert n <= limit + 2, f"read a line of {n} bytes under a bound of {limit}"


def mutate_lines(data: bytes, mutations) -> bytes:
    """``data`` (lines ending in ``\\n``) with line mutations, byte mutations and
    ``CONVENTION_MUTATION`` applied in order (a list may mix them)."""
    for m in mutations:
        if m[0] in ("flip", "truncate", "insert", "delete", "duplicate"):
            data = mutate_bytes(data, [m])
            continue
        if m[0] == "bom":
            data = BOM + data if m[1] or not data.startswith(BOM) else data
            continue
        lines = data.split(b"\n")
        if m[0] == "line_ends":
            j = m[3] % len(lines)
            data = b"".join(line + (m[1] if k >= j and (k - j) % m[2] == 0 else b"\n")
                            for k, line in enumerate(lines[:-1])) + lines[-1]
            continue
        i = m[1] % len(lines)
        if m[0] == "long_line":
            if m[3] == b"word":
                lines[i] = (lines[i] or b"w") + b"x" * m[2]
            else:
                lines[i] = lines[i] + b" w" * m[2]
        elif m[0] == "swap_lines":
            j = m[2] % len(lines)
            lines[i], lines[j] = lines[j], lines[i]
        elif m[0] == "delete_line":
            del lines[i]
        elif m[0] == "duplicate_line":
            lines.insert(i, lines[i])
        elif m[0] == "blank_line":
            lines.insert(i, b"")
        else:
            sep = b"\t" if b"\t" in lines[i] else b" "
            toks = lines[i].split(sep)
            k = m[2] % (len(toks) + (m[0] == "insert_token"))
            if m[0] == "replace_token":
                toks[k] = m[3]
            elif m[0] == "insert_token":
                toks.insert(k, m[3])
            elif len(toks) > 1:
                del toks[k]
            lines[i] = sep.join(toks)
        data = b"\n".join(lines)
    return data


# ---------------------------------------------------------------------- gzip
def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)


def gunzip_or_none(data: bytes) -> bytes | None:
    """The content of a gzip stream as Python's gzip module reads it, None if damaged."""
    try:
        return gzip.decompress(data)
    except Exception:  # BadGzipFile, EOFError, zlib.error...
        return None


# ---------------------------------------------------------------------- npz containers
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


def read_container(path) -> dict:
    """The members of an npz container (numpy arrays), the header member included."""
    with np.load(path, allow_pickle=False) as z:
        return {k: z[k].copy() for k in z.files}


def write_container(path, members: dict) -> None:
    """Write ``members`` as ``suffixlm.io.save_container`` lays a container out (stored
    ``.npy`` members, fixed dates, zip64 local headers). A member given as ``bytes`` is
    written as it is (a hand-made ``.npy``). The valid files rewritten by this function
    are byte for byte the ones ``save`` wrote (checked by the tests)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
        for name, a in members.items():
            with zf.open(zipfile.ZipInfo(name + ".npy", date_time=_ZIP_DATE), "w", force_zip64=True) as out:
                if isinstance(a, bytes):
                    out.write(a)
                else:
                    np.lib.format.write_array(out, a, allow_pickle=False)
    with open(path, "wb") as fh:
        fh.write(buf.getvalue())


def npy_bytes(a: np.ndarray, **header_changes) -> bytes:
    """The ``.npy`` serialisation of ``a`` with entries of its header replaced (``shape``,
    ``descr``, ``fortran_order``): a header that lies about the data."""
    a = np.ascontiguousarray(a)
    header = np.lib.format.header_data_from_array_1_0(a)
    header.update(header_changes)
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, header)
    out.write(a.tobytes())
    return out.getvalue()


INT_VALUES = [-1, 0, 1, 2, 3, 7, 255, 2**31 - 1, -(2**31), 2**31, 2**63 - 1, -(2**63)]
FLOAT_VALUES = [float("nan"), float("inf"), float("-inf"), 1e308, -1e308, -0.0, 1e-320, 0.5, -0.5, 1.0, -1.0, 40.0,
                710.0, 1e4, -800.0]
DTYPES = ["int8", "uint8", "int32", "int64", "uint64", ">i8", ">i4", "float32", "float64", ">f8", "bool",
          "complex128", "<U1", "V8"]
#: JSON values worth putting in a header entry
JSON_VALUES = [None, True, False, 0, 1, -1, 2, 3, 4, 5, 64, 65537, 2**31, 2**63, 2**64 + 1, 10**30, 0.5, -0.5,
               1e-300, 1e308, float("nan"), float("inf"), "", "x", "none", "kn", "l1", "linf-tree", "l2-tree",
               "sgd-l1", "lbfgs", "fista", [], [""], ["O"], ["O", "O"], {}, {"a": 1}]

#: members and header entries of both model files, so that the search often hits them by name
MEMBER_NAMES = ["weights", "base.lnB", "base.gamma", "tree.tokens", "tree.offsets", "tree.max_depth", "tree.children",
                "tree.succ_words", "vocab_utf8", "theta", "kinds", "obs_offsets", "obs_blob"]
META_KEYS = ["order", "vocab_size", "n_params", "n_unseen", "base", "has_unk", "positive", "base_u0",
             "base_ln_unseen", "labels", "patterns", "n_columns", "params", "n_features", "version", "format"]
MEMBER = st.integers(0, 63) | st.sampled_from(MEMBER_NAMES + META_KEYS)
CONTAINER_MUTATION = st.one_of(
    st.tuples(st.just("permute"), MEMBER, st.integers(0, 2**32 - 1)),
    st.tuples(st.just("swap_entries"), MEMBER, POS, POS),
    st.tuples(st.just("set_int"), MEMBER, POS, st.sampled_from(INT_VALUES) | st.integers(-300, 300)),
    st.tuples(st.just("set_float"), MEMBER, POS, st.sampled_from(FLOAT_VALUES) | st.floats(-1e3, 1e3)),
    st.tuples(st.just("add"), MEMBER, POS, st.sampled_from([-1, 1, 2, -2, 100])),
    st.tuples(st.just("scale"), MEMBER, st.sampled_from([-1.0, 0.0, 2.0, 1e3, 1e300])),
    st.tuples(st.just("swap_members"), MEMBER, MEMBER),
    st.tuples(st.just("astype"), MEMBER, st.sampled_from(DTYPES)),
    st.tuples(st.just("resize"), MEMBER, st.integers(-3, 3)),
    st.tuples(st.just("empty"), MEMBER),
    st.tuples(st.just("reshape"), MEMBER, st.sampled_from(["2d", "0d", "col"])),
    st.tuples(st.just("drop"), MEMBER),
    st.tuples(st.just("extra"), st.sampled_from(["extra", "weights2", "tree.extra", "theta_"])),
    st.tuples(st.just("npy_shape"), MEMBER, st.integers(-2, 2**20)),
    st.tuples(st.just("npy_descr"), MEMBER, st.sampled_from(["<i8", "<f8", "|O", "<i4", "|u1", ">i8", "<c16"])),
    st.tuples(st.just("npy_fortran"), MEMBER),
    st.tuples(st.just("meta_set"), MEMBER, st.sampled_from(JSON_VALUES)),
    st.tuples(st.just("meta_bump"), MEMBER, st.sampled_from([-1, 1, 0.5, 1e-9])),
    st.tuples(st.just("meta_del"), MEMBER),
    st.tuples(st.just("meta_add"), st.sampled_from(["format", "version", "x", "sha256", "labels", "order"]),
              st.sampled_from(JSON_VALUES)),
    st.tuples(st.just("meta_bytes"), st.lists(BYTE_MUTATION, min_size=1, max_size=2)),
)
CONTAINER_MUTATIONS = st.lists(CONTAINER_MUTATION, min_size=1, max_size=3)


def mutate_container(members: dict, meta_key: str, mutations) -> tuple[dict, set]:
    """The members of a container (``read_container``) with the mutations applied, and
    the names of the members and header entries they touched (``meta:<key>`` for the
    latter; ``meta:*``, the header as a whole, for ``meta_bytes``). ``MEMBER`` names
    one (a mutation of a name the file lacks does nothing) or is an index, modulo their
    number, into the members in sorted order (the header member excluded) or into the
    header's entries."""
    members = {k: (v.copy() if isinstance(v, np.ndarray) else v) for k, v in members.items()}
    meta = json.loads(members[meta_key].tobytes())
    meta_raw = None
    touched: set = set()
    for m in mutations:
        kind = m[0]
        names = sorted(k for k in members if k != meta_key)
        keys = sorted(meta)
        if kind.startswith("meta_"):
            if kind == "meta_bytes":
                raw = meta_raw if meta_raw is not None else json.dumps(meta).encode("utf-8")
                meta_raw = mutate_bytes(raw, m[1])
                touched.add("meta:*")
                continue
            if meta_raw is not None:
                continue  # the header is no longer JSON: nothing to edit in it
            if kind == "meta_add":
                meta[m[1]] = m[2]
                touched.add("meta:" + m[1])
                continue
            if not keys or (isinstance(m[1], str) and m[1] not in meta):
                continue
            key = m[1] if isinstance(m[1], str) else keys[m[1] % len(keys)]
            touched.add("meta:" + key)
            if kind == "meta_set":
                meta[key] = m[2]
            elif kind == "meta_bump":
                v = meta[key]
                if isinstance(v, (int, float)) and not isinstance(v, bool):
                    meta[key] = v + m[2] if isinstance(m[2], float) or isinstance(v, float) else v + int(m[2])
                elif isinstance(v, list) and v:
                    meta[key] = v[::-1] if m[2] > 0 else v[1:]
                elif isinstance(v, dict) and v:
                    k = sorted(v)[0]
                    v[k] = None if m[2] > 0 else "x"
            else:
                del meta[key]
            continue
        if kind == "extra":
            members[m[1]] = np.zeros(3, dtype=np.int64)
            touched.add(m[1])
            continue
        if not names or (isinstance(m[1], str) and m[1] not in members):
            continue
        name = m[1] if isinstance(m[1], str) else names[m[1] % len(names)]
        a = members[name]
        touched.add(name)
        if isinstance(a, bytes):  # already a hand-made .npy: leave it as it is
            continue
        if kind == "swap_members":
            other = m[2] if isinstance(m[2], str) else names[m[2] % len(names)]
            if other not in members:
                continue
            touched.add(other)
            members[name], members[other] = members[other], a
            continue
        if kind == "drop":
            del members[name]
            continue
        if kind == "npy_shape":
            members[name] = npy_bytes(a, shape=(m[2],) if a.ndim else ())
            continue
        if kind == "npy_descr":
            members[name] = npy_bytes(a, descr=m[2])
            continue
        if kind == "npy_fortran":
            members[name] = npy_bytes(a, fortran_order=True)
            continue
        if kind == "astype":
            try:
                members[name] = a.astype(m[2])
            except (ValueError, TypeError, OverflowError):
                pass
            continue
        if kind == "reshape":
            members[name] = a.reshape(1, -1) if m[2] == "2d" else a.reshape(-1, 1) if m[2] == "col" else (
                a.reshape(()) if a.size == 1 else np.array(a.ravel()[0] if a.size else 0, dtype=a.dtype))
            continue
        if kind == "resize":
            members[name] = (np.concatenate([a.ravel(), np.zeros(m[2], a.dtype)]) if m[2] >= 0
                             else a.ravel()[:m[2]])
            continue
        if kind == "empty":
            members[name] = a.ravel()[:0]
            continue
        flat = a.reshape(-1)  # a view: the edits below change members[name]
        if flat.size == 0 or flat.dtype.kind not in "biuf":
            continue
        i = m[2] % flat.size if kind not in ("permute", "scale") else 0
        if kind == "scale":
            if flat.dtype.kind == "f":
                with np.errstate(all="ignore"):
                    flat *= m[2]
        elif kind == "permute":
            flat[:] = np.random.default_rng(m[2]).permutation(flat)
        elif kind == "swap_entries":
            j = m[3] % flat.size
            flat[i], flat[j] = flat[j], flat[i]
        elif kind in ("set_int", "set_float", "add"):
            v = m[3] if kind != "add" else flat[i].item() + m[3]
            if flat.dtype.kind in "iu":
                info = np.iinfo(flat.dtype)
                v = int(v) if isinstance(v, int) or (isinstance(v, float) and v == v and abs(v) < 2**63) else None
                if v is None or not info.min <= v <= info.max:
                    continue
            flat[i] = v
    members[meta_key] = np.frombuffer(meta_raw if meta_raw is not None else json.dumps(meta).encode("utf-8"),
                                      dtype=np.uint8)
    return members, touched
