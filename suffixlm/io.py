"""Files in and out: the one place where both packages open, write and check files.

* ``open_input(path)`` reads a file or ``-`` (stdin). Gzip is recognised by its
  content (the magic bytes ``1f 8b``), never by the name: a ``.gz`` name holding
  plain text reads as plain text, gzip content under any name is decompressed. A
  damaged gzip stream raises a ``ValueError`` naming the file; with ``text=True``
  the lines are decoded one by one, so invalid UTF-8 is reported with its line.
* ``atomic_write(path)`` writes an output in full or not at all: a temporary file
  in the destination directory, flushed, fsynced and renamed over ``path``. The
  file gets the mode a plain ``open()`` would give it (``0o666 & ~umask``). Only
  here does a name decide a format: an output named ``*.gz`` is compressed. The
  temporary file is removed on every failure (an exception, Ctrl-C); a writer
  killed outright (SIGKILL) cannot, so its file, ``.<name>.<host>.<pid>.<random>.tmp``,
  is removed by the next write to the same name once that process is gone
  (``remove_stale_temporaries``).
* ``check_not_input(output, inputs)`` refuses an output that is one of the inputs;
  ``check_writable(output)`` tries, before any work, that an output can be created
  (``write_error_message`` words the ``OSError`` in one line).
* ``save_container`` / ``load_container``: the versioned model file, one ``.npz``
  (numpy's zip of ``.npy`` members, no pickle) plus a JSON header member, with
  every member's dtype and dimension checked on reading, and one error class for
  any file that is not exactly what was written.
"""

from __future__ import annotations

import contextlib
import errno
import gzip
import hashlib
import io
import json
import math
import os
import re
import secrets
import shutil
import socket
import struct
import sys
import zipfile
import zlib
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Union

import numpy as np

__all__ = [
    "ContainerError", "InputError", "SameFileError", "TextInput", "atomic_write", "check_not_input",
    "check_writable", "input_name", "load_container", "open_error_message", "open_input", "remove_stale_temporaries",
    "save_container", "write_error_message",
]

PathLike = Union[str, os.PathLike]
GZIP_MAGIC = b"\x1f\x8b"
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed member dates: the same model gives the same bytes


class InputError(ValueError):
    """Unreadable input content (damaged gzip stream, invalid UTF-8); the message names
    the file, and the line where there is one."""


class ContainerError(ValueError):
    """A container file that is not one, is truncated, damaged or tampered with, or holds
    another format or version; the message names the file."""


class SameFileError(shutil.SameFileError, ValueError):
    """An output that is one of the inputs. An ``OSError`` (as ``shutil.SameFileError``,
    so callers that report failed writes report it) and a ``ValueError`` (bad arguments)."""


# ---------------------------------------------------------------------- reading
def input_name(path: PathLike) -> str:
    """How messages name an input: ``<stdin>`` for ``-``, else the path as given."""
    return "<stdin>" if str(path) == "-" else str(path)


def open_error_message(path: PathLike, exc: OSError) -> str:
    """One line for an input that cannot be opened, for callers that turn the
    ``OSError`` of ``open_input`` into their own error."""
    if isinstance(exc, FileNotFoundError):
        why = "no such file"
    elif isinstance(exc, IsADirectoryError):
        why = "is a directory, expected a file"
    else:
        why = exc.strerror or str(exc)
    return f"{input_name(path)}: cannot read: {why}"


def open_input(path: PathLike, text: bool = False, error: type[ValueError] = InputError):
    """Open ``path`` (``-``: stdin) for reading, decompressing gzip content.

    text=False: a binary stream (``read``, ``readline``, iteration over byte lines).
    text=True: a ``TextInput`` yielding UTF-8 lines.
    error: the ``ValueError`` subclass raised for bad content (damaged gzip stream,
    invalid UTF-8), so each reader keeps its own error class.

    Raises ``OSError`` when the file cannot be opened, exactly as ``open`` does
    (``open_error_message`` words it). Closing the stream never closes stdin.
    """
    name = input_name(path)
    raw = io.BufferedReader(_Borrowed(sys.stdin.buffer)) if name == "<stdin>" else open(path, "rb")
    try:
        stream = io.BufferedReader(_GzipDecoder(raw, name, error)) if raw.peek(2)[:2] == GZIP_MAGIC else raw
    except BaseException:
        raw.close()
        raise
    return TextInput(stream, name, error) if text else stream


