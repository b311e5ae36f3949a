"""The feature function of sklearn-crfsuite's tutorial (CoNLL-2002 NER): one dict per
token, for examples, the acceptance test and ``scripts/bench_sklearn_crfsuite.py``.

    from crf import CRF
    from crf.tutorial import sent2features
    CRF(rho1=0.1, rho2=0.2, max_iter=100).fit([sent2features(s) for s in sents], labels)

``sent`` is a list of (word, part of speech, ...) rows.
"""

__all__ = ["word2features", "sent2features"]


def word2features(sent, i):
    """The tutorial's (verbatim but for the line breaks)."""
    word = sent[i][0]
    postag = sent[i][1]
    features = {
        'bias': 1.0,
        'word.lower()': word.lower(),
        'word[-3:]': word[-3:],
        'word[-2:]': word[-2:],
        'word.isupper()': word.isupper(),
        'word.istitle()': word.istitle(),
        'word.isdigit()': word.isdigit(),
        'postag': postag,
        'postag[:2]': postag[:2],
    }
    if i > 0:
        word1 = sent[i - 1][0]
        postag1 = sent[i - 1][1]
        features.update({
            '-1:word.lower()': word1.lower(),
            '-1:word.istitle()': word1.istitle(),
            '-1:word.isupper()': word1.isupper(),
            '-1:postag': postag1,
            '-1:postag[:2]': postag1[:2],
        })
    else:
        features['BOS'] = True
    if i < len(sent) - 1:
        word1 = sent[i + 1][0]
        postag1 = sent[i + 1][1]
        features.update({
            '+1:word.lower()': word1.lower(),
            '+1:word.istitle()': word1.istitle(),
            '+1:word.isupper()': word1.isupper(),
            '+1:postag': postag1,
            '+1:postag[:2]': postag1[:2],
        })
    else:
        features['EOS'] = True
    return features


def sent2features(sent):
    return [word2features(sent, i) for i in range(len(sent))]
