"""CRFsuite's l2sgd (crf.train.l2sgd): the kernels and the driver replayed against a slow
plain-numpy version of CRFsuite's algorithm written here (train_l2sgd.c: eager Pegasos
steps instead of the decay scale trick, the calibration loop and the period / delta rule
written out again), convergence to the L-BFGS optimum, and the parameter checks.

The reference loss and gradient of a first-order sequence come from listing all L^T
labelings (T <= 4); on label-pair states (second order, forbidden pairs) from the
objective of a one-sequence corpus, itself checked by enumeration in test_order2.py.
"""

import itertools
import math

import numpy as np
import pytest

from crf.features import EncodedCorpus, FeatureSpace
from crf.inference import Objective
from crf.patterns import parse_patterns
from crf.train import lbfgs
from crf.train import _sequence_kernels as SQ
from crf.train import _l2sgd_kernels as LK
from crf.train.l2sgd import calibration_etas, l2sgd
from crf.transitions import allowed_pairs

from .crf_testutil import PATTERNS, enumerate_sequences, logsumexp

PATTERNS2 = ["u:a=%x[0,0]", "*:d=%x[1,0]", "B", "T", "t:e=%x[0,1]"]


def learnable_corpus(rng, n_seq, max_len, L, vocab=4, noise=0.2):
    """2-column sequences whose label is mostly a function of the word (random labels
    would make every calibration trial worse than w = 0: nothing to learn online)."""
    X, y = [], []
    for _ in range(n_seq):
        T = int(rng.integers(1, max_len + 1))
        words = rng.integers(vocab, size=T)
        X.append([[f"w{k}", f"p{k % 2}"] for k in words])
        y.append([f"L{(k if rng.random() > noise else rng.integers(L)) % L}" for k in words])
    for k in range(L):  # every label appears
        if not any(f"L{k}" in s for s in y):
            X.append([["w0", "p0"]])
            y.append([f"L{k}"])
    return X, y


def problem(seed=0, n_seq=8, max_len=4, L=3, patterns=PATTERNS, forbid=None):
    rng = np.random.default_rng(seed)
    X, y = learnable_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns) + "\n"), X, y)
    if forbid is not None:
        space.set_allowed(allowed_pairs(forbid, space.labels, data.labels, data.seq_offsets))
    return X, space, data


# --------------------------------------------------------------------------- references
class Enumerated:
    """loss_grad(w, i): -log p(y_i|x_i) and its gradient, by listing every labeling."""

    def __init__(self, space, data):
        L = space.n_labels
        self.phi, self.gold = [], []
        off = data.seq_offsets
        for i in range(data.n_sequences):
            s, e = off[i], off[i + 1]
            paths = np.array(list(itertools.product(range(L), repeat=int(e - s))), dtype=np.int64)
            phi = np.zeros((len(paths), space.n_params))
            for r, ys in enumerate(paths):
                for t in range(e - s):
                    for b in data.unigram_base[s + t]:
                        if b >= 0:
                            phi[r, b + ys[t]] += 1
                    if t > 0:
                        for b in data.bigram_base[s + t]:
                            if b >= 0:
                                phi[r, b + ys[t - 1] * L + ys[t]] += 1
            self.phi.append(phi)
            self.gold.append(int(np.flatnonzero((paths == data.labels[s:e]).all(axis=1))[0]))

    def loss_grad(self, w, i):
        sc = self.phi[i] @ w
        lz = logsumexp(sc)
        return lz - sc[self.gold[i]], np.exp(sc - lz) @ self.phi[i] - self.phi[i][self.gold[i]]


