"""The log-linear LM: gradient, normalisation, solvers, scoring, model files.

The references here are written plainly: contexts as Python tuples, scores as dense
sums over the trie, softmax over the whole predicted vocabulary.
"""

import math
from collections import Counter

import numpy as np
import pytest
from suffixlm.corpora import sample_path

from suffixlm import _lm_kernels as K
from suffixlm.contexts import extract_contexts
from suffixlm.corpus import BOS_ID, EOS_ID, UNK_ID, Corpus
from suffixlm.model import LogLinearLM, ModelFormatError
from suffixlm.objective import LMObjective
from suffixlm.suffixtree import SuffixTree

TRAIN = ["a b a b c", "b a a", "c c a b", "a b c a b c", "b b"]
TEST = ["a b b c", "c a x b", "b"]


def make(collapse=True, m=3, unk=False, lines=TRAIN):
    corpus = Corpus.from_strings(lines, unk=unk)
    tree = SuffixTree.build(corpus, m, collapse=collapse)
    return corpus, tree


def trie_weights(tree, w):
    """{(context tuple, word): value} for every trie coordinate of the tree's params."""
    out = {}
    for j in range(tree.n_nodes):
        ctx = tuple(tree.context(j))
        d, c = int(tree.depth[j]), int(tree.collapsed[j])
        words, _ = tree.successors(j)
        for k, v in enumerate(words):
            q = tree.succ_offsets[j] + k
            for depth in range(d - c + 1, d + 1):
                out[(ctx[:depth], int(v))] = w[q]
    return out


def dense_log_probs(corpus, tree, w, vocab, m):
    """Reference: for each predicted position, the log softmax over the predicted
    vocabulary of sum over trie prefixes of the context of the trie weights."""
    tw = trie_weights(tree, w)
    predicted = [v for v in range(len(vocab)) if v != BOS_ID and (v != UNK_ID or vocab.has_unk)]
    out = []
    for s in range(corpus.n_sentences):
        sent = corpus.sentence(s)
        for i in range(1, len(sent)):
            ctx = tuple(int(t) for t in sent[:i][::-1][:m])
            scores = {}
            for v in predicted:
                scores[v] = sum(tw.get((ctx[:d], v), 0.0) for d in range(0, len(ctx) + 1))
            mx = max(scores.values())
            logz = mx + math.log(sum(math.exp(x - mx) for x in scores.values()))
            y = int(sent[i])
            out.append(scores[y] - logz if y in scores else float("nan"))
    return np.array(out)


def problem_for(corpus, tree):
    ctx = extract_contexts(tree, corpus)
    keep = corpus.target_mask()[ctx.positions]
    end = np.empty(len(ctx.positions), np.int64)
    tp = np.empty(len(ctx.positions), np.int64)
    assert K.training_statistics(ctx.offsets, ctx.nodes, ctx.targets.astype(np.int64), keep,
                                 tree.succ_offsets, tree.succ_words, end, tp)
    lm = LogLinearLM(order=tree.max_depth + 1)
    n_unseen = lm._n_unseen(tree, corpus.vocab)
    return LMObjective(tree, end, tp, n_unseen)


@pytest.mark.parametrize("collapse", [True, False])
def test_loss_matches_dense_softmax_and_gradient_matches_finite_differences(collapse):
    corpus, tree = make(collapse)
    rng = np.random.default_rng(0)
    w = rng.uniform(0, 1.5, tree.n_params)
    prob = problem_for(corpus, tree)
    f, g = prob.value_grad(w)
    ref = dense_log_probs(corpus, tree, w, corpus.vocab, tree.max_depth)
    assert f == pytest.approx(-ref.mean(), rel=1e-12)
    assert prob.value(w) == pytest.approx(f, rel=1e-13)
    assert_gradient_matches_finite_differences(prob, w, g)


def assert_gradient_matches_finite_differences(prob, w, g, h=1e-6):
    """g is per trie coordinate: d f / d w_q = metric[q] * g[q], by central differences."""
    for q in range(w.shape[0]):
        e = np.zeros_like(w)
        e[q] = h
        fd = (prob.value(w + e) - prob.value(w - e)) / (2 * h)
        assert fd == pytest.approx(prob.metric[q] * g[q], abs=1e-8)


def test_minibatch_statistics_are_those_of_the_batch():
    corpus, tree = make(True)
    prob = problem_for(corpus, tree)
    w = np.random.default_rng(1).uniform(0, 1, tree.n_params)
    batches = [np.arange(0, 7), np.arange(7, prob.n_samples)]
    total = sum(prob.value_grad(w, b)[0] * len(b) for b in batches)
    assert total / prob.n_samples == pytest.approx(prob.value(w), rel=1e-12)
    g_all = prob.value_grad(w)[1].copy()
    g_sum = sum(prob.value_grad(w, b)[1] * len(b) for b in batches) / prob.n_samples
    np.testing.assert_allclose(g_sum, g_all, atol=1e-12)
    # scratch statistics are restored after each batch
    assert not prob.n_end_b.any() and not prob.emp_b.any()


