"""Averaged structured perceptron (Collins 2002; Sha & Pereira 2003, section 3.3).

For each sequence: Viterbi with the current weights; on a mistake add the
features of the gold labelling and subtract those of the prediction.  The model
returned is the average of the weights after every example (Collins' averaged
parameters), computed without touching all weights at every step:
with wa = sum_c c * update_c (c = index of the example), the average after N
examples is ((N + 1) w - wa) / N.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from suffixlm.memory import allocate, start_point
from suffixlm.solvers import state as S
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _perceptron_kernels as PK
from . import _sequence_kernels as SQ

__all__ = ["averaged_perceptron", "PerceptronState", "train_crf"]


@dataclass
class PerceptronState(S.SolverState):
    """Where :func:`averaged_perceptron` stands at the end of a pass
    (:mod:`suffixlm.solvers.state`): the weights w, the weighted sum of the updates wa and
    the starting point w0 (float64 (n,)), the examples seen, the shuffling generator's
    state, passes done and history."""

    w: np.ndarray = S.floats("n")
    wa: np.ndarray = S.floats("n")
    w0: np.ndarray = S.floats("n")
    seen: int = S.count()
    rng: dict = S.generator()
    n_iter: int = S.iterations()
    history: list[IterationInfo] = S.history()

    NAME = "perceptron"


def averaged_perceptron(space, data, max_iter: int = 10, x0: np.ndarray | None = None,
                        average: bool = True, shuffle: bool = True, seed: int = 0,
                        callback=None, state: PerceptronState | None = None, checkpoint=None) -> OptimizeResult:
    """Train by the (averaged) perceptron; result.x are the averaged weights (or the last
    ones with ``average=False``).  Stops early after a pass without mistakes.

    callback(info, w_avg) after every pass (info.objective: the number of sequences
    with a mistake during the pass — the perceptron has no objective); True stops.

    state: a :class:`PerceptronState` to go on from (x0 and seed are then unused);
    ``checkpoint(state)`` after every pass the solver goes on after.
    """
    n = SQ.check_training_data(data)
    if state is None:
        w = start_point(space.n_params, x0, "the perceptron's weights")
        wa = allocate(w.shape[0], np.float64, "the perceptron's weight sums", zero=True)
        w0 = w.copy()
        rng = np.random.default_rng(seed)
        seen = 0
        infos: list[IterationInfo] = []
    else:
        w, wa, w0, seen = state.w.copy(), state.wa.copy(), state.w0.copy(), state.seen
        rng = S.rng_from_json(state.rng, "rng")
        infos = list(state.history)
    clock = Clock.after(infos)
    reason = StopReason.MAX_ITER
    o2 = SQ.pair_args(space, data)

    def averaged():
        if not average or seen == 0:
            return w.copy()
        # the updates are averaged; the starting point x0 is in every iterate
        return ((seen + 1) * (w - w0) - wa) / seen + w0

    for epoch in range(len(infos) + 1, max_iter + 1):
        order = (rng.permutation(n) if shuffle else np.arange(n)).astype(np.int64)
        mistakes = PK.perceptron_pass(w, wa, order, data.seq_offsets, data.unigram_base, data.unigram_value,
                                      data.unigram_states, data.bigram_base, data.labels, np.int64(space.n_labels),
                                      space.pairwise, o2, float(seen))
        seen += n
        info = clock.record(infos, epoch, float(mistakes), step=1.0, n_evals=epoch, active=int(np.count_nonzero(w)))
        stop = callback is not None and callback(info, averaged())  # every pass is logged, the last too
        if mistakes == 0:
            reason = StopReason.NO_MISTAKE
            break
        if stop:
            reason = StopReason.STOPPING_CRITERION
            break
        if checkpoint is not None:
            checkpoint(PerceptronState(w, wa, w0, seen, S.rng_to_json(rng), epoch, infos))
    x = averaged()
    return OptimizeResult(x, float(infos[-1].objective), len(infos), len(infos), reason in ('no mistake',), reason, infos)


def train_crf(run) -> OptimizeResult:
    """``perceptron`` and CRFsuite's ``ap`` of :mod:`crf.solvers`; with ``epsilon`` > 0 (ap),
    stop as CRFsuite does when the share of sequences with a mistake falls below it."""
    st, n_seq = run.settings, run.data.n_sequences

    def with_epsilon(info, theta):
        return run.callback(info, theta) or info.objective / n_seq < st.epsilon

    return averaged_perceptron(run.space, run.data, max_iter=st.max_iter, x0=run.x0, seed=run.seed,
                               callback=with_epsilon if st.epsilon > 0 else run.callback, **run.resume)
