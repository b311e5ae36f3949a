"""Back-off n-gram models in the ARPA format: read (SRILM, KenLM, gzip), write, query.

A ``BackoffLM`` holds, for each order n, the explicit n-grams as rows of word ids
(``int32``) with their log10 probabilities and back-off weights (``float32``, as SRILM
keeps them), plus SRILM's back-off index built on first use (``BackoffLM.index``,
:mod:`suffixlm.backoff.index`) and KenLM's probing table, built on the first KenLM-style
query (:mod:`suffixlm.backoff.table`).

Files are parsed by a numba kernel (numbers, words through a byte-string hash
table); errors name the file and line. Numbers are decimals
(``[+-]digits[.digits][e[+-]digits]``, every section alike); a probability may also
be ``-inf`` (probability zero, as SRILM and KenLM read it; ``-99`` is kept as the
number -99). Refused where they are read: ``nan``, ``inf``, a log10 probability above
0 (as KenLM refuses it; SRILM warns) and a back-off weight that is not finite in
single precision (as KenLM refuses it). ``log10_probs(corpus)`` scores every predicted
position (all tokens but ``<s>``) by the ARPA back-off rule, walking contexts like SRILM's ``Ngram::wordProbBO`` with the same
single-precision sums, so scoring an SRILM ARPA file reproduces ``ngram -ppl``.
"""

from __future__ import annotations

import io
import re
from pathlib import Path

import numpy as np

from ..corpus import BOS, EOS, UNK, UNK_ID, Corpus, Vocabulary, predicted_positions, sentence_starts
from ..io import BOM, InputError, atomic_write, input_name, open_error_message, open_input, read_text_bytes
from ..ngrams import count_ngrams
from .table import TableQueries, build_table

LOG_ZERO = -99.0  # how ARPA files write log10(0)
COMPUTED_LOG10_TOLERANCE = 1e-6  # a model built in memory may round log10 1 up by this (evaluate's tolerance)
_NUMBER = re.compile(rb"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")  # parse_float's grammar


class ArpaError(InputError):
    """Malformed ARPA file; the message names the file and line."""