def fitted(penalty="linf-tree", solver="fista", lam=1e-3, alpha=None, order=3, lines=TRAIN, max_iter=300):
    lm = LogLinearLM(order=order, penalty=penalty, lam=lam, alpha=alpha, solver=solver, max_iter=max_iter, tol=1e-10)
    return lm.fit(lines)


@pytest.mark.parametrize("penalty,alpha", [("linf-tree", None), ("l2-tree", None), ("l1", 0.7), ("l2sq", None)])
def test_scores_on_unseen_text_match_dense_reference(penalty, alpha):
    lm = fitted(penalty=penalty, alpha=alpha, max_iter=30)
    test = Corpus.from_strings(TEST, vocab=lm.vocab_)
    lp = lm.log10_probs(test) * math.log(10)
    ref = dense_log_probs(test, lm.tree_, lm.weights_, lm.vocab_, lm.order - 1)
    np.testing.assert_allclose(lp, ref, rtol=1e-10, atol=1e-12, equal_nan=True)
    assert np.isnan(lp).sum() == 1  # the OOV 'x' (closed vocabulary) is not scored


def test_probabilities_sum_to_one_in_every_context():
    lm = fitted(max_iter=30)
    v = lm.vocab_
    predicted = [i for i in range(len(v)) if i != BOS_ID and (i != UNK_ID or v.has_unk)]
    # every training context, plus contexts that stop inside edges and unseen ones
    contexts = [tuple(lm.tree_.context(j)) for j in range(lm.tree_.n_nodes)]
    contexts += [(2,), (3, 2), (4, 4, 4), ()]
    kinds = Counter()
    for ctx in contexts:
        if ctx and ctx[-1] == BOS_ID:
            # a sentence-start context: the token string <s> w1 .. wk, then y
            prefix = list(ctx[::-1])
            kinds["with <s>"] += 1
        elif ctx:
            # a context inside a sentence: a token string without <s>, whose first token
            # is never predicted, so y sees exactly ctx (truncated to order - 1 words)
            prefix = list(ctx[::-1])
            kinds["without <s>"] += 1
        else:
            # </s> never occurs in a context: after it the path stops at the root
            prefix = [EOS_ID]
            kinds["empty"] += 1
        total = 0.0
        for y in predicted:
            toks = np.array(prefix + [y], dtype=np.int32)
            c = Corpus(toks, np.array([0, len(toks)], np.int64), v, len(toks) - 1, 0)
            lp = lm.log10_probs(c)[-1]
            ref = dense_log_probs(c, lm.tree_, lm.weights_, v, lm.order - 1)[-1]
            assert lp * math.log(10) == pytest.approx(ref, rel=1e-10, abs=1e-12)
            total += 10 ** lp
        assert total == pytest.approx(1.0, abs=1e-12)
    assert kinds["with <s>"] >= 3 and kinds["without <s>"] >= 5 and kinds["empty"] >= 1


@pytest.mark.parametrize("penalty,alpha", [("linf-tree", None), ("l2-tree", None), ("l1", None), ("linf-tree", 0.85)])
def test_stochastic_solver_reaches_fista_objective(penalty, alpha):
    lines = sample_path("tiny_lm.train.txt").read_text().splitlines()[:300]
    ref = fitted(penalty, "fista", lam=2e-3, alpha=alpha, order=4, lines=lines, max_iter=2000)
    sto = LogLinearLM(order=4, penalty=penalty, lam=2e-3, alpha=alpha, solver="sage", max_iter=300,
                      batch_size=64, tol=1e-10, seed=3).fit(lines)
    assert ref.converged_
    assert sto.objective_ == pytest.approx(ref.objective_, rel=1e-3)
    assert sto.objective_ >= ref.objective_ * (1 - 1e-6)


def test_training_is_deterministic_given_seed():
    kw = dict(order=3, lam=1e-3, max_iter=5, batch_size=8, batch_growth=1.0, solver="sage")
    a = LogLinearLM(seed=7, **kw).fit(TRAIN)
    b = LogLinearLM(seed=7, **kw).fit(TRAIN)
    c = LogLinearLM(seed=8, **kw).fit(TRAIN)
    np.testing.assert_array_equal(a.weights_, b.weights_)
    assert not np.array_equal(a.weights_, c.weights_)


