"""Files in and out: the one place where both packages open, write and check files.

* ``open_input(path)`` reads a file or ``-`` (stdin). Gzip is recognised by its
  content (the magic bytes ``1f 8b``), never by the name: a ``.gz`` name holding
  plain text reads as plain text, gzip content under any name is decompressed. A
  damaged gzip stream raises a ``ValueError`` naming the file; with ``text=True``
  the lines are decoded one by one, so invalid UTF-8 is reported with its line.
* ``atomic_write(path)`` writes an output in full or not at all: a temporary file
  in the destination directory, flushed, fsynced and renamed over ``path``. Only a
  regular file (or a new name) is ever replaced: ``-`` is stdout, and ``/dev/stdout``,
  ``/dev/fd/N``, devices (``/dev/null``) and FIFOs are written in place (``output_kind``). The
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

import codecs
import contextlib
import errno
import gzip
import io
import json
import math
import os
import re
import shutil
import stat
import struct
import sys
import zipfile
import zlib
from typing import IO, Any, Callable, Iterable, Iterator, Mapping, Union

import numpy as np

__all__ = [
    "ContainerError", "IN_PLACE", "InputError", "REPLACE", "STDOUT", "SameFileError", "TextInput", "atomic_write",
    "check_not_input", "check_writable", "descriptor_of", "input_name", "load_container", "open_error_message", "open_input",
    "output_kind", "remove_stale_temporaries", "save_container", "write_error_message",
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
#: The white space that separates words (corpora, vocabularies, ARPA files) and columns
#: (CoNLL files) in every reader: ASCII's six characters, as SRILM and KenLM split. Other
#: Unicode spaces (no-break space U+00A0, U+2028, U+3000, ...) and the ASCII separators
#: U+001C..U+001F are ordinary characters of a word.
WHITESPACE = " \t\n\r\x0b\x0c"
#: A UTF-8 byte-order mark: skipped where it opens an input, never a word.
BOM = b"\xef\xbb\xbf"
#: The longest line (bytes, after gzip decompression) a text reader holds, unless the
#: environment variable ``SUFFIXLM_MAX_LINE_BYTES`` (or ``max_line=``) says otherwise:
#: far above real data (a sentence, a CoNLL row), it stops ``/dev/zero`` or a small gzip
#: that inflates to one huge line before the memory runs out.
DEFAULT_MAX_LINE_BYTES = 1 << 26
MAX_LINE_ENV = "SUFFIXLM_MAX_LINE_BYTES"
# characters Python's str.split() takes for white space beyond WHITESPACE
_OTHER_SPACE = re.compile("[\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]")
_SPACE_RUN = re.compile("[ \t\n\r\x0b\x0c]+")
_SPACE = re.compile("[ \t\n\r\x0b\x0c]")


def split_words(line: str) -> list[str]:
    """The words (or columns) of a line, split on ``WHITESPACE`` only (``str.split()``
    would also split at a no-break space, U+2028, U+001C, ...)."""
    if splits_plainly(line):
        return line.split()
    return [w for w in _SPACE_RUN.split(line) if w]


def splits_plainly(text: str) -> bool:
    """Whether ``text.split()`` splits ``text`` at ``WHITESPACE`` only, as ``split_words``
    does (no other character that ``str.split`` takes for white space)."""
    if text.isascii():  # str.split()'s only other ASCII white space: U+001C..U+001F
        return "\x1c" not in text and "\x1d" not in text and "\x1e" not in text and "\x1f" not in text
    return _OTHER_SPACE.search(text) is None


def has_whitespace(word: str) -> bool:
    """Whether ``word`` holds a character of ``WHITESPACE`` (then no reader reads it back
    as one word)."""
    return _SPACE.search(word) is not None


def word_problem(word) -> str | None:
    """Why ``word`` cannot be one word (or label, or column) of a text file that a reader
    gives back unchanged, or None when it can: not a string, empty, holding white space
    (``WHITESPACE``), not encodable as UTF-8 (a lone surrogate)."""
    if not isinstance(word, str):
        return f"{word!r} is a {type(word).__name__}, not a string"
    if not word:
        return "'' is empty"
    if _SPACE.search(word) is not None:
        return f"{word!r} holds white space"
    if not word.isascii() and not utf8_encodable(word):
        return f"{word!r} is not encodable as UTF-8 (a lone surrogate)"
    return None


def utf8_encodable(text: str) -> bool:
    """Whether ``text`` can be written as UTF-8 (it holds no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def max_line_bytes(max_line: int | None = None) -> int:
    """The line length bound in force: ``max_line``, else ``$SUFFIXLM_MAX_LINE_BYTES``,
    else ``DEFAULT_MAX_LINE_BYTES``."""
    if max_line is not None:
        return int(max_line)
    env = os.environ.get(MAX_LINE_ENV, "").strip()
    if env:
        try:
            value = int(env)
        except ValueError:
            value = 0
        if value < 1:
            raise ValueError(f"${MAX_LINE_ENV} = {env!r}: expected a number of bytes >= 1")
        return value
    return DEFAULT_MAX_LINE_BYTES


def _too_long(name: str, lineno: int, limit: int, error: type[ValueError]) -> ValueError:
    return error(f"{name}:{lineno}: line longer than {limit} bytes (the most a line may hold; set "
                 f"{MAX_LINE_ENV} to a larger number of bytes to read it)")


def input_name(path: PathLike) -> str:
    """How messages name an input: ``<stdin>`` for ``-``, else the path as given."""
    return "<stdin>" if str(path) == "-" else str(path)


#: why an input cannot be opened, in the messages' words (lower case, as the rest of the line)
_READ_ERRORS = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                errno.ELOOP: "too many levels of symbolic links (a symbolic link loop?)",
                errno.ENOTDIR: "a part of the path is not a directory", errno.ENAMETOOLONG: "file name too long"}


