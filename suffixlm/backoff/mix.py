"""Mixtures of language models, as SRILM's ``ngram -mix-lm`` and ``compute-best-mix``.

Weights follow SRILM: with models M0 (the main model, ``-lm``), M1 (``-mix-lm``), M2...
(``-mix-lm2``...), ``lambdas[0]`` is the weight of M0 (``-lambda``), ``lambdas[k]`` of
Mk for k >= 2 (``-mix-lambdaK``), and M1 gets the rest, ``1 - sum of the others``.

Two mixtures:

* **dynamic** (:class:`MixtureLM`; SRILM ``ngram -bayes 0 -mix-lm ...``): p(w | h) =
  sum_k lambda_k p_k(w | h), any models (log-linear, Kneser-Ney, ARPA). As in SRILM the
  models share one vocabulary, the union of theirs: a word a model does not know has
  probability 0 in that model, and a context stops at the most recent word the model
  does not know. A word no model knows is an OOV, scored as ``<unk>`` by the models
  that have it (``-unk``), else left out as SRILM does.
* **static** (:func:`merge_static`; what SRILM's ``ngram -mix-lm`` does by default with
  back-off models, and what it writes with ``-write-lm``): one back-off model whose
  explicit n-grams are the union of the models', each with probability sum_k lambda_k
  p_k(w | h) (every model's own back-off estimate at that n-gram's context), and
  back-off weights recomputed so that every distribution sums to one (SRILM's
  ``Ngram::mixProbs``, then ``recomputeBOWs``). More than two models are merged one at
  a time, as ``ngram`` does: M0 with M1, that with M2, ... with the weights rescaled so
  that each model ends with its own lambda.

:func:`best_mix` fits the weights by EM on held-out text (SRILM's ``compute-best-mix``:
start from equal weights, stop when no weight moves by more than ``precision``).
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

from .arpa import BackoffLM, row_index
from ..corpus import BOS, EOS, UNK, UNK_ID, Corpus, Vocabulary
from ..query import KenLMInterface

LN10 = math.log(10.0)


# ------------------------------------------------------------------------ weights
def full_weights(lambdas: Sequence[float], n_models: int) -> np.ndarray:
    """SRILM's weights -> one per model: ``lambdas`` = [lambda of M0, lambda of M2, ...,
    lambda of M_{n-1}] (``-lambda``, ``-mix-lambda2`` ...); M1 gets ``1 - sum``."""
    lambdas = [float(x) for x in lambdas]
    if n_models < 2:
        raise ValueError("a mixture needs at least two models")
    if len(lambdas) != n_models - 1:
        raise ValueError(f"{n_models} models need {n_models - 1} weights (the main model's, then models 3..)")
    for x in lambdas:
        if not (math.isfinite(x) and 0.0 <= x <= 1.0):
            raise ValueError(f"mixture weight {x!r}: expected a number in [0, 1]")
    rest = 1.0 - sum(lambdas)
    if rest < -1e-9:
        raise ValueError(f"mixture weights {lambdas} sum to more than 1")
    return np.array([lambdas[0], max(rest, 0.0)] + lambdas[1:], dtype=np.float64)


def union_vocabulary(models) -> Vocabulary:
    words = [BOS, EOS, UNK]
    seen = set(words)
    has_unk = False
    for m in models:
        v = m.vocab
        has_unk |= bool(v.has_unk)
        for w in v.words:
            if w not in seen:
                seen.add(w)
                words.append(w)
    return Vocabulary(words, has_unk=has_unk)


def _known(model, vocab: Vocabulary) -> np.ndarray:
    """bool[len(vocab)]: the union's words this model knows (``<unk>``: if it has one)."""
    index = model.vocab.index
    known = np.array([w in index for w in vocab.words], dtype=bool)
    known[UNK_ID] = bool(model.vocab.has_unk)
    return known


def _to_model_ids(model, vocab: Vocabulary) -> np.ndarray:
    return np.array([model.vocab.index.get(w, UNK_ID) for w in vocab.words], dtype=np.int64)


