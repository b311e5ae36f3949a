"""Numba kernels of the binary back-off model (``suffixlm.backoff.binary``): the probing table
of every part of every explicit n-gram, its construction, and the queries.

The table is one int64 array ``D`` of 16-byte records (two int64 each), read through
``F = D.view(float32)`` as well:

* ``D[2 r]``: the record's key, with flag bits 61 (``EXTENDS``: some explicit n-gram
  continues the part to the right, or it has a non-zero back-off weight) and 62
  (``EXPLICIT``: the model lists the part itself; else it is one of KenLM's "blanks");
* ``F[4 r + 2]``: log10 p of the part's last word after the rest (a blank's: the
  backed-off probability, summed as KenLM does); ``F[4 r + 3]``: its back-off weight.

Records ``0 .. V - 1`` are the unigrams (record ``w`` is word ``w``, key ``w``). Records
``V .. V + S - 1`` hold the parts of two words and more, the parts of L words in a
region of their own, a Robin Hood linear-probing hash table (the directory after the
records, ``D[2 (V + S) + 2 L]`` and ``+ 1``, gives its first slot and size). The key of
part ``x_1 .. x_m`` is ``record(x_2 .. x_m) * V + x_1`` (the record of the part
without its first word, then that word), so a record's key gives both its first word and
the rest, and every lookup extends a part found one step before by one word to the left.
An empty slot is -1. A language-model state is the record of the context it keeps (-1:
the empty context).

Every loop is bounded by the table's size or the model's order, and every record number
read from the table is checked before use, so a damaged table gives wrong numbers, never
a crash or a hang.
"""

from __future__ import annotations

import numpy as np

from .._jit import njit, prange
from ._table_numpy import EMPTY, EXPLICIT, EXTENDS, GOLDEN, KEY_MASK, MAX_SLOTS  # the layout
from .._address import array_at, prefetch
from ._records import bases, bow_of, keyof, prob_of, rec, slot  # either layout
from .._text_kernels import line_starts, longest_span, text_ids


@njit(cache=True)
def home(key, size):
    """Home slot of ``key`` in a table of ``size`` < 2**32 slots (Fibonacci hashing,
    then multiply-shift onto any size)."""
    h = np.uint64(key) * GOLDEN
    return np.int64(((h >> np.uint64(32)) * np.uint64(size)) >> np.uint64(32))


@njit(cache=True)
def region(D, V, S, L):
    """(first slot, number of slots) of the parts of L words: the directory after the
    records, checked against the table ((0, 0) where it does not fit)."""
    i = slot(D, V + S) + 2 * L
    if L < 2 or i + 1 >= D.shape[0]:
        return 0, 0
    B = np.int64(D[i])
    n = np.int64(D[i + 1])
    if B < 0 or n <= 0 or n > MAX_SLOTS or B + n > S:
        return 0, 0
    return B, n


#: Bit 63 of a slot's word: set only in an empty slot (EMPTY), never in a record's.
_SIGN = np.int64(-(1 << 63))
#: The slots ``_probe`` reads at once from a key's home slot.
WINDOW = 4


@njit(cache=True, inline="always")
def _probe(D, base, n, key):
    """``find`` in the region of ``n`` > 0 slots from record ``base``. The first
    ``WINDOW`` slots from the key's home are read and compared at once, without a
    branch per slot (a scan's length varies from key to key, so a branch a slot is
    often mispredicted): at load 0.8, a walk of PTB test with the default-cut-off KN5
    finds 82 % of its keys there, and 19 % of all its probes end there on an empty
    slot or on the Robin Hood rule; the rest go on slot by slot. A key lies at most
    once in its region and never beyond an empty slot, so the answer is the
    slot-by-slot scan's on every table ``fill_region`` makes."""
    h = home(key, n)
    d0 = 0
    if h + WINDOW <= n:
        r = base + h
        t0 = rec(D, r)
        t1 = rec(D, r + 1)
        t2 = rec(D, r + 2)
        t3 = rec(D, r + 3)
        # keyof | sign: the key, or a negative number for an empty slot
        found = r + 3 if (keyof(D, t3) | (t3 & _SIGN)) == key else -1
        found = r + 2 if (keyof(D, t2) | (t2 & _SIGN)) == key else found
        found = r + 1 if (keyof(D, t1) | (t1 & _SIGN)) == key else found
        found = r if (keyof(D, t0) | (t0 & _SIGN)) == key else found
        if found >= 0 or (t0 | t1 | t2 | t3) < 0:
            return found
        ht = home(keyof(D, t3), n)  # Robin Hood: a last resident nearer its home than the key would be ends it
        if (h + 3 - ht if h + 3 >= ht else h + 3 + n - ht) < 3:
            return -1
        d0 = WINDOW
        h += WINDOW
        if h == n:
            h = 0
    for d in range(d0, n):
        t = rec(D, base + h)
        if t == EMPTY:
            return -1
        tk = keyof(D, t)
        if tk == key:
            return base + h
        if d >= 2:  # Robin Hood: no key lies beyond a resident nearer its own home
            ht = home(tk, n)
            if (h - ht if h >= ht else h + n - ht) < d:
                return -1
        h += 1
        if h == n:
            h = 0
    return -1


