"""L-BFGS memory: the limited-memory inverse-Hessian approximation (Nocedal & Wright,
Algorithm 7.4, the two-loop recursion), used by OWL-QN.

The l2-penalised solver ``lbfgs`` is :func:`crf.train.owlqn.lbfgs`, OWL-QN with
``rho1 = 0``: without an l1 term it is L-BFGS with a backtracking (Armijo) line search.
"""

from __future__ import annotations

import numpy as np

from suffixlm.memory import allocate

from . import _vector_kernels as V

__all__ = ["LbfgsHistory", "SparsePairs"]


class SparsePairs:
    """The steps s of an :class:`LbfgsHistory` as an (m, n) float32 array (``np.asarray``
    makes it dense: what a checkpoint stores), kept as sparse rows."""

    def __init__(self, hist: "LbfgsHistory"):
        self._hist = hist

    @property
    def shape(self) -> tuple[int, int]:
        return (self._hist.m, self._hist.n)

    def __array__(self, dtype=None, copy=None):
        h = self._hist
        out = np.zeros((h.m, h.n), dtype=np.float32)
        for k in range(h.m):
            out[k, h.s_idx[k]] = h.s_val[k]
        return out if dtype is None else out.astype(dtype)


class LbfgsHistory:
    """The last ``m`` pairs s_k = x_{k+1} - x_k, y_k = g_{k+1} - g_k (float32 (n,)).

    The pairs are stored in single precision (dot products are accumulated in
    double): the inverse-Hessian approximation does not need more, and it halves
    the memory and the memory traffic of the two-loop recursion, which on
    millions of features costs as much as the gradient itself. The steps s are
    kept sparse (``s_idx`` int32 / ``s_val`` float32 per slot): under an l1 penalty
    x moves only where OWL-QN's direction is non-zero, a small part of the features
    (CoNLL-2000: at most 12 % of 7.4M), so they cost a fraction of a dense row; the
    next step is written densely into one work row (:meth:`slot`) and compressed on
    :meth:`commit`.

    The two-loop recursion is fused so that every dense pass over the vectors does
    one update and the next dot product.
    """

    def __init__(self, n: int, m: int = 5):
        self.m = m
        self.n = n
        self._itype = np.int32 if n < 2**31 else np.int64
        self.s_idx = [np.zeros(0, dtype=self._itype) for _ in range(m)]
        self.s_val = [np.zeros(0, dtype=np.float32) for _ in range(m)]
        self._work = None  # dense row of the next s, made when a dense step needs it
        self.y = allocate((m, n), np.float32, f"L-BFGS memory ({m} gradient differences)", zero=True)
        self.rho = np.zeros(m)
        self.gamma = 1.0
        self.count = 0  # pairs stored so far
        self.head = 0  # next slot

    @property
    def s(self) -> SparsePairs:
        """The steps as an (m, n) array-like (dense through ``np.asarray``)."""
        return SparsePairs(self)

    def set_pairs(self, s, y, rho, gamma: float, count: int, head: int) -> None:
        """Restore a memory (s, y float32 (m, n), rho float64 (m,)), e.g. from a checkpoint."""
        for k in range(self.m):
            row = np.asarray(s[k], dtype=np.float32)
            self.s_idx[k] = np.flatnonzero(row).astype(self._itype)
            self.s_val[k] = row[self.s_idx[k]]
        self.y[...] = y
        self.rho[...] = rho
        self.gamma, self.count, self.head = gamma, count, head

    def push_from(self, x_new, x_old, g_new, g_old) -> bool:
        """Store s, y computed from two iterates; skipped (False) when s.y <= 0."""
        s, y = self.slot()
        sy, yy = V.history_pair(x_new, x_old, g_new, g_old, s, y)
        return self.commit(sy, yy)

    def slot(self):
        """(s, y) arrays of the next pair, for kernels that write it themselves (then :meth:`commit`)."""
        if self._work is None:
            self._work = allocate(self.n, np.float32, "L-BFGS step", zero=True)
        return self._work, self.y[self.head]

    def release_slot(self) -> None:
        """Free the step stored in the next slot: once the direction is made it is dead in
        every case (the next :meth:`commit` overwrites it, or drops it when skipped with the
        memory full, or the slot was empty)."""
        self.s_idx[self.head] = np.zeros(0, dtype=self._itype)
        self.s_val[self.head] = np.zeros(0, dtype=np.float32)

    def commit_sparse(self, idx, val, sy: float, yy: float) -> bool:
        """Accept the pair whose y was written into :meth:`slot` and whose s is given sparse
        (idx int32/int64, val float32: s is 0 elsewhere); skipped as :meth:`commit`."""
        return self._accept(sy, yy, idx, val)

    def commit(self, sy: float, yy: float) -> bool:
        """Accept the pair written into :meth:`slot`; skipped (False) when s.y <= 0.

        A skipped pair has overwritten the oldest one, which is dropped.
        """
        return self._accept(sy, yy, None, None)

    def _accept(self, sy, yy, idx, val) -> bool:
        k = self.head
        if not (sy > 1e-300 and yy > 0):
            if self.count == self.m:
                self.count -= 1
            return False
        self.s_idx[k] = self.s_val[k] = None  # free the old row before the new one is made
        if idx is None:
            nnz = int(np.count_nonzero(self._work))
            idx = np.empty(nnz, dtype=self._itype)
            val = np.empty(nnz, dtype=np.float32)
            V.compress(self._work, idx, val)
        self.s_idx[k], self.s_val[k] = idx, val
        self.rho[k] = 1.0 / sy
        self.gamma = sy / yy
        self.head = (k + 1) % self.m
        self.count = min(self.count + 1, self.m)
        return True

    def direction(self, g, out, constrain: bool = False, x=None, rho1: float = 0.0) -> float:
        """out = -H g (two-loop recursion, H0 = (s.y / y.y) I of the newest pair).

        With ``x`` given, g is the smooth gradient at x and the recursion runs on the
        pseudo-gradient of g + rho1 |x|_1 (computed where it is read). With ``constrain``
        the components of out whose sign is not that of -g (-pg) are zeroed (OWL-QN).
        Returns g . out (pg . out).
        """
        pseudo = x is not None
        xx = x if pseudo else g
        if self.count == 0:
            V.pseudo_copy(xx, g, rho1, pseudo, out, True)
            if constrain:
                return V.pseudo_constrain(out, xx, g, rho1, pseudo)
            return V.pseudo_dot(xx, g, rho1, pseudo, out)
        order = [(self.head - 1 - i) % self.m for i in range(self.count)]  # newest first
        alphas = np.zeros(self.m)
        gamma = self.gamma
        # q = g; alpha_k = rho_k s_k.q; q -= alpha_k y_k   (newest -> oldest)
        V.pseudo_copy(xx, g, rho1, pseudo, out, False)
        d = V.sparse_dot(self.s_idx[order[0]], self.s_val[order[0]], out)
        for i, k in enumerate(order):
            alphas[k] = self.rho[k] * d
            if i + 1 < len(order):
                V.axpy(-alphas[k], self.y[k], out)
                d = V.sparse_dot(self.s_idx[order[i + 1]], self.s_val[order[i + 1]], out)
            else:
                d = V.axpy_dense_dot(-alphas[k], self.y[k], out, self.y[order[-1]])
        # r = gamma q is kept implicit: out holds r / gamma.
        # beta = rho_k y_k.r; r += (alpha_k - beta) s_k   (oldest -> newest)
        rev = order[::-1]
        for i, k in enumerate(rev):
            beta = self.rho[k] * gamma * d
            coef = (alphas[k] - beta) / gamma
            V.sparse_axpy(coef, self.s_idx[k], self.s_val[k], out)
            if i + 1 < len(rev):
                d = V.dot(self.y[rev[i + 1]], out)
            else:
                return V.scale_constrain(out, -gamma, xx, g, rho1, pseudo, constrain)
        return 0.0  # not reached
