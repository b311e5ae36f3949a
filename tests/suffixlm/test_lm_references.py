"""The log-linear LM against references written here from the definitions:

* ``_lm_kernels.smoothed_initial_weights`` against its docstring's recursion, and the
  README's claim that the log-linear model with those weights *is* an interpolated
  absolute-discounting model (probabilities by brute force from n-gram counts);
* the solvers' optimum (``LogLinearLM.fit``, FISTA and SAGE) against scipy's L-BFGS-B
  on the same objective (l1 with w >= 0 and l2sq are smooth on the box), and for the
  tree penalties the fixed point w = prox(w - g / L, lam / L) of a proximal step.

The objective is computed here by a dense softmax over the predicted vocabulary for
every training context, from the suffix tree's arrays, not by the model's kernels.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pytest
from suffixlm.corpora import sample_path

from suffixlm import _lm_kernels as K
from suffixlm._tree_kernels import bfs_levels
from suffixlm.corpus import BOS_ID, UNK_ID, Corpus, Vocabulary
from suffixlm.model import LogLinearLM
from suffixlm.suffixtree import SuffixTree

from .test_loglinear_model import trie_weights


def lines():
    """The first 40 sentences of the sample corpus: 293 words, 44 word types."""
    return sample_path("tiny_lm.train.txt").read_text().splitlines()[:40]


def predicted_words(vocab):
    return [v for v in range(len(vocab)) if v != BOS_ID and (v != UNK_ID or vocab.has_unk)]


def training_contexts(corpus, m):
    """(context tuple, target) of every predicted position: the reversed history back to
    and including <s>, at most m symbols."""
    mask = corpus.target_mask()
    for s in range(corpus.n_sentences):
        a, b = int(corpus.offsets[s]), int(corpus.offsets[s + 1])
        for i in range(a + 1, b):
            if mask[i]:
                yield tuple(int(corpus.tokens[i - d]) for d in range(1, min(m, i - a) + 1)), int(corpus.tokens[i])


def loglinear_probs(tree, w, vocab, ctx):
    """{word: P(word | ctx)}: softmax over the predicted vocabulary of the sum of the
    trie weights of every prefix of ctx (words never seen score 0)."""
    tw = trie_weights(tree, w)
    words = predicted_words(vocab)
    scores = np.array([sum(tw.get((ctx[:d], v), 0.0) for d in range(len(ctx) + 1)) for v in words])
    p = np.exp(scores - scores.max())
    return dict(zip(words, p / p.sum()))


# --------------------------------------------------------------------------- the starting point
def run_kernel(tree, n_unseen, discount):
    w, S, expS = np.empty(tree.n_params), np.empty(tree.n_params), np.empty(tree.n_params)
    Z = np.empty(tree.n_nodes)
    topo = np.arange(tree.n_nodes, dtype=np.int64)  # preorder: parents come first
    K.smoothed_initial_weights(topo, tree.parent, np.ascontiguousarray(tree.collapsed, dtype=np.int64),
                               tree.succ_offsets, tree.succ_counts, tree.param_parent(), float(n_unseen),
                               discount, w, S, expS, Z)
    return w, S, expS, Z


def make(lines, m, collapse, extra_words=()):
    """Corpus and tree; extra_words are vocabulary words the text never uses (unseen: score 0)."""
    base = Corpus.from_strings(lines)
    vocab = Vocabulary(base.vocab.words + list(extra_words), has_unk=base.vocab.has_unk)
    corpus = Corpus.from_strings(lines, vocab=vocab)
    return corpus, SuffixTree.build(corpus, m, collapse=collapse)


def absolute_discounting(levels, parent_of, root_counts, vocab, D):
    """Interpolated absolute discounting on the given context levels:
    P(v | ()) = (c(v) + 1) / (N + |V|)  (add-one at the root),
    P(v | h) = max(c(h, v) - D, 0) / c(h) + D |succ(h)| / c(h) P(v | parent_of(h)).
    levels: {context: Counter of successors}, contexts listed parents first."""
    words = predicted_words(vocab)
    N = sum(root_counts.values())
    P = {(): {v: (root_counts.get(v, 0) + 1) / (N + len(words)) for v in words}}
    for h in sorted(levels, key=len):
        if h == ():
            continue
        cnt = levels[h]
        total = sum(cnt.values())
        gamma = D * len(cnt) / total
        par = P[parent_of(h)]
        P[h] = {v: max(cnt.get(v, 0) - D, 0) / total + gamma * par[v] for v in words}
    return P


@pytest.mark.parametrize("discount", [0.7, 0.3])
@pytest.mark.parametrize("m,extra", [(2, ()), (3, ("zz", "yy"))])
def test_smoothed_weights_follow_the_docstring_recursion_on_tree_nodes(m, extra, discount):
    corpus, tree = make(lines()[:25], m, collapse=True, extra_words=extra)
    vocab = corpus.vocab
    words = predicted_words(vocab)
    n_seen_root = len(tree.successors(0)[0])
    n_unseen = len(words) - n_seen_root
    assert n_unseen == len(extra)
    w, S, expS, Z = run_kernel(tree, n_unseen, discount)
    assert (tree.collapsed > 1).any()  # collapsed chains are exercised
    # the docstring, node by node: root w = ln(count + 1); below,
    # collapsed[j] w[j, v] = ln(P(v | j) / (gamma_j P(v | parent)))
    P = {}
    for j in range(tree.n_nodes):
        ws, cs = tree.successors(j)
        succ = dict(zip(ws.tolist(), cs.tolist()))
        q0 = tree.succ_offsets[j]
        if tree.parent[j] < 0:
            N = sum(succ.values())
            P[j] = {v: (succ.get(v, 0) + 1) / (N + n_seen_root + n_unseen) for v in words}
            want = [math.log(succ[v] + 1) for v in ws.tolist()]
        else:
            par = P[int(tree.parent[j])]
            total = sum(succ.values())
            gamma = discount * len(succ) / total
            P[j] = {v: (succ[v] - discount) / total + gamma * par[v] if v in succ else gamma * par[v] for v in words}
            want = [math.log(P[j][v] / (gamma * par[v])) / tree.collapsed[j] for v in ws.tolist()]
        np.testing.assert_allclose(w[q0:q0 + len(ws)], want, rtol=1e-12, atol=1e-14)
        assert abs(sum(P[j].values()) - 1.0) < 1e-12
        # and the log-linear model with those weights gives exactly these probabilities
        got = loglinear_probs(tree, w, vocab, tuple(tree.context(j)))
        np.testing.assert_allclose([got[v] for v in words], [P[j][v] for v in words], rtol=1e-12, atol=1e-15)
    assert (w > 0).all()  # every count exceeds D: positive weights, as the model requires
    # S, expS, Z are what forward_pass gives for these weights
    S2, expS2, Z2 = np.empty_like(S), np.empty_like(expS), np.empty_like(Z)
    topo, level_start, _ = bfs_levels(tree.parent)
    K.forward_pass(w, topo, level_start, tree.parent,
                   np.ascontiguousarray(tree.collapsed, dtype=np.int64), tree.succ_offsets, tree.param_parent(),
                   np.zeros(tree.n_params), np.ones(tree.n_nodes), float(n_unseen), S2, expS2, Z2)
    np.testing.assert_allclose(S, S2, rtol=1e-13, atol=1e-13)
    np.testing.assert_allclose(expS, expS2, rtol=1e-13)
    np.testing.assert_allclose(Z, Z2, rtol=1e-13)


@pytest.mark.parametrize("m", [1, 2, 3])
def test_smoothed_start_is_interpolated_absolute_discounting_from_ngram_counts(m):
    """README: the starting point is an interpolated absolute-discounting model, which the
    log-linear model represents exactly. On the suffix trie (every context its own level)
    that is the textbook model, computed here from the n-gram counts of the text."""
    D = 0.7  # what LogLinearLM uses
    text = lines()[:25]
    corpus, trie = make(text, m, collapse=False, extra_words=("never",))
    vocab = corpus.vocab
    counts = defaultdict(Counter)  # c(h, v) for every context h that occurs, h of length 0..m
    for ctx, y in training_contexts(corpus, m):
        for d in range(len(ctx) + 1):
            counts[ctx[:d]][y] += 1
    ad = absolute_discounting(counts, lambda h: h[:-1], counts[()], vocab, D)
    words = predicted_words(vocab)
    w, _, _, _ = run_kernel(trie, len(words) - len(counts[()]), D)
    assert trie.n_nodes == len(counts)
    for h in counts:
        got = loglinear_probs(trie, w, vocab, h)
        np.testing.assert_allclose([got[v] for v in words], [ad[h][v] for v in words], rtol=1e-11, atol=1e-15)
    # the model as trained starts there: LogLinearLM with no iteration keeps the start
    lm = LogLinearLM(order=m + 1, penalty="l2-tree", lam=0.0, max_iter=0).fit(corpus)
    test = Corpus.from_strings(text[:5], vocab=vocab)
    lp = lm.log10_probs(test)
    want = [math.log10(ad[ctx][y]) for ctx, y in training_contexts(test, m)]
    np.testing.assert_allclose(lp[~np.isnan(lp)], want, rtol=1e-10)


# --------------------------------------------------------------------------- solvers
class DenseObjective:
    """Mean log-loss of the training predictions of a fitted LogLinearLM, and its gradient,
    by a dense softmax per training context over the predicted vocabulary.

    score(v | ctx) = sum over the tree nodes j on the path of ctx of collapsed[j] w[j, v]
    (training contexts end on whole nodes); words never seen after any context score 0.
    """

    def __init__(self, lm, corpus):
        tree = lm.tree_
        m = lm.order - 1
        node_of = {tuple(tree.context(j)): j for j in range(tree.n_nodes)}
        words = predicted_words(lm.vocab_)
        col = {v: i for i, v in enumerate(words)}
        V = len(words)
        ends = Counter()
        self.n = 0
        for ctx, y in training_contexts(corpus, m):
            ends[(node_of[ctx], col[y])] += 1  # KeyError if a training context ended inside an edge
            self.n += 1
        end_nodes = sorted({e for e, _ in ends})
        row = {e: r for r, e in enumerate(end_nodes)}
        self.n_rows = len(end_nodes)
        self.V = V
        self.targets = np.zeros((self.n_rows, V))  # positions ending at each node, by target
        for (e, y), c in ends.items():
            self.targets[row[e], y] += c
        r_idx, v_idx, q_idx, coef = [], [], [], []
        for e in end_nodes:
            j = e
            while j >= 0:  # the path from the end node to the root
                ws, _ = tree.successors(j)
                for k, v in enumerate(ws.tolist()):
                    if v in col:
                        r_idx.append(row[e])
                        v_idx.append(col[v])
                        q_idx.append(tree.succ_offsets[j] + k)
                        coef.append(float(tree.collapsed[j]))
                j = int(tree.parent[j])
        self.cell = np.array(r_idx) * V + np.array(v_idx)
        self.q = np.array(q_idx)
        self.coef = np.array(coef)
        self.P = tree.n_params
        self.counts = tree.collapsed[tree.param_node()].astype(np.float64)  # trie coordinates per param
        self.parent = tree.param_parent()

    def value_grad(self, w):
        S = np.bincount(self.cell, weights=self.coef * w[self.q], minlength=self.n_rows * self.V)
        S = S.reshape(self.n_rows, self.V)
        mx = S.max(axis=1, keepdims=True)
        E = np.exp(S - mx)
        Zr = E.sum(axis=1, keepdims=True)
        n_row = self.targets.sum(axis=1, keepdims=True)
        loss = (n_row[:, 0] * (np.log(Zr[:, 0]) + mx[:, 0])).sum() - (self.targets * S).sum()
        R = (n_row * E / Zr - self.targets).ravel()
        grad = np.bincount(self.q, weights=self.coef * R[self.cell], minlength=self.P)
        return loss / self.n, grad / self.n

    def omega(self, name, w):
        """Omega with group weights eta = counts (one per trie group, as LogLinearLM uses)."""
        c = self.counts
        if name == "l1":
            return float(c @ np.abs(w))
        if name == "l2sq":
            return float(0.5 * c @ (w * w))
        # tree norms: the group of x is x and all its descendants in the parameter forest
        norm = np.max if name == "linf-tree" else (lambda a: math.sqrt(float(a @ a)))
        members = defaultdict(list)
        for q in range(self.P):
            a = q
            while a >= 0:
                members[a].append(q)
                a = self.parent[a]
        return float(sum(c[x] * norm(np.abs(w[members[x]])) for x in range(self.P)))


def fitted(penalty, lam, order=3, solver="fista", **kw):
    """LogLinearLM fitted on lines() as a user would (default start, preconditioning)."""
    kw.setdefault("max_iter", 3000 if solver == "fista" else 400)
    if solver == "sage":
        kw.setdefault("batch_size", 64)
    lm = LogLinearLM(order=order, penalty=penalty, lam=lam, solver=solver, tol=1e-13, seed=1, **kw).fit(lines())
    return lm, DenseObjective(lm, Corpus.from_strings(lines(), vocab=lm.vocab_))


def test_dense_objective_is_the_models_scores_and_its_gradient_is_exact():
    lm, obj = fitted("l1", 1e-3, max_iter=20)
    w = lm.weights_
    f, g = obj.value_grad(w)
    lp = lm.log10_probs(Corpus.from_strings(lines(), vocab=lm.vocab_)) * math.log(10)
    assert f == pytest.approx(-np.nanmean(lp), rel=1e-12)
    rng = np.random.default_rng(0)
    for q in rng.choice(obj.P, 25, replace=False):
        e = np.zeros_like(w)
        e[q] = 1e-6
        fd = (obj.value_grad(w + e)[0] - obj.value_grad(w - e)[0]) / 2e-6
        assert fd == pytest.approx(g[q], abs=1e-9)


@pytest.mark.parametrize("penalty,lam,solver", [("l1", 2e-3, "fista"), ("l2sq", 2e-2, "fista"), ("l1", 2e-3, "sage"),
                                                ("l2sq", 2e-2, "sage")])
def test_optimum_matches_scipy_lbfgsb_on_the_box(penalty, lam, solver):
    optimize = pytest.importorskip("scipy.optimize")
    lm, obj = fitted(penalty, lam, solver=solver)
    c = obj.counts

    def F(w):
        f, g = obj.value_grad(w)
        if penalty == "l1":  # w >= 0: the l1 norm is linear
            return f + lam * c @ w, g + lam * c
        return f + 0.5 * lam * c @ (w * w), g + lam * c * w

    # the model's objective is this one
    assert lm.objective_ == pytest.approx(F(lm.weights_)[0], rel=1e-11)
    assert lm.objective_ == pytest.approx(obj.value_grad(lm.weights_)[0] + lam * obj.omega(penalty, lm.weights_),
                                          rel=1e-11)
    ref = optimize.minimize(F, np.zeros(obj.P), jac=True, method="L-BFGS-B", bounds=[(0.0, None)] * obj.P,
                            options={"maxiter": 20000, "maxfun": 40000, "ftol": 1e-15, "gtol": 1e-11})
    assert lm.objective_ == pytest.approx(ref.fun, rel=1e-6)
    assert F(np.zeros(obj.P))[0] - ref.fun > 0.1  # a real optimisation problem
    if penalty == "l2sq":  # strongly convex: one minimiser
        np.testing.assert_allclose(lm.weights_, ref.x, atol=2e-3)
    else:  # l1 zeroes the same weights (those far from the threshold)
        assert np.count_nonzero(lm.weights_) < 0.9 * obj.P
        assert not np.any((lm.weights_ == 0) & (ref.x > 1e-2))


@pytest.mark.parametrize("penalty,lam", [("linf-tree", 2e-3), ("l2-tree", 2e-3), ("l1", 2e-3), ("l2sq", 2e-2)])
def test_fista_optimum_is_a_fixed_point_of_the_proximal_step(penalty, lam):
    from suffixlm.penalties import prox

    lm, obj = fitted(penalty, lam)
    w = lm.weights_
    assert lm.objective_ == pytest.approx(obj.value_grad(w)[0] + lam * obj.omega(penalty, w), rel=1e-11)
    _, grad = obj.value_grad(w)
    g = grad / obj.counts  # per trie coordinate: the gradient in the metric of the counts
    for L in (0.5, 2.0, 10.0):
        z = prox(penalty, w - g / L, obj.parent, lam / L, counts=obj.counts.astype(np.int64), weights=obj.counts,
                 nonneg=True)
        assert L * np.max(np.abs(z - w)) < 2e-6, L  # gradient mapping ~ 0
    # not a fixed point anywhere else: the start, and a perturbed optimum
    z0 = prox(penalty, -obj.value_grad(np.zeros(obj.P))[1] / obj.counts, obj.parent, lam,
              counts=obj.counts.astype(np.int64), weights=obj.counts, nonneg=True)
    assert np.max(np.abs(z0)) > 1e-3
    F = lambda v: obj.value_grad(v)[0] + lam * obj.omega(penalty, v)  # noqa: E731
    rng = np.random.default_rng(3)
    for _ in range(5):
        assert F(np.maximum(w + 1e-3 * rng.normal(size=w.shape), 0.0)) > lm.objective_
    if penalty != "l2sq":  # a sparse solution: the penalty is active
        assert 0 < np.count_nonzero(w) < 0.9 * obj.P


@pytest.mark.parametrize("base,penalty", [("none", "linf-tree"), ("kn", "linf-tree"), ("kn", "l2-tree")])
def test_training_is_independent_of_the_thread_count(base, penalty, monkeypatch):
    """The parallel kernels (levels of the tree, chunks of the forest, fixed blocks of the
    sums) give bit-identical weights with 1 and 2 threads."""
    import numba

    monkeypatch.setenv("SUFFIXLM_MIN_PARALLEL", "0")  # this small model on 2 threads too (suffixlm.threads)
    text = sample_path("tiny_lm.train.txt").read_text().splitlines()
    before = numba.get_num_threads()
    weights = []
    try:
        for k in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
            numba.set_num_threads(k)
            lm = LogLinearLM(order=4, penalty=penalty, base=base, positive=base == "none", max_iter=15, tol=0.0)
            weights.append(lm.fit(text).weights_)
    finally:
        numba.set_num_threads(before)
    np.testing.assert_array_equal(weights[0], weights[1])
    assert np.count_nonzero(weights[0]) > 0
