"""The probing table's two record layouts, read alike by the query kernels
(``_binary_kernels``): which one a table has is its dtype, so numba compiles each kernel
once per layout and neither pays for the other (no branch at run time).

* int64 ``D``: 16-byte records (``_binary_kernels`` documents them): record r's key and
  flags in ``D[2 r]``, its exact float32 log10 p and back-off weight in
  ``F[4 r + 2]``, ``F[4 r + 3]`` (``F = D.view(float32)``); the regions' directory at
  ``D[slot(D, V + S)]`` on.
* uint64 ``D``: 8-byte quantised records (``build-binary -q``, KenLM's ``-q`` / ``-b``):
  record r is ``D[r]``, its key in the low ``QKEY_BITS`` bits, then the code of its
  log10 p (8 bits), the code of its back-off weight (8 bits) and the flags at the
  16-byte layout's bits (61, 62; an empty slot is all ones, as there). After the
  records: the directory (``2 (order + 1)`` words, as in the 16-byte layout), the
  unigrams' exact log10 p and back-off weight (V words of two float32: KenLM does not
  quantise unigrams either), then the codebooks (``QCODES`` words a length L = 0 ..
  order, word ``L QCODES + c`` the centres of code c as two float32: log10 p, back-off
  weight).

Every accessor takes the table as its first argument; ``q`` is ``bases(D, V, S,
order)``: the word offsets of the unigram values and of the codebooks (unused, 0, in the
16-byte layout). A length L and a code are at most the model's order and 255, and the
loader checks that the table holds the codebooks of every length up to the order, so a
value read never leaves the table.

The accessors index ``D`` and ``F`` with unsigned integers: numba adds a branch or a
select for Python's negative indices to every signed one, a tenth of a batch walk's
time (``_binary_kernels._walk``, measured here). So a record number they take must
be one the kernels have checked (0 .. V + S - 1), as every caller's is: a negative one
is not wrapped round but read far outside the table.
"""

from __future__ import annotations

import numpy as np
from numba import types
from numba.extending import overload

from ._table_numpy import KEY_MASK, QCODE_MASK, QCODES, QBOW_SHIFT, QKEY_MASK, QPROB_SHIFT


def _layout(D):
    """1 for the 16-byte layout, 2 for the quantised one, 0 for neither (no overload)."""
    if isinstance(D, types.Array) and D.ndim == 1:
        if D.dtype == types.int64:
            return 1
        if D.dtype == types.uint64:
            return 2
    return 0


def rec(D, r):
    """Record r's key, flags (and codes) as an int64 (-1: an empty slot)."""


def keyof(D, t):
    """The key of the record word ``t`` (flags and codes off)."""


def slot(D, r):
    """Index in ``D`` of record r's first word (what ``prefetch`` takes)."""


def bases(D, V, S, order):
    """``q``: (word offset of the unigram values, of the codebooks); (0, 0) in the
    16-byte layout."""


def prob_of(D, F, r, L, q):
    """log10 p (float32) of record r, a part of L words."""


def bow_of(D, F, r, L, q):
    """Back-off weight (float32) of record r, a part of L words."""


@overload(rec)
def _rec(D, r):
    if _layout(D) == 1:
        return lambda D, r: D[np.uint64(2 * r)]
    if _layout(D) == 2:
        return lambda D, r: np.int64(D[np.uint64(r)])


@overload(keyof)
def _keyof(D, t):
    if _layout(D) == 1:
        return lambda D, t: t & KEY_MASK
    if _layout(D) == 2:
        return lambda D, t: t & QKEY_MASK


@overload(slot)
def _slot(D, r):
    if _layout(D) == 1:
        return lambda D, r: 2 * r
    if _layout(D) == 2:
        return lambda D, r: r


@overload(bases)
def _bases(D, V, S, order):
    if _layout(D) == 1:
        return lambda D, V, S, order: (np.int64(0), np.int64(0))
    if _layout(D) == 2:
        def impl(D, V, S, order):
            u = np.int64(V + S + 2 * (order + 1))
            return u, u + V
        return impl


def _value_of(D, F, r, L, q, j):
    """``prob_of`` (j = 0) or ``bow_of`` (j = 1)."""


@overload(_value_of)
def _value(D, F, r, L, q, j):
    if _layout(D) == 1:
        return lambda D, F, r, L, q, j: F[np.uint64(4 * r + 2 + j)]
    if _layout(D) == 2:
        def impl(D, F, r, L, q, j):
            if L <= 1:
                return F[np.uint64(2 * (q[0] + r) + j)]
            c = (D[np.uint64(r)] >> np.uint64(QBOW_SHIFT if j else QPROB_SHIFT)) & np.uint64(QCODE_MASK)
            return F[np.uint64(2 * (q[1] + L * QCODES + np.int64(c)) + j)]
        return impl


@overload(prob_of)
def _prob(D, F, r, L, q):
    if _layout(D):
        return lambda D, F, r, L, q: _value_of(D, F, r, L, q, 0)


@overload(bow_of)
def _bow(D, F, r, L, q):
    if _layout(D):
        return lambda D, F, r, L, q: _value_of(D, F, r, L, q, 1)
