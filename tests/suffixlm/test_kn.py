"""Kneser-Ney: counts, discounts and probabilities against hand computations and a slow
reference; normalisation; SRILM's perplexities on PTB (when ../shared is present)."""

from __future__ import annotations

import io
import math
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from suffixlm.corpus import BOS, EOS, UNK, Corpus, Vocabulary, load_training_corpus
from suffixlm.evaluate import score
from suffixlm.backoff.kn import DiscountWarning, KneserNeyLM
from suffixlm.backoff.kn_estimate import kneser_ney_counts
from suffixlm.backoff.kn_steps import count_of_counts, estimate_discounts, srilm_min_counts
from suffixlm.ngrams import count_ngrams

TOY = ["a b", "a b", "b a", "c"]


def _synthetic_sentences(seed=0, n_sent=300, n_words=300, lengths=(2, 12)):
    """Zipf-distributed words with a sticky Markov chain, so that n-grams repeat and every
    count-of-counts n1..n4 is non-zero up to order 3."""
    rng = np.random.default_rng(seed)
    p = 1.0 / np.arange(1, n_words + 1)
    p /= p.sum()
    follow = rng.integers(0, n_words, size=(n_words, 3))
    out = []
    for _ in range(n_sent):
        w = rng.choice(n_words, p=p)
        s = [w]
        for _ in range(rng.integers(*lengths)):
            w = follow[w, rng.integers(0, 3)] if rng.random() < 0.7 else rng.choice(n_words, p=p)
            s.append(w)
        out.append(" ".join(f"w{i}" for i in s))
    return out


def _probs_at(lm, vocab, sentences):
    """log10 p of every predicted token of the given sentences (lists of words)."""
    c = Corpus.from_sentences(sentences, vocab)
    return lm.log10_probs(c)


# ---------------------------------------------------------------- hand computations

def test_toy_counts_and_discounts_by_hand():
    corpus = Corpus.from_strings(TOY)
    v = corpus.vocab
    c = count_ngrams(corpus, 2)
    raw1 = {v.words[i]: int(k) for i, k in enumerate(c.count[0]) if k}
    assert raw1 == {BOS: 4, EOS: 4, "a": 3, "b": 3, "c": 1}
    rows = c.rows(2)
    raw2 = {tuple(v.words[i] for i in r): int(k) for r, k in zip(rows, c.count[1])}
    assert raw2 == {(BOS, "a"): 2, ("a", "b"): 2, ("b", EOS): 2, (BOS, "b"): 1, ("b", "a"): 1,
                    ("a", EOS): 1, (BOS, "c"): 1, ("c", EOS): 1}
    nonevent = np.zeros(len(v), dtype=bool)
    nonevent[0] = True
    kn = kneser_ney_counts(c, nonevent)
    # continuation counts: a <- {<s>, b}, b <- {a, <s>}, </s> <- {b, a, c}, c <- {<s>}; <s> keeps 4
    cc = {v.words[i]: int(k) for i, k in enumerate(kn[0]) if k}
    assert cc == {BOS: 4, "a": 2, "b": 2, EOS: 3, "c": 1}
    coc1 = count_of_counts(kn[0], c.word[0], nonevent)
    coc2 = count_of_counts(kn[1], c.word[1], nonevent)
    assert list(coc1[1:]) == [1, 2, 1, 0]
    assert list(coc2[1:]) == [5, 3, 0, 0]
    assert estimate_discounts(coc1, False, 1) == pytest.approx((0.2, 0.2, 0.2))  # 1/(1+2*2)
    assert estimate_discounts(coc2, False, 2) == pytest.approx((5 / 11,) * 3)  # 5/(5+2*3)


