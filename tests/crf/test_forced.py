"""Forced decoding (Wapiti's --force): Viterbi and n-best restricted to the label
sequences that agree with the given labels, against exact enumeration; the Python
API and `suffixlm crf label --force`."""

import itertools

import numpy as np
import pytest
from click.testing import CliRunner

from crf import CRF
from crf.features import FeatureSpace
from crf.inference import forced_label_ids, nbest, viterbi
from crf.patterns import parse_patterns

from .crf_testutil import PATTERNS, enumerate_sequences, random_corpus


def problem(seed, L=3, n_seq=6, max_len=5):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    theta = rng.normal(scale=1.0, size=space.n_params)
    theta[rng.random(space.n_params) < 0.5] = 0.0
    return rng, X, space, data, theta


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_forced_viterbi_and_nbest_are_the_best_consistent_paths(seed):
    rng, X, space, data, theta = problem(seed)
    L = space.n_labels
    forced = np.where(rng.random(data.n_tokens) < 0.4, rng.integers(0, L, data.n_tokens), -1)
    best, best_sc = viterbi(theta, space, data, forced)
    N = 5
    paths, scores = nbest(theta, space, data, N, forced)
    off = data.seq_offsets
    for i, seq in enumerate(X):
        s, e = off[i], off[i + 1]
        f = forced[s:e]
        ok = [(ys, sc) for ys, sc in enumerate_sequences(space, theta, seq)
              if all(ff < 0 or ff == yy for ff, yy in zip(f, ys))]
        assert len(ok) == L ** int((f < 0).sum())
        sc = np.array([v for _, v in ok])
        k = int(np.argmax(sc))
        assert best_sc[i] == pytest.approx(sc[k], abs=1e-9)
        assert tuple(best[s:e]) == ok[k][0]
        n_paths = min(N, len(ok))
        np.testing.assert_allclose(scores[i, :n_paths], np.sort(sc)[::-1][:n_paths], atol=1e-9)
        assert np.all(np.isneginf(scores[i, n_paths:]))
        for r in range(n_paths):  # every path returned agrees with the forced labels and has its score
            path = tuple(paths[s:e, r])
            assert all(ff < 0 or ff == yy for ff, yy in zip(f, path))
            assert dict(ok)[path] == pytest.approx(scores[i, r], abs=1e-9)


def test_nothing_forced_is_plain_viterbi():
    _, _, space, data, theta = problem(4)
    free = np.full(data.n_tokens, -1)
    a, sa = viterbi(theta, space, data, free)
    b, sb = viterbi(theta, space, data)
    assert np.array_equal(a, b) and np.array_equal(sa, sb)


def test_forced_label_ids_and_errors():
    _, X, space, data, _ = problem(5)
    lab = space.labels[1]
    forced = [[None] * len(s) for s in X]
    forced[0][0] = lab
    ids = forced_label_ids(space, data, forced)
    assert ids[0] == 1 and (ids[1:] == -1).all()
    forced[1][0] = "NOT-A-LABEL"
    with pytest.raises(ValueError, match=r"sequence 2, token 1: label 'NOT-A-LABEL' is not one of"):
        forced_label_ids(space, data, forced)
    with pytest.raises(ValueError, match="labels for"):
        forced_label_ids(space, data, [[lab]] + forced[1:] if len(X[0]) > 1 else [[lab, lab]] + forced[1:])


def tiny_model(seed=0):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, 30, 5, 3)
    return X, y, CRF(patterns=PATTERNS, max_iter=30, rho1=0.01).fit(X, y)


def test_predict_with_forced_labels_keeps_them():
    X, y, crf = tiny_model()
    forced = [[lab if t % 2 == 0 else None for t, lab in enumerate(reversed(ys))] for ys in y]
    pred = crf.predict(X, forced=forced)
    for f, p in zip(forced, pred):
        assert all(a is None or a == b for a, b in zip(f, p))
    assert crf.predict(X, forced=[None] * len(X)) == crf.predict(X)
    with pytest.raises(ValueError, match="not posterior"):
        crf.decode(X, posterior=True, forced=forced)


def test_cli_label_force(tmp_path):
    from suffixlm.cli import main

    X, y, crf = tiny_model(1)
    model = tmp_path / "m.crf"
    crf.save(model)
    forced = [[lab if t == 0 else None for t, lab in enumerate(reversed(ys))] for ys in y[:8]]
    lines = []
    for seq, f in zip(X[:8], forced):
        lines += [" ".join(row + [lab if lab is not None else "?"]) for row, lab in zip(seq, f)] + [""]
    inp = tmp_path / "in.txt"
    inp.write_text("\n".join(lines) + "\n")
    out = tmp_path / "out.txt"
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(model), "--force", str(inp), str(out)])
    assert r.exit_code == 0, r.output
    got = [[line.split("\t")[1] for line in block.splitlines()] for block in out.read_text().strip().split("\n\n")]
    assert got == crf.predict(X[:8], forced=forced)
    for f, p in zip(forced, got):
        assert all(a is None or a == b for a, b in zip(f, p))
    # n-best keeps them too
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(model), "--force", "--nbest", "3", str(inp),
                                  str(tmp_path / "nb.txt")])
    assert r.exit_code == 0, r.output
    # a label the model does not know: one line naming the file and line
    lines[0] = " ".join(X[0][0] + ["NOPE"])
    inp.write_text("\n".join(lines) + "\n")
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(model), "--force", str(inp), str(tmp_path / "o2.txt")])
    assert r.exit_code != 0
    assert f"{inp}:1: forced label 'NOPE' is not one of the model's" in r.output
    assert "Traceback" not in r.output and not (tmp_path / "o2.txt").exists()
    # the placeholder may not be a label of the model
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(model), "--force", "--unlabelled", crf.classes_[0],
                                  str(inp), str(tmp_path / "o3.txt")])
    assert r.exit_code != 0 and "is one of the model's labels" in r.output


def test_forced_positions_restrict_even_against_the_model():
    # a forced label the model finds unlikely is still kept, and its neighbours adapt
    X, y, crf = tiny_model(2)
    seq = X[0]
    free = crf.predict([seq])[0]
    other = next(lab for lab in crf.classes_ if lab != free[0])
    forced = [[other] + [None] * (len(seq) - 1)]
    got = crf.predict([seq], forced=forced)[0]
    assert got[0] == other
    # it is the best of the paths starting with that label
    sp, theta = crf.space_, crf.theta_
    data = crf.encode([seq])
    L = sp.n_labels
    k = sp.labels.index(other)
    best = max((ys for ys in itertools.product(range(L), repeat=len(seq)) if ys[0] == k),
               key=lambda ys: _path_score(theta, sp, data, ys))
    assert got == [sp.labels[v] for v in best]


def _path_score(theta, sp, data, ys):
    L = sp.n_labels
    sc = 0.0
    for t, yt in enumerate(ys):
        sc += sum(theta[b + yt] for b in data.unigram_base[t] if b >= 0)
        if t > 0:
            sc += sum(theta[b + ys[t - 1] * L + yt] for b in data.bigram_base[t] if b >= 0)
    return sc
