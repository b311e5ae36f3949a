"""N-gram counts of a corpus (all orders 1..N) as a trie in flat arrays.

Used by the Kneser-Ney estimator (``kn``) and by the ARPA reader (``arpa``), which
keeps only the n-grams of a text; in a module of its own so that neither of those
imports the other.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .corpus import Corpus


@dataclass
class NgramCounts:
    """All n-grams of orders 1..N of a corpus, as a trie in flat arrays.

    For order n (list index n-1), the m_n distinct n-grams are sorted by (prefix, word):
    word   : int32[m_n]  last word
    prefix : int32[m_n]  index of the (n-1)-gram prefix in order n-1 (0 for n = 1)
    suffix : int32[m_n]  index of the (n-1)-gram suffix (first word dropped) in order n-1
    count  : int32[m_n]  raw count
    (int32 keeps memory low; corpora up to 2^31 tokens.)
    Order 1 lists every vocabulary word (count 0 when unseen), indexed by word id.
    """

    order: int
    vocab_size: int
    word: list = field(default_factory=list)
    prefix: list = field(default_factory=list)
    suffix: list = field(default_factory=list)
    count: list = field(default_factory=list)
    #: ``count_ngrams(positions=True)`` only, per order (None for order 1): int32[m_n],
    #: where one occurrence of each n-gram ends in the text; and int32[T] below the top
    #: order (None at the top), the id of the n-gram of that order ending at each
    #: position (-1: none)
    position: list = field(default_factory=list)
    ends: list = field(default_factory=list)

    def rows(self, n: int, index: np.ndarray | slice | None = None) -> np.ndarray:
        """int32[k, n] word ids of the n-grams ``index`` (all when None; a slice: that
        range of them) of order n."""
        return ngram_rows(self.word[:n], self.prefix[:n], index)


def ngram_rows(word: list, prefix: list, index=None) -> np.ndarray:
    """int32[k, n] word ids of the n-grams ``index`` (all when None; a slice: that range
    of them) of order n = ``len(word)`` (``word``, ``prefix``: ``NgramCounts``' arrays of
    orders 1 .. n)."""
    from . import _ngram_kernels as K

    n = len(word)
    if index is None:
        index = slice(None)
    if isinstance(index, slice):  # walked down to the first word in place: a fresh array either way
        g = np.arange(*index.indices(len(word[-1])), dtype=np.int64)
    else:
        g = np.array(index, dtype=np.int64)
    out = np.empty((len(g), n), dtype=np.int32)
    for j in range(n - 1, -1, -1):
        K.rows_column(out, j, word[j], prefix[j], g)
    return out


def rows_by_order(word: list, prefix: list, lo: int = 0, hi: int | None = None) -> tuple[list, list]:
    """The rows (int32[m, n] word ids) of the n-grams of every order n = 2 .. len(word)
    whose first word id lies in ``[lo, hi)`` (all when None), and the slice of its
    order each is (``NgramCounts``' arrays ``word``, ``prefix`` of orders 1 .. N; the trie
    lists an order's n-grams by first word, so the range is one slice of each order,
    found from the slice one order down through the prefixes). Built order after order
    (``_ngram_kernels.extend_rows``: each row is its prefix's, one order down, and its
    word): each row written once, where ``ngram_rows`` of each order walks every n-gram
    down to its first word and passes over the whole output once a column."""
    from . import _ngram_kernels as K

    V = len(word[0])
    lo = int(lo)
    hi = V if hi is None else int(hi)
    if not 0 <= lo <= hi <= V:
        raise ValueError(f"rows_by_order: [{lo}, {hi}) is not a range of word ids within 0..{V}")
    prev = np.ascontiguousarray(word[0][lo:hi], dtype=np.int32).reshape(-1, 1)  # order 1: word w at index w
    a, b = lo, hi
    rows, slices = [], []
    for n in range(2, len(word) + 1):
        pre = prefix[n - 1]
        base = a
        a, b = (int(x) for x in np.searchsorted(pre, [a, b]))  # the n-grams whose prefix lies in the slice below
        prev = K.extend_rows(prev, pre[a:b], base, word[n - 1][a:b])
        rows.append(prev)
        slices.append(slice(a, b))
    return rows, slices


def count_ngrams(corpus: Corpus, order: int, shelf=None, first_words: tuple[int, int] | None = None,
                 positions: bool = False) -> NgramCounts:
    """Count every n-gram (n = 1..order) inside the sentences of ``corpus``.

    Order n is built from order n-1: the n-gram ending at position p is the pair
    (id of the (n-1)-gram ending at p-1, token p). For the bigrams, two counting sorts
    over the vocabulary list the distinct pairs in (prefix, word) order, i.e. as a trie
    level (``_ngram_kernels.next_order``); from the trigrams on, the positions of each
    (n-1)-gram, as the level below listed them, are extended by their next token and
    sorted by it (``next_order_runs``: the same arrays, with one random read a position
    where the counting sort by prefix makes several; orders 3-5 of 50M sampled words
    took 9.0-10.8 s where the counting sorts took 14.9-19.6 s, measured here).

    ``shelf``: a ``distributed.spill.SpillStore`` that keeps each order's arrays on disk
    as soon as they are made (``Leaf`` entries in the lists; ``shelved`` reads one back):
    the counting of the next order needs none of them, so the process holds only the
    order being counted (``kn --memory``). With a shelf the caller also gives up the
    corpus: its tokens are dropped (``corpus.tokens`` emptied) once the bigrams are
    counted, as no higher order reads them.

    ``first_words``: (lo, hi), to count of the orders 2..N only the n-grams whose first
    word id lies in ``[lo, hi)`` (a partition of ``distributed.kn_counts``): their trie
    levels are those of the whole count less the other n-grams (the same order; the
    prefix of each indexes the level below, which holds it, as its first word is the
    same), while a suffix, whose first word is another, is -1 where it lies outside the
    range. The positions where such an n-gram ends are extended as in the whole count,
    the others never sorted: the work of the sorts is the partition's share.

    ``positions``: also keep, per order n >= 2, where one occurrence of each n-gram ends
    (``NgramCounts.position``) and, below the top order, the id of the n-gram ending at
    every position of the text (``NgramCounts.ends``, -1: none): how
    ``distributed.kn_estimate`` finds the suffix of an n-gram of another partition."""
    if isinstance(order, (bool, np.bool_)) or not isinstance(order, (int, np.integer)):
        raise TypeError(f"order must be an integer, got {order!r}")
    if order < 1:
        raise ValueError(f"order must be >= 1, got {order!r}")
    if not isinstance(corpus, Corpus):
        raise TypeError(f"count_ngrams counts a Corpus, got {type(corpus).__name__}")
    corpus.check()  # the kernel indexes by the word ids and offsets
    from . import _ngram_kernels as K

    V = len(corpus.vocab)
    tok = np.ascontiguousarray(corpus.tokens, dtype=np.int32)
    c = NgramCounts(order, V)
    c.word.append(np.arange(V, dtype=np.int32))
    c.prefix.append(np.zeros(V, dtype=np.int32))
    c.suffix.append(np.zeros(V, dtype=np.int32))
    c.count.append(np.bincount(tok, minlength=V).astype(np.int32))
    if positions:
        c.position.append(None)
        c.ends.append(None)
    if first_words is None:
        ids = tok.copy()  # id of the (n-1)-gram ending at each position (-1: none)
    else:
        lo, hi = (int(x) for x in first_words)
        if not 0 <= lo <= hi <= V:
            raise ValueError(f"first_words must be a range of word ids within 0..{V}, got {first_words!r}")
        ids = K.ids_in_range(tok, lo, hi)  # an n-gram starting elsewhere is never extended
    sentence_start = np.zeros(len(tok), dtype=bool)
    sentence_start[corpus.offsets[:-1]] = True
    runs = None
    for n in range(2, order + 1):
        if runs is None:  # the bigrams: two counting sorts over the vocabulary (next_order)
            ids, prefix, word, suffix, count, at, runs = K.next_order(ids, tok, sentence_start, len(c.word[n - 2]), V)
            if positions:
                c.position.append(at[runs[:-1]])
            nxt = K.next_tokens(tok, sentence_start) if n < order else None
            sentence_start = None
            if shelf is not None:
                corpus.tokens = tok = np.empty(0, dtype=np.int32)
        else:  # the level below, run by run (next_order_runs)
            ids, prefix, word, suffix, count, at, runs, first = K.next_order_runs(ids, at, runs, nxt, n == order,
                                                                                   positions)
            if positions:
                c.position.append(first)
            first = None
        if shelf is not None:
            word, prefix, suffix, count = (shelf.wrap(a) for a in (word, prefix, suffix, count))
        c.word.append(word)
        c.prefix.append(prefix)
        c.suffix.append(suffix)
        c.count.append(count)
        if positions:
            c.ends.append(ids if n < order else None)
        word = prefix = suffix = count = None
    return c


def shelved(x) -> np.ndarray:
    """An array of ``NgramCounts`` (or of an estimate) that may be on a shelf
    (``count_ngrams``): the array itself, or the shelf's ``Leaf`` read back."""
    return x if isinstance(x, np.ndarray) or x is None else x.get()


def length(x) -> int:
    """``len`` of an array or of a shelf's ``Leaf`` (without reading it back)."""
    return len(x) if isinstance(x, np.ndarray) else int(x.shape[0])
