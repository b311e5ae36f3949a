"""Seen states (CRFsuite's all_possible_states=False, ``--states seen``): each unigram
observation's block holds only the labels it has in the training data. The model is the
dense model with the other weights fixed at zero: every kernel is checked against the
dense kernels on the expanded weights, every solver against the optimum, the model file
against tampering."""

import copy
import zipfile

import numpy as np
import pytest

from crf import CRF
from crf.dicts import item_attributes
from crf.features import FeatureSpace
from crf.inference import Objective, forward_backward_marginals, viterbi
from crf.model import ModelError
from crf.patterns import parse_patterns
from crf.train import _sequence_kernels as SQ
from crf.transitions import allowed_pairs

from .crf_testutil import PATTERNS, random_corpus
from .test_dicts import toy
from .test_model_file_tampering import rewritten

PATTERNS2 = ["u:a=%x[0,0]", "*:d=%x[1,0]", "B", "T", "t:e=%x[0,1]"]


def spaces(kind, seed=0, n_seq=14, L=4):
    """(dense space, dense data, seen space, seen data) of one random problem."""
    rng = np.random.default_rng(seed)
    if kind == "dicts":
        from crf import dicts

        X, y = toy(seed, n_seq=n_seq)
        space, data = dicts.build(X, y, "X")
    else:
        X, y = random_corpus(rng, n_seq, 5, L, vocab=6)
        pats = PATTERNS2 if kind == "second" else PATTERNS
        space, data = FeatureSpace.build(parse_patterns("\n".join(pats) + "\n"), X, y)
    if kind == "forbid":
        space.set_allowed(allowed_pairs("unseen", space.labels, data.labels, data.seq_offsets))
    sdata = copy.deepcopy(data)
    seen = space.restrict_states(sdata)
    return space, data, seen, sdata


def expand(space, seen, theta):
    """The dense weights of seen-states weights (zero where a block lacks the label)."""
    L = space.n_labels
    dense = np.zeros(space.n_params)
    d_obs = np.flatnonzero(space.unigram_offset >= 0)
    s_obs = np.flatnonzero(seen.unigram_offset >= 0)
    # the dense rank of each seen-states block (observations may have gone: ranks shift)
    dense_rank = np.searchsorted(d_obs, [space.obs_index[seen.observations[o]] for o in s_obs])
    rank = np.repeat(dense_rank, np.diff(seen.state_ptr)).astype(np.int64)
    dense[rank * L + seen.state_labels] = theta[: seen.bigram_start]
    dense[space.bigram_start:] = theta[seen.bigram_start:]
    return dense, rank * L + seen.state_labels


KINDS = ["first", "forbid", "second", "dicts"]


