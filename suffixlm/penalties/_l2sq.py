"""Squared l2 penalty: rescaling (paper eq. 6), on the suffix trie or tree (§3.2).

Omega(w) = 1/2 sum_x eta_x w_x^2. With counts c the operator solves, per node x,
argmin_w  c_x/2 (w - v_x)^2 + kappa * eta_x / 2 * w^2   (w >= 0 when nonneg),
i.e. w = v / (1 + kappa * eta_x / c_x); with eta = c = 1 this is eq. 6,
w = v / (1 + kappa).
"""

from .._jit import njit


@njit(cache=True)
def prox_l2sq(values, weight_per_count, kappa, nonneg):
    """In place. values float64[n]; weight_per_count float64[n] = eta / c."""
    for x in range(values.shape[0]):
        v = values[x]
        if nonneg and v < 0.0:
            values[x] = 0.0
        else:
            values[x] = v / (1.0 + kappa * weight_per_count[x])


@njit(cache=True)
def value_l2sq(values, weights):
    """1/2 sum_x eta_x w_x^2 (float64[n] each)."""
    s = 0.0
    for x in range(values.shape[0]):
        s += weights[x] * values[x] * values[x]
    return 0.5 * s