class OneSequence:
    """loss_grad(w, i) from the objective of a one-sequence corpus (label-pair states)."""

    def __init__(self, space, data):
        self.objs = []
        for i in range(data.n_sequences):
            s, e = int(data.seq_offsets[i]), int(data.seq_offsets[i + 1])
            one = EncodedCorpus(np.array([0, e - s]), data.unigram_base[s:e].copy(), data.bigram_base[s:e].copy(),
                                data.labels[s:e].copy(), trigram_base=data.trigram_base[s:e].copy())
            self.objs.append(Objective(space, one, n_chunks=1))

    def loss_grad(self, w, i):
        f, g = self.objs[i].value_and_gradient(w)
        return f, g.copy()


def reference(space, data):
    return OneSequence(space, data) if space.pairwise else Enumerated(space, data)


def ref_epoch(ref, w, order, t0, lam, t):
    """CRFsuite's epoch as Pegasos steps on the model's weights, every weight shrunk
    eagerly: eta = 1/(lam (t0 + t)), w *= 1 - eta lam, w -= eta grad_i(w) (loss and
    gradient at the shrunk w).  A zero shrink makes CRFsuite's gain eta / decay
    infinite: the epoch's loss is then NaN.  Returns (w, sum of losses, t, last eta)."""
    w = w.copy()
    total = 0.0
    eta = 0.0
    for i in order:
        eta = 1.0 / (lam * (t0 + t))
        shrink = 1.0 - eta * lam
        if shrink == 0.0:
            return w, math.nan, t, eta
        w = shrink * w
        f, g = ref.loss_grad(w, i)
        total += f
        w = w - eta * g
        t += 1.0
    return w, total, t, eta


def ref_calibration(ref, w0, sample, lam, eta0, rate, candidates, max_trials):
    """l2sgd_calibration of train_l2sgd.c, line by line."""
    S = len(sample)
    init_loss = sum(ref.loss_grad(w0, i)[0] for i in sample) + 0.5 * lam * (w0 @ w0) * S
    num, dec, trials = candidates, False, 1
    eta, best_eta, best_loss = eta0, eta0, math.inf
    out = []
    while num > 0 or not dec:
        w, loss, _, _ = ref_epoch(ref, w0, sample, 1.0 / (lam * eta), lam, 0.0)
        if math.isfinite(loss):
            loss += 0.5 * lam * (w @ w) * S
        ok = math.isfinite(loss) and loss < init_loss
        out.append((eta, loss, ok))
        if ok:
            num -= 1
        if math.isfinite(loss) and loss < best_loss:
            best_loss, best_eta = loss, eta
        if not dec:
            if ok and 0 < num:
                eta *= rate
            else:
                dec = True
                num = candidates
                eta = eta0 / rate
        else:
            eta /= rate
        trials += 1
        if max_trials <= trials:
            break
    return best_eta, init_loss, out


def ref_l2sgd(ref, n, P, rho2, max_iter, period, delta, eta0, rate, samples, candidates, max_trials, shuffle, seed):
    """train_l2sgd.c's crfsuite_train_l2sgd + l2sgd, with the driver's documented shuffles."""
    lam = rho2 / n
    rng = np.random.default_rng(seed)
    perm = np.arange(n)
    if shuffle:
        rng.shuffle(perm)
    best_eta, init_loss, trials = ref_calibration(ref, np.zeros(P), perm[:min(n, samples)].copy(), lam, eta0, rate,
                                                  candidates, max_trials)
    t0 = 1.0 / (lam * best_eta)
    w, best_w, best = np.zeros(P), np.zeros(P), math.inf
    pf = [0.0] * period
    t = 0.0
    losses, etas, reason = [], [], "max_iter"
    for epoch in range(1, max_iter + 1):
        if shuffle:
            rng.shuffle(perm)
        w, loss, t, eta = ref_epoch(ref, w, perm, t0, lam, t)
        f = loss + 0.5 * lam * (w @ w) * n
        if f < best:
            best, best_w = f, w.copy()
        improvement = (pf[(epoch - 1) % period] - f) / f if period < epoch else delta
        pf[(epoch - 1) % period] = f
        losses.append(f)
        etas.append(eta)
        if improvement < delta:
            reason = "converged"
            break
    return dict(x=best_w, objective=best, losses=losses, etas=etas, reason=reason, t0=t0, eta=best_eta,
                init_loss=init_loss, trials=trials, t=t)