class TextInput:
    """The UTF-8 lines of an input (from ``open_input(path, text=True)``).

    Iteration yields each line as ``str`` with its line end (``\\r\\n`` is read as
    ``\\n``; lines end at ``\\n`` only). A line that is not valid UTF-8 raises the
    ``error`` given to ``open_input``, naming the file and the line number.
    """

    def __init__(self, stream: IO[bytes], name: str, error: type[ValueError]):
        self.name = name
        self._stream = stream
        self._error = error
        self._lines = self._decode()

    def _decode(self) -> Iterator[str]:
        for lineno, raw in enumerate(self._stream, 1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as e:
                raise self._error(f"{self.name}:{lineno}: invalid UTF-8 at byte {e.start + 1} of the line") from None
            if line.endswith("\r\n"):
                line = line[:-2] + "\n"
            yield line

    def __iter__(self) -> Iterator[str]:
        return self._lines

    def __next__(self) -> str:
        return next(self._lines)

    def readline(self) -> str:
        return next(self._lines, "")

    def read(self) -> str:
        return "".join(self._lines)

    @property
    def closed(self) -> bool:
        return self._stream.closed

    def close(self) -> None:
        self._lines.close()
        self._stream.close()

    def __enter__(self) -> "TextInput":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class _Borrowed(io.RawIOBase):
    """A stream read through without closing it (stdin)."""

    def __init__(self, stream):
        self._stream = stream

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        return self._stream.readinto(b)


class _GzipDecoder(io.RawIOBase):
    """The decompressed bytes of a gzip stream; damage raises ``error`` naming the file
    (instead of ``zlib.error``, ``EOFError`` or ``gzip.BadGzipFile``)."""

    def __init__(self, compressed: IO[bytes], name: str, error: type[ValueError]):
        self._compressed = compressed
        self._gzip = gzip.GzipFile(fileobj=compressed, mode="rb")
        self._name = name
        self._error = error

    def readable(self) -> bool:
        return True

    def _checked(self, read, arg):
        try:
            return read(arg)
        except (gzip.BadGzipFile, EOFError, zlib.error) as e:
            raise self._error(f"{self._name}: damaged gzip data ({e})") from None

    def readinto(self, b) -> int:
        return self._checked(self._gzip.readinto, b)

    def readall(self) -> bytes:
        return self._checked(self._gzip.read, -1)

    def close(self) -> None:
        if not self.closed:
            try:
                self._gzip.close()
            finally:
                self._compressed.close()
                super().close()


# ---------------------------------------------------------------------- writing
def check_not_input(output: PathLike, inputs: Iterable[PathLike | None]) -> None:
    """Raise ``SameFileError`` when ``output`` is the same file as one of ``inputs``
    (same device and inode: links and other spellings of a path are caught). ``-``,
    ``""`` and ``None`` among the inputs, inputs that do not exist and an output that
    does not exist yet are fine."""
    try:
        out = os.stat(output)
    except OSError:
        return
    for p in inputs:
        if p is None or str(p) in ("", "-"):
            continue
        try:
            same = os.path.samestat(out, os.stat(p))
        except OSError:
            continue
        if same:
            raise SameFileError(f"{output}: this is the input file {p}; refusing to overwrite an input "
                                "(choose another output name)")


def check_writable(path: PathLike) -> None:
    """Raise ``OSError`` when ``atomic_write(path)`` could not create its file: ``path``
    is a directory, or its directory is missing, is not a directory or refuses a new
    file (permissions, read-only file system). Tried for real: a temporary file is
    created next to ``path`` and removed, as ``atomic_write`` will do. ``-`` passes."""
    if str(path) == "-":
        return
    target = os.path.realpath(path)
    if os.path.isdir(target):
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
    fd, tmp = _create_temporary(os.path.dirname(target), os.path.basename(target))
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


_WRITE_ERRORS = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                 errno.EROFS: "read-only file system", errno.EISDIR: "is a directory",
                 errno.ENOTDIR: "a part of the path is not a directory", errno.ENOSPC: "no space left on device",
                 errno.ENAMETOOLONG: "file name too long"}