def read_error_reason(exc: OSError) -> str:
    """Why an input cannot be opened or read, in a few lower-case words."""
    if isinstance(exc, FileNotFoundError):
        return "no such file"
    if isinstance(exc, IsADirectoryError):
        return "is a directory, expected a file"
    return _READ_ERRORS.get(exc.errno) or exc.strerror or str(exc) or type(exc).__name__


def open_error_message(path: PathLike, exc: OSError) -> str:
    """One line for an input that cannot be opened, for callers that turn the
    ``OSError`` of ``open_input`` into their own error."""
    return f"{input_name(path)}: cannot read: {read_error_reason(exc)}"


def open_input(path: PathLike, text: bool = False, error: type[ValueError] = InputError,
               max_line: int | None = None):
    """Open ``path`` (``-``: stdin) for reading, decompressing gzip content.

    text=False: a binary stream (``read``, ``readline``, iteration over byte lines).
    text=True: a ``TextInput`` yielding UTF-8 lines (the text convention: ``\\n``,
    ``\\r\\n`` and lone ``\\r`` end a line, a leading BOM is skipped, no line longer
    than ``max_line_bytes(max_line)``).
    error: the ``ValueError`` subclass raised for bad content (damaged gzip stream,
    invalid UTF-8, a line too long), so each reader keeps its own error class.

    Raises ``OSError`` when the file cannot be opened, exactly as ``open`` does
    (``open_error_message`` words it). Closing the stream never closes stdin.
    """
    name = input_name(path)
    if name == "<stdin>":
        stdin = getattr(sys.stdin, "buffer", None)
        if stdin is None:  # the process was started with its standard input closed (``<&-``)
            raise OSError(errno.EBADF, "standard input is closed", "-")
        raw = io.BufferedReader(_Borrowed(stdin))
    else:
        raw = open(path, "rb")
    try:
        stream = io.BufferedReader(_GzipDecoder(raw, name, error)) if raw.peek(2)[:2] == GZIP_MAGIC else raw
    except BaseException:
        raw.close()
        raise
    return TextInput(stream, name, error, max_line) if text else stream


