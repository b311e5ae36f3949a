"""CRFsuite's passive-aggressive and AROW (crf.train.online) against plain replays of
CRFsuite's algorithms (train_passive_aggressive.c, train_arow.c) written here: dense
feature vectors, Viterbi by enumerating every labelling of tiny random problems."""

import functools
import itertools
import math

import numpy as np
import pytest

from crf.features import EncodedCorpus, FeatureSpace
from crf.inference import viterbi
from crf.patterns import parse_patterns
from crf.train.online import arow, passive_aggressive
from crf.transitions import allowed_pairs

from .crf_testutil import PATTERNS, random_corpus

# unigram, '*' (unigram + bigram), a pure bigram, the pure triple and an observation triple
PATTERNS2 = ["u:a=%x[0,0]", "*:d=%x[1,0]", "B", "T", "t:e=%x[0,1]"]
KINDS = ["first", "valued", "forbid", "second", "seen", "seen2"]


@functools.lru_cache(maxsize=None)
def problem(kind, seed=0, n_seq=6, max_len=4, L=3):
    """(space, data, paths) of a tiny random problem: first order, first order with
    real-valued unigram features, pair states of a first-order model with forbidden
    pairs, or second order (pair states, trigram features)."""
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    pats = PATTERNS2 if kind in ("second", "seen2") else PATTERNS
    space, data = FeatureSpace.build(parse_patterns("\n".join(pats) + "\n"), X, y)
    if kind.startswith("seen"):  # seen states (valued at first order): blocks of the labels seen
        space = space.restrict_states(data)
        assert space.bigram_start < space.n_unigram_obs * L
    if kind == "seen":
        data = EncodedCorpus(data.seq_offsets, data.unigram_base, data.bigram_base, data.labels,
                             rng.uniform(0.2, 2.0, size=data.unigram_base.shape), data.trigram_base,
                             data.unigram_states)
    if kind == "forbid":  # the pairs of the gold labels only (pair states even when all are seen)
        space.set_allowed(allowed_pairs("unseen", space.labels, data.labels, data.seq_offsets))
    if kind == "valued":
        data = EncodedCorpus(data.seq_offsets, data.unigram_base, data.bigram_base, data.labels,
                             rng.uniform(0.2, 2.0, size=data.unigram_base.shape), data.trigram_base)
    assert space.pairwise == (kind in ("forbid", "second", "seen2"))
    return space, data, Paths(space, data)


class Paths:
    """Every allowed labelling of every sequence, with its dense feature vector."""

    def __init__(self, space, data):
        L = space.n_labels
        allowed = np.ones(L * L, bool) if space.allowed is None else space.allowed
        self.paths, self.phi = [], []
        off = data.seq_offsets
        for i in range(data.n_sequences):
            T = int(off[i + 1] - off[i])
            ps = [ys for ys in itertools.product(range(L), repeat=T)
                  if all(allowed[ys[t - 1] * L + ys[t]] for t in range(1, T))]
            self.paths.append(np.array(ps, dtype=np.int64))
            self.phi.append(np.array([features(space, data, i, ys) for ys in ps]))

    def row(self, i, ys):
        return int(np.flatnonzero((self.paths[i] == np.asarray(ys)).all(axis=1))[0])


def features(space, data, i, ys):
    """phi(x_i, ys), plain numpy: unigram (times the values), bigram, trigram."""
    L = space.n_labels
    phi = np.zeros(space.n_params)
    s = data.seq_offsets[i]
    for t in range(len(ys)):
        for j, b in enumerate(data.unigram_base[s + t]):
            k = unigram_index(space, b, ys[t])
            if k >= 0:
                phi[k] += data.unigram_value[s + t, j] if data.valued else 1.0
        if t > 0:
            for b in data.bigram_base[s + t]:
                if b >= 0:
                    phi[b + ys[t - 1] * L + ys[t]] += 1.0
        if t > 1:
            for b in data.trigram_base[s + t]:
                if b >= 0:
                    phi[b + (ys[t - 2] * L + ys[t - 1]) * L + ys[t]] += 1.0
    return phi