def write_error_message(path: PathLike, exc: OSError) -> str:
    """One line for an output that cannot be written (no temporary file names, no errno)."""
    if isinstance(exc, FileNotFoundError):
        where = os.path.dirname(os.path.abspath(path))
        return f"{path}: cannot write: no such directory {where}"
    why = _WRITE_ERRORS.get(exc.errno) or exc.strerror or str(exc) or type(exc).__name__
    return f"{path}: cannot write: {why}"


@contextlib.contextmanager
def atomic_write(path: PathLike, binary: bool = True, compress: bool | None = None,
                 inputs: Iterable[PathLike | None] = ()) -> Iterator[IO]:
    """Context manager: a stream whose content replaces ``path`` when the block ends.

    binary: bytes (True) or UTF-8 text with ``\\n`` line ends (False).
    compress: gzip the content; None: when the name of ``path`` ends in ``.gz``.
    inputs: paths the output must not be (``check_not_input``).

    The content goes to a temporary file next to ``path``, is flushed and fsynced,
    then renamed over ``path`` (and the directory fsynced). If the block raises
    (KeyboardInterrupt included) the temporary file is removed and an existing file
    at ``path`` is left as it was. The temporary file is created with mode 0o666, so
    the kernel applies the umask (and a default ACL) as for a plain ``open()``; the
    umask is never read or changed, which would race with other threads. As with
    ``open()``, a symbolic link at ``path`` is written through: its target is replaced.
    """
    check_not_input(path, inputs)
    if compress is None:
        compress = os.fspath(path).endswith(".gz")
    target = os.path.realpath(path)
    directory = os.path.dirname(target)
    fd, tmp = _create_temporary(directory, os.path.basename(target))
    try:
        with os.fdopen(fd, "wb") as raw:
            with _encoded(raw, binary, compress) as out:
                yield out
            raw.flush()
            os.fsync(raw.fileno())
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    with contextlib.suppress(OSError):  # make the rename itself durable; not every system allows it
        dir_fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)


@contextlib.contextmanager
def _encoded(raw: IO[bytes], binary: bool, compress: bool) -> Iterator[IO]:
    """``raw`` through gzip and/or a UTF-8 text layer. The layers are finished when the
    block ends, failing or not, so that none of them closes ``raw`` later on."""
    out, gz, text = raw, None, None
    if compress:
        out = gz = gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0)
    if not binary:
        out = text = io.TextIOWrapper(out, encoding="utf-8", newline="\n")
    try:
        yield out
    except BaseException:
        with contextlib.suppress(Exception):  # the content is discarded anyway
            _finish(text, gz)
        raise
    _finish(text, gz)


def _finish(text: io.TextIOWrapper | None, gz: gzip.GzipFile | None) -> None:
    if text is not None:
        text.detach()  # flushes; closing it would close ``raw``
    if gz is not None:
        gz.close()  # writes the gzip trailer; ``raw`` stays open


