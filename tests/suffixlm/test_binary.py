"""The binary back-off model (suffixlm.backoff.binary): the same numbers as the ARPA model it
was built from (which equals the kenlm module bit for bit, tests/suffixlm/test_kenlm_api.py),
through KenLM's API, SRILM's statistics, the batched calls and the distribution; its
loader's checks; the command line."""

from __future__ import annotations

import gc
import itertools
import json
import os
import random
import sys

import numpy as np
import pytest
from click.testing import CliRunner

import suffixlm
from suffixlm.backoff.arpa import BackoffLM
from suffixlm.backoff.binary import BinaryFormatError, BinaryLM, write_binary
from suffixlm.cli import main
from suffixlm.corpus import Corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.model import LogLinearLM
from suffixlm.backoff.prune import prune_entropy
from suffixlm.query import State

from .test_kenlm_api import ODD, TINY_ARPA, TRAIN, _walks, thread_counts


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def _random_corpus(seed, n=80, vocab=12):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab)]
    return [" ".join(rng.choice(words[:rng.randrange(2, vocab)]) for _ in range(rng.randrange(0, 9)))
            for _ in range(n)]


def _sentences(model, n=120, seed=3, bos=True):
    rng = random.Random(seed)
    words = [w for w in model.vocab.words if bos or w != "<s>"] + ["zebra"]
    return [" ".join(rng.choice(words) for _ in range(rng.randrange(0, 10))) for _ in range(n)] + ODD


def _assert_same(arpa: BackoffLM, binary: BinaryLM):
    """Every query of ``binary`` gives exactly what ``arpa`` gives."""
    assert binary.order == arpa.order and binary.counts == arpa.counts
    assert binary.vocab == arpa.vocab
    sentences = _sentences(arpa)
    for s in sentences:
        for bos, eos in itertools.product((True, False), repeat=2):
            assert list(binary.full_scores(s, bos=bos, eos=eos)) == list(arpa.full_scores(s, bos=bos, eos=eos))
            assert binary.score(s, bos=bos, eos=eos) == arpa.score(s, bos=bos, eos=eos)
        assert binary.perplexity(s) == arpa.perplexity(s)
    sums = binary.score_batch(sentences)
    assert sums.tolist() == [arpa.score(s) for s in sentences]
    assert binary.score_batch(sentences, bos=False, eos=False).tolist() == \
        [arpa.score(s, bos=False, eos=False) for s in sentences]
    # the same walks, and equal states exactly where the ARPA model's are equal
    words = list(arpa.vocab.words) + ["zebra", b"w1"]
    ours, our_rets = _walks(binary, words)
    theirs, their_rets = _walks(arpa, words)
    assert our_rets == their_rets
    for i, j in itertools.combinations(range(0, len(ours), 2), 2):
        assert (ours[i] == ours[j]) == (theirs[i] == theirs[j])
        if ours[i] == ours[j]:
            assert hash(ours[i]) == hash(ours[j])
    for a, b in zip(ours[:60], theirs[:60]):
        assert binary.state_words(a) == arpa.state_words(b)
    # SRILM's statistics
    corpus = Corpus.from_strings([s for s in sentences if "<s>" not in s.split()], vocab=arpa.vocab)
    qa, qb = arpa.query(corpus), binary.query(corpus)
    assert np.array_equal(qa[0], qb[0]) and np.array_equal(qa[1], qb[1])
    assert binary.score_file(corpus).as_dict() == arpa.score_file(corpus).as_dict()
    # the distribution: what BaseScore gives every word
    for st in ours[:25]:
        dist = binary.distribution(st)
        want = [binary.BaseScore(st, w, State()) for w in arpa.vocab.words]
        assert dist.tolist() == np.array(want, dtype=np.float32).tolist()
        assert np.array_equal(arpa.distribution(theirs[ours.index(st)]), dist)
    top = binary.top_k(ours[0], 3)
    d = binary.distribution(ours[0]).astype(np.float64)
    d[[0, 2]] = -np.inf
    assert [w for w, _ in top] == [arpa.vocab.words[i] for i in np.argsort(-d, kind="stable")[:3]]


