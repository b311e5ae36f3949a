"""Interpolated Kneser-Ney n-gram models, computed exactly as SRILM's ``ngram-count``.

``KneserNeyLM(order, modified=True)`` reproduces
``ngram-count -order N -kndiscount -interpolate -unk`` (modified KN: three discounts
per order from counts-of-counts, Chen & Goodman 1998) and, with ``modified=False``,
``-ukndiscount -interpolate -unk`` (one discount per order). SRILM's rules, all kept:

* counts: every n-gram of ``<s> w1 .. wn </s>`` of each order 1..N; for orders below
  N the count is replaced by the number of distinct words preceding the n-gram
  (continuation count), except for n-grams starting with ``<s>``, which keep their
  counts (``KneserNey::prepareCounts``);
* discounts from the counts-of-counts n1..n4 of the (modified) counts, skipping
  n-grams that predict ``<s>``: Y = n1/(n1+2 n2), D1 = 1-2Y n2/n1, D2 = 2-3Y n3/n2,
  D3+ = 3-4Y n4/n3; original KN: D = n1/(n1+2 n2);
* cut-offs (``-gtNmin``): n-grams whose (modified) count is below ``min_counts[n-1]``
  get no probability of their own, but still count in the context totals; SRILM's
  defaults are 1, 1, 2, 2, 2, 2, 2, 2, 2 for orders 1..9 and 1 above;
* p(w|h) = (c - D(c))/c(h) + gamma(h) p(w|h'), gamma(h) = sum_k D_k n_k(h) / c(h),
  the unigram level interpolating with 1/|V| (|V| = words that can be predicted);
  back-off weights normalise each context; unigram mass left over goes to unseen
  words; probabilities are stored and combined in single precision like SRILM;
* missing context n-grams get their back-off probability (``fixupProbs``) so the
  ARPA file is prefix-closed;
* the final values are those of the ARPA file (``%.7g``), which is what SRILM's
  ``ngram -ppl`` scores, so our model, its ARPA file and SRILM agree to the digit.

Beyond SRILM: when a modified-KN count-of-counts is zero (or a discount falls outside
its range), the order falls back to the original-KN discount, or to 0.5/1/1.5 when even
that is undefined, with a warning, instead of failing. An order above the longest
sentence (``<s> w1 .. wn </s>`` holds no (n+3)-gram) has no n-gram: its ARPA section
is empty (``ngram N=0``), as SRILM writes it.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .. import threads as _threads
from ..checks import is_int
from ..corpus import Corpus, Vocabulary, as_corpus
from ..estimator import ParamsMixin
from ..ngrams import count_ngrams
from ..query import KenLMInterface
from .kn_estimate import KneserNeyEstimate, estimate_kneser_ney
from .kn_steps import DiscountWarning

__all__ = ["DiscountWarning", "KneserNeyLM"]


class TextSize(NamedTuple):
    """What a text file held: sentences, words, words outside the vocabulary."""

    n_sentences: int
    n_words: int
    n_oov: int


def _count_text(path, vocab_path, unk: bool, order: int, shelf=None):
    """(n-gram counts, vocabulary, ``TextSize``) of a text file; the text itself is dropped
    once counted. ``shelf``: ``count_ngrams``'."""
    from ..corpus import load_training_corpus

    corpus = load_training_corpus(path, vocab_path, unk=unk)
    stats = TextSize(corpus.n_sentences, corpus.n_words, corpus.n_oov)
    counts = count_ngrams(corpus, order, shelf)
    return counts, corpus.vocab, stats


