"""Fused parallel vector kernels for the quasi-Newton solvers (flat float64 arrays)."""

from __future__ import annotations

import numpy as np

from suffixlm._jit import njit, prange

# FAST: re-association lets LLVM vectorise the reductions (these loops are memory-bound
# and otherwise wait on one add chain); no inf/nan assumptions
from .._inference_kernels import FAST


@njit(cache=True, parallel=True, fastmath=FAST)
def dot(a, b):
    """sum(a * b)."""
    acc = 0.0
    for i in prange(a.shape[0]):
        acc += a[i] * b[i]
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def axpy(alpha, x, y):
    """y += alpha * x (in place)."""
    for i in prange(y.shape[0]):
        y[i] += alpha * x[i]


@njit(cache=True, inline="always")
def _orthant_point(xi, di, step, pgi, project):
    """xi + step * di, or 0 where (``project``) it leaves the orthant of xi (the sign of -pgi
    where xi = 0): one coordinate of OWL-QN's trial point."""
    v = xi + step * di
    if project:
        orth = xi if xi != 0.0 else -pgi
        if v * orth <= 0.0:
            v = 0.0
    return v


@njit(cache=True, parallel=True, fastmath=FAST)
def orthant_step(x, d, step, pseudo_grad, project, out):
    """out = x + step * d, projected on the orthant of x (sign of -pg where x = 0).

    Returns pg . (out - x), the directional term of the Armijo condition.
    """
    acc = 0.0
    for i in prange(x.shape[0]):
        xi = x[i]
        v = _orthant_point(xi, d[i], step, pseudo_grad[i], project)
        out[i] = v
        acc += pseudo_grad[i] * (v - xi)
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def history_pair(x_new, x, g_new, g, s, y):
    """s = x_new - x, y = g_new - g; returns (s.y, y.y)."""
    sy = 0.0
    yy = 0.0
    for i in prange(x.shape[0]):
        s[i] = x_new[i] - x[i]
        y[i] = g_new[i] - g[i]
        si = np.float64(s[i])  # the stored (rounded) values, so rho matches the pair
        yi = np.float64(y[i])
        sy += si * yi
        yy += yi * yi
    return sy, yy


# ---------------------------------------------------------------- OWL-QN without pseudo-gradient vectors
# The pseudo-gradient is a function of x and the smooth gradient, computed where it is
# read (the same bits as storing it); the L-BFGS steps s are stored sparse (x moves only
# where the direction is non-zero, a small part of the features under l1).


@njit(cache=True, inline="always")
def _pseudo(xi, gi, rho1):
    """Orthant-wise pseudo-gradient of smooth + rho1 |x|_1 at one coordinate (Andrew & Gao 2007, eq. 4)."""
    if xi > 0.0:
        return gi + rho1
    if xi < 0.0:
        return gi - rho1
    if gi + rho1 < 0.0:
        return gi + rho1
    if gi - rho1 > 0.0:
        return gi - rho1
    return 0.0


@njit(cache=True, inline="always")
def _pseudo_trial(xi, sgi, di, step, rho1, project):
    """One coordinate of OWL-QN's trial point from xi along di (:func:`_orthant_point`, the
    pseudo-gradient pgi computed from xi and the smooth gradient sgi): (its value v, its
    term pgi (v - xi) of the directional derivative)."""
    pgi = _pseudo(xi, sgi, rho1)
    v = _orthant_point(xi, di, step, pgi, project)
    return v, pgi * (v - xi)


@njit(cache=True, parallel=True, fastmath=FAST)
def smooth_pair(x, grad_parts, rho1, rho2, smooth_grad, x_old, sg_old, s, y):
    """One pass over memory per iteration: smooth_grad = column sum of grad_parts + rho2 x
    (the gradient of the smooth part; smooth_grad may be grad_parts[0] itself: each element
    is read before it is written); s = x - x_old, y = smooth_grad - sg_old (float32; sg_old
    may be smooth_grad itself, giving y = 0). The orthant-wise pseudo-gradient pg of
    smooth + rho1 |x|_1 (Andrew & Gao 2007, eq. 4) is not stored, only its norm. Returns
    (penalty, non-zeros, ||pg||^2, ||x||^2, s.y, y.y). An empty ``s`` (and ``x_old``): no s,
    for a step whose s is kept sparse (s.y returned as 0)."""
    l1 = 0.0
    l2 = 0.0
    pg2 = 0.0
    sy = 0.0
    yy = 0.0
    nnz = 0
    n_parts = grad_parts.shape[0]
    with_s = s.shape[0] > 0
    for i in prange(x.shape[0]):
        xi = x[i]
        gi = rho2 * xi
        for p in range(n_parts):
            gi += grad_parts[p, i]
        smooth_grad[i] = gi
        l2 += xi * xi
        if xi != 0.0:
            l1 += abs(xi)
            nnz += 1
        pgi = _pseudo(xi, gi, rho1)
        pg2 += pgi * pgi
        y[i] = gi - sg_old[i]
        yi = np.float64(y[i])
        if with_s:
            s[i] = xi - x_old[i]
            sy += np.float64(s[i]) * yi
        yy += yi * yi
    return rho1 * l1 + 0.5 * rho2 * l2, nnz, pg2, l2, sy, yy


