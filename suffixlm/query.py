"""KenLM's Python API on every suffixlm language model.

``import kenlm; m = kenlm.Model("lm.arpa")`` becomes ``import suffixlm; m =
suffixlm.Model("lm.arpa")`` (an ARPA file, plain or gzip, or a suffixlm model file),
and the same calls work on a :class:`suffixlm.model.LogLinearLM`, a
:class:`suffixlm.backoff.kn.KneserNeyLM` and a :class:`suffixlm.backoff.arpa.BackoffLM`:

* ``score(sentence, bos=True, eos=True)``: log10 p(sentence ``</s>`` | ``<s>``);
* ``full_scores(sentence, bos=True, eos=True)``: a generator of ``(log10 p, n-gram
  length, oov)`` per word (and ``</s>``);
* ``perplexity(sentence)``: ``10 ** (-score / (words + 1))``;
* ``State``, ``BeginSentenceWrite(state)``, ``NullContextWrite(state)``,
  ``BaseScore(in_state, word, out_state)``, ``BaseFullScore(...)``: the incremental
  queries of beam-search decoders;
* ``word in model``, ``order``.

Text files and corpora are scored by separately named methods: ``score_file(path)``
(SRILM's ``ngram -ppl`` statistics, a :class:`suffixlm.evaluate.PerplexityReport`) and
``corpus_perplexity(data)``.

Where KenLM and SRILM differ, this API follows KenLM: a word outside the vocabulary is
scored as ``<unk>`` and counts in ``score`` and ``perplexity`` (SRILM leaves it out);
if the model has no ``<unk>`` its probability is KenLM's substitute, log10 p = -100.
``score_file`` and ``suffixlm ppl`` follow SRILM. Sums over a sentence are taken in
single precision for ARPA models, as KenLM does.

A state holds the context the next word is predicted from, as word ids of the model,
oldest first, shortened to the longest suffix that can still matter (a context of
the model), so equal states predict alike and decoders can recombine on them.
"""

from __future__ import annotations

import functools
import math
from typing import Iterator, NamedTuple

import numpy as np

from .corpus import BOS_ID, EOS, UNK_ID, Corpus
from .io import split_words

#: KenLM's log10 probability of ``<unk>`` when the model does not list it.
UNKNOWN_MISSING_LOG10 = -100.0


@functools.total_ordering
class State:
    """A language-model state (KenLM's ``kenlm.State``): hashable, comparable, copied
    with ``copy.copy``; filled in by ``BeginSentenceWrite``, ``NullContextWrite`` and
    the ``out_state`` of ``BaseScore``. Meaningful only for the model that wrote it."""

    __slots__ = ("words",)

    def __init__(self):
        self.words: tuple[int, ...] = ()

    def __eq__(self, other):
        if not isinstance(other, State):
            return NotImplemented
        return self.words == other.words

    def __lt__(self, other):
        if not isinstance(other, State):
            return NotImplemented
        return self.words < other.words

    def __hash__(self):
        return hash(self.words)

    def __copy__(self):
        s = State()
        s.words = self.words
        return s

    def __deepcopy__(self, memo=None):
        return self.__copy__()

    def __repr__(self):
        return f"State({self.words!r})"


class FullScoreReturn(NamedTuple):
    """KenLM's ``FullScoreReturn``: log10 probability, length of the n-gram it came from
    (the word included), and whether the word is outside the vocabulary."""

    log_prob: float
    ngram_length: int
    oov: bool


def as_str(word) -> str:
    if isinstance(word, bytes):
        return word.decode("utf-8")
    if isinstance(word, str):
        return word
    raise TypeError(f"Cannot convert {type(word).__name__} to string")


