"""Numba kernels that read a text (``corpus.encode_text``): blocks of whole lines as
bytes, split into words and sentences and mapped to ids in one pass.

The rules are ``corpus.read_lines`` and ``corpus.encode_lines``' (their tests hold both):
a line ends at ``\\n``, ``\\r\\n`` or a lone ``\\r``; words are split at the white space
of ``io.WHITESPACE`` (space, tab, ``\\n``, ``\\r``, ``\\v``, ``\\f``: bytes no UTF-8
sequence holds inside a character); a blank line is no sentence; a leading ``<s>`` and
then a trailing ``</s>`` are dropped; ``<s>`` anywhere else stops the block (the caller
raises the error ``read_lines`` raises). Words are interned in an open-addressing hash
table over their UTF-8 bytes (FNV-1a): a new word gets the next id, or ``<unk>``'s when
the table is frozen (a given vocabulary).
"""

from __future__ import annotations

import numpy as np

from ._jit import njit

#: ids of the markers (``corpus.BOS_ID``, ``EOS_ID``, ``UNK_ID``)
BOS_ID = 0
EOS_ID = 1
UNK_ID = 2

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True, inline="always")
def _is_space(b):
    return b == 32 or b == 9 or b == 10 or b == 13 or b == 11 or b == 12


@njit(cache=True, inline="always")
def word_hash(buf, start, end):
    """FNV-1a (64 bits) of the bytes ``buf[start:end]``: every hash table over words'
    bytes (this module's, the ARPA reader's, the binary model's vocabulary)."""
    h = _FNV_OFFSET
    for k in range(start, end):
        h = (h ^ np.uint64(buf[k])) * _FNV_PRIME
    return h


@njit(cache=True, inline="always")
def same_bytes(a, a_start, b, b_start, n):
    """Whether ``a[a_start:a_start + n]`` and ``b[b_start:b_start + n]`` are equal."""
    for k in range(n):
        if a[a_start + k] != b[b_start + k]:
            return False
    return True


@njit(cache=True)
def _place(slots, h, j):
    """Put word ``j`` of hash ``h`` in the first free slot of its probe sequence."""
    mask = slots.shape[0] - 1
    i = np.int64(h & np.uint64(mask))
    while slots[i] >= 0:
        i = (i + 1) & mask
    slots[i] = j


@njit(cache=True)
def rehash(slots, whash, n):
    """Refill ``slots`` (all -1 on entry, a power of two larger than 2 n) with words 0..n-1."""
    for j in range(n):
        _place(slots, whash[j], j)


@njit(cache=True)
def intern(buf, start, end, h, slots, whash, wstart, wlen, arena, n, used, frozen):
    """(id of the word ``buf[start:end]`` of hash ``h``, words, arena bytes used) after it: an
    existing word's id, else a new one appended (``n``) or ``UNK_ID`` when ``frozen``;
    -1 when there is no room for a new one (``WordTable.grow``: ``slots`` stays a power
    of two at least twice the words' room, so a probe always ends)."""
    length = end - start
    mask = slots.shape[0] - 1
    i = np.int64(h & np.uint64(mask))
    while True:
        j = slots[i]
        if j < 0:
            break
        if whash[j] == h and wlen[j] == length and same_bytes(arena, wstart[j], buf, start, length):
            return j, n, used
        i = (i + 1) & mask
    if frozen:
        return UNK_ID, n, used
    if n >= wlen.shape[0] or used + length > arena.shape[0]:
        return -1, n, used
    slots[i] = n
    whash[n] = h
    wstart[n] = used
    wlen[n] = length
    for k in range(length):
        arena[used + k] = buf[start + k]
    return n, n + 1, used + length


@njit(cache=True)
def encode_block(buf, slots, whash, wstart, wlen, arena, n, used, frozen, ids, sent_len):
    """Encode ``buf`` (uint8, whole lines): each sentence's ``<s> ids </s>`` into ``ids``
    (int32, room for 3 len(buf) / 2 + 3) and its length into ``sent_len`` (int64, room
    for len(buf) / 2 + 1). Returns (ids written, sentences, words, lines read, how it
    stopped: -1 at the end of ``buf``, 0 at a line with a ``<s>`` that does not open it
    (``lines read`` is its index), 1 at a line with a new word the table has no room
    for, the offset of the line where it stopped, words interned, arena bytes used).
    Stopped, the lines before that line are encoded and the rest is not."""
    size = buf.shape[0]
    t = 0
    s = 0
    n_words = 0
    line = 0
    p = 0
    while p < size:
        # one line: its words go to ids[t + 1:], <s> at ids[t] once it is a sentence
        line_start = p
        k = 0  # words kept
        seen = False  # any word at all (a line of "<s>" alone is a sentence)
        while p < size:
            b = buf[p]
            if b == 10 or b == 13:
                p += 1
                if b == 13 and p < size and buf[p] == 10:
                    p += 1
                break
            if _is_space(b):
                p += 1
                continue
            start = p
            h = _FNV_OFFSET
            while True:  # the word and its hash (word_hash) in one pass
                h = (h ^ np.uint64(b)) * _FNV_PRIME
                p += 1
                if p == size:
                    break
                b = buf[p]
                if _is_space(b):
                    break
            j, n2, used2 = intern(buf, start, p, h, slots, whash, wstart, wlen, arena, n, used, frozen)
            if j < 0:
                return t, s, n_words, line, 1, line_start, n, used
            n = n2
            used = used2
            if j == BOS_ID:
                if seen:
                    return t, s, n_words, line, 0, line_start, n, used
            else:
                ids[t + 1 + k] = j
                k += 1
            seen = True
        line += 1
        if not seen:
            continue
        if k > 0 and ids[t + k] == EOS_ID:
            k -= 1
        ids[t] = BOS_ID
        ids[t + 1 + k] = EOS_ID
        t += k + 2
        sent_len[s] = k + 2
        s += 1
        n_words += k
    return t, s, n_words, line, -1, size, n, used


