"""A quick real-data check on the first CoNLL-2000 sentences (skipped without ../shared)."""

from itertools import islice

from suffixlm.corpora import sample_path

from crf import CRF
from crf.data import iter_sequences, split_labels
from crf.evaluate import chunk_scores


def test_small_conll2000_model_chunks_well(shared):
    path = shared("corpora", "conll2000", "train.txt")
    with open(path, encoding="utf-8") as fh:
        seqs = [rows for _, rows in islice(iter_sequences(fh, str(path)), 300)]
    X, y = split_labels(seqs)
    crf = CRF(patterns=sample_path("patterns/chunk.pat"), max_iter=20).fit(X[:200], y[:200])
    sc = chunk_scores(y[200:], crf.predict(X[200:]))
    assert sc.precision_recall_f1[2] > 85.0  # 200 training sentences, 20 iterations
    assert crf.n_active_features_ < crf.n_features_ / 5  # l1 keeps a small model
