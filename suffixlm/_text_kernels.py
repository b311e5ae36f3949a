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

from ._address import load_word, trailing_zeros
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
    """FNV-1a (64 bits) of the bytes ``buf[start:end]``: the tables that intern words as
    they are read (this module's, the ARPA reader's); a model's vocabulary for queries
    hashes with ``head_hash``."""
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
# W = [shift, V, offsets of the words in the blob (V + 1), then 2 ** (64 - shift) slots of
# two words each: the word's head (its first 8 bytes, little-endian, zeros after a shorter
# word) and its id | its length in bytes << 32 (-1: an empty slot)]. A word of at most 8
# bytes is found by its slot alone (one cache line: its head and length are the word);
# a longer one compares its bytes after the head with the blob.

#: the multiplier of the word table's Fibonacci hashing (the binary table's, ``backoff._table_numpy.GOLDEN``)
WORD_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
#: The multiplier that folds a word's 8-byte chunks after its head into its hash.
_CHUNK_PRIME = np.uint64(0xFF51AFD7ED558CCD)


def word_table_of(words) -> tuple[np.ndarray, np.ndarray]:
    """(W, blob) of ``words`` (a list of str, ids in list order), for ``word_id`` and
    ``text_ids``."""
    encoded = [w.encode("utf-8") for w in words]
    blob = np.frombuffer(b"".join(encoded), dtype=np.uint8).copy()
    offsets = np.zeros(len(encoded) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in encoded], out=offsets[1:])
    shift = 64 - max(int(2 * len(encoded) - 1).bit_length(), 1)
    return word_table(blob, offsets, shift), blob


@njit(cache=True, inline="always")
def head_hash(buf, a, b):
    """(head, hash) of the word ``buf[a:b]``: its first 8 bytes as a little-endian
    integer (as int64 bits), and a 64-bit hash of all of its bytes and its length (the
    8-byte chunks after the head folded in by multiplication)."""
    n = b - a
    head = np.uint64(0)
    m = min(n, 8)
    for k in range(m):
        head |= np.uint64(buf[a + k]) << np.uint64(8 * k)
    h = head * _CHUNK_PRIME
    k = a + 8
    while k < b:
        c = np.uint64(0)
        for t in range(min(b - k, 8)):
            c |= np.uint64(buf[k + t]) << np.uint64(8 * t)
        h = ((h ^ (h >> np.uint64(29))) ^ c) * _CHUNK_PRIME
        k += 8
    return np.int64(head), _with_length(h, n)


@njit(cache=True, inline="always")
def _with_length(h, n):
    """The word hash: ``h`` (its head times ``_CHUNK_PRIME``, its later chunks folded in)
    with its length ``n`` mixed in (``head_hash``, ``text_word_id``)."""
    return (h ^ np.uint64(n)) * WORD_GOLDEN


@njit(cache=True)
def word_table(blob, offsets, shift):
    """W (above) for the words ``blob[offsets[i]:offsets[i + 1]]``."""
    V = offsets.shape[0] - 1
    T = 1 << (64 - shift)
    W = np.full(3 + V + 2 * T, -1, dtype=np.int64)
    W[0] = shift
    W[1] = V
    W[2:3 + V] = offsets
    base = 3 + V
    for i in range(V):
        head, h = head_hash(blob, offsets[i], offsets[i + 1])
        j = np.int64(h >> np.uint64(shift))
        while W[base + 2 * j + 1] != -1:
            j = (j + 1) & (T - 1)
        W[base + 2 * j] = head
        W[base + 2 * j + 1] = i | ((offsets[i + 1] - offsets[i]) << 32)
    return W


