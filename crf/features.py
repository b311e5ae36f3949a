"""Observation strings -> ids and the parameter layout (Wapiti semantics).

Every distinct observation string x seen in training gets an id.  An observation
produced by a unigram pattern owns the L unigram features (y, x); one produced by
a bigram pattern owns the L*L bigram features (y', y, x); ``*`` patterns give both.
The lone ``B`` pattern is the observation ``"B"`` present at every position: the
pure transition block. An observation of a trigram pattern (``T``, second-order
models) owns the L*L*L trigram features (y'', y', y, x).

Parameters are one flat float64 vector::

    theta[ : n_unigram_obs * L]                 unigram block, index u_rank(x)*L + y
    theta[bigram_start : trigram_start]         bigram block, index
                                                  bigram_start + b_rank(x)*L*L + y'*L + y
    theta[trigram_start : ]                     trigram block, index
                                                  trigram_start + t_rank(x)*L^3 + (y''*L + y')*L + y

where ``u_rank`` / ``b_rank`` / ``t_rank`` number the observations having each kind.
``allowed`` (bool (L*L,), or None: every pair) lists the label pairs a labelling may
use (:mod:`crf.transitions`); a second-order model or one with forbidden pairs runs
on the pair states of ``crf._order2_kernels``.  A corpus
is encoded as two rectangular int64 arrays of *base offsets* into theta, one column
per pattern of each kind (-1 where the observation is unknown), so the kernels read
``theta[base + y]`` / ``theta[base + y'*L + y]`` without any dictionary.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import repeat

import numpy as np

from suffixlm.memory import allocate

from .patterns import BIGRAM, TRIGRAM, UNIGRAM, Pattern, expand_patterns
from .strings import StringTable

__all__ = ["EncodedCorpus", "FeatureSpace"]

#: ``ustates`` of a space whose unigram blocks have every label
_DENSE = np.zeros(0, dtype=np.int64)


def unigram_base_type(space) -> type:
    """The dtype of an encoded corpus' unigram offsets: int32 when every offset fits (half
    the memory of the largest array of the corpus; every kernel takes int32 or int64)."""
    return np.int32 if space.n_params < 2**31 else np.int64


def pack_states(state_ptr: np.ndarray, state_labels: np.ndarray) -> np.ndarray:
    """``ustates`` of a seen-states layout: entry k (the unigram weight k) is
    ``end << 32 | label``, where end is the offset past the weight's block."""
    counts = np.diff(state_ptr)
    return (np.repeat(state_ptr[1:], counts) << 32) | state_labels.astype(np.int64)


@dataclass
class EncodedCorpus:
    """A corpus as flat arrays for the kernels.

    seq_offsets: int64 (n_seq + 1,) token offsets of the sequences.
    unigram_base: int64 (n_tokens, n_unigram_patterns) theta offset of the
        unigram block of each observation (-1: unknown observation).
    bigram_base: int64 (n_tokens, n_bigram_patterns) likewise for bigram blocks
        (row 0 of each sequence is ignored: no previous label there).
    labels: int64 (n_tokens,) gold label ids, -1 when absent or unseen in training.
    unigram_value: float64 (n_tokens, n_unigram_columns) value of each unigram feature
        (real-valued features, :mod:`crf.dicts`), or an empty (0, n_unigram_columns)
        array (the default): every value is 1, as for pattern observations.
    trigram_base: int64 (n_tokens, n_trigram_patterns) likewise for trigram blocks (rows
        0 and 1 of each sequence are ignored); None: no trigram pattern.
    unigram_states: int64 the unigram blocks' labels of a space with seen states only
        (:attr:`FeatureSpace.ustates`), or empty (the default): every block has the L labels.
    """

    seq_offsets: np.ndarray
    unigram_base: np.ndarray
    bigram_base: np.ndarray
    labels: np.ndarray
    unigram_value: np.ndarray | None = None
    trigram_base: np.ndarray | None = None
    unigram_states: np.ndarray | None = None

    def __post_init__(self):
        if self.unigram_states is None:
            self.unigram_states = _DENSE
        if self.trigram_base is None:
            self.trigram_base = np.empty((self.unigram_base.shape[0], 0), dtype=np.int64)
        k = self.unigram_base.shape[1]
        if self.unigram_value is None:
            self.unigram_value = np.empty((0, k))
        v = self.unigram_value
        # the kernels read uval[t, j] for every base they read: same shape, or no rows
        if v.dtype != np.float64 or v.ndim != 2 or v.shape[1] != k or v.shape[0] not in (0, self.unigram_base.shape[0]):
            raise ValueError(f"unigram_value: float64 {v.dtype} array of shape {v.shape}, expected "
                             f"(0 or {self.unigram_base.shape[0]}, {k})")

    @property
    def valued(self) -> bool:
        """Whether the unigram features carry values (else every value is 1)."""
        return self.unigram_value.shape[0] > 0

    @property
    def n_sequences(self) -> int:
        return len(self.seq_offsets) - 1

    @property
    def n_tokens(self) -> int:
        return int(self.seq_offsets[-1])

    @property
    def max_length(self) -> int:
        return int(np.diff(self.seq_offsets).max()) if self.n_sequences else 0


