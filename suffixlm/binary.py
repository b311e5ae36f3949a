"""The binary back-off model: a file that is memory-mapped, not parsed, and queried in
compiled code (KenLM's ``build_binary`` role).

``suffixlm build-binary IN OUT`` writes it from an ARPA file or a log-linear model file
(converted exactly, as ``suffixlm export`` does); ``kn``, ``prune`` and ``export`` write
it with ``--binary``. :func:`suffixlm.Model` opens it as a :class:`BinaryLM`: the same
numbers as the ARPA file, bit for bit, through KenLM's API (``score``,
``full_scores``, ``BaseScore``, ...), SRILM's statistics (``score_file``, ``suffixlm
ppl``), batched calls (``score_batch``, ``score_ids``) and the next-word distribution
(``distribution``, ``top_k``).

The file (little-endian)::

    bytes 0-15   MAGIC
    16-19        uint32 length of the header
    20-23        uint32 CRC-32 of the header
    24-          the header: JSON (order, vocabulary size, table size, counts, the
                 sections' offsets, sizes and CRC-32s, the file's size)
    then, each at a multiple of 64 bytes: the vocabulary (UTF-8 words, one per line,
    ids in order) and the table (int64[2 (V + S + order + 1)], ``_binary_kernels``).

Opening checks everything the query kernels rely on that is cheap to check: the magic,
the header's CRC and every field, the file's size, the sections' bounds and alignment,
the vocabulary (CRC, words, size) and the table's size against the header. The table
itself is only mapped (its pages are read when a query touches them); its CRC is
checked by :meth:`BinaryLM.verify` (``suffixlm build-binary --verify FILE``). The
kernels bound every loop and check every record number they read, so a table damaged
in a way the CRC would catch gives wrong numbers, never a crash or a hang.
"""

from __future__ import annotations

import json
import math
import os
import sys
import zlib

import numpy as np

from . import _binary_kernels as K
from .corpus import BOS_ID, EOS_ID, UNK_ID, Corpus, Vocabulary, _UnknownIsUnk
from .io import split_words
from .query import UNKNOWN_MISSING_LOG10, FullScoreReturn, KenLMInterface, State, _as_str
from .table import build_table

MAGIC = b"suffixlm binary\n"
VERSION = 1
FORMAT = "suffixlm-backoff-binary"
ALIGN = 64
MAX_HEADER = 1 << 20
MAX_ORDER = 255
_PREAMBLE = 24


class BinaryFormatError(ValueError):
    """A file that is not a valid binary model (truncated, damaged, another format)."""


def is_binary_file(path) -> bool:
    """Whether ``path`` starts with the binary model's magic bytes."""
    try:
        with open(path, "rb") as f:
            return f.read(len(MAGIC)) == MAGIC
    except OSError:
        return False


