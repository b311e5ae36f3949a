"""L-BFGS memory: the limited-memory inverse-Hessian approximation (Nocedal & Wright,
Algorithm 7.4, the two-loop recursion), used by OWL-QN.

The l2-penalised solver ``lbfgs`` is :func:`crf.train.owlqn.lbfgs`, OWL-QN with
``rho1 = 0``: without an l1 term it is L-BFGS with a backtracking (Armijo) line search.
"""

from __future__ import annotations

import numpy as np

from . import _vector_kernels as V

__all__ = ["LbfgsHistory"]


class LbfgsHistory:
    """The last ``m`` pairs s_k = x_{k+1} - x_k, y_k = g_{k+1} - g_k (float32 (n,)).

    The pairs are stored in single precision (dot products are accumulated in
    double): the inverse-Hessian approximation does not need more, and it halves
    the memory and the memory traffic of the two-loop recursion, which on
    millions of features costs as much as the gradient itself.

    The two-loop recursion is fused so that every pass over the vectors does one
    update and the next dot product (about 2m + 1 passes instead of 4m + 2).
    """

    def __init__(self, n: int, m: int = 5):
        self.m = m
        self.s = np.zeros((m, n), dtype=np.float32)
        self.y = np.zeros((m, n), dtype=np.float32)
        self.rho = np.zeros(m)
        self.gamma = 1.0
        self.count = 0  # pairs stored so far
        self.head = 0  # next slot

    def push_from(self, x_new, x_old, g_new, g_old) -> bool:
        """Store s, y computed from two iterates; skipped (False) when s.y <= 0."""
        k = self.head
        sy, yy = V.history_pair(x_new, x_old, g_new, g_old, self.s[k], self.y[k])
        return self.commit(sy, yy)

    def slot(self):
        """(s, y) arrays of the next pair, for kernels that write it themselves (then :meth:`commit`)."""
        return self.s[self.head], self.y[self.head]

    def commit(self, sy: float, yy: float) -> bool:
        """Accept the pair written into :meth:`slot`; skipped (False) when s.y <= 0.

        A skipped pair has overwritten the oldest one, which is dropped.
        """
        k = self.head
        if not (sy > 1e-300 and yy > 0):
            if self.count == self.m:
                self.count -= 1
            return False
        self.rho[k] = 1.0 / sy
        self.gamma = sy / yy
        self.head = (k + 1) % self.m
        self.count = min(self.count + 1, self.m)
        return True

    def direction(self, g, out, constrain: bool = False) -> float:
        """out = -H g (two-loop recursion, H0 = (s.y / y.y) I of the newest pair).

        With ``constrain`` the components of out whose sign is not that of -g are
        zeroed (OWL-QN).  Returns g . out.
        """
        if self.count == 0:
            np.negative(g, out=out)
            if constrain:
                return V.constrain_direction(out, g)
            return V.dot(g, out)
        order = [(self.head - 1 - i) % self.m for i in range(self.count)]  # newest first
        alphas = np.zeros(self.m)
        gamma = self.gamma
        # q = g; alpha_k = rho_k s_k.q; q -= alpha_k y_k   (newest -> oldest)
        d = V.copy_dot(g, out, self.s[order[0]])
        for i, k in enumerate(order):
            alphas[k] = self.rho[k] * d
            nxt = self.s[order[i + 1]] if i + 1 < len(order) else self.y[order[-1]]
            d = V.axpy_dot(-alphas[k], self.y[k], out, nxt)
        # r = gamma q is kept implicit: out holds r / gamma.
        # beta = rho_k y_k.r; r += (alpha_k - beta) s_k   (oldest -> newest)
        rev = order[::-1]
        for i, k in enumerate(rev):
            beta = self.rho[k] * gamma * d
            coef = (alphas[k] - beta) / gamma
            if i + 1 < len(rev):
                d = V.axpy_dot(coef, self.s[k], out, self.y[rev[i + 1]])
            elif constrain:
                return V.axpy_scale_constrain(coef, self.s[k], out, -gamma, g)
            else:
                V.axpy_scale(coef, self.s[k], out, -gamma)
                return V.dot(g, out)
        return 0.0  # not reached