@njit(cache=True)
def find(D, V, S, L, key):
    """Record of the part of L words with ``key`` (flags off), or -1: a linear scan from
    its home slot to the key, an empty slot, or (from the third slot on) a resident
    nearer its own home than the key would be, beyond which Robin Hood placement
    (``fill_region``) puts no key: at load 0.8 a missing key's scan is otherwise about
    13 slots with a long tail (``_table_numpy.find_many`` stops by the same rule)."""
    B, n = region(D, V, S, L)
    if n == 0:
        return -1
    return _probe(D, V + B, n, key)


@njit(cache=True)
def fill_region(D, V, B, n, keys, flags, prob, bow):
    """Insert the parts ``keys`` (with their flag bits, probabilities and back-off
    weights) by Robin Hood hashing into the empty region of ``n`` slots from slot ``B``
    (room for them all)."""
    F = D.view(np.float32)
    base = V + B
    for i in range(keys.shape[0]):
        k = keys[i]
        f = flags[i]
        p = prob[i]
        w = bow[i]
        h = home(k, n)
        d = 0
        while True:
            r = base + h
            t = D[2 * r]
            if t == EMPTY:
                D[2 * r] = k | f
                F[4 * r + 2] = p
                F[4 * r + 3] = w
                break
            tk = t & KEY_MASK
            ht = home(tk, n)
            dt = h - ht if h >= ht else h + n - ht
            if dt < d:  # the entry nearer its home gives way
                tp = F[4 * r + 2]
                tw = F[4 * r + 3]
                D[2 * r] = k | f
                F[4 * r + 2] = p
                F[4 * r + 3] = w
                k, f, p, w, d = tk, t ^ tk, tp, tw, dt
            h += 1
            d += 1
            if h == n:
                h = 0


@njit(cache=True)
def records_of(D, V, S, L, keys):
    """int64: the record of every key of an L-word part (-1 where absent)."""
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        out[i] = find(D, V, S, L, keys[i])
    return out


@njit(cache=True)
def _words_of(D, V, S, r, order, out):
    """Words of the part at record ``r``, first to last, into ``out``; their number
    (0 if the chain is broken or longer than ``order``)."""
    m = 0
    while r >= V:
        if r >= V + S or m >= order:
            return 0
        k = D[2 * r] & KEY_MASK
        out[m] = k % V
        m += 1
        r = k // V
    if r < 0 or m >= order:
        return 0
    out[m] = r
    return m + 1


@njit(cache=True)
def fill_blanks(D, V, S, order):
    """The probability of every blank (a part the model does not list): the longest
    explicit part ending with its last word, plus the back-off weights of its contexts
    from that length on, added one by one in float32, shortest first (KenLM's order,
    so that a query ending on the blank sums exactly as one that backs off past it)."""
    F = D.view(np.float32)
    words = np.empty(order, dtype=np.int64)
    for r in range(V, V + S):
        t = D[2 * r]
        if t == EMPTY or (t & EXPLICIT) != 0:
            continue
        m = _words_of(D, V, S, r, order, words)
        if m < 2:
            continue
        w = words[m - 1]
        lp = F[4 * w + 2] if (D[2 * w] & EXPLICIT) != 0 else np.float32(-np.inf)
        hit = 1
        g = w
        for j in range(1, m):  # the parts (words[m-1-j .. m-1])
            g = find(D, V, S, j + 1, g * V + words[m - 1 - j])
            if g < 0:
                break
            if (D[2 * g] & EXPLICIT) != 0:
                lp = F[4 * g + 2]
                hit = j + 1
        c = words[m - 2]  # contexts (words[m-1-d .. m-2]), d = 1 .. m-1
        for d in range(1, m):
            if d > 1:
                c = find(D, V, S, d, c * V + words[m - 1 - d])
                if c < 0:
                    break
            if d >= hit:
                lp = lp + F[4 * c + 3]
        F[4 * r + 2] = lp


@njit(cache=True, inline="always")
def _state_length(D, V, S, order, state):
    """Number of words of the context at record ``state``: its record chain down to a
    word, at most order - 1 long (0 for -1 or a record that is not a state of this
    model)."""
    k = 0
    r = state
    while r >= V and r < V + S and k < order:
        k += 1
        r = keyof(D, rec(D, r)) // V
    if r < 0 or r >= V + S or k >= order:
        return 0
    return k + 1


