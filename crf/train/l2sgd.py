"""CRFsuite's ``l2sgd``: SGD with an l2 penalty and a calibrated learning rate
(``lib/crf/src/train_l2sgd.c`` of CRFsuite 0.12, re-implemented here).

Minimises  sum_i -log p(y_i|x_i) + rho2/2 ||w||^2  one sequence at a time.  CRFsuite
writes the penalty c2 ||w||^2, so ``c2 = rho2 / 2``, and works with the per-sequence
objective (lambda/2) ||w||^2 + (1/N) sum_i -log p(y_i|x_i) with

    lambda = 2 c2 / N = rho2 / N                 (N: number of sequences)

The rules, as in CRFsuite:

* **Step** (Pegasos without the projection; t counts the updates from 0, never reset
  between epochs)::

      eta = 1 / (lambda (t0 + t));   w <- (1 - eta lambda) w;   w <- w - eta grad_i(w)

  with the gradient (and the loss logged) at the shrunk weights.  The shrink of every
  weight is kept as one scalar ``decay`` per epoch (``_l2sgd_kernels``).
* **Calibration** of t0 (``l2sgd_calibration``): the sequences are shuffled once and
  the first S = min(N, calibration_samples) make the sample; its initial loss is the
  sum of -log p at the start weights.  Each trial runs one epoch over the sample (same
  order every trial, no shuffle) from the start weights with t0 = 1 / (lambda eta),
  its loss being the sum of the losses met plus (lambda/2) ||w||^2 S.  A trial is
  *ok* when its loss is finite and below the initial loss. eta starts at
  calibration_eta and is multiplied by calibration_rate while the trials are ok and
  fewer than calibration_candidates ok trials have been seen; then it restarts at
  calibration_eta / calibration_rate and is divided by the rate until
  calibration_candidates more ok trials were seen.  The trial counter starts at 1 and
  the search stops when it reaches calibration_max_trials (so at most
  max(1, calibration_max_trials - 1) trials run).  The eta of the lowest finite trial loss
  (calibration_eta when none is finite) gives t0 = 1 / (lambda eta).
* **Epochs**: the sequences are shuffled before every epoch; the epoch's loss is
  the sum of the losses met (each at the weights of its step) plus
  (lambda/2) ||w||^2 N at the end of the epoch = the objective above, estimated
  without an extra forward-backward (what CRFsuite logs as ``Loss``).
* **Stopping**: with f_k the loss of epoch k, once k > period the improvement
  (f_{k - period} - f_k) / f_k is computed, and the run stops when it is below delta.
  The result is the weights of the epoch with the lowest loss (CRFsuite's ``best_w``).

Defaults are CRFsuite's (max_iterations 1000, period 10, calibration.eta 0.1,
calibration.rate 2, calibration.samples 1000, calibration.candidates 10,
calibration.max_trials 20) except ``delta``: 1e-5 here, 1e-6 in CRFsuite.

Differences from CRFsuite: the shuffles draw from ``numpy.random.default_rng(seed)``
(CRFsuite's ``rand()`` cannot be replayed): one ``shuffle`` of the index permutation
for the calibration, then one before every epoch, each shuffling the permutation left
by the previous one, as ``dataset_shuffle`` does; ``shuffle=False`` keeps the corpus
order.  ``x0`` (CRFsuite always starts from zero) is the start of the calibration's
trials and of the run; the initial calibration loss then counts the penalty of x0
with S, like the trials (CRFsuite counts it with N, which only matters for x0 != 0).
A non-finite loss anywhere in an epoch (CRFsuite tests the last sequence's) stops the
run with reason ``"diverged (overflow)"`` and the best weights so far (CRFsuite keeps
the non-finite ones).  ``max_iter=0`` skips the calibration and returns x0 with its
exact objective.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from suffixlm.memory import allocate, start_point
from suffixlm.solvers.result import Clock, IterationInfo, OptimizeResult, StopReason

from . import _l2sgd_kernels as LK
from . import _sequence_kernels as SQ

__all__ = ["l2sgd", "calibration_etas", "train_crf"]


def _integer(name, value, low):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < low:
        raise ValueError(f"{name} must be an integer >= {low}, not {value!r}")
    return int(value)


def _real(name, value, positive=True):
    try:
        x = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, not {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(x) or (x <= 0 if positive else x < 0):
        raise ValueError(f"{name} must be a finite number {'> 0' if positive else '>= 0'}, not {value!r}")
    return x


class _Problem:
    """The encoded corpus and blocks the kernels need, first order or label-pair states."""

    def __init__(self, space, data):
        self.space, self.data = space, data
        self.n = SQ.check_training_data(data)
        self.pairwise = space.pairwise
        if self.pairwise:
            bad = np.flatnonzero(~space.allowed_of(data))
            if bad.size:
                raise ValueError(f"training data: sequence {int(bad[0]) + 1} uses a label pair the model forbids")
            self.blk_ptr, self.blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base,
                                                            data.trigram_base)
        else:
            self.blk_ptr, self.blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
        self.o2 = SQ.pair_args(space, data)
        self.v = allocate(space.n_params, np.float64, "l2sgd's scaled weights", zero=True)
        self.g = allocate(space.n_params, np.float64, "l2sgd's gradient", zero=True)

    def epoch(self, w, order, t0, lam, t):
        """One CRFsuite epoch over ``order`` from update count t: (sum of losses met, t after, last eta)."""
        d, sp = self.data, self.space
        state = np.array([float(t), 0.0])
        L = np.int64(sp.n_labels)
        loss = LK.l2sgd_pass(w, self.v, self.g, order, float(t0), float(lam), d.seq_offsets, d.unigram_base,
                             d.unigram_value, d.unigram_states, d.bigram_base, d.labels, self.blk_ptr, self.blocks, L,
                             np.int64(sp.bigram_start), np.int64(sp.trigram_start), self.pairwise, self.o2, state)
        if not np.isfinite(loss):
            self.g[:] = 0.0  # an aborted epoch may leave the scratch gradient dirty
        return float(loss), state[0], float(state[1])

    def loss(self, w, order):
        """sum over ``order`` of -log p(y|x, w)."""
        d, sp = self.data, self.space
        L = np.int64(sp.n_labels)
        if self.pairwise:
            st = sp.structure
            return float(LK.sample_loss2(w, order, d.seq_offsets, d.unigram_base, d.unigram_value, d.unigram_states,
                                         d.bigram_base, d.trigram_base, d.labels, L, st.pairs, st.pred_ptr, st.pred_j,
                                         st.pred_r))
        return float(LK.sample_loss(w, order, d.seq_offsets, d.unigram_base, d.unigram_value, d.unigram_states,
                                    d.bigram_base, d.labels, L))


def _t0(lam, eta):
    """CRFsuite's t0 = 1 / (lambda eta) (inf if the product underflows)."""
    p = lam * eta
    return 1.0 / p if p > 0 else math.inf


