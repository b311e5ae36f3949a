"""Sample text from a back-off n-gram model (an ARPA file): sentences drawn from the
model's distribution, from ``<s>`` until ``</s>``, reproducible from a seed.

The drawing is a numba kernel (``_sample_kernels.draw_words``, exact nested rejection
sampling through the back-off chain), so tens of millions of words take minutes.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np

from .backoff.arpa import BackoffLM
from .corpus import BOS_ID, EOS_ID


class BackoffSampler:
    """Draw sentences from ``lm`` (a ``BackoffLM``).

    Learned arrays (see ``_sample_kernels.draw_words``): every n-gram of every order is an
    entry, orders laid end to end, each sorted by its word rows, so the successors of a
    context are one contiguous range sorted by word."""

    def __init__(self, lm: BackoffLM):
        self.lm = lm
        V = len(lm.vocab)
        N = lm.order
        rows_by_order, prob_by_order, offsets = [], [], [0]
        for n, (rows, lp, _, _) in enumerate(lm.ngrams, start=1):
            order = np.lexsort(rows.T[::-1]) if len(rows) else np.zeros(0, dtype=np.int64)
            rows = rows[order]
            p = np.power(10.0, lp[order].astype(np.float64))
            p[rows[:, -1] == BOS_ID] = 0.0  # <s> is never predicted (-99 in ARPA files)
            p[~np.isfinite(p)] = 0.0
            rows_by_order.append(rows)
            prob_by_order.append(p)
            offsets.append(offsets[-1] + len(rows))
        E = offsets[-1]
        root = E
        # keys[n-1]: prefix entry * (V) + word of order n, sorted (lexicographic rows)
        keys: list[np.ndarray] = []
        link = np.full(E + 1, root, dtype=np.int64)
        succ_start = np.zeros(E + 1, dtype=np.int64)
        succ_end = np.zeros(E + 1, dtype=np.int64)
        word = np.concatenate([r[:, -1] for r in rows_by_order]).astype(np.int32)
        cum = np.zeros(E, dtype=np.float64)
        mass = np.zeros(E + 1, dtype=np.float64)

        def lookup(rows):
            """Entry ids of the k-grams ``rows`` (-1 where one is not in the model)."""
            m, k = rows.shape
            ids = np.full(m, -1, dtype=np.int64)
            if m == 0:
                return ids
            cur = np.searchsorted(keys[0], rows[:, 0].astype(np.int64))
            ok = (cur < len(keys[0])) & (keys[0][np.minimum(cur, len(keys[0]) - 1)] == rows[:, 0])
            for j in range(1, k):
                if j >= len(keys):
                    ok[:] = False
                    break
                if len(keys[j]) == 0:
                    ok[:] = False
                    break
                q = cur * V + rows[:, j]
                cur = np.searchsorted(keys[j], q)
                ok &= (cur < len(keys[j])) & (keys[j][np.minimum(cur, len(keys[j]) - 1)] == q)
            ids[ok] = (cur + offsets[k - 1])[ok]
            return ids

        for n in range(1, N + 1):
            rows = rows_by_order[n - 1]
            if n == 1:
                keys.append(rows[:, 0].astype(np.int64))
                parent = np.full(len(rows), root, dtype=np.int64)
                local_parent = np.zeros(len(rows), dtype=np.int64)
            else:
                pid = lookup(rows[:, :-1])
                if len(pid) and pid.min() < 0:
                    raise ValueError(f"the model is not prefix-closed: an {n}-gram's context is not listed")
                local_parent = pid - offsets[n - 2]
                keys.append(local_parent * V + rows[:, -1])
                parent = pid
            # suffix links: the longest proper suffix that is an entry
            lk = np.full(len(rows), root, dtype=np.int64)
            for d in range(n - 1, 0, -1):  # suffix of length d, longest first
                need = lk == root
                if not need.any():
                    break
                ids = lookup(rows[need][:, n - d:])
                lk[np.flatnonzero(need)[ids >= 0]] = ids[ids >= 0]
            link[offsets[n - 1]:offsets[n]] = lk
            # successor ranges and cumulative mass per context
            p = prob_by_order[n - 1]
            if len(rows):
                new = np.ones(len(rows), dtype=bool)
                new[1:] = parent[1:] != parent[:-1]
                starts = np.flatnonzero(new)
                ends = np.append(starts[1:], len(rows))
                ctx = parent[starts]
                succ_start[ctx] = starts + offsets[n - 1]
                succ_end[ctx] = ends + offsets[n - 1]
                c = np.cumsum(p)
                base = np.repeat(np.concatenate([[0.0], c[starts[1:] - 1]]), ends - starts)
                cum[offsets[n - 1]:offsets[n]] = c - base
                mass[ctx] = cum[offsets[n - 1] + ends - 1]
        is_node = np.zeros(E, dtype=np.bool_)
        is_node[:offsets[N - 1]] = True
        self._arrays = (word, cum, succ_start, succ_end, mass, link, is_node, root)
        start = lookup(np.array([[BOS_ID]], dtype=np.int32))[0]
        self._start = int(start) if start >= 0 else root

    def sample_ids(self, n_words: int, seed: int = 0, batch: int = 1 << 22) -> Iterator[np.ndarray]:
        """Yield int32 arrays of token ids (each sentence's words then ``</s>``), whole
        sentences, until at least ``n_words`` words (markers excluded) are out."""
        from . import _sample_kernels as K

        K.seed(int(seed))
        left = int(n_words)
        while left > 0:
            toks, got = K.draw_words(*self._arrays, self._start, EOS_ID, min(left, batch), 4 * batch + 100_000, 1000)
            left -= int(got)
            yield toks

    def sample_lines(self, n_words: int, seed: int = 0) -> Iterator[str]:
        """Yield the sampled sentences as text lines (no markers, ending in ``\\n``)."""
        words = np.array(self.lm.vocab.words + ["\n"], dtype=object)
        nl = len(self.lm.vocab.words)
        for toks in self.sample_ids(n_words, seed):
            t = np.where(toks == EOS_ID, nl, toks)
            yield " ".join(words[t].tolist()).replace(" \n ", "\n").replace(" \n", "\n")
