"""Allowed label pairs: the states of second-order models and forbidden transitions.

A second-order CRF (Sha & Pereira 2003) labels position t >= 1 with the pair of tags
(y_{t-1}, y_t); successive pairs share their middle tag. Its states are the *allowed*
pairs: by default those seen in the training data (``forbid="unseen"``), so that, as in
Sha & Pereira's chunker, a pair that never occurs ("O I" in IOB chunking) is
impossible. The same restriction is available to first-order models (``forbid``): the
forbidden pairs then get probability zero in training and in decoding.

``forbid`` values (``CRF(forbid=...)``, ``suffixlm crf train --forbid``):

- ``"none"``: every pair allowed;
- ``"unseen"``: every pair not seen in the training labels is forbidden;
- a path: a text file with one forbidden pair ``PREV LABEL`` a line (``#`` comments and
  blank lines skipped), e.g. ``O I-NP``;
- a list of ``(prev, label)`` pairs.

:class:`PairStructure` turns an allowed mask into the arrays of ``crf._order2_kernels``.
"""

from __future__ import annotations

import os

import numpy as np

__all__ = ["PairStructure", "allowed_pairs", "seen_pairs", "read_forbidden", "FORBID_CHOICES", "MAX_TRIPLES"]

FORBID_CHOICES = ("none", "unseen")

#: Most transitions (allowed label triples) a pair-state model may have: a position costs
#: that many multiply-adds, and a trigram block that many weights are read.
MAX_TRIPLES = 1 << 24


class PairStructure:
    """The allowed pairs of ``L`` labels and the transitions between them.

    pairs int64 (P,): allowed pairs y' * L + y, numbered by their *second* label, then
    their first, so that the pairs (a, b) that may precede a pair (b, c) are one
    contiguous range of numbers (the kernels' inner loops are then contiguous dot products
    and updates, which vectorise); pair_pos int64 (L*L,): each pair's number, -1 if
    forbidden; pred_ptr int64 (P + 1,), pred_j / pred_r int64 (n3,): for pair j = (b, c),
    the pairs (a, b) that may precede it (their numbers, consecutive: pred_j[pred_ptr[j]]
    + 0, 1, ...) and the triples' offsets (a L + b) L + c, a increasing."""

    def __init__(self, L: int, allowed: np.ndarray):
        allowed = np.asarray(allowed, dtype=np.bool_).reshape(L, L)
        self.L = L
        k = np.flatnonzero(allowed.ravel()).astype(np.int64)
        self.pairs = k[np.lexsort((k // L, k % L))]  # by second label, then first
        P = self.pairs.shape[0]
        if P == 0:
            raise ValueError("no label pair is allowed: every labelling of two tokens or more is impossible")
        indeg = allowed.sum(axis=0)  # pairs (a, b) ending in b
        outdeg = allowed.sum(axis=1)  # pairs (b, c) starting with b
        n3 = int((indeg.astype(np.int64) * outdeg).sum())
        if n3 > MAX_TRIPLES:
            raise ValueError(f"{L} labels with {P:,} allowed pairs make {n3:,} label triples (a position's "
                             f"transitions), more than {MAX_TRIPLES:,}: forbid pairs (forbid='unseen') or use "
                             "fewer labels")
        self.pair_pos = np.full(L * L, -1, dtype=np.int64)
        self.pair_pos[self.pairs] = np.arange(P, dtype=np.int64)
        b = self.pairs // L
        counts = indeg[b].astype(np.int64)  # the predecessors of pair (b, c): indeg(b)
        self.pred_ptr = np.zeros(P + 1, dtype=np.int64)
        np.cumsum(counts, out=self.pred_ptr[1:])
        # the pairs (a, b) ending in b: numbers in_ptr[b] .. in_ptr[b + 1] - 1, a increasing
        in_ptr = np.zeros(L + 1, dtype=np.int64)
        np.cumsum(indeg, out=in_ptr[1:])
        self.pred_j = (np.repeat(in_ptr[b] - self.pred_ptr[:-1], counts)
                       + np.arange(n3, dtype=np.int64)).astype(np.int64)
        self.pred_r = (self.pairs[self.pred_j] * L + np.repeat(self.pairs % L, counts)).astype(np.int64)
        self.n3 = n3

    @property
    def n_pairs(self) -> int:
        return int(self.pairs.shape[0])

    def args(self) -> tuple:
        """(pairs, pred_ptr, pred_j, pred_r): the kernels' arguments."""
        return self.pairs, self.pred_ptr, self.pred_j, self.pred_r


def seen_pairs(labels: np.ndarray, seq_offsets: np.ndarray, L: int) -> np.ndarray:
    """bool (L*L,): the label pairs of consecutive tokens of the (gold) labels."""
    labels = np.asarray(labels, dtype=np.int64)
    starts = np.zeros(labels.shape[0], dtype=bool)
    starts[np.asarray(seq_offsets[:-1], dtype=np.int64)[np.diff(seq_offsets) > 0]] = True
    follow = ~starts[1:]
    prev, cur = labels[:-1][follow], labels[1:][follow]
    ok = (prev >= 0) & (cur >= 0)
    out = np.zeros(L * L, dtype=np.bool_)
    out[prev[ok] * L + cur[ok]] = True
    return out


def read_forbidden(path: str | os.PathLike) -> list[tuple[str, str]]:
    """The pairs of a forbidden-pairs file (one ``PREV LABEL`` a line; ``#`` comments)."""
    out = []
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            parts = s.split()
            if len(parts) != 2:
                raise ValueError(f"{path}:{n}: expected two labels 'PREV LABEL' (a forbidden pair), got {s!r}")
            out.append((parts[0], parts[1]))
    return out


def allowed_pairs(forbid, labels: list[str], gold=None, seq_offsets=None) -> np.ndarray | None:
    """The allowed mask (bool (L*L,)) that ``forbid`` (see the module doc) gives for the
    model's labels; None when every pair is allowed (``"none"``). ``gold``/``seq_offsets``:
    the training labels (ids), needed by ``"unseen"``, and checked against the forbidden
    pairs: a training labelling that uses one is a ValueError naming it."""
    L = len(labels)
    if forbid is None or (isinstance(forbid, str) and forbid == "none"):
        return None
    if isinstance(forbid, str) and forbid == "unseen":
        if gold is None:
            raise ValueError("forbid='unseen' needs the training labels")
        return seen_pairs(gold, seq_offsets, L)
    if isinstance(forbid, (str, os.PathLike)):
        pairs = read_forbidden(forbid)
        where = f"forbid file {os.fspath(forbid)}"
    else:
        try:
            pairs = [tuple(p) for p in forbid]
        except TypeError:
            raise TypeError(f"forbid must be 'none', 'unseen', a file path or a list of (prev, label) pairs, "
                            f"not {forbid!r}") from None
        where = "forbid"
    index = {lab: i for i, lab in enumerate(labels)}
    allowed = np.ones(L * L, dtype=np.bool_)
    for p in pairs:
        if len(p) != 2 or not all(isinstance(x, str) for x in p):
            raise ValueError(f"{where}: {p!r} is not a pair of labels (prev, label)")
        a, b = index.get(p[0]), index.get(p[1])
        if a is None or b is None:
            continue  # a label the training data does not have: nothing to forbid
        allowed[a * L + b] = False
    if gold is not None:
        used = seen_pairs(gold, seq_offsets, L) & ~allowed
        if used.any():
            k = int(np.flatnonzero(used)[0])
            raise ValueError(f"{where}: the training labels use the forbidden pair {labels[k // L]} "
                             f"{labels[k % L]}")
    return allowed