@njit(cache=True)
def decode_state(D, V, S, order, state, ctxw, crec):
    """Fill ``ctxw[d - 1]`` with the d-th most recent word of the context at record
    ``state`` and ``crec[d - 1]`` with the record of its last d words; returns its
    length (``_state_length``)."""
    k = _state_length(D, V, S, order, state)
    r = state
    for i in range(k):  # the context's word i, oldest first, is its (k - i)-th most recent
        crec[k - 1 - i] = r
        if r >= V:
            key = keyof(D, rec(D, r))
            ctxw[k - 1 - i] = key % V
            r = key // V
        else:
            ctxw[k - 1 - i] = r
    return k


@njit(cache=True, inline="always")
def _suffix_record(D, V, state, k, d):
    """Record of the last d words of the k-word context at record ``state`` (d <= k, a
    chain ``_state_length`` has checked): k - d steps down the record chain."""
    r = state
    for _ in range(k - d):
        r = keyof(D, rec(D, r)) // V
    return r


@njit(cache=True)
def _step(D, F, V, S, order, state, w, missing_lp):
    """Score word ``w`` after the context at record ``state`` (-1: the empty context; a
    record that is no state of this model counts as empty): (log10 p as float32, n-gram
    length, the state after w: the record of its longest part of at most order - 1
    words that extends, or -1). The back-off weights of the contexts past the longest
    part found are added one by one, shortest first, in float32 (KenLM's sums). The
    context's words and records are read off the state's record chain where they are
    needed (at most order - 1 records, just read, so in cache): no arrays, nothing
    allocated, for a decoder's hot path as for a text."""
    k = _state_length(D, V, S, order, state)
    if w < 0 or w >= V:
        return np.float32(missing_lp), 1, -1
    qb = bases(D, V, S, order)
    f = rec(D, w)
    lp = prob_of(D, F, w, 1, qb)
    if (f & EXPLICIT) == 0 or lp == -np.inf:  # KenLM's substitute, backed off through the whole context
        lp = np.float32(missing_lp)
        for d in range(1, k + 1):
            lp = lp + bow_of(D, F, _suffix_record(D, V, state, k, d), d, qb)
        return lp, 1, (w if order > 1 else -1)
    nxt = w if ((f & EXTENDS) != 0 and order > 1) else -1
    g = w
    n = 1
    for j in range(1, k + 1):
        c = _suffix_record(D, V, state, k, j)
        x = keyof(D, rec(D, c)) % V if c >= V else c  # the j-th most recent word
        g2 = find(D, V, S, j + 1, g * V + x)
        if g2 < 0:
            break
        g = g2
        n = j + 1
        lp = prob_of(D, F, g, n, qb)
        if n <= order - 1 and (rec(D, g) & EXTENDS) != 0:
            nxt = g
    for d in range(n, k + 1):
        lp = lp + bow_of(D, F, _suffix_record(D, V, state, k, d), d, qb)
    return lp, n, nxt


@njit(cache=True)
def step(D, V, S, order, state, w, missing_lp):
    """KenLM's ``BaseFullScore`` on a state record: (log10 p(w | state) as float64,
    n-gram length, the state after w)."""
    lp, n, nxt = _step(D, D.view(np.float32), V, S, order, state, w, missing_lp)
    return np.float64(lp), n, nxt


#: The slots of ``step_at``'s parameter block (int64[6]): the table's address and length,
#: V, S, the order, and the bits of log10 p of a missing word (a float64).
STEP_PARAMS = 6


@njit(cache=True)
def step_at(params, state, w):
    """``step`` on the table ``D`` described by the parameter block at the address
    ``params`` (``STEP_PARAMS``: ``D.ctypes.data``, ``D.shape[0]`` (C-contiguous int64),
    V, S, order, missing log10 p): the decoder's per-call path, which passes three
    integers (numba's dispatch costs about 0.1 µs per array argument, and some 0.01 µs per
    number). The caller keeps ``D`` and the block alive (``table.TableQueries._bind_queries``
    holds them beside the address)."""
    P = array_at(params, STEP_PARAMS, np.int64)
    return _step_in(params, P, array_at(P[0], P[1], np.int64), state, w)


@njit(cache=True)
def step_at_quantised(params, state, w):
    """``step_at`` on a quantised table (``_records``: the block's table address is that
    of a uint64 array)."""
    P = array_at(params, STEP_PARAMS, np.int64)
    return _step_in(params, P, array_at(P[0], P[1], np.uint64), state, w)


@njit(cache=True, inline="always")
def _step_in(params, P, D, state, w):
    """``step_at``'s step, on the table ``D`` its block describes."""
    missing_lp = array_at(params + 8 * (STEP_PARAMS - 1), 1, np.float64)[0]
    lp, n, nxt = _step(D, D.view(np.float32), P[2], P[3], P[4], state, w, missing_lp)
    return np.float64(lp), n, nxt


