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

A quantised model (``build-binary --quantize BITS``, KenLM's ``-q``; format version 2, its
header's ``quantization`` giving the bits) has a table of 8-byte records instead, with
its codebooks and the unigrams' exact values after the directory (uint64, ``_records``;
:mod:`suffixlm.backoff.quantize`): about half the bytes, each value replaced by its
bin's centre.

A table up to 64 MB is read into memory at open (milliseconds; the first queries then
pay no page faults), a larger one is only mapped, its pages read as queries touch them
(``load=``: "auto", "lazy", "read"). Opening checks everything
the query kernels rely on that is cheap to check: the magic, the header's CRC and every
field, the file's size, the sections' bounds and alignment, the vocabulary (CRC, words,
size), the table's size against the header and the directory of its regions. The
table's CRC is checked by :meth:`BinaryLM.verify` (``suffixlm build-binary --verify
FILE``). The kernels bound every loop and check every record number they read, so a
table damaged in a way the CRC would catch gives wrong numbers, never a crash or a hang.
"""

from __future__ import annotations

import json
import math
import os
import sys
import zlib

import numpy as np

from ..corpus import UNK_ID, Corpus, Vocabulary
from ..query import UNKNOWN_MISSING_LOG10
from . import _table_numpy as T
from . import table
from .table import TableQueries, build_table

MAGIC = b"suffixlm binary\n"
VERSION = 1
#: the version of a quantised model (its table's layout is another: ``_records``)
QUANTISED_VERSION = 2
FORMAT = "suffixlm-backoff-binary"
ALIGN = 64
MAX_HEADER = 1 << 20
MAX_ORDER = 255
#: how ``BinaryLM`` loads the table: "lazy" maps the file (pages read as queries touch
#: them), "read" copies it into memory, "auto" reads tables up to AUTO_READ_BYTES (KenLM
#: also reads or populates its mapping by default): the first queries then pay no page
#: faults, while a large model still opens in milliseconds (steady-state queries run at
#: the same speed either way, benchmarks/query.md)
LOAD_METHODS = ("auto", "lazy", "read")
AUTO_READ_BYTES = 64 << 20
_PREAMBLE = 24


class BinaryFormatError(ValueError):
    """A file that is not a valid binary model (truncated, damaged, another format)."""


# ---------------------------------------------------------------------------- writing
def _pad(n: int) -> int:
    return (n + ALIGN - 1) // ALIGN * ALIGN


def binary_bytes_header(lm, D: np.ndarray, S: int, vocab_blob: bytes,
                        quantization: dict | None = None) -> tuple[bytes, int, int, int]:
    """(preamble + header + padding, vocabulary offset, table offset, file size)."""
    V = len(lm.vocab)
    sections = {}
    header = {
        "format": FORMAT, "version": VERSION if quantization is None else QUANTISED_VERSION,
        "byteorder": "little", "order": int(lm.order),
        "vocab_size": V, "has_unk": bool(lm.vocab.has_unk), "table_slots": int(S),
        "counts": [int(c) for c in lm.counts], "missing_log10": UNKNOWN_MISSING_LOG10,
        "sections": sections,
    }
    if quantization is not None:
        header["quantization"] = dict(quantization)
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


def write_binary(lm, path, sources=(), quantize: int | None = None, backoff_bits: int | None = None) -> dict:
    """Write the back-off model ``lm`` (a :class:`suffixlm.backoff.arpa.BackoffLM`) as a binary
    model at ``path``, atomically (``io.atomic_write``; never over one of ``sources``);
    ``quantize``: the bits of each log10 p (and, unless ``backoff_bits``, of each back-off
    weight) of a quantised model (:mod:`suffixlm.backoff.quantize`). Returns the header
    (sizes) written."""
    from ..io import atomic_write

    if sys.byteorder != "little":
        raise OSError("the binary model format is little-endian; this machine is not")
    if getattr(lm, "restricted", False):
        raise ValueError("this model holds only the n-grams of one text (read with only_for); not writing it")
    if lm.order > MAX_ORDER:  # what read_header accepts
        raise ValueError(f"order {lm.order}: the binary format holds models of order {MAX_ORDER} at most")
    if quantize is None and backoff_bits is not None:
        raise ValueError("backoff_bits without quantize: give the bits of the probabilities too")
    D, S = build_table(lm)
    quantization = None
    if quantize is not None:
        from .quantize import quantize_table

        backoff_bits = quantize if backoff_bits is None else backoff_bits
        D = quantize_table(D, len(lm.vocab), S, lm.order, quantize, backoff_bits)
        quantization = {"prob_bits": int(quantize), "backoff_bits": int(backoff_bits)}
    blob = ("\n".join(lm.vocab.words) + "\n").encode("utf-8")
    head, v_off, t_off, size = binary_bytes_header(lm, D, S, blob, quantization)
    with atomic_write(path, inputs=tuple(sources) or getattr(lm, "sources", ())) as fh:
        fh.write(head)
        fh.write(blob)
        fh.write(b"\0" * (t_off - v_off - len(blob)))
        fh.write(memoryview(D).cast("B"))
    return {"file_size": size, "table_slots": S, "records": len(lm.vocab) + S, "counts": list(lm.counts),
            "quantization": quantization}


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
    if h.get("version") not in (VERSION, QUANTISED_VERSION):
        _fail(path, f"binary model version {h.get('version')!r}; this suffixlm reads versions {VERSION} and "
                    f"{QUANTISED_VERSION}")
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
    quantised = h["version"] == QUANTISED_VERSION
    q = h.get("quantization")
    if quantised != (q is not None) or (quantised and not (
            isinstance(q, dict) and set(q) == {"prob_bits", "backoff_bits"}
            and all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 8 for b in q.values()))):
        _fail(path, f"damaged binary model (header field quantization={q!r})")
    if (V + S) * V >= 2 ** (T.QKEY_BITS if quantised else T.KEY_BITS):
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
    table_bytes = 8 * T.quantised_words(V, S, order) if quantised else 16 * (V + S + order + 1)
    for name, nbytes in (("vocab", None), ("table", table_bytes)):
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


class BinaryLM(TableQueries):
    """A binary back-off model, memory-mapped (:mod:`suffixlm.backoff.binary`), with KenLM's
    query API (:mod:`suffixlm.query`), SRILM's statistics (``score_file``,
    ``log10_probs``), batched scoring and the next-word distribution.

    A :class:`suffixlm.query.State` of this model holds the number of the record of the
    context it keeps (KenLM keeps the same words); states compare equal exactly when
    they predict alike.
    """

    def __init__(self, path, load: str = "auto"):
        if load not in LOAD_METHODS:
            raise ValueError(f"load must be one of {', '.join(LOAD_METHODS)}, got {load!r}")
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
        q = h.get("quantization")
        #: (bits of each log10 p, bits of each back-off weight) of a quantised model, else None
        self.quantization = None if q is None else (q["prob_bits"], q["backoff_bits"])
        n_words, dtype = ((T.quantised_words(V, S, self.order), np.uint64) if q is not None
                          else (2 * (V + S + self.order + 1), np.int64))
        self.load = "read" if load == "read" or (load == "auto" and t_n <= AUTO_READ_BYTES) else "lazy"
        if self.load == "lazy":
            # a plain ndarray view of the mapping: numba types an exact ndarray fast (a
            # memmap subclass goes through its slow generic path on every call)
            D = np.asarray(np.memmap(self.path, dtype=dtype, mode="r", offset=t_off, shape=(n_words,)))
        else:
            D = np.empty(n_words, dtype=dtype)
            with open(self.path, "rb") as f:
                f.seek(t_off)
                if f.readinto(memoryview(D).cast("B")) != t_n:
                    _fail(self.path, "truncated binary model (table)")
            D.flags.writeable = False
        at = T.directory_at(D, V, S)
        directory = D[at:at + 2 * (self.order + 1)].view(np.int64).reshape(-1, 2)[2:]
        end = 0
        for B, n in directory.tolist():  # the regions, in order, inside the table (the kernels check them too)
            if B != end or n < 0 or B + n > S:
                _fail(self.path, "damaged binary model (table directory)")
            end = B + n
        if end != S:
            _fail(self.path, "damaged binary model (table directory)")
        self.sources = (self.path,)
        self._attach_table(D, S, self._missing)

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
        q = "" if self.quantization is None else ", quantised to %d/%d bits" % self.quantization
        return f"<suffixlm.backoff.binary.BinaryLM from {self.path!r}: order {self.order}, {len(self.vocab)} words{q}>"

    # ------------------------------------------------------------ SRILM's statistics
    def query(self, corpus: Corpus) -> tuple[np.ndarray, np.ndarray]:
        """(log10 p float64[n_pos], n-gram length int64[n_pos]) at every predicted
        position of ``corpus`` by SRILM's rule (as :meth:`suffixlm.backoff.arpa.BackoffLM.query`)."""
        from ..corpus import predicted_positions, sentence_starts

        args = (self._D, self._V, self._S, self.order, self._model_tokens(corpus), sentence_starts(corpus),
                predicted_positions(corpus))
        if table.numpy_tier(args[4].shape[0]):
            with table.numpy_time():
                return T.srilm_query(*args)
        return table.kernels().srilm_query(*args)

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

def to_binary(model, path, sources=(), quantize: int | None = None, backoff_bits: int | None = None) -> dict:
    """Write any back-off or log-linear model (in memory) as a binary model (quantised:
    ``write_binary``)."""
    if hasattr(model, "weights_"):
        from ..export import loglinear_to_backoff

        model = loglinear_to_backoff(model)
    elif not hasattr(model, "ngrams"):
        raise TypeError(f"cannot write a {type(model).__name__} as a binary back-off model")
    return write_binary(model, path, sources, quantize, backoff_bits)