def test_toy_original_kn_probabilities_by_hand():
    # |V| = 4 predictable words (a, b, c, </s>). Unigrams: T = 8, D = 0.2, gamma = 0.2*4/8 = 0.1:
    # p(a) = 1.8/8 + 0.1/4 = 0.25, p(b) = 0.25, p(</s>) = 2.8/8 + 0.025 = 0.375, p(c) = 0.125.
    # Bigrams: D = 5/11. Context <s> (a:2 b:1 c:1, T = 4, gamma = 3D/4); a (b:2 </s>:1, T = 3,
    # gamma = 2D/3); b (</s>:2 a:1, same); c (</s>:1, T = 1, gamma = D). Unseen bigrams back
    # off with bow = gamma (no cut-offs).
    corpus = Corpus.from_strings(TOY)
    lm = KneserNeyLM(2, modified=False, min_counts=[1]).fit(corpus)
    got = 10 ** _probs_at(lm, corpus.vocab, [["a", "b"], ["c", "a", "c"], ["b", "a"]])
    D = 5 / 11
    pa, pb, pc, pe = 0.25, 0.25, 0.125, 0.375
    g_s, g_a, g_b, g_c = 3 * D / 4, 2 * D / 3, 2 * D / 3, D
    want = [(2 - D) / 4 + g_s * pa, (2 - D) / 3 + g_a * pb, (2 - D) / 3 + g_b * pe,   # <s> a b </s>
            (1 - D) / 4 + g_s * pc, g_c * pa, g_a * pc, (1 - D) / 1 + g_c * pe,       # <s> c a c </s>
            (1 - D) / 4 + g_s * pb, (1 - D) / 3 + g_b * pa, (1 - D) / 3 + g_a * pe]   # <s> b a </s>
    np.testing.assert_allclose(got, want, rtol=2e-6)
    assert lm.model_.counts == [5, 8]  # a b c </s> and <s>; the 8 seen bigrams


def test_toy_arpa_values_by_hand():
    corpus = Corpus.from_strings(TOY)
    lm = KneserNeyLM(2, modified=False, min_counts=[1]).fit(corpus)
    text = lm.model_.arpa_bytes().decode()
    lines = dict((ln.split("\t")[1], ln.split("\t")) for ln in text.splitlines() if ln.count("\t") >= 1)
    assert lines[BOS][0] == "-99"
    assert float(lines["a"][0]) == pytest.approx(math.log10(0.25), abs=1e-6)
    D = 5 / 11
    # bow(a) = (1 - p(b|a) - p(</s>|a)) / (1 - p(b) - p(</s>)) = gamma(a) = 2D/3
    assert float(lines["a"][2]) == pytest.approx(math.log10(2 * D / 3), abs=1e-6)
    assert float(lines["a b"][0]) == pytest.approx(math.log10((2 - D) / 3 + 2 * D / 3 * 0.25), abs=1e-6)
    assert "\\data\\\nngram 1=5\nngram 2=8\n" in text


# ---------------------------------------------------------------- slow reference

def _reference_kn(sentences, order, modified, vocab_words):
    """Textbook interpolated (modified) KN with SRILM's count rules, no cut-offs:
    p(w|h) = max(c(hw) - D, 0)/c(h) + gamma(h) p(w|h') for seen contexts, p(w|h') otherwise."""
    counts = [Counter() for _ in range(order + 1)]
    for s in sentences:
        toks = [BOS] + s + [EOS]
        for n in range(1, order + 1):
            for i in range(len(toks) - n + 1):
                counts[n][tuple(toks[i:i + n])] += 1
    kn = [None] + [Counter() for _ in range(order)]
    kn[order] = counts[order]
    for n in range(1, order):
        for g, k in counts[n].items():
            if g[0] == BOS:
                kn[n][g] = k
        for g in counts[n + 1]:
            if g[1] != BOS:
                kn[n][g[1:]] += 1
    disc = [None]
    for n in range(1, order + 1):
        coc = Counter(k for g, k in kn[n].items() if g[-1] != BOS)
        n1, n2, n3, n4 = (coc[i] for i in range(1, 5))
        y = n1 / (n1 + 2 * n2)
        if modified:
            disc.append((1 - 2 * y * n2 / n1, 2 - 3 * y * n3 / n2, 3 - 4 * y * n4 / n3))
        else:
            disc.append((y, y, y))
    ctx_stats = [dict() for _ in range(order + 1)]
    for n in range(1, order + 1):
        for g, k in kn[n].items():
            if g[-1] == BOS:
                continue
            st_ = ctx_stats[n].setdefault(g[:-1], [0, 0.0])
            st_[0] += k
            st_[1] += disc[n][min(k, 3) - 1]
    V = len(vocab_words)

    def p(w, h):
        n = len(h) + 1
        lower = 1.0 / V if n == 1 else p(w, h[1:])
        stats = ctx_stats[n].get(tuple(h))
        if stats is None:
            return lower
        total, dsum = stats
        k = kn[n].get(tuple(h) + (w,), 0)
        d = disc[n][min(k, 3) - 1] if k else 0.0
        return max(k - d, 0) / total + dsum / total * lower

    return p


