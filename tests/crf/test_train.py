"""OWL-QN and L-BFGS reach the optimum found by slow independent references."""

import numpy as np
import pytest

from crf.features import FeatureSpace
from crf.inference import Objective
from crf.patterns import parse_patterns
from crf.train import lbfgs, owlqn

from .crf_testutil import PATTERNS, random_corpus


def tiny_objective(seed=0):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, 12, 5, 3)
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    return Objective(space, data, n_chunks=1)


def test_lbfgs_matches_scipy_on_the_smooth_l2_problem():
    scipy_optimize = pytest.importorskip("scipy.optimize")
    obj = tiny_objective()
    rho2 = 0.1

    def f(x):
        v, g = obj.value_and_gradient(x)
        return v + 0.5 * rho2 * x @ x, g + rho2 * x

    x0 = np.zeros(obj.space.n_params)
    ref = scipy_optimize.minimize(f, x0, jac=True, method="L-BFGS-B",
                                  options={"maxiter": 5000, "gtol": 1e-10, "ftol": 1e-15})
    res = lbfgs(obj.value_and_gradient, x0, rho2=rho2, max_iter=2000, gtol=1e-9)
    assert res.objective == pytest.approx(ref.fun, rel=1e-8)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-4)


def proximal_gradient(obj, rho1, rho2, n, iterations=20000):
    """ISTA with backtracking: x <- soft(x - t grad, t rho1) (slow, obviously correct)."""
    x = np.zeros(n)

    def smooth(z):
        v, g = obj.value_and_gradient(z)
        return v + 0.5 * rho2 * z @ z, g + rho2 * z

    t = 1.0
    fx, gx = smooth(x)
    for _ in range(iterations):
        while True:
            z = x - t * gx
            z = np.sign(z) * np.maximum(np.abs(z) - t * rho1, 0.0)
            fz, gz = smooth(z)
            d = z - x
            if fz <= fx + gx @ d + (d @ d) / (2 * t) + 1e-15:
                break
            t *= 0.5
        if np.max(np.abs(d)) < 1e-12:
            break
        x, fx, gx = z, fz, gz
        t *= 1.5
    return x, fx + rho1 * np.abs(x).sum()


@pytest.mark.parametrize("rho1,rho2", [(0.3, 0.01), (0.2, 0.05)])
def test_owlqn_matches_proximal_gradient(rho1, rho2):
    obj = tiny_objective(1)
    n = obj.space.n_params
    x_ref, f_ref = proximal_gradient(obj, rho1, rho2, n, iterations=5000)
    res = owlqn(obj.value_and_gradient, np.zeros(n), rho1=rho1, rho2=rho2, max_iter=1000, gtol=1e-10)
    assert res.objective == pytest.approx(f_ref, rel=1e-9)
    np.testing.assert_allclose(res.x, x_ref, atol=1e-3)
    # the l1 term gives a sparse solution with the same support
    assert ((np.abs(res.x) > 1e-3) == (np.abs(x_ref) > 1e-3)).mean() > 0.99
    assert (res.x == 0).sum() > 0


def test_owlqn_rejects_negative_penalties():
    obj = tiny_objective()
    with pytest.raises(ValueError):
        owlqn(obj.value_and_gradient, np.zeros(obj.space.n_params), rho1=-1.0)
