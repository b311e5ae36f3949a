"""Inference on encoded corpora: loss/gradient, marginals, Viterbi, n-best.

Thin typed layer over ``_inference_kernels`` (numba).  ``theta`` is the flat
float64 parameter vector of a :class:`crf.features.FeatureSpace`.
"""

from __future__ import annotations

import numba
import numpy as np

from suffixlm.memory import allocate, named_allocations, release_free_memory

from . import _gradient_kernels as G
from . import _inference_kernels as K
from . import _order2_kernels as K2
from .features import EncodedCorpus, FeatureSpace

__all__ = ["Objective", "forward_backward_marginals", "pair_marginals", "viterbi", "nbest", "choose_sparse",
           "forced_label_ids"]

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


def fb_bytes(space: FeatureSpace, max_len: int, sparse: bool) -> int:
    """Bytes of one thread's forward-backward work arrays (``K.fb_workspace``, the pair row)."""
    L = space.n_labels
    T = max(int(max_len), 1)
    L2 = L * L if space.bigram_patterns else 1
    pairs = 2 * L2 + 2 * T * L2 if sparse else T * L2
    return 8 * (4 * T * L + T + L + pairs + L2)


def fb_bytes2(space: FeatureSpace, max_len: int) -> int:
    """Bytes of one thread's work arrays of the pair-state forward-backward (``K2.workspace2``)."""
    L = space.n_labels
    T = max(int(max_len), 1)
    st = space.structure
    P = st.n_pairs
    L2 = L * L if space.bigram_patterns else 1
    n3 = st.n3 if space.trigram_patterns else 1
    return 8 * (2 * T * L + 2 * T * P + 2 * L + T + P + T * L2 + T * n3 + 2 * T)


BATCH_BYTES = 1 << 20
"""Byte budget of the gradient's per-batch token rows (phase 1 -> phase 2, ``_gradient_kernels``)."""



