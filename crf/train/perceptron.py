"""Averaged structured perceptron (Collins 2002; Sha & Pereira 2003, section 3.3).

For each sequence: Viterbi with the current weights; on a mistake add the
features of the gold labelling and subtract those of the prediction.  The model
returned is the average of the weights after every example (Collins' averaged
parameters), computed without touching all weights at every step:
with wa = sum_c c * update_c (c = index of the example), the average after N
examples is ((N + 1) w - wa) / N.
"""

from __future__ import annotations

import numpy as np

from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult

from . import _perceptron_kernels as PK
from . import _sequence_kernels as SQ

__all__ = ["averaged_perceptron"]


def averaged_perceptron(space, data, max_iter: int = 10, x0: np.ndarray | None = None,
                        average: bool = True, shuffle: bool = True, seed: int = 0,
                        callback=None) -> OptimizeResult:
    """Train by the (averaged) perceptron; result.x are the averaged weights (or the last
    ones with ``average=False``).  Stops early after a pass without mistakes.

    callback(info, w_avg) after every pass (info.objective: the number of sequences
    with a mistake during the pass — the perceptron has no objective); True stops.
    """
    n = SQ.check_training_data(data)
    w = np.zeros(space.n_params) if x0 is None else np.array(x0, dtype=np.float64)
    wa = np.zeros_like(w)
    w0 = w.copy()
    rng = np.random.default_rng(seed)
    seen = 0
    infos: list[IterationInfo] = []
    clock = Clock()
    reason = "max_iter"

    def averaged():
        if not average or seen == 0:
            return w.copy()
        # the updates are averaged; the starting point x0 is in every iterate
        return ((seen + 1) * (w - w0) - wa) / seen + w0

    for epoch in range(1, max_iter + 1):
        order = (rng.permutation(n) if shuffle else np.arange(n)).astype(np.int64)
        mistakes = PK.perceptron_epoch(w, wa, order, data.seq_offsets, data.unigram_base, data.bigram_base,
                                       data.labels, np.int64(space.n_labels), float(seen))
        seen += n
        info = clock.record(infos, epoch, float(mistakes), step=1.0, n_evals=epoch, active=int(np.count_nonzero(w)))
        if mistakes == 0:
            reason = "no mistake"
            break
        if callback is not None and callback(info, averaged()):
            reason = "stopping criterion"
            break
    x = averaged()
    return OptimizeResult(x, float(infos[-1].objective), len(infos), len(infos), reason in ('no mistake',), reason, infos)