@njit(cache=True, parallel=True, fastmath=FAST)
def pseudo_copy(x, sg, rho1, pseudo, out, negate):
    """out = pg (or -pg with ``negate``), pg = pseudo-gradient of (x, sg) if ``pseudo`` else sg."""
    for i in prange(out.shape[0]):
        v = _pseudo(x[i], sg[i], rho1) if pseudo else sg[i]
        out[i] = -v if negate else v


@njit(cache=True, parallel=True, fastmath=FAST)
def pseudo_dot(x, sg, rho1, pseudo, q):
    """pg . q."""
    acc = 0.0
    for i in prange(q.shape[0]):
        v = _pseudo(x[i], sg[i], rho1) if pseudo else sg[i]
        acc += v * q[i]
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def pseudo_constrain(d, x, sg, rho1, pseudo):
    """Zero the components of d that do not descend (d * pg >= 0); returns pg . d."""
    acc = 0.0
    for i in prange(d.shape[0]):
        v = _pseudo(x[i], sg[i], rho1) if pseudo else sg[i]
        if d[i] * v >= 0.0:
            d[i] = 0.0
        else:
            acc += d[i] * v
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def scale_constrain(q, c, x, sg, rho1, pseudo, constrain):
    """q *= c, then (``constrain``) OWL-QN's sign constraint; returns pg . q."""
    acc = 0.0
    for i in prange(q.shape[0]):
        v = c * q[i]
        g = _pseudo(x[i], sg[i], rho1) if pseudo else sg[i]
        if constrain and v * g >= 0.0:
            v = 0.0
        q[i] = v
        acc += v * g
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def pseudo_orthant_step(x, d, step, sg, rho1, project, out):
    """:func:`orthant_step` with the pseudo-gradient computed from (x, sg)."""
    acc = 0.0
    for i in prange(x.shape[0]):
        xi = x[i]
        v, dd = _pseudo_trial(xi, sg[i], d[i], step, rho1, project)
        out[i] = v
        acc += dd
    return acc


@njit(cache=True, parallel=True, fastmath=FAST)
def axpy_dense_dot(alpha, x, q, z):
    """q += alpha * x; returns z . q (x, z dense; z may be float32)."""
    acc = 0.0
    for i in prange(q.shape[0]):
        v = q[i] + alpha * x[i]
        q[i] = v
        acc += z[i] * v
    return acc


@njit(cache=True, fastmath=FAST)
def sparse_dot(idx, val, q):
    """sum_k val[k] q[idx[k]] (a sparse float32 vector against a dense one)."""
    acc = 0.0
    for k in range(idx.shape[0]):
        acc += np.float64(val[k]) * q[idx[k]]
    return acc


@njit(cache=True, fastmath=FAST)
def sparse_axpy(alpha, idx, val, q):
    """q[idx[k]] += alpha * val[k]."""
    for k in range(idx.shape[0]):
        i = idx[k]
        q[i] = q[i] + alpha * np.float64(val[k])


@njit(cache=True)
def compress(dense, idx, val):
    """Write the non-zeros of dense (float32 or float64, as val) into idx / val (sized by
    np.count_nonzero)."""
    n = 0
    for i in range(dense.shape[0]):
        v = dense[i]
        if v != 0.0:
            idx[n] = i
            val[n] = v
            n += 1
    return n


@njit(cache=True, fastmath=FAST)
def sparse_orthant_step(x, idx, d_val, x_save, step, sg, rho1, project):
    """:func:`pseudo_orthant_step` in place for a direction non-zero only at idx: x[idx[k]] =
    x_save[k] + step * d_val[k], projected on the orthant of x_save (sign of -pg where it is
    0); x elsewhere is unchanged (a zero component of d moves nothing). Returns pg . (x' - x)."""
    acc = 0.0
    for k in range(idx.shape[0]):
        i = idx[k]
        xi = x_save[k]
        v, dd = _pseudo_trial(xi, sg[i], d_val[k], step, rho1, project)
        x[i] = v
        acc += dd
    return acc


@njit(cache=True, fastmath=FAST)
def sparse_step_pair(x, idx, x_save, y, s_val):
    """s_val[k] = x[idx[k]] - x_save[k] (float32): the step where x moved; returns s.y."""
    sy = 0.0
    for k in range(idx.shape[0]):
        s_val[k] = x[idx[k]] - x_save[k]
        sy += np.float64(s_val[k]) * np.float64(y[idx[k]])
    return sy
