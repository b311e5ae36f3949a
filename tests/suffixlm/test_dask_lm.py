"""The log-linear LM built from counted (context, target) events: ``SuffixTree.from_events``,
``suffixlm.events``, on a Dask cluster ``suffixlm.distributed.lm_events`` (``LogLinearLM.fit(path, client=)``,
``suffixlm train --workers``). The reference is always the single-process model on the text."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from click.testing import CliRunner
from suffixlm.corpora import sample_path

from suffixlm.cli import main
from suffixlm.corpus import Corpus, load_training_corpus
from suffixlm.events import context_events
from suffixlm.model import LogLinearLM
from suffixlm.suffixtree import SuffixTree

from ..dask_util import kill_once_plugin

TINY = str(sample_path("tiny_lm.train.txt"))
TINY_TEST = str(sample_path("tiny_lm.test.txt"))
# many sentence starts and ends: one-word sentences, repeats, a sentence longer than the order
BOUNDARY = ["a", "b", "a", "a b", "b a", "a a", "c", "a b c a b c a b", "b", "b b b b b b", "c a", "a"] * 3
# the tiny corpus is too small for modified-KN discounts at some orders: the fallback warns
pytestmark = pytest.mark.filterwarnings("ignore::suffixlm.backoff.kn.DiscountWarning")

EDGE_LABELS = ("tokens", "offsets", "context_position")


def assert_same_tree(a: SuffixTree, b: SuffixTree):
    """Every array equal but the edge labels, which point into the text (a) and the events
    (b); the labels spell the same context at every node."""
    for k in SuffixTree.FIELDS:
        if k not in EDGE_LABELS:
            np.testing.assert_array_equal(getattr(a, k), getattr(b, k), err_msg=k)
    for j in range(a.n_nodes):
        assert a.context(j) == b.context(j), j


@pytest.fixture(scope="module")
def boundary_file(tmp_path_factory):
    p = tmp_path_factory.mktemp("boundary") / "boundary.txt"
    p.write_text("\n".join(BOUNDARY) + "\n\n")  # a blank line, skipped
    return str(p)


# ---------------------------------------------------------------- without a cluster

@pytest.mark.parametrize("order", [1, 2, 3, 4, 7])
@pytest.mark.parametrize("collapse", [True, False])
def test_tree_from_events_equals_tree_of_text(boundary_file, order, collapse):
    for path in (TINY, boundary_file):
        corpus = load_training_corpus(path, unk=True)
        ev = context_events(corpus, order)
        assert ev.n_tokens == corpus.n_tokens and ev.n_sentences == corpus.n_sentences
        a = SuffixTree.build(corpus, order - 1, collapse=collapse)
        b = SuffixTree.from_events(ev.tokens, ev.offsets, ev.counts, order - 1, collapse=collapse)
        assert_same_tree(a, b)
        # any order of the events gives the same (canonical) tree
        perm = np.random.default_rng(order).permutation(ev.n_events)
        lens = np.diff(ev.offsets)[perm]
        toks = np.concatenate([ev.tokens[ev.offsets[k]:ev.offsets[k + 1]] for k in perm])
        c = SuffixTree.from_events(toks, np.concatenate([[0], np.cumsum(lens)]), ev.counts[perm], order - 1,
                                   collapse=collapse)
        for k in SuffixTree.FIELDS + ("event_counts",):
            np.testing.assert_array_equal(getattr(b, k), getattr(c, k), err_msg=k)
        # the events of each context node, weighted, are its successor counts
        leaves = np.diff(b.child_offsets) == 0
        assert b.event_counts.sum() == corpus.n_tokens - corpus.n_sentences
        assert np.array_equal(np.bincount(b.position_node, weights=b.event_counts, minlength=b.n_nodes)[leaves],
                              b.count[leaves])


@pytest.mark.parametrize("bad, field", [
    (lambda t, o, c: (t, o, np.where(np.arange(len(c)) == 0, 0, c)), "event_counts"),
    (lambda t, o, c: (np.where(np.arange(len(t)) == o[1] - 1, 0, t), o, c), "predicts <s>"),
    (lambda t, o, c: (np.where(np.arange(len(t)) == o[1] - 2, 1, t), o, c), "holds </s>"),
    (lambda t, o, c: (t, np.concatenate([o[:-1], [o[-1] - 1]]), c), "offsets"),
    (lambda t, o, c: (np.concatenate([t, t[o[0]:o[1]]]), np.concatenate([o, [o[-1] + o[1]]]),
                      np.concatenate([c, [1]])), "same"),
])
def test_bad_events_are_refused(bad, field):
    ev = context_events(Corpus.from_strings(BOUNDARY), 3)
    t, o, c = bad(ev.tokens.copy(), ev.offsets.copy(), ev.counts.copy())
    with pytest.raises(ValueError, match=field):
        SuffixTree.from_events(t, o, c, 2)


def test_short_context_must_reach_sentence_start():
    ev = context_events(Corpus.from_strings(BOUNDARY), 3)
    k = int(np.flatnonzero(np.diff(ev.offsets) == 2)[0])  # a one-word context: <s>
    t = ev.tokens.copy()
    t[ev.offsets[k]] = t[ev.offsets[k] + 1]
    with pytest.raises(ValueError, match="does not reach <s>"):
        SuffixTree.from_events(t, ev.offsets, ev.counts, 2)


FITS = {
    "default": dict(order=4),
    "trie": dict(order=3, penalty="l2-tree"),
    "kn-signed": dict(order=3, base="kn", positive=False),
    "kn-positive": dict(order=3, base="kn"),
    "loo-discount": dict(order=3, loo=0.5, discount=1.0),
    "weighted-l1": dict(order=2, penalty="l1", alpha=0.5),
}


@pytest.mark.parametrize("name", list(FITS))
def test_fit_on_events_equals_fit_on_text(boundary_file, tmp_path, name):
    """Same tree, weights to 1e-9 (bit for bit here), scores, KenLM API, ARPA export and a
    model file that loads back to the same scores."""
    kw = FITS[name]
    for path in (TINY, boundary_file):
        corpus = load_training_corpus(path, unk=True)
        ev = context_events(corpus, kw["order"], keep_ngram_counts=kw.get("base") == "kn")
        a = LogLinearLM(max_iter=40, **kw).fit(corpus)
        b = LogLinearLM(max_iter=40, **kw).fit(ev)
        assert_same_tree(a.tree_, b.tree_)
        np.testing.assert_allclose(b.weights_, a.weights_, rtol=0, atol=1e-9)
        assert b.lam_ == a.lam_ and b.n_iter_ == a.n_iter_
        test = Corpus.from_text(TINY_TEST, corpus.vocab)
        np.testing.assert_allclose(b.log10_probs(test), a.log10_probs(test), rtol=0, atol=1e-9)
        for s in ("a b c", "the of x zz", BOUNDARY[7]):
            assert abs(a.score(s) - b.score(s)) < 1e-9
            assert [x[1] for x in a.full_scores(s)] == [x[1] for x in b.full_scores(s)]
        a.write_arpa(tmp_path / "a.arpa")
        b.write_arpa(tmp_path / "b.arpa")
        assert (tmp_path / "a.arpa").read_bytes() == (tmp_path / "b.arpa").read_bytes()
        b.save(tmp_path / "b.lm")
        back = LogLinearLM.load(tmp_path / "b.lm")
        assert back.tree_.event_counts is not None
        np.testing.assert_array_equal(back.log10_probs(test), b.log10_probs(test))


@pytest.mark.parametrize("kw", [dict(order=4), dict(order=3, penalty="l2-tree"), dict(order=3, loo=0.5)])
@pytest.mark.parametrize("vocab", ["open", "closed"])
def test_statistics_of_events_equal_those_of_positions(boundary_file, tmp_path, kw, vocab):
    """The objective's whole-text statistics from counted events (one count per distinct
    event, added up the param chain) equal value for value those summed position by
    position; with a closed vocabulary the OOV targets are dropped from both."""
    for path in (TINY, boundary_file):
        if vocab == "closed":
            v = tmp_path / "v.txt"
            v.write_text("\n".join(load_training_corpus(path).vocab.words[3:-1]) + "\n")
            corpus = load_training_corpus(path, vocab_path=v, unk=False)
            assert corpus.n_oov > 0
        else:
            corpus = load_training_corpus(path, unk=True)
        a = LogLinearLM(**kw)._problem(corpus)
        b = LogLinearLM(**kw)._problem(context_events(corpus, kw["order"]))
        assert (len(a.end_node) < corpus.n_tokens - corpus.n_sentences) == (vocab == "closed")
        assert a.n_samples == b.n_samples == len(a.end_node) and a.n_events == b.n_events
        np.testing.assert_array_equal(b.n_end_all, a.n_end_all)
        np.testing.assert_array_equal(b.emp_all, a.emp_all)
        assert b.n_end_all.sum() == a.n_samples + (a.n_events - a.n_samples if kw.get("loo") else 0) > 0


def test_sage_is_refused_on_events():
    ev = context_events(Corpus.from_strings(BOUNDARY), 3)
    with pytest.raises(ValueError, match="solver='fista'"):
        LogLinearLM(order=3, solver="sage").fit(ev)
    with pytest.raises(ValueError, match="order 3"):
        LogLinearLM(order=4).fit(ev)
    with pytest.raises(ValueError, match="keep_ngram_counts"):
        LogLinearLM(order=3, base="kn").fit(ev)


@pytest.mark.slow
def test_path_of_lambdas_on_events(tmp_path):
    """--lam auto's path (warm starts, select_lam) on events: the same choice and weights."""
    from suffixlm.model_selection import select_lam

    corpus = load_training_corpus(TINY, unk=True)
    valid = Corpus.from_text(TINY_TEST, corpus.vocab)
    out = []
    for data in (corpus, context_events(corpus, 3, keep_ngram_counts=True)):
        lm = LogLinearLM(order=3, base="kn", positive=False, warm_start=True, max_iter=30)

        def fit(x, lm=lm, data=data):
            lm.lam = x
            return lm.fit(data)

        out.append(select_lam(fit, data, valid))
    (a, ra), (b, rb) = out
    assert [r["lam"] for r in ra] == [r["lam"] for r in rb]
    np.testing.assert_allclose([r["valid_ppl"] for r in ra], [r["valid_ppl"] for r in rb], rtol=1e-12)
    np.testing.assert_allclose(b.weights_, a.weights_, rtol=0, atol=1e-9)


