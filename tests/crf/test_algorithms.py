"""Every solver through the CRF estimator and ``suffixlm crf train -a``: the estimator
gives exactly what the solver function gives, the penalties and growth options reach
the right code, and bad combinations are clean errors."""

import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from crf import CRF
from crf.features import FeatureSpace
from crf.inference import Objective
from crf.model import ALGORITHMS, ModelError
from crf.patterns import parse_patterns
from crf.train import owlqn
from crf.train.bcd import bcd
from crf.train.l2sgd import l2sgd
from crf.train.online import arow, passive_aggressive
from crf.train.perceptron import averaged_perceptron
from crf.train.proximal import feature_forest, fista, rounds_by_depth
from crf.train.sag import sag
from crf.train.sgd_l1 import sgd_l1
from suffixlm.cli import main

from .crf_testutil import random_corpus

# nested windows: w0 < w-1/w0 < w-1/w0/w+1, plus POS and transitions
PATTERNS = ["u:w0=%x[0,0]", "u:p0=%x[0,1]", "u:w-1,w0=%x[-1,0]/%x[0,0]",
            "u:w-1,w0,w+1=%x[-1,0]/%x[0,0]/%x[1,0]", "B"]


@pytest.fixture(scope="module")
def problem():
    X, y = random_corpus(np.random.default_rng(3), 25, 6, 3)
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS) + "\n"), X, y)
    return X, y, space, data


def _full_theta(crf, space):
    """The fitted (compacted) weights written back in the layout of ``space``."""
    out = np.zeros(space.n_params)
    cs, th = crf.space_, crf.theta_
    L = space.n_labels
    for o, s in enumerate(cs.observations):
        q = space.obs_index[s]
        for off, qoff, size in ((cs.unigram_offset[o], space.unigram_offset[q], L),
                                (cs.bigram_offset[o], space.bigram_offset[q], L * L)):
            if off >= 0:
                out[qoff:qoff + size] = th[off:off + size]
    return out


def reference(algorithm, space, data, rho1, rho2, iters):
    x0 = np.zeros(space.n_params)
    if algorithm in ("owlqn", "lbfgs", "fista"):
        obj = Objective(space, data, n_chunks=1)
    if algorithm == "owlqn":
        return owlqn(obj.value_and_gradient_parts, x0, rho1=rho1, rho2=rho2, max_iter=iters).x
    if algorithm == "lbfgs":  # CRFsuite's algorithm name: CRFsuite's 6 L-BFGS pairs
        return owlqn(obj.value_and_gradient_parts, x0, rho1=0.0, rho2=rho2, max_iter=iters, history=6).x
    if algorithm == "sgd-l1":
        return sgd_l1(space, data, rho1=rho1, rho2=rho2, max_iter=iters, eta0=0.1).x
    if algorithm == "bcd":
        return bcd(space, data, rho1=rho1, rho2=rho2, max_iter=iters).x
    if algorithm in ("sag", "sag-nus"):
        return sag(space, data, rho2=rho2, nus=algorithm == "sag-nus", max_iter=iters).x
    if algorithm == "pa":
        return passive_aggressive(space, data, max_iter=iters).x
    if algorithm == "arow":
        return arow(space, data, max_iter=iters).x
    if algorithm == "l2sgd":
        return l2sgd(space, data, rho2=rho2, max_iter=iters, period=iters + 1).x
    if algorithm in ("perceptron", "ap"):
        return averaged_perceptron(space, data, max_iter=iters).x
    return fista(obj.value_and_gradient, x0, feature_forest(space, data), "l1", kappa=rho1, rho2=rho2,
                 max_iter=iters).x