class TextInput:
    """The UTF-8 lines of an input (from ``open_input(path, text=True)``).

    Iteration yields each line as ``str`` ending in ``\\n`` (but a last line without
    one): ``\\n``, ``\\r\\n`` and a lone ``\\r`` all end a line and are read as
    ``\\n``; a UTF-8 byte-order mark opening the input is skipped. A line that is not
    valid UTF-8, or longer than ``max_line_bytes(max_line)`` bytes (checked while it is
    read, so an endless line never fills the memory), raises the ``error`` given to
    ``open_input``, naming the file and the line number.
    """

    def __init__(self, stream: IO[bytes], name: str, error: type[ValueError], max_line: int | None = None):
        self.name = name
        self._stream = stream
        self._error = error
        self._limit = max_line_bytes(max_line)
        self._lines = self._decode()

    def _decode(self) -> Iterator[str]:
        for lineno, raw in enumerate(byte_lines(self._stream, self.name, self._error, self._limit), 1):
            line = decode_line(raw, self.name, lineno, self._error)
            if line.endswith("\r"):
                line = line[:-2] + "\n" if line.endswith("\r\n") else line[:-1] + "\n"
            elif line.endswith("\r\n"):
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


_CHUNK = 1 << 16


def byte_lines(stream: IO[bytes], name: str, error: type[ValueError], limit: int | None = None) -> Iterator[bytes]:
    """The lines of a binary stream, each with its line end (``\\n``, ``\\r\\n`` or a
    lone ``\\r``; the last line may have none), a leading BOM dropped. Read in chunks:
    a line longer than ``max_line_bytes(limit)`` raises ``error`` naming the file and line
    as soon as that many bytes are read."""
    for _, block in line_blocks(stream, name, error, limit):
        yield from block.splitlines(True)  # bytes: at \n, \r\n and \r only


def count_lines(block: bytes) -> int:
    """The lines of ``block`` (``\\n``, ``\\r\\n`` and a lone ``\\r`` end one; a last
    line without an end counts too)."""
    n = block.count(b"\n")
    if b"\r" in block:
        n += block.count(b"\r") - block.count(b"\r\n")
    return n + (1 if block and not block.endswith((b"\n", b"\r")) else 0)


def line_blocks(stream: IO[bytes], name: str, error: type[ValueError], limit: int | None = None,
                size: int = _CHUNK, bom: bool = True) -> Iterator[tuple[int, bytes]]:
    """``byte_lines`` a block at a time: ``(lines before it, block)``, each block whole
    lines with their ends (the input's last line may have none), read ``size`` bytes at
    a time; never a ``\\r\\n`` split between blocks. The same checks as ``byte_lines``,
    raised after the lines before the offending one were given. ``bom=False``: the
    stream does not start the input, so a BOM there is text."""
    limit = max_line_bytes(limit)
    read = getattr(stream, "read1", stream.read)
    parts: list[bytes] = []  # the pieces of a line longer than a chunk
    held = 0  # their length
    lineno = 0
    carry = b""
    first = True
    while True:
        chunk = read(size)
        eof = not chunk
        if first and bom:
            while len(chunk) < len(BOM) and not eof:  # a BOM split over reads (a pipe)
                more = read(size)
                eof = not more
                chunk += more
            if chunk.startswith(BOM):
                chunk = chunk[len(BOM):]
            first = False
        if carry:
            chunk, carry = carry + chunk, b""
        if not chunk:
            if eof:
                break
            continue  # the input's first read was its BOM alone
        if not eof and chunk.endswith(b"\r"):  # maybe the first half of \r\n
            chunk, carry = chunk[:-1], b"\r"
            if not chunk:
                continue
        end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r")) + 1  # after the last line end
        head, tail = chunk[:end], chunk[end:]
        if end and parts:
            parts.append(head)
            head = b"".join(parts)
            parts, held = [], 0
        if len(head) > limit:  # a line in it may be too long
            lines = head.splitlines(True)
            for k, line in enumerate(lines):
                if len(line) > limit and len(line.rstrip(b"\r\n")) > limit:
                    if k:
                        yield lineno, b"".join(lines[:k])
                    raise _too_long(name, lineno + k + 1, limit, error)
        if head:
            yield lineno, head
            lineno += count_lines(head)
        if tail:
            parts.append(tail)
            held += len(tail)
            if held > limit:
                raise _too_long(name, lineno + 1, limit, error)
    if parts:
        yield lineno, b"".join(parts)