# --------------------------------------------------------------------------- the reference itself
def test_enumerated_features_are_those_of_the_patterns():
    """The reference's feature rows give the scores of crf_testutil's string-level
    enumeration, and its gradient is that of its loss (central differences)."""
    X, space, data = problem(0)
    ref = Enumerated(space, data)
    theta = np.random.default_rng(1).normal(size=space.n_params)
    for i in range(data.n_sequences):
        want = enumerate_sequences(space, theta, X[i])
        np.testing.assert_allclose(ref.phi[i] @ theta, [sc for _, sc in want], rtol=1e-12, atol=1e-12)
    i = int(np.argmax(np.diff(data.seq_offsets)))
    _, g = ref.loss_grad(theta, i)
    h = 1e-6
    fd = [(ref.loss_grad(theta + h * e, i)[0] - ref.loss_grad(theta - h * e, i)[0]) / (2 * h)
          for e in np.eye(space.n_params)]
    np.testing.assert_allclose(fd, g, atol=1e-7)


# --------------------------------------------------------------------------- kernels
def run_epoch_kernel(space, data, w, order, t0, lam, t):
    P = space.n_params
    v, g = np.zeros(P), np.zeros(P)
    state = np.array([t, 0.0])
    if space.pairwise:
        st = space.structure
        blk_ptr, blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base,
                                              data.trigram_base)
        loss = LK.l2sgd_epoch2(w, v, g, order, t0, lam, data.seq_offsets, data.unigram_base, data.unigram_value,
                               data.unigram_states, data.bigram_base, data.trigram_base, data.labels, blk_ptr, blocks,
                               np.int64(space.n_labels), np.int64(space.bigram_start), np.int64(space.trigram_start),
                               st.pairs, st.pair_pos, st.pred_ptr, st.pred_j, st.pred_r, state)
    else:
        blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
        loss = LK.l2sgd_epoch(w, v, g, order, t0, lam, data.seq_offsets, data.unigram_base, data.unigram_value,
                              data.unigram_states, data.bigram_base, data.labels, blk_ptr, blocks,
                              np.int64(space.n_labels), np.int64(space.bigram_start), state)
    if math.isfinite(loss):
        assert not g.any()  # the scratch gradient is left zero
    return loss, state


