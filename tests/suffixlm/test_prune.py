"""Relative-entropy pruning (SRILM's ``ngram -prune``): the criterion against a
brute-force relative entropy, the decisions and back-off weights against a plain
Python reference, invariants (monotone in the threshold, normalised, prefix-closed),
the CLI; SRILM's pruned PTB models byte for byte (when ../shared is present)."""

from __future__ import annotations

import functools
import gzip
import math
import os
import warnings

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff.arpa import BackoffLM
from suffixlm.cli import main
from suffixlm.corpus import BOS_ID, EOS_ID, Corpus
from suffixlm.evaluate import score
from suffixlm.backoff.kn import DiscountWarning, KneserNeyLM
from suffixlm.backoff.prune import prune_entropy, pruning_criterion
from tests.suffixlm.test_kn import _synthetic_sentences as synthetic_sentences

EPS = 3e-6  # SRILM's Prob_Epsilon


def _synthetic_sentences(seed=0):
    """Zipf-distributed words with a sticky Markov chain: n-grams repeat at every order."""
    return synthetic_sentences(seed, n_sent=250, n_words=40, lengths=(1, 10))


@functools.lru_cache(maxsize=None)
def _kn(order: int, cutoffs: bool) -> BackoffLM:
    corpus = Corpus.from_strings(_synthetic_sentences(), unk=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DiscountWarning)  # few words: unigram count-of-counts have zeros
        return KneserNeyLM(order, min_counts=None if cutoffs else [1]).fit(corpus).model_


MODELS = [(3, False), (4, True)]


# ---------------------------------------------------------------- a plain Python model

class _Dict:
    """A BackoffLM as dictionaries of n-gram tuples (float64 values, -99 -> -inf)."""

    def __init__(self, model: BackoffLM):
        self.order = model.order
        self.V = len(model.vocab)
        self.probs: dict[tuple, float] = {}
        self.bows: dict[tuple, float] = {}
        for rows, lp, bow, hb in model.ngrams:
            for r, p, b, h in zip(rows.tolist(), lp.tolist(), bow.tolist(), hb.tolist()):
                self.probs[tuple(r)] = -math.inf if p <= -99 else p
                if h:
                    self.bows[tuple(r)] = -math.inf if b <= -99 else b
        self.events = [v for v in range(self.V) if v != BOS_ID and self.probs.get((v,), -math.inf) > -math.inf]

    def p_bo(self, h: tuple, w: int, probs=None, bows=None) -> float:
        """log10 p(w | h) by the back-off rule (h oldest first)."""
        probs = self.probs if probs is None else probs
        bows = self.bows if bows is None else bows
        h = h[len(h) - min(len(h), self.order - 1):]
        total = 0.0
        while True:
            if h + (w,) in probs:
                return total + probs[h + (w,)]
            if not h:
                return -math.inf
            total += bows.get(h, 0.0)
            h = h[1:]

    def context_prob(self, h: tuple) -> float:
        """log10 P(h), SRILM's contextProb: chain rule, the first <s> scored as </s>."""
        total = 0.0
        for k, w in enumerate(h):
            if k == 0 and w == BOS_ID:
                w = EOS_ID
            lp = self.p_bo(h[:k], w)
            if lp > -math.inf or w != BOS_ID:
                total += lp
        return total


def _brute_force_criterion(d: _Dict, g: tuple) -> float:
    """10^dH - 1 for removing the n-gram g alone, dH = P(h) * sum over every word v of
    p(v|h) [log p(v|h) - log p'(v|h)], p' the model without g and BOW(h) renormalised."""
    h, w = g[:-1], g[-1]
    explicit = [v for v in range(d.V) if h + (v,) in d.probs and v != w]
    num = 1.0 - sum(10.0 ** d.probs[h + (v,)] for v in explicit)
    den = 1.0 - sum(10.0 ** d.p_bo(h[1:], v) for v in explicit)
    new_bow = math.log10(num) - math.log10(den)
    kl = 0.0
    for v in d.events:
        lp = d.p_bo(h, v)
        if lp == -math.inf:
            continue
        new = lp if v in explicit else new_bow + d.p_bo(h[1:], v)
        kl += 10.0 ** lp * (lp - new)
    return 10.0 ** (10.0 ** d.context_prob(h) * kl) - 1.0