def _host_tag() -> str:
    """8 hex digits naming this machine in temporary file names (a process id means
    something on its own machine only)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _temporary_pattern(name: str) -> re.Pattern:
    """Names of the temporary files of outputs called ``name``: ``.<name>.<host>.<pid>.<random>.tmp``."""
    return re.compile(rf"\.{re.escape(name)}\.([0-9a-f]{{8}})\.([0-9]+)\.[0-9a-f]{{8}}\.tmp")


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)  # signal 0: only asks whether the process exists (POSIX)
    except ProcessLookupError:
        return False
    except OSError:  # it exists but belongs to someone else, or the answer is unknown
        return True
    return True


def remove_stale_temporaries(directory: str, name: str) -> list[str]:
    """Remove the temporary files that writers of ``directory/name`` killed before they
    could clean up (SIGKILL, a crash of the machine is the same) left behind: those of
    this machine whose process is gone. A live writer's file, another machine's and
    anything else are left alone. POSIX only (elsewhere nothing is removed). Returns
    the names removed."""
    if os.name != "posix":
        return []
    pattern, host, me = _temporary_pattern(name), _host_tag(), os.getpid()
    removed = []
    try:
        entries = os.listdir(directory or ".")
    except OSError:
        return []
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m is None or m.group(1) != host:
            continue
        pid = int(m.group(2))
        if pid == me or pid == 0 or _process_exists(pid):
            continue
        with contextlib.suppress(OSError):
            os.unlink(os.path.join(directory, entry))
            removed.append(entry)
    return removed


def _create_temporary(directory: str, name: str) -> tuple[int, str]:
    """A new file ``.<name>.<host>.<pid>.<random>.tmp`` in ``directory`` (hidden, and
    named so that ``remove_stale_temporaries`` can tell whose it is), after removing
    the stale ones of earlier writers of ``name``."""
    remove_stale_temporaries(directory, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    prefix = f".{name}.{_host_tag()}.{os.getpid()}"
    for _ in range(100):
        tmp = os.path.join(directory, f"{prefix}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
        except FileNotFoundError:
            raise FileNotFoundError(errno.ENOENT, "no such directory", directory) from None
    raise FileExistsError(errno.EEXIST, "no free temporary file name", directory)


# ---------------------------------------------------------------------- container
def save_container(path: PathLike, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any], format: str,
                   version: int, *, meta_key: str = "meta_json", inputs: Iterable[PathLike | None] = ()) -> None:
    """Write ``arrays`` and a JSON header as one uncompressed ``.npz``, atomically.

    Each array is the member ``<name>.npy`` (numpy's layout: ``np.load`` reads the
    file with ``allow_pickle=False``); the header ``{"format": format, "version":
    version, **meta}`` is the UTF-8 JSON text as a uint8 array named ``meta_key``.
    Arrays of Python objects are refused: a container never holds a pickle.
    """
    if meta_key in arrays or "format" in meta or "version" in meta:
        raise ValueError(f"{meta_key!r}, 'format' and 'version' are the container's own entries")
    header = json.dumps({"format": format, "version": int(version), **meta}).encode("utf-8")
    members = {name: np.asarray(a) for name, a in arrays.items()}
    members[meta_key] = np.frombuffer(header, dtype=np.uint8)
    for name, a in members.items():
        if a.dtype.hasobject:
            raise ValueError(f"array {name!r} holds Python objects; a container stores numbers only")
    with atomic_write(path, compress=False, inputs=inputs) as fh:
        with zipfile.ZipFile(fh, "w", compression=zipfile.ZIP_STORED, allowZip64=True) as zf:
            for name, a in members.items():
                with zf.open(zipfile.ZipInfo(name + ".npy", date_time=_ZIP_DATE), "w", force_zip64=True) as out:
                    np.lib.format.write_array(out, a, allow_pickle=False)


# what a damaged zip or .npy header can raise from zipfile and numpy's format reader
_DAMAGE = (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, ValueError, OSError, EOFError, KeyError,
           IndexError, TypeError, OverflowError, struct.error, RecursionError)


def load_container(path: PathLike, format: str, versions: Iterable[int],
                   spec: Mapping[str, tuple[Any, int]] | Callable[[dict], Mapping], *,
                   meta_key: str = "meta_json",
                   error: type[ValueError] = ContainerError) -> tuple[dict[str, np.ndarray], dict]:
    """Read a container written by ``save_container``: ``(arrays, meta)``.

    format, versions: the header's ``format`` must equal ``format`` and its
    ``version`` be one of ``versions``.
    spec: member name -> (dtype, or tuple of accepted dtypes; ndim), or a function of
    the header that returns that mapping (members that depend on it). The file must
    hold exactly these members (plus the header); each is checked against its spec
    from its ``.npy`` header before any data is read.

    Returns writable arrays, independent of the file, and the header as a dict.
    Raises ``error`` (default ``ContainerError``) naming the file for anything else:
    missing file, not a zip, truncation, bad checksum, missing or unexpected member,
    wrong dtype or shape, pickled objects, bad JSON, other format or version.
    Nothing is ever unpickled.
    """
    name = str(path)
    try:
        fh = open(path, "rb")
    except OSError as e:
        raise error(open_error_message(path, e)) from None
    with fh:
        try:
            with zipfile.ZipFile(fh) as zf:
                members = _members(zf, os.fstat(fh.fileno()).st_size)
                if meta_key not in members:
                    raise _Bad(f"not a {format} file (no {meta_key!r} header)")
                meta = _read_meta(zf, members[meta_key], format, versions)
                if callable(spec):
                    try:
                        spec = spec(meta)
                    except (KeyError, ValueError, TypeError) as e:
                        raise _Bad(f"corrupt header ({e})") from None
                missing = sorted(set(spec) - set(members))
                unexpected = sorted(set(members) - set(spec) - {meta_key})
                if missing or unexpected:
                    raise _Bad("; ".join([f"missing member {m!r}" for m in missing]
                                         + [f"unexpected member {m!r}" for m in unexpected]))
                arrays = {k: _read_array(zf, members[k], k, *spec[k]) for k in spec}
        except _Bad as e:
            raise error(f"{name}: {e}") from None
        except _DAMAGE as e:
            why = str(e) or type(e).__name__
            raise error(f"{name}: not a readable {format} file (truncated or damaged: {why})") from None
    return arrays, meta


class _Bad(Exception):
    """A container defect, worded for the message (internal)."""


def _members(zf: zipfile.ZipFile, archive_size: int) -> dict[str, zipfile.ZipInfo]:
    members: dict[str, zipfile.ZipInfo] = {}
    for info in zf.infolist():
        if not info.filename.endswith(".npy"):
            raise _Bad(f"unexpected member {info.filename!r}")
        key = info.filename[:-4]
        if key in members:
            raise _Bad(f"member {key!r} appears twice")
        if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1:
            raise _Bad(f"member {key!r} is compressed or encrypted (a container stores them as they are)")
        if info.file_size != info.compress_size or info.header_offset + info.compress_size > archive_size:
            raise _Bad(f"member {key!r} is larger than the file (truncated?)")
        members[key] = info
    return members


def _read_meta(zf: zipfile.ZipFile, info: zipfile.ZipInfo, format: str, versions: Iterable[int]) -> dict:
    raw = _read_array(zf, info, info.filename[:-4], np.uint8, 1)
    try:
        meta = json.loads(raw.tobytes().decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise _Bad(f"corrupt header ({e})") from None
    if not isinstance(meta, dict) or meta.get("format") != format:
        found = meta.get("format") if isinstance(meta, dict) else None
        raise _Bad(f"not a {format} file (its format is {found!r})")
    v = meta.get("version")
    versions = sorted(versions)
    if not (isinstance(v, int) and not isinstance(v, bool) and v in versions):
        raise _Bad(f"{format} format version {v!r} is not supported "
                   f"(this version reads {', '.join(map(str, versions))})")
    return meta


def _read_array(zf: zipfile.ZipFile, info: zipfile.ZipInfo, key: str, dtypes, ndim: int) -> np.ndarray:
    accepted = [np.dtype(d) for d in (dtypes if isinstance(dtypes, (tuple, list)) else (dtypes,))]
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_1_0(f)
        elif version == (2, 0):
            shape, fortran_order, dtype = np.lib.format.read_array_header_2_0(f)
        else:
            raise _Bad(f"member {key!r} has .npy format version {version}, expected 1.0 or 2.0")
        if dtype.hasobject:
            raise _Bad(f"member {key!r} holds pickled Python objects (refused)")
        if dtype not in accepted or len(shape) != ndim or min(shape, default=0) < 0:
            want = " or ".join(str(d) for d in accepted)
            raise _Bad(f"member {key!r} is {dtype}[{len(shape)}-d], expected {want}[{ndim}-d]")
        count = math.prod(shape)
        if count * dtype.itemsize != info.file_size - f.tell():
            raise _Bad(f"member {key!r} has {info.file_size - f.tell()} bytes of data, its shape {shape} "
                       f"needs {count * dtype.itemsize}")
        flat = np.empty(count, dtype=dtype)  # bounded: the size was checked against the file's
        n = f.readinto(flat.view(np.uint8)) if count else 0
        if n != count * dtype.itemsize or f.read(1):  # reading to the end checks the CRC
            raise _Bad(f"member {key!r} is truncated")
    return flat.reshape(shape, order="F" if fortran_order else "C")
