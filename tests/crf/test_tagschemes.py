"""CRFs trained on IOBES tags that read and write IOB2 (``CRF(tags="iobes")``,
``crf.tagschemes``): the rewriting against a hand-made example and its inverse on random
sequences, the labellings, marginals, pair marginals, n-best and sequence probabilities
against enumeration of every tag sequence, model files, the command line and refusals."""

import itertools

import numpy as np
import pytest

from crf import CRF
from crf.tagschemes import check_tags, output_labels, to_iob2, to_iobes

from .crf_testutil import PATTERNS, enumerate_sequences, logsumexp
from .test_model_file_tampering import assert_refused, rewritten


def _random_iob2(rng, n_seq, max_len, types=("NP", "VP")):
    """Random IOB2 label sequences and 2-column token rows (word, tag)."""
    X, y = [], []
    for _ in range(n_seq):
        seq, prev = [], "O"
        for _ in range(int(rng.integers(1, max_len + 1))):
            r = rng.random()
            if r < 0.3:
                tag = "O"
            elif prev != "O" and r < 0.65:
                tag = "I-" + prev[2:]
            else:
                tag = "B-" + types[int(rng.integers(len(types)))]
            seq.append(tag)
            prev = tag
        y.append(seq)
        X.append([[f"w{rng.integers(4)}", f"p{rng.integers(2)}"] for _ in seq])
    return X, y


def test_rewriting_by_hand_and_back():
    iob2 = ["B-NP", "I-NP", "I-NP", "B-NP", "O", "B-VP", "B-VP", "I-VP", "O", "B-NP"]
    iobes = ["B-NP", "I-NP", "E-NP", "S-NP", "O", "S-VP", "B-VP", "E-VP", "O", "S-NP"]
    assert to_iobes(iob2) == iobes
    assert [to_iob2(t) for t in iobes] == iob2
    assert to_iobes([]) == []
    assert output_labels(["S-NP", "O", "B-NP", "E-NP", "I-NP"]) == ["B-NP", "O", "I-NP"]
    # a tag of no IOBES prefix is its own label
    assert to_iob2("O") == "O" and to_iob2("X-NP") == "X-NP" and to_iob2("NP") == "NP"


def test_rewriting_inverts_on_random_sequences():
    rng = np.random.default_rng(0)
    _, y = _random_iob2(rng, 300, 12, ("NP", "VP", "PP"))
    for seq in y:
        tags = to_iobes(seq)
        assert [to_iob2(t) for t in tags] == seq
        # well formed: B/I go on with I/E of the same type, E/S/O are followed by none of them
        for a, b in zip(tags + ["O"], ["O"] + tags):
            if b[:1] in ("B", "I"):
                assert a[:1] in ("I", "E") and a[2:] == b[2:]
            else:
                assert a[:1] not in ("I", "E")


@pytest.mark.parametrize("seq, msg", [(["I-NP"], "every chunk begins with B-"),
                                      (["B-NP", "I-VP"], "every chunk begins with B-"),
                                      (["O", "E-NP"], "not IOB2"), (["B-"], "not IOB2"), (["NP"], "not IOB2")])
def test_labels_that_are_not_iob2_are_refused(seq, msg):
    with pytest.raises(ValueError, match=msg):
        to_iobes(seq, "y[3]")
    X = [[["w", "p"]] * len(seq)]
    with pytest.raises(ValueError, match=r"y\[0\]"):
        CRF(patterns=["u:a=%x[0,0]"], tags="iobes").fit(X, [seq])


def test_bad_tags_parameter():
    for bad in ("bio", "IOBES", 1, ["iobes"]):
        with pytest.raises(ValueError, match="tags must be"):
            check_tags(bad)
        with pytest.raises(ValueError, match="tags must be"):
            CRF(patterns=["u:a=%x[0,0]"], tags=bad).check_params()


