"""The estimator variants of the log-linear LM (issue "beat Kneser-Ney"): the Kneser-Ney
base measure, count-class discounts and leave-one-out novel-context events, each against
a plain reference written from its definition."""

import io
import math
import zipfile
from collections import Counter, defaultdict

import numpy as np
import pytest

from suffixlm.corpus import BOS_ID, UNK_ID, Corpus
from suffixlm.evaluate import score
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM, ModelFormatError, count_class_discounts, discount_weights, node_counts
from suffixlm.suffixtree import SuffixTree

from .test_loglinear_model import (
    TEST,
    TRAIN,
    assert_gradient_matches_finite_differences,
    make,
    problem_for,
    trie_weights,
)

LN10 = math.log(10.0)


def backoff_prob(kn, ctx, v):
    """P(v | ctx) by the ARPA rule from the model's n-gram lists (ctx oldest word first)."""
    tables = []
    for n, (rows, lp, bow, hb) in enumerate(kn.model_.ngrams, start=1):
        tables.append({tuple(int(x) for x in r): (float(p), float(b) if h else 0.0)
                       for r, p, b, h in zip(rows, lp, bow, hb)})
    ctx = tuple(ctx)[-(kn.order - 1):] if kn.order > 1 else ()
    log10p = 0.0
    while True:
        hit = tables[len(ctx)].get(ctx + (v,))
        if hit is not None:
            return 10.0 ** (log10p + hit[0])
        if not ctx:
            return 0.0
        log10p += tables[len(ctx) - 1].get(ctx, (0.0, 0.0))[1]
        ctx = ctx[1:]


def dense_base_log_probs(corpus, lm, kn):
    """Reference: log of B(v | x) exp(score(v, x)) normalised over the predicted words."""
    tw = trie_weights(lm.tree_, lm.weights_)
    vocab = lm.vocab_
    m = lm.order - 1
    predicted = [v for v in range(len(vocab)) if v != BOS_ID and (v != UNK_ID or vocab.has_unk)]
    out = []
    for s in range(corpus.n_sentences):
        sent = [int(t) for t in corpus.sentence(s)]
        for i in range(1, len(sent)):
            rev = tuple(sent[:i][::-1][:m])  # most recent first, as the tree's contexts
            # the deepest context the model knows (a test context may be unseen beyond some depth)
            while rev and (rev, predicted[0]) not in tw and not any((rev, v) in tw for v in predicted):
                rev = rev[:-1]
            scores = {}
            for v in predicted:
                b = backoff_prob(kn, rev[::-1], v)
                s_v = sum(tw.get((rev[:d], v), 0.0) for d in range(len(rev) + 1))
                scores[v] = (math.log(b) if b > 0 else -math.inf) + s_v
            mx = max(scores.values())
            logz = mx + math.log(sum(math.exp(x - mx) for x in scores.values()))
            y = sent[i]
            out.append(scores[y] - logz if y in scores else float("nan"))
    return np.array(out)


def kn_fitted(lam=1e-3, positive=False, max_iter=200, order=3, lines=TRAIN):
    return LogLinearLM(order=order, lam=lam, base="kn", positive=positive, max_iter=max_iter, tol=1e-10).fit(lines)


def test_kn_base_with_zero_weights_is_kneser_ney_exactly():
    lm = kn_fitted(lam=1e6)  # every weight stays 0
    assert not lm.weights_.any()
    corpus = Corpus.from_strings(TRAIN)
    kn = KneserNeyLM(order=3, min_counts=[1]).fit(corpus)
    test = Corpus.from_strings(TEST, vocab=lm.vocab_)
    ours = lm.log10_probs(test)
    ref = kn.log10_probs(Corpus.from_strings(TEST, vocab=kn.vocab_))
    keep = ~np.isnan(ours)
    np.testing.assert_allclose(ours[keep], ref[keep], rtol=1e-6)
    assert lm.corpus_perplexity(test) == pytest.approx(score(kn, Corpus.from_strings(TEST, vocab=kn.vocab_)).ppl, rel=1e-6)


@pytest.mark.parametrize("positive", [True, False])
def test_kn_base_scores_match_dense_reference(positive):
    lm = kn_fitted(positive=positive, max_iter=40)
    assert lm.weights_.any() and (positive or (lm.weights_ < 0).any())
    kn = KneserNeyLM(order=3, min_counts=[1]).fit(Corpus.from_strings(TRAIN))
    for lines in (TRAIN, TEST):
        corpus = Corpus.from_strings(lines, vocab=lm.vocab_)
        ref = dense_base_log_probs(corpus, lm, kn)
        np.testing.assert_allclose(lm.log10_probs(corpus) * LN10, ref, rtol=1e-6, atol=1e-7, equal_nan=True)


def test_kn_base_gradient_matches_finite_differences():
    lm = kn_fitted(max_iter=1)
    corpus = Corpus.from_strings(TRAIN)
    tree = lm.tree_
    prob = problem_for(corpus, tree)
    from suffixlm.objective import LMObjective

    prob = LMObjective(tree, prob.end_node, prob.target_param, lm.base_)
    w = np.random.default_rng(3).normal(0, 0.7, tree.n_params)
    f, g = prob.value_grad(w)
    # the loss is the mean -ln P of the training events under the base-measure model
    lm.weights_ = w
    lm._scored_w = None
    assert f == pytest.approx(-np.nanmean(lm.log10_probs(corpus) * LN10), rel=1e-10)
    assert_gradient_matches_finite_differences(prob, w, g)


