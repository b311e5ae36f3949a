"""Shared helpers of the crf tests (slow obviously-correct references)."""

import itertools

import numpy as np


def random_corpus(rng, n_seq, max_len, L, vocab=4):
    """Random 2-column sequences (word, tag) and labels among L."""
    X, y = [], []
    for _ in range(n_seq):
        T = int(rng.integers(1, max_len + 1))
        X.append([[f"w{rng.integers(vocab)}", f"p{rng.integers(2)}"] for _ in range(T)])
        y.append([f"L{rng.integers(L)}" for _ in range(T)])
    # every label appears at least once
    y[0][: min(L, len(y[0]))] = [f"L{k}" for k in range(min(L, len(y[0])))]
    for k in range(L):
        if not any(f"L{k}" in s for s in y):
            X.append([["w0", "p0"]])
            y.append([f"L{k}"])
    return X, y


# patterns exercising unigram, observation-conditioned bigram, '*' and pure transitions
PATTERNS = ["u:a=%x[0,0]", "u:b=%x[-1,0]/%x[0,1]", "b:c=%x[0,1]", "*:d=%x[1,0]", "B"]


def brute_force_observations(seq, t, patterns=None):
    """Observation strings of PATTERNS (or ONLY_B of test_inference) at position t, by hand."""
    T = len(seq)

    def val(i, c):
        if i < 0:
            return f"_x{i}"
        if i >= T:
            return f"_x+{i - T + 1}"
        return seq[i][c]

    if patterns is not None and "*:d=const" in patterns:
        return [f"u:a={val(t, 0)}", f"u:b={val(t - 1, 0)}/{val(t, 1)}", "*:d=const"], ["*:d=const", "B"]
    uni = [f"u:a={val(t, 0)}", f"u:b={val(t - 1, 0)}/{val(t, 1)}", f"*:d={val(t + 1, 0)}"]
    bi = [f"b:c={val(t, 1)}", f"*:d={val(t + 1, 0)}", "B"]
    return uni, bi


def enumerate_sequences(space, theta, seq, patterns=None):
    """All label sequences of seq with their scores, from a dict of weights (independent of the kernels)."""
    L = space.n_labels
    w_uni, w_bi = {}, {}
    for obs, prev, lab, v in space.describe(theta):
        if prev is None:
            w_uni[(obs, lab)] = v
        else:
            w_bi[(obs, prev, lab)] = v
    labels = space.labels
    T = len(seq)
    obs = [brute_force_observations(seq, t, patterns) for t in range(T)]
    out = []
    for ys in itertools.product(range(L), repeat=T):
        sc = 0.0
        for t in range(T):
            uni, bi = obs[t]
            sc += sum(w_uni.get((o, labels[ys[t]]), 0.0) for o in uni)
            if t > 0:
                sc += sum(w_bi.get((o, labels[ys[t - 1]], labels[ys[t]]), 0.0) for o in bi)
        out.append((ys, sc))
    return out


def logsumexp(v):
    v = np.asarray(v)
    m = v.max()
    return m + np.log(np.exp(v - m).sum())
