"""The probing table's layout (``_binary_kernels`` documents it) and its batch queries in
numpy alone, for a process that has not started numba: scoring a whole text this way
costs milliseconds where numba's import and first compiled call cost about 0.5-0.8 s
(``suffixlm/backoff/table.py`` says when each path is taken).

Every function here gives the compiled kernels' numbers bit for bit: the same float32
additions in the same order (a sentence's sum one word after the other, as KenLM's
``score``; never numpy's pairwise reductions). Each lookup is vectorised over all the
positions that still need it, so a text costs a few numpy operations per n-gram
length and probe step instead of Python per word. Record numbers come only from
``find_many``, which stays inside the region the directory gives (checked as the
kernels check it), so a damaged table gives wrong numbers, never an out-of-bounds read.
"""

from __future__ import annotations

import numpy as np

GOLDEN = np.uint64(0x9E3779B97F4A7C15)
KEY_BITS = 61
KEY_MASK = (1 << KEY_BITS) - 1
EXTENDS = 1 << 61
EXPLICIT = 1 << 62
EMPTY = -1
MAX_SLOTS = (1 << 32) - 1
#: The quantised layout (``binary.py``, ``build-binary -q``): one int64 a record, the key in
#: its low QKEY_BITS bits, the codes of log10 p and of the back-off weight above it, the
#: flags where the 16-byte layout has them (``_records``)
QKEY_BITS = 45
QKEY_MASK = (1 << QKEY_BITS) - 1
QPROB_SHIFT = QKEY_BITS
QBOW_SHIFT = QKEY_BITS + 8
QCODE_MASK = 0xFF
#: codes (and centres) of each n-gram length's codebook: 256 a length for each value
QCODES = 256

def quantised_bases(V: int, S: int, order: int) -> tuple[int, int]:
    """(word offset of the unigrams' values, of the codebooks) in a quantised table
    (``_records``; its kernels' ``bases``): after the records and the directory."""
    u = V + S + 2 * (order + 1)
    return u, u + V


def quantised_words(V: int, S: int, order: int) -> int:
    """int64 words of a quantised table (``_records``): the records, the directory, the
    unigrams' values, the codebooks."""
    return quantised_bases(V, S, order)[1] + QCODES * (order + 1)


def directory_at(D: np.ndarray, V: int, S: int) -> int:
    """Index in ``D`` of the regions' directory, after the records of either layout."""
    return V + S if D.dtype == np.uint64 else 2 * (V + S)


class Records:
    """The records of a table in either layout (``_records``: int64, 16-byte records;
    uint64, quantised 8-byte ones), read by numpy: every accessor takes int64 arrays of
    record numbers (and n-gram lengths). ``order`` is needed for the values only."""

    def __init__(self, D: np.ndarray, V: int, S: int, order: int | None = None):
        self.D, self.F = D, D.view(np.float32)
        self.quantised = D.dtype == np.uint64
        self.mask = QKEY_MASK if self.quantised else KEY_MASK
        if order is not None:  # the quantised layout's unigram values, then its codebooks
            self.u, self.c = quantised_bases(V, S, order)

    def words(self, r: np.ndarray) -> np.ndarray:
        """Each record's key and flags (and codes) as int64 (-1: an empty slot)."""
        return self.D.take(r).view(np.int64) if self.quantised else self.D.take(2 * r)

    def prob(self, r: np.ndarray, L) -> np.ndarray:
        """float32 log10 p of each record, a part of L words (L: a number or an array)."""
        return self._value(r, L, 0)

    def bow(self, r: np.ndarray, L) -> np.ndarray:
        """float32 back-off weight of each record, a part of L words."""
        return self._value(r, L, 1)

    def _value(self, r, L, j):
        r = np.asarray(r, dtype=np.int64)
        if not self.quantised:
            return self.F.take(4 * r + 2 + j)
        L = np.broadcast_to(np.asarray(L, dtype=np.int64), r.shape)
        uni = L <= 1
        out = np.empty(r.shape, dtype=np.float32)
        out[uni] = self.F.take(2 * (self.u + r[uni]) + j)
        code = (self.words(r[~uni]) >> (QBOW_SHIFT if j else QPROB_SHIFT)) & QCODE_MASK
        out[~uni] = self.F.take(2 * (self.c + L[~uni] * QCODES + code) + j)
        return out


#: rounds of ``score_sentences``' fixed point before it gives up (see there)
MAX_ROUNDS = 4


def region(D: np.ndarray, V: int, S: int, L: int) -> tuple[int, int]:
    """``_binary_kernels.region``: (first slot, number of slots) of the parts of L words,
    (0, 0) where the directory entry does not fit the table."""
    i = directory_at(D, V, S) + 2 * L
    if L < 2 or i + 1 >= D.shape[0]:
        return 0, 0
    B, n = int(D[i]), int(D[i + 1])
    if B < 0 or n <= 0 or n > MAX_SLOTS or B + n > S:
        return 0, 0
    return B, n