@njit(cache=True)
def index_words(arena, wstart, wlen, n, whash, slots):
    """Hash words 0..n-1 (``arena[wstart[j]:wstart[j] + wlen[j]]``) into ``whash`` and
    ``slots`` (all -1 on entry)."""
    for j in range(n):
        h = word_hash(arena, wstart[j], wstart[j] + wlen[j])
        whash[j] = h
        _place(slots, h, j)


# ---------------------------------------------------------------------------- words
# A vocabulary as a hash table over the words' UTF-8 bytes, so that a sentence goes into
# one compiled call as bytes (the binary model's and the log-linear model's ``score``):
# W = [shift, V, offsets of the words in the blob (V + 1), slots (2 ** (64 - shift)):
# word id or -1].

#: the multiplier of the word table's Fibonacci hashing (the binary table's, ``backoff._table_numpy.GOLDEN``)
WORD_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def word_table_of(words) -> tuple[np.ndarray, np.ndarray]:
    """(W, blob) of ``words`` (a list of str, ids in list order), for ``word_id`` and
    ``text_ids``."""
    encoded = [w.encode("utf-8") for w in words]
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    shift = 64 - max(int(2 * len(encoded) - 1).bit_length(), 1)
    return word_table(blob, offsets, shift), blob


@njit(cache=True)
def word_table(blob, offsets, shift):
    """W (above) for the words ``blob[offsets[i]:offsets[i + 1]]``."""
    V = offsets.shape[0] - 1
    T = 1 << (64 - shift)
    W = np.full(2 + V + 1 + T, -1, dtype=np.int64)
    W[0] = shift
    W[1] = V
    W[2:3 + V] = offsets
    for i in range(V):
        h = (word_hash(blob, offsets[i], offsets[i + 1]) * WORD_GOLDEN) >> np.uint64(shift)
        j = np.int64(h)
        while W[3 + V + j] != -1:
            j = (j + 1) & (T - 1)
        W[3 + V + j] = i
    return W


@njit(cache=True, inline="always")
def word_id(W, blob, text, a, b, unk):
    """Id of the word ``text[a:b]`` (bytes), ``unk`` if it is not in the vocabulary."""
    shift = W[0]
    V = W[1]
    T = np.int64(1) << (64 - shift)
    j = np.int64((word_hash(text, a, b) * WORD_GOLDEN) >> np.uint64(shift))
    n = b - a
    for _ in range(T):
        i = W[3 + V + j]
        if i < 0:
            return unk
        s = W[2 + i]
        if W[3 + i] - s == n and same_bytes(blob, s, text, a, n):
            return i
        j = (j + 1) & (T - 1)
    return unk


@njit(cache=True)
def text_ids(W, blob, text, pos, end, eos, unk, eos_id, out, n):
    """The ids of the words of ``text[pos:end]`` (UTF-8 bytes, split on ASCII white
    space as ``io.split_words``), then ``eos_id`` when ``eos``, into ``out`` from ``n``
    on; returns the new count (``out`` has room: a word takes at least two bytes with
    its separator)."""
    i = pos
    while i < end:
        while i < end and _is_space(text[i]):
            i += 1
        if i == end:
            break
        j = i
        while j < end and not _is_space(text[j]):
            j += 1
        out[n] = word_id(W, blob, text, i, j, unk)
        n += 1
        i = j
    if eos:
        out[n] = eos_id
        n += 1
    return n


@njit(cache=True)
def line_starts(text, n_lines):
    """int64[n_lines + 1]: where each of the first ``n_lines`` lines of ``text`` (UTF-8
    bytes, lines ended by a line feed, the last one optionally) starts, then one past
    the last one's end (its line feed, or the text's end): line s is
    ``text[starts[s]:starts[s + 1] - 1]`` (empty for a line past the text's end)."""
    starts = np.empty(n_lines + 1, dtype=np.int64)
    starts[0] = 0
    pos = 0
    n_text = len(text)
    for s in range(n_lines):
        while pos < n_text and text[pos] != 10:
            pos += 1
        pos = min(pos + 1, n_text + 1)
        starts[s + 1] = pos
    return starts


@njit(cache=True)
def longest_span(offsets, first, last):
    """max of ``offsets[s + 1] - offsets[s]`` for s in ``first .. last - 1`` (0 for none):
    the room a chunk's longest sentence (or line, in bytes) needs."""
    longest = 0
    for s in range(first, last):
        longest = max(longest, offsets[s + 1] - offsets[s])
    return longest