@njit(cache=True)
def state_of(D, V, S, order, words):
    """The state after the history ``words`` (int64, oldest first): the record of its
    longest suffix that is a part and extends (at most order - 1 words), or -1."""
    n = words.shape[0]
    best = -1
    if n == 0 or order < 2:
        return best
    w = words[n - 1]
    if w < 0 or w >= V:
        return best
    g = w
    if (rec(D, w) & EXTENDS) != 0:
        best = w
    for j in range(1, min(n, order - 1)):
        g = find(D, V, S, j + 1, g * V + words[n - 1 - j])
        if g < 0:
            break
        if (rec(D, g) & EXTENDS) != 0:
            best = g
    return best


@njit(cache=True)
def regions(D, V, S, order):
    """int64[order + 1, 2]: ``region(D, V, S, L)`` of every length L (row L), read once
    for a walk of many words."""
    out = np.zeros((order + 1, 2), dtype=np.int64)
    for L in range(2, order + 1):
        B, n = region(D, V, S, L)
        out[L, 0] = V + B
        out[L, 1] = n
    return out


@njit(cache=True, inline="always")
def _unigram(D, F, qb, V, w, missing_lp):
    """The start of word ``w``'s walk: (log10 p of its unigram, its record's flags, 0 for
    an id outside the vocabulary and 1 for a word the model does not list or gives
    -inf (KenLM's substitute, log10 p ``missing_lp``, backed off through the whole
    context), else 2)."""
    if w < 0 or w >= V:
        return np.float32(missing_lp), np.int64(0), 0
    lp = prob_of(D, F, w, 1, qb)
    f = rec(D, w)
    if (f & EXPLICIT) == 0 or lp == -np.inf:
        return np.float32(missing_lp), f, 1
    return lp, f, 2


#: How many words ahead ``_walk`` prefetches a bigram's slot.
AHEAD = 2


@njit(cache=True, inline="always")
def _walk(D, F, qb, V, order, R, tokens, a, b, bos, missing_lp, out_lp, out_len, C):
    """The float32 sum of the sentence ``tokens[a:b]`` (``score_sentences``), filling
    ``out_lp`` / ``out_len`` there when they are not empty. It starts from ``<s>``
    (record 0) when ``bos``, else from the empty context.

    ``_step`` word after word, with the records of the context's suffixes kept in ``C``
    (int64[4 m], m = max(order, 1): the context in one half, the next context in the
    other, the halves changing roles each word; in a half of 2 m from ``c``, ``C[c + d -
    1]`` is the record of the context's last d words and ``C[c + m + d - 1]`` its d-th
    most recent word) instead of read off the state's record chain (the records found
    for the word's parts are those of the next context's suffixes, as in KenLM's state;
    ``_step`` decodes the words from the records' keys with a division), and the regions
    read once (``regions``, flat in ``R``: region L's first record at ``R[2 L]``, its size
    at ``R[2 L + 1]``). The same records, sums and numbers as ``_step``. Every
    index is unsigned (``_records``: numba's negative-index select on each would cost
    about a tenth of the walk), each one a position this loop bounds or a checked
    record's."""
    fill = out_lp.shape[0] > 0
    m = max(order, 1)
    cur = 0  # the context's half of C
    k = 0
    if bos and order > 1:
        C[0] = 0
        C[m] = 0
        k = 1
    total = np.float32(0.0)
    size2 = R[5] if order >= 2 else 0
    base2 = R[4] if order >= 2 else 0
    for i in range(a, b):
        w = tokens[np.uint64(i)]
        n = 1
        if i + AHEAD < b and size2 > 0:  # the bigram slot of a word AHEAD on, whose key the words give
            u = tokens[np.uint64(i + AHEAD)]  # any id: a home is in the region whatever the key
            v = tokens[np.uint64(i + AHEAD - 1)]
            prefetch(D, slot(D, base2 + home(u * V + v, size2)))
        lp, f, kind = _unigram(D, F, qb, V, w, missing_lp)
        if kind == 0:
            k = 0
        else:
            if kind == 1:  # KenLM's substitute, backed off through the whole context
                for d in range(1, k + 1):
                    lp = lp + bow_of(D, F, C[np.uint64(cur + d - 1)], d, qb)
                C[np.uint64(cur)] = w
                C[np.uint64(cur + m)] = w
                k = 1 if order > 1 else 0
            else:
                nxt = 2 * m - cur
                nk = 1 if ((f & EXTENDS) != 0 and order > 1) else 0
                C[np.uint64(nxt)] = w
                C[np.uint64(nxt + m)] = w
                g = w
                for j in range(1, k + 1):
                    x = C[np.uint64(cur + m + j - 1)]  # the j-th most recent word
                    size = R[np.uint64(2 * j + 3)]
                    if size == 0:
                        break
                    g2 = _probe(D, R[np.uint64(2 * j + 2)], size, g * V + x)
                    if g2 < 0:
                        break
                    g = g2
                    n = j + 1
                    lp = prob_of(D, F, g, n, qb)
                    C[np.uint64(nxt + j)] = g
                    C[np.uint64(nxt + m + j)] = x
                    if n <= order - 1 and (rec(D, g) & EXTENDS) != 0:
                        nk = n
                for d in range(n, k + 1):
                    lp = lp + bow_of(D, F, C[np.uint64(cur + d - 1)], d, qb)
                cur = nxt
                k = nk
        if fill:
            out_lp[np.uint64(i)] = lp
            out_len[np.uint64(i)] = n
        total = total + lp
    return total