def home(keys: np.ndarray, n: int) -> np.ndarray:
    """``_binary_kernels.home`` of every key (int64[:] >= 0)."""
    h = keys.astype(np.uint64)
    h *= GOLDEN  # wraps modulo 2**64, as the kernel's uint64 product
    h >>= np.uint64(32)
    h *= np.uint64(n)
    h >>= np.uint64(32)
    return h.view(np.int64)


def find_many(D: np.ndarray, V: int, S: int, L: int, keys: np.ndarray) -> np.ndarray:
    """``_binary_kernels.find`` of every key (L-word parts): their records, -1 where
    absent. Each probe step gathers one slot for every key still unresolved. A key's
    scan also ends at a resident nearer its own home than the key would be (Robin Hood
    placement, ``fill_region``, puts no key beyond one): at load 0.8 that cuts a missing
    key's scan from about 13 slots on average, with a long tail, to a few, and the
    number of vectorised steps with it. On every table ``fill_region`` makes the answer is
    the kernel's."""
    B, n = region(D, V, S, L)
    if n == 0 or keys.shape[0] == 0:
        return np.full(keys.shape[0], -1, dtype=np.int64)
    base = V + B
    h = home(keys, n)
    rec = Records(D, V, S)
    t = rec.words(base + h)
    hit = (t & rec.mask) == keys
    out = np.where(hit, base + h, -1)
    go = ~hit & (t != EMPTY)
    idx = np.flatnonzero(go)
    keys, h = keys[idx], h[idx]
    for d in range(1, n):  # a full region without the key ends the scan, as in the kernel
        h += 1
        h[h == n] = 0
        t = rec.words(base + h)
        k = t & rec.mask
        hit = k == keys  # never an empty slot: keys are below the key mask
        out[idx[hit]] = base + h[hit]
        go = ~hit & (t != EMPTY)
        r = h - home(k, n)
        r[r < 0] += n
        go &= r >= d  # the resident's displacement: a key at distance d goes no further
        idx = idx[go]
        if not idx.shape[0]:
            break
        keys, h = keys[go], h[go]
    return out


