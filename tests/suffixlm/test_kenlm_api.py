"""KenLM's Python API on every model (suffixlm.query): against the kenlm module itself
where it is installed, and against the models' own corpus scoring everywhere."""

from __future__ import annotations

import copy
import itertools
import random

import numpy as np
import pytest

import suffixlm
from suffixlm.backoff.arpa import BackoffLM
from suffixlm.corpus import UNK_ID, Corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM
from suffixlm.query import UNKNOWN_MISSING_LOG10, FullScoreReturn, State

TRAIN = ["the cat sat on the mat", "the dog sat on the log", "a cat saw a dog", "the cat saw the dog on a mat",
         "on the mat sat a cat", "a dog sat"]
ODD = ["the cat", "zebra the cat zebra", "", "the the the", "</s> the", "mat mat zebra dog"]

# A small back-off model without <unk>, with a 3-gram whose 2-gram suffix is absent (as
# cut-offs and pruning leave them) and back-off weights on several orders.
TINY_ARPA = """
\\data\\
ngram 1=6
ngram 2=6
ngram 3=2

\\1-grams:
-0.8\t</s>
-99\t<s>\t-0.3
-0.7\ta\t-0.25
-0.6\tb\t-0.2
-0.9\tc\t-0.15
-1.1\td

\\2-grams:
-0.3\t<s> a\t-0.1
-0.4\ta b\t-0.05
-0.5\tb c
-0.35\tb </s>
-0.6\tc a
-0.45\t<s> b

\\3-grams:
-0.2\t<s> a b
-0.1\ta b d

\\end\\
"""


def _sentences(vocab_words, n=60, seed=0):
    rng = random.Random(seed)
    words = list(vocab_words) + ["zebra"]
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 9))) for _ in range(n)]


def thread_counts():
    """Set numba's thread count to 2, 3, ... NUMBA_NUM_THREADS in turn, yielding each (the
    count before is restored at the end); the test is skipped where numba has one."""
    import numba

    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread")
    before = numba.get_num_threads()
    try:
        for threads in range(2, numba.config.NUMBA_NUM_THREADS + 1):
            numba.set_num_threads(threads)
            yield threads
    finally:
        numba.set_num_threads(before)


def _walks(model, words, n=400, seed=1):
    """Random state walks: the states reached and every BaseFullScore return."""
    rng = random.Random(seed)
    states, rets = [], []
    for _ in range(n):
        s = State()
        (model.BeginSentenceWrite if rng.random() < 0.5 else model.NullContextWrite)(s)
        for _ in range(rng.randrange(0, 5)):
            out = State()
            rets.append(tuple(model.BaseFullScore(s, rng.choice(words), out)))
            s = out
        states.append(s)
    return states, rets


def _compare_with_kenlm(path, sentences, words, tmp_path=None):
    kenlm = pytest.importorskip("kenlm")
    km = kenlm.Model(str(path))
    _compare_model_with_kenlm(kenlm, km, suffixlm.Model(path), sentences, words)
    if tmp_path is not None:  # and the binary model built from the file
        from suffixlm.backoff.binary import write_binary

        write_binary(BackoffLM.read_arpa(path), tmp_path / "model.bin")
        _compare_model_with_kenlm(kenlm, km, suffixlm.Model(tmp_path / "model.bin"), sentences, words)


def _compare_model_with_kenlm(kenlm, km, sm, sentences, words):
    assert sm.order == km.order
    for s in sentences:
        for bos, eos in itertools.product((True, False), repeat=2):
            want = [(float(p), n, bool(o)) for p, n, o in km.full_scores(s, bos=bos, eos=eos)]
            assert list(sm.full_scores(s, bos=bos, eos=eos)) == want, (s, bos, eos)
            assert sm.score(s, bos=bos, eos=eos) == km.score(s, bos=bos, eos=eos)
        assert sm.perplexity(s) == km.perplexity(s)
    for w in words + ["zebra", "<unk>", "<s>", "</s>"]:
        assert (w in sm) == (w in km), w
    # state by state: the same scores along the same walks, and equal states exactly
    # where KenLM's are equal
    ours, our_rets = _walks(sm, words)
    rng = random.Random(1)
    theirs, their_rets = [], []
    for _ in range(len(ours)):
        s = kenlm.State()
        (km.BeginSentenceWrite if rng.random() < 0.5 else km.NullContextWrite)(s)
        for _ in range(rng.randrange(0, 5)):
            out = kenlm.State()
            r = km.BaseFullScore(s, rng.choice(words), out)
            their_rets.append((r.log_prob, r.ngram_length, bool(r.oov)))
            s = out
        theirs.append(s)
    assert our_rets == their_rets
    for i, j in itertools.combinations(range(0, len(ours), 3), 2):
        assert (ours[i] == ours[j]) == (theirs[i] == theirs[j])
        if theirs[i] == theirs[j]:
            assert hash(ours[i]) == hash(ours[j])