def decode_line(raw: bytes, name: str, lineno: int, error: type[ValueError]) -> str:
    """A line's bytes as text: ``error`` naming the file, the line and the byte for
    invalid UTF-8."""
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise error(f"{name}:{lineno}: invalid UTF-8 at byte {e.start + 1} of the line") from None


def read_text_bytes(stream: IO[bytes], name: str, error: type[ValueError], limit: int | None = None) -> bytes:
    """All of a binary stream as bytes in the text convention: a leading BOM dropped,
    lone ``\\r`` line ends made ``\\n`` (``\\r\\n`` is kept: a reader that splits on
    white space reads it as ``\\n``). The stream is read in chunks, and a line longer
    than ``max_line_bytes(limit)`` raises ``error`` as soon as that many bytes are read,
    unless the stream is a regular uncompressed file (whose size bounds what is read)."""
    limit = max_line_bytes(limit)
    raw = getattr(stream, "raw", None)
    regular = False
    if isinstance(raw, io.FileIO):
        try:
            regular = stat.S_ISREG(os.fstat(raw.fileno()).st_mode)
        except (OSError, ValueError):
            regular = False
    if regular:
        data = stream.read()
    else:
        pieces, run, lineno = [], 0, 0
        read = getattr(stream, "read1", stream.read)
        step = max(1, min(_CHUNK * 16, limit))
        while True:
            chunk = read(step)
            if not chunk:
                break
            pieces.append(chunk)
            end = max(chunk.rfind(b"\n"), chunk.rfind(b"\r"))
            if end < 0:
                run += len(chunk)
            else:
                first = min(i for i in (chunk.find(b"\n"), chunk.find(b"\r")) if i >= 0)
                if run + first > limit:  # the line that runs into this chunk
                    raise _too_long(name, lineno + 1, limit, error)
                if limit < len(chunk):  # lines inside the chunk may be too long too
                    ends = [m.end() for m in re.finditer(rb"\r\n?|\n", chunk)]
                    starts = [0] + ends[:-1]
                    for k, (a, b) in enumerate(zip(starts, ends)):
                        if (run if k == 0 else 0) + len(chunk[a:b].rstrip(b"\r\n")) > limit:
                            raise _too_long(name, lineno + k + 1, limit, error)
                lineno += chunk.count(b"\n") + chunk.count(b"\r") - chunk.count(b"\r\n")
                run = len(chunk) - end - 1
            if run > limit:
                raise _too_long(name, lineno + 1, limit, error)
        data = b"".join(pieces)
    if data.startswith(BOM):
        data = data[len(BOM):]
    n_cr = data.count(b"\r")
    if n_cr and n_cr != data.count(b"\r\n"):
        data = data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
    return data


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
    ``""`` and ``None`` among the inputs, inputs that do not exist, an output that
    does not exist yet and an output that is a character device (``/dev/null``, a
    terminal: writing there never changes what an input holds) are fine."""
    if str(output) == "-":
        return
    try:
        out = os.stat(output)
    except OSError:
        return
    if stat.S_ISCHR(out.st_mode):
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


#: How an output is written (``output_kind``).
STDOUT, IN_PLACE, REPLACE = "stdout", "in place", "replace"

# names of an open file descriptor: written through a duplicate of it (its offset, its
# append flag), never by reopening or replacing what it points to
_FD_NAMES = re.compile(r"/dev/(?:(stdin)|(stdout)|(stderr)|fd/([0-9]+))|/proc/self/fd/([0-9]+)")


def descriptor_of(path: PathLike) -> int | None:
    """The file descriptor that ``path`` names (``/dev/stdout``: 1, ``/dev/fd/N``, ``/proc/self/fd/N``), else None."""
    m = _FD_NAMES.fullmatch(os.fspath(path))
    if m is None:
        return None
    for i, fd in enumerate((0, 1, 2), start=1):
        if m.group(i):
            return fd
    return int(m.group(4) or m.group(5))


def output_kind(path: PathLike) -> str:
    """How ``atomic_write`` writes ``path``: ``STDOUT`` for ``-``; ``IN_PLACE`` for an
    open file descriptor's name (``/dev/stdout``, ``/dev/fd/N``) and for an existing
    character device or FIFO (``/dev/null``, a terminal, a named pipe), which are
    written as a shell's ``>`` writes them and never replaced; ``REPLACE`` for a
    regular file or a new name (a temporary file renamed over it). Raises ``OSError``
    for what is never written: a directory, a socket, a block device (a disk)."""
    if str(path) == "-":
        return STDOUT
    if descriptor_of(path) is not None:
        return IN_PLACE
    try:
        mode = os.stat(path).st_mode  # follows symbolic links
    except OSError as e:
        if e.errno == errno.ELOOP:  # a loop of links: there is nothing to write through to
            raise OSError(errno.ELOOP, "too many levels of symbolic links", os.fspath(path)) from None
        return REPLACE  # a new name (or a dangling link, written through as open() does)
    if stat.S_ISREG(mode):
        return REPLACE
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", os.fspath(path))
    if stat.S_ISCHR(mode) or stat.S_ISFIFO(mode):
        return IN_PLACE
    what = "a socket" if stat.S_ISSOCK(mode) else "a block device (a disk)" if stat.S_ISBLK(mode) else \
        "not a regular file"
    raise OSError(errno.EINVAL, f"is {what}; refusing to write there", os.fspath(path))


def _refuse_terminal(fd: int, path: PathLike) -> None:
    if os.isatty(fd):
        raise OSError(errno.ENOTTY, "a binary model file is not written to a terminal (redirect it: > FILE)",
                      os.fspath(path))


def check_writable(path: PathLike, binary: bool = False) -> None:
    """Raise ``OSError`` when ``atomic_write(path)`` could not write: ``path`` is a
    directory, a socket or a block device, or its directory is missing, is not a
    directory or refuses a new file (permissions, read-only file system); with
    ``binary``, ``path`` (or ``-``) is a terminal. A new file is tried for real: a
    temporary file is created next to ``path`` and removed, as ``atomic_write`` will
    do. A device or FIFO written in place must grant write permission; a FIFO is not
    opened here (that would wait for a reader)."""
    kind = output_kind(path)
    if kind == STDOUT:
        if binary:
            _refuse_terminal(sys.stdout.fileno() if _has_fileno(sys.stdout) else -1, path)
        return
    if kind == IN_PLACE:
        fd = descriptor_of(path)
        if fd is not None:
            try:
                os.fstat(fd)
            except OSError:
                raise OSError(errno.EBADF, f"file descriptor {fd} is not open", os.fspath(path)) from None
            if binary:
                _refuse_terminal(fd, path)
            return
        if not os.access(path, os.W_OK):
            raise PermissionError(errno.EACCES, "permission denied", os.fspath(path))
        if binary and stat.S_ISCHR(os.stat(path).st_mode):
            with contextlib.suppress(OSError):
                fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
                try:
                    _refuse_terminal(fd, path)
                finally:
                    os.close(fd)
        return
    target = os.path.realpath(path)
    fd, tmp = _create_temporary(os.path.dirname(target), os.path.basename(target))
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(tmp)


def _has_fileno(stream) -> bool:
    try:
        stream.fileno()
    except (AttributeError, OSError, ValueError):
        return False
    return True


_WRITE_ERRORS = {errno.EACCES: "permission denied", errno.EPERM: "permission denied",
                 errno.EROFS: "read-only file system", errno.EISDIR: "is a directory",
                 errno.ENOTDIR: "a part of the path is not a directory", errno.ENOSPC: "no space left on device",
                 errno.ENAMETOOLONG: "file name too long",
                 errno.ELOOP: "too many levels of symbolic links (a symbolic link loop?)"}


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

    A regular file or a new name (``output_kind`` ``REPLACE``): the content goes to a
    temporary file next to ``path``, is flushed and fsynced, then renamed over
    ``path`` (and the directory fsynced). If the block raises (KeyboardInterrupt
    included) the temporary file is removed and an existing file at ``path`` is left
    as it was. The temporary file is created with mode 0o666, so the kernel applies
    the umask (and a default ACL) as for a plain ``open()``; the umask is never read
    or changed, which would race with other threads. As with ``open()``, a symbolic
    link at ``path`` is written through: its target is replaced.

    Anything else is never replaced: ``-`` writes to stdout; ``/dev/stdout``,
    ``/dev/fd/N`` write through that descriptor; an existing character device or FIFO
    (``/dev/null``, a terminal, a named pipe) is written in place, as a shell's ``>``
    does; a directory, socket or block device is refused (``OSError``). Binary
    content is never written to a terminal. Such streams cannot be taken back: a
    failing block leaves what was written so far.
    """
    kind = output_kind(path)
    check_not_input(path, inputs)
    if compress is None:
        compress = kind == REPLACE and os.fspath(path).endswith(".gz")
    if kind != REPLACE:
        with _stream_output(path, kind, binary) as raw:
            with _encoded(raw, binary, compress) as out:
                yield out
            raw.flush()
        return
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
def _stream_output(path: PathLike, kind: str, binary: bool) -> Iterator[IO[bytes]]:
    """The byte stream of an output that is written where it is (stdout, a descriptor,
    a device, a FIFO), closed afterwards without closing stdout or the descriptor."""
    if kind == STDOUT:
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        buffer = getattr(sys.stdout, "buffer", None)
        if binary and _has_fileno(sys.stdout):
            _refuse_terminal(sys.stdout.fileno(), path)
        if buffer is None:  # a text-only stdout (an embedding application's)
            if binary:
                raise OSError(errno.EINVAL, "stdout takes text only here", "-")
            buffer = _TextSink(sys.stdout)
        yield buffer
        buffer.flush()
        return
    fd = descriptor_of(path)
    if fd is not None:
        if fd in (1, 2):
            with contextlib.suppress(Exception):
                (sys.stdout if fd == 1 else sys.stderr).flush()
        new = os.dup(fd)
    else:
        new = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0))
    try:
        if binary:
            _refuse_terminal(new, path)
    except BaseException:
        os.close(new)
        raise
    with os.fdopen(new, "wb") as raw:
        yield raw