@pytest.mark.parametrize("modified", [True, False])
def test_against_reference_no_cutoffs(modified):
    train = Corpus.from_strings(_synthetic_sentences(0))
    test = Corpus.from_sentences([s.split() for s in _synthetic_sentences(1, n_sent=40)], train.vocab)
    order = 3
    with warnings.catch_warnings():
        warnings.simplefilter("error", DiscountWarning)  # SRILM's formulas apply as they are
        lm = KneserNeyLM(order, modified=modified, min_counts=[1]).fit(train)
    words = [w for w in train.vocab.words if w != BOS and (w != UNK or train.vocab.has_unk)]
    ref = _reference_kn(list(train.sentences_as_words()), order, modified, words)
    got = lm.log10_probs(test)
    want = []
    for s in test.sentences_as_words():
        toks = [BOS] + s + [EOS]
        for i in range(1, len(toks)):
            want.append(math.log10(ref(toks[i], toks[max(0, i - order + 1):i])))
    keep = test.target_mask()[np.flatnonzero(~np.isin(np.arange(test.n_tokens), test.offsets[:-1]))]
    assert 0 < (~keep).sum() < 0.1 * len(keep)  # a few test words are OOVs (closed vocabulary): not scored
    np.testing.assert_allclose(got[keep], np.array(want)[keep], atol=2e-6)


def _context_sums(lm, vocab, prefixes):
    """sum over every predictable word of p(w | context) for each sentence prefix."""
    words = [w for w in vocab.words[1:] if w != EOS and (w != UNK or vocab.has_unk)]
    sents = []
    for pre in prefixes:
        sents += [pre + [w] for w in words] + [pre]  # the bare prefix predicts </s>
    c = Corpus.from_sentences(sents, vocab)
    lp = lm.log10_probs(c)
    # predicted position of the last token of each sentence: its </s> is at index k, the
    # target word (or </s> for the bare prefix) just before or at it
    ends = np.cumsum([len(s) + 1 for s in sents]) - 1
    idx = [e - 1 if i % (len(words) + 1) != len(words) else e for i, e in enumerate(ends)]
    p = 10 ** lp[idx]
    return p.reshape(len(prefixes), len(words) + 1).sum(axis=1)


@pytest.mark.parametrize("modified,min_counts,order", [(True, None, 4), (True, [1], 3), (False, [1, 2, 2], 4)])
def test_probabilities_sum_to_one(modified, min_counts, order):
    train = Corpus.from_strings(_synthetic_sentences(2), unk=True)
    lm = KneserNeyLM(order, modified=modified, min_counts=min_counts).fit(train)
    sents = list(train.sentences_as_words())[:6]
    prefixes = [s[:k] for s in sents for k in range(0, min(len(s), 5))]
    prefixes.append(["zzz-unseen", sents[0][0]])
    sums = _context_sums(lm, train.vocab, prefixes)
    np.testing.assert_allclose(sums, 1.0, atol=3e-5)