class KneserNeyLM(ParamsMixin, KenLMInterface):
    """Interpolated Kneser-Ney n-gram model (SRILM ``ngram-count -kndiscount
    -interpolate``; ``modified=False`` for ``-ukndiscount``), with KenLM's query API
    (:mod:`suffixlm.query`).

    Parameters
    ----------
    order : int | None     n-gram order N; None: unbounded (every context back to its
                           sentence start), estimated on the suffix tree of the contexts
                           (``suffixlm.backoff.kn_tree``, linear in the text; docs/unbounded.md),
                           without cut-offs and interpolated only, orders above 4 sharing
                           order 4's discounts (``kn_tree.UNBOUNDED_OWN_ORDERS``)
    modified : bool        three discounts per order (Chen & Goodman) or one
    min_counts : list[int] | None   per-order cut-offs (SRILM ``-gtNmin``); None =
                           SRILM's defaults, ``[1]`` = keep everything; the last value
                           repeats for higher orders
    interpolate : bool     interpolated (True, SRILM ``-interpolate``) or back-off KN
    threads : int | None   numba threads of fit (None: numba's setting), restored after;
                           ``n_jobs``: scikit-learn's spelling (-1: all). Counting and
                           estimation are serial kernels today, so the model and its
                           time do not depend on it (docs/threads.md)

    Learned: ``model_`` (BackoffLM), ``vocab_``, ``discounts_``, ``info_``, ``order_`` (the
    order as fitted: at unbounded order one more than the deepest context). At unbounded
    order the model is scored on the tree (``tree_model_``, a log-linear model with every
    weight 0: its Kneser-Ney base) and ``model_``, its ARPA form, is built on first use.
    Follows the scoring protocol: ``order``, ``vocab``, ``log10_probs(corpus)``.
    """

    def __init__(self, order: int = 3, modified: bool = True, min_counts: list[int] | None = None,
                 interpolate: bool = True, threads: int | None = None, n_jobs: int | None = None):
        self.order = order
        self.modified = modified
        self.min_counts = min_counts
        self.interpolate = interpolate
        self.threads = threads
        self.n_jobs = n_jobs  # checked in fit, as scikit-learn's protocol asks (set_params, clone)

    def _check_params(self) -> None:
        """``TypeError`` for an order or cut-off that is not an integer (floats and bools
        included), ``ValueError`` for one out of range (cut-offs: 1 .. 2**31 - 1, counts
        being 32-bit)."""
        if self.order is not None and not is_int(self.order):
            raise TypeError(f"order must be an integer or None (unbounded), got {self.order!r}")
        if self.order is not None and self.order < 1:
            raise ValueError(f"order must be >= 1, got {self.order!r}")
        mc = self.min_counts
        if mc is not None:
            if isinstance(mc, (str, bytes)) or not hasattr(mc, "__len__") or len(mc) == 0:
                raise ValueError(f"min_counts must be a non-empty list of integers >= 1, got {mc!r}")
            for v in mc:
                if not is_int(v):
                    raise TypeError(f"min_counts must hold integers, got {v!r}")
                if not 1 <= v <= 2**31 - 1:
                    raise ValueError(f"min_counts must be integers from 1 to {2**31 - 1}, got {v!r}")
        _threads.check(self.threads, self.n_jobs)
        if self.order is None:
            if mc is not None and any(v != 1 for v in mc):
                raise ValueError("at unbounded order Kneser-Ney keeps every n-gram (min_counts=[1]): the closed "
                                 "forms along the suffix tree's edges need each of them")
            if not self.interpolate:
                raise ValueError("at unbounded order Kneser-Ney is interpolated (interpolate=True)")

    def __getattr__(self, name):
        # at unbounded order the ARPA form is built when first asked for
        if name == "model_" and "tree_model_" in self.__dict__:
            self.model_ = self.tree_model_.to_backoff()
            self.model_.sources = self._sources
            return self.model_
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    def _fit_tree(self, data, sources) -> "KneserNeyLM":
        """Unbounded order: KN on the suffix tree of ``data`` (a Corpus or counted events)."""
        from ..model import tree_kneser_ney_model

        self.__dict__.pop("model_", None)
        self.tree_model_ = tree_kneser_ney_model(data, self.modified)
        self._sources = sources
        base = self.tree_model_.kn_
        self.vocab_ = data.vocab
        self.order_ = int(self.tree_model_.tree_.depth.max(initial=0)) + 1
        self.discounts_ = [tuple(float(x) for x in d) for d in base.discounts[:self.order_]]
        self.info_ = {"discounts": self.discounts_,
                      "count_of_counts": [[int(x) for x in c[1:]] for c in base.coc[:self.order_]],
                      "shared_from": base.shared_from, "retries": [], "bad_bows": [], "fixups": []}
        return self

    @_threads.scoped
    def fit(self, corpus, y=None) -> "KneserNeyLM":
        """Estimate from ``corpus``: a :class:`Corpus`, a text file, or a list of sentence
        strings (its vocabulary: the words in it, as ``LogLinearLM.fit``). ``y`` is
        ignored (scikit-learn's signature)."""
        self._check_params()
        corpus = as_corpus(corpus)
        if self.order is None:
            return self._fit_tree(corpus, (corpus.source,) if corpus.source else ())
        return self._fit_counts(count_ngrams(corpus, int(self.order)), corpus.vocab,
                                (corpus.source,) if corpus.source else ())

    def _fit_counts(self, counts, vocab: Vocabulary, sources: tuple) -> "KneserNeyLM":
        """Fixed order: the model estimated from ``counts`` (consumed)."""
        self.__dict__.pop("tree_model_", None)
        self.order_ = int(self.order)
        self.model_, self.info_ = estimate_kneser_ney(
            counts, vocab, self.modified, self.min_counts, self.interpolate, consume=True)
        self.model_.sources = sources
        self.vocab_ = vocab
        self.discounts_ = self.info_["discounts"]
        return self

    @_threads.scoped
    def fit_text(self, path, vocab_path=None, unk: bool = False, client=None,
                 n_shards: int | None = None) -> "KneserNeyLM":
        """Fit on a text file (one sentence per line; see ``corpus.load_training_corpus``).

        client: a ``distributed.Client``: the workers read, encode and count shards of the
        file, the counts are merged by key on the cluster (``distributed.kn_counts``) and the KN steps run
        where the n-grams live (``distributed.kn_estimate``); the driver never holds the text, then
        gathers the model, which equals the single-process one. None: read the file here.
        Sets ``n_sentences_``, ``n_words_``, ``n_oov_`` besides the learned state of ``fit``."""
        self._check_params()
        if client is None:
            if self.order is None:
                from ..corpus import load_training_corpus

                corpus = load_training_corpus(path, vocab_path, unk=unk)
                self.fit(corpus)
                self.n_sentences_, self.n_words_, self.n_oov_ = corpus.n_sentences, corpus.n_words, corpus.n_oov
                return self
            counts, vocab, stats = _count_text(path, vocab_path, unk, int(self.order))
            self._fit_counts(counts, vocab, (str(path),))
            self.n_sentences_, self.n_words_, self.n_oov_ = stats
            return self
        if self.order is None:
            from ..distributed.lm_events import count_text_events
            from ..model import longest_sentence_order

            events = count_text_events(client, str(path), longest_sentence_order(path), vocab_path=vocab_path,
                                       unk=unk)
            self._fit_tree(events, (str(path),))
            self.n_sentences_, self.n_words_, self.n_oov_ = events.n_sentences, events.n_words, events.n_oov
            return self
        from ..distributed.kn_counts import estimate_text_kn

        self.__dict__.pop("tree_model_", None)
        self.order_ = int(self.order)
        kn, stats = estimate_text_kn(client, path, int(self.order), vocab_path, unk=unk, modified=self.modified,
                                     min_counts=self.min_counts, interpolate=self.interpolate, n_shards=n_shards)
        self.model_, self.info_ = kn.model(), kn.info
        self.model_.sources = (str(path),)
        self.vocab_ = kn.vocab
        self.discounts_ = self.info_["discounts"]
        self.n_sentences_, self.n_words_, self.n_oov_ = stats.n_sentences, stats.n_words, stats.n_oov
        return self

    @_threads.scoped
    def estimate_text(self, path, vocab_path=None, unk: bool = False,
                      shelf=None) -> "tuple[KneserNeyEstimate, TextSize]":
        """The estimate of a fixed order on a text file, in this process, before its n-grams
        are listed: a ``KneserNeyEstimate`` whose ``write_arpa`` streams the ARPA file a block
        at a time (the bytes ``fit_text(...).write_arpa`` writes, without the whole model in
        memory), and the text's ``TextSize``. Sets no learned state. ``shelf``: a
        ``distributed.spill.SpillStore`` that holds on disk the counts and the estimate's
        arrays that the step at hand does not read (``count_ngrams``, ``KneserNeyEstimate``):
        a lower peak of memory, the same file."""
        self._check_params()
        if self.order is None:
            raise ValueError("estimate_text estimates a fixed order; at unbounded order use fit_text")
        counts, vocab, stats = _count_text(path, vocab_path, unk, int(self.order), shelf)
        return KneserNeyEstimate(counts, vocab, self.modified, self.min_counts, self.interpolate, consume=True,
                                 shelf=shelf), stats

    @property
    def vocab(self) -> Vocabulary:
        return self.vocab_

    def log10_probs(self, corpus: Corpus) -> np.ndarray:
        """float64[n_pos] log10 p(w | context) at every predicted position (all but <s>)."""
        if "tree_model_" in self.__dict__:
            return self.tree_model_.log10_probs(corpus)
        return self.model_.log10_probs(corpus)

    @property
    def _sum_dtype(self):
        return np.float64 if "tree_model_" in self.__dict__ else np.float32

    def kenlm_step(self, context, word):
        if "tree_model_" in self.__dict__:
            return self.tree_model_.kenlm_step(context, word)
        return self.model_.kenlm_step(context, word)

    def write_arpa(self, path) -> None:
        """Write the model as an ARPA file (``BackoffLM.write_arpa``), never over the training text."""
        self.model_.write_arpa(path)
