"""Text corpora as integer arrays: vocabulary, sentence markers, unknown words.

Conventions (those of SRILM and KenLM):

* UTF-8 text, one sentence per line, tokens separated by white space; ``-`` reads stdin.
  Blank lines are skipped (they are not sentences). The text convention of every reader
  (``io``): lines end at ``\\n``, ``\\r\\n`` or a lone ``\\r``; a UTF-8 byte-order mark
  opening the file is skipped; words are split on ASCII white space only (space, tab,
  ``\\n``, ``\\r``, ``\\v``, ``\\f``: ``io.WHITESPACE``), as SRILM and KenLM split, so a
  no-break space is a character of a word. A vocabulary word is a non-empty string
  without that white space (``Vocabulary`` refuses others: no reader could read them back).
* Each sentence is encoded as ``<s> w1 ... wn </s>``. The predicted symbols are
  ``w1 ... wn`` and ``</s>``; ``<s>`` is only ever a context. A line may already
  start with ``<s>`` and end with ``</s>`` (SRILM accepts that; the markers are
  dropped). ``<s>`` anywhere else in a line is refused (``CorpusError`` naming the
  file and line): it would make a sentence start that no model can predict, which
  ``suffixlm train`` cannot represent and SRILM scores as a zero probability. A
  ``</s>`` inside a line is an ordinary word, as in SRILM.
* Ids 0, 1, 2 are always ``<s>``, ``</s>`` and ``<unk>``. Whether ``<unk>`` is a real
  vocabulary word is ``Vocabulary.has_unk``: it is when the training text (or the
  vocabulary file) contains ``<unk>``, or when the user asks for an open vocabulary
  (SRILM's ``-unk``). Then out-of-vocabulary words map to ``<unk>`` and are scored
  as it. Otherwise an OOV word is still stored as id 2, but it is counted as an OOV
  and excluded from perplexity, exactly as SRILM's ``ngram -ppl`` does.

A ``Corpus`` is one flat ``int32`` token array (markers included) plus ``int64``
sentence offsets: sentence ``s`` is ``tokens[offsets[s]:offsets[s+1]]``. Arrays of
another integer dtype (or lists) given to ``Corpus`` are converted, others refused
(``TypeError``); ``Corpus.check()`` checks what the numba kernels rely on (integer ids
within the vocabulary, offsets from 0 to the end, no empty sentence, ``<s>`` only as a
sentence's first token), and the functions that give a corpus to a kernel call it.
"""

from __future__ import annotations

import io
import os
import stat
import sys
from array import array
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Iterator

import numpy as np

from .io import (BOM, GZIP_MAGIC, WHITESPACE, InputError, atomic_write, decode_line, has_whitespace, input_name,
                 line_blocks, max_line_bytes, open_error_message, open_input, split_words, splits_plainly, utf8_encodable,
                 word_problem)

BOS = "<s>"
EOS = "</s>"
UNK = "<unk>"
BOS_ID = 0
EOS_ID = 1
UNK_ID = 2
SPECIALS = (BOS, EOS, UNK)


class CorpusError(InputError):
    """Bad corpus or vocabulary input; the message names the file and line."""


def read_lines(path: str | Path) -> Iterator[tuple[int, list[str]]]:
    """Yield ``(line_number, tokens)`` for each non-blank line of a UTF-8 text file
    (``-``: stdin; gzip content is decompressed, see ``io.open_input``).

    Raises ``CorpusError`` naming the file and line on invalid UTF-8, on a ``<s>``
    that does not open its line, and when the file cannot be read or holds no sentence
    at all (empty, or only blank lines).
    """
    name = input_name(path)
    try:
        fh = open_input(path, text=True, error=CorpusError)
    except OSError as e:
        raise CorpusError(open_error_message(path, e)) from None
    n_sent = 0
    lineno = 0
    where = f"{name}:"
    with fh:
        for lineno, line in enumerate(fh, 1):
            toks = split_words(line)
            if toks:
                if BOS in toks:
                    _check_markers(toks, where, lineno)
                n_sent += 1
                yield lineno, toks
    if n_sent == 0:
        what = "is empty" if lineno == 0 else f"has only blank lines ({lineno} lines)"
        raise CorpusError(f"{name}: {what}; expected one sentence per line")


