"""l1 penalty: soft-thresholding (paper eq. 7), on the suffix trie or tree (§3.2).

With counts c and weights eta the operator solves, per node x,
argmin_w  c_x/2 (w - v_x)^2 + kappa * eta_x |w|   (w >= 0 when nonneg),
i.e. soft-thresholding by kappa * eta_x / c_x: a collapsed node is c_x trie
coordinates of weight eta_x / c_x each, sharing one value.
"""

from .._jit import njit


@njit(cache=True)
def prox_l1(values, weight_per_count, kappa, nonneg):
    """In place. values float64[n]; weight_per_count float64[n] = eta / c."""
    for x in range(values.shape[0]):
        v = values[x]
        t = kappa * weight_per_count[x]
        if v > t:
            values[x] = v - t
        elif v < -t and not nonneg:
            values[x] = v + t
        else:
            values[x] = 0.0


@njit(cache=True)
def value_l1(values, weights):
    """sum_x eta_x |w_x| (float64[n] each)."""
    s = 0.0
    for x in range(values.shape[0]):
        s += weights[x] * abs(values[x])
    return s