class _TextSink(io.RawIOBase):
    """Bytes written to a text stream (UTF-8), for a stdout without ``buffer``."""

    def __init__(self, text: IO[str]):
        self._text = text
        self._decode = codecs.getincrementaldecoder("utf-8")().decode

    def writable(self) -> bool:
        return True

    def write(self, b) -> int:
        self._text.write(self._decode(bytes(b)))
        return len(b)

    def flush(self) -> None:
        self._text.flush()


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
    import hashlib  # here, not at import: a command that writes no file never needs them (~6 ms)
    import socket

    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _temporary_stem(name: str) -> str:
    """``name`` as it appears in its temporary files' names: itself, or, when the
    temporary name would pass the usual 255-byte limit of a file name, a prefix of it
    and a digest of the whole (an output name up to that limit can always be written)."""
    raw = os.fsencode(name)
    if len(raw) <= 200:
        return name
    import hashlib

    return os.fsdecode(raw[:100]) + "~" + hashlib.sha256(raw).hexdigest()[:16]


def _temporary_pattern(name: str) -> re.Pattern:
    """Names of the temporary files of outputs called ``name``: ``.<name>.<host>.<pid>.<random>.tmp``."""
    return re.compile(rf"\.{re.escape(_temporary_stem(name))}\.([0-9a-f]{{8}})\.([0-9]+)\.[0-9a-f]{{8}}\.tmp")


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
    import secrets

    remove_stale_temporaries(directory, name)
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    prefix = f".{_temporary_stem(name)}.{_host_tag()}.{os.getpid()}"
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
        if output_kind(path) == REPLACE:
            _write_zip(fh, members)
            return
        # a stream (stdout, a FIFO): the zip is made in a seekable file first, so that its
        # bytes are those a regular file gets (no data descriptors), then copied
        import tempfile  # here: 1.6 ms of every command's start-up

        with tempfile.TemporaryFile() as seekable:
            _write_zip(seekable, members)
            seekable.seek(0)
            shutil.copyfileobj(seekable, fh, 1 << 20)