class Objective:
    """Negative conditional log-likelihood of an encoded corpus, parallel over sequences.

    ``value_and_gradient(theta, out=None)`` returns ``(loss, grad)``: the gradient is
    written into ``out`` (float64 (n_params,)) when given, else into a buffer owned by
    this object and overwritten by the next call. The result is the same bits for any
    number of threads, and the memory does not grow with it (``_gradient_kernels``:
    batch buffers of ``BATCH_BYTES``). ``value_and_gradient_parts(theta, out=None)`` gives the gradient
    as a (1, n_params) view (the protocol of the distributed objective). ``n_chunks`` is
    accepted for compatibility and unused.
    """

    def __init__(self, space: FeatureSpace, data: EncodedCorpus, n_chunks: int = 2,
                 recursion: str = "auto", batch_bytes: int = BATCH_BYTES):
        if data.n_sequences == 0:
            raise ValueError("no training sequence")
        if (data.labels < 0).any():
            raise ValueError("training data has tokens without a known label")
        self.space = space
        self.data = data
        self.recursion = recursion
        self.last_sparse = False
        if data.unigram_base.dtype == np.int64 and space.n_params < 2**31:
            # narrowed in place (the caller's corpus too): half the memory of the encoded
            # corpus; every kernel takes int32 or int64 offsets
            data.unigram_base = data.unigram_base.astype(np.int32)
        L = space.n_labels
        L2 = L * L
        n_seq = data.n_sequences
        self.pairwise = space.pairwise
        self.uniform = np.zeros(n_seq, dtype=np.bool_)
        self.brow_start = np.zeros(n_seq + 1, dtype=np.int64)
        n_uobs, n_bobs, n_tobs = space.n_unigram_obs, space.n_bigram_obs, space.n_trigram_obs
        occ_ptr = np.zeros(n_uobs + n_bobs + n_tobs + 1, dtype=np.int64)
        if self.pairwise:
            st = space.structure
            K2.rows2(data.seq_offsets, data.bigram_base, data.trigram_base, self.uniform, self.brow_start)
            K2.occurrence_counts2(data.seq_offsets, data.unigram_base, data.bigram_base, data.trigram_base,
                                  self.uniform, np.int64(L), np.int64(space.bigram_start),
                                  np.int64(space.trigram_start), np.int64(n_uobs), np.int64(n_bobs), space.uptr,
                                  occ_ptr)
            bad = np.flatnonzero(~space.allowed_of(data))
            if bad.size:
                raise ValueError(f"training data: sequence {int(bad[0]) + 1} uses a label pair the model forbids")
        else:
            G.bigram_rows(data.seq_offsets, data.bigram_base, self.uniform, self.brow_start)
            G.occurrence_counts(data.seq_offsets, data.unigram_base, data.bigram_base, self.uniform, np.int64(L),
                                np.int64(space.bigram_start), np.int64(n_uobs), space.uptr, occ_ptr)
        # phase 2's work per observation (its occurrences times its block size), cumulated
        work = np.diff(occ_ptr).astype(np.float64) + 1.0
        del occ_ptr
        work[:n_uobs] *= np.diff(space.state_ptr) if space.seen_states else L
        work[n_uobs:n_uobs + n_bobs] *= L2
        if n_tobs:
            work[n_uobs + n_bobs:] *= st.n3
        self._work = np.cumsum(work).astype(np.float32)  # for balancing only
        del work
        self._units: dict[int, np.ndarray] = {}
        # batches of whole sequences whose rows fit the budget
        lengths = np.diff(data.seq_offsets)
        n3 = space.structure.n3 if self.pairwise and space.trigram_patterns else 0
        row_width = (L2 if space.bigram_patterns else 0) + n3
        cost = (lengths * L + np.diff(self.brow_start) * row_width) * 8
        cum = np.cumsum(cost)
        bounds = [0]
        while bounds[-1] < n_seq:
            base = cum[bounds[-1] - 1] if bounds[-1] else 0
            nxt = int(np.searchsorted(cum, base + batch_bytes, side="right"))
            bounds.append(min(n_seq, max(nxt, bounds[-1] + 1)))
        self.batches = np.asarray(bounds, dtype=np.int64)
        tok = data.seq_offsets[self.batches]
        rows = self.brow_start[self.batches]
        self.Pu = allocate((max(1, int(np.diff(tok).max())), L), np.float64, "CRF gradient (label marginals of a batch)")
        n_rows = int(np.diff(rows).max())  # 0 without bigram patterns: no row of L*L
        has_b = n_rows and (space.bigram_patterns or not self.pairwise)
        self.Pb = allocate((max(1, n_rows), L2 if has_b else 1), np.float64,
                           "CRF gradient (label-pair marginals of a batch)")
        self.Pt = allocate((max(1, n_rows) if n3 else 1, n3 or 1), np.float64,
                           "CRF gradient (label-triple marginals of a batch)")
        self.seq_loss = np.empty(n_seq)
        self.seq_err = np.zeros(n_seq, dtype=np.int64)
        self._grad = None
        release_free_memory()

    def units(self, n_threads: int) -> np.ndarray:
        """Phase 2's observation ranges for n_threads threads: one range per thread (each
        thread reads the batch's offsets once), of about equal work, cut at multiples of 8
        observations (8 unigram blocks are 64 L bytes: no two threads write one cache line
        of the gradient). The result does not depend on them."""
        units = self._units.get(n_threads)
        if units is None:
            cum = self._work
            n_obs = len(cum)
            cuts = np.searchsorted(cum, np.arange(1, n_threads) * (cum[-1] / n_threads)) if n_obs else np.zeros(0)
            cuts = (cuts.astype(np.int64) // 8) * 8
            units = self._units[n_threads] = np.unique(np.concatenate([[0], cuts, [n_obs]])).astype(np.int64)
        return units

    @property
    def last_errors(self) -> tuple[float, float]:
        """Token and sequence error (percent) of posterior decoding at the last evaluated point."""
        te = int(self.seq_err.sum())
        se = int(np.count_nonzero(self.seq_err))
        return 100.0 * te / self.data.n_tokens, 100.0 * se / self.data.n_sequences

    def value_and_gradient(self, theta: np.ndarray, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        sp = self.space
        d = self.data
        if out is None:
            if self._grad is None:
                self._grad = allocate(sp.n_params, np.float64, "CRF gradient")
            out = self._grad
        if out.shape != (sp.n_params,) or out.dtype != np.float64 or not out.flags.c_contiguous:
            raise ValueError(f"out: expected a contiguous float64 array of shape ({sp.n_params},)")
        n_threads = numba.get_num_threads()
        if self.pairwise:
            self.last_sparse = False
            st = sp.structure
            with named_allocations("CRF gradient (forward-backward on label pairs)",
                                   n_threads * fb_bytes2(sp, d.max_length)):
                loss = K2.loss_gradient2(theta, d.seq_offsets, d.unigram_base, d.unigram_value, d.unigram_states,
                                         d.bigram_base, d.trigram_base, d.labels, np.int64(sp.n_labels), st.pairs,
                                         st.pair_pos, st.pred_ptr, st.pred_j, st.pred_r, np.int64(sp.bigram_start),
                                         np.int64(sp.trigram_start), self.uniform, self.brow_start, self.batches,
                                         np.int64(4 * n_threads), self.units(n_threads), np.int64(sp.n_unigram_obs),
                                         np.int64(sp.n_bigram_obs), sp.uptr, self.Pu, self.Pb, self.Pt, self.seq_loss,
                                         self.seq_err, out)
            if sp.frozen is not None:
                out[sp.frozen] = 0.0
            return float(loss), out
        sparse = choose_sparse(theta, sp, self.recursion)
        self.last_sparse = sparse
        nz_ptr, nz_idx = _sparse_args(theta, sp, sparse)
        with named_allocations("CRF gradient (forward-backward)", n_threads * fb_bytes(sp, d.max_length, sparse)):
            loss = G.loss_gradient(theta, d.seq_offsets, d.unigram_base, d.unigram_value, d.unigram_states,
                                   d.bigram_base, d.labels, np.int64(sp.n_labels), sparse, np.int64(sp.bigram_start),
                                   nz_ptr, nz_idx, self.uniform, self.brow_start, self.batches, np.int64(4 * n_threads),
                                   self.units(n_threads), np.int64(sp.n_unigram_obs), sp.uptr, self.Pu, self.Pb,
                                   self.seq_loss, self.seq_err, out)
        if sp.frozen is not None:  # weights held at zero (CRFsuite's transitions not generated)
            out[sp.frozen] = 0.0
        return float(loss), out

    def value_and_gradient_parts(self, theta: np.ndarray, out: np.ndarray | None = None) -> tuple[float, np.ndarray]:
        loss, g = self.value_and_gradient(theta, out)
        return loss, g.reshape(1, -1)


def forward_backward_marginals(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus,
                               recursion: str = "auto") -> tuple[np.ndarray, np.ndarray]:
    """``(marginals, log_z)``: float64 (n_tokens, L) posteriors and float64 (n_seq,) log Z."""
    out = allocate((data.n_tokens, space.n_labels), np.float64, "CRF marginals")
    logz = np.empty(data.n_sequences)
    if space.pairwise:
        with named_allocations("CRF marginals (forward-backward on label pairs)", numba.get_num_threads() *
                               fb_bytes2(space, data.max_length)):
            K2.marginals2(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                          data.bigram_base, data.trigram_base, np.int64(space.n_labels), *space.structure.args(), out,
                          logz)
        _check_reachable(logz)
        return out, logz
    sparse = choose_sparse(theta, space, recursion)
    nz_ptr, nz_idx = _sparse_args(theta, space, sparse)
    with named_allocations("CRF marginals (forward-backward)", numba.get_num_threads() *
                           fb_bytes(space, data.max_length, sparse)):
        K.marginals(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                    data.bigram_base, np.int64(space.n_labels), sparse, np.int64(space.bigram_start), nz_ptr, nz_idx,
                    out, logz)
    return out, logz


def _check_reachable(scores: np.ndarray, forced: bool = False) -> None:
    """ValueError naming the first sequence no labelling of the allowed pairs fits."""
    bad = np.flatnonzero(np.isneginf(scores))
    if bad.size:
        why = "the forced labels and the allowed label pairs" if forced else "the allowed label pairs"
        raise ValueError(f"sequence {int(bad[0]) + 1}: no labelling agrees with {why}")


def pair_marginals(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus) -> np.ndarray:
    """float64 (n_tokens, L*L): p(y_{t-1} = y', y_t = y | x) at index y' L + y (the first
    token of a sequence: zeros). Runs on the label-pair states (any model)."""
    out = allocate((data.n_tokens, space.n_labels ** 2), np.float64, "CRF label-pair marginals")
    with named_allocations("CRF marginals (forward-backward on label pairs)", numba.get_num_threads() *
                           fb_bytes2(space, data.max_length)):
        K2.pair_marginals2(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                           data.bigram_base, data.trigram_base, np.int64(space.n_labels), *space.structure.args(), out)
    return out


def forced_label_ids(space: FeatureSpace, data: EncodedCorpus, forced, name: str = "forced") -> np.ndarray:
    """The forced labels of every token as ids (int64 (n_tokens,), -1 where free), from
    one list per sequence of label strings or None (free). ValueError on a label the
    model does not have or a list of the wrong length (one line naming the position)."""
    off = data.seq_offsets
    if len(forced) != data.n_sequences:
        raise ValueError(f"{name}: {len(forced)} sequences, the input has {data.n_sequences}")
    out = np.full(data.n_tokens, -1, dtype=np.int64)
    index = space.label_index
    for i, labs in enumerate(forced):
        s, e = int(off[i]), int(off[i + 1])
        if labs is None:
            continue
        if len(labs) != e - s:
            raise ValueError(f"{name}: sequence {i + 1} has {len(labs)} labels for {e - s} tokens")
        for t, lab in enumerate(labs):
            if lab is None:
                continue
            k = index.get(lab)
            if k is None:
                raise ValueError(f"{name}: sequence {i + 1}, token {t + 1}: label {lab!r} is not one of the "
                                 f"model's {len(index)} labels")
            out[s + t] = k
    return out


def viterbi(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus,
            forced: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, scores)``: int64 (n_tokens,) best label ids, float64 (n_seq,) their scores.
    ``forced``: int64 (n_tokens,) label ids (-1: free) the paths must agree with
    (:func:`forced_label_ids`; Wapiti's ``--force``)."""
    out = np.empty(data.n_tokens, dtype=np.int64)
    best = np.empty(data.n_sequences)
    free = forced is None
    forced = _NOTHING_FORCED if forced is None else _checked_forced(forced, space, data)
    if space.pairwise:
        with named_allocations("Viterbi decoding"):
            K2.viterbi2(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                        data.bigram_base, data.trigram_base, forced, np.int64(space.n_labels), *space.structure.args(),
                        out, best)
        _check_reachable(best, not free)
        return out, best
    with named_allocations("Viterbi decoding"):
        K.viterbi(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base,
                  forced, np.int64(space.n_labels), out, best)
    return out, best


def nbest(theta: np.ndarray, space: FeatureSpace, data: EncodedCorpus, n: int,
          forced: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """``(labels, scores)``: int64 (n_tokens, n) and float64 (n_seq, n); score -inf = no such path.
    ``forced`` as for :func:`viterbi`."""
    if n < 1:
        raise ValueError("n-best needs n >= 1")
    out = allocate((data.n_tokens, n), np.int64, "n-best decoding (the labels)", zero=True)
    scores = np.full((data.n_sequences, n), -np.inf)
    free = forced is None
    forced = _NOTHING_FORCED if forced is None else _checked_forced(forced, space, data)
    if space.pairwise:
        with named_allocations("n-best decoding"):
            K2.nbest_viterbi2(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                              data.bigram_base, data.trigram_base, forced, np.int64(space.n_labels),
                              *space.structure.args(), np.int64(n), out, scores)
        _check_reachable(scores[:, 0], not free)
        return out, scores
    with named_allocations("n-best decoding"):
        K.nbest_viterbi(theta, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                        data.bigram_base, forced, np.int64(space.n_labels), np.int64(n), out, scores)
    return out, scores


_NOTHING_FORCED = np.empty(0, dtype=np.int64)


def _checked_forced(forced, space, data) -> np.ndarray:
    """The kernels index labels with it: one int64 per token, each -1 or a label id."""
    forced = np.ascontiguousarray(forced, dtype=np.int64)
    if forced.shape != (data.n_tokens,):
        raise ValueError(f"forced: {forced.shape} labels, expected one per token ({data.n_tokens},)")
    if forced.size and (forced.min() < -1 or forced.max() >= space.n_labels):
        raise ValueError(f"forced: label ids must be -1 (free) or 0..{space.n_labels - 1}")
    return forced