class KenLMInterface:
    """The KenLM-shaped queries, on top of one primitive per model:
    ``kenlm_step(context: tuple[int, ...], word_id) -> (log10 p, n-gram length, next context)``
    (word ids of ``self.vocab``; ``context`` oldest first, starting with ``<s>`` after
    ``BeginSentenceWrite``); for ``<unk>`` in a model without it, the unigram
    probability is ``UNKNOWN_MISSING_LOG10`` as in KenLM. ``_sum_dtype``: the precision
    sentence sums are taken in."""

    _sum_dtype = np.float64

    # -- what the model provides -------------------------------------------------
    def kenlm_step(self, context: tuple[int, ...], word: int) -> tuple[float, int, tuple[int, ...]]:
        raise NotImplementedError

    # -- KenLM -------------------------------------------------------------------
    def __contains__(self, word) -> bool:
        """Whether ``word`` is in the vocabulary (``<unk>`` is not, as in KenLM)."""
        return self.vocab.index.get(as_str(word), UNK_ID) != UNK_ID

    def _word_id(self, word) -> int:
        return self.vocab.id(as_str(word))

    def _context_of(self, words) -> tuple[int, ...]:
        """The context (word ids, oldest first: what ``kenlm_step`` takes) of a state's
        ``words``."""
        return tuple(words)

    def _full(self, context: tuple[int, ...], wid: int) -> tuple[FullScoreReturn, tuple[int, ...]]:
        lp, n, nxt = self.kenlm_step(tuple(context), int(wid))
        return FullScoreReturn(float(lp), int(n), wid == UNK_ID), nxt

    def BeginSentenceWrite(self, state: State) -> None:
        """Make ``state`` the start of a sentence (context ``<s>``)."""
        state.words = (BOS_ID,)

    def NullContextWrite(self, state: State) -> None:
        """Make ``state`` the empty context."""
        state.words = ()

    def BaseFullScore(self, in_state: State, word, out_state: State) -> FullScoreReturn:
        """p(word | in_state) as a :class:`FullScoreReturn`; ``out_state`` becomes the
        context after ``word`` (it may be ``in_state`` itself)."""
        ret, nxt = self._full(in_state.words, self._word_id(word))
        out_state.words = nxt
        return ret

    def BaseScore(self, in_state: State, word, out_state: State) -> float:
        """log10 p(word | in_state); ``out_state`` becomes the context after ``word``."""
        return self.BaseFullScore(in_state, word, out_state).log_prob

    def full_scores(self, sentence: str, bos: bool = True, eos: bool = True) -> Iterator[tuple[float, int, bool]]:
        """``(log10 p, n-gram length, oov)`` for every word of ``sentence`` (split on
        ASCII white space, as every reader splits: ``suffixlm.io.split_words``; give no
        ``<s>``), then for ``</s>`` when ``eos``."""
        vocab = self.vocab
        context: tuple[int, ...] = (BOS_ID,) if bos else ()
        for word in split_words(as_str(sentence)):
            ret, context = self._full(context, vocab.id(word))
            yield tuple(ret)
        if eos:
            ret, _ = self._full(context, vocab.id(EOS))
            yield (ret.log_prob, ret.ngram_length, False)

    def score(self, sentence, bos=None, eos=None) -> float:
        """log10 p(sentence ``</s>`` | ``<s>``); ``bos=False`` drops the ``<s>``
        context, ``eos=False`` the ``</s>`` prediction (KenLM's ``score``; both default
        to True).

        Given a corpus instead of one sentence (a list of sentence strings, a
        :class:`Corpus` or a file), scikit-learn's ``score(X, y=None)``: the mean log10
        probability per predicted token, ``</s>`` counted and OOVs left out, i.e.
        ``-log10`` of SRILM's ``ppl`` (higher is better; what ``GridSearchCV`` and
        ``cross_val_score`` maximise). A list of single words (one tokenised sentence,
        which KenLM refuses too) or a list with ``bos``/``eos`` raises ``TypeError``:
        KenLM's ``score`` takes the sentence as one string (``" ".join(words)``)."""
        if not isinstance(sentence, (str, bytes)):
            if bos is not None or eos is not None:
                raise TypeError(f"score(sentence, bos, eos) takes one sentence as a string (KenLM's API), got "
                                f"{type(sentence).__name__}: join the words with spaces")
            if isinstance(sentence, (list, tuple)) and len(sentence) > 0 and \
                    all(isinstance(w, str) and w and len(split_words(w)) == 1 for w in sentence):
                raise TypeError(f"score() got a list of {len(sentence)} single words: KenLM's score takes one "
                                "sentence as a string (' '.join(words)); for scikit-learn's score of a corpus "
                                "give sentences with spaces, a Corpus or a file, or call corpus_perplexity()")
            return -math.log10(self.corpus_perplexity(sentence))
        bos = True if bos is None else bos
        eos = True if eos is None else eos
        total = self._sum_dtype(0.0)
        for lp, _, _ in self.full_scores(sentence, bos, eos):
            total = self._sum_dtype(total + self._sum_dtype(lp))
        return float(total)

    def perplexity(self, sentence: str) -> float:
        """Perplexity of one sentence, ``</s>`` counted: ``10 ** (-score / (words + 1))``.
        (A text file: :meth:`score_file` or :meth:`corpus_perplexity`.)"""
        if not isinstance(sentence, (str, bytes)):
            raise TypeError(f"perplexity() scores one sentence (a string), got {type(sentence).__name__}; "
                            "use corpus_perplexity() or score_file() for a corpus or a file")
        words = len(split_words(as_str(sentence))) + 1
        return 10.0 ** (-self.score(sentence) / words)

    # -- batches -----------------------------------------------------------------
    def score_batch(self, sentences, bos: bool = True, eos: bool = True) -> np.ndarray:
        """:meth:`score` of every sentence of ``sentences`` (an iterable of strings):
        float64[k]. (Binary, ARPA and log-linear models do it in one compiled call.)"""
        return np.array([self.score(s, bos, eos) for s in sentences], dtype=np.float64)

    def score_ids(self, ids, offsets=None, bos: bool = True) -> np.ndarray:
        """:meth:`score` of many sentences given as word ids (``vocab`` ids, ``</s>``
        included where it is to be scored): ``ids`` int[n] with ``offsets`` int[k + 1]
        (sentence i is ``ids[offsets[i]:offsets[i + 1]]``), or one sentence: float64[k].
        (Here ``kenlm_step`` word after word, from ``<s>`` when ``bos``.)"""
        ids, offsets = checked_ids(ids, offsets, len(self.vocab))
        sums = np.empty(len(offsets) - 1)
        for i in range(len(sums)):
            context, total = ((BOS_ID,) if bos else ()), self._sum_dtype(0)
            for w in ids[offsets[i]:offsets[i + 1]].tolist():
                lp, _, context = self.kenlm_step(context, w)
                total += self._sum_dtype(lp)
            sums[i] = total
        return sums

    # -- the next-word distribution ----------------------------------------------
    def distributions(self, states) -> np.ndarray:
        """log10 p(w | state) of every word id w of ``vocab`` (what ``BaseScore`` gives
        each), for every state of ``states``: float32[len(states), V]. (Back-off and
        binary and log-linear models compute it in compiled code; here, word by word.)"""
        if isinstance(states, State):
            states = [states]
        out = np.empty((len(states), len(self.vocab)), dtype=np.float32)
        for i, st in enumerate(states):
            ctx = self._context_of(st.words)
            for w in range(len(self.vocab)):
                out[i, w] = self.kenlm_step(ctx, w)[0]
        return out

    def distribution(self, state: State) -> np.ndarray:
        """log10 p(w | state) of every word of the vocabulary, float32[V] in
        ``vocab.words`` order (what ``BaseScore`` gives each word)."""
        return self.distributions([state])[0]

    def top_k(self, state: State, k: int = 10) -> list[tuple[str, float]]:
        """The ``k`` most probable next words after ``state``, most probable first, as
        (word, log10 p); ``<s>`` and ``<unk>`` are left out."""
        return top_k_of(self.distribution(state), self.vocab, k)

    # -- files and corpora (SRILM's statistics) -----------------------------------
    def _as_corpus(self, data) -> Corpus:
        vocab = self.vocab
        if isinstance(data, Corpus):
            return data
        if isinstance(data, (list, tuple)):
            return Corpus.from_strings(data, vocab=vocab)
        return Corpus.from_text(data, vocab)

    def score_file(self, data, file_name: str | None = None):
        """SRILM's ``ngram -ppl`` statistics (:class:`suffixlm.evaluate.PerplexityReport`)
        of a text file, a :class:`Corpus` or a list of sentence strings: OOVs left out,
        ``</s>`` counted in ``ppl``."""
        from .evaluate import score

        return score(self, self._as_corpus(data), file_name)

    def corpus_perplexity(self, data) -> float:
        """SRILM's ``ppl`` of a text file, a :class:`Corpus` or a list of sentence strings."""
        return self.score_file(data).ppl