#: How many sentences ``_walk_lanes`` walks at once.
LANES = 8


@njit(cache=True, inline="always")
def _next_sentence(offsets, s, last, sums):
    """The first sentence from ``s`` on (before ``last``) with a word, the empty ones
    before it given the sum 0 (``_walk``'s); ``last`` if none."""
    while s < last and offsets[s + 1] <= offsets[s]:
        sums[s] = 0.0
        s += 1
    return s


@njit(cache=True, inline="always")
def _backoff(D, F, qb, lp, R, o, n, k):
    """``lp`` plus the back-off weights of the records ``R[o + d - 1]`` (the context's
    last d words), d = n .. k, shortest first, in float32 (KenLM's sums)."""
    for d in range(n, k + 1):
        lp = lp + bow_of(D, F, R[o + d - 1], d, qb)
    return lp


@njit(cache=True)
def _walk_lanes(D, F, qb, V, order, regs, tokens, offsets, first, last, bos, missing_lp, out_lp, out_len, sums):
    """``_walk`` of sentences ``first .. last - 1`` into ``sums`` (and ``out_lp``,
    ``out_len`` when they are not empty), ``LANES`` sentences at a time.

    One sentence's probes wait on each other (a probe's key holds the record the probe
    before it found), so a walk of one sentence waits on each cache miss of the table in
    turn. Here the lanes take turns, one probe each, and each prefetches the slot of its
    next probe before the other lanes take theirs: the misses of different sentences
    overlap. Each sentence is still walked word after word as ``_walk`` walks it
    (the same records, the same float32 additions in the same order): its numbers bit
    for bit. The lanes' state lives in flat arrays, and the prefetches are written out
    here: a view per turn, or a helper taking the arrays (numba does not inline one that
    calls ``prefetch``: it passes the arrays, reference counts and all, on every call),
    costs more than the misses hide (25 ns a word with the helper, measured here)."""
    fill = out_lp.shape[0] > 0
    G = LANES
    m = max(order, 1)
    # lane q's two contexts: records at R[(2 q + c) m + d - 1], words at X[...] (the d-th most recent)
    R = np.zeros(2 * G * m, dtype=np.int64)
    X = np.zeros(2 * G * m, dtype=np.int64)
    cur = np.zeros(G, dtype=np.int64)  # which of the two is the context
    sent = np.full(G, -1, dtype=np.int64)
    pos = np.zeros(G, dtype=np.int64)
    end = np.zeros(G, dtype=np.int64)
    kk = np.zeros(G, dtype=np.int64)  # the context's length
    total = np.zeros(G, dtype=np.float32)
    probing = np.zeros(G, dtype=np.bool_)  # the word at pos has the probe of level jj, key pending
    jj = np.zeros(G, dtype=np.int64)
    key = np.zeros(G, dtype=np.int64)
    nn = np.zeros(G, dtype=np.int64)  # the word's n-gram length so far
    nkk = np.zeros(G, dtype=np.int64)  # the next context's length so far
    lps = np.zeros(G, dtype=np.float32)  # the word's log10 p so far
    s = first
    active = 0
    for q in range(G):
        s = _next_sentence(offsets, s, last, sums)
        if s == last:
            break
        sent[q] = s
        pos[q] = offsets[s]
        end[q] = offsets[s + 1]
        s += 1
        if bos and order > 1:
            R[2 * q * m] = 0
            X[2 * q * m] = 0
            kk[q] = 1
        active += 1
    while active > 0:
        for q in range(G):
            if sent[q] < 0:
                continue
            c = cur[q]
            cb = (2 * q + c) * m  # the context's slots
            nb = (2 * q + 1 - c) * m  # the next context's
            k = kk[q]
            i = pos[q]
            lp = np.float32(0.0)
            n = 1
            looked = False  # the word's parts were looked up: the next context is the other one
            if not probing[q]:  # a new word: its unigram, then its bigram's probe (prefetched)
                w = tokens[i]
                lp, f, kind = _unigram(D, F, qb, V, w, missing_lp)
                if kind == 0:
                    k = 0
                else:
                    if kind == 1:  # KenLM's substitute, backed off through the whole context
                        lp = _backoff(D, F, qb, lp, R, cb, 1, k)
                        R[cb] = w
                        X[cb] = w
                        k = 1 if order > 1 else 0
                    else:
                        nkk[q] = 1 if ((f & EXTENDS) != 0 and order > 1) else 0
                        R[nb] = w
                        X[nb] = w
                        nn[q] = 1
                        lps[q] = lp
                        looked = True
                        if k >= 1 and regs[2, 1] > 0:
                            jj[q] = 1
                            key[q] = w * V + X[cb]
                            probing[q] = True
            if probing[q]:
                j = jj[q]
                g2 = _probe(D, regs[j + 1, 0], regs[j + 1, 1], key[q])
                probing[q] = False
                looked = True
                if g2 >= 0:
                    nn[q] = j + 1
                    lps[q] = prob_of(D, F, g2, j + 1, qb)
                    R[nb + j] = g2
                    X[nb + j] = X[cb + j - 1]
                    if j + 1 <= order - 1 and (rec(D, g2) & EXTENDS) != 0:
                        nkk[q] = j + 1
                    if j + 1 <= k and regs[j + 2, 1] > 0:  # the next probe: its slot prefetched, taken next turn
                        jj[q] = j + 1
                        kq = g2 * V + X[cb + j]
                        key[q] = kq
                        prefetch(D, slot(D, regs[j + 2, 0] + home(kq, regs[j + 2, 1])))
                        probing[q] = True
                        continue
            if looked:  # back off past the longest part found; the next context is the other one
                n = nn[q]
                lp = _backoff(D, F, qb, lps[q], R, cb, n, k)
                cur[q] = 1 - c
                cb = nb
                k = nkk[q]
            kk[q] = k
            if fill:
                out_lp[i] = lp
                out_len[i] = n
            total[q] = total[q] + lp
            i += 1
            if i == end[q]:
                sums[sent[q]] = total[q]
                total[q] = 0.0
                s = _next_sentence(offsets, s, last, sums)
                if s == last:
                    sent[q] = -1
                    active -= 1
                    continue
                sent[q] = s
                i = offsets[s]
                end[q] = offsets[s + 1]
                s += 1
                cur[q] = 0
                cb = 2 * q * m
                kk[q] = 0
                if bos and order > 1:
                    R[cb] = 0
                    X[cb] = 0
                    kk[q] = 1
            pos[q] = i
            if i < end[q]:  # prefetch the next word's unigram record and its bigram's home slot
                w = tokens[i]
                if w >= 0 and w < V:
                    prefetch(D, slot(D, w))
                    if kk[q] >= 1 and regs[2, 1] > 0:
                        prefetch(D, slot(D, regs[2, 0] + home(w * V + X[cb], regs[2, 1])))