@pytest.mark.parametrize("has_unk", [False, True])
def test_given_vocabulary_normalises(has_unk):
    # a vocabulary missing 30 training words (OOVs in training) plus 5 words never seen:
    # closed (OOV n-grams skipped, SRILM without -unk) or open (<unk> is a word)
    sents = _synthetic_sentences(4)
    words = sorted({w for s in sents for w in s.split()})
    vocab = Vocabulary([BOS, EOS, UNK] + words[30:] + [f"zz{i}" for i in range(5)], has_unk=has_unk)
    train = Corpus.from_sentences([s.split() for s in sents], vocab)
    assert (train.tokens == 2).sum() > 100
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)
        lm = KneserNeyLM(3).fit(train)
    prefixes = [[w if w in vocab else UNK for w in s.split()[:k]] for s in sents[:5] for k in range(4)]
    np.testing.assert_allclose(_context_sums(lm, vocab, prefixes), 1.0, atol=3e-5)
    unseen = Corpus.from_sentences([["zz1"]], vocab)
    assert np.isfinite(lm.log10_probs(unseen)).all()  # unseen vocabulary words get mass


def test_cutoffs_drop_ngrams():
    train = Corpus.from_strings(_synthetic_sentences(3))
    full = KneserNeyLM(3, min_counts=[1]).fit(train).model_.counts
    cut = KneserNeyLM(3).fit(train).model_.counts
    assert cut[:2] == full[:2] and cut[2] < full[2]
    assert srilm_min_counts(11) == [1, 1, 2, 2, 2, 2, 2, 2, 2, 1, 1]


def test_zero_count_of_counts_falls_back_with_warning():
    # every trigram seen once: n2 = n3 = n4 = 0 for the top order -> SRILM fails
    corpus = Corpus.from_strings(["a b c d e", "f g h i j", "a b c d e", "k l m"])
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        lm = KneserNeyLM(3, min_counts=[1]).fit(corpus)
    assert any(issubclass(x.category, DiscountWarning) for x in w)
    for d1, d2, d3 in lm.discounts_:
        assert 0 < d1 <= 1 and 0 < d2 <= 2 and 0 < d3 <= 3
    sums = _context_sums(lm, corpus.vocab, [[], ["a"], ["a", "b"], ["k", "l"]])
    np.testing.assert_allclose(sums, 1.0, atol=3e-5)


@settings(max_examples=25, deadline=None)
@given(st.lists(st.lists(st.sampled_from("abcde"), min_size=0, max_size=7), min_size=1, max_size=6),
       st.integers(1, 4))
def test_count_ngrams_matches_brute_force(sents, order):
    sents = [s for s in sents if s] or [["a"]]
    corpus = Corpus.from_sentences(sents, Corpus.from_strings([" ".join(s) for s in sents]).vocab)
    c = count_ngrams(corpus, order)
    w = corpus.vocab.words
    for n in range(1, order + 1):
        want = Counter()
        for s in sents:
            toks = [BOS] + s + [EOS]
            for i in range(len(toks) - n + 1):
                want[tuple(toks[i:i + n])] += 1
        got = {tuple(w[i] for i in r): int(k) for r, k in zip(c.rows(n), c.count[n - 1]) if k}
        assert got == dict(want)


@given(st.lists(st.lists(st.sampled_from("abcde"), min_size=0, max_size=7), min_size=1, max_size=6),
       st.integers(1, 4), st.integers(0, 8), st.integers(0, 8))