def test_kn_base_model_file_round_trip_and_checks(tmp_path):
    lm = kn_fitted(max_iter=30)
    path = tmp_path / "m.npz"
    lm.save(path)
    back = LogLinearLM.load(path)
    test = Corpus.from_strings(TEST, vocab=lm.vocab_)
    np.testing.assert_array_equal(back.log10_probs(test), lm.log10_probs(test))
    assert back.base == "kn" and back.positive is False
    # a tampered interpolation weight is refused
    bad = tmp_path / "bad.npz"
    with zipfile.ZipFile(path) as zin, zipfile.ZipFile(bad, "w") as zout:
        for info in zin.infolist():
            data = zin.read(info)
            if info.filename == "base.gamma.npy":
                arr = np.load(io.BytesIO(data))
                arr[0] = -1.0
                buf = io.BytesIO()
                np.save(buf, arr)
                data = buf.getvalue()
            zout.writestr(info, data)
    with pytest.raises(ModelFormatError):
        LogLinearLM.load(bad)


def test_count_class_discounts_from_trie_count_of_counts():
    corpus, tree = make(collapse=True, m=3, lines=TRAIN * 3 + ["a c", "c b a", "b c c a"])
    trie = SuffixTree.build(corpus, 3, collapse=False)
    # count of every (context, word) pair of the trie, by depth
    nk = defaultdict(Counter)
    for j in range(trie.n_nodes):
        words, counts = trie.successors(j)
        for c in counts:
            nk[int(trie.depth[j])][min(int(c), 5)] += 1
    D = count_class_discounts(tree)
    np.testing.assert_allclose(D, count_class_discounts(trie), rtol=1e-12)
    for d in range(4):
        n1, n2, n3, n4 = (nk[d][k] for k in (1, 2, 3, 4))
        if n1 == 0 or n2 == 0:
            assert not D[d].any()
            continue
        Y = n1 / (n1 + 2 * n2)
        want = [1 - 2 * Y * n2 / n1, 2 - 3 * Y * n3 / n2 if n2 else 0, 3 - 4 * Y * n4 / n3 if n3 else 0]
        want = [min(max(x, 0.0), k + 1.0) for k, x in enumerate(want)]
        np.testing.assert_allclose(D[d], want, rtol=1e-12)
    # a param's weight is the sum over the trie coordinates it stands for
    tw = discount_weights(tree)
    for j in range(tree.n_nodes):
        d, c = int(tree.depth[j]), int(tree.collapsed[j])
        words, counts = tree.successors(j)
        for k, cnt in enumerate(counts):
            cls = min(int(cnt), 3) - 1
            assert tw[tree.succ_offsets[j] + k] == pytest.approx(sum(D[x, cls] for x in range(d - c + 1, d + 1)))


def test_novel_context_events_are_the_singleton_contexts_moved_to_their_parent():
    corpus, tree = make(collapse=True, m=3)
    prob = problem_for(corpus, tree)
    lm = LogLinearLM(order=4, loo=1.0)
    end, param, weight = lm._novel_context_events(tree, prob.end_node, prob.target_param)
    assert weight == 1.0
    # brute force: count every full training context (as a tuple), keep the singletons
    ctx_of = {}
    counts = Counter()
    for p, e in enumerate(prob.end_node):
        ctx = tuple(tree.context(int(e)))
        counts[ctx] += 1
        ctx_of[p] = ctx
    want = Counter()
    node = tree.param_node()
    succ_word = tree.succ_words
    for p, e in enumerate(prob.end_node):
        if counts[ctx_of[p]] == 1 and tree.parent[e] >= 0:
            parent_ctx = tuple(tree.context(int(tree.parent[e])))
            # the deepest context seen at least twice is a prefix of this one: the parent's
            assert counts_of_prefix(counts, parent_ctx) >= 2
            want[(parent_ctx, int(succ_word[prob.target_param[p]]))] += 1
    got = Counter((tuple(tree.context(int(n))), int(succ_word[q])) for n, q in zip(end, param))
    assert got == want and sum(want.values()) > 0
    # each event's param is the deepest of its word at or above the parent
    for n, q in zip(end, param):
        assert tree.depth[node[q]] <= tree.depth[n]
    assert node_counts(tree)[tree.parent < 0][0] == len(prob.end_node)


def counts_of_prefix(counts, prefix):
    return sum(c for ctx, c in counts.items() if ctx[:len(prefix)] == prefix)


def test_variants_check_their_parameters():
    with pytest.raises(ValueError, match="loo"):
        LogLinearLM(loo=-1).fit(TRAIN)
    with pytest.raises(ValueError, match="fista"):
        LogLinearLM(loo=1, solver="sage").fit(TRAIN)
    with pytest.raises(ValueError, match="base"):
        LogLinearLM(base="witten-bell").fit(TRAIN)
    with pytest.raises(ValueError, match="discount"):
        LogLinearLM(discount=float("nan")).fit(TRAIN)