#: A compiled batch of at least this many words is walked on numba's threads, a chunk of
#: whole sentences each (the binary table's ``score_sentences_parallel``, the log-linear
#: model's ``kenlm_score_ids_parallel``: the same sums); a smaller one on one thread (a
#: parallel region's wake-up and barrier cost tens of microseconds).
PARALLEL_MIN_TOKENS = 20_000
#: A text's words are counted as its bytes over this (about PTB's, separators included)
#: for PARALLEL_MIN_TOKENS and the chunks.
BYTES_PER_WORD = 6


def sentence_chunks(offsets: np.ndarray, n_tokens: int) -> np.ndarray | None:
    """The sentence bounds (int64[c + 1]) of one chunk of about equal words (or bytes:
    any measure ``offsets`` counts in) per numba thread for a batch of ``n_tokens`` words
    in sentences at ``offsets``; None for one thread (a small batch, or one thread in
    force)."""
    import numba

    threads = numba.get_num_threads()
    if n_tokens < PARALLEL_MIN_TOKENS or threads < 2 or offsets.shape[0] < 3:
        return None
    marks = np.linspace(offsets[0], offsets[-1], threads + 1)
    bounds = np.unique(np.searchsorted(offsets, marks[1:-1]))
    n = offsets.shape[0] - 1
    return np.concatenate(([0], bounds[(bounds > 0) & (bounds < n)], [n])).astype(np.int64)


