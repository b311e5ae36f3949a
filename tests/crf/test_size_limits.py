"""CRF extremes (issue 24, item 2): many labels, huge feature counts, memory.

* 10,000 labels with unigram patterns only train and label in little memory: without
  bigram patterns no kernel makes a row of L*L (before: the forward-backward work arrays
  were maxT * L*L per thread, 4 GB for 5 tokens, and the parallel gradient ended in
  "SystemError: CPUDispatcher(...) returned a result with an exception set");
* the feature count and the memory of training are estimated during the observation
  pass and refused over a limit before any weight vector is made (``max_features``,
  ``--max-features``; by default half of the memory this process may use);
* an allocation that fails names its step and size.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time

import numpy as np
import pytest
from click.testing import CliRunner

from crf import CRF
from crf import inference as I
from crf.budget import FeatureBudget, TooManyFeatures
from crf.features import FeatureSpace
from crf.patterns import parse_patterns
from crf.train import _sequence_kernels as SQ
from suffixlm.cli import main

from .crf_testutil import random_corpus

GiB = 1 << 30


def _limited(nbytes):
    def set_limit():
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (nbytes, nbytes))
    return set_limit


def _suffixlm(*args, limit=None, timeout=300):
    """``suffixlm ARGS`` in a fresh process (under an address-space limit)."""
    code = "import sys; from suffixlm.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, preexec_fn=None if limit is None else _limited(limit),
                          env={**os.environ, "NUMBA_NUM_THREADS": "2"})


def _many_labels(path, n_labels=10_000, n_words=500, T=5):
    with open(path, "w", encoding="utf-8") as fh:
        for k in range(n_labels):
            fh.write(f"w{(k * 7919) % n_words} L{k}\n")
            if k % T == T - 1:
                fh.write("\n")
    return path


@pytest.mark.parametrize("algorithm", ["owlqn", "sgd-l1", "perceptron"])
def test_ten_thousand_labels_with_unigram_patterns_train_and_label_in_little_memory(tmp_path, algorithm):
    data = _many_labels(tmp_path / "train.txt")
    pat = tmp_path / "u.pat"
    pat.write_text("U00:%x[0,0]\n", encoding="utf-8")
    model = tmp_path / "m.crf"
    r = _suffixlm("crf", "train", "-q", "-a", algorithm, "-p", pat, "--maxiter", 2, data, model, limit=4 * GiB)
    assert r.returncode == 0, r.stderr
    assert "Error" not in r.stderr and "SystemError" not in r.stderr
    for extra in ([], ["--nbest", "2"], ["--post"]):
        r = _suffixlm("crf", "label", "-m", model, *extra, data, limit=4 * GiB)
        assert r.returncode == 0, r.stderr
        assert len([ln for ln in r.stdout.splitlines() if ln.strip()]) >= 10_000


def _zero_transitions(theta_u, space_u, space_b):
    """space_b's weights equal to space_u's on the unigram blocks, 0 on the bigram block."""
    theta = np.zeros(space_b.n_params)
    for o, s in enumerate(space_u.observations):
        ob = space_b.obs_index[s]
        a, b = space_u.unigram_offset[o], space_b.unigram_offset[ob]
        theta[b: b + space_u.n_labels] = theta_u[a: a + space_u.n_labels]
    return theta


def test_kernels_without_bigram_patterns_equal_a_zero_transition_block():
    """The O(L) paths without bigram patterns give what the L*L paths give with a bigram
    block of zero weights (transitions exp(0) = 1): loss, gradient, marginals, Viterbi,
    n-best, forced decoding, the per-sequence solvers' loss and gradient."""
    rng = np.random.default_rng(3)
    X, y = random_corpus(rng, 12, 6, 4)
    uni = parse_patterns("u:a=%x[0,0]\nu:b=%x[-1,0]/%x[0,1]\n")
    su, du = FeatureSpace.build(uni, X, y)
    sb, db = FeatureSpace.build(parse_patterns("u:a=%x[0,0]\nu:b=%x[-1,0]/%x[0,1]\nB\n"), X, y)
    assert du.bigram_base.shape[1] == 0 and db.bigram_base.shape[1] == 1
    theta_u = rng.normal(size=su.n_params)
    theta_b = _zero_transitions(theta_u, su, sb)
    ub = slice(0, sb.bigram_start)
    for recursion in ("dense", "sparse"):
        lu, gu = I.Objective(su, du, recursion=recursion).value_and_gradient(theta_u.copy())
        lb, gb = I.Objective(sb, db, recursion="dense").value_and_gradient(theta_b.copy())
        assert lu == pytest.approx(lb, rel=1e-12)
        np.testing.assert_allclose(_zero_transitions(gu, su, sb)[ub], gb[ub], rtol=1e-10, atol=1e-12)
        mu, zu = I.forward_backward_marginals(theta_u, su, du, recursion)
        mb, zb = I.forward_backward_marginals(theta_b, sb, db, "dense")
        np.testing.assert_allclose(mu, mb, rtol=1e-10, atol=1e-14)
        np.testing.assert_allclose(zu, zb, rtol=1e-12)
    pu, scu = I.viterbi(theta_u, su, du)
    pb, scb = I.viterbi(theta_b, sb, db)
    np.testing.assert_array_equal(pu, pb)
    np.testing.assert_array_equal(scu, scb)
    forced = np.full(du.n_tokens, -1, dtype=np.int64)
    forced[::3] = 1
    np.testing.assert_array_equal(I.viterbi(theta_u, su, du, forced)[0], I.viterbi(theta_b, sb, db, forced)[0])
    nu, nsu = I.nbest(theta_u, su, du, 3)
    nb, nsb = I.nbest(theta_b, sb, db, 3)
    np.testing.assert_array_equal(nsu, nsb)
    np.testing.assert_array_equal(nu[np.isfinite(nsu).repeat(np.diff(du.seq_offsets), axis=0)],
                                  nb[np.isfinite(nsb).repeat(np.diff(db.seq_offsets), axis=0)])
    L = su.n_labels
    lu = SQ.total_loss(theta_u, du.seq_offsets, du.unigram_base, du.unigram_value, du.unigram_states, du.bigram_base,
                       du.labels, L)
    lb = SQ.total_loss(theta_b, db.seq_offsets, db.unigram_base, db.unigram_value, db.unigram_states, db.bigram_base,
                       db.labels, L)
    assert lu == pytest.approx(lb, rel=1e-12)
    wsu = SQ.workspace(du.max_length, L, 0)
    wsb = SQ.workspace(db.max_length, L, 1)
    assert wsu.psi.shape[1] == 1 and wsb.psi.shape[1] == L * L
    gu, gb = np.zeros(su.n_params), np.zeros(sb.n_params)
    for i in range(du.n_sequences):
        s, e = du.seq_offsets[i], du.seq_offsets[i + 1]
        SQ.forward_backward(theta_u, du.unigram_base, du.unigram_value, du.unigram_states, du.bigram_base, s, e, L, wsu)
        SQ.add_gradient(du.unigram_base, du.unigram_value, du.unigram_states, du.bigram_base, du.labels, s, e, L, wsu,
                        np.empty(1), gu)
        SQ.forward_backward(theta_b, db.unigram_base, db.unigram_value, db.unigram_states, db.bigram_base, s, e, L, wsb)
        SQ.add_gradient(db.unigram_base, db.unigram_value, db.unigram_states, db.bigram_base, db.labels, s, e, L, wsb,
                        np.empty(L * L), gb)
    np.testing.assert_allclose(_zero_transitions(gu, su, sb)[ub], gb[ub], rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("algorithm", ["owlqn", "lbfgs", "sgd-l1", "bcd", "sag", "perceptron", "fista"])
def test_every_algorithm_trains_without_bigram_patterns(algorithm):
    rng = np.random.default_rng(5)
    X, y = random_corpus(rng, 20, 6, 5)
    rho1 = 0.0 if algorithm in ("lbfgs", "sag", "perceptron") else None
    crf = CRF(patterns=["u:a=%x[0,0]", "u:b=%x[0,1]"], algorithm=algorithm, rho1=rho1, max_iter=3).fit(X, y)
    assert crf.space_.n_bigram_obs == 0
    assert len(crf.predict(X)) == len(X)
    assert len(crf.predict_nbest(X[:3], 2)) == 3


# ---------------------------------------------------------------------- the size check
def _big_patterns(n=3000, seed=1):
    rng = np.random.default_rng(seed)
    return [f"U{i}:" + "/".join(f"%x[{int(rng.integers(-4, 5))},{int(rng.integers(0, 2))}]" for _ in range(3))
            for i in range(n)]


def _chunk_data():
    from crf.data import read_sequences, split_labels

    root = os.path.join(os.path.dirname(__file__), "..", "..", "corpora", "tiny_chunk.train.txt")
    return split_labels(read_sequences(root))


def test_max_features_refuses_a_huge_pattern_file_during_the_observation_pass():
    """3,000 patterns of three columns each ask for ~17M features on 5,000 tokens: refused
    as soon as the count passes max_features, with the estimate, long before the pass
    (some 20 s) would end and before any weight vector."""
    X, y = _chunk_data()
    t0 = time.perf_counter()
    with pytest.raises(TooManyFeatures) as e:
        CRF(patterns=_big_patterns(), max_features=1_000_000).fit(X, y)
    assert time.perf_counter() - t0 < 10
    msg = str(e.value)
    assert "\n" not in msg
    assert re.search(r"at least [\d,]+ features \([\d,]+ unigram observations x \d+ labels, from the first "
                     r"[\d,]+ of 3,000 patterns\): training needs about [\d.]+ [KMG]iB", msg), msg
    assert "more than max_features = 1,000,000 (--max-features)" in msg


def test_default_limit_is_half_the_memory_and_counts_label_pair_work_arrays(monkeypatch):
    import crf.budget as B

    monkeypatch.setattr(B, "memory_limit", lambda: (200 << 20, "a test's 200 MiB"))
    X, y = _chunk_data()
    with pytest.raises(TooManyFeatures, match=r"more than the limit of 100 MiB \(half of a test's 200 MiB, "):
        CRF(patterns=_big_patterns(400)).fit(X, y)
    # 2,000 labels and a bigram pattern: the L*L work arrays alone are refused, at once
    X = [[[f"w{i % 50}"] for i in range(k, k + 5)] for k in range(0, 2000, 5)]
    y = [[f"L{i}" for i in range(k, k + 5)] for k in range(0, 2000, 5)]
    t0 = time.perf_counter()
    with pytest.raises(TooManyFeatures, match=r"2,000\^2 label pairs a token, sequences of up to 5 tokens"):
        CRF(patterns=["U:%x[0,0]", "B"]).fit(X, y)
    assert time.perf_counter() - t0 < 5
    # a limit given as a feature count replaces the memory estimate
    monkeypatch.setattr(B, "memory_limit", lambda: (2 << 20, "a test's 2 MiB"))
    with pytest.raises(TooManyFeatures, match=r"the patterns give at least 10,000 features \(50 unigram observations x 200 "):
        CRF(patterns=["U:%x[0,0]"], max_iter=1).fit(X[:40], y[:40])
    crf = CRF(patterns=["U:%x[0,0]"], max_features=10_000, max_iter=1).fit(X[:40], y[:40])
    assert crf.n_features_ == 10_000
    with pytest.raises(TooManyFeatures, match=r"more than max_features = 9,999 "):
        CRF(patterns=["U:%x[0,0]"], max_features=9_999, max_iter=1).fit(X[:40], y[:40])


def test_budget_counts_unigram_and_bigram_features():
    b = FeatureBudget(10, 2, 1, 7, 100, "owlqn", 5, 1, max_features=1000)
    assert b.check(9, 0, 9) == 90
    assert b.check(5, 5, 10) == 550
    with pytest.raises(TooManyFeatures, match=r"1,010 features \(1 unigram observations x 10 labels \+ 10 bigram "):
        b.check(1, 10, 11)


def test_crf_train_refuses_too_many_features_in_one_line(tmp_path):
    pat = tmp_path / "big.pat"
    pat.write_text("\n".join(_big_patterns()) + "\n", encoding="utf-8")
    train = os.path.join(os.path.dirname(__file__), "..", "..", "corpora", "tiny_chunk.train.txt")
    out = tmp_path / "m.crf"
    t0 = time.perf_counter()
    r = CliRunner().invoke(main, ["crf", "train", "-q", "-p", str(pat), "--max-features", "1000000", train, str(out)])
    assert time.perf_counter() - t0 < 10
    assert r.exit_code == 1, r.output
    assert "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1 and "Error: the patterns give at least" in errors[0], r.output
    assert "--max-features" in errors[0]
    assert not out.exists()
    r = CliRunner().invoke(main, ["crf", "train", "-p", str(pat), "--max-features", "0", train, str(out)])
    assert r.exit_code == 2 and "--max-features" in r.output


def test_out_of_memory_names_the_step_and_the_size(tmp_path):
    """With the size check lifted (--max-features) under a 3.5 GiB address space, the
    200M weights of 10,000 labels x 20,000 words cannot be held: one line naming the
    step and the size (before: numpy's message, or a SystemError from a parallel loop)."""
    data = tmp_path / "wide.txt"
    with open(data, "w", encoding="utf-8") as fh:
        for k in range(20_000):
            fh.write(f"w{k} L{k % 10_000}\n" + ("\n" if k % 5 == 4 else ""))
    pat = tmp_path / "u.pat"
    pat.write_text("U00:%x[0,0]\n", encoding="utf-8")
    r = _suffixlm("crf", "train", "-q", "-p", pat, "--max-features", 10**9, data, tmp_path / "m.crf",
                  limit=int(3.5 * GiB))
    assert r.returncode == 1, r.stderr
    assert "Traceback" not in r.stderr
    assert re.search(r"^Error: out of memory \([^()]+: cannot allocate [\d.]+ [KMG]iB \([\d, x]+ \w+\)\)$",
                     r.stderr.strip(), re.M), r.stderr
    # without --max-features the estimate refuses it first, in one line
    r = _suffixlm("crf", "train", "-q", "-p", pat, data, tmp_path / "m.crf", limit=int(3.5 * GiB))
    assert r.returncode == 1 and "Error: the patterns give at least 200,000,000 features" in r.stderr, r.stderr
    assert "ulimit -v" in r.stderr


def test_fit_accepts_any_iterable_of_sequences():
    rng = np.random.default_rng(0)
    X, y = random_corpus(rng, 10, 5, 3)
    a = CRF(patterns=["u:a=%x[0,0]", "B"], max_iter=5).fit(X, y)
    b = CRF(patterns=["u:a=%x[0,0]", "B"], max_iter=5).fit((s for s in X), iter(y), map(list, X[:3]),
                                                            (t for t in y[:3]))
    np.testing.assert_array_equal(a.theta_, b.theta_)
    assert b.predict(s for s in X) == a.predict(X)
    g = CRF(patterns=["u:a=%x[0,0]", "u:b=%x[-1,0]/%x[0,0]"], max_iter=3).grow((s for s in X), (t for t in y))
    assert g.n_features_ > 0
    with pytest.raises(TypeError, match="X must be a list \\(or another iterable\\) of sequences, not a str"):
        CRF(patterns=["u:a=%x[0,0]"]).fit("abc", y)
    with pytest.raises(TypeError, match="not a int"):
        CRF(patterns=["u:a=%x[0,0]"]).fit(X, 3)
