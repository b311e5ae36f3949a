"""Second-order CRFs and forbidden label pairs (crf._order2_kernels, crf.transitions):
every quantity checked against enumeration of all labelings, the gradient against finite
differences, and the pair-state kernels without trigram features against the first-order ones."""

import itertools

import numba
import numpy as np
import pytest

from crf import CRF
from crf.features import FeatureSpace
from crf.inference import Objective, forward_backward_marginals, nbest, pair_marginals, viterbi
from crf.model import ModelError
from crf.patterns import parse_patterns
from crf.transitions import PairStructure, allowed_pairs, seen_pairs

from .crf_testutil import random_corpus

# unigram, '*' (unigram + bigram), a pure bigram, the pure triple and an observation triple
PATTERNS2 = ["u:a=%x[0,0]", "*:d=%x[1,0]", "B", "T", "t:e=%x[0,1]"]


def _val(seq, i, c):
    T = len(seq)
    if i < 0:
        return f"_x{i}"
    if i >= T:
        return f"_x+{i - T + 1}"
    return seq[i][c]


def _observations(seq, t, patterns):
    """(unigram, bigram, trigram) observation strings of ``patterns`` at t, by hand."""
    u, b, tr = [], [], []
    for p in patterns:
        if p == "B":
            b.append("B")
        elif p == "T":
            tr.append("T")
        elif p == "u:a=%x[0,0]":
            u.append(f"u:a={_val(seq, t, 0)}")
        elif p == "*:d=%x[1,0]":
            u.append(f"*:d={_val(seq, t + 1, 0)}")
            b.append(f"*:d={_val(seq, t + 1, 0)}")
        elif p == "t:e=%x[0,1]":
            tr.append(f"t:e={_val(seq, t, 1)}")
        elif p == "b:c=%x[0,1]":
            b.append(f"b:c={_val(seq, t, 1)}")
        else:
            raise AssertionError(p)
    return u, b, tr


def _enumerate(space, theta, seq, patterns, allowed):
    """Every labelling of seq that uses allowed pairs only, with its score, from the
    weights as :meth:`FeatureSpace.describe` names them (independent of the kernels)."""
    L = space.n_labels
    w = {}
    for obs, prev, lab, v in space.describe(theta):
        w[(obs, prev, lab)] = v
    lab = space.labels
    obs = [_observations(seq, t, patterns) for t in range(len(seq))]
    out = []
    for ys in itertools.product(range(L), repeat=len(seq)):
        if any(not allowed[ys[t - 1] * L + ys[t]] for t in range(1, len(ys))):
            continue
        sc = 0.0
        for t, y in enumerate(ys):
            u, b, tr = obs[t]
            sc += sum(w.get((o, None, lab[y]), 0.0) for o in u)
            if t > 0:
                sc += sum(w.get((o, lab[ys[t - 1]], lab[y]), 0.0) for o in b)
            if t > 1:
                sc += sum(w.get((o, (lab[ys[t - 2]], lab[ys[t - 1]]), lab[y]), 0.0) for o in tr)
        out.append((ys, sc))
    return out