@pytest.mark.parametrize("kind", KINDS)
def test_the_layout_holds_the_labels_seen(kind):
    """Each observation keeps the labels whose values (1 without values) sum to at least 0
    over its tokens of that label, CRFsuite's rule; the corpus points at the same blocks."""
    space, data, seen, sdata = spaces(kind)
    L = space.n_labels
    assert seen.seen_states and not space.seen_states
    d_obs = np.flatnonzero(space.unigram_offset >= 0)
    s_obs = np.flatnonzero(seen.unigram_offset >= 0)
    freq = {}
    for j in range(data.unigram_base.shape[1]):
        for t, (b, y) in enumerate(zip(data.unigram_base[:, j], data.labels)):
            if b >= 0:
                key = (space.observations[d_obs[int(b) // L]], int(y))
                freq[key] = freq.get(key, 0.0) + (data.unigram_value[t, j] if data.valued else 1.0)
    want = {k for k, f in freq.items() if f >= 0}
    got = {(seen.observations[s_obs[u]], int(y)) for u in range(seen.n_unigram_obs) for y in seen.unigram_labels(u)}
    assert got == want
    assert (kind == "dicts") == (len(want) < len(freq))  # real values: some sum below 0
    assert seen.bigram_start == len(want) < space.bigram_start
    assert seen.n_params - seen.bigram_start == space.n_params - space.bigram_start
    for j in range(data.unigram_base.shape[1]):
        for b, sb in zip(data.unigram_base[:, j], sdata.unigram_base[:, j]):
            if sb >= 0:
                u = int(np.searchsorted(seen.state_ptr, sb, side="right")) - 1
                assert sb == seen.state_ptr[u] and seen.observations[s_obs[u]] == space.observations[d_obs[b // L]]
            else:
                assert b < 0 or not any(space.observations[d_obs[b // L]] == o for o, _ in want)


@pytest.mark.parametrize("kind", KINDS)
def test_loss_gradient_marginals_and_viterbi_are_the_dense_ones(kind):
    space, data, seen, sdata = spaces(kind)
    theta = np.random.default_rng(1).normal(scale=0.7, size=seen.n_params)
    dense, where = expand(space, seen, theta)
    f, g = Objective(seen, sdata).value_and_gradient(theta)
    fd, gd = Objective(space, data).value_and_gradient(dense)
    assert f == pytest.approx(fd, rel=1e-12)
    np.testing.assert_allclose(g[: seen.bigram_start], gd[where], rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(g[seen.bigram_start:], gd[space.bigram_start:], rtol=1e-10, atol=1e-12)
    m, z = forward_backward_marginals(theta, seen, sdata)
    md, zd = forward_backward_marginals(dense, space, data)
    np.testing.assert_allclose(m, md, rtol=1e-10, atol=1e-13)
    np.testing.assert_allclose(z, zd, rtol=1e-12)
    p, sc = viterbi(theta, seen, sdata)
    pd, scd = viterbi(dense, space, data)
    np.testing.assert_array_equal(p, pd)
    np.testing.assert_allclose(sc, scd, rtol=1e-12)


def test_per_sequence_kernels_are_the_dense_ones():
    space, data, seen, sdata = spaces("first")
    theta = np.random.default_rng(2).normal(size=seen.n_params)
    dense, where = expand(space, seen, theta)
    L = np.int64(space.n_labels)
    f = SQ.total_loss(theta, sdata.seq_offsets, sdata.unigram_base, sdata.unigram_value, sdata.unigram_states,
                      sdata.bigram_base, sdata.labels, L)
    fd = SQ.total_loss(dense, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                       data.bigram_base, data.labels, L)
    assert f == pytest.approx(fd, rel=1e-12)
    ws, wsd = SQ.workspace(8, L), SQ.workspace(8, L)
    pp = np.empty(L * L)
    g, gd = np.zeros(seen.n_params), np.zeros(space.n_params)
    for i in range(data.n_sequences):
        s, e = sdata.seq_offsets[i], sdata.seq_offsets[i + 1]
        SQ.forward_backward(theta, sdata.unigram_base, sdata.unigram_value, sdata.unigram_states, sdata.bigram_base,
                            s, e, L, ws)
        SQ.add_gradient(sdata.unigram_base, sdata.unigram_value, sdata.unigram_states, sdata.bigram_base,
                        sdata.labels, s, e, L, ws, pp, g)
        SQ.forward_backward(dense, data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base,
                            s, e, L, wsd)
        SQ.add_gradient(data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base, data.labels,
                        s, e, L, wsd, pp, gd)
    np.testing.assert_allclose(g[: seen.bigram_start], gd[where], rtol=1e-10, atol=1e-12)


def corpus(seed=3, n_seq=30):
    """Random sequences whose labels mostly follow the words (something to learn)."""
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, 6, 4, vocab=8)
    y = [[f"L{int(x[0][1:]) % 4}" if rng.random() < 0.8 else lab for x, lab in zip(xs, ys)] for xs, ys in zip(X, y)]
    return X, y


def fit(X, y, **kw):
    return CRF(patterns=PATTERNS, all_possible_states=False, **kw).fit(X, y)


def objective(m, X, y, rho1, rho2):
    """The penalised negative log-likelihood of a fitted model on (X, y)."""
    theta = m.theta_
    data = m.space_.encode(X, y)
    f = Objective(m.space_, data).value_and_gradient(theta)[0]
    return f + rho1 * np.abs(theta).sum() + 0.5 * rho2 * theta @ theta


@pytest.mark.parametrize("order", [1, 2])
def test_solvers_reach_the_seen_states_optimum(order):
    """Every solver of a penalised likelihood reaches the optimum L-BFGS / OWL-QN find on the
    seen-states objective (the l2 solvers one, the l1 solvers another)."""
    X, y = corpus()
    common = dict(order=order, stopeps=0.0, stopwin=0)
    f2 = objective(fit(X, y, algorithm="lbfgs", rho2=0.5, max_iter=500, **common), X, y, 0.0, 0.5)
    for alg, it in (("sag", 300), ("l2sgd", 300)):
        m = fit(X, y, algorithm=alg, rho2=0.5, max_iter=it, **common)
        assert m.space_.seen_states
        assert objective(m, X, y, 0.0, 0.5) == pytest.approx(f2, rel=1e-4), alg
    f1 = objective(fit(X, y, algorithm="owlqn", rho1=0.3, rho2=0.1, max_iter=500, **common), X, y, 0.3, 0.1)
    for alg, it in (("fista", 2000), ("bcd", 300)):
        m = fit(X, y, algorithm=alg, rho1=0.3, rho2=0.1, max_iter=it, **common)
        assert objective(m, X, y, 0.3, 0.1) == pytest.approx(f1, rel=2e-3), alg
    # SGD with the cumulative l1 penalty settles 10-15 % above the optimum here, with every
    # label in every block as with seen states: a descent, not the optimum
    m = fit(X, y, algorithm="sgd-l1", rho1=0.3, rho2=0.1, max_iter=100, **common)
    assert f1 < objective(m, X, y, 0.3, 0.1) < 1.2 * f1


@pytest.mark.parametrize("alg", ["perceptron", "ap", "pa", "arow", "sag-nus", "fista"])
def test_other_solvers_train_seen_states(alg):
    X, y = corpus()
    kw = {"penalty": "l2-tree"} if alg == "fista" else {}
    m = fit(X, y, algorithm=alg, max_iter=20, **kw)
    assert m.space_.seen_states and m.score(X, y) > 0.5
    for (obs, lab), w in m.state_features_.items():
        assert w != 0.0


def test_seen_states_are_fewer_weights_and_the_same_sort_of_model():
    X, y = corpus()
    seen = fit(X, y, algorithm="lbfgs", rho2=1.0)
    dense = CRF(patterns=PATTERNS, algorithm="lbfgs", rho2=1.0).fit(X, y)
    assert seen.n_features_ < dense.n_features_
    seen_pairs = {(o, lab) for o, lab in seen.state_features_}
    assert seen_pairs < set(dense.state_features_)
    assert seen.score(X, y) > 0.7


def test_compaction_drops_zero_weights_and_keeps_the_model():
    X, y = corpus()
    m = CRF(patterns=PATTERNS, all_possible_states=False, algorithm="owlqn", rho1=2.0, max_iter=100)
    m.fit(X, y)
    sp = m.space_
    assert np.count_nonzero(m.theta_[: sp.bigram_start]) == sp.bigram_start  # no zero unigram weight kept
    assert (np.diff(sp.state_ptr) >= 1).all()
    big, theta = m.space_, m.theta_
    again, t2 = big.compact(theta)
    np.testing.assert_array_equal(t2, theta)
    assert again.n_params == big.n_params


def test_model_file_round_trip(tmp_path):
    X, y = corpus()
    m = fit(X, y, algorithm="lbfgs", rho2=1.0)
    path = tmp_path / "m.crf"
    m.save(path)
    back = CRF.load(path)
    assert back.space_.seen_states and back.all_possible_states is False
    assert back.predict(X) == m.predict(X)
    assert back.predict_marginals(X) == m.predict_marginals(X)
    np.testing.assert_array_equal(back.theta_, m.theta_)
    # a dense model's file has no state arrays and is read as before
    d = CRF(patterns=PATTERNS, algorithm="lbfgs", rho2=1.0).fit(X, y)
    d.save(tmp_path / "d.crf")
    with zipfile.ZipFile(tmp_path / "d.crf") as z:
        assert not any(n.startswith("state_") for n in z.namelist())


@pytest.mark.parametrize("what,message", [
    ("zero count", "state_counts: entry"),
    ("count too big", "state_counts: entry"),
    ("label out of range", "state_labels: entry"),
    ("labels unsorted", "increasing"),
    ("one label more", "state_labels:"),
    ("count entries", "state_counts:"),
    ("bad states entry", "unexpected member 'state_counts'"),
])
def test_tampered_state_arrays_are_refused(tmp_path, what, message):
    X, y = corpus()
    m = fit(X, y, algorithm="lbfgs", rho2=1.0)
    m.save(tmp_path / "m.crf")
    L = len(m.classes_)

    def change(a, meta):
        c, lab = a["state_counts"], a["state_labels"]
        multi = int(np.flatnonzero(c >= 2)[0])
        start = int(c[:multi].sum())
        if what == "zero count":
            c[0] = 0
        elif what == "count too big":
            c[0] = L + 1
        elif what == "label out of range":
            lab[0] = L
        elif what == "labels unsorted":
            lab[start], lab[start + 1] = lab[start + 1], lab[start]
        elif what == "one label more":
            a["state_labels"] = np.append(lab, np.int32(0))
        elif what == "count entries":
            a["state_counts"] = c[:-1]
        elif what == "bad states entry":
            meta["states"] = "all"

    with pytest.raises(ModelError, match=message):
        CRF.load(rewritten(tmp_path, tmp_path / "m.crf", change))


def test_refusals():
    X, y = corpus()
    with pytest.raises(ValueError, match="grow with seen states"):
        CRF(patterns=PATTERNS, all_possible_states=False).grow(X, y)


def test_the_budget_counts_seen_states():
    """With many labels the dense layout passes max_features where seen states do not."""
    X, y = random_corpus(np.random.default_rng(0), 40, 5, 30, vocab=50)
    n = CRF(patterns=PATTERNS, all_possible_states=False, algorithm="lbfgs", max_iter=3).fit(X, y).n_features_
    dense = FeatureSpace.build(parse_patterns("\n".join(PATTERNS) + "\n"), X, y)[0].n_params
    assert n < dense
    m = CRF(patterns=PATTERNS, all_possible_states=False, algorithm="lbfgs", max_iter=3, max_features=dense - 1)
    m.fit(X, y)
    from crf.budget import TooManyFeatures

    with pytest.raises(TooManyFeatures):
        CRF(patterns=PATTERNS, algorithm="lbfgs", max_iter=3, max_features=dense - 1).fit(X, y)


def test_cli_states_seen(tmp_path):
    from click.testing import CliRunner

    from suffixlm.cli import main

    X, y = corpus()
    train = tmp_path / "train.txt"
    train.write_text("\n\n".join("\n".join(" ".join(x + [lab]) for x, lab in zip(xs, ys))
                                 for xs, ys in zip(X, y)) + "\n")
    pat = tmp_path / "p.pat"
    pat.write_text("\n".join(PATTERNS) + "\n")
    r = CliRunner().invoke(main, ["crf", "train", "-q", "-p", str(pat), "--states", "seen", "-a", "lbfgs",
                                  str(train), str(tmp_path / "m.crf")])
    assert r.exit_code == 0, r.output
    assert CRF.load(tmp_path / "m.crf").space_.seen_states
    r = CliRunner().invoke(main, ["crf", "train", "-q", "-p", str(pat), "--states", "seen", "--grow",
                                  str(train), str(tmp_path / "g.crf")])
    assert r.exit_code != 0 and "not supported with --grow" in r.output
    assert not (tmp_path / "g.crf").exists()
    r = CliRunner().invoke(main, ["crf", "dump", str(tmp_path / "m.crf")])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, ["crf", "train", "-q", "-p", str(pat), "--transitions", "seen", "--min-freq", "2",
                                  "-a", "lbfgs", str(train), str(tmp_path / "t.crf")])
    assert r.exit_code == 0, r.output
    m = CRF.load(tmp_path / "t.crf")
    pairs = {}
    for ys in y:
        for a, b in zip(ys, ys[1:]):
            pairs[a, b] = pairs.get((a, b), 0) + 1
    assert m.space_.seen_states and set(m.transition_features_) <= {k for k, c in pairs.items() if c >= 2}
    r = CliRunner().invoke(main, ["crf", "train", "-q", "-p", str(pat), "--transitions", "seen", "-a", "sag",
                                  str(train), str(tmp_path / "s.crf")])
    assert r.exit_code != 0 and "gradient-based" in r.output and not (tmp_path / "s.crf").exists()


@pytest.mark.parametrize("alg", ["owlqn", "lbfgs", "fista"])
def test_transitions_not_generated_stay_zero(alg):
    """all_possible_transitions=False: the label pairs that never follow in training keep a
    zero weight in every bigram block (CRFsuite has no feature for them); min_freq drops the
    rarer states and pairs too."""
    X, y = corpus()
    y = [[("L0" if lab == "L3" and i and ys[i - 1] == "L1" else lab) for i, lab in enumerate(ys)] for ys in y]
    pairs = {(a, b) for ys in y for a, b in zip(ys, ys[1:])}
    m = CRF(patterns=PATTERNS, algorithm=alg, rho2=0.5, max_iter=50, all_possible_transitions=False,
            **({"rho1": 0.0} if alg != "lbfgs" else {})).fit(X, y)
    assert ("L1", "L3") not in pairs and m.transition_features_
    assert set(m.transition_features_) <= pairs
    sp, L = m.space_, len(m.classes_)
    lab = sp.labels
    for o in range(sp.n_bigram_obs):
        block = m.theta_[sp.bigram_start + o * L * L: sp.bigram_start + (o + 1) * L * L]
        for k in np.flatnonzero(block):
            assert (lab[k // L], lab[k % L]) in pairs
    counts = {}
    for ys in y:
        for a, b in zip(ys, ys[1:]):
            counts[a, b] = counts.get((a, b), 0) + 1
    m2 = CRF(patterns=PATTERNS, algorithm=alg, rho2=0.5, max_iter=50, min_freq=3,
             **({"rho1": 0.0} if alg != "lbfgs" else {})).fit(X, y)
    assert set(m2.transition_features_) <= {k for k, c in counts.items() if c >= 3}
    assert m2.space_.seen_states and m2.space_.bigram_start < m.space_.bigram_start
    with pytest.raises(ValueError, match="gradient-based"):
        CRF(patterns=PATTERNS, algorithm="sag", all_possible_transitions=False).fit(X, y)


def test_per_sequence_solvers_when_a_gold_label_has_no_weight():
    """Real values summing below 0 leave a token's gold label without a weight in that
    observation's block (CRFsuite's rule): SAG and BCD still reach the optimum of L-BFGS /
    OWL-QN, the others train."""
    X, y = toy(4, n_seq=30, real=True)
    model = CRF(algorithm="lbfgs", rho2=0.5, all_possible_states=False, max_iter=500, stopeps=0.0, stopwin=0)
    model.fit(X, y)
    from crf import dicts

    dense, data = dicts.build(X, y, "X")
    space = dense.restrict_states(data)
    assert space.bigram_start < len({(a, lab) for xs, ys in zip(X, y) for x, lab in zip(xs, ys)
                                      for a in item_attributes(x)[0]})  # some pairs dropped

    def f(m, rho1, rho2):
        d = dicts.encode(m.space_, X, y)
        return Objective(m.space_, d).value_and_gradient(m.theta_)[0] + rho1 * np.abs(m.theta_).sum() \
            + 0.5 * rho2 * m.theta_ @ m.theta_

    f2 = f(model, 0.0, 0.5)
    sag = CRF(algorithm="sag", rho2=0.5, all_possible_states=False, max_iter=300, stopeps=0.0, stopwin=0).fit(X, y)
    assert f(sag, 0.0, 0.5) == pytest.approx(f2, rel=1e-4)
    f1 = f(CRF(algorithm="owlqn", rho1=0.2, rho2=0.5, all_possible_states=False, max_iter=500, stopeps=0.0,
               stopwin=0).fit(X, y), 0.2, 0.5)
    bcd = CRF(algorithm="bcd", rho1=0.2, rho2=0.5, all_possible_states=False, max_iter=300, stopeps=0.0,
              stopwin=0).fit(X, y)
    assert f(bcd, 0.2, 0.5) == pytest.approx(f1, rel=2e-3)
    for alg in ("sgd-l1", "l2sgd", "perceptron", "pa", "arow"):
        m = CRF(algorithm=alg, all_possible_states=False, max_iter=10).fit(X, y)
        assert m.space_.seen_states and np.isfinite(m.theta_).all(), alg