# ---------------------------------------------------------------------------- writing
def _pad(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def binary_bytes_header(lm, D: np.ndarray, S: int, vocab_blob: bytes) -> tuple[bytes, int, int, int]:
    """(preamble + header + padding, vocabulary offset, table offset, file size)."""
    V = len(lm.vocab)
    sections = {}
    header = {
        "format": FORMAT, "version": VERSION, "byteorder": "little", "order": int(lm.order),
        "vocab_size": V, "has_unk": bool(lm.vocab.has_unk), "table_slots": int(S),
        "counts": [int(c) for c in lm.counts], "missing_log10": UNKNOWN_MISSING_LOG10,
        "sections": sections,
    }
    # two passes: the header's length fixes the offsets it lists
    for _ in range(2):
        text = json.dumps(header, sort_keys=True).encode("ascii")
        v_off = _pad(_PREAMBLE + len(text) + 64)
        t_off = _pad(v_off + len(vocab_blob))
        size = t_off + D.nbytes
        sections["vocab"] = [v_off, len(vocab_blob), zlib.crc32(vocab_blob)]
        sections["table"] = [t_off, int(D.nbytes), zlib.crc32(memoryview(D).cast("B"))]
        header["file_size"] = size
    text = json.dumps(header, sort_keys=True).encode("ascii")
    if _PREAMBLE + len(text) > v_off:
        raise RuntimeError("internal error: binary header longer than planned")
    pre = MAGIC + len(text).to_bytes(4, "little") + zlib.crc32(text).to_bytes(4, "little")
    head = pre + text
    return head + b"\0" * (v_off - len(head)), v_off, t_off, size


def write_binary(lm, path, sources=()) -> dict:
    """Write the back-off model ``lm`` (a :class:`suffixlm.arpa.BackoffLM`) as a binary
    model at ``path``, atomically (``io.atomic_write``; never over one of ``sources``).
    Returns the header (sizes) written."""
    from .io import atomic_write

    if sys.byteorder != "little":
        raise OSError("the binary model format is little-endian; this machine is not")
    if getattr(lm, "restricted", False):
        raise ValueError("this model holds only the n-grams of one text (read with only_for); not writing it")
    D, S = build_table(lm)
    blob = ("\n".join(lm.vocab.words) + "\n").encode("utf-8")
    head, v_off, t_off, size = binary_bytes_header(lm, D, S, blob)
    with atomic_write(path, inputs=tuple(sources) or getattr(lm, "sources", ())) as fh:
        fh.write(head)
        fh.write(blob)
        fh.write(b"\0" * (t_off - v_off - len(blob)))
        fh.write(memoryview(D).cast("B"))
    return {"file_size": size, "table_slots": S, "records": int(len(D) // 2), "counts": list(lm.counts)}


# ---------------------------------------------------------------------------- reading
def _fail(path, msg):
    raise BinaryFormatError(f"{path}: {msg}")


def read_header(path) -> tuple[dict, int]:
    """(the header, the file's size) after checking the preamble, the header's CRC and
    every header field the reader relies on."""
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        pre = f.read(_PREAMBLE)
        if len(pre) < len(MAGIC) or pre[:len(MAGIC)] != MAGIC:
            _fail(path, "not a suffixlm binary model (bad magic bytes)")
        if len(pre) < _PREAMBLE:
            _fail(path, "truncated binary model (no header)")
        n = int.from_bytes(pre[16:20], "little")
        crc = int.from_bytes(pre[20:24], "little")
        if n > MAX_HEADER or _PREAMBLE + n > size:
            _fail(path, "truncated or damaged binary model (header length)")
        text = f.read(n)
    if len(text) != n or zlib.crc32(text) != crc:
        _fail(path, "damaged binary model (header checksum)")
    try:
        h = json.loads(text.decode("ascii"))
    except (UnicodeDecodeError, ValueError):
        _fail(path, "damaged binary model (header is not JSON)")
    if not isinstance(h, dict) or h.get("format") != FORMAT:
        _fail(path, "not a suffixlm binary back-off model")
    if h.get("version") != VERSION:
        _fail(path, f"binary model version {h.get('version')!r}; this suffixlm reads version {VERSION}")
    if h.get("byteorder") != "little" or sys.byteorder != "little":
        _fail(path, "binary model byte order does not match this machine")

    def integer(name, lo, hi):
        v = h.get(name)
        if not isinstance(v, int) or isinstance(v, bool) or not lo <= v <= hi:
            _fail(path, f"damaged binary model (header field {name}={v!r})")
        return v

    order = integer("order", 1, MAX_ORDER)
    V = integer("vocab_size", 3, 2 ** 31 - 1)
    S = integer("table_slots", 0, 2 ** 32 - 1)
    integer("file_size", 0, 2 ** 62)
    if h["file_size"] != size:
        _fail(path, f"truncated or damaged binary model ({size} bytes, the header says {h['file_size']})")
    if (V + S) * V >= 2 ** K.KEY_BITS:
        _fail(path, "damaged binary model (table too large for its keys)")
    if not isinstance(h.get("has_unk"), bool):
        _fail(path, "damaged binary model (header field has_unk)")
    counts = h.get("counts")
    if not (isinstance(counts, list) and len(counts) == order
            and all(isinstance(c, int) and not isinstance(c, bool) and c >= 0 for c in counts)):
        _fail(path, "damaged binary model (header field counts)")
    m = h.get("missing_log10")
    if not isinstance(m, (int, float)) or isinstance(m, bool) or not math.isfinite(m):
        _fail(path, "damaged binary model (header field missing_log10)")
    secs = h.get("sections")
    if not isinstance(secs, dict):
        _fail(path, "damaged binary model (no sections)")
    ends = []
    for name, nbytes in (("vocab", None), ("table", 16 * (V + S + order + 1))):
        s = secs.get(name)
        if not (isinstance(s, list) and len(s) == 3 and all(isinstance(x, int) and not isinstance(x, bool)
                                                             and x >= 0 for x in s)):
            _fail(path, f"damaged binary model (section {name})")
        off, nb, _ = s
        if off % ALIGN or off < _PREAMBLE + n or off + nb > size or (nbytes is not None and nb != nbytes):
            _fail(path, f"damaged binary model (section {name}: offset {off}, {nb} bytes)")
        ends.append((off, off + nb))
    if ends[0][1] > ends[1][0]:
        _fail(path, "damaged binary model (sections overlap)")
    return h, size


class BinaryLM(KenLMInterface):
    """A binary back-off model, memory-mapped (:mod:`suffixlm.binary`), with KenLM's
    query API (:mod:`suffixlm.query`), SRILM's statistics (``score_file``,
    ``log10_probs``), batched scoring and the next-word distribution.

    A :class:`suffixlm.query.State` of this model holds the number of the record of the
    context it keeps (KenLM keeps the same words); states compare equal exactly when
    they predict alike.
    """

    _sum_dtype = np.float32  # KenLM sums a sentence in single precision

    def __init__(self, path):
        self.path = os.fspath(path)
        h, _ = read_header(self.path)
        self.header = h
        V, S = h["vocab_size"], h["table_slots"]
        v_off, v_n, v_crc = h["sections"]["vocab"]
        t_off, t_n, _ = h["sections"]["table"]
        with open(self.path, "rb") as f:
            f.seek(v_off)
            blob = f.read(v_n)
        if len(blob) != v_n or zlib.crc32(blob) != v_crc:
            _fail(self.path, "damaged binary model (vocabulary checksum)")
        try:
            words = blob.decode("utf-8").split("\n")
        except UnicodeDecodeError:
            _fail(self.path, "damaged binary model (vocabulary is not UTF-8)")
        if not words or words[-1] != "" or len(words) - 1 != V:
            _fail(self.path, f"damaged binary model (vocabulary of {len(words) - 1} words, the header says {V})")
        try:
            self.vocab = Vocabulary(words[:-1], has_unk=h["has_unk"])
        except ValueError as e:
            _fail(self.path, f"damaged binary model (vocabulary: {e})")
        self.order = int(h["order"])
        self._counts = list(h["counts"])
        self._missing = float(h["missing_log10"])
        self._V, self._S = V, S
        # a plain ndarray view of the mapping: numba types an exact ndarray fast (a memmap
        # subclass goes through its slow generic path on every call)
        self._D = np.asarray(np.memmap(self.path, dtype=np.int64, mode="r", offset=t_off,
                                       shape=(2 * (V + S + self.order + 1),)))
        directory = self._D[2 * (V + S):].reshape(-1, 2)[2:]
        end = 0
        for B, n in directory.tolist():  # the regions, in order, inside the table (the kernels check them too)
            if B != end or n < 0 or B + n > S:
                _fail(self.path, "damaged binary model (table directory)")
            end = B + n
        if end != S:
            _fail(self.path, "damaged binary model (table directory)")
        self._index = self.vocab.index
        self._to_id = _UnknownIsUnk(self._index).__getitem__
        # the vocabulary as a hash table over UTF-8 bytes, for sentences scored in one call
        raw = np.frombuffer(blob, dtype=np.uint8)
        ends = np.flatnonzero(raw == 10)
        starts = np.concatenate([[0], ends[:-1] + 1])
        self._blob = raw[raw != 10].copy()
        offsets = np.concatenate([starts - np.arange(V), [len(self._blob)]]).astype(np.int64)
        shift = 64 - max(int(2 * V - 1).bit_length(), 1)
        self._W = K.word_table(self._blob, offsets, shift)
        self.sources = (self.path,)
        self._bind_queries()

    # ------------------------------------------------------------ summary
    @property
    def counts(self) -> list[int]:
        """Number of explicit n-grams of each order (the ARPA header)."""
        return list(self._counts)

    @property
    def n_parameters(self) -> int:
        return int(sum(self._counts))

    @property
    def file_size(self) -> int:
        return int(self.header["file_size"])

    def verify(self) -> None:
        """Check the CRC-32 of the table (reads the whole file): ``BinaryFormatError``
        if it does not match."""
        _, _, crc = self.header["sections"]["table"]
        got = 0
        view = memoryview(np.asarray(self._D)).cast("B")
        for a in range(0, len(view), 1 << 24):
            got = zlib.crc32(view[a:a + (1 << 24)], got)
        if got != crc:
            _fail(self.path, "damaged binary model (table checksum)")

    def __repr__(self):
        return f"<suffixlm.binary.BinaryLM from {self.path!r}: order {self.order}, {len(self.vocab)} words>"

    # ------------------------------------------------------------ ids and states
    def _ids(self, sentence: str, eos: bool) -> np.ndarray:
        ids = list(map(self._to_id, split_words(_as_str(sentence))))
        if eos:
            ids.append(EOS_ID)
        return np.array(ids, dtype=np.int64)

    def _record(self, words) -> int:
        """The state record of a history given as word ids (oldest first)."""
        if isinstance(words, (int, np.integer)):
            r = int(words)
            return r if -1 <= r < self._V + self._S else -1
        return int(K.state_of(self._D, self._V, self._S, self.order, np.asarray(words, dtype=np.int64)))

    def _words_of_record(self, r: int) -> tuple[int, ...]:
        ctx = np.empty(self.order, dtype=np.int64)
        rec = np.empty(self.order, dtype=np.int64)
        k = K.decode_state(self._D, self._V, self._S, self.order, r, ctx, rec)
        return tuple(int(x) for x in ctx[:k][::-1])

    def state_words(self, state: State) -> list[str]:
        """The words a state keeps, oldest first."""
        return [self.vocab.words[i] for i in self._words_of_record(self._record(state.words))]

    def _step(self, context, word):
        r = self._record(context)
        lp, n, nxt = K.step(self._D, self._V, self._S, self.order, r, int(word), self._missing)
        return float(lp), int(n), self._words_of_record(int(nxt))

    # ------------------------------------------------------------ KenLM
    def BeginSentenceWrite(self, state: State) -> None:
        state.words = BOS_ID

    def NullContextWrite(self, state: State) -> None:
        state.words = -1

    def _bind_queries(self):
        """``BaseScore`` as a closure over the model's arrays and sizes (the decoder's
        per-call path: no attribute look-up beyond the states')."""
        step, D, V, S, order, missing, get, record, word_id = (
            K.step, self._D, self._V, self._S, self.order, self._missing, self._index.get, self._record,
            self._word_id)

        def BaseScore(in_state: State, word, out_state: State) -> float:
            """log10 p(word | in_state); ``out_state`` becomes the state after ``word``."""
            s = in_state.words
            if s.__class__ is not int:
                s = record(s)
            i = get(word)
            if i is None:
                i = word_id(word)
            lp, _, out_state.words = step(D, V, S, order, s, i, missing)
            return lp

        self.BaseScore = BaseScore
        score_line, W, blob, generic = K.score_line, self._W, self._blob, self._score

        def score(sentence, bos=None, eos=None) -> float:
            if sentence.__class__ is str and bos is not False and eos is not False:
                try:  # words split and looked up in the same compiled call
                    return score_line(D, V, S, order, W, blob, sentence.encode(), True, True, missing)
                except UnicodeEncodeError:
                    pass
            return generic(sentence, bos, eos)

        score.__doc__ = self._score.__doc__
        self.score = score

    def BaseScore(self, in_state: State, word, out_state: State) -> float:  # replaced per model (_bind_queries)
        """log10 p(word | in_state); ``out_state`` becomes the state after ``word``."""
        self._bind_queries()
        return self.BaseScore(in_state, word, out_state)

    def BaseFullScore(self, in_state: State, word, out_state: State) -> FullScoreReturn:
        s = in_state.words
        if s.__class__ is not int:
            s = self._record(s)
        i = self._index.get(word)
        if i is None:
            i = self._word_id(word)
        lp, n, out_state.words = K.step(self._D, self._V, self._S, self.order, s, i, self._missing)
        return FullScoreReturn(lp, n, i == UNK_ID)

    _EMPTY_F = np.zeros(0, dtype=np.float64)
    _EMPTY_I = np.zeros(0, dtype=np.int64)

    def _score(self, sentence, bos=None, eos=None) -> float:
        """log10 p(sentence ``</s>`` | ``<s>``) (KenLM's ``score``); a corpus instead
        of one sentence: scikit-learn's ``score`` (see :mod:`suffixlm.query`)."""
        if sentence.__class__ is str:
            try:  # words split and looked up in the same compiled call
                return K.score_line(self._D, self._V, self._S, self.order, self._W, self._blob, sentence.encode(),
                                    bos is None or bos, eos is None or eos, self._missing)
            except UnicodeEncodeError:  # a lone surrogate: no word of the vocabulary holds one
                pass
        elif not isinstance(sentence, (str, bytes)):
            return super().score(sentence, bos, eos)
        ids = list(map(self._to_id, split_words(_as_str(sentence))))
        if eos is None or eos:
            ids.append(EOS_ID)
        return K.score_one(self._D, self._V, self._S, self.order, np.array(ids, dtype=np.int64), bos is None or bos,
                           self._missing)

    score = _score  # replaced per model by _bind_queries' closure (same results)

    def full_scores(self, sentence, bos=True, eos=True):
        """``(log10 p, n-gram length, oov)`` for every word of ``sentence``, then ``</s>``
        when ``eos`` (KenLM's ``full_scores``)."""
        ids = self._ids(sentence, eos)
        lp = np.empty(len(ids))
        n = np.empty(len(ids), dtype=np.int64)
        K.score_sentences(self._D, self._V, self._S, self.order, ids, np.array([0, len(ids)]), bool(bos),
                          self._missing, lp, n)
        for a, b, w in zip(lp.tolist(), n.tolist(), ids.tolist()):
            yield (a, b, w == UNK_ID)

    # ------------------------------------------------------------ batches
    def score_ids(self, ids, offsets=None, bos: bool = True) -> np.ndarray:
        """KenLM's ``score`` of many sentences given as word ids (``vocab`` ids, ``</s>``
        included where it is to be scored): ``ids`` int[n] with ``offsets`` int[k + 1]
        (sentence i is ``ids[offsets[i]:offsets[i + 1]]``), or one sentence. Returns
        float64[k] (float32 sums, as ``score``)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        offsets = np.array([0, len(ids)]) if offsets is None else np.ascontiguousarray(offsets, dtype=np.int64)
        if ids.ndim != 1 or offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(ids) \
                or (np.diff(offsets) < 0).any():
            raise ValueError("score_ids: ids must be 1-D and offsets run from 0 to len(ids), non-decreasing")
        return K.score_sentences(self._D, self._V, self._S, self.order, ids, offsets, bool(bos), self._missing,
                                 self._EMPTY_F, self._EMPTY_I).astype(np.float64)

    def score_batch(self, sentences, bos: bool = True, eos: bool = True) -> np.ndarray:
        """KenLM's ``score`` of every sentence of ``sentences`` (an iterable of strings)
        in one call: float64[k]."""
        sentences = [s if s.__class__ is str else _as_str(s) for s in sentences]
        text = "\n".join(sentences)
        if text.count("\n") == max(len(sentences) - 1, 0):  # no line end inside a sentence
            try:
                sums = np.empty(len(sentences))
                K.score_lines(self._D, self._V, self._S, self.order, self._W, self._blob, text.encode(), bool(bos),
                              bool(eos), self._missing, sums)
                return sums
            except UnicodeEncodeError:
                pass
        to_id = self._to_id
        ids, offsets = [], [0]
        for s in sentences:
            ids.extend(map(to_id, split_words(_as_str(s))))
            if eos:
                ids.append(EOS_ID)
            offsets.append(len(ids))
        return self.score_ids(np.array(ids, dtype=np.int64), np.array(offsets, dtype=np.int64), bos)

    # ------------------------------------------------------------ SRILM's statistics
    def query(self, corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
        """(log10 p float64[n_pos], n-gram length int64[n_pos]) at every predicted
        position of ``corpus`` by SRILM's rule (as :meth:`suffixlm.arpa.BackoffLM.query`)."""
        from .arpa import _sentence_starts, predicted_positions

        return K.srilm_query(self._D, self._V, self._S, self.order, self._model_tokens(corpus),
                             _sentence_starts(corpus), predicted_positions(corpus))

    def log10_probs(self, corpus: Corpus) -> np.ndarray:
        return self.query(corpus)[0]

    def _model_tokens(self, corpus: Corpus) -> np.ndarray:
        if not isinstance(corpus, Corpus):
            raise TypeError(f"expected a Corpus, got {type(corpus).__name__}")
        corpus.check()
        if corpus.vocab is self.vocab or corpus.vocab.words == self.vocab.words:
            return corpus.tokens.astype(np.int64)
        mapping = np.array([self.vocab.id(w) for w in corpus.vocab.words], dtype=np.int64)
        mapping[0], mapping[1], mapping[UNK_ID] = 0, 1, UNK_ID
        return mapping[corpus.tokens]

    # ------------------------------------------------------------ distributions
    def _states(self, states) -> np.ndarray:
        if isinstance(states, State):
            states = [states]
        return np.array([self._record(s.words if isinstance(s, State) else s) for s in states], dtype=np.int64)

    def distributions(self, states) -> np.ndarray:
        """``distribution`` of many states at once: float32[len(states), V]."""
        recs = self._states(states)
        out = np.empty((len(recs), self._V), dtype=np.float32)
        K.distributions(self._D, self._V, self._S, self.order, recs, self._missing, out)
        return out


def open_binary(path) -> BinaryLM:
    """:class:`BinaryLM` of ``path``; ``OSError`` if it cannot be read,
    ``BinaryFormatError`` if it is not a valid binary model."""
    return BinaryLM(path)


def to_binary(model, path, sources=()) -> dict:
    """Write any back-off or log-linear model (in memory) as a binary model."""
    if hasattr(model, "weights_"):
        from .export import loglinear_to_backoff

        model = loglinear_to_backoff(model)
    elif not hasattr(model, "ngrams"):
        raise TypeError(f"cannot write a {type(model).__name__} as a binary back-off model")
    return write_binary(model, path, sources)