def test_warm_start_continues_from_previous_weights():
    lm = LogLinearLM(order=3, lam=1e-3, max_iter=200, tol=1e-12, warm_start=True).fit(TRAIN)
    first = lm.objective_
    lm.max_iter = 1
    lm.fit(TRAIN)  # one more step from the optimum stays there
    assert lm.objective_ <= first * (1 + 1e-9)
    cold = LogLinearLM(order=3, lam=1e-3, max_iter=1).fit(TRAIN)
    assert cold.objective_ > lm.objective_


def test_save_load_identical_scores(tmp_path):
    lm = fitted(max_iter=20)
    p = tmp_path / "m.lm"
    lm.save(p)
    assert p.exists() and not list(tmp_path.glob("*.tmp"))
    lm2 = LogLinearLM.load(p)
    test = Corpus.from_strings(TEST, vocab=lm.vocab_)
    np.testing.assert_array_equal(lm.log10_probs(test), lm2.log10_probs(test))
    assert lm2.vocab_ == lm.vocab_
    assert lm.score("a b c") == lm2.score("a b c")


def test_truncated_and_tampered_files_give_clear_errors(tmp_path):
    lm = fitted(max_iter=5)
    p = tmp_path / "m.lm"
    lm.save(p)
    data = p.read_bytes()
    (tmp_path / "trunc.lm").write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelFormatError, match="trunc.lm"):
        LogLinearLM.load(tmp_path / "trunc.lm")
    (tmp_path / "junk.lm").write_bytes(b"not a model")
    with pytest.raises(ModelFormatError):
        LogLinearLM.load(tmp_path / "junk.lm")
    # tampered: a parent index pointing outside the tree
    with np.load(p, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["tree.parent"] = arrays["tree.parent"].copy()
    arrays["tree.parent"][-1] = 10**6
    with open(tmp_path / "bad.lm", "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ModelFormatError):
        LogLinearLM.load(tmp_path / "bad.lm")
    # a pickled object array is refused, never unpickled
    arrays2 = dict(arrays)
    arrays2["weights"] = np.array([object()], dtype=object)
    with open(tmp_path / "pickle.lm", "wb") as fh:
        np.savez(fh, **arrays2)
    with pytest.raises(ModelFormatError):
        LogLinearLM.load(tmp_path / "pickle.lm")


def _tampered(tmp_path, src, name, edit):
    with np.load(src, allow_pickle=False) as z:
        arrays = {k: z[k].copy() for k in z.files}
    edit(arrays)
    out = tmp_path / name
    with open(out, "wb") as fh:
        np.savez(fh, **arrays)
    return out


def test_tree_invariants_the_scoring_walk_relies_on_are_checked(tmp_path):
    # in range but wrong: each would make the context walk read the wrong child or
    # score with a wrong root (silently different perplexities)
    lm = fitted(max_iter=5)
    p = tmp_path / "m.lm"
    lm.save(p)
    root_kids = slice(0, int(np.load(p)["tree.child_offsets"][1]))

    def reverse_root_children(a):
        for k in ("tree.children", "tree.child_first_word"):
            a[k][root_kids] = a[k][root_kids][::-1].copy()

    def swap_first_words(a):
        w = a["tree.child_first_word"]
        w[0], w[1] = w[1], w[0]

    def root_collapsed(a):
        a["tree.collapsed"][0] = 2

    def child_listed_under_itself(a):
        a["tree.children"][-1] = a["tree.children"][-2]

    for edit in (reverse_root_children, swap_first_words, root_collapsed, child_listed_under_itself):
        bad = _tampered(tmp_path, p, edit.__name__ + ".lm", edit)
        with pytest.raises(ModelFormatError, match=edit.__name__):
            LogLinearLM.load(bad)
    assert LogLinearLM.load(_tampered(tmp_path, p, "same.lm", lambda a: None)).score("a b") == lm.score("a b")


def test_score_and_full_scores_agree_with_log10_probs():
    lm = fitted(max_iter=20)
    fs = list(lm.full_scores("a b c"))
    assert len(fs) == 4  # a b c </s>
    c = Corpus.from_strings(["a b c"], vocab=lm.vocab_)
    np.testing.assert_allclose([x[0] for x in fs], lm.log10_probs(c))
    assert lm.score("a b c") == pytest.approx(sum(x[0] for x in fs))
    assert lm.score("a b c", eos=False) == pytest.approx(sum(x[0] for x in fs[:-1]))
    assert fs[0][1] == 2  # "<s> a": a bigram


def test_bad_parameters():
    with pytest.raises(ValueError, match="penalty"):
        LogLinearLM(penalty="nope").fit(TRAIN)
    with pytest.raises(ValueError, match="order"):
        LogLinearLM(order=0).fit(TRAIN)
    with pytest.raises(RuntimeError, match="not fitted"):
        LogLinearLM().corpus_perplexity(TRAIN)
    with pytest.raises(RuntimeError, match="not fitted"):
        LogLinearLM().perplexity("a b")