def _columns(X: list[list[list[str]]], n_cols: int) -> tuple[list[list[str]], list[int]]:
    lengths = [len(seq) for seq in X]
    rows = [row for seq in X for row in seq]
    cols = [list(c) for c in zip(*rows)] if rows else [[] for _ in range(n_cols)]
    return cols, lengths


class FeatureSpace:
    """Observation dictionary, labels and parameter layout of a model.

    observations: list of observation strings (id = position).
    kinds: int8 (n_obs,) bit mask UNIGRAM=1 | BIGRAM=2.
    labels: label strings (id = position).
    """

    def __init__(self, patterns: list[Pattern], observations: list[str], kinds: np.ndarray,
                 labels: list[str], n_columns: int, allowed: np.ndarray | None = None,
                 state_ptr: np.ndarray | None = None, state_labels: np.ndarray | None = None):
        self.patterns = patterns
        self.state_ptr = None if state_ptr is None else np.ascontiguousarray(state_ptr, dtype=np.int64)
        self.state_labels = None if state_labels is None else np.ascontiguousarray(state_labels, dtype=np.int64)
        self.observations = StringTable.of(observations)
        self.kinds = np.asarray(kinds, dtype=np.int8)
        self.labels = list(labels)
        self.n_columns = n_columns
        self.label_index = {lab: i for i, lab in enumerate(self.labels)}
        self.frozen = None  # weights held at zero in training (``freeze_transitions``)
        self._obs_index = None
        self._structure = None
        self.allowed = None
        self._layout()
        self.set_allowed(allowed)

    def set_allowed(self, allowed: np.ndarray | None) -> None:
        """The label pairs a labelling may use (bool (L*L,); None: all)."""
        if allowed is not None:
            allowed = np.ascontiguousarray(allowed, dtype=np.bool_)
            if allowed.shape != (self.n_labels ** 2,):
                raise ValueError(f"allowed: shape {allowed.shape}, expected ({self.n_labels ** 2},)")
        self.allowed = allowed
        self._structure = None

    def allowed_of(self, data: EncodedCorpus) -> np.ndarray:
        """bool (n_seq,): whether each sequence's labels use allowed pairs only (labels
        -1, unknown, never count against it)."""
        ok = np.ones(data.n_sequences, dtype=np.bool_)
        lab = data.labels
        if self.allowed is None or lab.shape[0] < 2:
            return ok
        L = self.n_labels
        follow = np.ones(lab.shape[0] - 1, dtype=np.bool_)
        starts = data.seq_offsets[1:-1]
        follow[starts[(starts > 0) & (starts < lab.shape[0])] - 1] = False
        a, b = lab[:-1], lab[1:]
        known = follow & (a >= 0) & (b >= 0)
        bad = np.zeros_like(known)
        bad[known] = ~self.allowed[a[known] * L + b[known]]
        pos = np.flatnonzero(bad) + 1
        ok[np.searchsorted(data.seq_offsets, pos, side="right") - 1] = False
        return ok

    @property
    def order(self) -> int:
        """2 when the patterns have trigram features, else 1."""
        return 2 if self.trigram_patterns else 1

    @property
    def pairwise(self) -> bool:
        """Whether inference runs on label-pair states (second order, or forbidden pairs)."""
        return self.order == 2 or self.allowed is not None

    @property
    def structure(self):
        """The allowed pairs and transitions (:class:`crf.transitions.PairStructure`)."""
        if self._structure is None:
            from .transitions import PairStructure

            L = self.n_labels
            self._structure = PairStructure(L, np.ones(L * L, dtype=np.bool_) if self.allowed is None
                                            else self.allowed)
        return self._structure

    @property
    def obs_index(self) -> dict[str, int]:
        """Observation string -> id, made on first use (training does not need it)."""
        if self._obs_index is None:
            self._obs_index = {s: i for i, s in enumerate(self.observations)}
        return self._obs_index

    def _layout(self) -> None:
        L = len(self.labels)
        is_u = (self.kinds & UNIGRAM) != 0
        is_b = (self.kinds & BIGRAM) != 0
        is_t = (self.kinds & TRIGRAM) != 0
        self.n_unigram_obs = int(is_u.sum())
        self.n_bigram_obs = int(is_b.sum())
        self.n_trigram_obs = int(is_t.sum())
        if self.state_ptr is None:
            self.bigram_start = self.n_unigram_obs * L
            self.ustates = _DENSE
            self.uptr = _DENSE
        else:
            ptr, lab = self.state_ptr, self.state_labels
            if ptr.shape != (self.n_unigram_obs + 1,) or ptr[0] != 0 or lab is None or lab.shape != (ptr[-1],):
                raise ValueError("state_ptr / state_labels: not the blocks of the unigram observations")
            self.bigram_start = int(ptr[-1])
            self.ustates = pack_states(ptr, lab)
            self.uptr = ptr
        self.trigram_start = self.bigram_start + self.n_bigram_obs * L * L
        self.n_params = self.trigram_start + self.n_trigram_obs * L ** 3
        self.unigram_offset = np.full(len(self.kinds), -1, dtype=np.int64)
        self.unigram_offset[is_u] = (np.arange(self.n_unigram_obs, dtype=np.int64) * L if self.state_ptr is None
                                     else self.state_ptr[:-1])
        self.bigram_offset = np.full(len(self.kinds), -1, dtype=np.int64)
        self.bigram_offset[is_b] = self.bigram_start + np.arange(self.n_bigram_obs, dtype=np.int64) * L * L
        self.trigram_offset = np.full(len(self.kinds), -1, dtype=np.int64)
        self.trigram_offset[is_t] = self.trigram_start + np.arange(self.n_trigram_obs, dtype=np.int64) * L ** 3
        self.unigram_patterns = [i for i, p in enumerate(self.patterns) if p.kind & UNIGRAM]
        self.bigram_patterns = [i for i, p in enumerate(self.patterns) if p.kind & BIGRAM]
        self.trigram_patterns = [i for i, p in enumerate(self.patterns) if p.kind & TRIGRAM]

    @property
    def n_labels(self) -> int:
        return len(self.labels)

    @property
    def seen_states(self) -> bool:
        """Whether the unigram blocks hold only the labels seen with their observation in
        training (CRFsuite's ``all_possible_states=False``) instead of all L."""
        return self.state_ptr is not None

    def unigram_labels(self, u: int) -> np.ndarray:
        """The labels of unigram observation rank u's weights, in weight order."""
        if self.state_ptr is None:
            return np.arange(self.n_labels)
        return self.state_labels[self.state_ptr[u]: self.state_ptr[u + 1]]

    def restrict_states(self, data: EncodedCorpus, min_freq: float = 0.0) -> "FeatureSpace":
        """The same space with seen states only (CRFsuite's ``feature.possible_states=0``):
        each unigram observation keeps the labels whose frequency in ``data`` (the training
        corpus it was built from, encoded in this dense space) is at least ``min_freq``. A
        label's frequency is the sum of the observation's values over the tokens of that label
        (1 per occurrence without values), as CRFsuite counts it (its ``feature.minfreq``);
        so a pair whose values sum below 0 has no weight even with min_freq 0, as there. An
        observation left without labels loses its unigram block (and the space the
        observation if it had no other). ``data`` is re-encoded in place for the new space."""
        if self.seen_states:
            return self
        L = self.n_labels
        ub = data.unigram_base
        keys = np.zeros(0, dtype=np.int64)  # sorted (rank * L + label) seen so far
        freq = np.zeros(0)
        for j in range(ub.shape[1]):  # a column at a time: temporaries of one column
            col = ub[:, j]
            known = col >= 0
            u, inv = np.unique(col[known].astype(np.int64) + data.labels[known], return_inverse=True)
            f = np.bincount(inv, weights=data.unigram_value[known, j] if data.valued else None, minlength=len(u))
            merged = np.union1d(keys, u)
            acc = np.zeros(len(merged))
            acc[np.searchsorted(merged, keys)] += freq
            acc[np.searchsorted(merged, u)] += f
            keys, freq = merged, acc
        seen = keys[freq >= min_freq]
        keys = freq = None
        counts = np.bincount(seen // L, minlength=self.n_unigram_obs)
        has = counts > 0
        kinds, observations = self.kinds, self.observations
        if not has.all():  # observations left without a label: no unigram block (nor observation)
            kinds = kinds.copy()
            kinds[np.flatnonzero(self.unigram_offset >= 0)[~has]] &= ~np.int8(UNIGRAM)
            kept = kinds != 0
            if not kept.all():
                observations = observations.select(kept)
                kinds = kinds[kept]
        ptr = np.zeros(int(has.sum()) + 1, dtype=np.int64)
        np.cumsum(counts[has], out=ptr[1:])
        space = FeatureSpace(self.patterns, observations, kinds, self.labels, self.n_columns, self.allowed,
                             state_ptr=ptr, state_labels=seen % L)
        offset_of_rank = np.full(self.n_unigram_obs, -1, dtype=np.int64)
        offset_of_rank[has] = ptr[:-1]
        shift = space.bigram_start - self.bigram_start
        for j in range(ub.shape[1]):
            col = ub[:, j]
            known = col >= 0
            col[known] = offset_of_rank[col[known] // L]
        for base in (data.bigram_base, data.trigram_base):
            base[base >= 0] += shift
        data.unigram_states = space.ustates
        if observations is self.observations:
            space._obs_index = self._obs_index
        return space

    def freeze_transitions(self, data: EncodedCorpus, possible: bool = False, min_freq: float = 0.0) -> None:
        """Hold at zero the label-pair weights of every bigram block whose pair is not a
        transition feature in CRFsuite's sense: a pair (y', y) is one when it follows in
        ``data`` (the training corpus) at least ``min_freq`` times, and, unless ``possible``
        (``feature.possible_transitions``), at least once. ``frozen`` lists the weights; the
        gradient-based solvers keep them at zero (their gradient is zeroed)."""
        L = self.n_labels
        lab = data.labels
        follow = np.ones(max(lab.shape[0] - 1, 0), dtype=bool)
        starts = data.seq_offsets[1:-1]
        follow[starts[(starts > 0) & (starts < lab.shape[0])] - 1] = False
        count = np.bincount((lab[:-1] * L + lab[1:])[follow], minlength=L * L) if follow.size else np.zeros(L * L)
        unseen = np.flatnonzero(~((count >= min_freq) & (possible | (count > 0))))
        blocks = self.bigram_start + np.arange(self.n_bigram_obs, dtype=np.int64) * (L * L)
        frozen = (blocks[:, None] + unseen[None, :]).ravel()
        self.frozen = frozen if frozen.size else None

    # ------------------------------------------------------------------ building
    @classmethod
    def build(cls, patterns: list[Pattern], X, y, name: str = "<train>",
              check=None) -> tuple["FeatureSpace", EncodedCorpus]:
        """Create the feature space from training data and encode that data.

        ``check(n_unigram_obs, n_bigram_obs, n_obs, done)`` (e.g.
        :meth:`crf.budget.FeatureBudget.check`, which raises when the model would be too
        big) is called after each pattern's observations (``done`` patterns so far; the
        counts a lower bound) and once more with the exact counts (``done`` None) before
        the corpus is encoded."""
        n_cols = len(X[0][0]) if X and X[0] else 0
        cols, lengths = _columns(X, n_cols)
        labels: dict[str, int] = {}
        gold = np.fromiter((labels.setdefault(lab, len(labels)) for seq in y for lab in seq),
                           dtype=np.int64, count=sum(lengths))
        index: dict[str, int] = {}
        obs_ids = []
        # the ids fit int32 unless there could be 2^31 observations: half the memory
        id_type = np.int32 if sum(lengths) * max(len(patterns), 1) < 2**31 else np.int64
        n_u = n_b = n_t = 0  # observations first met with a unigram / bigram / trigram pattern (lower bounds)
        for strs, p in zip(expand_patterns(patterns, cols, lengths, name), patterns):
            # ids for the distinct strings only, then one C-level map over all tokens
            before = len(index)
            distinct = dict.fromkeys(strs)
            local = dict(zip(distinct, [index.setdefault(s, len(index)) for s in distinct]))
            obs_ids.append(np.fromiter(map(local.__getitem__, strs), dtype=id_type, count=len(strs)))
            if check is not None:
                new = len(index) - before
                n_u += new if p.kind & UNIGRAM else 0
                n_b += new if p.kind & BIGRAM else 0
                n_t += new if p.kind & TRIGRAM else 0
                check(n_u, n_b, len(index), len(obs_ids), n_t)
        # number observations by decreasing frequency: the weights read at every
        # position then crowd into few cache lines (gradient ~5 % faster on CoNLL-2000)
        counts = np.zeros(len(index), dtype=np.int64)
        for ids in obs_ids:
            counts += np.bincount(ids, minlength=len(index))
        order = np.argsort(-counts, kind="stable")
        rank = np.empty(len(order), dtype=id_type)
        rank[order] = np.arange(len(order))
        obs_ids = [rank[ids] for ids in obs_ids]
        kinds = np.zeros(len(index), dtype=np.int8)
        for p, ids in zip(patterns, obs_ids):
            kinds[ids] |= p.kind
        if check is not None:
            check(int(np.count_nonzero(kinds & UNIGRAM)), int(np.count_nonzero(kinds & BIGRAM)), len(index), None,
                  int(np.count_nonzero(kinds & TRIGRAM)))
        # the distinct strings were made among millions of short-lived ones: copy them
        # out into one buffer so that the allocator's pages holding the short-lived ones
        # empty and go back to the system
        strings = list(index)
        strs = distinct = local = index = None
        observations = StringTable.of([strings[i] for i in order])
        strings = None
        space = cls(patterns, observations, kinds, list(labels), n_cols)
        return space, space._encode_ids(obs_ids, lengths, gold)

    def encode(self, X, y=None, name: str = "<input>") -> EncodedCorpus:
        """Encode sequences with this feature space (unknown observations -> -1).

        Labels unseen in training get id -1 (they never match a prediction).
        """
        cols, lengths = _columns(X, self.n_columns)
        get = self.obs_index.get
        obs_ids = [np.fromiter(map(get, strs, repeat(-1)), dtype=np.int64, count=len(strs))
                   for strs in expand_patterns(self.patterns, cols, lengths, name)]
        n = sum(lengths)
        if y is None:
            gold = np.full(n, -1, dtype=np.int64)
        else:
            lget = self.label_index.get
            gold = np.fromiter((lget(lab, -1) for seq in y for lab in seq), dtype=np.int64, count=n)
        return self._encode_ids(obs_ids, lengths, gold)

    def _encode_ids(self, obs_ids, lengths, gold) -> EncodedCorpus:
        n = sum(lengths)

        def base(pattern_ids, offsets, dtype=np.int64):
            out = allocate((n, len(pattern_ids)), dtype, "the encoded corpus (feature offsets of every token)")
            for j, i in enumerate(pattern_ids):
                ids = obs_ids[i]
                out[:, j] = np.where(ids >= 0, offsets[np.maximum(ids, 0)], -1) if len(offsets) else -1
            return out

        seq_offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
        np.cumsum(lengths, out=seq_offsets[1:])
        return EncodedCorpus(seq_offsets, base(self.unigram_patterns, self.unigram_offset, unigram_base_type(self)),
                             base(self.bigram_patterns, self.bigram_offset), gold,
                             trigram_base=base(self.trigram_patterns, self.trigram_offset), unigram_states=self.ustates)

    # ------------------------------------------------------------------ pruning
    def compact(self, theta: np.ndarray) -> tuple["FeatureSpace", np.ndarray]:
        """Drop observations whose features are all zero: ``(space, theta)`` smaller, same model.
        With seen states, the zero weights of the unigram blocks go too (an observation whose
        unigram block empties keeps its other blocks)."""
        if self.seen_states:
            return self._compact_seen(theta)
        L = self.n_labels
        keep = np.zeros(len(self.kinds), dtype=bool)
        u = self.unigram_offset >= 0
        if self.n_unigram_obs:
            ublock = theta[: self.bigram_start].reshape(self.n_unigram_obs, L)
            keep[u] |= (ublock != 0).any(axis=1)
        b = self.bigram_offset >= 0
        if self.n_bigram_obs:
            bblock = theta[self.bigram_start: self.trigram_start].reshape(self.n_bigram_obs, L * L)
            keep[b] |= (bblock != 0).any(axis=1)
        tr = self.trigram_offset >= 0
        if self.n_trigram_obs:
            tblock = theta[self.trigram_start:].reshape(self.n_trigram_obs, L ** 3)
            keep[tr] |= (tblock != 0).any(axis=1)
        new_kinds = self.kinds[keep].copy()
        # an observation kept for one kind only still carries both blocks if it had both
        space = FeatureSpace(self.patterns, self.observations.select(keep), new_kinds, self.labels, self.n_columns,
                             self.allowed)
        new_theta = allocate(space.n_params, np.float64, "the compacted CRF weights", zero=True)
        ku = keep & u
        if self.n_unigram_obs:
            src = theta[: self.bigram_start].reshape(-1, L)[ku[u]]
            new_theta[: space.bigram_start] = src.ravel()
        kb = keep & b
        if self.n_bigram_obs:
            src = theta[self.bigram_start: self.trigram_start].reshape(-1, L * L)[kb[b]]
            new_theta[space.bigram_start: space.trigram_start] = src.ravel()
        kt = keep & tr
        if self.n_trigram_obs:
            src = theta[self.trigram_start:].reshape(-1, L ** 3)[kt[tr]]
            new_theta[space.trigram_start:] = src.ravel()
        return space, new_theta

    def _compact_seen(self, theta: np.ndarray) -> tuple["FeatureSpace", np.ndarray]:
        L = self.n_labels
        nz = theta[: self.bigram_start] != 0
        u_nz = np.add.reduceat(nz, self.state_ptr[:-1]) if self.n_unigram_obs else np.zeros(0, dtype=np.int64)
        kinds = self.kinds.copy()
        u = np.flatnonzero(self.unigram_offset >= 0)
        kinds[u[u_nz == 0]] &= ~np.int8(UNIGRAM)
        keep = np.zeros(len(kinds), dtype=bool)
        keep[u] = u_nz > 0
        for offsets, lo, hi, size in ((self.bigram_offset, self.bigram_start, self.trigram_start, L * L),
                                      (self.trigram_offset, self.trigram_start, self.n_params, L ** 3)):
            has = offsets >= 0
            if has.any():
                keep[has] |= (theta[lo:hi].reshape(-1, size) != 0).any(axis=1)
        keep &= kinds != 0
        counts = u_nz[keep[u] & (u_nz > 0)]
        ptr = np.zeros(counts.shape[0] + 1, dtype=np.int64)
        np.cumsum(counts, out=ptr[1:])
        kept_u = np.repeat(keep[u], np.diff(self.state_ptr)) & nz
        space = FeatureSpace(self.patterns, self.observations.select(keep), kinds[keep],
                             self.labels, self.n_columns, self.allowed, state_ptr=ptr,
                             state_labels=self.state_labels[kept_u])
        new_theta = allocate(space.n_params, np.float64, "the compacted CRF weights", zero=True)
        new_theta[: space.bigram_start] = theta[: self.bigram_start][kept_u]
        for offsets, lo, hi, nlo, size in ((self.bigram_offset, self.bigram_start, self.trigram_start,
                                            space.bigram_start, L * L),
                                           (self.trigram_offset, self.trigram_start, self.n_params,
                                            space.trigram_start, L ** 3)):
            has = offsets >= 0
            if has.any():
                src = theta[lo:hi].reshape(-1, size)[keep[has]]
                new_theta[nlo: nlo + src.size] = src.ravel()
        return space, new_theta

    def describe(self, theta: np.ndarray):
        """Yield ``(observation, prev_label or None, label, weight)`` for every non-zero feature;
        a trigram feature's prev_label is the pair of labels before (a tuple)."""
        L = self.n_labels
        for o, s in enumerate(self.observations):
            off = self.unigram_offset[o]
            if off >= 0:
                if self.seen_states:
                    for k in range(off, int(self.ustates[off] >> 32)):
                        if theta[k] != 0:
                            yield s, None, self.labels[self.state_labels[k]], float(theta[k])
                else:
                    for yy in np.flatnonzero(theta[off: off + L]):
                        yield s, None, self.labels[yy], float(theta[off + yy])
            off = self.bigram_offset[o]
            if off >= 0:
                for k in np.flatnonzero(theta[off: off + L * L]):
                    yield s, self.labels[k // L], self.labels[k % L], float(theta[off + k])
            off = self.trigram_offset[o]
            if off >= 0:
                lab = self.labels
                for k in np.flatnonzero(theta[off: off + L ** 3]):
                    yield s, (lab[k // (L * L)], lab[k // L % L]), lab[k % L], float(theta[off + k])