def _write_zip(fh: IO[bytes], members: Mapping[str, np.ndarray]) -> None:
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
            try:
                zf = zipfile.ZipFile(fh)
            except zipfile.BadZipFile:
                kind = _file_kind(fh)
                if kind is None:
                    raise
                raise _Bad(_another_kind(kind, format)) from None
            with zf:
                if meta_key + ".npy" not in zf.namelist():
                    raise _Bad(_another_kind(_zip_kind(zf), format))
                members = _members(zf, os.fstat(fh.fileno()).st_size)
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


# the kinds of file a model may be mistaken for: what it is, and what to do with it
_KINDS = {
    "suffixlm-loglinear": ("a suffixlm log-linear language model", "score with it: suffixlm ppl MODEL TEST"),
    "suffixlm-crf": ("a suffixlm CRF model", "label with it: suffixlm crf label -m MODEL"),
    "suffixlm-checkpoint": ("a training checkpoint", "go on training from it with --resume; the model file is "
                                                     "written when the training ends"),
    "arpa": ("an ARPA language model", "score with it: suffixlm ppl --arpa FILE TEST"),
    "npy": ("a numpy .npy array", None),
    "empty": ("an empty file", None),
    "text": ("a text file", None),
    "gzip": ("gzip-compressed data", None),
}
_NAMES = {"suffixlm-loglinear": "a suffixlm log-linear model file", "suffixlm-crf": "a suffixlm CRF model file",
          "suffixlm-checkpoint": "a checkpoint file"}