def line_chunks(text: bytes, n_lines: int):
    """(the text for a kernel, where its lines start, the chunks of lines for numba's
    threads) for the first ``n_lines`` lines of ``text`` (UTF-8 bytes): ``(text, None,
    None)`` for a text too short for threads (:data:`PARALLEL_MIN_TOKENS`, words counted
    as :data:`BYTES_PER_WORD` bytes) or one thread in force, else (its bytes as a uint8
    array, as a parallel kernel takes them; ``_text_kernels.line_starts``;
    :func:`sentence_chunks`)."""
    n_words = len(text) // BYTES_PER_WORD
    if n_words < PARALLEL_MIN_TOKENS:
        return text, None, None
    from ._text_kernels import line_starts

    data = np.frombuffer(text, dtype=np.uint8)
    starts = line_starts(data, n_lines)
    bounds = sentence_chunks(starts, n_words)
    return (text, None, None) if bounds is None else (data, starts, bounds)


def joined_lines(sentences) -> tuple[list, bytes | None]:
    """(``sentences`` as a list, their text joined by line feeds as UTF-8 for a kernel
    that reads one sentence a line; None for the text where a sentence holds a line end
    itself, or a character UTF-8 cannot encode (a lone surrogate): the caller's path
    word by word takes those). A ``bytes`` sentence is decoded (``as_str``)."""
    if sentences.__class__ is not list:
        sentences = list(sentences)
    try:
        text = "\n".join(sentences)
    except TypeError:  # bytes among them (or no string at all: as_str says so)
        sentences = [s if isinstance(s, str) else as_str(s) for s in sentences]
        text = "\n".join(sentences)
    try:
        data = text.encode()
    except UnicodeEncodeError:
        return sentences, None
    feeds = np.count_nonzero(np.frombuffer(data, dtype=np.uint8) == 10)  # numpy: str.count is far slower
    return sentences, (data if feeds == max(len(sentences) - 1, 0) else None)