def _sentence_sums(lp: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """float32 sum of every sentence's scores, added one word after the other (the
    kernels' and KenLM's order): one vectorised addition per word position, the
    sentences longest first."""
    k = offsets.shape[0] - 1
    sums = np.zeros(k, dtype=np.float32)
    lengths = np.diff(offsets)
    if k == 0 or lengths.max() == 0:
        return sums
    by_len = np.argsort(-lengths, kind="stable")
    desc = lengths[by_len]
    starts = offsets[:-1][by_len]
    alive = np.searchsorted(-desc, -np.arange(int(desc[0])), side="left")  # sentences longer than j words
    total = np.zeros(k, dtype=np.float32)
    for j, a in enumerate(alive.tolist()):
        total[:a] += lp[starts[:a] + j]
    sums[by_len] = total
    return sums


def parts(D: np.ndarray, V: int, S: int, order: int, tokens: np.ndarray, first: np.ndarray) -> np.ndarray:
    """int64[order, n]: ``[L - 1, e]`` is the record of the part of L words ending at
    position e of ``tokens`` and starting at ``first[e]`` or later (-1: none), every
    length found by extending the one before by a word to the left (``find_many``)."""
    R = np.full((order, tokens.shape[0]), -1, dtype=np.int64)
    valid = (tokens >= 0) & (tokens < V)
    R[0] = np.where(valid, tokens, -1)
    todo = np.flatnonzero(valid)
    for L in range(2, order + 1):
        todo = todo[todo - (L - 1) >= first[todo]]
        x = tokens[todo - (L - 1)]
        ok = (x >= 0) & (x < V)
        todo, x = todo[ok], x[ok]
        found = find_many(D, V, S, L, R[L - 2, todo] * V + x)
        todo = todo[found >= 0]
        R[L - 1, todo] = found[found >= 0]
        if not todo.shape[0]:
            break
    return R


def score_sentences(D: np.ndarray, V: int, S: int, order: int, tokens: np.ndarray, offsets: np.ndarray, bos: bool,
                    missing_lp: float) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """``_binary_kernels.score_sentences``: (log10 p float32[n], n-gram length int64[n],
    the float32 sum of every sentence) for the word ids ``tokens`` (sentence i at
    ``offsets[i] .. offsets[i + 1]``), each sentence starting from ``<s>`` when ``bos``.

    The kernel walks KenLM's state (the context kept after each word); here every part
    ending at every position is looked up at once, length after length, and the state's
    lengths follow from them: the context kept after a word is its longest part of at
    most order - 1 words that extends (KenLM's rule), and the part matched at the next
    word is the longest one at most one word longer than that context. Solved as the
    fixed point of that recurrence from the unconstrained lengths. On every table
    ``build_table`` makes it is reached in the first round (a part's context is a part
    that extends); None when MAX_ROUNDS rounds do not reach it (a damaged table), for the
    caller to use the kernel."""
    rd = Records(D, V, S, order)
    n_tok = tokens.shape[0]
    k = offsets.shape[0] - 1
    lengths = np.diff(offsets)
    use_bos = bool(bos) and order > 1
    # the text with <s> before every sentence (when bos): position e of `ext`
    sent_of = np.repeat(np.arange(k), lengths)
    pos = np.arange(n_tok) + (sent_of + 1 if use_bos else 0)
    ext_n = n_tok + (k if use_bos else 0)
    ext = np.zeros(ext_n, dtype=np.int64)  # <s> is word 0
    ext[pos] = tokens
    first = np.zeros(ext_n, dtype=np.int64)  # where each position's sentence starts in ext
    starts = offsets[:-1] + (np.arange(k) if use_bos else 0)
    first[pos] = starts[sent_of]
    if use_bos:
        first[starts] = starts
    valid = (ext >= 0) & (ext < V)
    w = np.where(valid, ext, 0)
    flags = rd.words(w)
    R = parts(D, V, S, order, ext, first)
    longest = (R >= 0).sum(axis=0)
    extends = np.zeros((order, ext_n), dtype=bool)
    has = R >= 0
    extends[has] = (rd.words(R[has]) & EXTENDS) != 0
    tok = np.zeros(ext_n, dtype=bool)
    tok[pos] = True
    missing = tok & (~valid | ((flags & EXPLICIT) == 0) | (rd.prob(w, 1) == -np.inf))
    normal = tok & ~missing
    is_bos = ~tok

    def kept(n):  # the context kept after each position, given the parts matched there
        kk = np.zeros(ext_n, dtype=np.int64)
        for L in range(1, order):
            kk[normal & extends[L - 1] & (L <= n)] = L
        if order > 1:
            kk[(missing & valid) | is_bos] = 1
        return kk

    def before(kk):  # the context each position is predicted from
        prev = np.zeros(ext_n, dtype=np.int64)
        prev[1:] = kk[:-1]
        prev[first == np.arange(ext_n)] = 0
        return prev

    n = np.where(normal, longest, 1)
    for _ in range(MAX_ROUNDS):
        kprev = before(kept(n))
        n2 = np.where(normal, np.minimum(longest, kprev + 1), 1)
        if np.array_equal(n2, n):
            break
        n = n2
    else:  # each round settles at least one more word of a sentence: leave long chains to the kernel
        return None
    e = pos
    ne, ke, ok = n[e], kprev[e], normal[e]
    rec = R[np.maximum(ne - 1, 0), e]
    lp = np.where(ok, rd.prob(np.where(ok, rec, 0), np.where(ok, ne, 1)), np.float32(missing_lp)).astype(np.float32)
    lo = np.where(ok, ne, 1)
    lo[~valid[e]] = order  # a word outside the vocabulary: no back-off weights added
    for d in range(1, order):
        add = (lo <= d) & (d <= ke)
        if add.any():
            lp[add] = lp[add] + rd.bow(R[d - 1, e[add] - 1], d)
    out_n = np.where(ok, ne, 1)
    return lp, out_n, _sentence_sums(lp, offsets)


def srilm_query(D: np.ndarray, V: int, S: int, order: int, tokens: np.ndarray, starts: np.ndarray,
                positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``_binary_kernels.srilm_query`` (SRILM's ``wordProbBO``) at every position at
    once: (log10 p float64[n], n-gram length int64[n]). The kernel's lookups are parts
    ending at a position (the context of d words ending before p, the d + 1 words ending
    at p), so they all come from one ``parts`` of the text."""
    rd = Records(D, V, S, order)
    R = parts(D, V, S, order, tokens, starts)
    m = positions.shape[0]
    w = tokens[positions]
    valid = (w >= 0) & (w < V)
    logp = np.full(m, -np.inf, dtype=np.float32)
    hit = np.zeros(m, dtype=np.int64)
    expl = np.zeros(m, dtype=bool)
    expl[valid] = (rd.words(w[valid]) & EXPLICIT) != 0
    logp[expl] = rd.prob(w[expl], 1)
    hit[expl] = 1
    bow = np.zeros(m, dtype=np.float32)
    depth = np.minimum(order - 1, positions - starts[positions])
    act = np.arange(m)
    for d in range(1, order):  # the kernel's loop, for the positions still in it
        act = act[depth[act] >= d]
        c = R[d - 1, positions[act] - 1]  # the context of d words
        act, c = act[c >= 0], c[c >= 0]
        if not act.shape[0]:
            break
        bow[act] = bow[act] + rd.bow(c, d)
        g = R[d, positions[act]]  # the d + 1 words ending at the position
        on = g >= 0
        gi, g = act[on], g[on]
        ex = (rd.words(g) & EXPLICIT) != 0
        logp[gi[ex]] = rd.prob(g[ex], d + 1)
        bow[gi[ex]] = 0
        hit[gi[ex]] = d + 1
    return (logp + bow).astype(np.float64), hit