CASES = [dict(), dict(patterns=PATTERNS2, forbid="unseen", n_seq=6, max_len=5),
         dict(patterns=["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], forbid="unseen", n_seq=6, max_len=5)]


@pytest.mark.parametrize("case", range(len(CASES)))
def test_epoch_kernel_replays_eager_pegasos_steps(case):
    """Every prefix of an epoch (scale trick, lazy block reads) is the eager reference's,
    from random weights and a non-zero update count, with a learning rate above
    1 / lambda at the first step (negative shrink) in the second run."""
    _, space, data = problem(3, **CASES[case])
    assert space.pairwise == (case > 0)
    ref = reference(space, data)
    n = data.n_sequences
    w0 = np.random.default_rng(2).normal(scale=0.3, size=space.n_params)
    order = np.random.default_rng(3).permutation(n).astype(np.int64)
    for t0, lam, t in [(7.5, 0.4, 3.0), (0.3, 2.0, 0.0)]:
        for k in range(1, n + 1):
            w_ref, loss_ref, t_ref, eta_ref = ref_epoch(ref, w0, order[:k], t0, lam, t)
            w = w0.copy()
            loss, state = run_epoch_kernel(space, data, w, order[:k], t0, lam, t)
            np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10)
            assert loss == pytest.approx(loss_ref, rel=1e-11)
            assert state[0] == t_ref == t + k and state[1] == pytest.approx(eta_ref, rel=1e-15)


def test_a_zero_decay_is_a_non_finite_epoch():
    """t0 + t = 1 makes CRFsuite's decay 0 and its gain eta / decay infinite."""
    _, space, data = problem(0)
    w = np.zeros(space.n_params)
    loss, _ = run_epoch_kernel(space, data, w, np.arange(data.n_sequences), 1.0, 0.5, 0.0)
    assert math.isnan(loss)


@pytest.mark.parametrize("case", range(len(CASES)))
def test_sample_loss_is_the_objective(case):
    _, space, data = problem(4, **CASES[case])
    w = np.random.default_rng(0).normal(scale=0.5, size=space.n_params)
    want, _ = Objective(space, data, n_chunks=1).value_and_gradient(w)
    order = np.arange(data.n_sequences)
    if space.pairwise:
        st = space.structure
        got = LK.sample_loss2(w, order, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                              data.bigram_base, data.trigram_base, data.labels, np.int64(space.n_labels), st.pairs,
                              st.pred_ptr, st.pred_j, st.pred_r)
    else:
        got = LK.sample_loss(w, order, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                             data.bigram_base, data.labels, np.int64(space.n_labels))
    assert got == pytest.approx(want, rel=1e-12)


# --------------------------------------------------------------------------- driver
def test_calibration_search_order():
    """The control flow of l2sgd_calibration by hand: up while ok, then down from
    eta0 / rate until `candidates` ok trials; max_trials - 1 trials at most."""
    def run(oks, **kw):
        gen = calibration_etas(**kw)
        etas = [next(gen)]
        try:
            for ok in oks:
                etas.append(gen.send(ok))
        except StopIteration:
            return etas
        raise AssertionError("the search goes on")

    assert run([True] * 6, calibration_eta=0.1, calibration_candidates=3) == [0.1, 0.2, 0.4, 0.05, 0.025, 0.0125]
    assert run([True, False, False, True, True, True], calibration_eta=1.0, calibration_rate=4.0,
               calibration_candidates=3) == [1.0, 4.0, 0.25, 0.0625, 0.015625, 0.00390625]
    assert run([True, True], calibration_eta=0.1, calibration_max_trials=3) == [0.1, 0.2]
    assert run([False], calibration_max_trials=2) == [0.1]
    assert run([False] * 19) == [0.1] + [0.1 / 2 ** k for k in range(1, 19)]  # 19 trials by default


RUNS = [
    # (case, rho2, options): the first order with defaults; a run stopped by period / delta;
    # lambda = 1 with etas above 1 / lambda (negative first shrink) and an eta of exactly
    # 1 / lambda (zero decay: a non-finite trial); shuffled runs; label-pair states
    (0, 1.0, dict(max_iter=12, shuffle=False)),
    (0, 1.0, dict(max_iter=60, period=3, delta=1e-3, calibration_samples=5, shuffle=False)),
    (0, 8.0, dict(max_iter=10, calibration_eta=0.4, shuffle=True, seed=5)),
    (0, 8.0, dict(max_iter=6, calibration_eta=1.0, calibration_rate=4.0, calibration_candidates=3, shuffle=True)),
    (0, 0.5, dict(max_iter=25, period=2, delta=1e-2, calibration_max_trials=6, shuffle=True, seed=1)),
    (1, 1.0, dict(max_iter=8, period=3, delta=1e-3, calibration_candidates=4, shuffle=True, seed=2)),
    (2, 1.0, dict(max_iter=8, calibration_samples=4, calibration_candidates=3, shuffle=False)),
]


@pytest.mark.parametrize("run", range(len(RUNS)))
def test_l2sgd_replays_crfsuite(run):
    case, rho2, opts = RUNS[run]
    _, space, data = problem(0, **CASES[case])
    n = data.n_sequences
    ref = reference(space, data)
    defaults = dict(max_iter=1000, period=10, delta=1e-5, calibration_eta=0.1, calibration_rate=2.0,
                    calibration_samples=1000, calibration_candidates=10, calibration_max_trials=20, shuffle=True,
                    seed=0)
    o = {**defaults, **opts}
    want = ref_l2sgd(ref, n, space.n_params, rho2, o["max_iter"], o["period"], o["delta"], o["calibration_eta"],
                     o["calibration_rate"], o["calibration_samples"], o["calibration_candidates"],
                     o["calibration_max_trials"], o["shuffle"], o["seed"])
    seen = []
    res = l2sgd(space, data, rho2, callback=lambda info, w: seen.append((info.n_iter, w.copy())), **opts)
    cal = res.calibration
    # the calibration: the same trials, losses, verdicts and t0
    assert [e for e, _, _ in cal["trials"]] == [e for e, _, _ in want["trials"]]
    assert [ok for _, _, ok in cal["trials"]] == [ok for _, _, ok in want["trials"]]
    np.testing.assert_allclose([x for _, x, _ in cal["trials"]], [x for _, x, _ in want["trials"]], rtol=1e-11)
    assert cal["initial_loss"] == pytest.approx(want["init_loss"], rel=1e-12)
    assert cal["eta"] == want["eta"] and res.t0 == want["t0"]
    assert cal["samples"] == min(n, o["calibration_samples"])
    # the epochs: the same losses, learning rates, stop and best weights
    assert res.reason == want["reason"] and res.converged == (want["reason"] == "converged")
    np.testing.assert_allclose([i.objective for i in res.history], want["losses"], rtol=1e-11)
    np.testing.assert_allclose([i.step for i in res.history], want["etas"], rtol=1e-14)
    assert [i.n_iter for i in res.history] == list(range(1, len(want["losses"]) + 1))
    assert res.history[-1].extra["updates"] == want["t"] == n * res.n_iter
    np.testing.assert_allclose(res.x, want["x"], rtol=0, atol=1e-9)
    assert res.objective == pytest.approx(want["objective"], rel=1e-11) and res.objective == min(i.objective for i in res.history)
    assert [k for k, _ in seen] == list(range(1, res.n_iter + 1))
    # what each run is there for
    if run == 1:
        assert res.reason == "converged" and res.n_iter > 3 and cal["samples"] == 5
        assert res.history[3].extra["improvement"] is not None and res.history[2].extra["improvement"] is None
    if run == 2:
        assert any(e * rho2 / n > 1 for e, _, _ in cal["trials"])  # negative shrink at the first step
    if run == 3:
        assert cal["trials"][0][0] == 1.0 and math.isnan(cal["trials"][0][1]) and not cal["trials"][0][2]
    if run == 4:
        assert len(cal["trials"]) == 5
    assert any(ok for _, _, ok in cal["trials"])


def test_reaches_the_lbfgs_optimum():
    """With the period / delta rule off (period = max_iter) 1000 epochs of 30 sequences
    come within 1e-5 of the optimum (measured 6e-7; SGD with eta = 1/(lambda (t0 + t))
    has suboptimality O(1/t)); the distance to the optimum is then within what strong
    convexity allows, ||x - x*||^2 <= 2 (f(x) - f*) / rho2."""
    _, space, data = problem(0, n_seq=30, max_len=6)
    obj = Objective(space, data, n_chunks=1)
    rho2 = 1.0
    ref = lbfgs(obj.value_and_gradient, np.zeros(space.n_params), rho2=rho2, max_iter=2000, gtol=1e-10)
    res = l2sgd(space, data, rho2, max_iter=1000, period=1000)
    assert res.reason == "max_iter" and res.n_iter == 1000
    loss, _ = obj.value_and_gradient(res.x)
    f = loss + 0.5 * rho2 * res.x @ res.x
    assert ref.objective * (1 - 1e-12) <= f <= ref.objective * (1 + 1e-5)
    assert np.sum((res.x - ref.x) ** 2) <= 2 * (f - ref.objective) / rho2 + 1e-12
    # the logged loss (losses met during the epoch) is close to, and above, the objective
    assert f < res.objective < f * (1 + 1e-3)
    # and CRFsuite's own stopping rule stops it early, near the optimum
    stopped = l2sgd(space, data, rho2)
    assert stopped.reason == "converged" and 10 < stopped.n_iter < 1000
    loss, _ = obj.value_and_gradient(stopped.x)
    assert loss + 0.5 * rho2 * stopped.x @ stopped.x == pytest.approx(ref.objective, rel=1e-3)


def test_reaches_the_lbfgs_optimum_on_pair_states():
    _, space, data = problem(9, n_seq=20, max_len=6, patterns=["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], forbid="unseen")
    assert space.pairwise and not space.allowed.all()
    obj = Objective(space, data, n_chunks=1)
    rho2 = 1.0
    ref = lbfgs(obj.value_and_gradient, np.zeros(space.n_params), rho2=rho2, max_iter=2000, gtol=1e-10)
    res = l2sgd(space, data, rho2, max_iter=300, period=300)
    loss, _ = obj.value_and_gradient(res.x)
    f = loss + 0.5 * rho2 * res.x @ res.x
    assert ref.objective * (1 - 1e-12) <= f <= ref.objective * (1 + 1e-4)  # measured 2e-6


def test_callback_stop_start_point_and_no_epoch():
    _, space, data = problem(0)
    res = l2sgd(space, data, 1.0, callback=lambda info, w: info.n_iter == 3)
    assert res.n_iter == 3 and res.reason == "stopping criterion" and not res.converged
    assert res.objective == min(i.objective for i in res.history)
    x0 = np.random.default_rng(0).normal(scale=0.1, size=space.n_params)
    res = l2sgd(space, data, 2.0, max_iter=0, x0=x0)
    loss, _ = Objective(space, data, n_chunks=1).value_and_gradient(x0)
    np.testing.assert_array_equal(res.x, x0)
    assert res.objective == pytest.approx(loss + x0 @ x0, rel=1e-12)
    assert res.n_iter == 0 and res.reason == "max_iter" and res.calibration is None
    # from x0: the calibration's initial loss is at x0
    res = l2sgd(space, data, 2.0, max_iter=2, x0=x0, shuffle=False)
    n = data.n_sequences
    assert res.calibration["initial_loss"] == pytest.approx(loss + 0.5 * (2.0 / n) * (x0 @ x0) * n, rel=1e-12)


def test_forbidden_gold_pair_is_refused():
    _, space, data = problem(0, patterns=["u:a=%x[0,0]", "B"])
    off, lab, L = data.seq_offsets, data.labels, space.n_labels
    i = next(i for i in range(data.n_sequences) if off[i + 1] - off[i] >= 2)
    allowed = np.ones(L * L, dtype=bool)
    allowed[lab[off[i]] * L + lab[off[i] + 1]] = False
    space.set_allowed(allowed)
    with pytest.raises(ValueError, match=f"sequence {i + 1} uses a label pair the model forbids"):
        l2sgd(space, data, 1.0)


@pytest.mark.parametrize("kw", [
    dict(rho2=0.0), dict(rho2=-1.0), dict(rho2=math.inf), dict(rho2=math.nan),
    dict(max_iter=-1), dict(max_iter=1.5), dict(period=0), dict(delta=-1e-3), dict(delta=math.nan),
    dict(calibration_eta=0.0), dict(calibration_rate=1.0), dict(calibration_rate=0.5),
    dict(calibration_samples=0), dict(calibration_candidates=0), dict(calibration_max_trials=0),
    dict(x0=np.zeros(3)), dict(callback=1),
])
def test_bad_parameters_are_refused(kw):
    _, space, data = problem(0, n_seq=3)
    kw = {"rho2": 1.0, **kw}
    with pytest.raises(ValueError):
        l2sgd(space, data, **kw)