def _another_kind(kind: str, format: str) -> str:
    """The message for a file of another kind than ``format`` (``_KINDS``; or a phrase)."""
    what, hint = _KINDS.get(kind, (kind, None))
    return f"this is {what}, not {_NAMES.get(format, 'a ' + format + ' file')}" + (f" ({hint})" if hint else "")


def _file_kind(fh) -> str | None:
    """What a file that is no zip archive holds, from its first bytes (``_KINDS``'s keys),
    or None when it is none of them (a damaged model is reported as damaged)."""
    try:
        fh.seek(0)
        head = fh.read(1 << 16)
    except OSError:
        return None
    if not head:
        return "empty"
    if head.startswith(b"\x93NUMPY"):
        return "npy"
    gz = head.startswith(GZIP_MAGIC)
    if gz:
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head, 1 << 16)
        except zlib.error:
            return "gzip"
    head = head.removeprefix(BOM)
    first = next((line.strip() for line in head.splitlines() if line.strip()), b"")
    if first == b"\\data\\":
        return "arpa"
    if b"\0" not in head:
        try:
            head.decode("utf-8")
        except UnicodeDecodeError as e:
            if e.start < len(head) - 4:  # not just a character cut at the end of the sample
                return "gzip" if gz else None
        return "text"
    return "gzip" if gz else None


def _zip_kind(zf: zipfile.ZipFile) -> str:
    """What a zip archive without the expected header holds: another container of this
    package (by its header's format), else its members in a phrase."""
    names = zf.namelist()
    for key in ("meta_json.npy", "meta.npy"):
        if key in names:
            try:
                with zf.open(key) as f:
                    if np.lib.format.read_magic(f) == (1, 0):
                        np.lib.format.read_array_header_1_0(f)
                    else:
                        np.lib.format.read_array_header_2_0(f)
                    raw = f.read(1 << 20)
                found = json.loads(raw.decode("utf-8")).get("format")
            except (ValueError, OSError, AttributeError, zipfile.BadZipFile, zlib.error, EOFError):
                continue
            if found in _KINDS:
                return found
    shown = ", ".join(repr(n) for n in names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    if names and all(n.endswith(".npy") for n in names):
        return f"a numpy .npz archive of other arrays ({shown})"
    return f"a zip archive of {shown}" if names else "an empty zip archive"


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
        if found in _KINDS:
            raise _Bad(_another_kind(found, format))
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
