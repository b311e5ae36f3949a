"""Acceptance: sklearn-crfsuite's tutorial on CoNLL-2002 Spanish.

The tutorial's ``word2features`` dicts of esp.train train our ``CRF().fit`` and
python-crfsuite (``pycrfsuite.Trainer``, the tutorial's settings: lbfgs, c1 = 0.1,
c2 = 0.1, max_iterations = 100, all_possible_transitions); our entity F1 on esp.testb
(conlleval, crf.evaluate: entity chunks, i.e. the tutorial's labels minus 'O') must be
at least CRFsuite's.  Ours: the same elastic net, rho1 = c1 and rho2 = 2 c2 (CRFsuite's
objective has c2 |w|^2, ours rho2/2 |w|^2), 100 iterations at most, CRF()'s stopping
rule.  About two minutes per system on a free core.
"""

import pytest

from crf import CRF, dicts
from crf.data import read_sequences
from crf.evaluate import chunk_scores
from crf.tutorial import sent2features


@pytest.mark.slow
def test_tutorial_f1_at_least_pycrfsuite(shared, tmp_path):
    pycrfsuite = pytest.importorskip("pycrfsuite")
    corpus = shared("corpora", "conll2002")
    train = read_sequences(corpus / "esp.train", n_columns=3)
    test = read_sequences(corpus / "esp.testb", n_columns=3)
    X, y = [sent2features(s) for s in train], [[row[2] for row in s] for s in train]
    Xt, yt = [sent2features(s) for s in test], [[row[2] for row in s] for s in test]
    assert sum(map(len, X)) == 264_715 and sum(map(len, Xt)) == 51_533  # the README's counts

    trainer = pycrfsuite.Trainer(verbose=False)
    for xs, ys in zip(X, y):
        trainer.append(xs, ys)
    trainer.set_params({"c1": 0.1, "c2": 0.1, "max_iterations": 100, "feature.possible_transitions": True})
    trainer.train(str(tmp_path / "tutorial.crfsuite"))
    tagger = pycrfsuite.Tagger()
    tagger.open(str(tmp_path / "tutorial.crfsuite"))
    theirs = chunk_scores(yt, [tagger.tag(xs) for xs in Xt]).precision_recall_f1[2]

    model = CRF(rho1=0.1, rho2=0.2, max_iter=100).fit(X, y)
    ours = chunk_scores(yt, model.predict(Xt)).precision_recall_f1[2]
    labels = [lab for lab in model.classes_ if lab != "O"]
    assert sorted(labels) == sorted(lab for lab in tagger.labels() if lab != "O")
    assert ours >= theirs, (ours, theirs)
    # every attribute of CRFsuite's model is one of ours, under the same name
    space, _ = dicts.build(X, y)
    names = set(space.observations)
    assert set(tagger.info().attributes) <= names and set(model.attributes_) <= names
