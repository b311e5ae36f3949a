"""Solver behaviour the LM relies on beyond reaching the optimum (that is tested in
test_lm_references.py against scipy and a prox fixed point)."""

import itertools

import numpy as np

from suffixlm.solvers import fista


def test_fista_stalled_with_tol_zero_still_hears_the_callback():
    """A FISTA whose objective never decreases any more (here: a value that grows at every
    call, as rounding does at the optimum) restarts at every iteration; with tol = 0 and
    no stop_on_stall, a callback asking to stop (a time budget, a user) must end it
    before max_iter."""
    class GrowingPenalty:  # prox is the identity, its value grows at every call
        nonneg = False
        counter = itertools.count()

        def value(self, w):
            return float(next(self.counter))

        def prox(self, v, step):
            return v

    def value_grad(x):
        return 0.5 * float(x @ x), x.copy()

    calls = []

    def cb(info, x):
        calls.append(info.restart)
        return len(calls) >= 50

    res = fista(value_grad, GrowingPenalty(), np.ones(3), max_iter=100000, tol=0.0, callback=cb)
    assert res.reason == "callback" and res.n_iter < 1000
    assert sum(calls) >= 45  # the records it saw were restarts after the first steps