def _check_words(words: list) -> None:
    """``TypeError`` / ``ValueError`` naming the first word that no text or ARPA file can
    hold (``io.word_problem``: not a string, empty, with white space, a lone surrogate).
    One pass over all the words at once; word by word only to name a bad one."""
    try:
        joined = "\0".join(words)
        ok = "" not in words[:1] and "\0\0" not in joined and not joined.endswith("\0") \
            and not has_whitespace(joined) and (joined.isascii() or utf8_encodable(joined))
    except TypeError:
        ok = False
    if ok:
        return
    for i, w in enumerate(words):
        why = word_problem(w)
        if why is not None:
            raise (ValueError if isinstance(w, str) else TypeError)(
                f"vocabulary word {i}: {why}; a word is a non-empty string without white space (space, tab, "
                "\\n, \\r, \\v, \\f), which a text, vocabulary or ARPA file gives back as one word")


def _check_markers(toks: list[str], where: str, number: int) -> None:
    """``CorpusError`` for a ``<s>`` that is not the first word of ``toks`` (see the
    module docstring); ``where + str(number)`` names the line or sentence."""
    if BOS in toks and (toks[0] != BOS or BOS in toks[1:]):
        k = toks.index(BOS, 1 if toks[0] == BOS else 0)
        raise CorpusError(f"{where}{number}: '<s>' inside a sentence (word {k + 1}); <s> may only open a line")


def _strip_markers(toks: list[str]) -> list[str]:
    # SRILM accepts sentences already wrapped in <s> ... </s>; drop those markers.
    if toks and toks[0] == BOS:
        toks = toks[1:]
    if toks and toks[-1] == EOS:
        toks = toks[:-1]
    return toks


class Vocabulary:
    """Word <-> id map. Ids 0..2 are ``<s>``, ``</s>``, ``<unk>``; then words by
    decreasing training count (ties in code-point order), so ids are deterministic.

    Attributes
    ----------
    words : list[str]      id -> word
    index : dict[str, int] word -> id
    has_unk : bool         whether ``<unk>`` is a real word (open vocabulary)
    """

    def __init__(self, words: Iterable[str], has_unk: bool = False):
        words = list(words)
        if tuple(words[:3]) != SPECIALS:
            raise ValueError("vocabulary must start with <s>, </s>, <unk>")
        _check_words(words)
        self.words = words
        self.index = {w: i for i, w in enumerate(words)}
        if len(self.index) != len(words):
            raise ValueError("vocabulary has duplicate words")
        self.has_unk = bool(has_unk)

    def __len__(self) -> int:
        return len(self.words)

    def __contains__(self, word: str) -> bool:
        i = self.index.get(word)
        return i is not None and (i != UNK_ID or self.has_unk)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Vocabulary) and self.words == other.words and self.has_unk == other.has_unk

    def id(self, word: str) -> int:
        """Id of ``word``; ``UNK_ID`` for a word outside the vocabulary."""
        return self.index.get(word, UNK_ID)

    @property
    def n_predicted(self) -> int:
        """Number of symbols a model predicts: V minus ``<s>``, minus ``<unk>`` unless it is a word."""
        return len(self.words) - 1 - (0 if self.has_unk else 1)

    @classmethod
    def from_counts(cls, counts: Counter, min_count: int = 1, unk: bool = False) -> "Vocabulary":
        """Words seen at least ``min_count`` times. Words dropped by ``min_count`` become
        ``<unk>``, which makes the vocabulary open (``has_unk``)."""
        if min_count < 1:
            raise ValueError("min_count must be >= 1")
        kept = [w for w, c in counts.items() if c >= min_count and w not in SPECIALS]
        dropped = any(c < min_count for w, c in counts.items() if w not in SPECIALS)
        kept.sort(key=lambda w: (-counts[w], w))
        if dropped and not kept:
            top = max(c for w, c in counts.items() if w not in SPECIALS)
            raise CorpusError(f"min_count={min_count} leaves no word in the vocabulary (the most frequent word "
                              f"is seen {top} times)")
        has_unk = unk or counts.get(UNK, 0) > 0 or dropped
        return cls(list(SPECIALS) + kept, has_unk=has_unk)

    @classmethod
    def from_text(cls, path: str | Path, min_count: int = 1, unk: bool = False) -> "Vocabulary":
        """Vocabulary of a training text (see ``from_counts``)."""
        counts: Counter = Counter()
        for _, toks in read_lines(path):
            counts.update(_strip_markers(toks))
        return cls.from_counts(counts, min_count=min_count, unk=unk)

    @classmethod
    def from_file(cls, path: str | Path, unk: bool = False) -> "Vocabulary":
        """Read a vocabulary file: one word per line (SRILM ``-vocab`` format; a second
        column, e.g. a count, is ignored). ``<unk>`` in the file makes it open."""
        words: list[str] = []
        seen: set[str] = set()
        has_unk = unk
        for lineno, toks in read_lines(path):
            w = toks[0]
            if w == UNK:
                has_unk = True
            if w in SPECIALS or w in seen:
                continue
            seen.add(w)
            words.append(w)
        return cls(list(SPECIALS) + words, has_unk=has_unk)

    def save(self, path: str | Path) -> None:
        """Write one word per line (specials included; ``<unk>`` only if it is a word),
        atomically (``io.atomic_write``; a name ending in ``.gz`` compresses)."""
        with atomic_write(path, binary=False) as fh:
            for i, w in enumerate(self.words):
                if i == UNK_ID and not self.has_unk:
                    continue
                fh.write(w + "\n")