def _cut_starts(tokens: np.ndarray, starts: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Per token: where its context starts once it stops at the most recent unknown word."""
    idx = np.arange(len(tokens), dtype=np.int64)
    last_unknown = np.where(known[tokens], -1, idx)
    np.maximum.accumulate(last_unknown, out=last_unknown)
    prev = np.empty_like(last_unknown)
    prev[:1] = -1  # (no token at all: an empty order)
    prev[1:] = last_unknown[:-1]  # most recent unknown word strictly before each token
    return np.maximum(starts, prev + 1)


def _backoff_log10(model: BackoffLM, tokens_u: np.ndarray, starts: np.ndarray, positions: np.ndarray,
                   vocab: Vocabulary) -> np.ndarray:
    """log10 p at ``positions`` of the union-id token array, SRILM's shared-vocabulary
    rule: 0 for a word the model does not know, contexts cut at unknown words."""
    known = _known(model, vocab)
    ids = _to_model_ids(model, vocab)[tokens_u]
    out, _ = model.index.query(ids, _cut_starts(tokens_u, starts, known), positions)
    out[~known[tokens_u[positions]]] = -np.inf
    return out


# ------------------------------------------------------------------------ dynamic
class MixtureLM(KenLMInterface):
    """Dynamic interpolation of any language models (SRILM ``-bayes 0``): p(w | h) =
    sum_k weights[k] p_k(w | h). ``weights``: one per model, summing to 1 (see
    :func:`full_weights` for SRILM's way of giving them). Scores corpora
    (``log10_probs``, ``suffixlm.evaluate.score``) and has KenLM's query API."""

    _sum_dtype = np.float64

    def __init__(self, models: Sequence, weights: Sequence[float]):
        self.models = list(models)
        w = np.asarray(weights, dtype=np.float64)
        if len(self.models) < 2 or w.shape != (len(self.models),):
            raise ValueError("give two or more models and one weight per model")
        if not np.all(np.isfinite(w)) or np.any(w < 0) or abs(w.sum() - 1.0) > 1e-6:
            raise ValueError(f"mixture weights {w.tolist()} must be >= 0 and sum to 1")
        self.weights = w
        self.vocab = union_vocabulary(self.models)
        # an unbounded log-linear model (order None) counts with its fitted order
        self.order = max(int(getattr(m, "order_", None) or m.order) for m in self.models)

    def component_log10_probs(self, corpus: Corpus) -> np.ndarray:
        """float64[n_models, n_pos]: each model's log10 p at every predicted position of
        ``corpus`` (encoded with ``self.vocab``)."""
        if corpus.vocab is not self.vocab and corpus.vocab.words != self.vocab.words:
            corpus = Corpus.from_sentences(_words_of(corpus), self.vocab, source=corpus.source)
        tokens = corpus.tokens.astype(np.int64)
        pred = np.ones(len(tokens), dtype=bool)
        pred[corpus.offsets[:-1]] = False
        positions = np.flatnonzero(pred).astype(np.int64)
        starts = np.repeat(corpus.offsets[:-1], np.diff(corpus.offsets)).astype(np.int64)
        out = np.empty((len(self.models), len(positions)))
        for k, m in enumerate(self.models):
            backoff = m if isinstance(m, BackoffLM) else getattr(m, "model_", None)
            if isinstance(backoff, BackoffLM):
                out[k] = _backoff_log10(backoff, tokens, starts, positions, self.vocab)
            else:
                # any other model scores the text in its own vocabulary (a word it does
                # not know is its <unk> in its contexts); such words get probability 0
                known = _known(m, self.vocab)
                own = Corpus.from_sentences(_words_of(corpus), m.vocab)
                lp = np.asarray(m.log10_probs(own), dtype=np.float64)
                lp[~known[tokens[positions]]] = -np.inf
                out[k] = lp
        return out

    def log10_probs(self, corpus: Corpus) -> np.ndarray:
        comp = self.component_log10_probs(corpus)
        with np.errstate(divide="ignore"):
            p = np.einsum("k,kn->n", self.weights, np.power(10.0, comp))
            return np.log10(p)

    def kenlm_step(self, context, word):
        """KenLM API: each model's probability in its own ids (0 for a word it does not
        know; its context stops at the most recent word it does not know), mixed."""
        if not hasattr(self, "_maps"):
            self._maps = [(_to_model_ids(m, self.vocab), _known(m, self.vocab)) for m in self.models]
        total = 0.0
        length = 0
        for m, wk, (ids, known) in zip(self.models, self.weights, self._maps):
            if not known[word] and not (word == UNK_ID and not self.vocab.has_unk):
                continue
            ctx = list(context)
            for i in range(len(ctx) - 1, -1, -1):
                if not known[ctx[i]]:
                    ctx = ctx[i + 1:]
                    break
            lp, n, _ = m.kenlm_step(tuple(int(ids[t]) for t in ctx), int(ids[word]))
            total += wk * 10.0 ** lp
            length = max(length, n)
        keep = self.order - 1
        nxt = (tuple(context) + (word,))[-keep:] if keep > 0 else ()
        return (math.log10(total) if total > 0 else -math.inf), max(length, 1), nxt


def _words_of(corpus: Corpus) -> list[list[str]]:
    w = corpus.vocab.words
    return [[w[t] for t in corpus.sentence(s)[1:-1]] for s in range(corpus.n_sentences)]


# ------------------------------------------------------------------------ EM
def best_mix(component_log10: np.ndarray, precision: float = 0.001, max_iter: int = 10000,
             initial: Sequence[float] | None = None) -> tuple[np.ndarray, list[np.ndarray]]:
    """EM weights of a mixture from each model's log10 probabilities on held-out
    positions (float[n_models, n_pos]; positions every model gives probability 0 are
    dropped). SRILM's ``compute-best-mix``: equal starting weights, stop when no weight
    changed by more than ``precision``. Returns (weights, the weights after each
    iteration)."""
    comp = np.asarray(component_log10, dtype=np.float64)
    if comp.ndim != 2 or comp.shape[0] < 2:
        raise ValueError("best_mix needs the log10 probabilities of two or more models")
    p = np.power(10.0, comp)
    p = p[:, p.sum(axis=0) > 0]
    if p.shape[1] == 0:
        raise ValueError("no held-out position has a non-zero probability")
    k = p.shape[0]
    lam = np.full(k, 1.0 / k) if initial is None else np.asarray(initial, dtype=np.float64)
    history = []
    for _ in range(max_iter):
        post = lam[:, None] * p
        post /= post.sum(axis=0, keepdims=True)
        new = post.mean(axis=1)
        history.append(new)
        done = np.all(np.abs(new - lam) <= precision)
        lam = new
        if done:
            break
    return lam, history


# ------------------------------------------------------------------------ static
def _rows_to(model: BackoffLM, rows_u: np.ndarray, vocab: Vocabulary) -> np.ndarray:
    """log10 p_model(last word | the words before it) of every row of union ids, by the
    model's own back-off rule (0 where it does not know the word)."""
    m, n = rows_u.shape
    tokens = rows_u.reshape(-1).astype(np.int64)
    starts = np.repeat(np.arange(m, dtype=np.int64) * n, n)
    positions = np.arange(m, dtype=np.int64) * n + (n - 1)
    return _backoff_log10(model, tokens, starts, positions, vocab)


def _mix_log10(a: np.ndarray, b: np.ndarray, lam: float) -> np.ndarray:
    """SRILM's MixLogP in double: log10(lam 10^a + (1 - lam) 10^b)."""
    with np.errstate(divide="ignore"):
        return np.log10(lam * np.power(10.0, a.astype(np.float64)) + (1.0 - lam) * np.power(10.0, b.astype(np.float64)))


def _remap_rows(model: BackoffLM, vocab: Vocabulary) -> list[np.ndarray]:
    to_u = np.array([vocab.index[w] for w in model.vocab.words], dtype=np.int32)
    out = []
    for n, (rows, lp, _, _) in enumerate(model.ngrams, start=1):
        keep = np.ones(len(rows), dtype=bool)
        if n == 1 and model.implicit_unigrams:
            keep[len(rows) - model.implicit_unigrams:] = False
        out.append(to_u[rows[keep]])
    return out


def merge_two(a: BackoffLM, b: BackoffLM, lam: float) -> BackoffLM:
    """SRILM's static merge (``Ngram::mixProbs`` then ``recomputeBOWs``) of back-off
    models ``a`` (weight ``lam``) and ``b`` (weight ``1 - lam``)."""
    from . import _kn_kernels as KK

    vocab = union_vocabulary([a, b])
    N = max(a.order, b.order)
    ra, rb = _remap_rows(a, vocab), _remap_rows(b, vocab)
    levels = []
    for n in range(1, N + 1):
        parts = [r for r in (ra[n - 1] if n <= a.order else None, rb[n - 1] if n <= b.order else None)
                 if r is not None]
        rows = np.unique(np.concatenate(parts), axis=0)
        lp = _mix_log10(_rows_to(a, rows, vocab), _rows_to(b, rows, vocab), lam).astype(np.float32)
        levels.append([rows.astype(np.int32), lp])
    # back-off weights, lower orders first: bow(h) from h's explicit children and their
    # probabilities in the merged model one order down
    bows = [np.zeros(len(r), dtype=np.float32) for r, _ in levels]
    for n in range(1, N):
        ctx_rows = levels[n - 1][0]
        child = levels[n][0]
        # children are sorted, so each context's children are contiguous
        _, first = np.unique(child[:, :n], axis=0, return_index=True)
        starts = np.sort(first).astype(np.int64)
        ends = np.append(starts[1:], len(child)).astype(np.int64)
        # a context may be absent: an ARPA file may list "b a b" without "b a", as SRILM
        # reads and writes them; its back-off weight then has no line to live on (0)
        ctx_of = row_index(ctx_rows, child[starts, :n], missing=-1)
        lower_of = row_index(levels[0][0], child[:, 1:], missing=-1) if n == 1 else None
        if lower_of is not None and np.all(lower_of >= 0):
            lower = levels[0][1][lower_of]
        else:
            partial = BackoffLM(vocab, [(r, p, bw, np.ones(len(r), dtype=bool))
                                        for (r, p), bw in zip(levels[:n], bows[:n])])
            lower = _rows_to(partial, child[:, 1:], vocab)
        lp = levels[n][1]
        bow, _ = KK.backoff_weights(starts, ends, np.ones(len(child), dtype=bool), lp, lower.astype(np.float32))
        bows[n - 1][ctx_of[ctx_of >= 0]] = bow[ctx_of >= 0]
    ngrams = []
    for n, ((rows, lp), bow) in enumerate(zip(levels, bows), start=1):
        has = np.zeros(len(rows), dtype=bool) if n == N else np.ones(len(rows), dtype=bool)
        ngrams.append((rows, lp, bow, has))
    out = BackoffLM(vocab, ngrams)
    out.sources = tuple(a.sources) + tuple(b.sources)
    return out


def merge_static(models: Sequence[BackoffLM], weights: Sequence[float]) -> BackoffLM:
    """Static merge of back-off models with one weight each (summing to 1), merged one
    at a time as SRILM's ``ngram`` does."""
    w = np.asarray(weights, dtype=np.float64)
    if len(models) < 2 or w.shape != (len(models),):
        raise ValueError("give two or more back-off models and one weight per model")
    merged = models[0]
    acc = w[0]
    for m, wk in zip(models[1:], w[1:]):
        total = acc + wk
        merged = merge_two(merged, m, acc / total if total > 0 else 1.0)
        acc = total
    return merged
