"""The per-sequence solver kernels (SGD-l1, SAG / SAG-NUS*, BCD) and the L-BFGS
two-loop recursion replayed step by step against plain-numpy versions written here
(as scikit-learn's test_sag.py does): same problem, same index sequence, weights
compared to ~1e-10.

The reference CRF loss, gradient and marginals of a sequence come from listing all
L^T label sequences (T <= 4), not from any forward-backward.
"""

import itertools

import numpy as np
import pytest

from crf.features import FeatureSpace
from crf.patterns import parse_patterns
from crf.train import _bcd_kernels as BK
from crf.train import _sag_kernels as AK
from crf.train import _sequence_kernels as SQ
from crf.train import _sgd_kernels as GK
from crf.train.lbfgs import LbfgsHistory
from crf.train.sgd_l1 import learning_rates

from .crf_testutil import PATTERNS, enumerate_sequences, logsumexp, random_corpus


def small_problem(seed=0, n_seq=8, max_len=4, L=3):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    return X, space, data


class Enumerated:
    """Exact loss, gradient and marginals of each sequence by enumeration of its labelings.

    phi[i]: float64 (L^T, n_params) feature counts of every labeling of sequence i (rows
    in itertools.product order), gold[i] the row of the gold labels.
    """

    def __init__(self, space, data):
        self.L = L = space.n_labels
        self.space, self.data = space, data
        self.phi, self.gold, self.paths = [], [], []
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
            gold = int(np.flatnonzero((paths == data.labels[s:e]).all(axis=1))[0])
            self.phi.append(phi)
            self.gold.append(gold)
            self.paths.append(paths)

    def probs(self, w, i):
        sc = self.phi[i] @ w
        return np.exp(sc - logsumexp(sc))

    def loss(self, w, i):
        sc = self.phi[i] @ w
        return logsumexp(sc) - sc[self.gold[i]]

    def loss_grad(self, w, i):
        p = self.probs(w, i)
        return self.loss(w, i), p @ self.phi[i] - self.phi[i][self.gold[i]]

    def unary(self, w, i):
        """(T, L) p(y_t = y | x)."""
        p = self.probs(w, i)
        paths = self.paths[i]
        return np.array([[p[paths[:, t] == y].sum() for y in range(self.L)] for t in range(paths.shape[1])])

    def pairwise(self, w, i, t):
        """(L*L,) p(y_{t-1} = y', y_t = y | x) at index y' L + y."""
        p = self.probs(w, i)
        k = self.paths[i][:, t - 1] * self.L + self.paths[i][:, t]
        return np.bincount(k, weights=p, minlength=self.L * self.L)


def test_enumerated_features_are_those_of_the_patterns():
    """The reference's feature rows give the scores of crf_testutil's string-level enumeration."""
    X, space, data = small_problem(0)
    ref = Enumerated(space, data)
    theta = np.random.default_rng(1).normal(size=space.n_params)
    for i in range(data.n_sequences):
        want = enumerate_sequences(space, theta, X[i])
        assert [tuple(r) for r in ref.paths[i]] == [ys for ys, _ in want]
        np.testing.assert_allclose(ref.phi[i] @ theta, [sc for _, sc in want], rtol=1e-12, atol=1e-12)
    # and the gradient is that of the loss (central differences)
    i = int(np.argmax(np.diff(data.seq_offsets)))
    f, g = ref.loss_grad(theta, i)
    h = 1e-6
    fd = np.array([(ref.loss(theta + h * e, i) - ref.loss(theta - h * e, i)) / (2 * h) for e in np.eye(len(theta))])
    np.testing.assert_allclose(fd, g, atol=1e-7)


def blocks_of(space, data, i):
    """The weight indices of the blocks active in sequence i (unigram blocks anywhere,
    bigram blocks from its second token on), from the encoded arrays directly."""
    s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
    L = space.n_labels
    idx = set()
    for b in data.unigram_base[s:e].ravel():
        if b >= 0:
            idx.update(range(b, b + L))
    for b in data.bigram_base[s + 1:e].ravel():
        if b >= 0:
            idx.update(range(b, b + L * L))
    return np.array(sorted(idx), dtype=np.int64)