@dataclass
class Corpus:
    """A tokenised corpus.

    tokens  : int32[n_tokens]   ``<s> w1 .. wn </s>`` for every sentence, concatenated
    offsets : int64[n_sent + 1] sentence boundaries into ``tokens``
    vocab   : Vocabulary
    n_words : int   words in the text (markers excluded), OOVs included
    n_oov   : int   words that are OOV (id 2 while ``vocab.has_unk`` is False)
    """

    tokens: np.ndarray
    offsets: np.ndarray
    vocab: Vocabulary
    n_words: int
    n_oov: int
    source: str = ""

    def __post_init__(self):
        # arrays of another integer dtype, or lists, become the documented dtypes; floats,
        # bools and objects are refused (a numba kernel would not compile for them)
        self.tokens = _id_array(self.tokens, "tokens", np.int32)
        self.offsets = _id_array(self.offsets, "offsets", np.int64)

    def check(self) -> "Corpus":
        """Raise ``ValueError`` unless the arrays hold what the numba kernels rely on
        (they do no bounds checks): offsets from 0 to the number of tokens, increasing
        (no empty sentence), word ids in [0, len(vocab)), ``<s>`` only as a sentence's
        first token (``CorpusError``), ``n_words`` and ``n_oov`` integers >= 0. Every
        corpus the readers build passes; the functions that hand a corpus to a kernel
        call this first. Returns the corpus."""
        tok, off, V = self.tokens, self.offsets, len(self.vocab)
        if len(off) == 0 or off[0] != 0 or off[-1] != len(tok):
            raise ValueError(f"offsets must run from 0 to the {len(tok)} tokens, "
                             f"got {off[:1].tolist()} .. {off[-1:].tolist()}")
        if len(off) > 1 and np.any(off[1:] <= off[:-1]):
            s = int(np.flatnonzero(off[1:] <= off[:-1])[0])
            raise ValueError(f"offsets must increase (every sentence holds a token): sentence {s} is "
                             f"tokens[{off[s]}:{off[s + 1]}]")
        if len(tok) and (int(tok.min()) < 0 or int(tok.max()) >= V):
            bad = int(np.flatnonzero((tok < 0) | (tok >= V))[0])
            raise ValueError(f"token {bad} has id {int(tok[bad])}; ids must be >= 0 and < {V} (the vocabulary)")
        n_bos = int(np.count_nonzero(tok == BOS_ID))
        if n_bos and n_bos != int(np.count_nonzero(tok[off[:-1]] == BOS_ID)):
            starts = np.zeros(len(tok), dtype=bool)
            starts[off[:-1]] = True
            bad = int(np.flatnonzero((tok == BOS_ID) & ~starts)[0])
            s = int(np.searchsorted(off, bad, side="right")) - 1
            raise CorpusError(f"{self.source or 'corpus'}: '<s>' at token {bad}, inside sentence {s + 1} "
                              f"(offsets {int(off[s])}..{int(off[s + 1])}); <s> may only open a sentence")
        for name in ("n_words", "n_oov"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name} must be an integer >= 0, got {v!r}")
        return self

    @property
    def n_sentences(self) -> int:
        return len(self.offsets) - 1

    @property
    def n_tokens(self) -> int:
        return len(self.tokens)

    def sentence(self, s: int) -> np.ndarray:
        return self.tokens[self.offsets[s] : self.offsets[s + 1]]

    def sentences_as_words(self) -> Iterator[list[str]]:
        """The words of each sentence, markers excluded (OOVs show as ``<unk>``)."""
        w = self.vocab.words
        for s in range(self.n_sentences):
            yield [w[t] for t in self.sentence(s)[1:-1]]

    def target_mask(self) -> np.ndarray:
        """bool[n_tokens]: True where the token is predicted and scored: every position
        except ``<s>``, and except OOVs when ``<unk>`` is not a word."""
        m = np.ones(len(self.tokens), dtype=bool)
        m[self.offsets[:-1]] = False
        if not self.vocab.has_unk:
            m &= self.tokens != UNK_ID
        return m

    @classmethod
    def from_sentences(cls, sentences: Iterable[list[str]], vocab: Vocabulary, source: str = "") -> "Corpus":
        """Encode sentences given as lists of words (``<s>`` inside one: ``CorpusError``)."""
        if isinstance(sentences, (str, bytes)):
            raise TypeError("sentences must be an iterable of word lists, not one string")
        return cls._encoded(enumerate(sentences, 1), vocab, source, f"{source or 'sentences'}: sentence ")

    @classmethod
    def _encoded(cls, numbered, vocab: Vocabulary, source: str, where: str) -> "Corpus":
        tokens, off, n_words = encode_lines(numbered, UnknownIsUnk(vocab.index).__getitem__, where)
        n_oov = 0 if vocab.has_unk else int(np.count_nonzero(tokens == UNK_ID))
        return cls(tokens, off, vocab, n_words, n_oov, source)

    @classmethod
    def from_text(cls, path: str | Path, vocab: Vocabulary) -> "Corpus":
        """Encode a text file with a given vocabulary (errors name the file and line)."""
        if compiled_reader_pays(path):
            tokens, off, n_words = encode_text(path, WordTable(vocab.words, frozen=True))
        else:
            whole = encode_plain_text(path, UnknownIsUnk(vocab.index).__getitem__)
            if whole is None:
                return cls._encoded(read_lines(path), vocab, str(path), f"{input_name(path)}:")
            tokens, off, n_words = whole
        n_oov = 0 if vocab.has_unk else int(np.count_nonzero(tokens == UNK_ID))
        return cls(tokens, off, vocab, n_words, n_oov, str(path))

    @classmethod
    def from_strings(cls, lines: Iterable[str], vocab: Vocabulary | None = None, **vocab_kw) -> "Corpus":
        """Convenience for tests and the API: sentences given as strings. Without a
        vocabulary, one is built from these lines."""
        if isinstance(lines, (str, bytes)):
            raise TypeError("lines must be an iterable of sentence strings, not one string")
        lines = list(lines)
        for i, ln in enumerate(lines):
            if not isinstance(ln, str):
                raise TypeError(f"line {i} is a {type(ln).__name__}, expected a sentence string")
        sents = [t for t in map(split_words, lines) if t]
        if not sents:
            raise CorpusError("no sentence given")
        if vocab is None:
            counts: Counter = Counter()
            for t in sents:
                counts.update(_strip_markers(t))
            vocab = Vocabulary.from_counts(counts, **vocab_kw)
        return cls.from_sentences(sents, vocab)