def test_rows_by_order_are_the_rows_of_a_first_word_range(sents, order, lo, hi):
    """``rows_by_order`` (each order's rows from the order below) gives, for the first
    words in [lo, hi), exactly the rows of ``NgramCounts.rows`` there (the walk down to
    the first word, column by column) and the slice of each order they are; the range
    of every word, empty ranges, and refusals of a range outside the vocabulary and of
    prefixes outside the rows below."""
    from suffixlm import _ngram_kernels as K
    from suffixlm.ngrams import rows_by_order

    sents = [s for s in sents if s] or [["a"]]
    corpus = Corpus.from_sentences(sents, Corpus.from_strings([" ".join(s) for s in sents]).vocab)
    c = count_ngrams(corpus, order)
    V = len(corpus.vocab)
    lo, hi = min(lo, hi, V), min(max(lo, hi), V)
    for a, b in ((lo, hi), (0, V)):
        rows, pieces = rows_by_order(c.word, c.prefix, a, b)
        assert len(rows) == len(pieces) == order - 1
        for n, (r, piece) in enumerate(zip(rows, pieces), 2):
            full = c.rows(n)
            want = np.flatnonzero((full[:, 0] >= a) & (full[:, 0] < b))
            assert r.dtype == np.int32 and r.shape == (len(want), n)
            assert np.array_equal(np.arange(len(full))[piece], want)
            assert np.array_equal(r, full[want])
    assert np.array_equal(rows_by_order(c.word, c.prefix)[0][-1] if order > 1 else np.zeros((0, 0)),
                          c.rows(order) if order > 1 else np.zeros((0, 0)))
    with pytest.raises(ValueError, match="range of word ids"):
        rows_by_order(c.word, c.prefix, 0, V + 1)
    with pytest.raises(ValueError, match="outside the rows"):
        K.extend_rows(np.zeros((2, 1), dtype=np.int32), np.array([0, 2], dtype=np.int32), 0,
                      np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError, match="outside the rows"):
        K.extend_rows(np.zeros((2, 1), dtype=np.int32), np.array([0, 1], dtype=np.int32), 1,
                      np.zeros(2, dtype=np.int32))
    with pytest.raises(ValueError, match="differ in length"):
        K.extend_rows(np.zeros((2, 1), dtype=np.int32), np.array([0, 1], dtype=np.int32), 0,
                      np.zeros(3, dtype=np.int32))