def checked_ids(ids, offsets, vocab_size: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(ids int64[n], offsets int64[k + 1]) of ``score_ids``' arguments, checked: 1-D,
    offsets from 0 to n, non-decreasing, and with ``vocab_size`` every id a word of the
    vocabulary (a binary model's table scores any other id as a missing word); ``offsets``
    None: one sentence. ValueError otherwise."""
    ids = np.ascontiguousarray(ids, dtype=np.int64)
    offsets = np.array([0, len(ids)]) if offsets is None else np.ascontiguousarray(offsets, dtype=np.int64)
    if ids.ndim != 1 or offsets.ndim != 1 or len(offsets) < 1 or offsets[0] != 0 or offsets[-1] != len(ids) \
            or (np.diff(offsets) < 0).any():
        raise ValueError("score_ids: ids must be 1-D and offsets run from 0 to len(ids), non-decreasing")
    if vocab_size is not None and len(ids) and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(f"score_ids: a word id is outside the vocabulary of {vocab_size} words")
    return ids, offsets


def decoder_calls(step, state_type: type, to_state, get, word_id, hold=None):
    """``BaseScore`` and ``BaseFullScore`` of a model as closures, a decoder's per-call
    path: ``step(state, word id) -> (log10 p, n-gram length, next state)`` on the model's
    own states (``state_type``; a state of another kind goes through ``to_state``), the
    word's id by ``get`` (a vocabulary dict's ``get``) or else ``word_id``. ``hold``: an
    object the closures keep alive (what ``step`` reads by address)."""

    def decoder_call(full: bool):
        def call(in_state: State, word, out_state: State):
            s = in_state.words
            if s.__class__ is not state_type:
                s = to_state(s)
            i = get(word)
            if i is None:
                i = word_id(word)
            lp, n, out_state.words = step(s, i)
            return FullScoreReturn(lp, n, i == UNK_ID) if full else lp

        call.__doc__ = (KenLMInterface.BaseFullScore if full else KenLMInterface.BaseScore).__doc__
        call.hold = hold
        return call

    return decoder_call(False), decoder_call(True)


def top_k_of(dist: np.ndarray, vocab, k: int) -> list[tuple[str, float]]:
    """The ``k`` largest entries of a distribution over ``vocab`` (``<s>`` and ``<unk>``
    left out), largest first, ties by word id."""
    if not isinstance(k, (int, np.integer)) or isinstance(k, bool) or k < 0:
        raise ValueError(f"k must be a non-negative integer, got {k!r}")
    d = np.asarray(dist, dtype=np.float64).copy()
    d[BOS_ID] = -np.inf
    d[UNK_ID] = -np.inf
    cand = np.flatnonzero(d > -np.inf)
    k = min(int(k), len(cand))
    if k == 0:
        return []
    if k < len(cand):  # the k-th largest value; of the words tied at it, the lowest ids
        t = -np.partition(-d[cand], k - 1)[k - 1]
        above = cand[d[cand] > t]
        part = np.concatenate([above, cand[d[cand] == t][:k - len(above)]])
    else:
        part = cand
    part = part[np.lexsort((part, -d[part]))]
    return [(vocab.words[i], float(d[i])) for i in part]


def install_as_kenlm():
    """Make ``import kenlm`` give suffixlm from now on in this process (for code written
    for the kenlm module, such as pyctcdecode, which builds its states with
    ``kenlm.State()``): ``kenlm.Model``, ``kenlm.LanguageModel``, ``kenlm.State`` are then
    suffixlm's. Call it before importing that code. Returns the module."""
    import sys

    import suffixlm

    sys.modules["kenlm"] = suffixlm
    return suffixlm