def check_predictions_by_enumeration(crf, X):
    """crf.predict(X) scores as high as the best of all L^T labelings of each sequence,
    scored from the fitted weights (space_.describe) and observation strings built by
    hand for PATTERNS, and is one of the labelings reaching that score."""
    space, labels = crf.space_, crf.space_.labels
    L = len(labels)
    w_uni, w_bi = {}, {}
    for obs, prev, lab, v in space.describe(crf.theta_):
        if prev is None:
            w_uni[(obs, labels.index(lab))] = v
        else:
            w_bi[(obs, labels.index(prev), labels.index(lab))] = v
    assert w_uni and w_bi  # a trained model, not an empty one
    predicted = crf.predict(X)
    assert len(predicted) == len(X)
    for seq, pred in zip(X, predicted):
        T = len(seq)

        def word(i):
            return f"_x-{-i}" if i < 0 else (f"_x+{i - T + 1}" if i >= T else seq[i][0])

        U = np.zeros((T, L))
        for t in range(T):
            for o in (f"u:w0={word(t)}", f"u:p0={seq[t][1]}", f"u:w-1,w0={word(t - 1)}/{word(t)}",
                      f"u:w-1,w0,w+1={word(t - 1)}/{word(t)}/{word(t + 1)}"):
                U[t] += [w_uni.get((o, k), 0.0) for k in range(L)]
        W = np.array([[w_bi.get(("B", a, b), 0.0) for b in range(L)] for a in range(L)])
        paths = np.array(list(itertools.product(range(L), repeat=T)))
        scores = U[np.arange(T), paths].sum(axis=1) + W[paths[:, :-1], paths[:, 1:]].sum(axis=1)
        best = scores.max()
        p = [labels.index(lab) for lab in pred]
        assert len(p) == T
        got = U[np.arange(T), p].sum() + sum(W[p[t - 1], p[t]] for t in range(1, T))
        assert got == pytest.approx(best, abs=1e-9)
        assert any((paths[k] == p).all() for k in np.flatnonzero(scores >= best - 1e-9))


@pytest.mark.parametrize("algorithm", ALGORITHMS)
def test_estimator_runs_the_solver_it_names(problem, algorithm):
    X, y, space, data = problem
    l2_only = algorithm in ("lbfgs", "sag", "sag-nus", "perceptron", "ap", "l2sgd", "pa", "arow")
    rho1 = 0.0 if l2_only else 0.3
    rho2 = 0.5
    crf = CRF(patterns=PATTERNS, algorithm=algorithm, rho1=rho1, rho2=rho2, max_iter=8, stopwin=0,
              threads=1).fit(X, y)
    ref = reference(algorithm, space, data, rho1, rho2, 8)
    np.testing.assert_allclose(_full_theta(crf, space), ref, rtol=1e-9, atol=1e-9)
    # Viterbi of the fitted model against the best labeling found by listing them all,
    # on the training sequences and on text with unseen words
    extra = [[["w0", "p1"], ["zz", "p0"], ["w2", "p1"]], [["yy", "p0"]], [["w1", "p0"], ["w1", "p1"]]]
    check_predictions_by_enumeration(crf, X + extra)
    assert len(crf.training_log_) == 8 or crf.stop_reason_ not in ("max_iter", "max_iter", "max_iter")


@pytest.mark.parametrize("penalty", ["l2-tree", "linf-tree"])
def test_tree_penalty_is_fista_on_the_feature_forest(problem, penalty):
    X, y, space, data = problem
    crf = CRF(patterns=PATTERNS, algorithm="fista", penalty=penalty, rho1=0.2, rho2=0.1, max_iter=10,
              stopwin=0, threads=1).fit(X, y)
    obj = Objective(space, data, n_chunks=1)
    ref = fista(obj.value_and_gradient, np.zeros(space.n_params), feature_forest(space, data), penalty,
                kappa=0.2, rho2=0.1, max_iter=10).x
    np.testing.assert_allclose(_full_theta(crf, space), ref, rtol=1e-9, atol=1e-9)


def test_bad_combinations_are_value_errors(problem):
    X, y, _, _ = problem
    for kw, msg in [({"algorithm": "sag", "rho1": 0.5}, "l2 penalty only"),
                    ({"algorithm": "sag", "rho2": 0.0}, "rho2 > 0"),
                    ({"algorithm": "perceptron", "rho1": 1.0}, "no penalty"),
                    ({"algorithm": "owlqn", "penalty": "l2-tree"}, "needs algorithm 'fista'"),
                    ({"algorithm": "newton"}, "algorithm must be one of"),
                    ({"penalty": "group"}, "penalty must be one of"),
                    ({"rho2": -1.0}, ">= 0")]:
        with pytest.raises(ValueError, match=msg):
            CRF(patterns=PATTERNS, **kw).fit(X, y)