def _reference_prune(d: _Dict, crit: dict, threshold: float):
    """SRILM's decisions and back-off weights, written plainly: contexts by decreasing
    length; an n-gram goes when its criterion is below the threshold and it is not a
    live context; a context goes when it has no n-gram and no live longer context left;
    then every live context's weight from the pruned model, shortest first."""
    kept = set(d.probs)
    nodes = set(d.bows)
    by_ctx: dict[tuple, list] = {}
    for g in d.probs:
        by_ctx.setdefault(g[:-1], []).append(g)
    for n in range(d.order, 1, -1):
        for h in sorted(x for x in nodes if len(x) == n - 1):
            all_pruned = True
            for g in by_ctx.get(h, []):
                if crit[g] < threshold and g not in nodes:
                    kept.discard(g)
                else:
                    all_pruned = False
            if all_pruned and not any(x[1:] == h for x in nodes if len(x) == n):
                nodes.discard(h)
    probs = {g: d.probs[g] for g in kept}
    bows: dict[tuple, float] = {}
    for h in sorted(nodes, key=len):
        gs = [g for g in by_ctx.get(h, []) if g in kept]
        num = 1.0 - sum(10.0 ** probs[g] for g in gs)
        den = 1.0 - sum(10.0 ** d.p_bo(h[1:], g[-1], probs, bows) for g in gs)
        num = 0.0 if abs(num) < EPS else num
        den = 0.0 if abs(den) < EPS else den
        bows[h] = 0.0 if num < EPS and den < EPS else math.log10(num) - math.log10(den)
    return probs, bows


def _thresholds(scores: np.ndarray, quantiles=(0.2, 0.5, 0.8)) -> list[float]:
    """Thresholds well between two criteria (no near-tie decides anything)."""
    s = np.unique(scores[np.isfinite(scores) & (scores > 0)])
    out = []
    for q in quantiles:
        k = int(q * (len(s) - 1))
        while k + 1 < len(s) and s[k + 1] / s[k] < 1.01:
            k += 1
        out.append(float(math.sqrt(s[k] * s[k + 1])))
    return out


def _ngram_set(model: BackoffLM) -> set:
    return {tuple(r) for rows, _, _, _ in model.ngrams for r in rows.tolist()}


# ---------------------------------------------------------------- the criterion

@pytest.mark.parametrize("order,cutoffs", MODELS)
def test_criterion_is_the_relative_entropy_of_one_removal(order, cutoffs):
    model = _kn(order, cutoffs)
    d = _Dict(model)
    crit = pruning_criterion(model)
    assert np.all(np.isnan(crit[0]))
    n_checked = 0
    for n in range(2, order + 1):
        rows = model.ngrams[n - 1][0]
        ref = np.array([_brute_force_criterion(d, tuple(r)) for r in rows.tolist()])
        ours = crit[n - 1]
        assert np.all(np.isfinite(ours))
        # float32 log-probabilities: absolute error ~1e-7 on the log-ratios
        scale = np.array([10.0 ** d.context_prob(tuple(r[:-1])) for r in rows.tolist()])
        assert np.all(np.abs(ours - ref) <= 1e-4 * np.abs(ref) + 2e-6 * scale), f"order {n}"
        n_checked += len(rows)
    assert n_checked > 300


@pytest.mark.parametrize("order,cutoffs", MODELS)
def test_decisions_and_weights_match_a_plain_reference(order, cutoffs):
    model = _kn(order, cutoffs)
    d = _Dict(model)
    crit = pruning_criterion(model)
    crit_by = {tuple(r): s for n in range(1, order) for r, s in zip(model.ngrams[n][0].tolist(), crit[n].tolist())}
    for t in _thresholds(np.concatenate(crit[1:])):
        pruned = prune_entropy(model, t)
        ref_probs, ref_bows = _reference_prune(d, crit_by, t)
        assert _ngram_set(pruned) == set(ref_probs)
        assert any(c < model.counts[n] for n, c in enumerate(pruned.counts))
        for rows, lp, bow, hb in pruned.ngrams:
            for r, p, b, h in zip(rows.tolist(), lp.tolist(), bow.tolist(), hb.tolist()):
                g = tuple(r)
                assert p == d.probs[g] or (p <= -99 and d.probs[g] == -math.inf)  # kept probabilities unchanged
                assert h == (g in ref_bows and len(g) < order), g
                if h:
                    assert abs(b - ref_bows[g]) < 2e-5, (g, b, ref_bows[g])


# ---------------------------------------------------------------- invariants