def load_training_corpus(
    path: str | Path,
    vocab_path: str | Path | None = None,
    min_count: int = 1,
    unk: bool = False,
) -> Corpus:
    """Read a training text once (so ``-`` for stdin works): vocabulary from
    ``vocab_path`` if given, else from the text itself (words seen ``min_count``
    times or more), then encode it.

    Without a vocabulary file the text is encoded in the same single pass with
    provisional ids (order of first appearance), then renumbered: only the distinct
    words are kept as strings, never the text (PTB train: +12 MB instead of +77 MB).
    """
    if vocab_path is not None:
        vocab = Vocabulary.from_file(vocab_path, unk=unk)
        return Corpus.from_text(path, vocab)
    first = WordTable(list(SPECIALS), frozen=False)
    prov, off, n_words = encode_text(path, first)
    words = first.words()
    counts = np.bincount(prov, minlength=len(words))
    counter = Counter({w: int(c) for w, c in zip(words, counts) if c > 0 and w not in (BOS, EOS)})
    try:
        vocab = Vocabulary.from_counts(counter, min_count=min_count, unk=unk)
    except CorpusError as e:
        raise CorpusError(f"{input_name(path)}: {e}") from None
    # provisional id -> final id (words dropped by min_count become <unk>)
    index = vocab.index
    remap = np.fromiter((index.get(w, UNK_ID) for w in words), dtype=np.int32, count=len(words))
    return Corpus(remap[prov], off, vocab, n_words, 0, source=str(path))


