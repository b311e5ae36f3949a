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
queries run on the probing table of :mod:`suffixlm.backoff.table` instead, whose records hold
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
        from . import _hash_kernels as K

        if 2 * (self.n + extra) + 2 > len(self.keys):
            size, shift = self._size(self.n + extra)
            self.keys, self.vals = K.hash_rehash(self.keys, self.vals, size, shift)
            self.shift = shift

    def insert(self, keys: np.ndarray, next_id: int, chunk: int = 1 << 18) -> tuple[np.ndarray, int]:
        """Values of ``keys``; new keys get ``next_id``, ``next_id + 1``, ... Returns (values, next id)."""
        from . import _hash_kernels as K

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
        grams = lm.ngrams
        V = len(lm.vocab)
        N = len(grams)
        self.V, self.order = V, N
        self.offsets = np.zeros(N + 1, dtype=np.int64)
        np.cumsum([len(lp) for _, lp, _, _ in grams], out=self.offsets[1:])
        total = int(self.offsets[-1])

        # nodes: the n-grams listing a back-off weight, the contexts of explicit
        # n-grams, and all their suffixes (SRILM's trie creates them on the way).
        # base[m-1]: the rows of length m that must be nodes (contexts of the (m+1)-grams
        # first, then the m-grams with a back-off weight); cur[m-1]: the node of each
        # one's suffix of length k, built for k = 1, 2, ... one word to the left at a time
        base = [np.concatenate([grams[m][0][:, :m], grams[m - 1][0][grams[m - 1][3]]]) for m in range(1, N)]
        self.nodes = m = Int64Map(V)
        cur = [np.zeros(len(b), dtype=np.int64) for b in base]
        parent, word, depth = [np.zeros(1, dtype=np.int32)], [np.full(1, -1, dtype=np.int32)], [0]
        next_id = 1
        for k in range(1, N):
            for j in range(k - 1, N - 1):  # the rows of length j + 1 >= k
                w = base[j][:, j + 1 - k].astype(np.int64)
                ids, new_next = m.insert(cur[j] * V + w, next_id)
                if new_next > next_id:
                    fresh = ids >= next_id
                    par = np.empty(new_next - next_id, dtype=np.int32)
                    wrd = np.empty(new_next - next_id, dtype=np.int32)
                    par[ids[fresh] - next_id] = cur[j][fresh]
                    wrd[ids[fresh] - next_id] = w[fresh]
                    parent.append(par)
                    word.append(wrd)
                    depth.append((k, new_next - next_id))
                    next_id = new_next
                cur[j] = ids
        self.n_nodes = next_id
        self.parent = np.concatenate(parent)
        self.word = np.concatenate(word)
        self.depth = np.concatenate([np.zeros(1, dtype=np.int16)] + [np.full(c, d, dtype=np.int16)
                                                                        for d, c in depth[1:]])
        self.node_bow = np.zeros(next_id, dtype=np.float32)
        for j in range(N - 1):
            _, _, bow, hb = grams[j]
            self.node_bow[cur[j][len(grams[j + 1][0]):]] = bow[hb]
        del base, parent, word, depth

        self.probs = p = Int64Map(total)
        for n in range(1, N + 1):
            rows = grams[n - 1][0]
            ctx = np.zeros(len(rows), dtype=np.int64) if n == 1 else cur[n - 2][:len(rows)]
            # a new key gets the next position, so the n-gram's own when none repeats
            _, end = p.insert(ctx * V + rows[:, -1], int(self.offsets[n - 1]))
            dup = int(self.offsets[n]) - end
            if dup:
                raise ValueError(f"model lists {dup} {n}-gram(s) twice")
        del cur
        self.lp = np.concatenate([lp for _, lp, _, _ in grams]).astype(np.float32)

    def find_nodes(self, rows: np.ndarray, ncols: int) -> np.ndarray:
        """int64[m]: the node of each context ``rows[:, :ncols]`` (oldest word first), -1
        where the model has none."""
        from . import _backoff_kernels as K

        return K.find_nodes(np.ascontiguousarray(rows), ncols, self.V, self.nodes.keys, self.nodes.vals,
                            self.nodes.shift)

    def query(self, tokens: np.ndarray, starts: np.ndarray, positions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """SRILM's ``wordProbBO`` at ``positions`` of ``tokens`` (int64 model ids; each
        token's context runs back to ``starts[position]``, its sentence's ``<s>``, and
        to at most ``order - 1`` words): (log10 p float64[n], length of the n-gram used
        int64[n], 0 = none)."""
        from . import _backoff_kernels as K

        return K.backoff_query(tokens, starts, positions, self.order, self.V, self.nodes.keys, self.nodes.vals,
                               self.nodes.shift, self.node_bow, self.probs.keys, self.probs.vals, self.probs.shift,
                               self.lp)
