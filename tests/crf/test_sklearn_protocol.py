"""scikit-learn's estimator protocol on the CRF: get_params / set_params, clone,
score(X, y) = token accuracy, GridSearchCV over rho1, cross_val_score."""

import numpy as np
import pytest
from suffixlm.corpora import sample_path

from crf import CRF
from crf.data import read_sequences, split_labels

PATTERNS = str(sample_path("patterns/chunk.pat"))


@pytest.fixture
def data(tiny_file):
    X, y = split_labels(read_sequences(tiny_file))
    return X * 4, y * 4  # 12 sequences: enough for 3 folds


def test_params_and_clone(data):
    crf = CRF(patterns=PATTERNS, rho1=0.1, max_iter=20)
    p = crf.get_params()
    assert p["patterns"] == PATTERNS and p["rho1"] == 0.1 and p["max_iter"] == 20
    with pytest.raises(ValueError, match="no parameter 'rho3'"):
        crf.set_params(rho3=1)
    base = pytest.importorskip("sklearn.base")
    X, y = data
    crf.fit(X, y)
    c = base.clone(crf)
    assert c.get_params() == crf.get_params() and not hasattr(c, "theta_")


def test_score_is_token_accuracy(data):
    X, y = data
    crf = CRF(patterns=PATTERNS, max_iter=30).fit(X, y)
    pred = crf.predict(X)
    acc = np.mean([a == b for p, t in zip(pred, y) for a, b in zip(p, t)])
    assert crf.score(X, y) == pytest.approx(acc, rel=1e-15)
    with pytest.raises(ValueError, match="one label per token"):
        crf.score(X, [t[:-1] for t in y])


def test_grid_search_and_cross_validation(data):
    ms = pytest.importorskip("sklearn.model_selection")
    X, y = data
    search = ms.GridSearchCV(CRF(patterns=PATTERNS, max_iter=20), {"rho1": [0.01, 5.0]}, cv=3).fit(X, y)
    assert search.best_params_["rho1"] in (0.01, 5.0)
    assert 0.0 <= search.best_score_ <= 1.0 and search.best_estimator_.theta_.shape[0] > 0
    folds = ms.KFold(3)
    got = ms.cross_val_score(CRF(patterns=PATTERNS, max_iter=20), X, y, cv=folds)
    for value, (tr, te) in zip(got, folds.split(X)):
        m = CRF(patterns=PATTERNS, max_iter=20).fit([X[i] for i in tr], [y[i] for i in tr])
        assert value == pytest.approx(m.score([X[i] for i in te], [y[i] for i in te]), rel=1e-12)


def test_feature_views_as_sklearn_crfsuite(tiny_file):
    """state_features_ / transition_features_ (+ transition_state_features_ for Wapiti's
    bigram patterns) / attributes_ hold exactly the non-zero weights of the model, keyed
    as sklearn-crfsuite keys them."""
    X, y = split_labels(read_sequences(tiny_file))
    crf = CRF(patterns=["u:w0=%x[0,0]", "B", "b:p0=%x[0,1]"], max_iter=30, rho1=0.01).fit(X, y)
    sp, theta = crf.space_, crf.theta_
    L = len(sp.labels)
    state = crf.state_features_
    assert state and all(w != 0.0 for w in state.values())
    for (attr, lab), w in state.items():
        o = sp.obs_index[attr]
        assert theta[sp.unigram_offset[o] + sp.label_index[lab]] == w
    n_unigram_nonzero = int(np.count_nonzero(theta[: sp.bigram_start]))
    assert len(state) == n_unigram_nonzero
    trans = crf.transition_features_
    off = sp.bigram_offset[sp.obs_index["B"]]
    for (a, b), w in trans.items():
        assert theta[off + sp.label_index[a] * L + sp.label_index[b]] == w
    assert len(trans) == int(np.count_nonzero(theta[off: off + L * L]))
    cond = crf.transition_state_features_
    assert all(attr.startswith("b:p0=") for attr, _, _ in cond)
    assert len(state) + len(trans) + len(cond) == int(np.count_nonzero(theta))
    assert set(crf.attributes_) == {o for o, k in zip(sp.observations, sp.kinds) if k & 1}
    assert set(crf.classes_) == {lab for seq in y for lab in seq}
