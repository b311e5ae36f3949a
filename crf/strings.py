"""A compact, immutable sequence of strings: the observation strings of a feature space.

A CRF's observations are hundreds of thousands of short strings. As Python ``str``
objects each costs about 50 bytes of header and a list slot beside its characters;
:class:`StringTable` keeps them as one UTF-8 buffer and the offsets of their ends (about
a third of the memory: ``benchmarks/seen_states.md``), which is also how a model file
stores them (``obs_blob``, ``obs_offsets``), so saving writes the two arrays as they are.
Strings are made on access. Any Python string is held, lone surrogates included (encoded
with ``surrogatepass``, so they come back unchanged); :meth:`StringTable.utf8_error`
finds the first string that a strict UTF-8 file cannot hold.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

import numpy as np

__all__ = ["StringTable"]


class StringTable(Sequence):
    """Strings ``blob[offsets[i]:offsets[i + 1]]`` (UTF-8, ``surrogatepass``), i = 0..n-1.

    ``blob``: uint8 (size,); ``offsets``: int64 (n + 1,), from 0 to size, non-decreasing,
    every one on a character boundary (callers reading a file check this first:
    ``crf.modelfile.read``)."""

    __slots__ = ("blob", "offsets", "_text")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray):
        self.blob = np.ascontiguousarray(blob, dtype=np.uint8)
        self.offsets = np.ascontiguousarray(offsets, dtype=np.int64)
        self._text = None  # the whole blob decoded, when it is ASCII (then offsets index it too)

    @classmethod
    def of(cls, strings: Iterable[str]) -> "StringTable":
        """The table of ``strings`` (a table is returned as it is)."""
        if isinstance(strings, StringTable):
            return strings
        if not isinstance(strings, (list, tuple)):
            strings = list(strings)
        joined = "".join(strings)
        if joined.isascii():
            sizes = np.fromiter(map(len, strings), dtype=np.int64, count=len(strings))
            data = joined.encode("ascii")
        else:
            sizes = np.fromiter((len(s.encode("utf-8", "surrogatepass")) for s in strings), dtype=np.int64,
                                count=len(strings))
            data = joined.encode("utf-8", "surrogatepass")
        joined = None
        offsets = np.zeros(len(strings) + 1, dtype=np.int64)
        np.cumsum(sizes, out=offsets[1:])
        return cls(np.frombuffer(data, dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return self.offsets.shape[0] - 1

    def _ascii_text(self) -> str | None:
        if self._text is None:
            data = self.blob.tobytes()
            self._text = data.decode("ascii") if data.isascii() else ""
        return self._text if len(self._text) == self.blob.shape[0] else None

    def __getitem__(self, i):
        if isinstance(i, slice):
            return [self[k] for k in range(*i.indices(len(self)))]
        n = len(self)
        k = int(i)
        if k != i or isinstance(i, bool):
            raise TypeError(f"StringTable indices must be integers or slices, not {type(i).__name__}")
        if k < 0:
            k += n
        if not 0 <= k < n:
            raise IndexError("StringTable index out of range")
        a, b = int(self.offsets[k]), int(self.offsets[k + 1])
        return self.blob[a:b].tobytes().decode("utf-8", "surrogatepass")

    def __iter__(self) -> Iterator[str]:
        off = self.offsets.tolist()
        text = self._ascii_text()
        if text is not None:
            return map(text.__getitem__, map(slice, off[:-1], off[1:]))
        data = self.blob.tobytes()
        return (data[a:b].decode("utf-8", "surrogatepass") for a, b in zip(off[:-1], off[1:]))

    def __eq__(self, other) -> bool:
        if isinstance(other, StringTable):
            return np.array_equal(self.offsets, other.offsets) and np.array_equal(self.blob, other.blob)
        if isinstance(other, (list, tuple)):
            return len(other) == len(self) and all(a == b for a, b in zip(self, other))
        return NotImplemented

    __hash__ = None  # mutable arrays inside: not hashable, like a list

    def __repr__(self) -> str:
        head = ", ".join(repr(s) for s in self[:3])
        return f"StringTable([{head}{', ...' if len(self) > 3 else ''}], {len(self)} strings)"

    def select(self, keep) -> "StringTable":
        """The table of the strings where ``keep`` (bool (n,), or increasing indices) holds."""
        keep = np.asarray(keep)
        if keep.dtype != np.bool_:
            mask = np.zeros(len(self), dtype=np.bool_)
            mask[keep.astype(np.int64)] = True
            keep = mask
        if keep.all():
            return self
        sizes = np.diff(self.offsets)
        offsets = np.zeros(int(keep.sum()) + 1, dtype=np.int64)
        np.cumsum(sizes[keep], out=offsets[1:])
        return StringTable(self.blob[np.repeat(keep, sizes)], offsets)  # a byte mask: one byte a byte

    def utf8_error(self) -> str | None:
        """The first string holding what strict UTF-8 cannot (a lone surrogate), or None."""
        try:
            self.blob.tobytes().decode("utf-8")
        except UnicodeDecodeError as exc:
            k = int(np.searchsorted(self.offsets, exc.start, side="right")) - 1
            return self[k]
        return None