@njit(cache=True)
def _walk_space(D, V, S, order):
    """What ``_walk`` reads besides the words: (the table as float32, ``regions``,
    its contexts' records and words ``C``, the layout's ``_records.bases``)."""
    return D.view(np.float32), regions(D, V, S, order), np.empty(4 * max(order, 1), dtype=np.int64), \
        bases(D, V, S, order)


@njit(cache=True)
def _span_sums(D, V, S, order, tokens, offsets, first, last, bos, missing_lp, out_lp, out_len, lanes, sums):
    """``_walk`` of sentences ``first .. last - 1`` into ``sums``, ``LANES`` at a
    time when ``lanes`` (``_walk_lanes``: the same numbers)."""
    F, regs, C, qb = _walk_space(D, V, S, order)
    if lanes:
        _walk_lanes(D, F, qb, V, order, regs, tokens, offsets, first, last, bos, missing_lp, out_lp, out_len, sums)
        return
    R = regs.reshape(-1)
    for s in range(first, last):  # _walk inlined: a call a sentence would take and drop a reference to each array
        sums[s] = _walk(D, F, qb, V, order, R, tokens, offsets[s], offsets[s + 1], bos, missing_lp, out_lp, out_len, C)


@njit(cache=True)
def score_sentences(D, V, S, order, tokens, offsets, bos, missing_lp, out_lp, out_len, lanes=False):
    """KenLM's ``full_scores`` of many sentences at once: ``tokens`` are word ids of the
    sentences one after the other (``</s>`` included when scored), sentence i at
    ``offsets[i] .. offsets[i + 1]``; each starts from ``<s>`` when ``bos``. Fills log10
    p and n-gram length per token (when the output arrays are not empty); returns the
    float32 sum of every sentence (KenLM's ``score``). ``lanes``: walk ``LANES``
    sentences at a time (``_walk_lanes``; faster on a table larger than the processor's
    caches, slower on one they hold: ``table.lanes_pay``)."""
    n_sent = offsets.shape[0] - 1
    sums = np.zeros(n_sent, dtype=np.float32)
    _span_sums(D, V, S, order, tokens, offsets, 0, n_sent, bos, missing_lp, out_lp, out_len, lanes, sums)
    return sums