@pytest.mark.parametrize("seed", [0, 1])
def test_everything_is_the_sum_over_the_tags_of_a_labelling(seed):
    """First order, every tag pair allowed: the IOB2 marginals, pair marginals, Viterbi,
    posterior labels and n-best are those of the distribution over IOBES tag sequences
    (enumerated) pushed through the tag-by-tag map."""
    rng = np.random.default_rng(seed)
    X, y = _random_iob2(rng, 25, 5)
    m = CRF(patterns=PATTERNS, algorithm="lbfgs", rho1=0.0, rho2=0.5, tags="iobes").fit(X, y)
    sp = m.space_
    assert set(sp.labels) == {t for s in y for t in to_iobes(s)}
    assert m.classes_ == output_labels(sp.labels)
    for seq in X[:6]:
        paths = enumerate_sequences(sp, m.theta_, seq)
        logz = logsumexp([s for _, s in paths])
        dist: dict = {}
        for ys, s in paths:
            key = tuple(to_iob2(sp.labels[k]) for k in ys)
            dist[key] = dist.get(key, 0.0) + np.exp(s - logz)
        T = len(seq)
        marg = m.predict_marginals([seq])[0]
        pairs = m.predict_pair_marginals([seq])[0]
        for t in range(T):
            for lab in m.classes_:
                want = sum(p for key, p in dist.items() if key[t] == lab)
                assert marg[t][lab] == pytest.approx(want, abs=1e-9)
            if t > 0:
                want_pairs: dict = {}
                for key, p in dist.items():
                    want_pairs[(key[t - 1], key[t])] = want_pairs.get((key[t - 1], key[t]), 0.0) + p
                got = {k: v for k, v in pairs[t].items() if v > 1e-15}
                assert set(got) <= set(want_pairs)
                for k, v in want_pairs.items():
                    assert pairs[t].get(k, 0.0) == pytest.approx(v, abs=1e-9)
        best_path = max(paths, key=lambda p: p[1])[0]
        assert m.predict([seq])[0] == [to_iob2(sp.labels[k]) for k in best_path]
        post = m.decode([seq], posterior=True, scores=True)[0][0]
        assert post[0] == [max(marg[t], key=marg[t].get) for t in range(T)]
        assert post[2] == pytest.approx([marg[t][post[0][t]] for t in range(T)])
        # n-best: the best tag path of each labelling, best first, its log-probability the path's
        ranked = sorted(paths, key=lambda p: -p[1])
        want_nbest, seen = [], set()
        for ys, s in ranked[:8]:
            key = tuple(to_iob2(sp.labels[k]) for k in ys)
            if key not in seen:
                seen.add(key)
                want_nbest.append((list(key), s - logz))
        got_nbest = m.predict_nbest([seq], 8)[0]
        assert [lab for lab, _ in got_nbest] == [lab for lab, _ in want_nbest]
        assert [lp for _, lp in got_nbest] == pytest.approx([lp for _, lp in want_nbest])
        # a whole IOB2 sequence forced: the probability of its IOBES rewriting
        gold = list(max(dist, key=dist.get))
        tags = to_iobes(gold)
        want = next(np.exp(s - logz) for ys, s in paths if [sp.labels[k] for k in ys] == tags)
        tagger = m.tagger_
        tagger.set(seq)
        assert tagger.probability(gold) == pytest.approx(want)
        assert m.predict([seq], forced=[gold])[0] == gold


def test_order2_model_round_trips_and_refuses_partial_forcing(tmp_path):
    rng = np.random.default_rng(3)
    X, y = _random_iob2(rng, 40, 7)
    m = CRF(patterns=["u:a=%x[0,0]", "u:b=%x[0,1]", "u:c=%x[-1,0]"], order=2, algorithm="lbfgs", rho1=0.0,
            rho2=0.1, tags="iobes").fit(X, y)
    assert m.tags_ == "iobes" and m.space_.order == 2
    pred = m.predict(X)
    assert all(all(lab in m.classes_ for lab in s) for s in pred)
    assert all(to_iobes(s) for s in pred)  # well-formed IOB2: the unseen tag pairs are forbidden
    assert any(lab[:1] in "ES" for lab in m.space_.labels)
    assert {lab for _, lab in m.state_features_} <= set(m.space_.labels)
    path = tmp_path / "m.crf"
    m.save(path)
    back = CRF.load(path)
    assert back.tags_ == "iobes" and back.tags == "iobes" and back.classes_ == m.classes_
    assert back.predict(X) == pred
    for a, b in zip(back.predict_marginals(X[:3]), m.predict_marginals(X[:3])):
        assert a == b
    with pytest.raises(ValueError, match="whole"):
        m.predict(X[:1], forced=[[None] * len(X[0])])
    # the model keeps its scheme when it grows; another scheme is refused
    grown = CRF.load(path)
    grown.grow(X, y, [["u:d=%x[1,0]"]])
    assert grown.tags_ == "iobes" and all(to_iobes(s) for s in grown.predict(X))
    other = CRF.load(path)
    other.set_params(tags=None)
    with pytest.raises(ValueError, match="same tags"):
        other.grow(X, y, [["u:d=%x[1,0]"]])