def _id_array(a, name: str, dtype) -> np.ndarray:
    """``a`` (an array or a list) as a 1-d C-contiguous array of ``dtype``: ``TypeError``
    unless it holds integers (floats, bools and Python objects are refused, not
    truncated), ``ValueError`` for another shape or a value ``dtype`` cannot hold."""
    arr = np.asarray(a)
    if arr.dtype.kind not in "iu":
        if not (arr.size == 0 and arr.dtype.kind == "f"):  # np.asarray([]) is float64
            raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got shape {arr.shape}")
    if arr.dtype != dtype:
        info = np.iinfo(dtype)
        if arr.size and (arr.min() < info.min or arr.max() > info.max):
            raise ValueError(f"{name} holds a value outside {np.dtype(dtype).name}")
        arr = arr.astype(dtype)
    return np.ascontiguousarray(arr)


class UnknownIsUnk(dict):
    """word -> id, ``UNK_ID`` for a word not in the map (``__getitem__`` for ``map``)."""

    def __missing__(self, word: str) -> int:
        return UNK_ID


class FirstSeenIds(dict):
    """word -> id, a new word getting the next id (``__getitem__`` for ``map``)."""

    def __missing__(self, word: str) -> int:
        i = self[word] = len(self)
        return i


def encode_lines(numbered: Iterable[tuple[int, list[str]]], lookup, where: str) -> tuple[np.ndarray, np.ndarray, int]:
    """``<s> ids </s>`` of every sentence (``lookup``: word -> id), concatenated.

    numbered: ``(number, words)`` pairs; ``where + str(number)`` names a sentence in
    errors (a ``<s>`` inside it, a sentence that is a string instead of a word list).
    Returns tokens int32 (n_tokens,), offsets int64 (n_sent + 1,), number of words.
    """
    ids = array("i")
    offsets = array("q", [0])
    n_words = 0
    for number, toks in numbered:
        if isinstance(toks, (str, bytes)):
            raise TypeError(f"{where}{number}: a sentence must be a list of words, not a string")
        if BOS in toks:
            _check_markers(toks, where, number)
        toks = _strip_markers(toks)
        ids.append(BOS_ID)
        ids.extend(map(lookup, toks))
        ids.append(EOS_ID)
        n_words += len(toks)
        offsets.append(len(ids))
    return np.frombuffer(ids, dtype=np.int32).copy(), np.frombuffer(offsets, dtype=np.int64).copy(), n_words