@njit(cache=True, parallel=True)
def score_sentences_parallel(D, V, S, order, tokens, offsets, bos, missing_lp, out_lp, out_len, lanes, bounds):
    """``score_sentences`` with the sentences ``bounds[c] .. bounds[c + 1] - 1`` of each
    chunk c on a thread of their own: each sentence is walked and summed as there, so
    the numbers do not depend on the chunks."""
    n_sent = offsets.shape[0] - 1
    sums = np.zeros(n_sent, dtype=np.float32)
    for c in prange(bounds.shape[0] - 1):
        _span_sums(D, V, S, order, tokens, offsets, bounds[c], bounds[c + 1], bos, missing_lp, out_lp, out_len, lanes,
                   sums)
    return sums


@njit(cache=True)
def srilm_query(D, V, S, order, tokens, starts, positions):
    """SRILM's ``wordProbBO`` at every position (as ``_backoff_kernels.backoff_query``):
    the longest explicit n-gram, plus the back-off weights of the longer contexts
    summed first, in float32. Returns (log10 p float64[n], n-gram length int64[n])."""
    F = D.view(np.float32)
    qb = bases(D, V, S, order)
    n_pos = positions.shape[0]
    out = np.empty(n_pos, dtype=np.float64)
    hit = np.zeros(n_pos, dtype=np.int64)
    for i in range(n_pos):
        p = positions[i]
        w = tokens[p]
        logp = np.float32(-np.inf)
        if w >= 0 and w < V and (rec(D, w) & EXPLICIT) != 0:
            logp = prob_of(D, F, w, 1, qb)
            hit[i] = 1
        bow = np.float32(0.0)
        g = w if (w >= 0 and w < V) else -1
        c = -1
        depth = min(order - 1, p - starts[p])
        for d in range(1, depth + 1):
            x = tokens[p - d]
            if x < 0 or x >= V:
                break
            c = x if d == 1 else find(D, V, S, d, c * V + x)
            if c < 0:
                break
            bow = bow + bow_of(D, F, c, d, qb)
            if g >= 0:
                g = find(D, V, S, d + 1, g * V + x)
                if g >= 0 and (rec(D, g) & EXPLICIT) != 0:
                    logp = prob_of(D, F, g, d + 1, qb)
                    bow = np.float32(0.0)
                    hit[i] = d + 1
        out[i] = np.float64(logp + bow)
    return out, hit


@njit(cache=True)
def distributions(D, V, S, order, states, missing_lp, out):
    """log10 p(w | state) of every word id w (float32 sums as ``_step``), for every state
    record in ``states``, into ``out`` (float32[n_states, V])."""
    F = D.view(np.float32)
    for i in range(states.shape[0]):
        for w in range(V):
            out[i, w] = _step(D, F, V, S, order, states[i], w, missing_lp)[0]