# --------------------------------------------------------------------------- SGD-l1
def clip(w, q, j, u):
    """Tsuruoka et al. (2009) cumulative penalty on w[j] (Lavergne et al. eq. 8)."""
    z = w[j]
    if z > 0:
        w[j] = max(0.0, z - (u + q[j]))
    elif z < 0:
        w[j] = min(0.0, z + (u - q[j]))
    q[j] += w[j] - z


class SgdReference:
    """SGD with the cumulative l1 penalty, every weight shrunk eagerly by (1 - eta rho2 / n)."""

    def __init__(self, ref, space, data, w0, rho1_n, rho2_n):
        self.ref = ref
        self.w = w0.copy()
        self.q = np.zeros_like(w0)
        self.u = 0.0
        self.rho1_n, self.rho2_n = rho1_n, rho2_n
        self.blocks = [blocks_of(space, data, i) for i in range(data.n_sequences)]
        self.total = 0.0

    def step(self, i, eta):
        self.u += eta * self.rho1_n
        self.w *= 1.0 - eta * self.rho2_n
        f, g = self.ref.loss_grad(self.w, i)
        self.total += f
        for j in self.blocks[i]:
            self.w[j] -= eta * g[j]
            if self.rho1_n > 0:
                clip(self.w, self.q, j, self.u)

    def flushed(self):
        """(w, q) after the end-of-pass clipping of every weight."""
        w, q = self.w.copy(), self.q.copy()
        if self.rho1_n > 0:
            for j in range(len(w)):
                clip(w, q, j, self.u)
        return w, q


def run_sgd_kernel(space, data, w, q, lastc, order, etas, rho1_n, rho2_n, state):
    blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    g = np.zeros(space.n_params)
    total = GK.sgd_l1_epoch(w, q, lastc, g, order, etas, data.seq_offsets, data.unigram_base, data.unigram_value,
                            data.unigram_states, data.bigram_base, data.labels, blk_ptr, blocks,
                            np.int64(space.n_labels), np.int64(space.bigram_start), rho1_n, rho2_n, state)
    assert not g.any()  # the scratch gradient is left zero
    return total


@pytest.mark.parametrize("rho1,rho2", [(0.3, 0.0), (0.3, 0.5), (0.0, 0.5)])
def test_sgd_l1_epoch_replays_the_plain_algorithm(rho1, rho2):
    _, space, data = small_problem(0)
    ref = Enumerated(space, data)
    n = data.n_sequences
    rho1_n, rho2_n = rho1 / n, rho2 / n
    w0 = np.random.default_rng(2).normal(scale=0.3, size=space.n_params)
    order = np.random.default_rng(3).permutation(n).astype(np.int64)
    etas = learning_rates("exponential", 0.5, 0, n, n, decay=0.5)
    py = SgdReference(ref, space, data, w0, rho1_n, rho2_n)
    # every prefix of the pass: k steps of the kernel against k steps of the reference
    for k in range(1, n + 1):
        py.step(order[k - 1], etas[k - 1])
        w, q = w0.copy(), np.zeros(space.n_params)
        lastc = np.zeros(space.n_params) if rho2 > 0 else np.zeros(1)
        state = np.zeros(2)
        total = run_sgd_kernel(space, data, w, q, lastc, order[:k], etas[:k], rho1_n, rho2_n, state)
        w_ref, q_ref = py.flushed()
        np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10)
        np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-10)
        assert total == pytest.approx(py.total, rel=1e-11)
        assert state[0] == pytest.approx(py.u, rel=1e-14) and state[1] == 0.0
        assert not lastc.any()
    # a second pass continues from the state of the first (u, q, the flushed weights)
    if rho1 > 0:
        assert np.count_nonzero(w == 0) > 0  # the penalty did clip some weights
    py.w, py.q = py.flushed()
    py.total = 0.0
    order2 = np.random.default_rng(4).permutation(n).astype(np.int64)
    etas2 = learning_rates("exponential", 0.5, n, n, n, decay=0.5)
    for i, eta in zip(order2, etas2):
        py.step(i, eta)
    total = run_sgd_kernel(space, data, w, q, lastc, order2, etas2, rho1_n, rho2_n, state)
    w_ref, q_ref = py.flushed()
    np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10)
    np.testing.assert_allclose(q, q_ref, rtol=0, atol=1e-10)
    assert total == pytest.approx(py.total, rel=1e-11)
    assert state[0] == pytest.approx(py.u, rel=1e-14)