def test_tiny_arpa_equals_kenlm(tmp_path):
    path = tmp_path / "tiny.arpa"
    path.write_text(TINY_ARPA.lstrip())
    sentences = ["a b d", "a b c a", "b c", "x a b", "a", "", "d d d", "<s> a b", "a b </s> c"]
    sentences += _sentences(["a", "b", "c", "d", "</s>"], n=150)
    _compare_with_kenlm(path, sentences, ["a", "b", "c", "d", "</s>", "<s>", "x"], tmp_path)


@pytest.mark.parametrize("name", ["ptb100k.kn3.srilm-nocut.arpa.gz", "ptb.kn5.srilm-default.arpa.gz",
                                  "ptb.kn5.default.prune1e-7.srilm.arpa.gz"])
def test_srilm_arpa_files_equal_kenlm(shared, name, tmp_path):
    path = shared("anchors", "srilm", name)
    test = shared("corpora", "ptb", "ptb.test.txt")
    with open(test) as f:
        sentences = [next(f).strip() for _ in range(150)]
    words = sorted({w for s in sentences for w in s.split()})[:300]
    _compare_with_kenlm(path, sentences + ODD, words, tmp_path)


# ---------------------------------------------------------------- without kenlm


def _models():
    corpus = Corpus.from_strings(TRAIN)
    kn = KneserNeyLM(order=3, min_counts=[1]).fit(corpus)
    return {
        "kn": kn,
        "arpa": kn.model_,
        "loglinear-tree": LogLinearLM(order=3, lam=0.02, max_iter=60).fit(corpus),
        "loglinear-kn-base": LogLinearLM(order=4, lam=0.02, max_iter=60, base="kn", positive=False).fit(corpus),
    }


@pytest.fixture(scope="module")
def models():
    return _models()


@pytest.mark.parametrize("name", ["kn", "arpa", "loglinear-tree", "loglinear-kn-base"])
def test_full_scores_equal_corpus_scoring(models, name):
    m = models[name]
    vocab_words = [w for w in m.vocab.words if w not in ("<s>", "</s>", "<unk>")]
    for s in TRAIN + _sentences(vocab_words, seed=3):
        if not s.split():
            continue
        c = Corpus.from_strings([s], vocab=m.vocab)
        fs = list(m.full_scores(s))
        assert len(fs) == len(s.split()) + 1
        assert all(1 <= n <= m.order for _, n, _ in fs)
        seen = c.target_mask()[c.offsets[0] + 1:]
        # the same probabilities (ARPA models: up to float32 rounding, KenLM adds the
        # back-off weights one by one, SRILM sums them first); OOVs: KenLM scores them
        assert [x[2] for x in fs] == list(c.tokens[1:] == 2)
        rtol = 1e-12 if isinstance(m, LogLinearLM) else 1e-6
        np.testing.assert_allclose(np.array([x[0] for x in fs])[seen], m.log10_probs(c)[seen], rtol=rtol, atol=0)
        total = m.score(s)
        assert total == pytest.approx(sum(x[0] for x in fs), rel=1e-6)
        assert m.perplexity(s) == pytest.approx(10.0 ** (-total / (len(s.split()) + 1)), rel=1e-12)
        # the same through states, one word at a time
        st = State()
        m.BeginSentenceWrite(st)
        for (lp, n, oov), w in zip(fs, s.split() + ["</s>"]):
            out = State()
            assert tuple(m.BaseFullScore(st, w, out)) == (lp, n, oov)
            st = out


@pytest.mark.parametrize("name", ["kn", "loglinear-tree", "loglinear-kn-base"])
def test_minimal_states_predict_like_the_whole_history(models, name):
    """A state is the history shortened to what can still matter: every next word gets
    the same probability from it as from the whole history."""
    m = models[name]
    words = [w for w in m.vocab.words if w != "<unk>"]
    rng = random.Random(5)
    for _ in range(80):
        hist = [rng.choice(words[2:]) for _ in range(rng.randrange(0, 5))]
        s = State()
        m.BeginSentenceWrite(s)
        for w in hist:
            o = State()
            m.BaseScore(s, w, o)
            s = o
        assert len(m._context_of(s.words)) <= m.order - 1  # a log-linear model's state: a tree position
        full = tuple(m.vocab.id(w) for w in ["<s>"] + hist)
        for w in words[1:]:
            o = State()
            lp = m.BaseScore(s, w, o)
            assert lp == pytest.approx(m.kenlm_step(full, m.vocab.id(w))[0], rel=1e-12, abs=1e-12)