def test_tiny_arpa_with_a_blank(tmp_path):
    path = tmp_path / "tiny.arpa"
    path.write_text(TINY_ARPA.lstrip())
    arpa = BackoffLM.read_arpa(path)
    write_binary(arpa, tmp_path / "tiny.bin")
    b = suffixlm.Model(tmp_path / "tiny.bin")
    assert isinstance(b, BinaryLM) and b.path == str(tmp_path / "tiny.bin")
    _assert_same(arpa, b)
    # the blank "b d" (a part of "a b d" the file does not list) counts in the n-gram length
    assert list(b.full_scores("a b d", eos=False))[-1][1] == 3


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_random_kneser_ney_models_pruned_or_not(tmp_path, seed, order):
    corpus = Corpus.from_strings(_random_corpus(seed))
    arpa = KneserNeyLM(order=order, min_counts=[1, 1, 2] if seed % 2 else [1]).fit(corpus).model_
    if seed >= 2 and order > 1:
        arpa = prune_entropy(arpa, 0.02)  # leaves n-grams whose shorter parts are gone: blanks
    write_binary(arpa, tmp_path / "m.bin")
    m = BinaryLM(tmp_path / "m.bin", load=("auto", "lazy", "read", "lazy")[seed])
    assert m.load == ("read", "lazy", "read", "lazy")[seed]
    _assert_same(arpa, m)


def test_log_linear_model_through_its_export(tmp_path):
    corpus = Corpus.from_strings(TRAIN)
    ll = LogLinearLM(order=3, lam=0.02, max_iter=60, base="kn", positive=False).fit(corpus)
    ll.save(tmp_path / "m.slm")
    r = run("build-binary", tmp_path / "m.slm", tmp_path / "m.bin")
    assert r.exit_code == 0, r.output
    arpa = ll.to_backoff()
    _assert_same(arpa, BinaryLM(tmp_path / "m.bin"))
    # the model file itself scores <s> as its export does (-99 and the back-off weights)
    model = suffixlm.Model(tmp_path / "m.slm")
    for ctx in ([], ["the"], ["the", "cat"]):
        s = State()
        model.NullContextWrite(s)
        e = State()
        arpa.NullContextWrite(e)
        for w in ctx:
            o, eo = State(), State()
            model.BaseScore(s, w, o)
            arpa.BaseScore(e, w, eo)
            s, e = o, eo
        assert model.BaseScore(s, "<s>", State()) == pytest.approx(arpa.BaseScore(e, "<s>", State()), abs=1e-5)
    assert model.distribution(s)[0] < -98


def test_kenlm_parity_names(tmp_path):
    with pytest.raises(OSError):
        suffixlm.Model(tmp_path / "missing.arpa")
    with pytest.raises(OSError):
        suffixlm.Model(tmp_path)
    assert suffixlm.LanguageModel is suffixlm.Model
    path = tmp_path / "tiny.arpa"
    path.write_text(TINY_ARPA.lstrip())
    assert suffixlm.Model(path).path == str(path)
    saved = sys.modules.get("kenlm")
    try:
        mod = suffixlm.install_as_kenlm()
        import kenlm

        assert kenlm is mod is suffixlm
        m = kenlm.Model(str(path))
        s = kenlm.State()
        m.BeginSentenceWrite(s)
        assert m.BaseScore(s, "a", kenlm.State()) == pytest.approx(-0.3)
    finally:
        if saved is None:
            sys.modules.pop("kenlm", None)
        else:
            sys.modules["kenlm"] = saved


# ---------------------------------------------------------------------------- the loader
@pytest.fixture
def good(tmp_path):
    corpus = Corpus.from_strings(_random_corpus(7))
    arpa = KneserNeyLM(order=3, min_counts=[1]).fit(corpus).model_
    p = tmp_path / "m.bin"
    write_binary(arpa, p)
    return arpa, p


def _header_len(data: bytes) -> int:
    return int.from_bytes(data[16:20], "little")