# --------------------------------------------------------------------------- SAG
def reference_sag(ref, n, rho2, nus, passes, seed):
    """Schmidt et al. (2015) Algorithm 1 with stored gradients and eager updates; the
    indices drawn from np.random.RandomState(seed) in the order the kernel draws them
    (numba's generator is NumPy's legacy Mersenne Twister)."""
    lam = rho2 / n
    P = ref.phi[0].shape[1]
    w = np.zeros(P)
    d = np.zeros(P)
    G = np.zeros((n, P))
    f_store = np.zeros(n)
    visited = np.zeros(n, dtype=bool)
    Li = np.zeros(n)  # NUS*: per-sequence Lipschitz estimates (0 until visited)
    m = 0
    Lg = 1.0
    rs = np.random.RandomState(seed)
    grad_evals = ls_evals = 0
    draws = {"uniform": 0, "proportional": 0}
    per_pass = []
    for _ in range(passes):
        for _k in range(n):
            if nus and m > 0 and rs.random_sample() >= 0.5:
                r = rs.random_sample() * Li.sum()
                i = int(np.searchsorted(np.cumsum(Li), r, side="right"))  # P(i) = L_i / sum L
                draws["proportional"] += 1
                if i >= n or not visited[i]:
                    i = rs.randint(n)
            else:
                i = rs.randint(n)
                draws["uniform"] += 1
            fi, g = ref.loss_grad(w, i)
            grad_evals += 1
            f_store[i] = fi
            if not visited[i]:
                if nus:
                    Li[i] = Li.sum() / m if m > 0 else 1.0
                visited[i] = True
                m += 1
            d += g - G[i]
            G[i] = g
            Lcur = Li[i] if nus else Lg
            gg = g @ g
            if gg > 1e-8:
                for _ls in range(60):
                    f_new = ref.loss(w - g / Lcur, i)
                    ls_evals += 1
                    if f_new <= fi - gg / (2.0 * Lcur):
                        break
                    Lcur *= 2.0
            if nus:
                Lg = max(Lg, Lcur)
                Li[i] = Lcur
                a = 0.5 * (1.0 / (Lg + lam) + 1.0 / (Li.sum() / m + lam))
                Li[i] = 0.9 * Lcur
                Lg *= 2.0 ** (-1.0 / n)
            else:
                a = 1.0 / (Lcur + lam)
                Lg = Lcur * 2.0 ** (-1.0 / n)
            w = (1.0 - a * lam) * w - (a / m) * d
        per_pass.append((w.copy(), f_store.sum() + 0.5 * rho2 * w @ w, Lg))
    return per_pass, grad_evals, ls_evals, d, m, draws


