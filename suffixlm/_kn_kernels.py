"""Numba kernels for Kneser-Ney estimation, back-off queries and ARPA output.

Everything here takes and returns flat numpy arrays. Log-probabilities and back-off
weights are ``float32`` on purpose: SRILM stores them as C ``float`` (``LogP``) and
does its back-off sums in single precision; reproducing that makes our ARPA files
and perplexities agree with SRILM's to the printed digit.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

LN10 = math.log(10.0)
PROB_EPSILON = 3e-06  # SRILM's Prob_Epsilon


@njit(cache=True)
def estimate_order(ctx_start, ctx_end, ctx_skip, count, word, lower_lp, nonevent,
                   min_count, d1, d2, d3, vocab_size, interpolate, unigrams):
    """Interpolated (modified) Kneser-Ney probabilities of one order, as SRILM's
    ``Ngram::estimate`` with ``ModKneserNey``/``KneserNey`` discounts.

    ctx_start, ctx_end : int64[n_ctx]  children of context c are n-grams ctx_start[c]:ctx_end[c]
    ctx_skip  : bool[n_ctx]    contexts that get no probabilities (contain a closed-vocabulary <unk>)
    count     : int64[m]       (KN-modified) counts of the n-grams of this order
    word      : int64[m]       predicted word of each n-gram
    lower_lp  : float32[m]     log10 lower-order (back-off) probability of the same word
    nonevent  : bool[V]        words never predicted (<s>, and <unk> when not a word)
    d1, d2, d3: discounts for counts 1, 2 and 3+ (d1 == d2 == d3 for original KN)

    Returns lp float32[m] (log10 probability), explicit bool[m] (kept in the model) and
    the number of contexts where SRILM's "no back-off mass left" retry was applied.
    """
    m = count.shape[0]
    lp = np.zeros(m, dtype=np.float32)
    explicit = np.zeros(m, dtype=np.bool_)
    n_retry = 0
    for c in range(ctx_start.shape[0]):
        if ctx_skip[c]:
            continue
        a = ctx_start[c]
        b = ctx_end[c]
        total = 0.0
        n_obs = 0
        n_min2 = 0
        n_min3 = 0
        for g in range(a, b):
            k = count[g]
            if k <= 0 or nonevent[word[g]]:
                continue
            total += k
            n_obs += 1
            if k >= 2:
                n_min2 += 1
            if k >= 3:
                n_min3 += 1
        if total == 0:
            continue
        interp = interpolate
        while True:
            if interp:
                weight = (d1 * (n_obs - n_min2) + d2 * (n_min2 - n_min3) + d3 * n_min3) / total
            else:
                weight = 0.0
            total_prob = 0.0
            for g in range(a, b):
                k = count[g]
                w = word[g]
                if k <= 0:
                    continue
                if nonevent[w]:
                    if unigrams and w == 0:  # <s>: probability zero, but listed
                        lp[g] = -np.inf
                        explicit[g] = True
                    continue
                if k < min_count:
                    explicit[g] = False
                    continue
                if k == 1:
                    coef = (k - d1) / k
                elif k == 2:
                    coef = (k - d2) / k
                else:
                    coef = (k - d3) / k
                prob = (coef * k) / total
                if interp:
                    prob += weight * math.exp(np.float64(lower_lp[g]) * LN10)
                lp[g] = np.float32(math.log10(prob)) if prob > 0 else np.float32(-np.inf)
                explicit[g] = True
                total_prob += prob
            if total_prob > 1.0 - PROB_EPSILON and n_obs < vocab_size:
                n_retry += 1
                if interp:
                    interp = False
                else:
                    total += 1
                continue
            break
    return lp, explicit, n_retry


@njit(cache=True)
def backoff_weights(ctx_start, ctx_end, explicit, lp, lower_lp):
    """Back-off weights of the contexts of one order (SRILM ``computeBOW``):
    bow(h) = (1 - sum p(w|h)) / (1 - sum p_lower(w|h')) over the explicit children.

    Modifies ``lp`` in place in the one case SRILM does (no lower-order mass left:
    the explicit probabilities are scaled to sum to 1). Returns bow float32[n_ctx]
    (0 for contexts without explicit children) and the number of bad contexts
    (negative numerator; bow set to -inf like SRILM's dummy value).
    """
    n_ctx = ctx_start.shape[0]
    bow = np.zeros(n_ctx, dtype=np.float32)
    n_bad = 0
    for c in range(n_ctx):
        num = 1.0
        den = 1.0
        any_child = False
        for g in range(ctx_start[c], ctx_end[c]):
            if explicit[g]:
                any_child = True
                num -= math.exp(np.float64(lp[g]) * LN10)
                den -= math.exp(np.float64(lower_lp[g]) * LN10)
        if not any_child:
            continue
        if num < 0.0 and num > -PROB_EPSILON:
            num = 0.0
        if den < 0.0 and den > -PROB_EPSILON:
            den = 0.0
        if den == 0.0 and num > PROB_EPSILON:
            scale = np.float32(-math.log10(1.0 - num))
            for g in range(ctx_start[c], ctx_end[c]):
                if explicit[g]:
                    lp[g] = lp[g] + scale
            bow[c] = np.float32(0.0)
        elif num < 0.0:
            bow[c] = np.float32(-np.inf)
            n_bad += 1
        elif den <= 0.0:
            if num > PROB_EPSILON:
                bow[c] = np.float32(-np.inf)
                n_bad += 1
            else:
                bow[c] = np.float32(0.0)
        elif num == 0.0:
            bow[c] = np.float32(-np.inf)
        else:
            bow[c] = np.float32(math.log10(num) - math.log10(den))
    return bow, n_bad


# ---------------------------------------------------------------- ARPA output

_POW10 = np.array([10.0 ** k for k in range(23)])


@njit(cache=True)
def _put_int(buf, pos, v):
    # non-negative integer < 1000, decimal
    if v >= 100:
        buf[pos] = 48 + v // 100
        pos += 1
    if v >= 10:
        buf[pos] = 48 + (v // 10) % 10
        pos += 1
    buf[pos] = 48 + v % 10
    return pos + 1


@njit(cache=True)
def _decimal7(a):
    """a > 0 -> (m, e) with a ~= m * 10^(e-6), 1e6 <= m < 1e7, m rounded to nearest
    (ties to even, as printf on the exact binary value). m = -1 when the scaled value is
    so close to a rounding tie that double arithmetic cannot decide (left to Python)."""
    e = int(math.floor(math.log10(a)))
    mant = 0.0
    for _ in range(3):
        k = 6 - e
        y = a * _POW10[k] if k >= 0 else a / _POW10[-k]
        mant = np.rint(y)
        if mant >= 1e7:
            e += 1
        elif mant < 1e6:
            e -= 1
        else:
            if abs(abs(y - mant) - 0.5) < 1e-6:
                return -1.0, e
            break
    return mant, e


@njit(cache=True)
def format_g7(buf, pos, x, scratch):
    """Write ``x`` as C's ``%.7g`` at ``buf[pos:]`` (scratch: uint8[8] work space); -inf
    is written as -99 (SRILM's log-zero). Returns the new position, or -1 when the value is outside the range
    handled exactly here (|x| < 1e-15 or >= 1e15, NaN); the caller then falls back to
    Python formatting."""
    if x == 0.0:
        buf[pos] = 48
        return pos + 1
    if x == -np.inf:
        buf[pos] = 45
        buf[pos + 1] = 57
        buf[pos + 2] = 57
        return pos + 3
    if not (abs(x) >= 1e-15 and abs(x) < 1e15):
        return -1
    if x < 0:
        buf[pos] = 45
        pos += 1
        a = -x
    else:
        a = x
    mant, e = _decimal7(a)
    if mant < 0:
        return -1
    v = np.int64(mant)
    for i in range(6, -1, -1):  # the 7 digits, as ASCII, into scratch
        scratch[i] = 48 + v % 10
        v //= 10
    last = 6  # index of the last significant digit (trailing zeros dropped)
    while last > 0 and scratch[last] == 48:
        last -= 1
    if -4 <= e < 7:
        if e >= 0:
            for i in range(e + 1):
                buf[pos] = scratch[i]
                pos += 1
            if last > e:
                buf[pos] = 46
                pos += 1
                for i in range(e + 1, last + 1):
                    buf[pos] = scratch[i]
                    pos += 1
        else:
            buf[pos] = 48
            buf[pos + 1] = 46
            pos += 2
            for i in range(-e - 1):
                buf[pos] = 48
                pos += 1
            for i in range(last + 1):
                buf[pos] = scratch[i]
                pos += 1
    else:
        buf[pos] = scratch[0]
        pos += 1
        if last > 0:
            buf[pos] = 46
            pos += 1
            for i in range(1, last + 1):
                buf[pos] = scratch[i]
                pos += 1
        buf[pos] = 101
        pos += 1
        if e < 0:
            buf[pos] = 45
            e = -e
        else:
            buf[pos] = 43
        pos += 1
        if e < 10:
            buf[pos] = 48
            pos += 1
        pos = _put_int(buf, pos, e)
    return pos


@njit(cache=True)
def write_ngram_lines(rows, lp, bow, has_bow, word_bytes, word_offsets, buf):
    """ARPA n-gram lines ``prob<TAB>w1 .. wn[<TAB>bow]\\n`` into ``buf`` (uint8, large
    enough). Returns (bytes written, -1), or (start of line i, i) when line i holds a
    value that needs Python formatting (the caller writes it and resumes)."""
    m, n = rows.shape
    scratch = np.empty(8, dtype=np.uint8)
    pos = np.int64(0)  # not the literal 0: one compiled format_g7, not two
    for i in range(m):
        line_start = pos
        q = format_g7(buf, pos, np.float64(lp[i]), scratch)
        if q < 0:
            return line_start, i
        pos = q
        buf[pos] = 9
        pos += 1
        for j in range(n):
            if j > 0:
                buf[pos] = 32
                pos += 1
            w = rows[i, j]
            for t in range(word_offsets[w], word_offsets[w + 1]):
                buf[pos] = word_bytes[t]
                pos += 1
        if has_bow[i]:
            buf[pos] = 9
            pos += 1
            q = format_g7(buf, pos, np.float64(bow[i]), scratch)
            if q < 0:
                return line_start, i
            pos = q
        buf[pos] = 10
        pos += 1
    return pos, -1


# ---------------------------------------------------------------- ARPA input

# error codes of parse_ngram_section
ERR_NONE = 0
ERR_FIELDS = 1      # wrong number of fields on the line
ERR_PROB = 2        # probability is not a number
ERR_BOW = 3         # back-off weight is not a number
ERR_WORD = 4        # word not among the unigrams
ERR_TOO_MANY = 5    # more entries than the header announced

_FNV_OFFSET = np.uint64(14695981039346656037)
_FNV_PRIME = np.uint64(1099511628211)


@njit(cache=True)
def _hash_bytes(buf, s, e):
    h = _FNV_OFFSET
    for i in range(s, e):
        h = (h ^ np.uint64(buf[i])) * _FNV_PRIME
    return h


@njit(cache=True)
def build_word_table(word_bytes, word_offsets):
    """Open-addressing hash table word bytes -> id. Returns table int64[size] holding
    id + 1 (0 = empty); size is a power of two >= 2 V."""
    v = word_offsets.shape[0] - 1
    size = 1
    while size < 2 * v + 2:
        size *= 2
    table = np.zeros(size, dtype=np.int64)
    mask = np.uint64(size - 1)
    for w in range(v):
        h = _hash_bytes(word_bytes, word_offsets[w], word_offsets[w + 1]) & mask
        while table[h] != 0:
            h = (h + np.uint64(1)) & mask
        table[h] = w + 1
    return table


@njit(cache=True)
def _lookup_word(buf, s, e, table, word_bytes, word_offsets):
    mask = np.uint64(table.shape[0] - 1)
    h = _hash_bytes(buf, s, e) & mask
    while table[h] != 0:
        w = table[h] - 1
        a = word_offsets[w]
        b = word_offsets[w + 1]
        if b - a == e - s:
            same = True
            for t in range(e - s):
                if word_bytes[a + t] != buf[s + t]:
                    same = False
                    break
            if same:
                return w
        h = (h + np.uint64(1)) & mask
    return -1


@njit(cache=True)
def _parse_float(buf, s, e):
    """Decimal number in buf[s:e] -> (value, ok). Exact (one rounding) for up to 18
    significant digits and exponents within +-22, like strtod's fast path."""
    i = s
    neg = False
    if i < e and (buf[i] == 45 or buf[i] == 43):
        neg = buf[i] == 45
        i += 1
    mant = np.int64(0)
    nd = 0
    exp10 = 0
    seen = False
    while i < e and 48 <= buf[i] <= 57:
        seen = True
        if nd < 18:
            mant = mant * 10 + (buf[i] - 48)
            if mant > 0:
                nd += 1
        else:
            exp10 += 1
        i += 1
    if i < e and buf[i] == 46:
        i += 1
        while i < e and 48 <= buf[i] <= 57:
            seen = True
            if nd < 18:
                mant = mant * 10 + (buf[i] - 48)
                exp10 -= 1
                if mant > 0:
                    nd += 1
            i += 1
    if not seen:
        return 0.0, False
    if i < e and (buf[i] == 101 or buf[i] == 69):
        i += 1
        eneg = False
        if i < e and (buf[i] == 45 or buf[i] == 43):
            eneg = buf[i] == 45
            i += 1
        ev = 0
        eseen = False
        while i < e and 48 <= buf[i] <= 57:
            eseen = True
            if ev < 100000:
                ev = ev * 10 + (buf[i] - 48)
            i += 1
        if not eseen:
            return 0.0, False
        exp10 += -ev if eneg else ev
    if i != e:
        return 0.0, False
    v = np.float64(mant)
    if exp10 == 0:
        pass
    elif 0 < exp10 <= 22:
        v = v * _POW10[exp10]
    elif -22 <= exp10 < 0:
        v = v / _POW10[-exp10]
    else:
        v = v * 10.0 ** exp10
    return (-v if neg else v), True


@njit(cache=True)
def parse_ngram_section(buf, start, end, n, expected, table, word_bytes, word_offsets):
    """Parse the lines of one ``\\n-grams:`` section, buf[start:end].

    Each non-blank line is ``prob w1 .. wn [bow]`` (tabs or spaces). Returns rows
    int32[count, n], lp float32[count], bow float32[count], has_bow bool[count],
    count, error code (ERR_*), and the 0-based line index of the error within the
    section. -99 (SRILM's log-zero) is kept as the number -99.
    """
    rows = np.zeros((expected, n), dtype=np.int32)
    lp = np.zeros(expected, dtype=np.float32)
    bow = np.zeros(expected, dtype=np.float32)
    has_bow = np.zeros(expected, dtype=np.bool_)
    tok_s = np.empty(n + 3, dtype=np.int64)
    tok_e = np.empty(n + 3, dtype=np.int64)
    count = 0
    line = 0
    pos = start
    while pos < end:
        le = pos
        while le < end and buf[le] != 10:
            le += 1
        # tokenise on spaces, tabs and \r
        nt = 0
        i = pos
        while i < le and nt < n + 3:
            while i < le and (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
                i += 1
            if i >= le:
                break
            tok_s[nt] = i
            while i < le and not (buf[i] == 32 or buf[i] == 9 or buf[i] == 13):
                i += 1
            tok_e[nt] = i
            nt += 1
        if nt > 0:
            if count >= expected:
                return rows, lp, bow, has_bow, count, ERR_TOO_MANY, line
            if nt != n + 1 and nt != n + 2:
                return rows, lp, bow, has_bow, count, ERR_FIELDS, line
            v, ok = _parse_float(buf, tok_s[0], tok_e[0])
            if not ok:
                return rows, lp, bow, has_bow, count, ERR_PROB, line
            lp[count] = np.float32(v)
            for j in range(n):
                w = _lookup_word(buf, tok_s[j + 1], tok_e[j + 1], table, word_bytes, word_offsets)
                if w < 0:
                    return rows, lp, bow, has_bow, count, ERR_WORD, line
                rows[count, j] = w
            if nt == n + 2:
                v, ok = _parse_float(buf, tok_s[n + 1], tok_e[n + 1])
                if not ok:
                    return rows, lp, bow, has_bow, count, ERR_BOW, line
                bow[count] = np.float32(v)
                has_bow[count] = True
            count += 1
        line += 1
        pos = le + 1
    return rows, lp, bow, has_bow, count, ERR_NONE, line


# ---------------------------------------------------------------- int64 hash maps

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


@njit(cache=True)
def _slot(key, shift):
    return np.int64((np.uint64(key) * _GOLDEN) >> np.uint64(shift))


@njit(cache=True)
def hash_insert(table_keys, table_vals, shift, keys, next_id):
    """Insert non-negative ``keys`` into an open-addressing map (empty slot = -1);
    a new key gets value ``next_id``, ``next_id + 1``, ... in order of first appearance.
    Returns (value of every key int64[n], next free id). The caller keeps the load
    below one half."""
    size = table_keys.shape[0]
    out = np.empty(keys.shape[0], dtype=np.int64)
    for i in range(keys.shape[0]):
        k = keys[i]
        h = _slot(k, shift)
        while True:
            t = table_keys[h]
            if t == k:
                out[i] = table_vals[h]
                break
            if t == -1:
                table_keys[h] = k
                table_vals[h] = next_id  # int32 storage: fewer than 2^31 entries
                out[i] = next_id
                next_id += 1
                break
            h += 1
            if h == size:
                h = 0
    return out, next_id


@njit(cache=True)
def hash_rehash(table_keys, table_vals, new_size, new_shift):
    nk = np.full(new_size, -1, dtype=np.int64)
    nv = np.zeros(new_size, dtype=table_vals.dtype)
    for h in range(table_keys.shape[0]):
        k = table_keys[h]
        if k != -1:
            j = _slot(k, new_shift)
            while nk[j] != -1:
                j += 1
                if j == new_size:
                    j = 0
            nk[j] = k
            nv[j] = table_vals[h]
    return nk, nv


@njit(cache=True)
def hash_find(table_keys, table_vals, shift, key):
    """Value stored for ``key``, or -1."""
    size = table_keys.shape[0]
    h = _slot(key, shift)
    while True:
        t = table_keys[h]
        if t == key:
            return table_vals[h]
        if t == -1:
            return -1
        h += 1
        if h == size:
            h = 0


@njit(cache=True)
def backoff_query(tokens, starts, positions, order, vocab_size, node_keys, node_vals,
                         node_shift, node_bow, prob_keys, prob_vals, prob_shift, prob_lp):
    """log10 p(w | context) by the ARPA back-off rule, walked like SRILM's
    ``Ngram::wordProbBO`` (reversed-context trie, float32 sums).

    tokens    : int64[n_tokens]  model word ids
    starts    : int64[n_tokens]  index of the sentence start (<s>) of each token
    positions : int64[n]         positions to score
    node map  : key parent_node * V + word -> node id (root 0; parent = the context one
                word shorter on the left); node_bow float32[n_nodes + 1]
    prob map  : key context_node * V + word -> index into prob_lp float32
    Returns (log10 probability float64[n], length of the n-gram used int64[n]; 0 = none).
    """
    n = positions.shape[0]
    out = np.empty(n, dtype=np.float64)
    hit = np.zeros(n, dtype=np.int64)
    for i in range(n):
        p = positions[i]
        w = tokens[p]
        logp = np.float32(-np.inf)
        k = hash_find(prob_keys, prob_vals, prob_shift, w)
        if k >= 0:
            logp = prob_lp[k]
            hit[i] = 1
        bow = np.float32(0.0)
        node = 0
        depth = min(order - 1, p - starts[p])
        for d in range(1, depth + 1):
            nxt = hash_find(node_keys, node_vals, node_shift, node * vocab_size + tokens[p - d])
            if nxt < 0:
                break
            node = nxt
            bow = bow + node_bow[node]
            k = hash_find(prob_keys, prob_vals, prob_shift, node * vocab_size + w)
            if k >= 0:
                logp = prob_lp[k]
                bow = np.float32(0.0)
                hit[i] = d + 1
        out[i] = np.float64(logp + bow)
    return out, hit


@njit(cache=True)
def quantize_g7(x):
    """float32[n] -> (float32[n], bool[n]): each value replaced by what reading back its
    ``%.7g`` text gives (same digits as ``format_g7``, same arithmetic as
    ``_parse_float``), so a model scores identically before and after an ARPA round
    trip. The mask marks near-tie values left unchanged for the caller to do in Python;
    -inf and values outside format_g7's exact range are kept as they are."""
    out = x.copy()
    python = np.zeros(x.shape[0], dtype=np.bool_)
    for i in range(x.shape[0]):
        v = np.float64(x[i])
        a = abs(v)
        if v == 0.0 or not (a >= 1e-15 and a < 1e15):
            continue
        mant, e = _decimal7(a)
        if mant < 0:
            python[i] = True
            continue
        k = 6 - e
        q = mant / _POW10[k] if k >= 0 else mant * _POW10[-k]
        out[i] = np.float32(-q if v < 0 else q)
    return out, python


# ---------------------------------------------------------------- n-gram counting

@njit(cache=True)
def next_order(ids_prev, tokens, sentence_start, n_prev, vocab_size):
    """Distinct n-grams from the (n-1)-grams: the n-gram ending at position p is
    ((n-1)-gram ending at p-1, token p), present where ids_prev[p-1] >= 0 and p does
    not start a sentence.

    ids_prev : int32[T]  id of the (n-1)-gram ending at each position (-1: none)
    tokens   : int32[T]
    sentence_start : bool[T]
    Two stable counting sorts (by word, then by prefix id) list the n-grams in
    (prefix, word) order, i.e. as one level of a trie. Returns ids int32[T] (id of the
    n-gram ending at each position, -1: none), and per n-gram prefix, word, suffix
    (id of the (n-1)-gram ending at the same position) and count, all int32[m].
    """
    T = tokens.shape[0]
    n_valid = 0
    for p in range(1, T):
        if ids_prev[p - 1] >= 0 and not sentence_start[p]:
            n_valid += 1
    pos = np.empty(n_valid, dtype=np.int32)
    k = 0
    for p in range(1, T):
        if ids_prev[p - 1] >= 0 and not sentence_start[p]:
            pos[k] = p
            k += 1
    # pass 1: by word
    start = np.zeros(vocab_size + 1, dtype=np.int64)
    for i in range(n_valid):
        start[tokens[pos[i]] + 1] += 1
    for w in range(vocab_size):
        start[w + 1] += start[w]
    by_word = np.empty(n_valid, dtype=np.int32)
    for i in range(n_valid):
        w = tokens[pos[i]]
        by_word[start[w]] = pos[i]
        start[w] += 1
    # pass 2: by prefix id, stable
    start2 = np.zeros(n_prev + 1, dtype=np.int64)
    for i in range(n_valid):
        start2[ids_prev[pos[i] - 1] + 1] += 1
    for j in range(n_prev):
        start2[j + 1] += start2[j]
    order = pos  # reuse
    for i in range(n_valid):
        p = by_word[i]
        j = ids_prev[p - 1]
        order[start2[j]] = p
        start2[j] += 1
    # runs of equal (prefix, word) are the distinct n-grams
    ids = np.full(T, -1, dtype=np.int32)
    prefix = np.empty(n_valid, dtype=np.int32)
    word = np.empty(n_valid, dtype=np.int32)
    suffix = np.empty(n_valid, dtype=np.int32)
    count = np.zeros(n_valid, dtype=np.int32)
    m = -1
    last_prefix = -1
    last_word = -1
    for i in range(n_valid):
        p = order[i]
        a = ids_prev[p - 1]
        w = tokens[p]
        if a != last_prefix or w != last_word:
            m += 1
            prefix[m] = a
            word[m] = w
            suffix[m] = ids_prev[p]
            last_prefix = a
            last_word = w
        count[m] += 1
        ids[p] = m
    m += 1
    return ids, prefix[:m].copy(), word[:m].copy(), suffix[:m].copy(), count[:m].copy()