def test_kneser_ney_estimator_and_its_arpa_model_agree(models):
    kn, arpa = models["kn"], models["arpa"]
    for s in TRAIN + ODD:
        assert list(kn.full_scores(s)) == list(arpa.full_scores(s))
        assert kn.score(s, bos=False) == arpa.score(s, bos=False)


def test_oov_and_vocabulary(models):
    for m in models.values():
        assert "cat" in m and b"cat" in m
        assert "zebra" not in m and "<unk>" not in m
        assert "</s>" in m
        with pytest.raises(TypeError):
            3 in m  # noqa: B015
        fs = list(m.full_scores("zebra cat"))
        assert fs[0][2] is True and fs[1][2] is False and fs[2][2] is False
    # a closed vocabulary has no p(<unk>): KenLM's substitute, and no context after it
    ll = models["loglinear-tree"]
    assert not ll.vocab.has_unk
    assert list(ll.full_scores("zebra", bos=False))[0] == (UNKNOWN_MISSING_LOG10, 1, True)
    s, o = State(), State()
    ll.BeginSentenceWrite(s)
    r = ll.BaseFullScore(s, "zebra", o)
    assert r.ngram_length == 1 and r.oov and r.log_prob < UNKNOWN_MISSING_LOG10 + 1
    assert ll._context_of(o.words) == (UNK_ID,)  # as KenLM: its substitute <unk> stays in the state
    ll.NullContextWrite(s)
    assert ll.BaseFullScore(s, "zebra", o) == FullScoreReturn(UNKNOWN_MISSING_LOG10, 1, True)


def test_states_are_values(models):
    m = models["kn"]
    a, b = State(), State()
    m.BeginSentenceWrite(a)
    m.BeginSentenceWrite(b)
    assert a == b and hash(a) == hash(b) and not a < b
    c = copy.copy(a)
    m.NullContextWrite(a)
    assert c == b and a != b and a < b
    assert m.BaseScore(b, "the", b) == m.BaseScore(c, "the", State())  # out_state may be in_state


def test_perplexity_scores_a_sentence_and_files_go_through_named_methods(models, tmp_path):
    m = models["loglinear-tree"]
    p = tmp_path / "t.txt"
    p.write_text("\n".join(TRAIN) + "\n")
    with pytest.raises(TypeError, match="corpus_perplexity"):
        m.perplexity(TRAIN)
    assert m.corpus_perplexity(str(p)) == pytest.approx(m.corpus_perplexity(TRAIN), rel=1e-12)
    rep = m.score_file(p)
    assert rep.ppl == pytest.approx(m.corpus_perplexity(TRAIN), rel=1e-12) and rep.sentences == len(TRAIN)
    from suffixlm.evaluate import score

    for name in ("kn", "arpa"):
        km = models[name]
        assert km.score_file(p).ppl == score(km, Corpus.from_strings(TRAIN, vocab=km.vocab)).ppl
        assert km.corpus_perplexity(TRAIN) == km.score_file(p).ppl


def test_model_loader_reads_arpa_and_model_files(models, tmp_path):
    kn = models["kn"]
    a = tmp_path / "m.arpa"
    kn.write_arpa(a)
    assert isinstance(suffixlm.Model(a), BackoffLM)
    assert suffixlm.Model(str(a)).score("the cat sat") == pytest.approx(kn.score("the cat sat"), abs=1e-5)
    ll = models["loglinear-tree"]
    p = tmp_path / "m.lm"
    ll.save(p)
    assert suffixlm.Model(p).score("the cat sat") == ll.score("the cat sat")


@pytest.mark.parametrize("name", ["kn", "arpa", "loglinear-tree", "loglinear-kn-base"])
def test_batches_are_score_of_each_sentence(models, name):
    """``score_batch`` and ``score_ids`` on every kind of model (the KN estimator through
    the generic ``kenlm_step`` loop of ``KenLMInterface``, the others in compiled code)
    give ``score`` of each sentence."""
    m = models[name]
    vocab_words = [w for w in m.vocab.words if w not in ("<s>", "</s>", "<unk>")]
    sentences = TRAIN + _sentences(vocab_words, seed=5) + ["", "zebra the", "the <unk> cat"]
    for bos, eos in itertools.product((True, False), repeat=2):
        want = np.array([m.score(s, bos=bos, eos=eos) for s in sentences])
        np.testing.assert_allclose(m.score_batch(sentences, bos=bos, eos=eos), want, rtol=1e-12, atol=0)
        ids, offsets = [], [0]
        for s in sentences:
            ids += [m.vocab.id(w) for w in s.split()] + ([m.vocab.id("</s>")] if eos else [])
            offsets.append(len(ids))
        np.testing.assert_allclose(m.score_ids(ids, offsets, bos=bos), want, rtol=1e-12, atol=0)
    with pytest.raises(ValueError, match="offsets"):
        m.score_ids([3, 4], [0, 1])