def unigram_index(space, b, y):
    """The weight of label y in the unigram block at b (-1: no block, or seen states without y)."""
    if b < 0:
        return -1
    if not space.seen_states:
        return b + y
    u = int(np.searchsorted(space.state_ptr, b, side="right")) - 1
    labels = list(space.unigram_labels(u))
    return b + labels.index(y) if y in labels else -1


def brute_viterbi(P, space, data, w, i):
    """Row of the best labelling of sequence i by enumeration (asserting it is unique)."""
    sc = P.phi[i] @ w
    top = np.argsort(-sc, kind="stable")
    assert len(sc) == 1 or sc[top[0]] - sc[top[1]] > 1e-7, "a tie: the replay could not tell the kernels' choice"
    return int(top[0])


def kernel_viterbi(P, space, data, w, i):
    """Row of the labelling of sequence i that the package's Viterbi picks (ties included)."""
    pred, _ = viterbi(w, space, data)
    off = data.seq_offsets
    return P.row(i, pred[off[i]:off[i + 1]])


def step(P, space, data, w, i, decode):
    """(d, Delta, err) of sequence i at w: wrong labels, phi(gold) - phi(pred), score(pred) - score(gold)."""
    off = data.seq_offsets
    gold = data.labels[off[i]:off[i + 1]]
    b = decode(P, space, data, w, i)
    g = P.row(i, gold)
    d = int((P.paths[i][b] != gold).sum())
    delta = P.phi[i][g] - P.phi[i][b]
    return d, delta, float(P.phi[i][b] @ w - P.phi[i][g] @ w)


def reference_pa(space, data, P, x0, orders, pa_type, c, error_sensitive, averaging, epsilon=0.0,
                 decode=brute_viterbi):
    """train_passive_aggressive.c: (weights returned, losses of the epochs)."""
    w = x0.copy()
    ws = np.zeros_like(w)
    u = 1
    losses = []
    for order in orders:
        sum_loss = 0.0
        mistakes = 0
        for i in order:
            d, delta, err = step(P, space, data, w, i, decode)
            if d > 0:
                cost = err + (math.sqrt(d) if error_sensitive else 1.0)
                norm2 = float(delta @ delta)
                tau = {0: cost / norm2, 1: min(c, cost / norm2), 2: cost / (norm2 + 0.5 / c)}[pa_type]
                w = w + tau * delta
                ws = ws + tau * u * delta
                sum_loss += cost
                mistakes += 1
            u += 1
        losses.append(sum_loss)
        if sum_loss / len(order) < epsilon or (mistakes == 0 and not averaging):
            break
    return (w - ws / u if averaging else w), losses


def reference_arow(space, data, P, x0, orders, variance, gamma, epsilon=0.0, decode=brute_viterbi):
    """train_arow.c: (mean, losses of the epochs)."""
    mean = x0.copy()
    cov = np.full_like(mean, variance)
    losses = []
    for order in orders:
        sum_loss = 0.0
        for i in order:
            d, delta, err = step(P, space, data, mean, i, decode)
            if d > 0:
                cost = err + d
                prod = delta * delta
                alpha = cost / (gamma + prod @ cov)
                mean = mean + alpha * cov * delta
                cov = 1.0 / (1.0 / cov + prod / gamma)
                sum_loss += cost
        losses.append(sum_loss)
        if sum_loss / len(order) <= epsilon:
            break
    return mean, losses


def orders_of(n, epochs, shuffle, seed):
    rng = np.random.default_rng(seed)
    return [rng.permutation(n) if shuffle else np.arange(n) for _ in range(epochs)]


def start(space, seed=7):
    """A random start: no ties between labellings, so enumeration and Viterbi agree."""
    return np.random.default_rng(seed).normal(scale=0.5, size=space.n_params)


EPOCHS = [(1, False), (3, True)]


