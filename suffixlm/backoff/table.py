"""The probing table of a back-off model (``_binary_kernels``), built from its n-grams:
what the binary model file stores and what every back-off model answers KenLM's queries
from (:class:`TableQueries`)."""

from __future__ import annotations

import functools
import glob
import math
import sys
import time
from contextlib import contextmanager

import numpy as np

from . import _table_numpy as tnp
from ..corpus import BOS_ID, EOS_ID, UNK_ID, UnknownIsUnk
from ..io import split_words
from ..threads import spread
from .index import Int64Map
from ..query import (UNKNOWN_MISSING_LOG10, FullScoreReturn, KenLMInterface, State, as_str, checked_ids,
                     decoder_calls, joined_lines, line_chunks, sentence_chunks)

#: the hash table's largest load (records / slots): 16-byte records give about 20 bytes an n-gram
LOAD = 0.8

#: Batch queries (``score``, ``full_scores``, ``score_ids``, ``score_batch``, SRILM's
#: statistics) run in numpy (``_table_numpy``, the same bits) until the process has
#: spent STARTUP_S seconds there, or until numba is running in the process anyway; a
#: call of more than NUMPY_MAX_TOKENS words, where the compiled kernels' speed (about 5x
#: numpy's on a whole text) repays numba's start-up, goes compiled at once. Numba's
#: start-up (its import, target set-up and first cached kernels) costs about 0.45 s
#: here, so a short job (one ``suffixlm ppl``, a fresh process scoring a few hundred
#: sentences) never starts numba, and a long one pays at most 0.25 s more than if it had
#: started numba up front (a ski-rental rule: about 1.5x in the worst case, a per-line
#: loop stopping just after the switch). ``BaseScore`` (a decoder's millions of calls),
#: the distributions and state conversions are always compiled.
STARTUP_S = 0.25
NUMPY_MAX_TOKENS = 1_000_000
#: "auto" (the rule above), or "numpy" / "compiled" for every batch query of the process
TIER = "auto"
_KERNELS = __package__ + "._binary_kernels"
_numpy_seconds = 0.0


#: Walk a batch ``_binary_kernels.LANES`` sentences at a time (``_walk_lanes``): "auto" for a
#: table larger than the processor's last-level cache (``lanes_pay``), or True / False.
LANES = "auto"
#: The last-level cache assumed where the system does not say (bytes).
DEFAULT_CACHE_BYTES = 32 << 20


@functools.lru_cache(maxsize=1)
def last_level_cache_bytes() -> int:
    """The size of the processor's largest cache, as Linux lists it
    (``/sys/devices/system/cpu/cpu0/cache/index*/size``), else ``DEFAULT_CACHE_BYTES``."""
    best = 0
    for entry in glob.glob("/sys/devices/system/cpu/cpu0/cache/index*/size"):
        try:
            with open(entry) as f:
                text = f.read().strip().upper()
            scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
            best = max(best, int(text.rstrip("KMG")) * scale)
        except (OSError, ValueError):
            continue
    return best or DEFAULT_CACHE_BYTES


def lanes_pay(D: np.ndarray) -> bool:
    """Whether a batch walk over the table ``D`` takes its sentences ``LANES`` at a time:
    the lanes hide the cache misses of a table the caches do not hold (PTB test on one
    thread, measured here: 62 against 92-119 ns a word on the 46 MB log-linear KN5) and
    cost more than they hide on one they do (55 against 44 ns on the 8.5 MB
    default-cut-off KN5); the same numbers either way."""
    if LANES != "auto":
        return bool(LANES)
    return D.nbytes > last_level_cache_bytes()


def walk_sentences(D, V, S, order, ids, offsets, bos, missing, lp, n) -> np.ndarray:
    """``_binary_kernels.score_sentences`` of the batch, on numba's threads when it is
    large (``sentence_chunks``), ``LANES`` sentences at a time where that pays
    (``lanes_pay``)."""
    K = kernels()
    bounds = sentence_chunks(offsets, ids.shape[0])
    lanes = lanes_pay(D)
    if bounds is None:
        return K.score_sentences(D, V, S, order, ids, offsets, bos, missing, lp, n, lanes)
    with spread():
        return K.score_sentences_parallel(D, V, S, order, ids, offsets, bos, missing, lp, n, lanes, bounds)


def kernels():
    """The compiled kernels (importing them starts numba)."""
    from . import _binary_kernels

    return _binary_kernels


