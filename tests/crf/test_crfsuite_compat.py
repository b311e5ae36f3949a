"""sklearn-crfsuite's constructor, names, algorithms and attributes on crf.CRF
(crf.compat, README: Coming from sklearn-crfsuite): code written for sklearn_crfsuite.CRF runs unchanged."""

import inspect
import itertools

import numpy as np
import pytest

from crf import CRF
from crf.compat import ALIASES, APPLIES_TO, SKLEARN_CRFSUITE_PARAMS, TrainingLog
from crf.dicts import item_attributes

from .test_dicts import toy


def test_the_constructor_is_sklearn_crfsuites_positional_order_included():
    params = list(inspect.signature(CRF.__init__).parameters.values())[1:]
    positional = [p.name for p in params if p.kind == p.POSITIONAL_OR_KEYWORD]
    assert positional == list(SKLEARN_CRFSUITE_PARAMS)
    assert all(p.kind == p.KEYWORD_ONLY for p in params[len(positional):])
    assert {"patterns", "rho1", "rho2", "max_iter", "order"} <= {p.name for p in params[len(positional):]}
    skl = pytest.importorskip("sklearn_crfsuite")
    theirs = [n for n in inspect.signature(skl.CRF.__init__).parameters if n != "self"]
    assert positional == theirs
    # every default None / False as there: nothing is set that the user did not give
    ref = inspect.signature(skl.CRF.__init__).parameters
    assert all(params[i].default == ref[n].default for i, n in enumerate(positional))


def test_the_tutorial_form_and_the_first_positional_algorithm():
    X, y = toy(3, n_seq=20)
    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100, all_possible_transitions=True).fit(X, y)
    st = crf.settings_
    # CRFsuite: L-BFGS with an l1 term is OWL-QN; c2 ||w||^2 is our rho2/2 ||w||^2
    assert (st.algorithm, st.rho1, st.rho2, st.max_iter) == ("owlqn", 0.1, 0.2, 100)
    assert CRF("lbfgs")._settings().algorithm == "lbfgs"
    assert CRF("lbfgs")._settings().rho2 == 2.0  # CRFsuite's c2 = 1
    assert CRF()._settings().algorithm == "owlqn" and CRF()._settings().rho1 == 0.5  # ours
    assert CRF(c2=0.5)._settings().algorithm == "lbfgs" and CRF(c2=0.5)._settings().rho2 == 1.0
    assert CRF("ap")._settings().algorithm == "perceptron" and CRF("ap")._settings().max_iter == 100
    assert crf.predict_single(X[0]) == crf.predict([X[0]])[0]
    assert crf.predict_marginals_single(X[0]) == crf.predict_marginals([X[0]])[0]


def test_crfsuites_lbfgs_runs_to_crfsuites_convergence_unless_told_otherwise():
    def rule(crf):
        st = crf._settings()
        return st.history, st.stopwin, st.stopeps

    crfsuite, ours = (6, 10, 1e-5), (5, 5, 0.02)
    for crf in (CRF("lbfgs"), CRF(c2=0.5), CRF(c1=1.0, c2=1e-3), CRF(algorithm="lbfgs", c1=0.1)):
        assert rule(crf) == crfsuite
    assert CRF(c1=1.0)._settings().algorithm == "owlqn"  # CRFsuite's lbfgs with an l1 term is OWL-QN
    assert rule(CRF()) == rule(CRF("owlqn")) == rule(CRF(rho1=0.1, rho2=1.0)) == ours
    assert rule(CRF("lbfgs", period=3, delta=0.1, num_memories=4)) == (4, 3, 0.1)
    assert rule(CRF("lbfgs", stopwin=7, stopeps=0.5, history=2)) == (2, 7, 0.5)
    # the other algorithms keep their own rules
    assert rule(CRF("l2sgd"))[1:] == ours[1:]