def _problem(seed, patterns, forbid, n_seq=5, max_len=5, L=3):
    rng = np.random.default_rng(seed)
    X, y = random_corpus(rng, n_seq, max_len, L)
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns) + "\n"), X, y)
    if forbid == "one":  # forbid the first pair the training labels do not use, as a list
        k = int(np.flatnonzero(~seen_pairs(data.labels, data.seq_offsets, space.n_labels))[0])
        forbid = [(space.labels[k // space.n_labels], space.labels[k % space.n_labels])]
    space.set_allowed(allowed_pairs(forbid, space.labels, data.labels, data.seq_offsets))
    theta = rng.normal(scale=0.7, size=space.n_params)
    return X, space, data, theta


CASES = [(PATTERNS2, "none"), (PATTERNS2, "unseen"), (["u:a=%x[0,0]", "B", "T"], "unseen"),
         (["u:a=%x[0,0]", "t:e=%x[0,1]"], "none"), (["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], "unseen"),
         (["u:a=%x[0,0]", "T"], "one")]


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("patterns,forbid", CASES)
def test_everything_matches_enumeration(seed, patterns, forbid):
    X, space, data, theta = _problem(seed, patterns, forbid)
    assert space.pairwise
    L = space.n_labels
    allowed = np.ones(L * L, bool) if space.allowed is None else space.allowed
    loss, g = Objective(space, data).value_and_gradient(theta)
    marg, logz = forward_backward_marginals(theta, space, data)
    pm = pair_marginals(theta, space, data)
    best, best_score = viterbi(theta, space, data)
    N = 4
    paths, scores = nbest(theta, space, data, N)
    total = 0.0
    off = data.seq_offsets
    for i, seq in enumerate(X):
        s, e = off[i], off[i + 1]
        ys, sc = zip(*_enumerate(space, theta, seq, patterns, allowed))
        sc = np.array(sc)
        z = float(np.logaddexp.reduce(sc))
        assert logz[i] == pytest.approx(z, abs=1e-10)
        gold = tuple(data.labels[s:e])
        total += z - sc[ys.index(gold)]
        p = np.exp(sc - z)
        for t in range(e - s):
            for c in range(L):
                assert marg[s + t, c] == pytest.approx(sum(pk for y_, pk in zip(ys, p) if y_[t] == c), abs=1e-10)
            for k in range(L * L):
                want = 0.0 if t == 0 else sum(pk for y_, pk in zip(ys, p) if y_[t - 1] * L + y_[t] == k)
                assert pm[s + t, k] == pytest.approx(want, abs=1e-10)
        order = np.argsort(-sc, kind="stable")
        assert tuple(best[s:e]) == ys[order[0]]
        assert best_score[i] == pytest.approx(sc[order[0]], abs=1e-10)
        for n in range(N):
            if n < len(ys):
                assert scores[i, n] == pytest.approx(sc[order[n]], abs=1e-10)
                assert sc[ys.index(tuple(paths[s:e, n]))] == pytest.approx(scores[i, n], abs=1e-10)
            else:
                assert scores[i, n] == -np.inf
    assert loss == pytest.approx(total, rel=1e-12)

    def f(th):
        return Objective(space, data).value_and_gradient(th)[0]

    eps = 1e-6
    rng = np.random.default_rng(seed)
    for k in rng.choice(space.n_params, size=min(40, space.n_params), replace=False):
        d = np.zeros_like(theta)
        d[k] = eps
        assert g[k] == pytest.approx((f(theta + d) - f(theta - d)) / (2 * eps), abs=2e-6)


@pytest.mark.parametrize("patterns", [["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], ["u:a=%x[0,0]", "b:c=%x[0,1]"],
                                      ["u:a=%x[0,0]"]])
def test_pair_states_without_triples_are_the_first_order_model(patterns):
    """Every pair allowed and no trigram pattern: the pair-state kernels give the first-order
    kernels' loss, gradient, marginals and paths."""
    rng = np.random.default_rng(7)
    X, y = random_corpus(rng, 30, 9, 4)
    space, data = FeatureSpace.build(parse_patterns("\n".join(patterns) + "\n"), X, y)
    theta = rng.normal(size=space.n_params)
    first = (Objective(space, data).value_and_gradient(theta)[0],
             Objective(space, data).value_and_gradient(theta)[1].copy(),
             forward_backward_marginals(theta, space, data)[0], viterbi(theta, space, data),
             nbest(theta, space, data, 3))
    space.set_allowed(np.ones(space.n_labels ** 2, dtype=bool))
    assert space.pairwise and space.order == 1
    obj = Objective(space, data)
    assert obj.pairwise
    loss, g = obj.value_and_gradient(theta)
    assert loss == pytest.approx(first[0], rel=1e-12)
    np.testing.assert_allclose(g, first[1], rtol=1e-9, atol=1e-10)
    np.testing.assert_allclose(forward_backward_marginals(theta, space, data)[0], first[2], atol=1e-12)
    best, sc = viterbi(theta, space, data)
    np.testing.assert_array_equal(best, first[3][0])
    np.testing.assert_allclose(sc, first[3][1], rtol=1e-12)
    paths, scores = nbest(theta, space, data, 3)
    np.testing.assert_allclose(scores, first[4][1], rtol=1e-12)


def test_gradient_is_the_same_bits_for_any_thread_count():
    X, space, data, theta = _problem(3, PATTERNS2, "unseen", n_seq=40, max_len=12)
    old = numba.get_num_threads()
    try:
        got = []
        for n in sorted({1, min(2, numba.config.NUMBA_NUM_THREADS)}):
            numba.set_num_threads(n)
            loss, g = Objective(space, data, batch_bytes=4096).value_and_gradient(theta)
            got.append((loss, g.copy()))
    finally:
        numba.set_num_threads(old)
    assert got[0][0] == got[-1][0]
    assert np.array_equal(got[0][1], got[-1][1])


def test_pair_structure_lists_the_transitions():
    L = 3
    allowed = np.ones(L * L, dtype=bool)
    allowed[2 * L + 1] = False  # "2 1" forbidden
    st = PairStructure(L, allowed)
    assert st.n_pairs == 8
    triples = set()
    for j, k in enumerate(st.pairs):
        for q in range(st.pred_ptr[j], st.pred_ptr[j + 1]):
            prev = st.pairs[st.pred_j[q]]
            assert prev % L == k // L
            assert st.pred_r[q] == prev * L + k % L
            triples.add((prev // L, prev % L, k % L))
    want = {(a, b, c) for a, b, c in itertools.product(range(L), repeat=3) if allowed[a * L + b] and allowed[b * L + c]}
    assert triples == want and st.n3 == len(want)
    with pytest.raises(ValueError, match="no label pair"):
        PairStructure(2, np.zeros(4, dtype=bool))


def test_seen_pairs_skip_sequence_boundaries():
    labels = np.array([0, 1, 2, 0, 0])
    offsets = np.array([0, 3, 3, 5])
    got = seen_pairs(labels, offsets, 3).reshape(3, 3)
    assert got[0, 1] and got[1, 2] and got[0, 0]
    assert not got[2, 0]  # 2 ends a sequence, 0 starts the next
    assert got.sum() == 3


# ---------------------------------------------------------------------- the estimator

IOB = """He PRP B-NP
reckons VBZ O
the DT B-NP
current JJ I-NP
account NN I-NP
. . O

Chancellor NNP B-NP
of IN O
the DT B-NP
Exchequer NNP I-NP

He PRP B-NP
sells VBZ O
the DT B-NP
deficit NN I-NP
"""


def _iob():
    seqs = [[line.split() for line in block.splitlines()] for block in IOB.strip().split("\n\n")]
    return [[r[:2] for r in s] for s in seqs], [[r[2] for r in s] for s in seqs]


PATS = ["*:w=%x[0,0]", "*:p=%x[0,1]", "u:p-1=%x[-1,1]"]


def test_order2_fits_predicts_and_round_trips(tmp_path):
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, rho1=0.0, rho2=0.1, algorithm="lbfgs").fit(X, y)
    assert m.space_.order == 2 and m.space_.allowed is not None
    assert "T" in m.pattern_text_.split()
    assert m.predict(X) == y
    # "O I-NP" never occurs in training: never predicted, even where it scores best
    assert not m.space_.allowed[m.space_.label_index["O"] * 3 + m.space_.label_index["I-NP"]]
    triples = [k for k in m.transition_features_ if len(k) == 3]
    assert triples and all(set(k) <= set(m.classes_) for k in triples)
    path = tmp_path / "m.crf"
    m.save(path)
    m2 = CRF.load(path)
    assert m2.predict(X) == y
    np.testing.assert_array_equal(m2.space_.allowed, m.space_.allowed)
    assert m.predict_nbest(X, 3) == m2.predict_nbest(X, 3)
    assert all(len(nb) == 3 and nb[0][0] == gold for nb, gold in zip(m2.predict_nbest(X, 3), y))
    marg = m2.predict_marginals(X)
    assert all(abs(sum(d.values()) - 1) < 1e-9 for s in marg for d in s)
    pm = m2.predict_pair_marginals(X)
    assert [len(s) for s in pm] == [len(s) for s in X] and all(s[0] == {} for s in pm)
    for seq_p, seq_m in zip(pm, marg):
        for t in range(1, len(seq_p)):
            assert abs(sum(seq_p[t].values()) - 1) < 1e-9
            assert ("O", "I-NP") not in seq_p[t]
            for lab, p in seq_m[t].items():  # the pairs ending in a label sum to its marginal
                assert abs(sum(v for (a, b), v in seq_p[t].items() if b == lab) - p) < 1e-9


def test_forced_labels_at_order2():
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, rho1=0.0, rho2=0.1, algorithm="lbfgs").fit(X, y)
    forced = [[None, "B-NP", None, None, None, None], None, None]
    got = m.predict(X, forced=forced)
    assert got[0][1] == "B-NP"
    # forcing I-NP right after O, a forbidden pair: no labelling agrees
    with pytest.raises(ValueError, match="no labelling agrees"):
        m.predict(X[:1], forced=[[None, "O", "I-NP", None, None, None]])


def test_forbid_file_and_list(tmp_path):
    X, y = _iob()
    f = tmp_path / "forbid.txt"
    f.write_text("# IOB\nO I-NP\n", encoding="utf-8")
    a = CRF(patterns=PATS, forbid=str(f), rho1=0.0, algorithm="lbfgs").fit(X, y)
    b = CRF(patterns=PATS, forbid=[("O", "I-NP")], rho1=0.0, algorithm="lbfgs").fit(X, y)
    assert a.space_.order == 1 and a.space_.allowed.sum() == 8
    np.testing.assert_allclose(a.theta_, b.theta_)
    with pytest.raises(ValueError, match="forbidden pair B-NP I-NP"):
        CRF(patterns=PATS, forbid=[("B-NP", "I-NP")], rho1=0.0, algorithm="lbfgs").fit(X, y)
    f.write_text("O I-NP extra\n", encoding="utf-8")
    with pytest.raises(ValueError, match="two labels"):
        CRF(patterns=PATS, forbid=str(f), rho1=0.0, algorithm="lbfgs").fit(X, y)


def test_bad_order_parameters():
    X, y = _iob()
    with pytest.raises(ValueError, match="order must be"):
        CRF(patterns=PATS, order=3).fit(X, y)
    with pytest.raises(ValueError, match="second-order"):
        CRF(patterns=PATS + ["T"], order=1).fit(X, y)
    with pytest.raises(ValueError, match="forbid must be"):
        CRF(patterns=PATS, forbid="nonexistent-file").fit(X, y)


def test_tampered_allowed_pairs_are_refused(tmp_path):
    import json

    from suffixlm.io import load_container, save_container

    from crf.modelfile import CONTAINER_SPEC, FORMAT_NAME, FORMAT_VERSION, digest

    X, y = _iob()
    path = tmp_path / "m.crf"
    CRF(patterns=PATS, order=2, rho1=0.0, algorithm="lbfgs").fit(X, y).save(path)
    arrays, meta = load_container(path, FORMAT_NAME, (FORMAT_VERSION,), CONTAINER_SPEC, meta_key="meta")
    for bad, msg in ((["B-NP", "nope"], "not a pair"), ("x", "not a pair"), (meta["allowed_pairs"][0], "twice")):
        m = json.loads(json.dumps(meta))
        m["allowed_pairs"] = m["allowed_pairs"] + [bad]
        m = {k: v for k, v in m.items() if k not in ("format", "version", "sha256")}
        m["sha256"] = digest({"format": FORMAT_NAME, "version": FORMAT_VERSION, **m}, arrays)
        out = tmp_path / "bad.crf"
        save_container(out, arrays, m, FORMAT_NAME, FORMAT_VERSION, meta_key="meta")
        with pytest.raises(ModelError, match=msg):
            CRF.load(out)


def test_cli_order2_train_label_dump(tmp_path):
    from click.testing import CliRunner

    from suffixlm.cli import main

    X, y = _iob()
    train = tmp_path / "train.txt"
    train.write_text(IOB, encoding="utf-8")
    pat = tmp_path / "p.pat"
    pat.write_text("\n".join(PATS) + "\n", encoding="utf-8")
    model = tmp_path / "m.crf"
    r = CliRunner().invoke(main, ["crf", "train", "-q", "--order", "2", "-a", "lbfgs", "--rho1", "0", "-p", str(pat),
                                  str(train), str(model)])
    assert r.exit_code == 0, r.output
    out = tmp_path / "out.txt"
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(model), str(train), str(out)])
    assert r.exit_code == 0, r.output
    assert [ln.split()[-1] for ln in out.read_text().split("\n") if ln.strip()] == [lab for s in y for lab in s]
    dump = tmp_path / "dump.txt"
    r = CliRunner().invoke(main, ["crf", "dump", str(model), str(dump)])
    assert r.exit_code == 0, r.output
    rows = [ln.split("\t") for ln in dump.read_text().splitlines()]
    assert any(row[0] == "T" and len(row[1].split()) == 2 for row in rows)
    r = CliRunner().invoke(main, ["crf", "train", "-q", "--forbid", str(tmp_path / "missing"), "-p", str(pat),
                                  str(train), str(tmp_path / "m2.crf")])
    assert r.exit_code != 0 and "forbid" in r.output
    # --grow and --init at order 2
    pat2 = tmp_path / "q.pat"
    pat2.write_text("u:w-1=%x[-1,0]\n", encoding="utf-8")
    r = CliRunner().invoke(main, ["crf", "train", "-q", "--order", "2", "--grow", "-p", str(pat), "-p", str(pat2),
                                  str(train), str(tmp_path / "g.crf")])
    assert r.exit_code == 0, r.output
    assert CRF.load(tmp_path / "g.crf").space_.order == 2
    r = CliRunner().invoke(main, ["crf", "train", "-q", "--init", str(model), "-p", str(pat2), str(train),
                                  str(tmp_path / "i.crf")])
    assert r.exit_code == 0, r.output
    grown = CRF.load(tmp_path / "i.crf")
    assert grown.space_.order == 2 and grown.predict(X) == y


def test_perceptron_at_order2_replays_by_enumeration():
    """The perceptron's epochs on pair states against a replay with Viterbi by enumeration
    and the updates written out feature by feature."""
    from crf.train import _perceptron_kernels as PK

    X, space, data, _ = _problem(5, PATTERNS2, "unseen", n_seq=6, max_len=5)
    L = space.n_labels
    allowed = space.allowed
    n = space.n_params
    w, wa = np.zeros(n), np.zeros(n)
    rw, rwa = np.zeros(n), np.zeros(n)
    off = data.seq_offsets

    def feats(i, ys):
        s = off[i]
        out = []
        for t, y in enumerate(ys):
            out += [b + y for b in data.unigram_base[s + t] if b >= 0]
            if t > 0:
                out += [b + ys[t - 1] * L + y for b in data.bigram_base[s + t] if b >= 0]
            if t > 1:
                out += [b + (ys[t - 2] * L + ys[t - 1]) * L + y for b in data.trigram_base[s + t] if b >= 0]
        return out

    c = 0.0
    rng = np.random.default_rng(0)
    for epoch in range(3):
        order = rng.permutation(data.n_sequences).astype(np.int64)
        PK.perceptron_epoch2(w, wa, order, data.seq_offsets, data.unigram_base, data.unigram_value, data.unigram_states,
                             data.bigram_base, data.trigram_base, data.labels, np.int64(L), *space.structure.args(), c)
        for i in order:
            c += 1.0
            T = off[i + 1] - off[i]
            cands = [ys for ys in itertools.product(range(L), repeat=T)
                     if all(allowed[ys[t - 1] * L + ys[t]] for t in range(1, T))]
            scores = [sum(rw[f] for f in feats(i, ys)) for ys in cands]
            best = cands[int(np.argmax(scores))]
            gold = tuple(data.labels[off[i]: off[i + 1]])
            if best != gold:
                for f in feats(i, gold):
                    rw[f] += 1.0
                    rwa[f] += c
                for f in feats(i, best):
                    rw[f] -= 1.0
                    rwa[f] -= c
        np.testing.assert_allclose(w, rw, atol=1e-12)
        np.testing.assert_allclose(wa, rwa, atol=1e-9)
    assert np.count_nonzero(w)


def test_order2_perceptron_fits():
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, algorithm="perceptron").fit(X, y)
    assert m.predict(X) == y


def test_grow_at_order2():
    """grow trains second-order rounds: order=2 adds T to round 0, a grown second-order
    model stays of second order with its forbidden pairs, and its weights carry over."""
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, algorithm="lbfgs", rho1=0.0, rho2=0.1).grow(X, y, rounds=[PATS[:1], PATS[1:]])
    assert m.space_.order == 2 and [g.round for g in m.growth_log_] == [0, 1]
    assert np.array_equal(m.space_.allowed, seen_pairs(m.space_.encode(X, y).labels,
                                                         m.space_.encode(X, y).seq_offsets, m.space_.n_labels))
    assert any(len(k) == 3 for k in m.transition_features_) and m.predict(X) == y
    # a loaded model of order 1 with forbidden pairs grows at order 1 and keeps them
    lab = sorted({t for s in y for t in s})
    m1 = CRF(patterns=PATS[:1], forbid=[(lab[0], lab[0])], algorithm="lbfgs", rho1=0.0, rho2=0.1).fit(X, y)
    k = m1.space_.label_index[lab[0]] * (m1.space_.n_labels + 1)
    m1.grow(X, y, rounds=[PATS[1:]])
    assert m1.space_.order == 1 and m1.space_.pairwise and not m1.space_.allowed[k]
    # no iteration in the new round: the trigram weights are the previous round's
    m2 = CRF(patterns=PATS[:1], order=2, algorithm="lbfgs", rho1=0.0, rho2=0.1).fit(X, y)
    before = {k_: v for k_, v in m2.transition_features_.items() if len(k_) == 3}
    m2.set_params(max_iter=0)
    m2.grow(X, y, rounds=[PATS[1:]])
    after = {k_: v for k_, v in m2.transition_features_.items() if len(k_) == 3}
    assert before and after == before
    with pytest.raises(ValueError, match="second-order"):
        CRF(patterns=PATS + ["T"], order=1).grow(X, y)


def _one_sequence(data, i):
    from crf.features import EncodedCorpus

    s, e = int(data.seq_offsets[i]), int(data.seq_offsets[i + 1])
    return EncodedCorpus(np.array([0, e - s]), data.unigram_base[s:e].copy(), data.bigram_base[s:e].copy(),
                         data.labels[s:e].copy(), trigram_base=data.trigram_base[s:e].copy())


@pytest.mark.parametrize("patterns,forbid", [(PATTERNS2, "unseen"), (["u:a=%x[0,0]", "B"], "one")])
def test_sgd_at_order2_replays_plain_steps(patterns, forbid):
    """Without penalties an SGD-l1 epoch on pair states is w -= eta grad_i(w) over the
    sequences in order, each gradient that of the (enumeration-checked) objective."""
    from crf.train import _sequence_kernels as SQ
    from crf.train import _sgd_kernels as GK

    X, space, data, _ = _problem(11, patterns, forbid, n_seq=8, max_len=6)
    st = space.structure
    n = space.n_params
    rng = np.random.default_rng(2)
    w = rng.normal(scale=0.3, size=n)
    ref = w.copy()
    order = rng.permutation(data.n_sequences).astype(np.int64)
    etas = np.linspace(0.5, 0.2, len(order))
    blk_ptr, blocks = SQ.sequence_blocks2(data.seq_offsets, data.unigram_base, data.bigram_base, data.trigram_base)
    total = GK.sgd_l1_epoch2(w, np.zeros(n), np.zeros(1), np.zeros(n), order, etas, data.seq_offsets,
                             data.unigram_base, data.unigram_value, data.unigram_states, data.bigram_base,
                             data.trigram_base, data.labels, blk_ptr, blocks, np.int64(space.n_labels), np.int64(space.bigram_start),
                             np.int64(space.trigram_start), st.pairs, st.pair_pos, st.pred_ptr, st.pred_j, st.pred_r,
                             0.0, 0.0, np.zeros(2))
    want = 0.0
    for i, eta in zip(order, etas):
        loss, g = Objective(space, _one_sequence(data, i)).value_and_gradient(ref)
        want += loss
        touched = np.flatnonzero(g)
        blk = set(blocks[blk_ptr[i]: blk_ptr[i + 1]].tolist())
        sizes = {b: (space.n_labels ** 3 if b >= space.trigram_start else space.n_labels ** 2
                     if b >= space.bigram_start else space.n_labels) for b in blk}
        assert all(any(b <= k < b + sz for b, sz in sizes.items()) for k in touched)
        ref -= eta * g
    assert total == pytest.approx(want, rel=1e-12)
    np.testing.assert_allclose(w, ref, rtol=1e-12, atol=1e-12)


def test_order2_sgd_fits():
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, algorithm="sgd-l1", rho1=0.01).fit(X, y)
    assert m.predict(X) == y


@pytest.mark.parametrize("nus", [False, True])
@pytest.mark.parametrize("patterns,forbid", [(PATTERNS2, "unseen"), (["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], "one")])
def test_sag_at_order2_reaches_the_lbfgs_optimum(patterns, forbid, nus):
    """SAG / SAG-NUS* on pair states converge to the optimum of the (enumeration-checked)
    objective, and the gradient sum they keep from the stored tag, pair and triple
    marginals is the sum of the per-sequence gradients at the weights of each one's
    last visit (checked at the end, when every sequence was visited at the optimum)."""
    from crf.train import lbfgs
    from crf.train.sag import sag, sag_memory

    X, space, data, _ = _problem(9, patterns, forbid, n_seq=12, max_len=6)  # seed 9: a pair unseen
    assert space.pairwise and (forbid != "one" or not space.allowed.all())
    obj = Objective(space, data)
    rho2 = 1.0
    ref = lbfgs(obj.value_and_gradient, np.zeros(space.n_params), rho2=rho2, max_iter=2000, gtol=1e-10)
    res = sag(space, data, rho2=rho2, nus=nus, max_iter=400, tol=1e-8)
    assert res.reason == "gradient tolerance"
    loss, _ = obj.value_and_gradient(res.x)
    assert loss + 0.5 * rho2 * res.x @ res.x == pytest.approx(ref.objective, rel=1e-8)
    np.testing.assert_allclose(res.x, ref.x, atol=1e-5)
    assert res.objective == pytest.approx(ref.objective, rel=1e-6)
    assert res.gradient_evaluations == res.n_iter * data.n_sequences
    mem = sag_memory(space, data)
    off, tb = data.seq_offsets, data.trigram_base
    rows = sum(len({int(b) for b in tb[off[i] + 2:off[i + 1]].ravel() if b >= 0}) for i in range(data.n_sequences))
    assert mem["n_triple_rows"] == rows and (rows > data.n_sequences) == ("T" in patterns)
    assert mem["triple_marginals"] == rows * space.structure.n3 * 8


def test_sag_at_order2_fits():
    X, y = _iob()
    for algorithm in ("sag", "sag-nus"):
        m = CRF(patterns=PATS, order=2, algorithm=algorithm, rho1=0.0, rho2=0.01).fit(X, y)
        assert m.predict(X) == y


@pytest.mark.parametrize("rho1,rho2", [(0.3, 0.1), (0.0, 1.0)])
@pytest.mark.parametrize("patterns,forbid", [(PATTERNS2, "unseen"), (["u:a=%x[0,0]", "*:d=%x[1,0]", "B"], "one")])
def test_bcd_at_order2_reaches_the_owlqn_optimum(patterns, forbid, rho1, rho2):
    """BCD on pair states (blocks with their allowed pair and triple weights) reaches the
    optimum of the enumeration-checked objective, every pass a descent, and keeps every
    weight of a forbidden pair or triple at zero."""
    from crf.train import owlqn
    from crf.train.bcd import bcd

    X, space, data, _ = _problem(9, patterns, forbid, n_seq=12, max_len=6)
    assert space.pairwise and (forbid != "one" or not space.allowed.all())
    obj = Objective(space, data)
    ref = owlqn(obj.value_and_gradient, np.zeros(space.n_params), rho1=rho1, rho2=rho2, max_iter=3000, gtol=1e-10)
    res = bcd(space, data, rho1=rho1, rho2=rho2, max_iter=400, tol=1e-13)
    loss, _ = obj.value_and_gradient(res.x)
    f = loss + rho1 * np.abs(res.x).sum() + 0.5 * rho2 * res.x @ res.x
    assert res.objective == pytest.approx(f, rel=1e-12)
    assert f == pytest.approx(ref.objective, rel=1e-6)
    np.testing.assert_allclose(res.x, ref.x, atol=3e-3)
    objs = [i.objective for i in res.history]
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(objs, objs[1:]))
    # weights no allowed pair or triple reaches stay zero
    L = space.n_labels
    st = space.structure
    live = np.zeros(space.n_params, dtype=bool)
    live[:space.bigram_start] = True
    for b in range(space.bigram_start, space.trigram_start, L * L):
        live[b + st.pairs] = True
    for b in range(space.trigram_start, space.n_params, L ** 3):
        live[b + st.pred_r] = True
    assert not res.x[~live].any() and np.count_nonzero(res.x) > 0


def test_bcd_at_order2_fits():
    X, y = _iob()
    m = CRF(patterns=PATS, order=2, algorithm="bcd", rho1=0.01).fit(X, y)
    assert m.predict(X) == y
