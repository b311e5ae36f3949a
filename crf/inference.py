"""Inference on encoded corpora: loss/gradient, marginals, Viterbi, n-best.

Thin typed layer over ``_inference_kernels`` (numba).  ``theta`` is the flat
float64 parameter vector of a :class:`crf.features.FeatureSpace`.
"""

from __future__ import annotations

import numpy as np

from . import _inference_kernels as K
from .features import EncodedCorpus, FeatureSpace

__all__ = ["Objective", "forward_backward_marginals", "viterbi", "nbest", "choose_sparse"]

SPARSE_DENSITY = 0.25
"""``recursion="auto"`` uses the sparse recursion when at most this fraction of the
bigram weights is non-zero."""


def _nonzeros(theta: np.ndarray, space: FeatureSpace) -> tuple[np.ndarray, np.ndarray]:
    L2 = space.n_labels ** 2
    nnz = int(np.count_nonzero(theta[space.bigram_start:]))
    nz_ptr = np.zeros(space.n_bigram_obs + 1, dtype=np.int64)
    nz_idx = np.empty(max(nnz, 1), dtype=np.int64)
    K.bigram_nonzeros(theta, np.int64(space.bigram_start), np.int64(space.n_bigram_obs),
                      np.int64(L2), nz_ptr, nz_idx)
    return nz_ptr, nz_idx


def choose_sparse(theta: np.ndarray, space: FeatureSpace, recursion: str = "auto") -> bool:
    """Whether to run the sparse (M = exp(lambda) - 1) recursion for these weights."""
    if recursion == "dense":
        return False
    if recursion == "sparse":
        return True
    if recursion != "auto":
        raise ValueError(f"recursion must be 'auto', 'dense' or 'sparse', not {recursion!r}")
    size = theta.shape[0] - space.bigram_start
    return size == 0 or np.count_nonzero(theta[space.bigram_start:]) <= SPARSE_DENSITY * size


def _sparse_args(theta, space, sparse):
    if sparse:
        return _nonzeros(theta, space)
    return np.zeros(1, dtype=np.int64), np.zeros(1, dtype=np.int64)


class Objective:
    """Negative conditional log-likelihood of an encoded corpus, parallel over sequences.

    ``value_and_gradient(theta)`` returns ``(loss, grad)`` with grad float64
    (n_params,) owned by this object and overwritten by the next call.
    ``value_and_gradient_parts(theta)`` returns ``(loss, parts)`` with parts float64
    (n_chunks, n_params) whose column sums are the gradient (what the solvers use:
    they sum the per-thread buffers in their own next pass).
    """

    def __init__(self, space: FeatureSpace, data: EncodedCorpus, n_chunks: int = 2,
                 recursion: str = "auto"):
        if data.n_sequences == 0:
            raise ValueError("no training sequence")
        if (data.labels < 0).any():
            raise ValueError("training data has tokens without a known label")
        self.space = space
        self.data = data
        self.recursion = recursion
        n_chunks = max(1, min(n_chunks, data.n_sequences))
        # balance the chunks by tokens
        cum = data.seq_offsets[1:]
        targets = np.arange(1, n_chunks) * (data.n_tokens / n_chunks)
        inner = np.searchsorted(cum, targets) + 1
        self.chunks = np.unique(np.concatenate([[0], inner, [data.n_sequences]])).astype(np.int64)
        self.G = np.empty((len(self.chunks) - 1, space.n_params))
        self.errors = np.zeros((len(self.chunks) - 1, 2), dtype=np.int64)
        self.last_sparse = False

    @property
    def last_errors(self) -> tuple[float, float]:
        """Token and sequence error (percent) of posterior decoding at the last evaluated point."""
        te, se = self.errors.sum(axis=0)
        return 100.0 * te / self.data.n_tokens, 100.0 * se / self.data.n_sequences

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, parts = self.value_and_gradient_parts(theta)
        if parts.shape[0] > 1:
            parts[0] += parts[1:].sum(axis=0)
        return loss, parts[0]

    def value_and_gradient_parts(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        sp = self.space
        d = self.data
        sparse = choose_sparse(theta, sp, self.recursion)
        self.last_sparse = sparse
        nz_ptr, nz_idx = _sparse_args(theta, sp, sparse)
        loss = K.loss_gradient(theta, d.seq_offsets, d.unigram_base, d.bigram_base, d.labels,
                               np.int64(sp.n_labels), sparse, np.int64(sp.bigram_start), nz_ptr,
                               nz_idx, self.chunks, self.G, self.errors)
        return float(loss), self.G


def forward_backward_marginals(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus,
                               recursion: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """``(marginals, log_z)``: float64 (n_tokens, L) posteriors and float64 (n_seq,) log Z."""
    sparse = choose_sparse(theta, space, recursion)
    nz_ptr, nz_idx = _sparse_args(theta, space, sparse)
    out = np.empty((data.n_tokens, space.n_labels))
    logz = np.empty(data.n_sequences)
    K.marginals(theta, data.seq_offsets, data.unigram_base, data.bigram_base,
                np.int64(space.n_labels), sparse, np.int64(space.bigram_start), nz_ptr, nz_idx,
                out, logz)
    return out, logz


def viterbi(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, scores)``: int64 (n_tokens,) best label ids, float64 (n_seq,) their scores."""
    out = np.empty(data.n_tokens, dtype=np.int64)
    best = np.empty(data.n_sequences)
    K.viterbi(theta, data.seq_offsets, data.unigram_base, data.bigram_base,
              np.int64(space.n_labels), out, best)
    return out, best


def nbest(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus, n: int) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, scores)``: int64 (n_tokens, n) and float64 (n_seq, n); score -inf = no such path."""
    if n < 1:
        raise ValueError("n-best needs n >= 1")
    out = np.zeros((data.n_tokens, n), dtype=np.int64)
    scores = np.full((data.n_sequences, n), -np.inf)
    K.nbest_viterbi(theta, data.seq_offsets, data.unigram_base, data.bigram_base,
                    np.int64(space.n_labels), np.int64(n), out, scores)
    return out, scores