class SagKernel:
    """The state of crf.train.sag.sag around AK.sag_pass, set up as sag() sets it up."""

    def __init__(self, space, data, rho2, nus, seed):
        n = data.n_sequences
        L = space.n_labels
        P = space.n_params
        self.space, self.data, self.nus = space, data, nus
        self.lam = rho2 / n
        self.w, self.d, self.g = np.zeros(P), np.zeros(P), np.zeros(P)
        self.last = np.zeros(P, dtype=np.int64)
        self.A, self.Sacc = np.empty(n + 1), np.empty(n + 1)
        self.blk_ptr, self.blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
        self.wsave = np.empty(P)
        is_pair = (self.blocks >= space.bigram_start).astype(np.int64)
        self.pair_first = np.concatenate([[0], np.cumsum(is_pair)])[self.blk_ptr].astype(np.int64)
        n_pair = int(self.pair_first[-1])
        self.mu = np.empty((data.n_tokens, L))
        self.pair = np.empty((max(n_pair, 1), L * L))
        self.pscratch = np.empty((max(int(np.diff(self.pair_first).max()), 1), L * L))
        self.o2 = AK.order2_args(space, data, self.blk_ptr, self.blocks)
        AK.sag_init_store(data.seq_offsets, data.bigram_base, data.labels, self.blk_ptr, self.blocks, np.int64(L),
                          np.int64(space.bigram_start), self.mu, self.pair_first, self.pair, self.o2)
        self.f_store = np.zeros(n)
        self.visited = np.zeros(n, dtype=np.int8)
        self.size = 1
        while self.size < n:
            self.size *= 2
        self.tsum = np.zeros(2 * self.size)
        self.state = np.array([0.0, 1.0])
        self.counts = np.zeros(2, dtype=np.int64)
        AK.seed(seed)

    def one_pass(self):
        data, space = self.data, self.space
        AK.sag_pass(self.w, self.d, self.last, self.A, self.Sacc, self.g, self.wsave, data.seq_offsets,
                    data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base, data.labels,
                    self.blk_ptr, self.blocks, np.int64(space.n_labels), np.int64(space.bigram_start), self.lam,
                    self.mu, self.pair_first, self.pair, self.pscratch, self.f_store, self.visited, self.tsum,
                    np.int64(self.size), bool(self.nus), self.state, self.counts, False, np.int64(space.trigram_start),
                    self.o2)


@pytest.mark.parametrize("nus", [False, True])
def test_sag_pass_replays_the_plain_algorithm(nus):
    _, space, data = small_problem(1, n_seq=6)
    ref = Enumerated(space, data)
    n = data.n_sequences
    rho2, passes, seed = 1.0, 6, 5
    kern = SagKernel(space, data, rho2, nus, seed)
    seen = []
    for _ in range(passes):
        kern.one_pass()
        assert not kern.last.any() and not kern.g.any()  # every weight brought up to date, scratch zero
        seen.append((kern.w.copy(), kern.f_store.sum() + 0.5 * rho2 * kern.w @ kern.w, kern.state[1]))
    want, grad_evals, ls_evals, d, m, draws = reference_sag(ref, n, rho2, nus, passes, seed)
    # NUS*: both ways of drawing i were replayed, not only the uniform one
    assert draws["proportional"] >= (10 if nus else 0) and draws["uniform"] >= 10
    for (w, f, Lg), (w_ref, f_ref, Lg_ref) in zip(seen, want):
        np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10)
        assert f == pytest.approx(f_ref, rel=1e-11)
        assert Lg == pytest.approx(Lg_ref, rel=1e-12)
    assert kern.state[0] == m >= n - 1  # sequences visited
    assert kern.counts[0] == grad_evals == passes * n
    assert kern.counts[1] == ls_evals > 0
    # d, kept from the stored marginals, is the sum of the stored gradients
    np.testing.assert_allclose(kern.d, d, rtol=0, atol=1e-10)
    # the weights moved: a replay of a no-op would pass trivially
    assert np.abs(seen[-1][0]).max() > 0.05


# --------------------------------------------------------------------------- BCD
def sequences_of(space, data, o):
    off = data.seq_offsets
    out = []
    for i in range(data.n_sequences):
        s, e = off[i], off[i + 1]
        if (space.unigram_offset[o] >= 0 and (data.unigram_base[s:e] == space.unigram_offset[o]).any()) or (
                space.bigram_offset[o] >= 0 and (data.bigram_base[s + 1:e] == space.bigram_offset[o]).any()):
            out.append(i)
    return out