def numpy_tier(n_tokens: int) -> bool:
    """Whether a batch query of ``n_tokens`` words runs in numpy (see STARTUP_S)."""
    if TIER != "auto":
        return TIER == "numpy"
    return _numpy_seconds < STARTUP_S and n_tokens <= NUMPY_MAX_TOKENS and _KERNELS not in sys.modules


@contextmanager
def numpy_time():
    """Adds the time of the block to the process's time in numpy queries."""
    global _numpy_seconds
    t = time.perf_counter()
    try:
        yield
    finally:
        _numpy_seconds += time.perf_counter() - t


class _PartArrays:
    """``build_table``'s per-part arrays, indexed by temporary id, grown (doubled) as ids
    come: length (words), the EXTENDS and EXPLICIT flags, log10 p and back-off weight. A
    unigram's length is 1; a part the model does not list keeps p = -inf and weight 0."""

    def __init__(self, capacity: int, order: int):
        self.length = np.ones(capacity, dtype=np.uint8 if order < 256 else np.int32)  # unbounded orders too
        self.extends = np.zeros(capacity, dtype=bool)
        self.explicit = np.zeros(capacity, dtype=bool)
        self.prob = np.full(capacity, -np.inf, dtype=np.float32)
        self.bw = np.zeros(capacity, dtype=np.float32)

    def room(self, n: int) -> None:
        """Make ids below ``n`` valid."""
        have = len(self.length)
        if n <= have:
            return
        size = max(n, 2 * have)
        for name, fill in (("length", 1), ("extends", False), ("explicit", False), ("prob", -np.inf), ("bw", 0.0)):
            old = getattr(self, name)
            new = np.full(size, fill, dtype=old.dtype)
            new[:have] = old
            setattr(self, name, new)