# ---------------------------------------------------------------- on a 2-worker cluster

@pytest.fixture(scope="module")
def client():
    pytest.importorskip("distributed")
    from suffixlm.distributed import client_from_options

    with client_from_options(workers=2) as c:
        yield c


def test_counts_equal_single_process(client, boundary_file, tmp_path):
    from suffixlm.distributed.lm_events import count_text_events

    vocab = tmp_path / "v.txt"
    vocab.write_text("\n".join(load_training_corpus(TINY).vocab.words[3:20]) + "\n")
    cases = [(TINY, 1, {}), (TINY, 3, {"min_count": 2}), (TINY, 4, {"vocab_path": vocab}),
             (TINY, 2, {"vocab_path": vocab, "unk": True}), (boundary_file, 5, {"unk": True})]
    for path, order, kw in cases:
        ref = context_events(load_training_corpus(path, **kw), order, keep_ngram_counts=True)
        got = count_text_events(client, path, order, keep_ngram_counts=True, n_shards=5, n_partitions=3, **kw)
        assert got.vocab == ref.vocab
        for k in ("tokens", "offsets", "counts"):
            np.testing.assert_array_equal(getattr(got, k), getattr(ref, k), err_msg=f"{path} {order} {kw} {k}")
        assert (got.n_sentences, got.n_words, got.n_oov) == (ref.n_sentences, ref.n_words, ref.n_oov)
        for n in range(order):
            np.testing.assert_array_equal(got.ngram_counts.count[n], ref.ngram_counts.count[n])