@pytest.mark.parametrize("epochs,shuffle", EPOCHS)
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("averaging", [True, False])
@pytest.mark.parametrize("error_sensitive", [True, False])
@pytest.mark.parametrize("pa_type,c", [(0, 1.0), (1, 0.05), (1, 1.0), (2, 0.5)])
def test_passive_aggressive_replays_crfsuite(pa_type, c, error_sensitive, averaging, kind, epochs, shuffle):
    space, data, P = problem(kind)
    x0 = start(space)
    infos = []
    res = passive_aggressive(space, data, max_iter=epochs, x0=x0, pa_type=pa_type, c=c,
                             error_sensitive=error_sensitive, averaging=averaging, shuffle=shuffle, seed=3,
                             callback=lambda info, x: infos.append((info.objective, x.copy())))
    want, losses = reference_pa(space, data, P, x0, orders_of(data.n_sequences, epochs, shuffle, 3), pa_type, c,
                                error_sensitive, averaging)
    np.testing.assert_allclose(res.x, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose([h.objective for h in res.history], losses, rtol=1e-12, atol=1e-9)
    assert res.n_iter == len(losses) and len(infos) == len(losses)
    np.testing.assert_allclose(infos[-1][1], res.x, rtol=0, atol=0)


@pytest.mark.parametrize("epochs,shuffle", EPOCHS + [(3, False)])
@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("variance,gamma", [(1.0, 1.0), (0.5, 2.0), (2.0, 0.3)])
def test_arow_replays_crfsuite(variance, gamma, kind, epochs, shuffle):
    space, data, P = problem(kind)
    x0 = start(space)
    res = arow(space, data, max_iter=epochs, x0=x0, variance=variance, gamma=gamma, shuffle=shuffle, seed=3)
    want, losses = reference_arow(space, data, P, x0, orders_of(data.n_sequences, epochs, shuffle, 3), variance,
                                  gamma)
    np.testing.assert_allclose(res.x, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose([h.objective for h in res.history], losses, rtol=1e-12, atol=1e-9)
    assert res.n_iter == len(losses)


@pytest.mark.parametrize("kind", ["first", "second"])
def test_from_zero_replays_with_the_packages_viterbi(kind):
    """From CRFsuite's start (zeros) every labelling ties at first: the replays decode with
    the package's Viterbi (its tie-breaking) and must still give the same weights."""
    space, data, P = problem(kind)
    x0 = np.zeros(space.n_params)
    orders = orders_of(data.n_sequences, 3, True, 0)
    res = passive_aggressive(space, data, max_iter=3)
    want, losses = reference_pa(space, data, P, x0, orders, 1, 1.0, True, True, decode=kernel_viterbi)
    np.testing.assert_allclose(res.x, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose([h.objective for h in res.history], losses, rtol=1e-12, atol=1e-9)
    res = arow(space, data, max_iter=3)
    want, losses = reference_arow(space, data, P, x0, orders, 1.0, 1.0, decode=kernel_viterbi)
    np.testing.assert_allclose(res.x, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose([h.objective for h in res.history], losses, rtol=1e-12, atol=1e-9)


def test_averaged_passive_aggressive_goes_on_after_an_epoch_without_mistake():
    """CRFsuite's test is loss / N < epsilon: with epsilon 0 the epochs go on, and the
    average w - ws / u still moves (u grows by N every epoch)."""
    space, data, P = problem("first")
    x0 = start(space)
    res = passive_aggressive(space, data, max_iter=12, x0=x0, shuffle=False)
    assert res.reason == "max_iter" and res.n_iter == 12
    mistakes = [h.extra["mistakes"] for h in res.history]
    assert mistakes[-1] == 0 and mistakes[0] > 0, mistakes
    want, losses = reference_pa(space, data, P, x0, orders_of(data.n_sequences, 12, False, 0), 1, 1.0, True, True)
    np.testing.assert_allclose(res.x, want, rtol=0, atol=1e-9)
    np.testing.assert_allclose([h.objective for h in res.history], losses, atol=1e-9)
    # without averaging nothing moves any more: it stops there
    plain = passive_aggressive(space, data, max_iter=12, x0=x0, shuffle=False, averaging=False)
    assert plain.reason == "no mistake" and plain.converged and plain.history[-1].objective == 0.0
    want, _ = reference_pa(space, data, P, x0, orders_of(data.n_sequences, 12, False, 0), 1, 1.0, True, False)
    np.testing.assert_allclose(plain.x, want, rtol=0, atol=1e-9)


def test_stopping_rules():
    space, data, P = problem("first")
    n = data.n_sequences
    # epsilon: PA stops when loss / N < epsilon, AROW when loss / N <= epsilon
    first = passive_aggressive(space, data, max_iter=1).history[0].objective
    res = passive_aggressive(space, data, max_iter=2, epsilon=first / n)
    assert res.n_iter == 2 and res.history[0].objective == first
    res = passive_aggressive(space, data, max_iter=5, epsilon=first / n * 1.0001)
    assert res.n_iter == 1 and res.reason == "mean loss below epsilon" and res.converged
    first = arow(space, data, max_iter=1).history[0].objective
    res = arow(space, data, max_iter=5, epsilon=first / n)
    assert res.n_iter == 1 and res.reason == "mean loss below epsilon" and res.converged
    # the callback sees every epoch and stops
    seen = []
    res = arow(space, data, max_iter=5, callback=lambda info, x: seen.append(info.n_iter) or info.n_iter == 2)
    assert seen == [1, 2] and res.n_iter == 2 and res.reason == "stopping criterion" and not res.converged
    res = passive_aggressive(space, data, max_iter=0)
    assert res.n_iter == 0 and res.reason == "max_iter" and not res.x.any()


def separable(pattern_text):
    rng = np.random.default_rng(5)
    # label = f(word, previous word): separable with unigram + bigram-of-words features
    X, y = [], []
    for _ in range(40):
        T = int(rng.integers(2, 7))
        words = [f"w{k}" for k in rng.integers(0, 4, size=T)]
        X.append([[wd] for wd in words])
        y.append(["A" if wd in ("w0", "w1") else ("B" if wd == "w2" else "C") for wd in words])
    return FeatureSpace.build(parse_patterns(pattern_text), X, y)


@pytest.mark.parametrize("pairs", [False, True])
@pytest.mark.parametrize("train", [
    lambda s, d: passive_aggressive(s, d, max_iter=30),
    lambda s, d: passive_aggressive(s, d, max_iter=30, pa_type=0, error_sensitive=False),
    lambda s, d: passive_aggressive(s, d, max_iter=30, pa_type=2, averaging=False),
    lambda s, d: arow(s, d, max_iter=30),
    lambda s, d: arow(s, d, max_iter=30, variance=0.1, gamma=5.0),
], ids=["pa1", "pa0", "pa2-last", "arow", "arow-v0.1-g5"])
def test_learns_a_separable_problem(train, pairs):
    space, data = separable("u:%x[0,0]\nu:%x[-1,0]/%x[0,0]\nB\n")
    if pairs:
        space.set_allowed(allowed_pairs("unseen", space.labels, data.labels, data.seq_offsets))
        assert space.pairwise
    res = train(space, data)
    assert res.history[-1].extra["mistakes"] == 0
    assert res.reason in ("no mistake", "max_iter")
    pred, _ = viterbi(res.x, space, data)
    np.testing.assert_array_equal(pred, data.labels)


def test_bad_parameters_are_refused():
    space, data, _ = problem("first")
    for kw in [dict(pa_type=3), dict(pa_type=-1), dict(pa_type=True), dict(pa_type=1.5), dict(c=0.0),
               dict(c=-1.0), dict(c=float("nan")), dict(c=float("inf")), dict(epsilon=-1e-3),
               dict(epsilon=float("nan")), dict(max_iter=-1), dict(max_iter=2.5)]:
        with pytest.raises(ValueError):
            passive_aggressive(space, data, **kw)
    for kw in [dict(variance=0.0), dict(variance=-2.0), dict(gamma=0.0), dict(gamma=-1.0),
               dict(gamma=float("nan")), dict(variance=float("inf")), dict(epsilon=-1.0), dict(max_iter=-3)]:
        with pytest.raises(ValueError):
            arow(space, data, **kw)
    # gold labels that use a forbidden pair
    space2, data2 = separable("u:%x[0,0]\nB\n")
    allowed = allowed_pairs("unseen", space2.labels, data2.labels, data2.seq_offsets)
    allowed[np.flatnonzero(allowed)[0]] = False
    space2.set_allowed(allowed)
    with pytest.raises(ValueError, match="forbids"):
        passive_aggressive(space2, data2, max_iter=1)
    with pytest.raises(ValueError, match="forbids"):
        arow(space2, data2, max_iter=1)
