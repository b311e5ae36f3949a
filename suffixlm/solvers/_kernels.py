"""Small numba kernels of the solvers: the vector steps of a proximal-gradient iteration,
fused and in parallel. Sums run over a fixed number of blocks, so results do not depend
on the thread count (and no BLAS: its threads fight numba's on 2 cores)."""

import numpy as np

from .._jit import njit, prange

_BLOCKS = 64


@njit(cache=True, parallel=True)
def bound_terms(g, x, y, metric, weighted):
    """(sum_i m_i g_i (x_i - y_i), sum_i m_i (x_i - y_i)^2), m = metric if weighted else 1:
    the two terms of the quadratic upper bound at x around y."""
    n = x.shape[0]
    lin = np.zeros(_BLOCKS)
    quad = np.zeros(_BLOCKS)
    for b in prange(_BLOCKS):
        s1 = 0.0
        s2 = 0.0
        for i in range(b * n // _BLOCKS, (b + 1) * n // _BLOCKS):
            d = x[i] - y[i]
            m = metric[i] if weighted else 1.0
            s1 += m * g[i] * d
            s2 += m * d * d
        lin[b] = s1
        quad[b] = s2
    t1 = 0.0
    t2 = 0.0
    for b in range(_BLOCKS):
        t1 += lin[b]
        t2 += quad[b]
    return t1, t2


@njit(cache=True, parallel=True)
def gradient_step(y, g, L, nonneg, out):
    """out = y - g / L, projected on out >= 0 when nonneg."""
    for i in prange(y.shape[0]):
        v = y[i] - g[i] / L
        if nonneg and v < 0.0:
            v = 0.0
        out[i] = v


@njit(cache=True, parallel=True)
def extrapolate(x_new, x, beta, out):
    """out = x_new + beta (x_new - x) (the momentum step)."""
    for i in prange(x.shape[0]):
        out[i] = x_new[i] + beta * (x_new[i] - x[i])