def test_rounds_by_depth_follow_the_pattern_forest():
    rounds = rounds_by_depth(parse_patterns("\n".join(PATTERNS) + "\n"))
    assert [[p.text for p in r] for r in rounds] == [
        ["u:w0=%x[0,0]", "u:p0=%x[0,1]", "B"], ["u:w-1,w0=%x[-1,0]/%x[0,0]"],
        ["u:w-1,w0,w+1=%x[-1,0]/%x[0,0]/%x[1,0]"]]


def test_grow_by_depth_then_grow_a_loaded_model(problem, tmp_path):
    X, y, _, _ = problem
    crf = CRF(patterns=PATTERNS[:4] + ["B"], rho1=0.5, max_iter=30, threads=1).grow(X, y)
    log = crf.growth_log_
    assert [g.round for g in log] == [0, 1, 2]
    assert [g.n_patterns for g in log] == [3, 4, 5]
    # refinements enter only where the refined feature is active
    assert log[1].n_features <= log[1].n_candidates and log[2].n_features <= log[2].n_candidates
    path = tmp_path / "g.crf"
    crf.save(path)
    loaded = CRF.load(path)
    assert loaded.predict(X) == crf.predict(X)
    # a loaded model grows with a new pattern and keeps its own
    loaded.set_params(max_iter=5)
    loaded.grow(X, y, [["u:p-1,p0=%x[-1,1]/%x[0,1]"]])
    texts = [p.text for p in loaded.space_.patterns]
    assert "u:p-1,p0=%x[-1,1]/%x[0,1]" in texts and "u:w0=%x[0,0]" in texts
    assert CRF.load(path).predict(X) == crf.predict(X)  # the file is untouched
    with pytest.raises(ValueError, match="no parameter 'rho3'"):
        loaded.set_params(rho3=1)


def test_cli_algorithms_grow_and_init(tiny_file, tmp_path):
    runner = CliRunner()
    pat = tmp_path / "p.pat"
    pat.write_text("\n".join(PATTERNS) + "\n")
    model = tmp_path / "m.crf"
    for a in ALGORITHMS:
        args = ["crf", "train", "-p", str(pat), "-a", a, "--maxiter", "3", "--quiet", str(tiny_file), str(model)]
        r = runner.invoke(main, args)
        assert r.exit_code == 0, (a, r.output)
        assert CRF.load(model).algorithm == a
    r = runner.invoke(main, ["crf", "train", "-p", str(pat), "--penalty", "linf-tree", "--maxiter", "3",
                             "--quiet", str(tiny_file), str(model)])
    assert r.exit_code == 0, r.output
    m = CRF.load(model)
    assert (m.algorithm, m.penalty) == ("fista", "linf-tree")
    r = runner.invoke(main, ["crf", "train", "-p", str(pat), "--grow", "--maxiter", "5", str(tiny_file), str(model)])
    assert r.exit_code == 0, r.output
    assert "round 2:" in r.output
    extra = tmp_path / "e.pat"
    extra.write_text("u:p-1,p0=%x[-1,1]/%x[0,1]\n")
    grown = tmp_path / "g.crf"
    r = runner.invoke(main, ["crf", "train", "--init", str(model), "-p", str(extra), "--maxiter", "3",
                             "--quiet", str(tiny_file), str(grown)])
    assert r.exit_code == 0, r.output
    assert "u:p-1,p0=%x[-1,1]/%x[0,1]" in [p.text for p in CRF.load(grown).space_.patterns]
    # errors: one line, nothing written
    bad = tmp_path / "bad.crf"
    for args, msg in [(["-p", str(pat), "-a", "sag", "--rho1", "1"], "l2 penalty only"),
                      (["-p", str(pat), "--penalty", "l2-tree", "-a", "owlqn"], "needs algorithm 'fista'"),
                      ([], "give a pattern file")]:
        r = runner.invoke(main, ["crf", "train", *args, str(tiny_file), str(bad)])
        assert r.exit_code != 0 and msg in r.output and "Traceback" not in r.output
        assert not bad.exists()
    damaged = tmp_path / "d.crf"
    damaged.write_bytes(b"PK\x03\x04garbage")
    r = runner.invoke(main, ["crf", "train", "--init", str(damaged), str(tiny_file), str(bad)])
    assert r.exit_code != 0 and "d.crf" in r.output and not bad.exists()
    with pytest.raises(ModelError):
        CRF.load(damaged)