def test_damaged_files_are_clear_errors(good, tmp_path):
    arpa, p = good
    data = p.read_bytes()
    bad = tmp_path / "bad.bin"
    cases = {
        "truncated": data[:-1],
        "truncated header": data[:30],
        "empty": b"",
        "magic": b"X" + data[1:],
        "header byte": data[:30] + bytes([data[30] ^ 1]) + data[31:],
        "header length": data[:16] + (10 ** 7).to_bytes(4, "little") + data[20:],
        "longer": data + b"\0" * 64,
    }
    n = _header_len(data)
    head = json.loads(data[24:24 + n])
    v_off = head["sections"]["vocab"][0]
    cases["vocabulary"] = data[:v_off] + b"W" + data[v_off + 1:]
    for name, content in cases.items():
        bad.write_bytes(content)
        if name == "magic" or name == "empty":
            with pytest.raises(ValueError):  # not a binary model: the log-linear loader refuses it
                suffixlm.Model(bad)
        with pytest.raises(BinaryFormatError):
            BinaryLM(bad)
    # a header that is valid JSON with a valid checksum but lies
    import zlib

    for field, value in (("order", 0), ("vocab_size", 2), ("table_slots", 0), ("file_size", 5),
                         ("version", 2), ("counts", [1]), ("missing_log10", "x")):
        h = dict(head)
        h[field] = value
        text = json.dumps(h, sort_keys=True).encode("ascii")
        body = data[24 + n:]
        new = data[:16] + len(text).to_bytes(4, "little") + zlib.crc32(text).to_bytes(4, "little") + text
        bad.write_bytes(new + body[len(new) - (24 + n):] if len(new) <= 24 + n else new + body)
        with pytest.raises(BinaryFormatError):
            BinaryLM(bad)


def _damaged_answers(m: BinaryLM, sentences) -> None:
    """``verify`` sees the damage of ``m``'s table; its queries (sentences, a decoder's
    walk, a distribution) still answer: wrong numbers at most, never a crash or a hang."""
    with pytest.raises(BinaryFormatError, match="table checksum"):
        m.verify()
    for s in sentences:
        m.score(s)
        list(m.full_scores(s))
    st = State()
    m.BeginSentenceWrite(st)
    for w in ["w1", "w2", "w3", "w1"]:
        m.BaseScore(st, w, st)
    m.distribution(st)