@pytest.mark.parametrize("name", ["default", "trie", "kn-signed"])
def test_fit_with_client_equals_single_process(client, boundary_file, name):
    kw = FITS[name]
    for path in (TINY, boundary_file):
        a = LogLinearLM(max_iter=40, **kw).fit(path)
        b = LogLinearLM(max_iter=40, **kw).fit(path, client=client)
        assert_same_tree(a.tree_, b.tree_)
        np.testing.assert_allclose(b.weights_, a.weights_, rtol=0, atol=1e-9)
        test = Corpus.from_text(TINY_TEST, a.vocab_)
        np.testing.assert_allclose(b.log10_probs(test), a.log10_probs(test), rtol=0, atol=1e-9)
    with pytest.raises(TypeError, match="path"):
        LogLinearLM(order=3).fit(BOUNDARY, client=client)


def test_vocabulary_file_closed_vocabulary(client, tmp_path):
    """A vocabulary file and no <unk>: OOV training targets are counted in the tree but not
    predicted, as in one process."""
    from suffixlm.distributed.lm_events import count_text_events

    vocab = tmp_path / "v.txt"
    vocab.write_text("\n".join(load_training_corpus(TINY).vocab.words[3:25]) + "\n")
    corpus = load_training_corpus(TINY, vocab_path=vocab, unk=False)
    assert corpus.n_oov > 0 and not corpus.vocab.has_unk
    a = LogLinearLM(order=3, max_iter=40).fit(corpus)
    b = LogLinearLM(order=3, max_iter=40).fit(count_text_events(client, TINY, 3, vocab_path=vocab, unk=False))
    assert_same_tree(a.tree_, b.tree_)
    np.testing.assert_allclose(b.weights_, a.weights_, rtol=0, atol=1e-9)
    assert a.lam_ == b.lam_