def soft(z, t):
    return np.sign(z) * max(abs(z) - t, 0.0)


def reference_bcd_step(ref, space, data, w, o, rho1, rho2, kappa, counts):
    """Sokolovska et al. / Lavergne et al. eq. 10-11 on the block of observation o, with
    the doubling safeguard of crf.train.bcd. Returns whether the block changed."""
    L = space.n_labels
    ub, bb = space.unigram_offset[o], space.bigram_offset[o]
    seqs = sequences_of(space, data, o)
    if not seqs:
        return False
    idx = ([ub + k for k in range(L)] if ub >= 0 else []) + ([bb + k for k in range(L * L)] if bb >= 0 else [])
    idx = np.array(idx, dtype=np.int64)
    g = np.zeros(len(idx))
    h = np.zeros(len(idx))
    f_old = 0.0
    nu = L if ub >= 0 else 0
    for i in seqs:
        f, grad = ref.loss_grad(w, i)
        f_old += f
        counts[0] += 1
        g += grad[idx]
        s, e = data.seq_offsets[i], data.seq_offsets[i + 1]
        mu = ref.unary(w, i)
        for t in range(e - s):
            if ub >= 0:
                c = np.count_nonzero(data.unigram_base[s + t] == ub)
                h[:L] += c * c * mu[t] * (1 - mu[t])
            if bb >= 0 and t > 0:
                c = np.count_nonzero(data.bigram_base[s + t] == bb)
                pp = ref.pairwise(w, i, t)
                h[nu:] += c * c * pp * (1 - pp)
    old = w[idx].copy()
    pen_old = rho1 * np.abs(old).sum() + 0.5 * rho2 * old @ old
    cf = kappa
    for _ in range(30):
        hk = cf * h + 1e-12  # the kernel's guard against h = 0
        new = np.array([soft(z, rho1) for z in hk * old - g]) / (hk + rho2)
        w[idx] = new
        if np.array_equal(new, old):
            return False
        f_new = sum(ref.loss(w, i) for i in seqs)
        counts[0] += len(seqs)
        if f_new + rho1 * np.abs(new).sum() + 0.5 * rho2 * new @ new <= f_old + pen_old:
            return True
        counts[1] += 1
        cf *= 2.0
        w[idx] = old
    return False


@pytest.mark.parametrize("rho1,rho2,kappa", [(0.5, 0.1, 1.5), (0.0, 1.0, 1.5), (0.2, 0.0, 0.3)])
def test_bcd_pass_replays_the_plain_algorithm_block_by_block(rho1, rho2, kappa):
    _, space, data = small_problem(2, n_seq=8)
    ref = Enumerated(space, data)
    n_obs = len(space.kinds)
    uo, bo = space.unigram_offset, space.bigram_offset
    blk_ptr, blocks = SQ.sequence_blocks(data.seq_offsets, data.unigram_base, data.bigram_base)
    obs_of_rank = np.concatenate([np.flatnonzero(uo >= 0), np.flatnonzero(bo >= 0)]).astype(np.int64)
    obs_ptr, obs_seq = BK.block_sequences(data.seq_offsets, blk_ptr, blocks, obs_of_rank, np.int64(space.n_labels),
                                          np.int64(space.bigram_start), np.int64(n_obs), np.int64(space.trigram_start),
                                          space.uptr)
    z = np.zeros(1, dtype=np.int64)
    o2 = (data.trigram_base, z, z, np.zeros(2, dtype=np.int64), z, z)
    w = np.zeros(space.n_params)
    w_ref = w.copy()
    counts, counts_ref = np.zeros(2, dtype=np.int64), np.zeros(2, dtype=np.int64)
    rng = np.random.default_rng(7)
    changed_total = 0
    for _pass in range(2):
        for o in rng.permutation(n_obs):
            changed = BK.bcd_pass(w, np.array([o], dtype=np.int64), obs_ptr, obs_seq, uo, bo, data.seq_offsets,
                                  data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base,
                                  data.labels, np.int64(space.n_labels), float(rho1), float(rho2), float(kappa), counts,
                                  False, space.trigram_offset, o2)
            want = reference_bcd_step(ref, space, data, w_ref, o, rho1, rho2, kappa, counts_ref)
            assert changed == int(want)
            np.testing.assert_allclose(w, w_ref, rtol=0, atol=1e-10)
            np.testing.assert_array_equal(counts, counts_ref)
            changed_total += changed
    assert changed_total > n_obs // 2
    if kappa < 1:  # a curvature factor below 1 overshoots: the safeguard must have acted
        assert counts[1] > 0


