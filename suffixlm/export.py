"""A log-linear LM as a back-off model (ARPA), for decoders that read ARPA or KenLM.

The log-linear model is exactly a back-off model. Take a trie context j (a node of the
suffix trie of the reversed training contexts; a suffix-tree node of ``c`` collapsed
trie nodes stands for ``c`` of them, one per depth along its edge) and its parent
context p (j without its oldest word). A word v with no parameter at j has the score it
has at p and, with a base measure, the base B(v | j) = gamma_j B(v | p), so

    P(v | j) = P(v | p) * gamma_j Z(p) / Z(j)

for every such v: the back-off weight of j is gamma_j Z(p) / Z(j), and every word seen
after j (a parameter at j) gets its explicit probability. The ARPA file lists, for
each order n, every (context of n - 1 words, seen word) pair with log10 P, every
context of n words with its log10 back-off weight, and every word of the vocabulary as
a unigram (``<s>`` with -99, as SRILM writes it; ``<unk>`` only in an open vocabulary).
A context of an unseen text stops at its deepest trie context in both, so an ARPA
reader (suffixlm's, KenLM, SRILM) gives the model's probabilities to the printed
precision (``%.7g`` of log10, float32 in memory). tests/suffixlm/test_export.py checks
it on seen and unseen text, collapsed edges and the Kneser-Ney base.
"""

from __future__ import annotations

import numpy as np

from . import _export_kernels as K
from .backoff.arpa import LOG_ZERO, BackoffLM, row_index
from .corpus import BOS_ID, UNK_ID

LN10 = float(np.log(10.0))


def _offsets(counts: np.ndarray, width: np.ndarray) -> np.ndarray:
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts * width, out=out[1:])
    return out


def _attach_bows(rows: np.ndarray, ctx_rows: np.ndarray, ctx_bow: np.ndarray):
    """(bow float32[m], has_bow bool[m]) of the n-grams ``rows`` (m, d) from the contexts
    ``ctx_rows`` (k, d): every context is one of the n-grams (a context's last word was
    predicted after the words before it)."""
    bow = np.zeros(len(rows), dtype=np.float32)
    has = np.zeros(len(rows), dtype=bool)
    idx = row_index(rows, ctx_rows)
    bow[idx] = ctx_bow
    has[idx] = True
    return bow, has


def loglinear_to_backoff(lm) -> BackoffLM:
    """The fitted :class:`suffixlm.model.LogLinearLM` ``lm`` as a :class:`BackoffLM`
    (write it with ``write_arpa``)."""
    sa = lm.scoring_arrays()
    t = lm.tree_
    b = lm.base_
    # at unbounded order: one more than the deepest context (what an ARPA file can hold)
    N = int(lm.order) if lm.order is not None else int(t.depth.max(initial=0)) + 1
    vocab = lm.vocab_
    V = len(vocab)
    collapsed = sa.collapsed
    nonroot = t.parent >= 0
    if b.kind != "none" and not b.on_edges and np.any(collapsed[nonroot] != 1):
        raise RuntimeError("internal error: a model with a base measure read on the trie lives on the trie")
    ngram_counts, ctx_counts = K.trie_counts(t.parent, t.depth, collapsed, t.succ_offsets, N)
    widths = np.arange(N + 1, dtype=np.int64)
    row_off = _offsets(ngram_counts, widths)
    idx_off = _offsets(ngram_counts, np.ones(N + 1, dtype=np.int64))
    ctx_row_off = _offsets(ctx_counts, widths)
    ctx_idx_off = _offsets(ctx_counts, np.ones(N + 1, dtype=np.int64))
    rows = np.empty(row_off[-1], dtype=np.int32)
    logp = np.empty(idx_off[-1], dtype=np.float64)
    ctx_rows = np.empty(ctx_row_off[-1], dtype=np.int32)
    ctx_bow = np.empty(ctx_idx_off[-1], dtype=np.float64)
    K.expand(t.parent, t.depth, collapsed, t.succ_offsets, t.succ_words.astype(np.int64), sa.param_parent,
             t.context_position, t.tokens, lm.weights_, sa.S, sa.Z, b.lnB, b.gamma, N,
             row_off, idx_off, ctx_row_off, ctx_idx_off, rows, logp, ctx_rows, ctx_bow, *sa.edge_base)

    # unigrams: every word; those that are no root param score ln_unseen
    root = int(np.flatnonzero(~nonroot)[0])
    lo, hi = t.succ_offsets[root], t.succ_offsets[root + 1]
    lz = np.log(sa.Z[root])
    uni = np.full(V, (b.ln_unseen - lz) / LN10)
    uni[t.succ_words[lo:hi]] = (sa.S[lo:hi] + b.lnB[lo:hi] - lz) / LN10
    uni[BOS_ID] = LOG_ZERO
    words = np.arange(V, dtype=np.int32)
    if not vocab.has_unk:
        words = words[words != UNK_ID]
    levels = [(words.reshape(-1, 1), uni[words])]
    for n in range(2, N + 1):
        r = rows[row_off[n]:row_off[n + 1]].reshape(-1, n)
        levels.append((r, logp[idx_off[n]:idx_off[n + 1]]))
    ngrams = []
    for n, (r, p) in enumerate(levels, start=1):
        if n < N:
            c = ctx_rows[ctx_row_off[n]:ctx_row_off[n + 1]].reshape(-1, n)
            bow, has = _attach_bows(r, c, ctx_bow[ctx_idx_off[n]:ctx_idx_off[n + 1]])
        else:
            bow, has = np.zeros(len(r), dtype=np.float32), np.zeros(len(r), dtype=bool)
        ngrams.append((r, p.astype(np.float32), bow, has))
    return BackoffLM(vocab, ngrams)