def calibration_etas(calibration_eta=0.1, calibration_rate=2.0, calibration_candidates=10,
                     calibration_max_trials=20):
    """A generator of the eta of every trial of CRFsuite's calibration search: ``next()``
    gives the first, ``send(ok)`` (whether the last trial was ok; see the module doc) the
    next, StopIteration the end -- the control flow of ``l2sgd_calibration`` alone."""
    num, dec, trials = calibration_candidates, False, 1
    eta = calibration_eta
    while num > 0 or not dec:
        ok = yield eta
        if ok:
            num -= 1
        if not dec:
            if ok and num > 0:
                eta *= calibration_rate
            else:
                dec = True
                num = calibration_candidates
                eta = calibration_eta / calibration_rate
        else:
            eta /= calibration_rate
        trials += 1
        if calibration_max_trials <= trials:
            break


def _calibrate(prob, w0, order, lam, eta0, rate, candidates, max_trials):
    """CRFsuite's ``l2sgd_calibration`` on the sample ``order``: the calibration record
    (best eta, t0, initial loss, the trials as (eta, loss, ok))."""
    S = order.shape[0]
    init_loss = prob.loss(w0, order) + 0.5 * lam * float(w0 @ w0) * S
    best_loss, best_eta = math.inf, eta0
    trials = []
    w = np.empty_like(w0)
    search = calibration_etas(eta0, rate, candidates, max_trials)
    eta = next(search)
    while True:
        w[:] = w0
        loss, _, _ = prob.epoch(w, order, _t0(lam, eta), lam, 0.0)
        if np.isfinite(loss):
            loss += 0.5 * lam * float(w @ w) * S
        ok = bool(np.isfinite(loss) and loss < init_loss)
        trials.append((eta, loss, ok))
        if np.isfinite(loss) and loss < best_loss:
            best_loss, best_eta = loss, eta
        try:
            eta = search.send(ok)
        except StopIteration:
            break
    return {"eta": best_eta, "t0": _t0(lam, best_eta), "loss": best_loss, "initial_loss": init_loss,
            "samples": S, "trials": trials}


