"""Small numba kernels of the solvers."""

from numba import njit


@njit(cache=True)
def weighted_dot(a, b, metric):
    """sum_i metric[i] a[i] b[i] (no BLAS: its threads fight numba's on 2 cores)."""
    s = 0.0
    for i in range(a.shape[0]):
        s += metric[i] * a[i] * b[i]
    return s