@pytest.mark.parametrize("tier", ["auto", "numpy"])  # batch queries compiled, or in numpy (_table_numpy)
def test_a_damaged_table_never_crashes_and_verify_sees_it(good, tmp_path, monkeypatch, tier):
    from suffixlm.backoff import table

    monkeypatch.setattr(table, "TIER", tier)
    arpa, p = good
    data = bytearray(p.read_bytes())
    n = _header_len(bytes(data))
    head = json.loads(bytes(data[24:24 + n]))
    t_off, t_n, _ = head["sections"]["table"]
    # a damaged directory of the regions is found at open
    d = bytearray(data)
    d[t_off + t_n - 8] ^= 0x10
    (tmp_path / "dir.bin").write_bytes(bytes(d))
    with pytest.raises(BinaryFormatError, match="directory"):
        BinaryLM(tmp_path / "dir.bin")
    t_n -= 16 * (head["order"] + 1)  # the records (the directory after them stays)
    rng = np.random.default_rng(0)
    for trial in range(6):
        d = bytearray(data)
        if trial < 3:  # random bytes anywhere in the table
            d[t_off:t_off + t_n] = rng.integers(0, 256, t_n, dtype=np.uint8).tobytes()
        else:  # every slot full: probing must still stop
            tab = np.frombuffer(bytes(d[t_off:t_off + t_n]), dtype=np.int64).copy()
            tab[::2] = rng.integers(0, 2 ** 62, len(tab) // 2)
            d[t_off:t_off + t_n] = tab.tobytes()
        bad = tmp_path / f"bad{trial}.bin"
        bad.write_bytes(bytes(d))
        m = BinaryLM(bad)
        _damaged_answers(m, _sentences(arpa, n=20))
        try:  # garbage probabilities: a clear error at most
            m.score_file(Corpus.from_strings(_sentences(arpa, n=10, bos=False), vocab=m.vocab))
        except ValueError as e:
            assert "log10 probabilities" in str(e)
    BinaryLM(p).verify()


def test_load_methods(good):
    arpa, p = good
    with pytest.raises(ValueError, match="load must be"):
        BinaryLM(p, load="eager")
    lazy, read = BinaryLM(p, load="lazy"), BinaryLM(p, load="read")
    assert not read._D.flags.writeable and not lazy._D.flags.writeable
    assert np.array_equal(lazy._D, read._D)


def test_is_binary_model(good, tmp_path):
    from suffixlm.load import is_binary_model

    arpa, p = good
    arpa.write_arpa(tmp_path / "m.arpa")
    (tmp_path / "short").write_bytes(p.read_bytes()[:5])
    assert is_binary_model(p) and is_binary_model(str(p))
    for other in ("m.arpa", "short", "missing", "."):  # an ARPA file, a prefix, no file, a directory
        assert not is_binary_model(tmp_path / other)


def test_foreign_states_are_the_empty_context(good):
    arpa, p = good
    m = BinaryLM(p)
    s = State()
    m.NullContextWrite(s)
    want = m.BaseScore(s, "w1", State())
    for bogus in (10 ** 12, -5, 2 ** 40):
        s.words = bogus
        assert m.BaseScore(s, "w1", State()) == want
    s.words = (0, 3)  # a word-tuple state (another model's) is read as a history
    assert m.BaseScore(s, "w1", State()) == arpa.BaseScore(s, "w1", State())


def test_the_decoder_calls_outlive_their_model(good):
    """``BaseScore`` and ``BaseFullScore`` pass the table to the kernel by address: the
    bound calls keep it alive when the model itself is gone."""
    arpa, p = good
    m = BinaryLM(p)
    s, o = State(), State()
    m.BeginSentenceWrite(s)
    want = [m.BaseScore(s, "w1", o), tuple(m.BaseFullScore(s, "w2", o)), o.words]
    base, full = m.BaseScore, m.BaseFullScore
    del m
    gc.collect()
    o = State()
    assert [base(s, "w1", o), tuple(full(s, "w2", o)), o.words] == want
    sa = State()
    arpa.BeginSentenceWrite(sa)
    assert want[:2] == [arpa.BaseScore(sa, "w1", State()), tuple(arpa.BaseFullScore(sa, "w2", State()))]


def test_score_of_one_line_uses_its_work_space_and_falls_back_for_long_lines(good, monkeypatch):
    """``score(line)`` walks a sentence in the work space its parameter block points to
    (``score_line_at``: no array made per call) and one of more than
    ``LINE_WORK_WORDS`` words through ``score_line``: the numbers of the ARPA model
    either way, the work space reused call after call, and the bound ``score`` (the
    compiled function's own entry point) outliving its model."""
    from suffixlm.backoff import _binary_kernels as K
    from suffixlm.backoff import table

    arpa, p = good
    monkeypatch.setattr(table, "TIER", "compiled")
    m = BinaryLM(p)
    words = list(arpa.vocab.words[3:]) + ["zebra"]
    long_line = " ".join(words[i % len(words)] for i in range(K.LINE_WORK_WORDS + 7))
    lines = _sentences(arpa, n=60) + [long_line, "", long_line[:2 * K.LINE_WORK_WORDS - 10]]
    want = [arpa.score(x) for x in lines]
    assert [m.score(x) for x in lines] == want
    assert [m.score(x) for x in reversed(lines)] == want[::-1]
    score = m.score
    del m
    gc.collect()
    assert [score(x) for x in lines] == want


# ---------------------------------------------------------------------------- command line
def test_command_line(tmp_path):
    train = tmp_path / "train.txt"
    test = tmp_path / "test.txt"
    train.write_text("\n".join(_random_corpus(11, n=200)) + "\n")
    test.write_text("\n".join(_random_corpus(12, n=40)) + "\n")
    arpa, binary = tmp_path / "m.arpa", tmp_path / "m.bin"
    assert run("kn", train, "-o", arpa, "--order", 4, "-q").exit_code == 0
    assert run("kn", train, "-o", tmp_path / "k.bin", "--order", 4, "--binary", "-q").exit_code == 0
    r = run("build-binary", arpa, binary)
    assert r.exit_code == 0 and "bytes an n-gram" in r.output
    # kn --binary writes the estimate unrounded (the ARPA file prints 7 digits)
    k, m = BinaryLM(tmp_path / "k.bin"), BinaryLM(binary)
    assert k.counts == m.counts
    assert k.corpus_perplexity(test) == pytest.approx(m.corpus_perplexity(test), rel=1e-6)
    assert run("build-binary", "--verify", binary).exit_code == 0
    a = run("ppl", "--json", "--arpa", arpa, test)
    b = run("ppl", "--json", binary, test)
    ja, jb = json.loads(a.output), json.loads(b.output)
    ja.pop("model"), jb.pop("model")
    assert ja == jb
    d1, d2 = run("ppl", "--debug", 2, "--arpa", arpa, test), run("ppl", "--debug", 2, binary, test)
    assert d1.output == d2.output
    assert run("prune", arpa, "-o", tmp_path / "p.bin", "-t", "1e-3", "--binary", "-q").exit_code == 0
    assert run("prune", arpa, "-o", tmp_path / "p.arpa", "-t", "1e-3", "-q").exit_code == 0
    _assert_same(BackoffLM.read_arpa(tmp_path / "p.arpa"), BinaryLM(tmp_path / "p.bin"))
    # never over the input, never a broken file where a good one was
    before = binary.read_bytes()
    r = CliRunner().invoke(main, ["build-binary", str(binary), str(binary)])
    assert r.exit_code != 0 and binary.read_bytes() == before
    r = CliRunner().invoke(main, ["build-binary", str(binary), str(tmp_path / "x.bin")])
    assert r.exit_code != 0 and "binary model already" in r.output and not (tmp_path / "x.bin").exists()
    r = CliRunner().invoke(main, ["build-binary", str(test), str(binary)])
    assert r.exit_code != 0 and binary.read_bytes() == before
    r = CliRunner().invoke(main, ["build-binary", str(tmp_path / "none.arpa"), str(tmp_path / "y.bin")])
    assert r.exit_code != 0 and not (tmp_path / "y.bin").exists()
    r = CliRunner().invoke(main, ["ppl", "--arpa", str(binary), str(test)])
    assert r.exit_code != 0 and "binary model" in r.output
    os.chmod(binary, 0o644)


def test_orders_past_the_binary_format(tmp_path):
    """A KN model of unbounded order longer than 255 (the binary header's limit) is
    refused by the binary writer before it writes anything, and its in-memory table
    (part lengths past a byte) scores as its sentence walk does."""
    long = " ".join(f"w{i % 7}" for i in range(300))
    m = KneserNeyLM(order=None, min_counts=[1]).fit(Corpus.from_strings([long, "w1 w2 w3", long[:200]])).model_
    assert m.order > 255
    with pytest.raises(ValueError, match="order 255 at most"):
        write_binary(m, tmp_path / "x.bin")
    assert not (tmp_path / "x.bin").exists()
    sentences = [long, long[:200], "w1 w2 w3 w4", "w6 w5"]
    want = [sum(lp for lp, _, _ in m.full_scores(s)) for s in sentences]
    np.testing.assert_allclose(m.score_batch(sentences), want, rtol=1e-6)
    assert [n for _, n, _ in m.full_scores(long)][-2] > 255  # an n-gram longer than a byte counts


def test_train_writes_the_binary_model_build_binary_writes(tmp_path):
    """``suffixlm train --write-binary OUT.bin`` writes, after the model file, the bytes
    ``suffixlm build-binary MODEL OUT.bin`` writes; it never names the model file, an
    input, the checkpoint or standard output, and it is refused before any training."""
    train, test = tmp_path / "train.txt", tmp_path / "test.txt"
    train.write_text("\n".join(_random_corpus(21, n=150)) + "\n")
    test.write_text("\n".join(_random_corpus(22, n=30)) + "\n")
    model, binary, built = tmp_path / "m.slm", tmp_path / "m.bin", tmp_path / "built.bin"
    r = run("train", train, "-o", model, "--order", 3, "--write-binary", binary, "--json", "-q", "--epochs", 30)
    assert r.exit_code == 0, r.output
    summary = json.loads(r.output.strip().splitlines()[-1])
    assert summary["binary"] == str(binary) and summary["binary_bytes"] == binary.stat().st_size
    assert run("build-binary", model, built, "-q").exit_code == 0
    assert binary.read_bytes() == built.read_bytes()
    a, b = run("ppl", "--json", "-q", binary, test), run("ppl", "--json", "-q", model, test)  # -q: no progress lines
    assert json.loads(a.output)["ppl"] == pytest.approx(json.loads(b.output)["ppl"], rel=1e-6)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    new = tmp_path / "new.slm"
    for bad, why in ((new, "is the model file"), (train, "input file"), ("-", "names a file"),
                     (tmp_path / "ck.json", "is the checkpoint"), (tmp_path / "no" / "x.bin", "")):
        r = CliRunner().invoke(main, ["train", str(train), "-o", str(new), "--order", "3", "--write-binary", str(bad),
                                      "--checkpoint", str(tmp_path / "ck.json"), "-q"])
        assert r.exit_code != 0 and why in r.output, (bad, r.output)
        assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before  # nothing written, nothing lost


def test_sentences_are_split_as_every_reader_splits(tmp_path):
    """score and score_batch split and look words up in compiled code: the same words as
    io.split_words (ASCII white space only) and the same ids as the vocabulary."""
    corpus = Corpus.from_strings(TRAIN + ["caf\u00e9 na\u00efve \u00fcber", "a\u00a0b cat"])
    arpa = KneserNeyLM(order=3, min_counts=[1]).fit(corpus).model_
    write_binary(arpa, tmp_path / "m.bin")
    b = BinaryLM(tmp_path / "m.bin")
    odd = ["the  cat\tsat", " the cat ", "the\ncat", "the\rcat\x0bsat\x0cmat", "a\u00a0b cat", "caf\u00e9 na\u00efve",
           "the\u2028cat", "the\x1ccat", "\ud800 cat", "", "   ", "the cat \n", "zebra\u00e9 the"]
    for s in odd + TRAIN:
        for bos, eos in itertools.product((True, False), repeat=2):
            assert b.score(s, bos=bos, eos=eos) == arpa.score(s, bos=bos, eos=eos), repr(s)
        assert b.score(s) == arpa.score(s), repr(s)
    assert b.score(b"the cat") == arpa.score("the cat")
    lines = [s for s in odd if "\ud800" not in s] + TRAIN
    assert b.score_batch(lines).tolist() == [arpa.score(s) for s in lines]
    clean = [s for s in lines if "\n" not in s]
    assert b.score_batch(clean).tolist() == [arpa.score(s) for s in clean]
    assert b.score_batch(clean, bos=False, eos=False).tolist() == [arpa.score(s, bos=False, eos=False) for s in clean]
    assert b.score_batch(["\ud800 cat", "the cat"]).tolist() == [arpa.score("\ud800 cat"), arpa.score("the cat")]
    assert b.score_batch([]).tolist() == []


@pytest.mark.parametrize("quantize", [None, 8])  # the exact table, and the quantised one (test_quantize.py)
def test_large_batches_on_threads_are_the_serial_numbers(tmp_path, monkeypatch, quantize):
    """A batch of PARALLEL_MIN_TOKENS words or more is walked in chunks of sentences on
    numba's threads (table.walk_sentences, score_lines_parallel): every sum and every word's numbers are those
    of one thread, bit for bit, whatever the chunks (empty sentences and missing words at
    their edges included)."""
    from suffixlm import query
    from suffixlm.backoff import table

    corpus = Corpus.from_strings(_random_corpus(5, n=300, vocab=30))
    arpa = KneserNeyLM(order=4, min_counts=[1]).fit(corpus).model_
    write_binary(arpa, tmp_path / "m.bin", quantize=quantize)
    b = BinaryLM(tmp_path / "m.bin")
    sentences = _sentences(arpa, n=400, seed=7) + ["", "zebra", ""]
    ids = [[b.vocab.id(w) if w in b.vocab else -1 for w in s.split()] + [1] for s in sentences]
    flat = np.array([i for s in ids for i in s], dtype=np.int64)
    offsets = np.cumsum([0] + [len(s) for s in ids]).astype(np.int64)
    monkeypatch.setattr(table, "TIER", "compiled")
    monkeypatch.setattr(query, "PARALLEL_MIN_TOKENS", 10 ** 12)
    serial = [b.score_batch(sentences, bos=bos) for bos in (True, False)]
    serial_ids = b.score_ids(flat, offsets)
    serial_words = [list(b.full_scores(s)) for s in sentences[:40]]
    assert query.sentence_chunks(offsets, len(flat)) is None
    monkeypatch.setattr(query, "PARALLEL_MIN_TOKENS", 1)
    for threads in thread_counts():
        bounds = query.sentence_chunks(offsets, len(flat))
        assert bounds[0] == 0 and bounds[-1] == len(sentences) and np.all(np.diff(bounds) > 0)
        assert 2 <= len(bounds) <= threads + 1
        for bos, want in zip((True, False), serial):
            assert b.score_batch(sentences, bos=bos).tolist() == want.tolist()
        assert b.score_ids(flat, offsets).tolist() == serial_ids.tolist()
        assert [list(b.full_scores(s)) for s in sentences[:40]] == serial_words
        lp, n = np.empty(len(flat)), np.empty(len(flat), dtype=np.int64)
        lp1, n1 = np.empty(len(flat)), np.empty(len(flat), dtype=np.int64)
        K = table.kernels()
        for cut in ([0, len(sentences)], [0, 1, 2, len(sentences) - 1, len(sentences)],
                    [0, len(sentences) - 2, len(sentences)]):
            for lanes in (False, True):
                got = K.score_sentences_parallel(b._D, b._V, b._S, b.order, flat, offsets, True, b._missing, lp, n,
                                                 lanes, np.array(cut, dtype=np.int64))
                ref = K.score_sentences(b._D, b._V, b._S, b.order, flat, offsets, True, b._missing, lp1, n1)
                assert got.tobytes() == ref.tobytes() and lp.tobytes() == lp1.tobytes() and np.array_equal(n, n1)


@pytest.mark.parametrize("seed", range(3))
def test_the_window_probe_is_the_slot_by_slot_scan(seed):
    """``_binary_kernels._probe`` reads ``WINDOW`` slots at once from a key's home: on a
    region Robin Hood fills to load 0.8 it finds every key where a scan slot by slot does
    (keys in the window and beyond it, across the region's end) and no absent key, the
    window's three ways out (a hit, an empty slot, the Robin Hood rule) and the scan past
    it all taken."""
    from suffixlm.backoff import _binary_kernels as K

    rng = np.random.default_rng(seed)
    n = 4099
    keys = rng.choice(1 << 40, size=int(0.8 * n), replace=False).astype(np.int64)
    D = np.full(2 * n + 4, -1, dtype=np.int64)
    zero = np.zeros(len(keys), dtype=np.float32)
    K.fill_region(D, 0, 0, n, keys, np.zeros(len(keys), dtype=np.int64), zero, zero)
    slot_of = {int(D[2 * r]): r for r in range(n) if D[2 * r] != -1}
    assert len(slot_of) == len(keys)

    def home(k):
        return int(K.home(k, n))

    shift = {k: (r - home(k)) % n for k, r in slot_of.items()}
    assert max(shift.values()) >= K.WINDOW  # found past the window
    assert any(home(k) + K.WINDOW > n for k in slot_of)  # a window that would cross the region's end
    for k, r in slot_of.items():
        assert K._probe(D, 0, n, k) == r
    absent = rng.integers(0, 1 << 40, 20000)
    absent = absent[~np.isin(absent, keys)]
    ways = set()
    for k in absent.tolist():
        assert K._probe(D, 0, n, k) == -1
        h = home(k)
        if h + K.WINDOW <= n:
            window = [int(D[2 * (h + j)]) for j in range(K.WINDOW)]
            last = window[-1]
            if min(window) == -1:
                ways.add("empty")
            elif (h + 3 - home(last)) % n < 3:
                ways.add("robin hood")
            else:
                ways.add("past")
    assert ways == {"empty", "robin hood", "past"}