def build_table(lm) -> tuple[np.ndarray, int]:
    """(the table int64[2 (V + S + N + 1)], S) of a :class:`suffixlm.backoff.arpa.BackoffLM` of
    order N: every contiguous part of every explicit n-gram (KenLM stores them all; a part
    the model does not list is a "blank" carrying the backed-off probability), the parts
    of each length in a region of their own, then the regions' directory.

    Parts get temporary ids in order of first appearance (a hash map of their keys that
    grows as they come, from the number of n-grams); each part's length, flags,
    probability and back-off weight go into per-id arrays as it is met (about 10 bytes a
    part), rather than lists of id arrays kept to the end (8 bytes for every part of
    every n-gram: 150M of them for a 10M-word 5-gram model)."""
    V = len(lm.vocab)
    N = lm.order
    total = sum(len(rows) for rows, _, _, _ in lm.ngrams)
    tmp = Int64Map(max(total, 1))
    next_id = V
    parts = _PartArrays(V + total + 1, N)
    for n, (rows, lp, bow, hb) in enumerate(lm.ngrams, start=1):
        rows = rows.astype(np.int64)
        for end in range(1, n + 1):
            ids = rows[:, end - 1]
            for start in range(end - 2, -1, -1):
                ids, next_id = tmp.insert(ids * V + rows[:, start], next_id)
                parts.room(next_id)
                parts.length[ids] = end - start
                if end < n:
                    parts.extends[ids] = True
            if end < n:
                parts.extends[rows[:, end - 1]] = True
        parts.explicit[ids] = True
        parts.prob[ids] = lp
        parts.bw[ids] = np.where(hb, bow, np.float32(0.0))
        if n < N:
            parts.extends[ids[bow != 0]] = True
    T = next_id
    H = T - V
    if T >= 2 ** 31 - 1:
        raise ValueError(f"too many n-grams for the binary format ({H} parts)")
    t_key = np.zeros(T, dtype=np.int64)
    t_key[:V] = np.arange(V)
    used = tmp.keys != -1
    t_key[tmp.vals[used].astype(np.int64)] = tmp.keys[used]
    del tmp, used
    t_len, prob, bw = parts.length[:T], parts.prob[:T], parts.bw[:T]
    flags = np.where(parts.extends[:T], np.int64(tnp.EXTENDS), np.int64(0))
    flags[parts.explicit[:T]] |= tnp.EXPLICIT
    del parts
    per_len = np.bincount(t_len[V:], minlength=N + 1)
    sizes = [0, 0] + [int(math.ceil(per_len[L] / LOAD)) + (1 if per_len[L] else 0) for L in range(2, N + 1)]
    starts = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    S = int(starts[-1])
    if S >= 2 ** 32 or (V + S) * V >= 2 ** tnp.KEY_BITS:
        raise ValueError(f"too many n-grams for the binary format ({H} parts, {V} words)")
    D = np.full(2 * (V + S + N + 1), -1, dtype=np.int64)
    D[0:2 * V:2] = np.arange(V, dtype=np.int64) | flags[:V]
    F = D.view(np.float32)
    F[2:4 * V:4] = prob[:V]
    F[3:4 * V:4] = bw[:V]
    directory = D[2 * (V + S):]
    directory[:] = 0
    K = kernels()
    rec = np.arange(T, dtype=np.int64)  # record of every temporary id (unigrams: themselves)
    for L in range(2, N + 1):
        directory[2 * L], directory[2 * L + 1] = starts[L], sizes[L]
        ts = np.flatnonzero(t_len == L)
        if not len(ts):
            continue
        keys = rec[t_key[ts] // V] * V + t_key[ts] % V
        K.fill_region(D, V, int(starts[L]), int(sizes[L]), keys, flags[ts], prob[ts], bw[ts])
        rec[ts] = K.records_of(D, V, S, L, keys)
    K.fill_blanks(D, V, S, N)
    return D, S


class TableQueries(KenLMInterface):
    """KenLM's queries, batched scoring and the next-word distribution on a probing table
    (``_binary_kernels``): the attributes ``_D`` (the table), ``_V``, ``_S``, ``_missing``
    (KenLM's log10 p of a word the model does not list) and the word tables come from
    :meth:`_attach_table`; a class whose table is made on demand (``BackoffLM``) returns
    ``(D, S)`` from ``_make_table``. A state holds the number of the record of the
    context it keeps (KenLM keeps the same words); states compare equal exactly when
    they predict alike."""

    _sum_dtype = np.float32  # KenLM sums a sentence in single precision
    _EMPTY_F = np.zeros(0, dtype=np.float64)
    _EMPTY_I = np.zeros(0, dtype=np.int64)
    _TABLE_ATTRS = frozenset(("_D", "_V", "_S", "_missing", "_windex", "_to_id"))

    def _make_table(self):
        raise NotImplementedError

    def __getattr__(self, name):
        if name in TableQueries._TABLE_ATTRS:  # the table, built on the first query
            D, S = self._make_table()
            self._attach_table(D, S, UNKNOWN_MISSING_LOG10)
            return object.__getattribute__(self, name)
        if name in ("_W", "_blob"):  # made when a sentence is first scored in compiled code
            self._word_table()
            return object.__getattribute__(self, name)
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _attach_table(self, D: np.ndarray, S: int, missing: float) -> None:
        V = len(self.vocab)
        self._D, self._V, self._S, self._missing = D, V, int(S), float(missing)
        self._windex = self.vocab.index
        self._to_id = UnknownIsUnk(self._windex).__getitem__

    def _word_table(self) -> None:
        """The vocabulary as a hash table over UTF-8 bytes (``_W``, ``_blob``), for
        sentences scored in one compiled call."""
        from .._text_kernels import word_table_of

        self._W, self._blob = word_table_of(self.vocab.words)

    # ------------------------------------------------------------ ids and states
    def _ids(self, sentence: str, eos: bool) -> np.ndarray:
        ids = list(map(self._to_id, split_words(as_str(sentence))))
        if eos:
            ids.append(EOS_ID)
        return np.array(ids, dtype=np.int64)

    def _record(self, words) -> int:
        """The state record of a history given as word ids (oldest first)."""
        if isinstance(words, (int, np.integer)):
            r = int(words)
            return r if -1 <= r < self._V + self._S else -1
        return int(kernels().state_of(self._D, self._V, self._S, self.order, np.asarray(words, dtype=np.int64)))

    def _words_of_record(self, r: int) -> tuple[int, ...]:
        ctx = np.empty(self.order, dtype=np.int64)
        rec = np.empty(self.order, dtype=np.int64)
        k = kernels().decode_state(self._D, self._V, self._S, self.order, r, ctx, rec)
        return tuple(int(x) for x in ctx[:k][::-1])

    def state_words(self, state: State) -> list[str]:
        """The words a state keeps, oldest first."""
        return [self.vocab.words[i] for i in self._words_of_record(self._record(state.words))]

    def kenlm_step(self, context, word):
        r = self._record(context)
        lp, n, nxt = kernels().step(self._D, self._V, self._S, self.order, r, int(word), self._missing)
        return float(lp), int(n), self._words_of_record(int(nxt))

    # ------------------------------------------------------------ KenLM
    def BeginSentenceWrite(self, state: State) -> None:
        state.words = BOS_ID

    def NullContextWrite(self, state: State) -> None:
        state.words = -1

    def _bind_queries(self):
        """``BaseScore`` and ``BaseFullScore`` as closures over the model's table and
        sizes (the decoder's per-call path: no attribute look-up beyond the states', the
        table passed by address), and ``score`` over the compiled sentence walk."""
        if "BaseScore" in self.__dict__ and ("score" in self.__dict__ or TIER == "numpy"):
            return
        K = kernels()
        from .._address import bound_entry

        address, size = self._table_address()
        D, V, S, order, missing = self._D, self._V, self._S, self.order, self._missing
        params = np.array([address, size, V, S, order, 0], dtype=np.int64)
        params[-1:] = np.array([missing], dtype=np.float64).view(np.int64)  # step_at's STEP_PARAMS
        quantised = D.dtype == np.uint64  # the 8-byte records (_records)
        # the table and the block stay alive while their addresses are in use
        self.BaseScore, self.BaseFullScore = decoder_calls(
            bound_entry(K.step_at_quantised if quantised else K.step_at, int(params.ctypes.data), -1, 0), int,
            self._record, self._windex.get, self._word_id, hold=(D, params))
        if TIER == "numpy":
            return
        W, blob, generic = self._W, self._blob, self._score
        if W.dtype != np.int64 or not W.flags.c_contiguous or blob.dtype != np.uint8 or not blob.flags.c_contiguous:
            raise RuntimeError("internal error: the word table is not a C-contiguous int64 / uint8 pair")
        work = np.zeros(K.line_work_size(order), dtype=np.int64)
        work[:2 * (order + 1)] = K.regions(D, V, S, order).ravel()
        line_params = np.concatenate([params, [W.ctypes.data, W.shape[0], blob.ctypes.data, blob.shape[0],
                                               work.ctypes.data, work.shape[0]]])
        score_line = bound_entry(K.score_line_at_quantised if quantised else K.score_line_at,
                                 int(line_params.ctypes.data), b"")  # K.LINE_PARAMS

        def score(sentence, bos=None, eos=None) -> float:
            if sentence.__class__ is str and bos is not False and eos is not False:
                try:  # words split and looked up in the same compiled call
                    return score_line(sentence.encode())
                except UnicodeEncodeError:
                    pass
            return generic(sentence, bos, eos)

        score.hold = (D, W, blob, line_params, work)  # alive while their addresses are in use

        score.__doc__ = self._score.__doc__
        self.score = score

    def BaseScore(self, in_state: State, word, out_state: State) -> float:  # replaced per model (_bind_queries)
        """log10 p(word | in_state); ``out_state`` becomes the state after ``word``."""
        self._bind_queries()
        return self.BaseScore(in_state, word, out_state)

    def BaseFullScore(self, in_state: State, word, out_state: State) -> FullScoreReturn:  # replaced per model
        """p(word | in_state) as a :class:`FullScoreReturn`; ``out_state`` becomes the
        state after ``word``."""
        self._bind_queries()
        return self.BaseFullScore(in_state, word, out_state)

    def _table_address(self) -> tuple[int, int]:
        """(address, length) of the table for ``step_at``: a C-contiguous copy when the
        table is not one (the copy becomes the table; int64, or uint64 when quantised)."""
        D = self._D
        if D.dtype not in (np.int64, np.uint64) or not D.flags.c_contiguous:
            self._D = D = np.ascontiguousarray(D, dtype=np.uint64 if D.dtype == np.uint64 else np.int64)
        return D.ctypes.data, D.shape[0]

    def _score(self, sentence, bos=None, eos=None) -> float:
        """log10 p(sentence ``</s>`` | ``<s>``) (KenLM's ``score``); a corpus instead
        of one sentence: scikit-learn's ``score`` (see :mod:`suffixlm.query`)."""
        if sentence.__class__ is str and not numpy_tier(len(sentence)):
            self._bind_queries()  # from now on the per-model closure, compiled
            try:  # words split and looked up in the same compiled call
                return kernels().score_line(self._D, self._V, self._S, self.order, self._W, self._blob,
                                             sentence.encode(), bos is None or bos, eos is None or eos, self._missing)
            except UnicodeEncodeError:  # a lone surrogate: no word of the vocabulary holds one
                pass
        elif not isinstance(sentence, (str, bytes)):
            return super().score(sentence, bos, eos)
        return float(self.score_ids(self._ids(sentence, eos is None or eos), bos=bos is None or bos)[0])

    score = _score  # replaced per model by _bind_queries' closure (same results)

    def _sentences(self, ids: np.ndarray, offsets: np.ndarray, bos: bool, per_word: bool):
        """(float32 sum of every sentence, log10 p float64[n] and n-gram length int64[n]
        of every word when ``per_word``, else None): in numpy or compiled (STARTUP_S)."""
        if numpy_tier(ids.shape[0]):
            with numpy_time():
                got = tnp.score_sentences(self._D, self._V, self._S, self.order, ids, offsets, bool(bos), self._missing)
            if got is not None:
                lp, n, sums = got
                return sums, lp.astype(np.float64), n
        lp, n = (np.empty(ids.shape[0]), np.empty(ids.shape[0], dtype=np.int64)) if per_word else \
            (self._EMPTY_F, self._EMPTY_I)
        sums = walk_sentences(self._D, self._V, self._S, self.order, ids, offsets, bool(bos), self._missing, lp, n)
        return sums, lp, n

    def full_scores(self, sentence, bos=True, eos=True):
        """``(log10 p, n-gram length, oov)`` for every word of ``sentence``, then ``</s>``
        when ``eos`` (KenLM's ``full_scores``)."""
        ids = self._ids(sentence, eos)
        _, lp, n = self._sentences(ids, np.array([0, len(ids)]), bos, True)
        for a, b, w in zip(lp.tolist(), n.tolist(), ids.tolist()):
            yield (a, b, w == UNK_ID)

    # ------------------------------------------------------------ batches
    def score_ids(self, ids, offsets=None, bos: bool = True) -> np.ndarray:
        """KenLM's ``score`` of many sentences given as word ids (``vocab`` ids, ``</s>``
        included where it is to be scored): ``ids`` int[n] with ``offsets`` int[k + 1]
        (sentence i is ``ids[offsets[i]:offsets[i + 1]]``), or one sentence. Returns
        float64[k] (float32 sums, as ``score``)."""
        ids, offsets = checked_ids(ids, offsets)  # any id: one outside the vocabulary is a missing word
        return self._sentences(ids, offsets, bos, False)[0].astype(np.float64)

    def score_batch(self, sentences, bos: bool = True, eos: bool = True) -> np.ndarray:
        """KenLM's ``score`` of every sentence of ``sentences`` (an iterable of strings)
        in one call: float64[k]."""
        sentences, text = joined_lines(sentences)
        if text is not None and not numpy_tier(len(text) // 2):  # split and looked up in one compiled call
            data, starts, bounds = line_chunks(text, len(sentences))
            K = kernels()
            model = (self._D, self._V, self._S, self.order, self._W, self._blob, data)
            lanes = lanes_pay(self._D)
            if bounds is None:
                sums = K.score_lines(*model, len(sentences), bool(bos), bool(eos), self._missing, lanes)
            else:
                with spread():
                    sums = K.score_lines_parallel(*model, starts, bool(bos), bool(eos), self._missing, lanes, bounds)
            return sums.astype(np.float64)
        to_id = self._to_id
        ids, offsets = [], [0]
        for s in sentences:
            ids.extend(map(to_id, split_words(as_str(s))))
            if eos:
                ids.append(EOS_ID)
            offsets.append(len(ids))
        return self.score_ids(np.array(ids, dtype=np.int64), np.array(offsets, dtype=np.int64), bos)

    # ------------------------------------------------------------ distributions
    def _states(self, states) -> np.ndarray:
        if isinstance(states, State):
            states = [states]
        return np.array([self._record(s.words if isinstance(s, State) else s) for s in states], dtype=np.int64)

    def distributions(self, states) -> np.ndarray:
        """``distribution`` of many states at once: float32[len(states), V]."""
        recs = self._states(states)
        out = np.empty((len(recs), self._V), dtype=np.float32)
        kernels().distributions(self._D, self._V, self._S, self.order, recs, self._missing, out)
        return out
