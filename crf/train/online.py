"""CRFsuite's online learners for CRFs: passive-aggressive (Crammer et al. 2006) and AROW
(adaptive regularization of weights, Mejer & Crammer 2010), as CRFsuite 0.12 runs them
(lib/crf/src/train_passive_aggressive.c, train_arow.c).

Both make epochs over the (shuffled) sequences.  For each sequence: Viterbi with the
current weights; when d > 0 labels are wrong, with Delta = phi(x, y_gold) - phi(x, y_pred)
(features on both paths cancel) and err = score(y_pred) - score(y_gold) >= 0:

passive-aggressive
    cost = err + sqrt(d) (``error_sensitive``, the default) or err + 1;
    tau = cost / |Delta|^2 (``pa_type`` 0), min(c, cost / |Delta|^2) (1, the default)
    or cost / (|Delta|^2 + 1 / (2c)) (2); w += tau Delta.  With ``averaging`` (the
    default) CRFsuite also keeps ws += tau u Delta, u a counter that starts at 1 and
    grows by one after every sequence, right or wrong, and returns w - ws / u: the mean of
    the u iterates w_0 (the start) ... w_{u-1}.
AROW
    cost = err + d; with the diagonal covariance cov (``variance`` everywhere at the start),
    alpha = cost / (gamma + sum_k Delta_k^2 cov_k); mean_k += alpha cov_k Delta_k and
    cov_k = 1 / (1 / cov_k + Delta_k^2 / gamma).  The mean is the model.

Sequences predicted right change nothing.  An epoch's loss (CRFsuite's "Loss:", here
``info.objective``) is the sum of the costs of its wrong sequences.  After an epoch,
CRFsuite stops when loss / N < epsilon (passive-aggressive) or loss / N <= epsilon (AROW):
with the default epsilon 0, AROW stops after an epoch without mistake, while
passive-aggressive goes on to max_iter (its average still moves as u grows; without
averaging nothing moves any more, and it stops there with the same weights).  Defaults
as CRFsuite's: max_iter 100, pa_type 1, c 1, error_sensitive and averaging on, variance 1,
gamma 1, epsilon 0.

Not CRFsuite's: the shuffling (numpy's generator seeded by ``seed``, a fresh permutation
before every epoch, as :func:`crf.train.perceptron.averaged_perceptron`; CRFsuite swaps
with C's rand()), the feature set (dense blocks of every observation, not only the
(attribute, label) pairs seen in training) and instance weights (none here: all 1).
"""

from __future__ import annotations

import math

import numpy as np

from suffixlm.memory import allocate, start_point
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _online_kernels as OK
from . import _sequence_kernels as SQ

__all__ = ["passive_aggressive", "arow", "train_crf"]


def _check_max_iter(max_iter) -> None:
    if isinstance(max_iter, bool) or not isinstance(max_iter, (int, np.integer)) or max_iter < 0:
        raise ValueError(f"max_iter must be an integer >= 0, not {max_iter!r}")


def _check_positive(name: str, v) -> None:
    if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)) \
            or not (math.isfinite(v) and v > 0):
        raise ValueError(f"{name} must be a positive finite number, not {v!r}")


def _check_epsilon(epsilon) -> None:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float, np.integer, np.floating)) \
            or not epsilon >= 0:
        raise ValueError(f"epsilon must be a number >= 0, not {epsilon!r}")


def _prepare(space, data) -> tuple[int, bool, tuple]:
    """(n_seq, pairwise, o2) for the kernels (o2: ``SQ.pair_args``)."""
    n = SQ.check_training_data(data)
    if space.pairwise:
        bad = np.flatnonzero(~space.allowed_of(data))
        if bad.size:
            raise ValueError(f"training data: sequence {int(bad[0]) + 1} uses a label pair the model forbids")
    return n, bool(space.pairwise), SQ.pair_args(space, data)


def _scratch(n_params: int, what: str) -> tuple[np.ndarray, np.ndarray]:
    """The kernels' difference vector (zeros) and its flags (zeros)."""
    return (allocate(n_params, np.float64, f"{what} (difference vector)", zero=True),
            allocate(n_params, np.uint8, f"{what} (difference flags)", zero=True))


def _result(x, infos: list[IterationInfo], reason: StopReason, converged: bool) -> OptimizeResult:
    objective = float(infos[-1].objective) if infos else float("nan")
    return OptimizeResult(x, objective, len(infos), len(infos), converged, reason, infos)


