"""SRILM's back-off index of an n-gram model: the one structure that scoring
(``BackoffLM.query``, ``suffixlm ppl --arpa``), pruning, mixing and the Kneser-Ney base
measure of the log-linear model walk.

* Context nodes: every context of an explicit n-gram, every n-gram that lists a
  back-off weight, and every suffix of one (SRILM's reversed-context trie). Node 0 is
  the empty context; the node of ``h1 .. hk`` (oldest word first) is the child of the
  node of ``h2 .. hk`` by the word ``h1``, found in an open-addressing hash map under
  the key ``parent * V + h1``. ``parent``, ``word`` and ``depth`` give each node's
  place in the trie; ``node_bow`` its ``float32`` log10 back-off weight as the model
  lists it (0 where it lists none).
* Probabilities: a second map, key ``context_node * V + word`` -> the n-gram's
  position in the concatenation of every order's rows (``lp``, ``float32`` log10, as
  the model lists them: ``-99`` stays -99).

Both maps are :class:`Int64Map`, kept at most half full (the load
``_hash_kernels`` asks for). The back-off walk is SRILM's ``Ngram::wordProbBO``
(``_backoff_kernels.word_prob_bo``: single-precision sums in SRILM's order); KenLM's
queries run on the probing table of :mod:`suffixlm.table` instead, whose records hold
the backed-off values KenLM sums in its own order.
"""

from __future__ import annotations

import numpy as np

__all__ = ["BackoffIndex", "Int64Map"]


class Int64Map:
    """Open-addressing hash map int64 key (>= 0) -> int32 value (see
    ``_hash_kernels.hash_insert``), grown so that it stays at most half full."""

    def __init__(self, capacity: int):
        size, self.shift = self._size(capacity)
        self.keys = np.full(size, -1, dtype=np.int64)
        self.vals = np.zeros(size, dtype=np.int32)
        self.n = 0

    @staticmethod
    def _size(capacity: int) -> tuple[int, int]:
        size = 16
        while size < 2 * capacity + 2:
            size *= 2
        return size, 64 - (size.bit_length() - 1)

    def _room(self, extra: int) -> None:
        from .. import _hash_kernels as K

        if 2 * (self.n + extra) + 2 > len(self.keys):
            size, shift = self._size(self.n + extra)
            self.keys, self.vals = K.hash_rehash(self.keys, self.vals, size, shift)
            self.shift = shift

    def insert(self, keys: np.ndarray, next_id: int, chunk: int = 1 << 18) -> tuple[np.ndarray, int]:
        """Values of ``keys``; new keys get ``next_id``, ``next_id + 1``, ... Returns (values, next id)."""
        from .. import _hash_kernels as K

        keys = np.ascontiguousarray(keys, dtype=np.int64)
        out = np.empty(len(keys), dtype=np.int64)
        for a in range(0, len(keys), chunk):
            part = keys[a:a + chunk]
            self._room(len(part))
            out[a:a + chunk], new_next = K.hash_insert(self.keys, self.vals, self.shift, part, int(next_id))
            self.n += new_next - next_id
            next_id = new_next
        return out, int(next_id)


class BackoffIndex:
    """The context trie and probability map of a back-off model (``BackoffLM``); see
    the module docstring. Built once per model (``BackoffLM.index``) and read-only.

    Attributes: ``V``, ``order``; ``nodes`` / ``probs`` (:class:`Int64Map`);
    ``parent`` int32, ``word`` int32, ``depth`` int16 (per node; ``n_nodes``);
    ``node_bow`` float32; ``lp`` float32 (every order's log10 probabilities, in the
    model's row order); ``offsets`` int64[order + 1] (order n's rows are
    ``offsets[n-1]:offsets[n]``). A model listing an n-gram twice is refused
    (ValueError).
    """

    def __init__(self, lm):
        from .. import _backoff_kernels as K

        grams = lm.ngrams
        V = len(lm.vocab)
        N = len(grams)
        self.V, self.order = V, N
        self.offsets = np.zeros(N + 1, dtype=np.int64)
        np.cumsum([len(lp) for _, lp, _, _ in grams], out=self.offsets[1:])
        total = int(self.offsets[-1])

        # nodes: the n-grams listing a back-off weight, the contexts of explicit
        # n-grams, and all their suffixes (SRILM's trie creates them on the way)
        cap = 1 + sum(n * (int(grams[n - 1][3].sum()) + len(grams[n][1])) for n in range(1, N))
        self.nodes = Int64Map(cap)
        parent = np.zeros(cap, dtype=np.int32)
        word = np.full(cap, -1, dtype=np.int32)
        depth = np.zeros(cap, dtype=np.int16)
        node_bow = np.zeros(cap, dtype=np.float32)
        m = self.nodes
        next_id = 1
        for n in range(1, N):
            rows, _, bow, hb = grams[n - 1]
            ids, next_id = K.insert_nodes(np.ascontiguousarray(rows[hb]), n, V, m.keys, m.vals, m.shift, next_id,
                                          parent, word, depth)
            node_bow[ids] = bow[hb]
            _, next_id = K.insert_nodes(np.ascontiguousarray(grams[n][0][:, :n]), n, V, m.keys, m.vals, m.shift,
                                        next_id, parent, word, depth)
        m.n = next_id - 1
        self.n_nodes = next_id
        self.parent, self.word, self.depth = parent[:next_id].copy(), word[:next_id].copy(), depth[:next_id].copy()
        self.node_bow = node_bow[:next_id].copy()
        del parent, word, depth, node_bow

        self.probs = p = Int64Map(total)
        for n in range(1, N + 1):
            rows = grams[n - 1][0]
            ctx = np.zeros(len(rows), dtype=np.int64) if n == 1 else self.find_nodes(rows, n - 1)
            last = np.ascontiguousarray(rows[:, -1], dtype=np.int64)
            dup = K.insert_probs(ctx, last, V, p.keys, p.vals, p.shift, int(self.offsets[n - 1]))
            if dup:
                raise ValueError(f"model lists {dup} {n}-gram(s) twice")
        p.n = total
        self.lp = np.concatenate([lp for _, lp, _, _ in grams]).astype(np.float32)

    def find_nodes(self, rows: np.ndarray, ncols: int) -> np.ndarray:
        """int64[m]: the node of each context ``rows[:, :ncols]`` (oldest word first), -1
        where the model has none."""
        from .. import _backoff_kernels as K

        return K.find_nodes(np.ascontiguousarray(rows), ncols, self.V, self.nodes.keys, self.nodes.vals,
                            self.nodes.shift)

    def query(self, tokens: np.ndarray, starts: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """SRILM's ``wordProbBO`` at ``positions`` of ``tokens`` (int64 model ids; each
        token's context runs back to ``starts[position]``, its sentence's ``<s>``, and
        to at most ``order - 1`` words): (log10 p float64[n], length of the n-gram used
        int64[n], 0 = none)."""
        from .. import _backoff_kernels as K

        return K.backoff_query(tokens, starts, positions, self.order, self.V, self.nodes.keys, self.nodes.vals,
                               self.nodes.shift, self.node_bow, self.probs.keys, self.probs.vals, self.probs.shift,
                               self.lp)