@pytest.mark.parametrize("order,cutoffs", MODELS)
def test_pruning_is_monotone_in_the_threshold(order, cutoffs):
    model = _kn(order, cutoffs)
    sets = [_ngram_set(prune_entropy(model, t)) for t in (1e-7, 1e-5, 1e-4, 3e-4, 1e-3, 3e-3, 1e-2, 1.0)]
    for a, b in zip(sets, sets[1:]):
        assert b <= a
    assert len(sets[0]) > len(sets[-1])
    assert {g for g in sets[-1] if len(g) > 1} <= {g for g in _ngram_set(model) if len(g) > 1}
    assert prune_entropy(model, 1.0).counts[0] == model.counts[0]  # unigrams never go


@pytest.mark.parametrize("order,cutoffs", MODELS)
def test_threshold_zero_keeps_everything(order, cutoffs):
    model = _kn(order, cutoffs)
    out = prune_entropy(model, 0.0)
    assert out is not model
    assert out.counts == model.counts
    assert out.arpa_bytes() == model.arpa_bytes()


@pytest.mark.parametrize("order,cutoffs", MODELS)
def test_pruned_model_is_normalised_and_prefix_closed(order, cutoffs):
    model = _kn(order, cutoffs)
    for t in (1e-5, 1e-3):
        pruned = prune_entropy(model, t)
        d = _Dict(pruned)
        grams = _ngram_set(pruned)
        # every context of a kept n-gram is kept, with a back-off weight
        for g in grams:
            if len(g) > 1:
                assert g[:-1] in grams and g[:-1] in d.bows, g
        rng = np.random.default_rng(1)
        contexts = sorted(d.bows)[:: max(1, len(d.bows) // 60)]
        contexts += [tuple(int(x) for x in rng.integers(3, d.V, size=order - 1)) for _ in range(10)]
        contexts += [(BOS_ID,), (BOS_ID, 5)]
        for h in contexts:
            total = sum(10.0 ** d.p_bo(h, v) for v in d.events)
            assert abs(total - 1.0) < 2e-5, (h, total)


def test_a_pruned_ngram_that_is_a_context_of_a_kept_one_stays():
    model = _kn(3, False)
    crit = pruning_criterion(model)
    bigrams = {tuple(r): s for r, s in zip(model.ngrams[1][0].tolist(), crit[1].tolist())}
    trigrams = {tuple(r): s for r, s in zip(model.ngrams[2][0].tolist(), crit[2].tolist())}
    # a bigram with a low score that prefixes a trigram with a high one
    cases = [(b, s, max(trigrams[g] for g in trigrams if g[:2] == b)) for b, s in bigrams.items()
             if any(g[:2] == b for g in trigrams)]
    b, s, top = min(cases, key=lambda c: c[1] / c[2])
    assert s < top
    t = math.sqrt(max(s, 1e-12) * top)
    grams = _ngram_set(prune_entropy(model, t))
    assert b in grams  # its score is below t, yet it stays
    assert any(g[:2] == b for g in grams if len(g) == 3)


HAND_ARPA = """
\\data\\
ngram 1=5
ngram 2=5
ngram 3=1

\\1-grams:
-99\t<s>\t-0.3
-0.6\t</s>
-0.5\ta\t-0.2
-0.6\tb\t-0.25
-1\t<unk>

\\2-grams:
-0.2\t<s> a\t-0.1
-0.5\t<s> b
-0.4\ta b
-0.3\tb </s>\t-0.05
-0.9\ta a

\\3-grams:
-0.1\t<s> a b

\\end\\
"""


def test_hand_written_model_srilm_quirks(tmp_path):
    path = tmp_path / "hand.arpa"
    path.write_text(HAND_ARPA)
    model = BackoffLM.read_arpa(path)
    out = prune_entropy(model, 1e-12)
    text = out.arpa_bytes().decode()
    lines = {ln.split("\t")[1]: ln.split("\t") for ln in text.splitlines() if "\t" in ln}
    # <s> keeps log 0 written as -99
    assert lines["<s>"][0] == "-99"
    # the unigrams leave 1 - 0.918 of the mass: SRILM gives it to every word (none has p = 0)
    p = {w: 10.0 ** x for w, x in [("</s>", -0.6), ("a", -0.5), ("b", -0.6), ("<unk>", -1.0)]}
    add = (1.0 - sum(p.values())) / 4
    for w, x in p.items():
        assert float(lines[w][0]) == pytest.approx(math.log10(x + add), abs=1e-6)
    # "b </s>" has a back-off weight but nothing after it: its context goes
    if "b </s>" in lines:
        assert len(lines["b </s>"]) == 2
    # "<s> a" prefixes the kept trigram: kept, with a weight
    assert "<s> a b" in lines and len(lines["<s> a"]) == 3
    assert out.counts[0] == 5


# ---------------------------------------------------------------- errors

@pytest.mark.parametrize("bad", [-1e-9, float("nan"), float("inf"), -float("inf"), "abc", None, True])
def test_bad_thresholds_are_rejected(bad):
    with pytest.raises(ValueError, match="threshold"):
        prune_entropy(_kn(3, False), bad)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_bad_min_order_is_rejected(bad):
    with pytest.raises(ValueError, match="min_order"):
        prune_entropy(_kn(3, False), 1e-6, bad)


def test_min_order_limits_the_orders_pruned():
    model = _kn(4, True)
    full = prune_entropy(model, 1e-3)
    top = prune_entropy(model, 1e-3, min_order=4)
    assert top.counts[:2] == model.counts[:2]
    assert top.counts[3] == full.counts[3] < model.counts[3]
    assert prune_entropy(model, 1e-3, min_order=5).counts == model.counts


def test_restricted_model_is_refused(tmp_path):
    path = tmp_path / "m.arpa"
    _kn(3, False).write_arpa(path)
    restricted = BackoffLM.read_arpa(path, only_for=[["w1", "w2"]])
    with pytest.raises(ValueError, match="only the n-grams"):
        prune_entropy(restricted, 1e-6)


# ---------------------------------------------------------------- CLI

def _invoke(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.mark.parametrize("suffix", [".arpa", ".arpa.gz"])
def test_cli_round_trip(tmp_path, suffix):
    src = tmp_path / "in.arpa.gz"
    _kn(4, True).write_arpa(src)
    out = tmp_path / f"out{suffix}"
    r = _invoke("prune", src, "-o", out, "--threshold", "1e-4")
    assert r.exit_code == 0, r.output
    model = BackoffLM.read_arpa(src)
    expected = prune_entropy(model, 1e-4)
    data = out.read_bytes()
    if suffix.endswith(".gz"):
        assert data[:2] == b"\x1f\x8b"
        data = gzip.decompress(data)
    assert data == expected.arpa_bytes()
    for n, (a, b) in enumerate(zip(model.counts, expected.counts), start=1):
        assert f"{n}-grams: {a:>10} -> {b:>10}" in r.output
    r = _invoke("prune", src, "-o", tmp_path / "top.arpa", "--threshold", "1e-4", "--min-order", "4", "--json")
    assert r.exit_code == 0, r.output
    assert '"ngrams_after"' in r.output
    assert BackoffLM.read_arpa(tmp_path / "top.arpa").counts == prune_entropy(model, 1e-4, 4).counts


def test_cli_never_overwrites_its_input(tmp_path):
    src = tmp_path / "in.arpa"
    _kn(3, False).write_arpa(src)
    before = src.read_bytes()
    r = _invoke("prune", src, "-o", src, "--threshold", "1e-4")
    assert r.exit_code == 1 and "refusing to overwrite" in r.output
    link = tmp_path / "link.arpa"
    os.link(src, link)
    r = _invoke("prune", src, "-o", link, "--threshold", "1e-4")
    assert r.exit_code == 1 and "refusing to overwrite" in r.output
    assert src.read_bytes() == before


@pytest.mark.parametrize("bad", ["-1e-7", "nan", "inf", "x"])
def test_cli_rejects_bad_thresholds(tmp_path, bad):
    src = tmp_path / "in.arpa"
    _kn(3, False).write_arpa(src)
    r = _invoke("prune", src, "-o", tmp_path / "o.arpa", "--threshold", bad)
    assert r.exit_code == 2 and "threshold" in r.output
    assert not (tmp_path / "o.arpa").exists()


def test_cli_errors_are_one_line(tmp_path):
    r = _invoke("prune", tmp_path / "missing.arpa", "-o", tmp_path / "o.arpa", "--threshold", "1e-7")
    assert r.exit_code == 1 and r.output.startswith("Error: ") and r.output.count("\n") == 1
    bad = tmp_path / "bad.arpa"
    bad.write_text("not an arpa file\n")
    r = _invoke("prune", bad, "-o", tmp_path / "o.arpa", "--threshold", "1e-7")
    assert r.exit_code == 1 and r.output.startswith("Error: ") and r.output.count("\n") == 1


def test_kn_prune_option(tmp_path):
    train = tmp_path / "train.txt"
    train.write_text("\n".join(_synthetic_sentences()) + "\n")
    plain, pruned = tmp_path / "kn.arpa", tmp_path / "knp.arpa"
    assert _invoke("kn", train, "--order", "4", "-o", plain, "-q").exit_code == 0
    r = _invoke("kn", train, "--order", "4", "-o", pruned, "--prune", "1e-4")
    assert r.exit_code == 0, r.output
    assert "pruned at threshold 0.0001" in r.output
    expected = prune_entropy(BackoffLM.read_arpa(plain), 1e-4)
    assert pruned.read_bytes() == expected.arpa_bytes()
    assert _invoke("kn", train, "-o", tmp_path / "x.arpa", "--prune", "-1").exit_code == 2
    assert not (tmp_path / "x.arpa").exists()


# ---------------------------------------------------------------- SRILM (../shared)

TABLE = {  # README "Pruning and mixing": (input, threshold) -> (counts, ppl, ppl1)
    ("ptb.kn5.srilm-default", 1e-9): ([10001, 264980, 70506, 33278, 17858], "149.3623", "189.7522"),
    ("ptb.kn5.srilm-default", 1e-8): ([10001, 264586, 68505, 30396, 14465], "150.7153", "191.5537"),
    ("ptb.kn5.srilm-default", 1e-7): ([10001, 252417, 61091, 21849, 8287], "152.7635", "194.2821"),
    ("ptb.kn5.srilm-default", 1e-6): ([10001, 146821, 27242, 6527, 2070], "171.2818", "219.0283"),
    ("ptb.kn3.srilm-nocut", 1e-8): ([10001, 264859, 549585], "148.7496", "188.9368"),
    ("ptb.kn3.srilm-nocut", 1e-7): ([10001, 257306, 321881], "151.6264", "192.7672"),
}
SRILM_FILES = {
    ("ptb.kn5.srilm-default", 1e-8): "ptb.kn5.default.prune1e-8.srilm.arpa.gz",
    ("ptb.kn5.srilm-default", 1e-7): "ptb.kn5.default.prune1e-7.srilm.arpa.gz",
    ("ptb.kn3.srilm-nocut", 1e-7): "ptb.kn3.nocut.prune1e-7.srilm.arpa.gz",
}


@functools.lru_cache(maxsize=2)
def _read(path: str) -> BackoffLM:
    return BackoffLM.read_arpa(path)


@pytest.mark.parametrize("key", sorted(SRILM_FILES))
def test_srilm_pruned_files_byte_for_byte(shared, key):
    name, t = key
    model = _read(str(shared("anchors", "srilm", f"{name}.arpa.gz")))
    ours = prune_entropy(model, t)
    theirs = gzip.decompress(shared("anchors", "srilm", SRILM_FILES[key]).read_bytes())
    if ours.arpa_bytes() != theirs:  # say what differs
        a, b = set(ours.arpa_bytes().split(b"\n")), set(theirs.split(b"\n"))
        pytest.fail(f"{len(a - b)} lines only ours, e.g. {sorted(a - b)[:3]}; "
                    f"{len(b - a)} only SRILM's, e.g. {sorted(b - a)[:3]}")
    # and as values (the model holds what its file says): the same n-grams, equal float32 values
    ref = BackoffLM.from_arpa_bytes(theirs)
    for (r1, p1, b1, h1), (r2, p2, b2, h2) in zip(ours.ngrams, ref.ngrams):
        assert np.array_equal(r1, r2) and np.array_equal(p1, p2) and np.array_equal(h1, h2)
        assert np.array_equal(b1[h1], b2[h2])


@pytest.mark.parametrize("key", sorted(TABLE))
def test_srilm_counts_and_perplexities(shared, key):
    name, t = key
    counts, ppl, ppl1 = TABLE[key]
    model = _read(str(shared("anchors", "srilm", f"{name}.arpa.gz")))
    pruned = prune_entropy(model, t)
    assert pruned.counts == counts
    corpus = Corpus.from_text(shared("corpora", "ptb", "ptb.test.txt"), pruned.vocab)
    report = score(pruned, corpus)
    assert (f"{report.ppl:.7g}", f"{report.ppl1:.7g}") == (ppl, ppl1)


def test_kn_prune_matches_srilm(shared, tmp_path):
    out = tmp_path / "kn5.prune1e-7.arpa"
    r = _invoke("kn", shared("corpora", "ptb", "ptb.train.txt"), "--order", "5", "--prune", "1e-7", "-o", out, "-q")
    assert r.exit_code == 0, r.output
    theirs = gzip.decompress(shared("anchors", "srilm", "ptb.kn5.default.prune1e-7.srilm.arpa.gz").read_bytes())
    # our estimator lists the n-grams in another order: compare the lines as sets
    assert sorted(out.read_bytes().split(b"\n")) == sorted(theirs.split(b"\n"))