@pytest.mark.parametrize("T,V", [(0, 3), (1, 1), (7, 2), (400, 3), (5000, 40), (30000, 900)])
def test_counting_run_by_run_is_the_two_counting_sorts(T, V):
    """``next_order_runs`` (order n from the level below, run by run; what
    ``count_ngrams`` uses from the trigrams on) gives ``next_order``'s arrays element for
    element, and hands the level above the same positions and runs (none for the highest
    order, ``top``): on texts whose runs
    are sorted by insertion and by heapsort (``sort_prefix``: a small vocabulary makes long runs),
    sentences of one word, an empty text."""
    from suffixlm import _ngram_kernels as K

    rng = np.random.default_rng(T + V)
    tok = rng.integers(0, V, T).astype(np.int32)
    start = np.zeros(T, dtype=bool)
    if T:
        start[0] = True
        start[rng.integers(0, T, max(T // 7, 1))] = True
    ids_a = ids_b = tok.copy()
    n_prev = V
    first = K.next_order(ids_a, tok, start, n_prev, V)
    ids_a = ids_b = first[0]
    n_prev = len(first[1])
    at, runs = first[5], first[6]
    assert np.array_equal(np.diff(runs), first[4]) and len(at) == runs[-1]
    nxt = K.next_tokens(tok, start)
    for _ in range(3, 7):
        want = K.next_order(ids_a, tok, start, n_prev, V)
        got = K.next_order_runs(ids_b, at, runs, nxt)
        for x, y in zip(want, got):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        top = K.next_order_runs(ids_b, at, runs, nxt, True)  # the highest order: no level above
        for x, y in zip(want[1:5], top[1:5]):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        assert len(top[0]) == len(top[5]) == len(top[6]) == len(top[7]) == len(got[7]) == 0
        # where each n-gram first ends: the first of its run of positions, at the top too
        first = got[6][:-1]
        for t in (False, True):
            with_first = K.next_order_runs(ids_b, at, runs, nxt, t, True)
            assert np.array_equal(with_first[7], got[5][first]) and with_first[7].dtype == np.int32
        ids_a, ids_b, at, runs, n_prev = want[0], got[0], got[5], got[6], len(want[1])


# ---------------------------------------------------------------- SRILM on PTB

# (subset, kind, order) -> (ppl, ppl1) from ../shared/anchors/README.md
ANCHORS_100K = {
    ("modified", "default", 2): (210.5271, 268.9843), ("modified", "default", 3): (194.1698, 247.1677),
    ("modified", "default", 5): (192.3328, 244.7228), ("modified", "default", 7): (192.155, 244.4861),
    ("modified", "default", 9): (192.2197, 244.5722), ("modified", "default", 10): (192.2288, 244.5843),
    ("modified", "nocut", 3): (191.7179, 243.9046), ("modified", "nocut", 4): (189.4165, 240.8435),
    ("modified", "nocut", 6): (188.5751, 239.7247), ("modified", "nocut", 8): (188.5596, 239.7041),
    ("modified", "nocut", 10): (188.5759, 239.7258),
    ("original", "nocut", 2): (213.525, 272.9914), ("original", "nocut", 4): (192.664, 245.1635),
    ("original", "nocut", 7): (191.569, 243.7065),
}
# full PTB: a representative pair here (each fit takes seconds); scripts/bench_kn.py checks every order
ANCHORS_FULL = {("modified", "default", 3): (152.9853, 194.5778), ("modified", "nocut", 5): (141.1866, 178.8837)}


def _check_anchors(train_path, test_path, anchors):
    train = load_training_corpus(train_path, unk=True)
    test = Corpus.from_text(test_path, train.vocab)
    for (method, kind, order), (ppl, ppl1) in anchors.items():
        lm = KneserNeyLM(order, modified=method == "modified", min_counts=None if kind == "default" else [1]).fit(train)
        r = score(lm, test)
        assert float(f"{r.ppl:.4g}") == float(f"{ppl:.4g}"), (method, kind, order, r.ppl, ppl)
        assert float(f"{r.ppl1:.4g}") == float(f"{ppl1:.4g}"), (method, kind, order, r.ppl1, ppl1)
        assert r.ppl == pytest.approx(ppl, rel=2e-6)  # in fact equal to SRILM's printed digits


def test_srilm_perplexities_100k(shared):
    _check_anchors(shared("corpora", "ptb", "ptb.train.100k.txt"), shared("corpora", "ptb", "ptb.test.20k.txt"),
                   ANCHORS_100K)


@pytest.mark.slow
def test_srilm_perplexities_full_ptb(shared):
    _check_anchors(shared("corpora", "ptb", "ptb.train.txt"), shared("corpora", "ptb", "ptb.test.txt"), ANCHORS_FULL)


@pytest.mark.parametrize("min_counts", [[1], None])
def test_a_consumed_estimate_is_the_same_model(min_counts):
    """``estimate_kneser_ney(consume=True)`` (``KneserNeyLM.fit``'s: the counts' arrays
    dropped as each order is written out) gives the model ``consume=False`` gives, and
    leaves no count array behind; without it the n-grams' arrays stay."""
    from suffixlm.backoff.kn_estimate import estimate_kneser_ney

    rng = np.random.default_rng(3)
    words = [f"w{i}" for i in range(12)]
    lines = [" ".join(rng.choice(words, size=rng.integers(1, 15))) for _ in range(300)]
    corpus = Corpus.from_strings(lines, unk=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)
        kept, consumed = count_ngrams(corpus, 4), count_ngrams(corpus, 4)
        a, _ = estimate_kneser_ney(kept, corpus.vocab, min_counts=min_counts)
        b, _ = estimate_kneser_ney(consumed, corpus.vocab, min_counts=min_counts, consume=True)
    assert len(a.ngrams) == len(b.ngrams) == 4
    for x, y in zip(a.ngrams, b.ngrams):
        for u, v in zip(x, y):
            assert u.dtype == v.dtype and np.array_equal(u, v)
    assert all(w is None for w in consumed.word + consumed.prefix + consumed.suffix)
    assert all(w is not None for w in kept.word + kept.prefix + kept.suffix)


@pytest.mark.parametrize("unk,min_counts,order", [(True, [1], 4), (True, None, 5), (False, None, 3), (True, [1], 1)])
def test_a_streamed_estimate_writes_the_models_arpa_bytes(tmp_path, monkeypatch, unk, min_counts, order):
    """``KneserNeyLM.estimate_text(...).write_arpa`` (``suffixlm kn``'s path without
    --prune or --binary: blocks of n-grams listed lowest order first, the estimate freed
    as it goes) writes the bytes ``fit_text(...).write_arpa`` writes, with blocks of 7
    n-grams (many per order) as with the whole model, on one thread or three; its header
    counts and parameter count are the model's; it lists once, and leaves no count array
    behind."""
    from suffixlm.backoff.arpa import write_arpa_sections
    from suffixlm.backoff.kn_estimate import KneserNeyEstimate

    rng = np.random.default_rng(5)
    words = [f"w{i}" for i in range(15)]
    text = tmp_path / "train.txt"
    text.write_text("".join(" ".join(rng.choice(words, size=rng.integers(1, 12))) + "\n" for _ in range(200)))
    vocab = tmp_path / "vocab.txt"
    vocab.write_text("".join(w + "\n" for w in words[:10]))  # a closed vocabulary leaves <unk> a non-event
    monkeypatch.setattr(KneserNeyEstimate, "BLOCK", 7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)
        lm = KneserNeyLM(order, min_counts=min_counts).fit_text(text, None if unk else vocab, unk=unk)
        lm.write_arpa(tmp_path / "whole.arpa")
        est, size = KneserNeyLM(order, min_counts=min_counts).estimate_text(text, None if unk else vocab, unk=unk)
    assert size == (lm.n_sentences_, lm.n_words_, lm.n_oov_) and size.n_sentences == 200
    assert est.counts == lm.model_.counts and est.n_parameters == lm.model_.n_parameters
    assert est.info == lm.info_
    counts = est._ngrams
    est.write_arpa(tmp_path / "streamed.arpa")
    assert (tmp_path / "streamed.arpa").read_bytes() == (tmp_path / "whole.arpa").read_bytes()
    assert all(w is None for w in counts.word + counts.prefix + counts.suffix)
    with pytest.raises(RuntimeError, match="already listed"):
        est.model()
    # the pieces listed and formatted on three threads: the same bytes
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)
        est, _ = KneserNeyLM(order, min_counts=min_counts).estimate_text(text, None if unk else vocab, unk=unk)
    out = io.BytesIO()
    write_arpa_sections(out, est.vocab.words, est.counts, est.sections(), threads=3)
    assert out.getvalue() == (tmp_path / "whole.arpa").read_bytes()


def test_the_kn_command_streams_its_arpa_file(tmp_path):
    """``suffixlm kn`` without --prune or --binary writes the ARPA file ``KneserNeyLM``'s
    whole model writes, byte for byte, and never over its training text."""
    from click.testing import CliRunner

    from suffixlm.cli import main

    rng = np.random.default_rng(8)
    words = [f"w{i}" for i in range(20)]
    text = tmp_path / "train.txt"
    text.write_text("".join(" ".join(rng.choice(words, size=rng.integers(1, 15))) + "\n" for _ in range(400)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)
        KneserNeyLM(5, min_counts=[1]).fit_text(text, unk=True).write_arpa(tmp_path / "whole.arpa")
    r = CliRunner().invoke(main, ["kn", str(text), "-o", str(tmp_path / "cli.arpa"), "--order", "5",
                                  "--min-count", "none", "-q"])
    assert r.exit_code == 0, r.output
    assert (tmp_path / "cli.arpa").read_bytes() == (tmp_path / "whole.arpa").read_bytes()
    before = text.read_bytes()
    r = CliRunner().invoke(main, ["kn", str(text), "-o", str(text), "--order", "3", "-q"])
    assert r.exit_code != 0 and text.read_bytes() == before
