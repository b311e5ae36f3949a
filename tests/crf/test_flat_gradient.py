"""The loss/gradient in memory flat in the thread count (crf._gradient_kernels): the
same bits for any number of threads and any batch size, no weight-sized buffer per
thread, and equal to the per-sequence reference (enumeration) on small problems."""

import numba
import numpy as np
import pytest

from crf.features import FeatureSpace
from crf.inference import Objective
from crf.patterns import parse_patterns

from .crf_testutil import PATTERNS, enumerate_sequences, logsumexp, random_corpus

ONLY_B = ["u:a=%x[0,0]", "u:b=%x[-1,0]/%x[0,1]", "*:d=const", "B"]


def problem(seed, patterns, L=3, n_seq=40, max_len=7):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L, vocab=6)
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns)), X, y)
    theta = rng.normal(scale=0.7, size=space.n_params)
    theta[rng.random(space.n_params) < 0.6] = 0.0
    return X, y, space, data, theta


def evaluate(space, data, theta, threads, recursion, batch_bytes):
    before = numba.get_num_threads()
    numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
    try:
        obj = Objective(space, data, recursion=recursion, batch_bytes=batch_bytes)
        g = np.empty(space.n_params)
        loss, _ = obj.value_and_gradient(theta, g)
        return loss, g, obj.last_errors
    finally:
        numba.set_num_threads(before)


@pytest.mark.parametrize("patterns", [PATTERNS, ONLY_B])
@pytest.mark.parametrize("recursion", ["dense", "sparse"])
def test_gradient_bits_do_not_depend_on_threads_or_batches(patterns, recursion):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("needs 2 numba threads")
    _, _, space, data, theta = problem(1, patterns)
    ref = evaluate(space, data, theta, 1, recursion, 1 << 20)
    for threads, batch in [(2, 1 << 20), (2, 256), (1, 256), (2, 1)]:  # 1 byte: one sequence per batch
        loss, g, errs = evaluate(space, data, theta, threads, recursion, batch)
        assert loss == ref[0]
        assert np.array_equal(g, ref[1])
        assert errs == ref[2]


@pytest.mark.parametrize("patterns", [PATTERNS, ONLY_B])
def test_many_batches_match_enumeration(patterns):
    X, y, space, data, theta = problem(2, patterns, n_seq=6, max_len=4)
    obj = Objective(space, data, batch_bytes=1)  # a batch per sequence
    loss, grad = obj.value_and_gradient(theta)
    grad = grad.copy()  # the objective's own buffer: the next call overwrites it
    assert len(obj.batches) == data.n_sequences + 1
    lab = {name: k for k, name in enumerate(space.labels)}
    ref = 0.0
    eps = 1e-6
    for seq, ys in zip(X, y):
        allseq = dict(enumerate_sequences(space, theta, seq, patterns))
        ref += logsumexp(list(allseq.values())) - allseq[tuple(lab[v] for v in ys)]
    assert loss == pytest.approx(ref, rel=1e-10)
    rng = np.random.default_rng(0)
    for k in rng.choice(space.n_params, 25, replace=False):
        tp, tm = theta.copy(), theta.copy()
        tp[k] += eps
        tm[k] -= eps
        fd = (obj.value_and_gradient(tp)[0] - obj.value_and_gradient(tm)[0]) / (2 * eps)
        assert grad[k] == pytest.approx(fd, abs=1e-6)


def held_bytes(obj):
    return sum(v.nbytes for v in vars(obj).values() if isinstance(v, np.ndarray))


def test_memory_does_not_grow_with_threads_and_holds_no_weight_sized_buffer():
    _, _, space, data, theta = problem(3, PATTERNS, n_seq=200)
    sizes = []
    for threads in (1, 2):
        before = numba.get_num_threads()
        numba.set_num_threads(min(threads, numba.config.NUMBA_NUM_THREADS))
        try:
            obj = Objective(space, data, n_chunks=threads, batch_bytes=1 << 10)
            g = np.empty(space.n_params)
            loss, out = obj.value_and_gradient(theta, g)
        finally:
            numba.set_num_threads(before)
        assert out is g and np.isfinite(loss)  # the gradient goes into the caller's vector
        sizes.append(held_bytes(obj))
    assert sizes[0] == sizes[1]
    # the batch rows (at most the budget, or one sequence) and per-sequence / per-observation
    # arrays: nothing proportional to the weights
    n_obs = len(space.kinds)
    assert sizes[0] <= 2 * (1 << 10) + 8 * space.n_labels ** 2 * 8 + 24 * (data.n_sequences + n_obs + 2)