def test_a_pattern_file_given_first_is_a_clear_error(tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("u:%x[0,0]\n")
    with pytest.raises(ValueError, match="first positional parameter is the algorithm"):
        CRF(str(pat)).fit([[["a"]]], [["A"]])


def test_crfsuite_names_reach_the_same_optimum_as_ours():
    X, y = toy(5, n_seq=25)
    a = CRF(algorithm="lbfgs", c1=0.05, c2=0.25, max_iterations=40, period=3, delta=1e-3, num_memories=4).fit(X, y)
    b = CRF(algorithm="owlqn", rho1=0.05, rho2=0.5, max_iter=40, stopwin=3, stopeps=1e-3, history=4).fit(X, y)
    np.testing.assert_array_equal(a.theta_, b.theta_)
    a = CRF("lbfgs", c2=0.25, max_iterations=30, epsilon=1e-3).fit(X, y)
    b = CRF(algorithm="lbfgs", rho2=0.5, max_iter=30).set_params(epsilon=1e-3).fit(X, y)
    np.testing.assert_array_equal(a.theta_, b.theta_)


@pytest.mark.parametrize("ours,theirs", ALIASES)
def test_both_names_of_a_pair_are_an_error(ours, theirs):
    with pytest.raises(ValueError, match=f"{ours} and {theirs} are two names"):
        CRF(**{ours: 1, theirs: 1}).check_params()


@pytest.mark.parametrize("key", sorted(APPLIES_TO))
def test_a_crfsuite_parameter_is_refused_where_it_does_not_apply(key):
    value = {"linesearch": "Backtracking", "error_sensitive": True, "averaging": True, "calibration_rate": 2.0}
    kw = {key: value.get(key, 1)}
    for algorithm in ("lbfgs", "owlqn", "l2sgd", "ap", "pa", "arow", "sgd-l1", "sag"):
        solver = CRF(algorithm=algorithm)._settings().algorithm
        if solver in APPLIES_TO[key]:
            CRF(algorithm=algorithm, **kw).check_params()
        else:
            with pytest.raises(ValueError, match=f"{key} is a parameter of algorithm"):
                CRF(algorithm=algorithm, **kw).check_params()


@pytest.mark.parametrize("kw,msg", [
    ({"c1": -1}, ">= 0"), ({"c2": float("nan")}, "finite"), ({"max_iterations": 1.5}, "integer"),
    ({"algorithm": "pa", "pa_type": 3}, "pa_type must be 0, 1 or 2"), ({"algorithm": "pa", "c": 0}, "> 0"),
    ({"algorithm": "arow", "variance": -1}, "> 0"), ({"algorithm": "lbfgs", "linesearch": "Wolfe"}, "linesearch"),
    ({"algorithm": "l2sgd", "calibration_rate": 1.0}, "> 1"), ({"algorithm": "ap", "c2": 1}, "no penalty"),
    ({"algorithm": "l2sgd", "c1": 0.5}, "does not apply"), ({"trainer_cls": object}, "trainer_cls"),
    ({"min_freq": 2, "algorithm": "ap"}, "gradient-based"),
    ({"all_possible_transitions": False, "algorithm": "l2sgd"}, "gradient-based"),
])
def test_bad_crfsuite_values_are_clear_errors(kw, msg):
    with pytest.raises((ValueError, TypeError), match=msg):
        CRF(**kw).check_params()


def test_get_set_params_and_clone_round_trip_every_parameter():
    values = {"algorithm": "pa", "min_freq": 0, "all_possible_states": True, "all_possible_transitions": True,
              "max_iterations": 7, "epsilon": 0.01, "period": 4, "delta": 0.1, "pa_type": 2, "c": 0.5,
              "error_sensitive": False, "averaging": False, "verbose": False, "model_filename": None,
              "keep_tempfiles": True, "order": 1, "seed": 3}
    crf = CRF(**values)
    p = crf.get_params()
    assert set(SKLEARN_CRFSUITE_PARAMS) <= set(p)
    assert all(p[k] == v for k, v in values.items())
    again = CRF(**p)
    assert again.get_params() == p and again._settings() == crf._settings()
    assert CRF().set_params(**p).get_params() == p
    base = pytest.importorskip("sklearn.base")
    assert base.clone(crf).get_params() == p


def test_attributes_are_none_before_fit_and_views_after():
    crf = CRF(algorithm="lbfgs", c2=0.05)
    for name in ("classes_", "attributes_", "num_attributes_", "size_", "state_features_", "transition_features_",
                 "training_log_", "tagger_"):
        assert getattr(crf, name) is None, name
    X, y = toy(2, n_seq=15)
    crf.fit(X, y)
    assert set(crf.classes_) == {lab for s in y for lab in s}
    assert crf.num_attributes_ == len(crf.attributes_) > 0
    assert {a for a, _ in crf.state_features_} == set(crf.attributes_)
    log = crf.training_log_
    assert isinstance(log, TrainingLog) and len(log.iterations) == len(log) == crf.n_iter_
    last = log.last_iteration
    assert last["num"] == crf.n_iter_ and last["loss"] == log[-1]["objective"]
    assert last["active_features"] == log[-1]["active"] and last["time"] >= 0


def test_size_is_the_model_files_size(tmp_path):
    X, y = toy(4)
    crf = CRF(max_iter=5).fit(X, y)
    crf.save(tmp_path / "m.crf")
    assert crf.size_ == (tmp_path / "m.crf").stat().st_size


def test_model_filename_saves_after_fit_and_is_read_without_fit(tmp_path):
    X, y = toy(6, n_seq=15)
    path = tmp_path / "model.crfsuite"
    crf = CRF(algorithm="lbfgs", c2=0.1, max_iterations=20, model_filename=str(path)).fit(X, y)
    assert path.exists()
    again = CRF(model_filename=str(path))
    assert again.predict(X) == crf.predict(X)
    assert again.classes_ == crf.classes_ and again.state_features_ == crf.state_features_
    assert CRF(model_filename=str(tmp_path / "none.crf")).classes_ is None
    (tmp_path / "junk.crf").write_bytes(b"not a model")
    with pytest.raises(ValueError, match="junk.crf"):
        CRF(model_filename=str(tmp_path / "junk.crf")).predict(X)


def _labelings(labels, n):
    return [list(p) for p in itertools.product(labels, repeat=n)]


def test_tagger_is_pycrfsuites():
    X, y = toy(7, n_seq=20, max_len=4)
    crf = CRF(algorithm="lbfgs", c2=0.1, max_iterations=50).fit(X, y)
    tagger = crf.tagger_
    assert tagger.labels() == crf.classes_
    xseq = X[1]
    assert tagger.tag(xseq) == crf.predict_single(xseq)
    tagger.set(xseq)
    assert tagger.tag() == crf.predict_single(xseq)
    probs = {tuple(p): tagger.probability(p) for p in _labelings(crf.classes_, len(xseq))}
    assert sum(probs.values()) == pytest.approx(1.0, rel=1e-9)
    assert max(probs, key=probs.get) == tuple(tagger.tag())
    marg = crf.predict_marginals_single(xseq)
    for t, lab in itertools.product(range(len(xseq)), crf.classes_):
        by_enum = sum(p for path, p in probs.items() if path[t] == lab)
        assert tagger.marginal(lab, t) == pytest.approx(marg[t][lab], rel=1e-12)
        assert tagger.marginal(lab, t) == pytest.approx(by_enum, rel=1e-9, abs=1e-12)
    info = tagger.info()
    assert info.labels == {lab: i for i, lab in enumerate(crf.classes_)}
    assert set(info.attributes) == set(crf.attributes_) and info.state_features == crf.state_features_
    assert info.transitions == crf.transition_features_ and info.header["num_attrs"] == crf.num_attributes_
    with pytest.raises(ValueError, match="yseq has"):
        tagger.probability(["O"])
    with pytest.raises(IndexError):
        tagger.marginal(crf.classes_[0], len(xseq))


@pytest.mark.parametrize("algorithm", ["ap", "pa", "arow", "l2sgd"])
def test_crfsuites_algorithms_learn_the_toy_problem(algorithm):
    X, y = toy(8, n_seq=30)
    crf = CRF(algorithm=algorithm, max_iterations=30).fit(X, y)
    assert crf.score(X, y) > 0.9
    assert crf.training_log_.last_iteration["num"] == crf.n_iter_


@pytest.mark.parametrize("states,transitions,min_freq,real", [
    (True, True, 0, False), (False, True, 0, True), (False, False, 0, True), (False, False, 2, False),
    (True, True, 2, True), (True, False, 0, False)])
def test_lbfgs_with_c2_reaches_pycrfsuites_optimum(tmp_path, states, transitions, min_freq, real):
    """The same data, CRFsuite's feature options (possible states and transitions, or only
    the pairs seen in training -- its defaults, our seen states --, a frequency cut-off),
    trained to convergence by python-crfsuite and by us with c2: the same weights, on the
    same features. Real values: CRFsuite keeps an (attribute, label) pair whose values sum
    to at least min_freq (so not one summing below 0); so do our seen states (every state
    possible, ours keeps every pair: compared on indicator features only)."""
    pycrfsuite = pytest.importorskip("pycrfsuite")
    X, y = toy(9, n_seq=25, real=real)
    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    c2 = 0.3
    trainer.set_params({"c1": 0.0, "c2": c2, "max_iterations": 2000, "epsilon": 1e-9, "delta": 1e-12,
                        "period": 10, "feature.possible_states": states, "feature.possible_transitions": transitions,
                        "feature.minfreq": min_freq})
    trainer.train(str(tmp_path / "m.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "m.crfsuite"))
    info = tagger.info()
    ours = CRF(algorithm="lbfgs", c2=c2, epsilon=1e-9, delta=1e-12, period=10, all_possible_states=states,
               all_possible_transitions=transitions, min_freq=min_freq).fit(X, y)
    assert ours.space_.seen_states is not (states and not min_freq)
    theirs = info.state_features
    mine = ours.state_features_
    if not states and not min_freq:  # the same features: the pairs seen in training
        seen = {(a, lab) for xs, ys in zip(X, y) for x, lab in zip(xs, ys) for a in item_attributes(x)[0]}
        assert set(mine) <= seen and set(theirs) <= seen
    if not transitions:
        pairs = {(a, b) for ys in y for a, b in zip(ys, ys[1:])}
        assert set(ours.transition_features_) <= pairs and set(info.transitions) <= pairs
    keys = set(theirs) | set(mine)
    scale = max(abs(v) for v in theirs.values())
    for k in keys:
        assert mine.get(k, 0.0) == pytest.approx(theirs.get(k, 0.0), abs=1e-4 * scale), k
    for k in set(info.transitions) | set(ours.transition_features_):
        assert ours.transition_features_.get(k, 0.0) == pytest.approx(info.transitions.get(k, 0.0),
                                                                     abs=1e-4 * scale), k


def test_sklearn_crfsuites_tutorial_code_runs_unchanged():
    """The tutorial's steps as sklearn-crfsuite's documentation writes them (its metrics
    module replaced by scikit-learn's on the flattened labels): fit, classes_ without
    'O', a weighted F1, RandomizedSearchCV over c1 and c2, the weights' views."""
    from collections import Counter

    stats = pytest.importorskip("scipy.stats")
    ms = pytest.importorskip("sklearn.model_selection")
    metrics = pytest.importorskip("sklearn.metrics")
    X_train, y_train = toy(10, n_seq=30)

    def flat(ys):
        return [lab for s in ys for lab in s]

    crf = CRF(algorithm="lbfgs", c1=0.1, c2=0.1, max_iterations=100, all_possible_transitions=True)
    crf.fit(X_train, y_train)
    labels = list(crf.classes_)
    labels.remove("O")
    y_pred = crf.predict(X_train)
    f1 = metrics.f1_score(flat(y_train), flat(y_pred), average="weighted", labels=labels)
    assert 0.5 < f1 <= 1.0
    params_space = {"c1": stats.expon(scale=0.5), "c2": stats.expon(scale=0.05)}
    f1_scorer = metrics.make_scorer(lambda yt, yp: metrics.f1_score(flat(yt), flat(yp), average="weighted",
                                                                    labels=labels))
    rs = ms.RandomizedSearchCV(CRF(algorithm="lbfgs", max_iterations=100, all_possible_transitions=True),
                               params_space, cv=3, n_iter=3, scoring=f1_scorer, random_state=0)
    rs.fit(X_train, y_train)
    assert set(rs.best_params_) == {"c1", "c2"} and rs.best_estimator_.settings_.algorithm == "owlqn"
    best = rs.best_estimator_
    for view in (best.transition_features_, best.state_features_):
        top = Counter(view).most_common(5)
        assert 1 <= len(top) <= 5 and [w for _, w in top] == sorted(view.values(), reverse=True)[:len(top)]


def test_a_tagger_opens_a_model_file_as_pycrfsuites(tmp_path):
    from crf import Tagger

    X, y = toy(11, n_seq=15)
    crf = CRF(algorithm="lbfgs", c2=0.1, max_iterations=20).fit(X, y)
    crf.save(tmp_path / "m.crf")
    tagger = Tagger()
    tagger.open(str(tmp_path / "m.crf"))
    assert tagger.tag(X[0]) == crf.predict_single(X[0]) and tagger.labels() == crf.classes_
    with pytest.raises(ValueError, match="no model"):
        Tagger().labels()
    tagger.close()
    with pytest.raises(ValueError, match="no model"):
        tagger.tag(X[0])