class BackoffLM(TableQueries):
    """A back-off n-gram model (the content of an ARPA file), ready to score text, with
    KenLM's query API (:mod:`suffixlm.query`).

    Parameters
    ----------
    vocab : Vocabulary        the model's words (ids index the rows below)
    ngrams : list of (rows int32[m_n, n], logprob float32[m_n], bow float32[m_n],
             has_bow bool[m_n]) for n = 1..order

    ``sources``: the files the model was read or estimated from; ``write_arpa``
    refuses to overwrite them.
    """

    def __init__(self, vocab: Vocabulary, ngrams: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]]):
        if not isinstance(vocab, Vocabulary):
            raise TypeError(f"vocab must be a Vocabulary, got {type(vocab).__name__}")
        if len(ngrams) == 0:
            raise ValueError("a back-off model needs its 1-grams at least")
        self.vocab = vocab
        self.order = len(ngrams)
        self.ngrams = [_checked_order(n, entry, len(vocab)) for n, entry in enumerate(ngrams, start=1)]
        self._index = None
        self.restricted = False
        #: the last unigram rows are specials the file did not list (log 0): not written
        self.implicit_unigrams = 0
        self.sources: tuple[str, ...] = ()

    # ------------------------------------------------------------ summary
    @property
    def counts(self) -> list[int]:
        """Number of explicit n-grams of each order (the ARPA header)."""
        counts = [len(p) for _, p, _, _ in self.ngrams]
        counts[0] -= self.implicit_unigrams
        return counts

    @property
    def n_parameters(self) -> int:
        """Probabilities plus back-off weights stored."""
        return int(sum(self.counts) + sum(int(h.sum()) for _, _, _, h in self.ngrams))

    # ------------------------------------------------------------ index
    @property
    def index(self):
        """SRILM's back-off index of this model (:class:`suffixlm.backoff.index.BackoffIndex`),
        built on first use: what ``query``, pruning, mixing and the KN base measure walk."""
        if self._index is None:
            from .index import BackoffIndex

            self._index = BackoffIndex(self)
        return self._index

    def _model_tokens(self, corpus: Corpus) -> np.ndarray:
        if not isinstance(corpus, Corpus):
            raise TypeError(f"expected a Corpus, got {type(corpus).__name__}")
        corpus.check()  # the query kernel indexes by the word ids and offsets
        if corpus.vocab is self.vocab or corpus.vocab.words == self.vocab.words:
            return corpus.tokens.astype(np.int64)
        mapping = np.array([self.vocab.id(w) for w in corpus.vocab.words], dtype=np.int64)
        mapping[0] = 0
        mapping[1] = 1
        mapping[UNK_ID] = UNK_ID
        return mapping[corpus.tokens]

    def query(self, corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
        """(log10 p float64[n_pos], n-gram length used int64[n_pos]) at every predicted
        position of ``corpus`` (all tokens but ``<s>``, in order); -inf for probability 0."""
        return self.index.query(self._model_tokens(corpus), sentence_starts(corpus), predicted_positions(corpus))

    def log10_probs(self, corpus: Corpus) -> np.ndarray:
        """float64[n_pos]: log10 p(w | context) at every predicted position (the scoring protocol)."""
        return self.query(corpus)[0]

    def _make_table(self):
        """The probing table KenLM's queries run on (:mod:`suffixlm.backoff.table`), built on the
        first query."""
        return build_table(self)

    # ------------------------------------------------------------ output
    def write_arpa(self, path: str | Path) -> None:
        """Write the model as an ARPA file (SRILM layout, ``%.7g`` numbers, -99 for
        log 0); a name ending in ``.gz`` compresses. Written atomically
        (``io.atomic_write``); ``SameFileError`` if ``path`` is one of ``sources``."""
        with atomic_write(path, inputs=self.sources) as fh:
            self._write(fh)

    def arpa_bytes(self) -> bytes:
        """The ARPA file as bytes."""
        out = io.BytesIO()
        self._write(out)
        return out.getvalue()

    def _write(self, out) -> None:
        if self.restricted:
            raise ValueError("this model holds only the n-grams of one text (read with only_for); not writing it")
        sections = []
        for n, (rows, lp, bow, hb) in enumerate(self.ngrams, start=1):
            if n == 1 and self.implicit_unigrams:
                keep = len(rows) - self.implicit_unigrams
                rows, lp, bow, hb = rows[:keep], lp[:keep], bow[:keep], hb[:keep]
            sections.append([(rows, lp, bow, hb)])
        write_arpa_sections(out, self.vocab.words, self.counts, sections)

    # ------------------------------------------------------------ input
    @classmethod
    def read_arpa(cls, path: str | Path, only_for=None) -> "BackoffLM":
        """Read an ARPA file (plain or gzip, SRILM or KenLM). ``<unk>`` among the
        unigrams makes the vocabulary open (test words outside it are scored as
        ``<unk>``, SRILM's ``-unk``). Raises ``ArpaError`` naming the line on bad input.

        only_for : optional list of sentences (lists of words). Then only the n-grams
        occurring in them are kept (all unigrams are): exactly the entries the back-off
        walk can touch when scoring them, so their scores are unchanged while memory
        and indexing time shrink to the size of that text. Such a model is marked
        ``restricted`` and cannot be written out."""
        try:
            with open_input(path, error=ArpaError) as fh:
                data = read_text_bytes(fh, input_name(path), ArpaError)
        except OSError as e:
            raise ArpaError(open_error_message(path, e)) from None
        lm = cls.from_arpa_bytes(data, input_name(path), only_for)
        lm.sources = (str(path),)
        return lm

    @classmethod
    def from_arpa_bytes(cls, data: bytes, name: str = "<arpa>", only_for=None) -> "BackoffLM":
        from . import _arpa_read_kernels as K

        def lineno(pos: int) -> int:
            return data.count(b"\n", 0, pos) + 1

        def fail(pos: int, msg: str):
            raise ArpaError(f"{name}:{lineno(pos)}: {msg}")

        # lines starting with a backslash delimit the sections
        marks = []
        p = 0 if data.startswith(b"\\") else data.find(b"\n\\")
        while p >= 0:
            if data[p] == 10:
                p += 1
            e = data.find(b"\n", p)
            e = len(data) if e < 0 else e
            marks.append((p, data[p:e].strip()))
            p = data.find(b"\n\\", e)
        i_data = next((i for i, (_, t) in enumerate(marks) if t == b"\\data\\"), None)
        if i_data is None:
            raise ArpaError(f"{name}: not an ARPA file (no \\data\\ line)")
        marks = marks[i_data:]
        # header: "ngram N=count" lines
        hdr_start = data.find(b"\n", marks[0][0])
        hdr_start = len(data) if hdr_start < 0 else hdr_start + 1
        hdr_end = marks[1][0] if len(marks) > 1 else len(data)
        expected: dict[int, int] = {}
        pos = hdr_start
        for raw in data[hdr_start:hdr_end].split(b"\n"):
            s = raw.strip()
            if s:
                m = re.fullmatch(rb"ngram\s+(\d+)\s*=\s*(\d+)", s)
                if not m:
                    fail(pos, f"expected 'ngram N=count' in the \\data\\ header, got {s[:60].decode('utf-8', 'replace')!r}")
                n, c = int(m.group(1)), int(m.group(2))
                if n != len(expected) + 1:
                    after = f"after order {len(expected)}" if expected else "first"
                    fail(pos, f"header lists order {n} {after}; the orders must be listed 1, 2, 3, ... in turn")
                expected[n] = c
            pos += len(raw) + 1
        if not expected:
            fail(marks[0][0], "empty \\data\\ header (no 'ngram N=count' lines)")
        order = len(expected)
        # sections
        sections: dict[int, tuple[int, int, int]] = {}  # n -> (header pos, body start, body end)
        saw_end = False
        for j, (p, t) in enumerate(marks[1:], start=1):
            m = re.fullmatch(rb"\\(\d+)-grams:", t)
            if m:
                n = int(m.group(1))
                if n != len(sections) + 1 or n > order:
                    fail(p, f"unexpected section {t.decode()} (expected \\{len(sections) + 1}-grams: "
                            f"or \\end\\; header announces order {order})")
                body = data.find(b"\n", p)
                body = len(data) if body < 0 else body + 1
                end = marks[j + 1][0] if j + 1 < len(marks) else len(data)
                # every n-gram line takes at least 2n + 2 bytes ("0\ta b\n"): a header
                # count the section cannot hold is refused before anything is allocated
                if n in expected and expected[n] > (end - body) // (2 * n + 2) + 1:
                    fail(p, f"header says ngram {n}={expected[n]}, more than the {end - body} bytes of the "
                            f"section can hold")
                sections[n] = (p, body, end)
            elif t == b"\\end\\":
                saw_end = True
                break
            else:
                fail(p, f"unexpected line {t[:60].decode('utf-8', 'replace')!r}")
        if len(sections) < order:
            missing = len(sections) + 1
            fail(len(data), f"file ends before the \\{missing}-grams: section (truncated?)")
        if not saw_end:
            fail(len(data), "file ends without \\end\\ (truncated?)")

        # unigrams in Python (they define the vocabulary)
        p1, b1, e1 = sections[1]
        words: list[str] = []
        uni_lp: list[float] = []
        uni_bow: list[float] = []
        uni_hb: list[bool] = []
        pos = b1
        for raw in data[b1:e1].split(b"\n"):
            toks = raw.split()
            if toks:
                if len(words) >= expected[1]:
                    fail(pos, f"more 1-grams than the header's ngram 1={expected[1]}")
                if len(toks) not in (2, 3):
                    fail(pos, f"expected 'prob word [bow]', got {len(toks)} fields")
                prob = _number(toks[0], probability=True)
                bw = _number(toks[2], probability=False) if len(toks) == 3 else 0.0
                if prob is None or bw is None:
                    fail(pos, f"not a number: {raw.strip()[:60].decode('utf-8', 'replace')!r}")
                with np.errstate(over="ignore"):
                    if not prob <= 0.0:
                        fail(pos, _bad_prob(raw))
                    if not np.isfinite(np.float32(bw)):
                        fail(pos, _bad_bow(raw))
                try:
                    words.append(toks[1].decode("utf-8"))
                except UnicodeDecodeError:
                    fail(pos, "invalid UTF-8")
                uni_lp.append(prob)
                uni_bow.append(bw)
                uni_hb.append(len(toks) == 3)
            pos += len(raw) + 1
        if len(words) != expected[1]:
            fail(e1, f"header says ngram 1={expected[1]} but the section has {len(words)} entries")
        index = {}
        for i, w in enumerate(words):
            if w in index:
                fail(b1, f"unigram {w!r} listed twice")
            index[w] = i
        vocab_words = [BOS, EOS, UNK] + [w for w in words if w not in (BOS, EOS, UNK)]
        vocab = Vocabulary(vocab_words, has_unk=UNK in index)
        vid = np.array([vocab.index[w] for w in words], dtype=np.int64)
        # absent specials: <s> as context only (log 0), </s> and <unk> get log 0
        extra = [w for w in (BOS, EOS, UNK) if w not in index]
        rows1 = np.concatenate([vid, np.array([vocab.index[w] for w in extra], dtype=np.int64)])
        with np.errstate(over="ignore"):  # a probability below float32's range is log 0
            lp1 = np.array(uni_lp + [-np.inf] * len(extra), dtype=np.float32)
            bow1 = np.array(uni_bow + [0.0] * len(extra), dtype=np.float32)
        hb1 = np.array(uni_hb + [False] * len(extra), dtype=bool)
        ngrams = [(rows1.reshape(-1, 1), lp1, bow1, hb1)]

        enc = [w.encode("utf-8") for w in vocab.words]
        word_offsets = np.zeros(len(enc) + 1, dtype=np.int64)
        np.cumsum([len(b) for b in enc], out=word_offsets[1:])
        word_bytes = np.frombuffer(b"".join(enc), dtype=np.uint8)
        table = K.build_word_table(word_bytes, word_offsets)
        buf = np.frombuffer(data, dtype=np.uint8)
        keep = _occurring_in(only_for, vocab, order) if only_for is not None else None
        for n in range(2, order + 1):
            p, b, e = sections[n]
            rows, lp, bow, hb, count, err, line, slow_key, slow_start, slow_end = K.parse_ngram_section(
                buf, b, e, n, expected[n], table, word_bytes, word_offsets)
            # the rare numbers the kernel cannot round exactly: Python's float() does
            with np.errstate(over="ignore"):
                for key, start, end in zip(slow_key.tolist(), slow_start.tolist(), slow_end.tolist()):
                    (bow if key % 2 else lp)[key // 2] = np.float32(float(data[start:end]))
            if err != K.ERR_NONE:
                err_pos = b
                for _ in range(line):
                    err_pos = data.index(b"\n", err_pos) + 1
                text = data[err_pos:data.find(b"\n", err_pos)].strip()[:80].decode("utf-8", "replace")
                msg = {
                    K.ERR_FIELDS: f"expected 'prob w1 .. w{n} [bow]' ({n + 1} or {n + 2} fields)",
                    K.ERR_PROB: "probability is not a number",
                    K.ERR_BOW: "back-off weight is not a number",
                    K.ERR_WORD: "word not among the 1-grams",
                    K.ERR_TOO_MANY: f"more {n}-grams than the header's ngram {n}={expected[n]}",
                }[int(err)]
                fail(err_pos, f"{msg}: {text!r}")
            if count != expected[n]:
                fail(e, f"header says ngram {n}={expected[n]} but the section has {count} entries")
            bad = ~(lp <= 0.0) | (hb & ~np.isfinite(bow))
            if bad.any():
                k = int(np.flatnonzero(bad)[0])
                at = _entry_position(data, b, e, k)
                line = data[at:data.find(b"\n", at) if data.find(b"\n", at) >= 0 else len(data)]
                fail(at, _bad_prob(line) if not lp[k] <= 0.0 else _bad_bow(line))
            dup = first_repeated_row(rows)
            if dup >= 0:
                at = _entry_position(data, b, e, dup)
                fail(at, f"the {n}-gram {' '.join(vocab.words[w] for w in rows[dup])!r} is listed twice")
            if keep is not None:
                m = keep(rows)
                rows, lp, bow, hb = rows[m], lp[m], bow[m], hb[m]
            ngrams.append((rows, lp, bow, hb))
        lm = cls(vocab, ngrams)
        lm.restricted = keep is not None
        lm.implicit_unigrams = len(extra)
        return lm


def first_repeated_row(rows: np.ndarray) -> int:
    """Index of a row of ``rows`` (int[m, n]) equal to an earlier one, or -1: rows are
    hashed to 64 bits and sorted, and only rows with equal hashes are compared."""
    m = rows.shape[0]
    if m < 2:
        return -1
    h = np.zeros(m, dtype=np.uint64)
    with np.errstate(over="ignore"):
        for k in range(rows.shape[1]):
            h = (h ^ rows[:, k].astype(np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
            h ^= h >> np.uint64(29)
    order = np.argsort(h, kind="stable")
    hs = h[order]
    for i in np.flatnonzero(hs[1:] == hs[:-1]).tolist():
        # row b against the earlier rows of its run of equal hashes
        b = int(order[i + 1])
        j = i
        while j >= 0 and hs[j] == hs[i + 1]:
            if np.array_equal(rows[order[j]], rows[b]):
                return max(int(order[j]), b)
            j -= 1
    return -1


def _checked_order(n: int, entry, V: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The n-grams of order ``n`` given to ``BackoffLM``, converted (rows int32[m, n]
    C-contiguous, float32 values, bool flags) after checking what the query kernels rely
    on: integer word ids within the vocabulary, one value of each kind per row, no NaN,
    no log10 probability above ``COMPUTED_LOG10_TOLERANCE``. ``TypeError`` / ``ValueError``."""
    try:
        rows, lp, bow, has_bow = entry
    except (TypeError, ValueError):
        raise TypeError(f"ngrams[{n - 1}] must be (rows, logprob, bow, has_bow)") from None
    rows, lp, bow, has_bow = (np.asarray(x) for x in (rows, lp, bow, has_bow))
    if rows.size and rows.dtype.kind not in "iu":
        raise TypeError(f"order {n}: word ids must be integers, got dtype {rows.dtype}")
    if rows.size == 0:
        rows = rows.reshape(0, n)
    if rows.ndim != 2 or rows.shape[1] != n:
        raise ValueError(f"order {n}: rows must have shape (m, {n}), got {rows.shape}")
    m = rows.shape[0]
    if m and (int(rows.min()) < 0 or int(rows.max()) >= V):
        raise ValueError(f"order {n}: a word id is outside the vocabulary of {V} words")
    for name, x, kinds in (("logprob", lp, "fiu"), ("bow", bow, "fiu"), ("has_bow", has_bow, "biu")):
        if x.shape != (m,):
            raise ValueError(f"order {n}: {name} must have shape ({m},), got {x.shape}")
        if m and x.dtype.kind not in kinds:
            raise TypeError(f"order {n}: {name} has dtype {x.dtype}")
    with np.errstate(over="ignore"):  # no copy of arrays that are float32 already
        lp, bow = np.asarray(lp, dtype=np.float32), np.asarray(bow, dtype=np.float32)
    has_bow = np.asarray(has_bow, dtype=bool)
    if np.isnan(lp).any() or np.isnan(bow[has_bow]).any():
        raise ValueError(f"order {n}: NaN among the log10 probabilities or back-off weights")
    if (lp > COMPUTED_LOG10_TOLERANCE).any():
        raise ValueError(f"order {n}: a log10 probability is above 0")
    return np.ascontiguousarray(rows, dtype=np.int32), lp, bow, has_bow


def _number(tok: bytes, probability: bool) -> float | None:
    """A number of the 1-gram section, read as the kernel reads the others: a decimal in
    ``parse_float``'s grammar, or (probabilities only) ``-inf``; else None."""
    if _NUMBER.fullmatch(tok):
        return float(tok)
    if probability and tok.lower() in (b"-inf", b"-infinity"):
        return -np.inf
    return None


def _bad_prob(line: bytes) -> str:
    return (f"probability above 0 (a log10 probability; write -99 or -inf for zero): "
            f"{line.strip()[:80].decode('utf-8', 'replace')!r}")


def _bad_bow(line: bytes) -> str:
    return (f"back-off weight is not a finite single-precision number (write -99 for zero): "
            f"{line.strip()[:80].decode('utf-8', 'replace')!r}")


def _entry_position(data: bytes, start: int, end: int, k: int) -> int:
    """Byte position of the k-th (0-based) n-gram line of the section data[start:end]
    (lines of spaces, tabs and carriage returns only are blank, as for the kernel)."""
    pos = start
    seen = -1
    while pos < end:
        e = data.find(b"\n", pos, end)
        e = end if e < 0 else e
        if data[pos:e].strip(b" \t\r"):
            seen += 1
            if seen == k:
                return pos
        pos = e + 1
    return end


def _occurring_in(sentences, vocab: Vocabulary, order: int):
    """Function rows int32[m, n] -> bool[m]: which n-grams occur in ``sentences``
    (encoded with ``vocab``, <s> and </s> added)."""
    corpus = Corpus.from_sentences(sentences, vocab)
    c = count_ngrams(corpus, order)
    V = len(vocab)
    keys = [None] + [c.prefix[n - 1].astype(np.int64) * V + c.word[n - 1] for n in range(2, order + 1)]

    def keep(rows: np.ndarray) -> np.ndarray:
        ids = rows[:, 0].astype(np.int64)
        ok = np.ones(len(rows), dtype=bool)
        for j in range(1, rows.shape[1]):
            k = keys[j]
            if len(k) == 0:
                return np.zeros(len(rows), dtype=bool)
            q = ids * V + rows[:, j]
            pos = np.minimum(np.searchsorted(k, q), len(k) - 1)
            ok &= k[pos] == q
            ids = np.where(ok, pos, -1)  # -1 never matches: keys are >= 0
        return ok

    return keep


def row_index(table: np.ndarray, rows: np.ndarray, missing: int | None = None) -> np.ndarray:
    """int64[k]: the index in ``table`` (int rows[m, n], each row once, any order) of
    every row of ``rows`` (k, n). A row not in ``table`` gets ``missing``; None (the
    default): RuntimeError, for callers that look up n-grams that must be there."""
    dt = np.dtype((np.void, table.dtype.itemsize * table.shape[1]))
    t = np.ascontiguousarray(table).view(dt).ravel()
    r = np.ascontiguousarray(rows.astype(table.dtype)).view(dt).ravel()
    order = np.argsort(t)
    pos = np.minimum(np.searchsorted(t[order], r), max(len(t) - 1, 0))
    idx = (order[pos] if len(t) else np.zeros(len(r), dtype=np.int64)).astype(np.int64)
    if len(r) and (not len(t) or not np.array_equal(table[idx], rows)):
        if missing is None:
            raise RuntimeError("internal error: a context is not among the model's n-grams")
        absent = np.ones(len(r), dtype=bool) if not len(t) else np.any(table[idx] != rows, axis=1)
        idx[absent] = missing
    return idx


def _fmt(x: float) -> str:
    x = float(x)
    if x == -np.inf:
        return "-99"
    return "%.7g" % x


def read_arpa(path: str | Path, only_for=None) -> BackoffLM:
    """Shorthand for ``BackoffLM.read_arpa``."""
    return BackoffLM.read_arpa(path, only_for)


def is_arpa_file(path: str | Path) -> bool:
    """True when the file (plain or gzip) starts, after blank lines, with ``\\data\\``.
    False for ``-``: looking would consume stdin."""
    if str(path) == "-":
        return False
    try:
        with open_input(path) as fh:
            for k in range(100):
                line = fh.readline(1 << 12)  # bounded: a binary file may hold no line end
                if not line:
                    return False
                for part in (line.removeprefix(BOM) if k == 0 else line).split(b"\r"):  # lone \r ends a line
                    if part.strip():
                        return part.strip() == b"\\data\\"
    except (OSError, InputError):
        return False
    return False


def _format_lines(r, p, b, h, words, word_bytes, word_offsets, word_len) -> list:
    """The ARPA lines of one chunk of n-grams, as byte blocks (``write_ngram_lines``, which
    leaves the rare value it cannot format exactly to Python's ``%.7g``)."""
    from . import _arpa_write_kernels as K

    n = r.shape[1]
    # a computed log10 1 rounded up (within COMPUTED_LOG10_TOLERANCE) is written as 0:
    # readers (this one, KenLM) refuse a positive log10 probability
    p = np.where(p > 0, np.float32(0), p)
    buf = np.empty(int(word_len[r].sum()) + len(r) * (2 * 24 + n + 3) + 64, dtype=np.uint8)
    blocks = []
    start = 0
    at = 0
    while start < len(r):
        used, bad = K.write_ngram_lines(r[start:], p[start:], b[start:], h[start:], word_bytes, word_offsets,
                                        buf[at:])
        blocks.append(memoryview(buf[at:at + used]))
        at += used
        if bad < 0:
            break
        i = start + bad
        line = _fmt(p[i]) + "\t" + " ".join(words[w] for w in r[i])
        if h[i]:
            line += "\t" + _fmt(b[i])
        blocks.append(line.encode("utf-8") + b"\n")
        start = i + 1
    return blocks


def _format_piece(piece, tables) -> list:
    """``_format_lines`` of the n-grams the function ``piece`` lists."""
    return _format_lines(*piece(), *tables)


#: n-grams of an ARPA file below which its lines are formatted on one thread
PARALLEL_WRITE_MIN = 1 << 18


def write_arpa_sections(out, words: list[str], counts: list[int], sections, chunk: int = 1 << 16,
                        threads: int | None = None) -> None:
    """Write an ARPA file to the binary stream ``out``: the header for ``counts`` (n-grams
    per order), then for each order n the pieces ``sections[n-1]`` yields, in order: (rows
    int32[m, n] of word ids, log10 probabilities, back-off weights, has-back-off flags),
    or functions that return such a tuple, called on the formatting threads (a piece of
    a few ``chunk`` lines, formatted whole). Pieces may come one at a time (a model that
    is never whole in one process).

    Chunks of ``chunk`` lines are formatted on ``threads`` threads (default: numba's thread
    count; one for files under ``PARALLEL_WRITE_MIN`` n-grams) while this one writes them,
    in order: the same bytes whatever the thread count."""
    import collections

    if threads is None:
        import numba

        threads = numba.get_num_threads() if sum(counts) >= PARALLEL_WRITE_MIN else 1
    pool = None
    if threads > 1:
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(threads, thread_name_prefix="suffixlm-arpa")
    enc = [w.encode("utf-8") for w in words]
    word_offsets = np.zeros(len(enc) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in enc], out=word_offsets[1:])
    word_bytes = np.frombuffer(b"".join(enc) or b"\0", dtype=np.uint8)
    word_len = np.diff(word_offsets)
    tables = (words, word_bytes, word_offsets, word_len)
    pending: collections.deque = collections.deque()

    def flush(limit: int) -> None:
        while len(pending) > limit:
            for block in pending.popleft().result():
                out.write(block)

    try:
        out.write(b"\n\\data\\\n")
        for n, c in enumerate(counts, start=1):
            out.write(f"ngram {n}={c}\n".encode())
        for n, pieces in enumerate(sections, start=1):
            out.write(f"\n\\{n}-grams:\n".encode())
            for piece in pieces:
                if callable(piece):  # listed on the threads, formatted whole
                    if pool is None:
                        for block in _format_piece(piece, tables):
                            out.write(block)
                    else:
                        pending.append(pool.submit(_format_piece, piece, tables))
                        flush(2 * threads)
                    continue
                rows, lp, bow, hb = piece
                for a in range(0, len(rows), chunk):
                    args = (rows[a:a + chunk], lp[a:a + chunk], bow[a:a + chunk], hb[a:a + chunk], words,
                            word_bytes, word_offsets, word_len)
                    if pool is None:
                        for block in _format_lines(*args):
                            out.write(block)
                    else:
                        pending.append(pool.submit(_format_lines, *args))
                        flush(2 * threads)
            flush(0)
        out.write(b"\n\\end\\\n")
    finally:
        if pool is not None:
            pool.shutdown(wait=True, cancel_futures=True)