def _improvement(previous, f):
    """CRFsuite's (f_{k - period} - f_k) / f_k, with C's division by zero."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return float((np.float64(previous) - f) / np.float64(f))


def l2sgd(space, data, rho2, max_iter=1000, x0=None, period=10, delta=1e-5, calibration_eta=0.1,
          calibration_rate=2.0, calibration_samples=1000, calibration_candidates=10,
          calibration_max_trials=20, shuffle=True, seed=0, callback=None) -> OptimizeResult:
    """Train by CRFsuite's l2sgd on ``data`` (an EncodedCorpus of ``space``); see the module doc.

    rho2 > 0: the l2 penalty rho2/2 ||w||^2 (CRFsuite's c2 = rho2 / 2).  callback(info, w)
    after every epoch (info.objective: the epoch's loss as CRFsuite logs it -- the losses
    met during the epoch plus the penalty at its end; info.step the last eta; info.extra
    the improvement ratio once epoch > period, the feature l2 norm and the number of
    updates); returning True stops (reason ``"stopping criterion"``).  Other reasons:
    ``"converged"`` (the period / delta rule), ``"max_iter"``, ``"diverged (overflow)"``.
    The result's x is the weights of the epoch with the lowest loss, its objective that
    loss; ``result.calibration`` the calibration record (eta, t0, loss, initial_loss,
    samples, trials as (eta, loss, ok)), None when max_iter is 0.
    """
    rho2 = _real("rho2", rho2)
    max_iter = _integer("max_iter", max_iter, 0)
    period = _integer("period", period, 1)
    delta = _real("delta", delta, positive=False)
    calibration_eta = _real("calibration_eta", calibration_eta)
    calibration_rate = _real("calibration_rate", calibration_rate)
    if calibration_rate <= 1.0:
        raise ValueError(f"calibration_rate must be > 1, not {calibration_rate!r}")
    calibration_samples = _integer("calibration_samples", calibration_samples, 1)
    calibration_candidates = _integer("calibration_candidates", calibration_candidates, 1)
    calibration_max_trials = _integer("calibration_max_trials", calibration_max_trials, 1)
    if callback is not None and not callable(callback):
        raise ValueError("callback must be callable")
    if x0 is not None:
        x0 = np.asarray(x0)
        if x0.shape != (space.n_params,):
            raise ValueError(f"x0 must have shape ({space.n_params},), not {x0.shape}")
        if not np.isfinite(x0).all():
            raise ValueError("x0 must be finite")
    prob = _Problem(space, data)
    n = prob.n
    lam = rho2 / n  # CRFsuite's lambda = 2 c2 / N
    w = start_point(space.n_params, x0, "l2sgd's weights")
    infos: list[IterationInfo] = []
    clock = Clock()
    perm = np.arange(n, dtype=np.int64)
    if max_iter == 0:
        f = prob.loss(w, perm) + 0.5 * rho2 * float(w @ w)
        res = OptimizeResult(w, f, 0, 0, False, StopReason.MAX_ITER, infos)
        res.calibration = None
        return res
    rng = np.random.default_rng(seed)
    if shuffle:
        rng.shuffle(perm)
    cal = _calibrate(prob, w, perm[:min(n, calibration_samples)].copy(), lam, calibration_eta, calibration_rate,
                     calibration_candidates, calibration_max_trials)
    t0 = cal["t0"]
    best_w = w.copy()  # x0 (CRFsuite: zeros) when no epoch has a finite loss
    best_f = math.inf
    pf = np.empty(period)
    t = 0.0
    reason, converged = StopReason.MAX_ITER, False
    for epoch in range(1, max_iter + 1):
        if shuffle:
            rng.shuffle(perm)
        loss, t, eta = prob.epoch(w, perm, t0, lam, t)
        if not np.isfinite(loss):
            clock.record(infos, epoch, loss, step=eta, n_evals=epoch, extra={"updates": t})
            reason = StopReason.DIVERGED_OVERFLOW
            break
        norm2 = float(w @ w)
        f = loss + 0.5 * lam * norm2 * n
        if f < best_f:
            best_f = f
            best_w[:] = w
        tested = period < epoch
        improvement = _improvement(pf[(epoch - 1) % period], f) if tested else delta
        pf[(epoch - 1) % period] = f
        info = clock.record(infos, epoch, f, step=eta, n_evals=epoch, active=int(np.count_nonzero(w)),
                            extra={"improvement": improvement if tested else None, "feature_norm": math.sqrt(norm2),
                                   "updates": t})
        if callback is not None and callback(info, w):
            reason = StopReason.STOPPING_CRITERION
            break
        if improvement < delta:
            reason, converged = StopReason.CONVERGED, True
            break
    res = OptimizeResult(best_w, float(best_f), len(infos), len(infos), converged, reason, infos)
    res.calibration = cal
    res.t0 = t0
    return res


def train_crf(run) -> OptimizeResult:
    """``l2sgd`` of :mod:`crf.solvers`: CRFsuite's stopping rule over ``stopwin`` passes (0: none)."""
    st, o = run.settings, run.settings.options
    return l2sgd(run.space, run.data, rho2=st.rho2, max_iter=st.max_iter, x0=run.x0, delta=st.stopeps,
                 period=st.stopwin if st.stopwin else st.max_iter + 1,  # stopwin 0: no window rule
                 calibration_eta=o["calibration_eta"], calibration_rate=o["calibration_rate"],
                 calibration_samples=o["calibration_samples"], calibration_candidates=o["calibration_candidates"],
                 calibration_max_trials=o["calibration_max_trials"], seed=run.seed, callback=run.callback)