def test_tampered_tags_are_refused(tmp_path):
    rng = np.random.default_rng(4)
    X, y = _random_iob2(rng, 20, 5)
    path = tmp_path / "m.crf"
    CRF(patterns=["u:a=%x[0,0]"], algorithm="lbfgs", rho1=0.0, tags="iobes").fit(X, y).save(path)
    plain = tmp_path / "plain.crf"
    CRF(patterns=["u:a=%x[0,0]"], algorithm="lbfgs", rho1=0.0).fit(X, y).save(plain)
    assert CRF.load(plain).tags_ is None
    assert CRF.load(rewritten(tmp_path, path, lambda a, m: None)).tags_ == "iobes"
    for value in ("bio", 3, None):
        assert_refused(tmp_path, path, lambda a, m: m.update(tags=value), "'tags'")

    def bad_label(arrays, meta):
        meta["labels"][-1] = "Q-NP"

    assert_refused(tmp_path, path, bad_label, "not an IOBES tag")


def test_cli_tags_iobes(tmp_path):
    from click.testing import CliRunner

    from suffixlm.cli import main

    rng = np.random.default_rng(5)
    X, y = _random_iob2(rng, 30, 6)
    train = tmp_path / "train.txt"
    train.write_text("\n\n".join("\n".join(f"{r[0]} {r[1]} {lab}" for r, lab in zip(s, ls))
                                 for s, ls in zip(X, y)) + "\n", encoding="utf-8")
    pat = tmp_path / "p.pat"
    pat.write_text("u:a=%x[0,0]\nu:b=%x[0,1]\nu:c=%x[-1,0]\n", encoding="utf-8")
    model = tmp_path / "m.crf"
    run = CliRunner().invoke
    r = run(main, ["crf", "train", "-q", "--order", "2", "--tags", "iobes", "-a", "lbfgs", "--rho1", "0", "-p",
                   str(pat), str(train), str(model)])
    assert r.exit_code == 0, r.output
    crf = CRF.load(model)
    assert crf.tags_ == "iobes"
    out = tmp_path / "out.txt"
    r = run(main, ["crf", "label", "-m", str(model), str(train), str(out)])
    assert r.exit_code == 0, r.output
    got = [ln.split()[-1] for ln in out.read_text().split("\n") if ln.strip()]
    assert got == [lab for s in crf.predict(X) for lab in s]
    assert set(got) <= set(crf.classes_) and not any(lab[:1] in "ES" for lab in got)
    # --init keeps the scheme of the model it starts from
    r = run(main, ["crf", "train", "-q", "--init", str(model), "-p", str(pat), str(train), str(tmp_path / "i.crf")])
    assert r.exit_code == 0, r.output
    assert CRF.load(tmp_path / "i.crf").tags_ == "iobes"
    # labels that are not IOB2: one line naming the token, no model written
    bad = tmp_path / "bad.txt"
    bad.write_text("a p O\nb p I-NP\n", encoding="utf-8")
    r = run(main, ["crf", "train", "-q", "--tags", "iobes", "-p", str(pat), str(bad), str(tmp_path / "b.crf")])
    assert r.exit_code != 0 and "B-" in r.output and not (tmp_path / "b.crf").exists()
    r = run(main, ["crf", "train", "-q", "--tags", "bio", "-p", str(pat), str(train), str(tmp_path / "c.crf")])
    assert r.exit_code != 0 and "--tags" in r.output


def test_dicts_input_with_tags():
    rng = np.random.default_rng(6)
    X, y = _random_iob2(rng, 30, 6)
    D = [[{"w": r[0], "p": r[1]} for r in s] for s in X]
    m = CRF(algorithm="lbfgs", c2=0.1, tags="iobes").fit(D, y)
    pred = m.predict(D)
    assert m.classes_ == output_labels(m.space_.labels)
    assert all(len(p) == len(s) for p, s in zip(pred, y))
    assert 0.5 < m.score(D, y) <= 1.0
    assert any(lab[:1] in "ES" for lab in m.space_.labels)
    assert not any(lab[:1] in "ES" for lab in itertools.chain.from_iterable(pred))