def passive_aggressive(space, data, max_iter: int = 100, x0: np.ndarray | None = None, pa_type: int = 1,
                       c: float = 1.0, error_sensitive: bool = True, averaging: bool = True, epsilon: float = 0.0,
                       shuffle: bool = True, seed: int = 0, callback=None) -> OptimizeResult:
    """Train by CRFsuite's passive-aggressive (see the module doc); result.x are the
    averaged weights (``averaging``) or the last ones.

    pa_type: 0 (PA, no slack), 1 (PA-I, tau <= c) or 2 (PA-II); c > 0 the aggressiveness
    (types 1 and 2); error_sensitive: the cost counts sqrt(number of wrong labels), else 1.
    x0: the starting weights (zeros by default, as CRFsuite).

    callback(info, x) after every epoch (info.objective: the epoch's loss, the sum of the
    costs, CRFsuite's "Loss"; info.extra["mistakes"]: the sequences with a wrong label;
    x: the weights result.x would be); True stops (reason "stopping criterion").  Stops when
    loss / N < epsilon (reason "mean loss below epsilon"), and, without averaging, after an
    epoch without mistake (reason "no mistake": later epochs change nothing).
    """
    _check_max_iter(max_iter)
    if isinstance(pa_type, bool) or pa_type not in (0, 1, 2):
        raise ValueError(f"pa_type must be 0 (PA), 1 (PA-I) or 2 (PA-II), not {pa_type!r}")
    _check_positive("c", c)
    _check_epsilon(epsilon)
    n, pairwise, o2 = _prepare(space, data)
    what = "the passive-aggressive weights"
    w = start_point(space.n_params, x0, what)
    ws = allocate(w.shape[0], np.float64, "the passive-aggressive weight sums", zero=True)
    dlt, mark = _scratch(w.shape[0], what)
    rng = np.random.default_rng(seed)
    u = 1.0  # CRFsuite's counter: 1 + the sequences seen
    infos: list[IterationInfo] = []
    clock = Clock()
    reason, converged = StopReason.MAX_ITER, False

    def current():
        # CRFsuite: veccopy(wa, w); vecasub(wa, 1/u, ws)
        return w - (1.0 / u) * ws if averaging else w.copy()

    settled = False  # an epoch without mistake: the weights can no longer change
    x = current()
    for epoch in range(1, max_iter + 1):
        order = (rng.permutation(n) if shuffle else np.arange(n)).astype(np.int64)
        if settled:
            loss, mistakes = 0.0, 0
        else:
            loss, mistakes = OK.pa_epoch(w, ws, dlt, mark, order, data.seq_offsets, data.unigram_base,
                                         data.unigram_value, data.unigram_states, data.bigram_base, data.labels,
                                         np.int64(space.n_labels), pairwise, o2, np.int64(pa_type), float(c),
                                         bool(error_sensitive), u)
        u += n
        settled = mistakes == 0
        x = current()
        info = clock.record(infos, epoch, float(loss), n_evals=epoch, active=int(np.count_nonzero(w)),
                            extra={"mistakes": int(mistakes)})
        stop = callback is not None and bool(callback(info, x))
        if loss / n < epsilon:
            reason, converged = ("no mistake" if mistakes == 0 else "mean loss below epsilon"), True
            break
        if settled and not averaging:
            reason, converged = StopReason.NO_MISTAKE, True
            break
        if stop:
            reason = StopReason.STOPPING_CRITERION
            break
    return _result(x, infos, reason, converged)


def arow(space, data, max_iter: int = 100, x0: np.ndarray | None = None, variance: float = 1.0, gamma: float = 1.0,
         epsilon: float = 0.0, shuffle: bool = True, seed: int = 0, callback=None) -> OptimizeResult:
    """Train by CRFsuite's AROW (see the module doc); result.x is the mean.

    variance > 0: the initial variance of every weight; gamma > 0: the trade-off
    (a larger gamma shrinks the covariance more slowly).  x0: the starting mean (zeros by
    default, as CRFsuite).

    callback(info, x) after every epoch (info.objective: the epoch's loss, the sum of the
    costs, CRFsuite's "Loss"; info.extra["mistakes"]: the sequences with a wrong label;
    x: the mean); True stops (reason "stopping criterion").  Stops when loss / N <= epsilon
    (reason "no mistake" for a loss of 0 -- with the default epsilon 0, after the first
    epoch without mistake -- else "mean loss below epsilon").
    """
    _check_max_iter(max_iter)
    _check_positive("variance", variance)
    _check_positive("gamma", gamma)
    _check_epsilon(epsilon)
    n, pairwise, o2 = _prepare(space, data)
    what = "the AROW weights"
    mean = start_point(space.n_params, x0, what)
    cov = allocate(mean.shape[0], np.float64, "the AROW variances")
    cov[:] = float(variance)
    dlt, mark = _scratch(mean.shape[0], what)
    rng = np.random.default_rng(seed)
    infos: list[IterationInfo] = []
    clock = Clock()
    reason, converged = StopReason.MAX_ITER, False
    for epoch in range(1, max_iter + 1):
        order = (rng.permutation(n) if shuffle else np.arange(n)).astype(np.int64)
        loss, mistakes = OK.arow_epoch(mean, cov, dlt, mark, order, data.seq_offsets, data.unigram_base,
                                       data.unigram_value, data.unigram_states, data.bigram_base, data.labels,
                                       np.int64(space.n_labels), pairwise, o2, float(gamma))
        info = clock.record(infos, epoch, float(loss), n_evals=epoch, active=int(np.count_nonzero(mean)),
                            extra={"mistakes": int(mistakes)})
        stop = callback is not None and bool(callback(info, mean.copy()))
        if loss / n <= epsilon:
            reason, converged = ("no mistake" if mistakes == 0 else "mean loss below epsilon"), True
            break
        if stop:
            reason = StopReason.STOPPING_CRITERION
            break
    return _result(mean.copy(), infos, reason, converged)


def train_crf(run) -> OptimizeResult:
    """``pa`` and ``arow`` of :mod:`crf.solvers`, with CRFsuite's parameters (``settings.options``)."""
    st, o = run.settings, run.settings.options
    if st.algorithm == "pa":
        return passive_aggressive(run.space, run.data, max_iter=st.max_iter, x0=run.x0, pa_type=o["pa_type"],
                                  c=o["c"], error_sensitive=o["error_sensitive"], averaging=o["averaging"],
                                  epsilon=st.epsilon, seed=run.seed, callback=run.callback)
    return arow(run.space, run.data, max_iter=st.max_iter, x0=run.x0, variance=o["variance"], gamma=o["gamma"],
                epsilon=st.epsilon, seed=run.seed, callback=run.callback)