#: ASCII white space (``io.WHITESPACE``) by byte value
_SPACE_BYTE = np.zeros(256, dtype=bool)
_SPACE_BYTE[[ord(c) for c in WHITESPACE]] = True


def encode_plain_text(path, lookup) -> tuple[np.ndarray, np.ndarray, int] | None:
    """``encode_lines(read_lines(path), lookup, ...)`` for a small regular file read at once:
    one ``str.split`` of the whole text and the sentences' lengths from its bytes, where the
    line reader splits and checks line after line (PTB test, 82k words: 17 -> 14 ms). None
    where the text needs the line reader's own checks or messages: not a regular file of at
    most ``COMPILED_READER_BYTES`` and the longest line allowed, gzip, a byte-order
    mark, invalid UTF-8, ``<s>`` or ``</s>`` anywhere, white space that ``str.split`` takes
    and the readers do not (``io.splits_plainly``), no word at all; ``read_lines`` then
    gives the same arrays or the error naming the line."""
    if input_name(path) == "<stdin>":
        return None
    try:
        with open(path, "rb") as fh:
            st = os.fstat(fh.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_size > min(COMPILED_READER_BYTES, max_line_bytes()):
                return None
            raw = fh.read()
    except (OSError, TypeError, ValueError):
        return None
    if raw[:2] == GZIP_MAGIC or raw[:3] == BOM:
        return None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if "<s>" in text or "</s>" in text or not splits_plainly(text):
        return None
    words = text.split()  # here the readers' split: ASCII white space, lines ending at \n, \r\n, \r
    if not words:
        return None
    ids = np.fromiter(map(lookup, words), dtype=np.int32, count=len(words))
    b = np.frombuffer(raw, dtype=np.uint8)
    space = _SPACE_BYTE[b]
    start = ~space
    start[1:] &= space[:-1]
    breaks = b == 10
    breaks[:-1] |= (b[:-1] == 13) & (b[1:] != 10)
    breaks[-1] |= b[-1] == 13
    line = np.searchsorted(np.flatnonzero(breaks), np.flatnonzero(start))  # each word's line
    if line.shape[0] != ids.shape[0]:
        return None
    new_sent = np.ones(line.shape[0], dtype=bool)
    new_sent[1:] = line[1:] != line[:-1]
    first = np.flatnonzero(new_sent)  # each sentence's first word
    n_sent = first.shape[0]
    offsets = np.zeros(n_sent + 1, dtype=np.int64)
    offsets[1:-1] = first[1:] + 2 * np.arange(1, n_sent)
    offsets[-1] = ids.shape[0] + 2 * n_sent
    tokens = np.empty(offsets[-1], dtype=np.int32)
    tokens[offsets[:-1]] = BOS_ID
    tokens[offsets[1:] - 1] = EOS_ID
    tokens[np.arange(ids.shape[0]) + 2 * np.cumsum(new_sent) - 1] = ids
    return tokens, offsets, int(ids.shape[0])


#: bytes ``encode_text`` reads at a time
TEXT_BLOCK = 1 << 20
#: A text smaller than this (a regular file; standard input counts as small) is read in
#: Python when numba has not started in the process: numba's start-up (about 0.6 s)
#: would cost more than the compiled reader saves (about 0.2 s a million words), and a
#: binary model scores a test text without numba (docs/query.md).
COMPILED_READER_BYTES = 1 << 24


def compiled_reader_pays(path: str | Path) -> bool:
    """Whether ``Corpus.from_text`` reads ``path`` with ``encode_text``."""
    if "numba" in sys.modules:
        return True
    if input_name(path) == "<stdin>":
        return False
    try:
        return os.stat(path).st_size >= COMPILED_READER_BYTES
    except (OSError, TypeError, ValueError):
        return False  # read_lines words the error


class WordTable:
    """The words ``encode_text`` has met, by id, in a hash table its kernels fill
    (``_text_kernels``): seeded with ``words`` (ids 0..len - 1); when ``frozen`` a word
    not in it reads as ``<unk>``, else it gets the next id."""

    def __init__(self, words: list[str], frozen: bool):
        from . import _text_kernels as TK

        data = [w.encode("utf-8") for w in words]
        n = len(data)
        self.frozen = frozen
        self.n = n
        self.wlen = np.array([len(d) for d in data] + [0] * max(1 << 12, n), dtype=np.int64)
        self.wstart = np.zeros(len(self.wlen), dtype=np.int64)
        np.cumsum(self.wlen[:n - 1], out=self.wstart[1:n])
        joined = b"".join(data)
        self.used = len(joined)
        self.arena = np.zeros(max(1 << 16, 2 * self.used), dtype=np.uint8)  # room for the words' bytes
        self.arena[:self.used] = np.frombuffer(joined, dtype=np.uint8)
        self.whash = np.zeros(len(self.wlen), dtype=np.uint64)
        self.slots = np.full(_pow2(2 * len(self.wlen)), -1, dtype=np.int64)
        TK.index_words(self.arena, self.wstart, self.wlen, n, self.whash, self.slots)

    def grow(self) -> None:
        """Twice the room for words and their bytes."""
        from . import _text_kernels as TK

        cap = 2 * len(self.wlen)
        self.wlen, self.wstart, self.whash = (np.concatenate([a, np.zeros(cap - len(a), a.dtype)])
                                              for a in (self.wlen, self.wstart, self.whash))
        self.slots = np.full(_pow2(2 * cap), -1, dtype=np.int64)
        TK.rehash(self.slots, self.whash, self.n)
        self.arena = np.concatenate([self.arena, np.zeros(len(self.arena), np.uint8)])

    def words(self) -> list[str]:
        """Every word by id."""
        a = self.arena
        return [a[s:s + n].tobytes().decode("utf-8") for s, n in zip(self.wstart[:self.n].tolist(),
                                                                      self.wlen[:self.n].tolist())]


def _pow2(n: int) -> int:
    return 1 << max(4, (n - 1).bit_length())


def encode_text(path: str | Path, table: WordTable) -> tuple[np.ndarray, np.ndarray, int]:
    """``encode_lines(read_lines(path), ...)`` in compiled code (``encode_blocks``): the
    same tokens, offsets, word count and errors, each word's id from ``table`` (which
    takes the new words unless frozen)."""
    name = input_name(path)
    try:
        fh = open_input(path, error=CorpusError)
    except OSError as e:
        raise CorpusError(open_error_message(path, e)) from None
    with fh:
        tokens, offsets, n_words, lines = encode_blocks(line_blocks(fh, name, CorpusError, size=TEXT_BLOCK), table,
                                                        lambda block, before: _raise_first_problem(block, before, name))
    if len(offsets) == 1:
        what = "is empty" if lines == 0 else f"has only blank lines ({lines} lines)"
        raise CorpusError(f"{name}: {what}; expected one sentence per line")
    return tokens, offsets, n_words


def encode_blocks(blocks, table: WordTable, problem) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``encode_lines`` of the lines of ``blocks`` (``io.line_blocks``' ``(lines before,
    whole lines as bytes)``) in one compiled pass a block (``_text_kernels.encode_block``):
    (tokens int32, offsets int64, words, lines read). ``problem(block, lines before)``
    raises the error for the first bad line of a block that holds one (invalid UTF-8, a
    ``<s>`` that does not open its line)."""
    from . import _text_kernels as TK

    pieces, lengths = [np.zeros(0, np.int32)], [np.zeros(0, np.int64)]
    n_words = lines = 0
    t = table
    for before, block in blocks:
        if not block.isascii():
            try:
                block.decode("utf-8")
            except UnicodeDecodeError:
                problem(block, before)
                raise AssertionError("no error raised for invalid UTF-8") from None
        buf = np.frombuffer(block, dtype=np.uint8)
        ids = np.empty(3 * len(block) // 2 + 3, dtype=np.int32)
        sent_len = np.empty(len(block) // 2 + 1, dtype=np.int64)
        n_ids = n_sent = at = 0
        while True:
            i, s, words, read, stop, end, t.n, t.used = TK.encode_block(
                buf[at:], t.slots, t.whash, t.wstart, t.wlen, t.arena, t.n, t.used, t.frozen, ids[n_ids:],
                sent_len[n_sent:])
            n_ids, n_sent, n_words, before, at = n_ids + i, n_sent + s, n_words + words, before + read, at + end
            if stop < 0:
                break
            if stop == 0:
                problem(block[at:], before)
                raise AssertionError("no error raised for a misplaced <s>")
            t.grow()
        pieces.append(ids[:n_ids].copy())
        lengths.append(sent_len[:n_sent].copy())
        lines = before
    lengths = np.concatenate(lengths)
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    return np.concatenate(pieces), offsets, n_words, lines


def _raise_first_problem(block: bytes, before: int, name: str) -> None:
    """The error ``read_lines`` raises for the first bad line of ``block`` (invalid
    UTF-8, a ``<s>`` that does not open its line), whose first line is ``before + 1``."""
    for number, raw in enumerate(block.splitlines(True), before + 1):
        toks = split_words(decode_line(raw, name, number, CorpusError))
        if BOS in toks:
            _check_markers(toks, f"{name}:", number)


def write_text(corpus: Corpus, fh: io.TextIOBase) -> None:
    """Write a corpus back as text, one sentence per line, markers excluded. A first word
    that starts with U+FEFF gets a byte-order mark before it, which readers skip (a
    reader would take that character for the mark and drop it)."""
    for k, words in enumerate(corpus.sentences_as_words()):
        if k == 0 and words and words[0].startswith("\ufeff"):
            fh.write("\ufeff")
        fh.write(" ".join(words) + "\n")


def as_corpus(data, vocab: "Vocabulary | None" = None) -> Corpus:
    """A :class:`Corpus` from what the estimators' ``fit`` and scoring accept: a Corpus
    (as it is), a text file (a training corpus with its own vocabulary when ``vocab`` is
    None: :func:`load_training_corpus`), or an iterable of sentence strings."""
    if isinstance(data, Corpus):
        return data
    if isinstance(data, (str, os.PathLike)):
        if vocab is None:
            return load_training_corpus(data)
        return Corpus.from_text(data, vocab)
    if isinstance(data, (bytes, dict)) or not hasattr(data, "__iter__"):
        raise TypeError(f"expected a Corpus, a text file or an iterable of sentence strings (a list, a generator), "
                        f"not a {type(data).__name__}")
    return Corpus.from_strings(list(data), vocab=vocab)  # any iterable, read once


def predicted_positions(corpus: Corpus) -> np.ndarray:
    """int64[n_pos]: indices into ``corpus.tokens`` of every predicted token (all but ``<s>``)."""
    mask = np.ones(corpus.n_tokens, dtype=bool)
    mask[corpus.offsets[:-1]] = False
    return np.flatnonzero(mask).astype(np.int64)


def sentence_starts(corpus: Corpus) -> np.ndarray:
    """int64[n_tokens]: the index of each token's sentence start (its ``<s>``)."""
    return np.repeat(corpus.offsets[:-1], np.diff(corpus.offsets)).astype(np.int64)