@njit(cache=True, inline="always")
def _find_word(W, blob, text, a, n, head, h, unk):
    """Id of the word ``text[a:a + n]`` of ``head`` and hash ``h`` (``head_hash``), ``unk``
    if it is not in the vocabulary: its slot's head and length, then its bytes after the
    head for a word longer than 8 bytes."""
    shift = W[0]
    V = W[1]
    T = np.int64(1) << (64 - shift)
    base = 3 + V
    j = np.int64(h >> np.uint64(shift))
    for _ in range(T):
        e = W[base + 2 * j + 1]
        if e < 0:
            return unk
        if (e >> 32) == n and W[base + 2 * j] == head:
            i = e & 0xFFFFFFFF
            if n <= 8 or same_bytes(blob, W[2 + i] + 8, text, a + 8, n - 8):
                return i
        j = (j + 1) & (T - 1)
    return unk


@njit(cache=True, inline="always")
def word_id(W, blob, text, a, b, unk):
    """Id of the word ``text[a:b]`` (bytes), ``unk`` if it is not in the vocabulary."""
    head, h = head_hash(text, a, b)
    return _find_word(W, blob, text, a, b - a, head, h, unk)


#: Bytes 0x7F in every lane of a uint64, and 0x80 (``_space_mask``).
_LOW7 = np.uint64(0x7F7F7F7F7F7F7F7F)
_HIGH = np.uint64(0x8080808080808080)


#: A line feed in every lane (``line_starts``).
_FEEDS = np.uint64(0x0A0A0A0A0A0A0A0A)


@njit(cache=True, inline="always")
def _zero_lanes(t):
    """The high bit of every zero byte of ``t``, no other bit set (each lane on its own:
    its low 7 bits plus 0x7F carry into its high bit, never into the next lane)."""
    return ~(((t & _LOW7) + _LOW7) | t) & _HIGH


@njit(cache=True, inline="always")
def _space_mask(v):
    """The high bit of every byte of ``v`` (8 bytes of text) that is white space
    (``_is_space``: 32, or 9 to 13), no other bit set: each byte's low 7 bits compared
    in its own lane (no carry crosses a lane), a byte of 128 and up never white space."""
    low = v & _LOW7
    from9 = low + np.uint64(0x7777777777777777)  # lane >= 0x80 iff low >= 9
    from14 = low + np.uint64(0x7272727272727272)  # iff low >= 14
    return ((from9 & ~from14) & ~v & _HIGH) | _zero_lanes(v ^ np.uint64(0x2020202020202020))


@njit(cache=True, inline="always")
def word_end(text, i, end):
    """The end of the word that starts at ``text[i]`` (not white space), at most ``end``:
    eight bytes at a time (``_space_mask``) while a whole load fits in ``text``, then
    byte by byte."""
    size = len(text)
    j = i
    while j < end:
        if j + 8 > size:
            while j < end and not _is_space(text[j]):
                j += 1
            return j
        m = _space_mask(load_word(text, j))
        if m != 0:
            return min(j + np.int64(trailing_zeros(m) >> np.uint64(3)), end)
        j += 8
    return end


@njit(cache=True, inline="always")
def text_word_id(W, blob, text, a, b, unk):
    """``word_id`` of ``text[a:b]``, a word of at most 8 bytes read in one load where
    the load fits in ``text``: the same head and hash as ``head_hash``."""
    n = b - a
    if n > 8 or a + 8 > len(text):
        return word_id(W, blob, text, a, b, unk)
    v = load_word(text, a)
    if n < 8:
        v &= (np.uint64(1) << np.uint64(8 * n)) - np.uint64(1)
    return _find_word(W, blob, text, a, n, np.int64(v), _with_length(v * _CHUNK_PRIME, n), unk)


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
        j = word_end(text, i, end)
        out[n] = text_word_id(W, blob, text, i, j, unk)
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
        while pos < n_text:  # the next line feed, eight bytes at a time while a load fits
            if pos + 8 > n_text:
                while pos < n_text and text[pos] != 10:
                    pos += 1
                break
            m = _zero_lanes(load_word(text, pos) ^ _FEEDS)
            if m != 0:
                pos += np.int64(trailing_zeros(m) >> np.uint64(3))
                break
            pos += 8
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