def test_worker_killed_mid_job(killable_client, boundary_file, tmp_path):
    """A worker dies as it starts counting a shard: Dask reruns its tasks and the model is
    the single-process one."""
    marker = tmp_path / "killed"
    client = killable_client
    ref = LogLinearLM(order=4, max_iter=40).fit(TINY)
    client.register_plugin(kill_once_plugin(marker, "lm-count-"))
    try:
        from suffixlm.distributed.lm_events import count_text_events

        ev = count_text_events(client, TINY, 4, n_shards=6)
    finally:
        client.unregister_worker_plugin("kill-once")
    assert marker.exists()  # a worker did die mid-job
    got = LogLinearLM(order=4, max_iter=40).fit(ev)
    assert_same_tree(ref.tree_, got.tree_)
    np.testing.assert_array_equal(got.weights_, ref.weights_)


# ---------------------------------------------------------------- command line

@pytest.mark.parametrize("args", [
    ["--order", "3"],
    pytest.param(["--order", "3", "--lam", "auto", "--valid", TINY_TEST], marks=pytest.mark.slow),
    pytest.param(["--order", "3", "--penalty", "l2-tree", "--min-count", "2", "--no-unk"], marks=pytest.mark.slow)])
def test_cli_workers_same_model(tmp_path, args):
    pytest.importorskip("distributed")
    r = CliRunner()
    a, b = tmp_path / "a.lm", tmp_path / "b.lm"
    res = r.invoke(main, ["train", TINY, "-o", str(a), "--quiet", "--epochs", "40", *args])
    assert res.exit_code == 0, res.output
    res = r.invoke(main, ["train", TINY, "-o", str(b), "--quiet", "--epochs", "40", "--workers", "2",
                          "--memory-limit", "1GB", *args])
    assert res.exit_code == 0, res.output
    ma, mb = LogLinearLM.load(a), LogLinearLM.load(b)
    assert mb.tree_.event_counts is not None and ma.tree_.event_counts is None
    np.testing.assert_allclose(mb.weights_, ma.weights_, rtol=0, atol=1e-9)
    assert ma.lam_ == mb.lam_
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert ma.corpus_perplexity(TINY_TEST) == pytest.approx(mb.corpus_perplexity(TINY_TEST), rel=1e-12)


def test_cli_sage_with_workers_is_one_line(tmp_path):
    res = CliRunner().invoke(main, ["train", TINY, "-o", str(tmp_path / "m.lm"), "--solver", "sage",
                                    "--workers", "2"])
    assert res.exit_code != 0 and "use --solver fista" in res.output and "Traceback" not in res.output


@pytest.mark.parametrize("train, message", [("-", "not - (standard input)"), ("/nonexistent/t.txt", "t.txt")])
def test_cli_workers_unreadable_text_is_one_line(tmp_path, train, message):
    pytest.importorskip("distributed")
    res = CliRunner().invoke(main, ["train", train, "-o", str(tmp_path / "m.lm"), "--workers", "1", "--quiet"])
    assert res.exit_code == 1 and message in res.output and "Traceback" not in res.output, res.output
    assert len(res.output.strip().splitlines()) == 1


def test_checkpoint_of_a_fit_on_events_resumes_to_the_uninterrupted_fit(tmp_path, monkeypatch):
    """A fit on counted events stopped mid-way resumes from its checkpoint (the events are its
    identity) to the uninterrupted weights; other events are refused."""
    from suffixlm.checkpoint import Checkpoint, CheckpointError, Interrupted

    from ..test_checkpoint import _stop_at

    ev = context_events(load_training_corpus(TINY), 3)
    kw = dict(order=3, max_iter=15, tol=0.0)
    ref = LogLinearLM(**kw).fit(ev)
    path = tmp_path / "ck.npz"
    with monkeypatch.context() as mp:
        _stop_at(mp, 7)
        with pytest.raises(Interrupted, match="iteration 7 written"):
            LogLinearLM(**kw).fit(ev, checkpoint=Checkpoint(path, every=1000))
    with pytest.raises(CheckpointError):
        other = context_events(Corpus.from_strings(BOUNDARY), 3)
        LogLinearLM(**kw).fit(other, checkpoint=Checkpoint(path, resume=True))
    lm = LogLinearLM(**kw).fit(ev, checkpoint=Checkpoint(path, resume=True))
    np.testing.assert_array_equal(lm.weights_, ref.weights_)
    assert lm.n_iter_ == ref.n_iter_