# --------------------------------------------------------------------------- L-BFGS
def bfgs_inverse_hessian(pairs, gamma, n):
    """H from H_0 = gamma I by H <- (I - rho s y^T) H (I - rho y s^T) + rho s s^T, oldest pair first."""
    H = gamma * np.eye(n)
    eye = np.eye(n)
    for s, y in pairs:
        rho = 1.0 / (s @ y)
        H = (eye - rho * np.outer(s, y)) @ H @ (eye - rho * np.outer(y, s)) + rho * np.outer(s, s)
    return H


@pytest.mark.parametrize("m", [1, 3, 5])
def test_two_loop_direction_is_minus_the_bfgs_inverse_hessian_times_g(m):
    n = 12
    rng = np.random.default_rng(m)
    hist = LbfgsHistory(n, m)
    pairs = []  # the reference's memory: stored (float32) pairs, oldest first
    gamma = 1.0
    g = rng.normal(size=n)
    out = np.empty(n)
    assert hist.direction(g, out) == pytest.approx(-g @ g)
    np.testing.assert_array_equal(out, -g)
    checked = 0
    for k in range(2 * m + 4):
        A = rng.normal(size=(n, n))
        A = A @ A.T + 0.1 * np.eye(n)
        x_old, g_old = rng.normal(size=n), rng.normal(size=n)
        s = rng.normal(size=n)
        if k % 4 == 3:  # a pair with s.y < 0: skipped, and when the memory is full the oldest goes
            y = -A @ s
        else:
            y = A @ s
        accepted = hist.push_from(x_old + s, x_old, g_old + y, g_old)
        s32 = (x_old + s - x_old).astype(np.float32).astype(np.float64)
        y32 = (g_old + y - g_old).astype(np.float32).astype(np.float64)
        assert accepted == (s32 @ y32 > 0)
        if accepted:
            pairs.append((s32, y32))
            pairs = pairs[-m:]
            gamma = (s32 @ y32) / (y32 @ y32)
        elif len(pairs) == m:
            pairs = pairs[1:]
        assert hist.count == len(pairs)
        if not pairs:
            continue
        H = bfgs_inverse_hessian(pairs, gamma, n)
        # H is the inverse-Hessian approximation: it satisfies the newest secant equation
        np.testing.assert_allclose(H @ pairs[-1][1], pairs[-1][0], rtol=1e-9, atol=1e-12)
        g = rng.normal(size=n)
        gd = hist.direction(g, out)
        want = -H @ g
        np.testing.assert_allclose(out, want, rtol=1e-9, atol=1e-12 * np.abs(want).max())
        assert gd == pytest.approx(g @ want, rel=1e-9)
        # OWL-QN's constrained variant: components not of the sign of -g are zeroed
        pg = g.copy()
        gd = hist.direction(pg, out, constrain=True)
        keep = want * pg < 0
        np.testing.assert_allclose(out, np.where(keep, want, 0.0), rtol=1e-9, atol=1e-12 * np.abs(want).max())
        assert gd == pytest.approx(pg @ np.where(keep, want, 0.0), rel=1e-9)
        checked += 1
    assert checked >= 2 * m
