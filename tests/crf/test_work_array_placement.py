"""The recursions' sums must not depend on where the allocator puts the work arrays.

With ``fastmath`` re-association LLVM vectorises a sum, but a loop that also stores is
vectorised only when a run-time check finds the arrays it reads and writes far enough
apart; otherwise the scalar loop runs, and the two sum in different orders. Marginals
then differed in the last bit from one call to the next (a model and its reloaded copy
disagreed in about one process in five). Here the arrays the first sums read and write
are placed next to each other and far apart in one buffer: every result must be the same
bits."""

import numpy as np
import pytest

from crf import _inference_kernels as K
from crf import _order2_kernels as K2
from crf.features import FeatureSpace
from crf.inference import _sparse_args
from crf.patterns import parse_patterns
from crf.transitions import allowed_pairs

from .crf_testutil import PATTERNS, random_corpus

GAPS = (0, 1, 3, 64, 4096)  # float64s between the two arrays in one buffer


def _problem(seed, patterns, L=8):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, 12, 4, L, vocab=9)
    X = [x[:1] for x in X[:6]] + X[6:]  # sequences of one token: the smallest arrays
    y = [s[:1] for s in y[:6]] + y[6:]
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns) + "\n"), X, y)
    return space, data, rng.normal(scale=3.0, size=space.n_params)


def _same_bits_everywhere(data, run):
    """run(s, e, gap, flip) -> a hashable result of sequence [s, e) with its two placed
    arrays ``gap`` float64s apart (in the other order when ``flip``): one result each."""
    for i in range(data.n_sequences):
        s, e = int(data.seq_offsets[i]), int(data.seq_offsets[i + 1])
        seen = {run(s, e, gap, flip) for gap in GAPS for flip in (False, True)}
        assert len(seen) == 1, f"sequence {i} (T={e - s}): {len(seen)} different results"


def _placed(gap, flip, T, L, n):
    """(a (T, L) array, an array of n float64s) in one buffer, ``gap`` float64s apart
    (the second first when ``flip``)."""
    buf = np.empty(T * L + n + gap)
    if flip:
        return buf[n + gap:].reshape(T, L), buf[:n]
    return buf[:T * L].reshape(T, L), buf[T * L + gap:]


@pytest.mark.parametrize("sparse", [False, True])
def test_first_order_forward_backward(sparse):
    space, data, theta = _problem(0, PATTERNS)
    L = space.n_labels
    nz_ptr, nz_idx = _sparse_args(theta, space, sparse)

    def run(s, e, gap, flip):
        T = e - s
        ws = list(K.fb_workspace(T, L, sparse, data.bigram_base.shape[1]))
        eU, alpha = _placed(gap, flip, T, L, T * L)
        ws[1], ws[2] = eU, alpha.reshape(T, L)
        logz = K.forward_backward(theta, data.unigram_base, data.unigram_value, data.unigram_states,
                                  data.bigram_base, s, e, np.int64(L), sparse, np.int64(space.bigram_start),
                                  nz_ptr, nz_idx, *ws)
        return logz, (ws[2] * ws[3]).tobytes()

    _same_bits_everywhere(data, run)


def test_second_order_forward_backward():
    space, data, theta = _problem(1, ["u:a=%x[0,0]", "*:d=%x[1,0]", "B", "T", "t:e=%x[0,1]"])
    space.set_allowed(allowed_pairs("none", space.labels, data.labels, data.seq_offsets))
    assert space.pairwise
    L = space.n_labels
    pairs, pred_ptr, pred_j, pred_r = space.structure.args()

    def run(s, e, gap, flip):
        T = e - s
        ws = list(K2.workspace2(T, L, pairs, pred_r.shape[0], data.bigram_base.shape[1],
                                data.trigram_base.shape[1]))
        ws[1], ws[4] = _placed(gap, flip, T, L, L)  # eU, a0
        logz = K2.forward_backward2(theta, data.unigram_base, data.unigram_value, data.unigram_states,
                                    data.bigram_base, data.trigram_base, s, e, np.int64(L), pairs, pred_ptr,
                                    pred_j, pred_r, tuple(ws))
        return logz, ws[4].tobytes(), ws[6][:T].tobytes()

    _same_bits_everywhere(data, run)