@njit(cache=True)
def score_line(D, V, S, order, W, blob, text, bos, eos, missing_lp):
    """KenLM's ``score`` of one sentence given as UTF-8 bytes without a line end: its
    words made ids, then walked as ``score_sentences`` walks them."""
    ids = np.empty(len(text) // 2 + 2, dtype=np.int64)
    n = text_ids(W, blob, text, 0, len(text), eos, 2, 1, ids, 0)
    offsets = np.empty(2, dtype=np.int64)
    offsets[0] = 0
    offsets[1] = n
    return np.float64(score_sentences(D, V, S, order, ids, offsets, bos, missing_lp, np.empty(0, dtype=np.float64),
                                      ids[:0])[0])


#: The slots of ``score_line_at``'s parameter block: ``step_at``'s, then the word table's
#: and its blob's addresses and lengths (``W``, ``blob``: int64, uint8), then its work
#: space's (int64, ``line_work_size``).
LINE_PARAMS = STEP_PARAMS + 6
#: The longest sentence (in words) ``score_line_at`` walks in its work space; a longer one
#: gets arrays of its own (``score_line``).
LINE_WORK_WORDS = 1024


def line_work_size(order: int) -> int:
    """int64 words of ``score_line_at``'s work space: ``regions`` (filled by the caller),
    the context's and the next context's records and words, and room for the ids."""
    m = max(order, 1)
    return 2 * (order + 1) + 4 * m + LINE_WORK_WORDS + 2


@njit(cache=True)
def score_line_at(params, text):
    """``score_line(..., text, True, True, ...)`` on the table and word table the
    parameter block at the address ``params`` describes (``LINE_PARAMS``): the sentence
    walk of ``score(line)``, which then passes no array but the text (numba's dispatch
    costs about 0.1 µs per array) and allocates nothing: the regions, the contexts and
    the ids live in the work space the block points to (``line_work_size``; the caller
    holds the GIL, so one call at a time uses it, and has filled its regions with
    ``regions``). A sentence of more than ``LINE_WORK_WORDS`` words goes to
    ``score_line``."""
    P = array_at(params, LINE_PARAMS, np.int64)
    return _score_line_in(params, P, array_at(P[0], P[1], np.int64), text)


@njit(cache=True)
def score_line_at_quantised(params, text):
    """``score_line_at`` on a quantised table (``_records``: the block's table address is
    that of a uint64 array)."""
    P = array_at(params, LINE_PARAMS, np.int64)
    return _score_line_in(params, P, array_at(P[0], P[1], np.uint64), text)


@njit(cache=True)
def _score_line_in(params, P, D, text):
    """``score_line_at``'s walk, on the table ``D`` its block describes."""
    missing_lp = array_at(params + 8 * (STEP_PARAMS - 1), 1, np.float64)[0]
    W = array_at(P[STEP_PARAMS], P[STEP_PARAMS + 1], np.int64)
    blob = array_at(P[STEP_PARAMS + 2], P[STEP_PARAMS + 3], np.uint8)
    V, S, order = P[2], P[3], P[4]
    if len(text) // 2 + 2 > LINE_WORK_WORDS:
        return score_line(D, V, S, order, W, blob, text, True, True, missing_lp)
    work = array_at(P[STEP_PARAMS + 4], P[STEP_PARAMS + 5], np.int64)
    m = max(order, 1)
    a = 2 * (order + 1)
    R = work[:a]  # the regions, flat (``_walk``)
    C = work[a:a + 4 * m]
    ids = work[a + 4 * m:]
    n = text_ids(W, blob, text, 0, len(text), True, 2, 1, ids, 0)
    total = _walk(D, D.view(np.float32), bases(D, V, S, order), V, order, R, ids, 0, n, True, missing_lp,
                  array_at(P[STEP_PARAMS + 4], 0, np.float64), ids[:0], C)
    return np.float64(total)


#: Lines made ids at a time for ``_walk_lanes`` (``_line_sums``).
LINE_BLOCK = 256


@njit(cache=True)
def _line_sums(D, V, S, order, W, blob, text, starts, first, last, bos, eos, missing_lp, lanes, sums):
    """``score_line`` of lines ``first .. last - 1`` (``line_starts``) into ``sums``;
    when ``lanes``, ``LINE_BLOCK`` lines at a time made ids, then walked by
    ``_walk_lanes`` (the same numbers)."""
    F, regs, C, qb = _walk_space(D, V, S, order)
    no_lp = np.empty(0, dtype=np.float64)
    if lanes:
        ids = np.empty(0, dtype=np.int64)
        offsets = np.empty(LINE_BLOCK + 1, dtype=np.int64)
        for b0 in range(first, last, LINE_BLOCK):
            b1 = min(b0 + LINE_BLOCK, last)
            need = (starts[b1] - starts[b0]) // 2 + 2 * (b1 - b0)  # a word takes two bytes with its separator
            if need > ids.shape[0]:
                ids = np.empty(need, dtype=np.int64)
            n = 0
            offsets[0] = 0
            for s in range(b0, b1):
                n = text_ids(W, blob, text, starts[s], starts[s + 1] - 1, eos, 2, 1, ids, n)
                offsets[s - b0 + 1] = n
            _walk_lanes(D, F, qb, V, order, regs, ids, offsets, 0, b1 - b0, bos, missing_lp, no_lp, ids[:0],
                        sums[b0:b1])
        return
    ids = np.empty(longest_span(starts, first, last) // 2 + 2, dtype=np.int64)
    no_len = ids[:0]
    R = regs.reshape(-1)
    for s in range(first, last):
        n = text_ids(W, blob, text, starts[s], starts[s + 1] - 1, eos, 2, 1, ids, 0)
        sums[s] = _walk(D, F, qb, V, order, R, ids, 0, n, bos, missing_lp, no_lp, no_len, C)


@njit(cache=True)
def score_lines(D, V, S, order, W, blob, text, n_lines, bos, eos, missing_lp, lanes=False):
    """``score_line`` of each of the first ``n_lines`` lines of ``text`` (UTF-8 bytes,
    lines ended by a line feed, the last one optionally): float32 sums."""
    starts = line_starts(text, n_lines)
    sums = np.zeros(n_lines, dtype=np.float32)
    _line_sums(D, V, S, order, W, blob, text, starts, 0, n_lines, bos, eos, missing_lp, lanes, sums)
    return sums


@njit(cache=True, parallel=True)
def score_lines_parallel(D, V, S, order, W, blob, text, starts, bos, eos, missing_lp, lanes, bounds):
    """``score_lines`` of the lines at ``starts`` (``_text_kernels.line_starts``), the
    lines ``bounds[c] .. bounds[c + 1] - 1`` of each chunk c split, looked up and walked
    on a thread of their own: the same sums."""
    sums = np.zeros(starts.shape[0] - 1, dtype=np.float32)
    for c in prange(bounds.shape[0] - 1):
        _line_sums(D, V, S, order, W, blob, text, starts, bounds[c], bounds[c + 1], bos, eos, missing_lp, lanes,
                   sums)
    return sums
