"""Fuzz tests of every suffixlm reader: mutated copies of valid files.

Readers: training texts (``load_training_corpus``, ``Vocabulary.from_text``,
``Corpus.from_text``; plain and gzip), vocabulary files (``Vocabulary.from_file``), ARPA
files (``BackoffLM.read_arpa``, plain and gzip, with and without ``only_for``),
log-linear model files (``LogLinearLM.load``), and ``load.load_model``, which tells the
two model kinds apart by their content.

The text mutations include those toward the text convention's paths (lone CR and CRLF
line ends, a byte-order mark, an over-long line) and run under a small
``$SUFFIXLM_MAX_LINE_BYTES`` in some examples: a line longer than the bound is refused
naming the file and line, and only such a line.

Property: a mutated file gives the reader's own error (``CorpusError``, ``ArpaError``,
``ModelFormatError``, all ``ValueError``) naming the file, or a result equal to the
reference one: for texts, the sentences a plain-Python reading of the same bytes gives,
which a model then scores; for model files, the scores of a fixed text, equal to the
unmutated model's, or (where the mutation changed a value a model file cannot protect,
a weight) a model whose every distribution sums to one. Never another exception, a
crash or a hang. The mutations and their replay are in ``tests/fuzz_util.py``.

The tests after the fuzz tests replay what the fuzz tests found, one case each, and
check in a child process that tampered suffix-tree arrays never crash the interpreter.
"""

import json
import math
import re
import subprocess
import sys
import textwrap
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from suffixlm.corpora import sample_path

from suffixlm.backoff.arpa import ArpaError, BackoffLM
from suffixlm.corpus import BOS, EOS, UNK, Corpus, CorpusError, Vocabulary, load_training_corpus, predicted_positions
from suffixlm.events import context_events
from suffixlm.io import GZIP_MAGIC
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.load import load_model
from suffixlm.model import LogLinearLM, ModelFormatError

from ..fuzz_util import (
    BYTE_MUTATION,
    BYTE_MUTATIONS,
    CONTAINER_MUTATIONS,
    CONVENTION_MUTATION,
    LINE_LIMITS,
    check_line_limit,
    convention_text,
    fuzz_settings,
    gunzip_or_none,
    gzip_bytes,
    line_limit,
    line_mutations,
    mutate_bytes,
    mutate_container,
    mutate_lines,
    read_container,
    watchdog,
    write_container,
)

N_TRAIN = 12  # sentences of the sample corpus the models are trained on: small, fast files
TEST = ["the dog ran", "a woman saw the child", "zebra the", "quickly , bob saw bob"]
WORDS = [b"the", b"dog", b"zebra", BOS.encode(), EOS.encode(), UNK.encode(), b"\xc3\xa9t\xc3\xa9", b"\xff",
         b"a\x00b", b"", b"-DOCSTART-", b"\xe2\x80\xa8", b"\xc2\xa0"]


# ---------------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The valid files, and a directory for the mutated ones."""
    return valid_files(tmp_path_factory.mktemp("fuzz"))


def valid_files(d):
    lines = sample_path("tiny_lm.train.txt").read_text(encoding="utf-8").splitlines()[:N_TRAIN]
    text = ("\n".join(lines) + "\n").encode("utf-8")
    corpus = Corpus.from_strings(lines)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # too little text for modified KN's discounts: a warning says so
        kn = KneserNeyLM(order=3).fit(corpus)
        models = {
            "tree": LogLinearLM(order=3, lam=1e-3, max_iter=15).fit(lines),
            "trie": LogLinearLM(order=3, lam=1e-3, max_iter=15, penalty="l2-tree").fit(lines),
            "kn": LogLinearLM(order=3, lam=1e-3, max_iter=15, base="kn", positive=False).fit(lines),
            # built from the counted events: the file stores them instead of the text
            "events": LogLinearLM(order=3, lam=1e-3, max_iter=15).fit(context_events(corpus, 3)),
        }
    model_bytes = {}
    for name, m in models.items():
        m.save(d / f"{name}.lm")
        model_bytes[name] = (d / f"{name}.lm").read_bytes()
    arpa = kn.model_.arpa_bytes()
    # compile (or load from the cache) every kernel the examples run, outside the deadline
    (d / "warm-up.arpa").write_bytes(arpa)
    for lm in (BackoffLM.read_arpa(d / "warm-up.arpa"), BackoffLM.read_arpa(d / "warm-up.arpa", only_for=[["a"]]),
               *(LogLinearLM.load(d / f"{name}.lm") for name in models)):
        check_scores(lm, Corpus.from_strings(TEST, vocab=lm.vocab))
        lm.score(TEST[0])
    vocab = "".join(w + "\n" for w in corpus.vocab.words if w != UNK).encode("utf-8")
    out = d / "out"
    out.mkdir()
    return ValidFiles(dir=out, text=text, vocab=vocab, arpa=arpa, kn=kn.model_, models=models,
                      model_bytes=model_bytes)


class ValidFiles(dict):
    """The fixture's files by name, with a short repr for hypothesis' reports."""

    def __repr__(self):
        return "<valid files>"


def write(files, name, data):
    p = files["dir"] / name
    p.write_bytes(data)
    return p


def clear_error(exc, path, classes):
    """``exc`` is one of ``classes`` and names ``path`` (re-raises it otherwise)."""
    if not isinstance(exc, classes) or str(path) not in str(exc):
        raise AssertionError(f"not a clear error naming {path}: {type(exc).__name__}: {exc}") from exc


def read_or_error(read, path, classes, data=None, limit=None, bounded=True):
    """``read()``, or None when it raises one of ``classes`` naming ``path``. Any other
    exception propagates (the test fails with it). With ``data`` (the bytes of ``path``):
    read under ``$SUFFIXLM_MAX_LINE_BYTES`` = ``limit`` and checked by ``check_line_limit``."""
    error = None
    with watchdog(), line_limit(limit):
        try:
            result = read()
        except classes as e:
            clear_error(e, path, classes)
            error, result = str(e), None
    if data is not None:
        check_line_limit(error, path, data, limit, bounded)
    return result


def reference_sentences(data: bytes):
    """The token lists of a text as a plain-Python reading gives them (gzip content by its
    magic bytes, UTF-8, a leading BOM skipped, lines end at ``\\n``, ``\\r\\n`` or a lone
    ``\\r``, words split on ASCII white space only), None where the reader must refuse it."""
    if data[:2] == GZIP_MAGIC:
        data = gunzip_or_none(data)
        if data is None:
            return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    text = text.removeprefix("\ufeff").replace("\r\n", "\n").replace("\r", "\n")
    sents = [ws for ws in (re.split("[ \t\x0b\x0c]+", line.strip(" \t\x0b\x0c")) for line in text.split("\n"))
             if ws != [""]]
    return sents or None


def strip_markers(toks):
    if toks and toks[0] == BOS:
        toks = toks[1:]
    if toks and toks[-1] == EOS:
        toks = toks[:-1]
    return toks


def check_corpus(corpus: Corpus, sentences, vocab: Vocabulary):
    """``corpus`` is well formed and encodes exactly ``sentences`` with ``vocab``."""
    tok, off = corpus.tokens, corpus.offsets
    assert tok.dtype == np.int32 and off.dtype == np.int64
    assert off[0] == 0 and off[-1] == len(tok) and np.all(np.diff(off) >= 2)
    assert np.all((tok >= 0) & (tok < len(vocab)))
    assert np.all(tok[off[:-1]] == 0) and np.all(tok[off[1:] - 1] == 1)
    want = [[w if w in vocab.index else UNK for w in strip_markers(s)] for s in sentences]
    assert list(corpus.sentences_as_words()) == want
    assert corpus.n_words == sum(len(s) for s in want)


def check_scores(model, corpus: Corpus):
    """A model scores ``corpus``: one value per predicted position, each a log10
    probability (<= 0), NaN only where the word is an OOV that is not scored."""
    lp = model.log10_probs(corpus)
    assert lp.shape == (corpus.n_tokens - corpus.n_sentences,)
    scored = corpus.target_mask()[predicted_positions(corpus)]
    assert not np.any(np.isnan(lp[scored])), lp
    assert np.all(lp[~np.isnan(lp)] <= 1e-9), lp


def test_container_writer_rewrites_valid_files_byte_for_byte(files):
    """The fuzz tests' container writer lays files out as ``save`` does, so a mutated
    file differs from the valid one only by its mutation."""
    p = files["dir"] / "rewritten.lm"
    for name, data in files["model_bytes"].items():
        src = write(files, "orig.lm", data)
        write_container(p, read_container(src))
        assert p.read_bytes() == data, name


# ---------------------------------------------------------------------- corpora
TEXT_MUTATIONS = st.lists(line_mutations(WORDS) | BYTE_MUTATION | CONVENTION_MUTATION, min_size=1, max_size=4)


@fuzz_settings(150)
@given(mutations=TEXT_MUTATIONS, gz=st.booleans(), min_count=st.sampled_from([1, 2]), limit=LINE_LIMITS)
def test_fuzz_training_text(files, mutations, gz, min_count, limit):
    """load_training_corpus (and Vocabulary.from_text, and Corpus.from_text with the
    models' vocabularies): a mutated training text, plain or gzip, reads as a
    plain-Python reading of its bytes does (words seen fewer than ``min_count`` times as
    ``<unk>``), or raises CorpusError naming it; the models score what was read."""
    data = mutate_lines(files["text"], mutations)
    p = write(files, "train.txt.gz" if gz else "train.txt", gzip_bytes(data) if gz else data)
    want = reference_sentences(data)
    corpus = read_or_error(lambda: load_training_corpus(p, min_count=min_count), p, CorpusError, data, limit)
    if corpus is None:
        return
    assert want is not None, "read a text that is not valid UTF-8 or holds no sentence"
    check_corpus(corpus, want, corpus.vocab)
    counts = Counter(w for toks in want for w in strip_markers(toks))
    assert set(corpus.vocab.words[3:]) == {w for w, c in counts.items() if c >= min_count} - {BOS, EOS, UNK}
    assert read_or_error(lambda: Vocabulary.from_text(p, min_count=min_count), p, CorpusError, data,
                         limit) == corpus.vocab
    for model in (files["models"]["tree"], files["kn"]):
        vocab = model.vocab
        encoded = read_or_error(lambda: Corpus.from_text(p, vocab), p, CorpusError, data, limit)
        check_corpus(encoded, want, vocab)
        with watchdog():
            check_scores(model, encoded)


@fuzz_settings(100)
@given(mutations=BYTE_MUTATIONS, mutate_compressed=st.booleans())
def test_fuzz_gzip_training_text(files, mutations, mutate_compressed):
    """A damaged gzip stream (its bytes mutated: header, deflate data, CRC, length,
    truncation) reads as Python's gzip module reads it, or raises CorpusError naming
    the file: never a zlib.error, EOFError or a text cut short without a word."""
    comp = gzip_bytes(files["text"])
    data = mutate_bytes(comp, mutations) if mutate_compressed else gzip_bytes(mutate_bytes(files["text"], mutations))
    p = write(files, "train.gz", data)
    want = reference_sentences(data)
    corpus = read_or_error(lambda: load_training_corpus(p), p, CorpusError)
    if corpus is not None:
        assert want is not None, "read a damaged gzip stream, or a text that is not UTF-8, without an error"
        check_corpus(corpus, want, corpus.vocab)


@fuzz_settings(100)
@given(mutations=TEXT_MUTATIONS, limit=LINE_LIMITS)
def test_fuzz_vocabulary_file(files, mutations, limit):
    """Vocabulary.from_file: a mutated vocabulary file gives the vocabulary of its
    first column (specials first, each word once; ``<unk>`` makes it open), or
    CorpusError naming it; a training text then encodes with it."""
    data = mutate_lines(files["vocab"], mutations)
    p = write(files, "vocab.txt", data)
    want = reference_sentences(data)
    vocab = read_or_error(lambda: Vocabulary.from_file(p), p, CorpusError, data, limit)
    if vocab is None:
        return
    assert want is not None, "read a file that is not valid UTF-8 or holds no word"
    words = [BOS, EOS, UNK]
    for toks in want:
        if toks[0] not in words:
            words.append(toks[0])
    assert vocab.words == words
    assert vocab.has_unk == any(t[0] == UNK for t in want)
    t = write(files, "text.txt", files["text"])
    corpus = read_or_error(lambda: load_training_corpus(t, vocab_path=p), p, CorpusError)
    check_corpus(corpus, reference_sentences(files["text"]), vocab)


# ---------------------------------------------------------------------- ARPA
ARPA_TOKENS = [b"nan", b"NaN", b"inf", b"-inf", b"infinity", b"1e400", b"-1e400", b"1e-400", b"1_0", b"0x10",
               b"+1", b"5", b"-99", b"-0", b"--1", b"1e", b".", b"", b"-1.5e+2", b"\xef\xbc\x93", b"<s>", b"</s>",
               b"<unk>", b"the", b"zebra", b"\\data\\", b"\\end\\", b"\\1-grams:", b"\\2-grams:", b"\\4-grams:",
               b"ngram", b"ngram 1=3", b"ngram 4=1", b"\xff"]
ARPA_MUTATION = st.one_of(
    line_mutations(ARPA_TOKENS),
    st.tuples(st.just("header_count"), st.integers(1, 4),
              st.integers(0, 400) | st.sampled_from([2**31 - 1, 2**31, 2**32 + 1, 2**63 - 1, 2**64, 10**30])),
)
ARPA_MUTATIONS = st.lists(ARPA_MUTATION | BYTE_MUTATION | CONVENTION_MUTATION, min_size=1, max_size=3)


def mutate_arpa(data: bytes, mutations) -> bytes:
    for m in mutations:
        if m[0] == "header_count":
            data = re.sub(rb"ngram %d=\d+" % m[1], b"ngram %d=%d" % (m[1], m[2]), data, count=1)
        else:
            data = mutate_lines(data, [m])
    return data


def check_backoff_lm(lm: BackoffLM, data: bytes):
    """A model read from ``data`` is self-consistent and scores the test text, by the
    corpus protocol and by KenLM's API, alike."""
    header = {int(n): int(c) for n, c in re.findall(rb"^\s*ngram\s+(\d+)\s*=\s*(\d+)\s*$", convention_text(data),
                                                   re.M)}
    assert lm.counts == [header[n] for n in range(1, lm.order + 1)]
    V = len(lm.vocab)
    for n, (rows, lp, bow, hb) in enumerate(lm.ngrams, start=1):
        assert rows.shape == (len(lp), n) and len(bow) == len(lp) == len(hb)
        assert np.all((rows >= 0) & (rows < V))
    corpus = Corpus.from_sentences([s.split() for s in TEST], lm.vocab)
    check_scores(lm, corpus)
    for sentence in TEST:
        assert not math.isnan(lm.score(sentence))
    return lm.log10_probs(corpus)


def check_arpa_values(lm: BackoffLM):
    """Every log10 probability is <= 0 (or -inf, log 0), every back-off weight finite."""
    for n, (rows, lp, bow, hb) in enumerate(lm.ngrams, start=1):
        ok = (lp <= 0) | (lp == -np.inf)
        assert np.all(ok), f"{n}-gram log10 probability {lp[~ok][0]} accepted"
        assert np.all(np.isfinite(bow[hb])), f"{n}-gram back-off weight {bow[hb][~np.isfinite(bow[hb])][0]} accepted"


@fuzz_settings(300)
@given(mutations=ARPA_MUTATIONS, gz=st.booleans(), limit=LINE_LIMITS)
def test_fuzz_arpa(files, mutations, gz, limit):
    """BackoffLM.read_arpa: a mutated ARPA file (header counts changed, lines swapped,
    deleted or duplicated, numbers replaced by non-finite or malformed ones, words by
    unknown ones, bytes flipped, inserted, deleted, truncated), plain or gzip, gives
    ArpaError naming it or a model that agrees with its header and scores a text; read
    with ``only_for`` that text, the same scores."""
    data = mutate_arpa(files["arpa"], mutations)
    p = write(files, "lm.arpa.gz" if gz else "lm.arpa", gzip_bytes(data) if gz else data)
    # a plain file on disk is bounded by its size, not per line (suffixlm.io.read_text_bytes)
    lm = read_or_error(lambda: BackoffLM.read_arpa(p), p, ArpaError, data, limit, bounded=gz)
    if lm is None:
        return
    with watchdog():
        scores = check_backoff_lm(lm, data)
        small = BackoffLM.read_arpa(p, only_for=[s.split() for s in TEST])
        np.testing.assert_array_equal(small.log10_probs(Corpus.from_sentences([s.split() for s in TEST],
                                                                               small.vocab)), scores)
    if data == files["arpa"]:
        assert lm.arpa_bytes() == files["kn"].arpa_bytes()


@fuzz_settings(150)
@given(mutations=ARPA_MUTATIONS)
def test_fuzz_arpa_values_are_probabilities(files, mutations):
    """A model read from a mutated ARPA file holds log10 probabilities (<= 0, or log 0)
    and finite back-off weights: a value out of range or not finite is refused, as
    KenLM refuses a positive log probability."""
    data = mutate_arpa(files["arpa"], mutations)
    p = write(files, "lm.arpa", data)
    lm = read_or_error(lambda: BackoffLM.read_arpa(p), p, ArpaError)
    if lm is not None:
        check_arpa_values(lm)


@fuzz_settings(100)
@given(mutations=BYTE_MUTATIONS)
def test_fuzz_gzip_arpa(files, mutations):
    """The bytes of a gzip ARPA file mutated: ArpaError naming it, or the model of what
    Python's gzip module reads from it."""
    data = mutate_bytes(gzip_bytes(files["arpa"]), mutations)
    p = write(files, "lm.gz", data)
    lm = read_or_error(lambda: BackoffLM.read_arpa(p), p, ArpaError)
    content = gunzip_or_none(data) if data[:2] == GZIP_MAGIC else data
    if lm is None:
        return
    assert content is not None, "a damaged gzip stream was read without an error"
    with watchdog():
        check_backoff_lm(lm, content)


# ---------------------------------------------------------------------- log-linear model files
def model_scores(model):
    vocab = model.vocab_
    return model.log10_probs(Corpus.from_sentences([s.split() for s in TEST], vocab))


def check_normalised(model):
    """Every distribution the model gives after the contexts of TEST sums to one: the
    weights it read, whatever their values, make a language model."""
    vocab = model.vocab_
    targets = [w for i, w in enumerate(vocab.words) if i not in (0, 1) and (w != UNK or vocab.has_unk)]
    for ctx in ([], ["the"], ["saw", "the"], ["zebra", "bob"]):
        sents = [ctx + [w] for w in targets] + [ctx]  # the last: p(</s> | ctx)
        corpus = Corpus.from_sentences(sents, vocab)
        lp = model.log10_probs(corpus)
        end = np.cumsum(np.diff(corpus.offsets) - 1)  # one past each sentence's last predicted position
        last = np.concatenate([lp[end[:-1] - 2], lp[end[-1:] - 1]])  # w, then </s> after the bare context
        assert np.all(np.isfinite(last)) and math.isclose(float(np.sum(10.0 ** last)), 1.0, rel_tol=1e-9), last


#: what a model file cannot protect: any finite weights (>= 0 when positive) make a model, any
#: spelling of its words a vocabulary
FREE = {"weights", "base.lnB", "base.gamma", "vocab_utf8", "meta:lam", "meta:alpha", "meta:objective", "meta:penalty",
        "meta:positive"}


def check_model_load(files, name, path, touched):
    """``path`` loads as a model scoring TEST as ``name`` does, or (when the mutation
    touched FREE) as some normalised model, or raises ModelFormatError naming it."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = read_or_error(lambda: LogLinearLM.load(path), path, ModelFormatError)
    if m is None:
        return
    with watchdog():
        got = model_scores(m)
        kenlm = [m.score(s) for s in TEST]
        if touched & FREE:
            check_scores(m, Corpus.from_sentences([s.split() for s in TEST], m.vocab_))
            check_normalised(m)
            assert not np.any(np.isnan(kenlm)), kenlm
        else:
            original = files["models"][name]
            np.testing.assert_array_equal(got, model_scores(original))
            assert kenlm == [original.score(s) for s in TEST]


MODEL_NAMES = st.sampled_from(["tree", "trie", "kn", "events"])


@fuzz_settings(150)
@given(name=MODEL_NAMES, mutations=BYTE_MUTATIONS)
def test_fuzz_model_file_bytes(files, name, mutations):
    """LogLinearLM.load: a model file with bytes flipped, inserted, deleted, duplicated
    or cut off gives ModelFormatError naming it, or loads and scores as the original."""
    data = mutate_bytes(files["model_bytes"][name], mutations)
    check_model_load(files, name, write(files, "bytes.lm", data), set())


@fuzz_settings(500)
@given(name=MODEL_NAMES, mutations=CONTAINER_MUTATIONS)
def test_fuzz_model_file_members(files, name, mutations):
    """LogLinearLM.load on well-formed containers whose members were tampered with:
    arrays permuted, entries swapped or set out of range or non-finite, arrays swapped,
    of another dtype, shape or length, dropped or added, ``.npy`` headers that lie,
    header entries changed, removed, added or their JSON bytes damaged. ModelFormatError
    naming the file, or the original scores (a normalised model when only weights or
    the entries scoring ignores changed)."""
    src = write(files, "src.lm", files["model_bytes"][name])
    members, touched = mutate_container(read_container(src), "meta_json", mutations)
    p = files["dir"] / "members.lm"
    write_container(p, members)
    check_model_load(files, name, p, touched)


# ---------------------------------------------------------------------- load_model
@fuzz_settings(100)
@given(kind=st.sampled_from(["arpa", "arpa.gz", "tree", "kn"]), mutations=BYTE_MUTATIONS)
def test_fuzz_load_model(files, kind, mutations):
    """load_model tells the formats apart by content: any mutated model file, ARPA or
    log-linear, gives ArpaError or ModelFormatError naming it, or a model that scores."""
    valid = (files["arpa"] if kind == "arpa" else gzip_bytes(files["arpa"]) if kind == "arpa.gz"
             else files["model_bytes"][kind])
    p = write(files, "any.model", mutate_bytes(valid, mutations))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = read_or_error(lambda: load_model(p), p, (ArpaError, ModelFormatError))
    if m is not None:
        with watchdog():
            check_scores(m, Corpus.from_sentences([s.split() for s in TEST], m.vocab))


# ---------------------------------------------------------------------- found by the fuzz tests
def test_arpa_duplicate_ngram_is_refused_by_the_reader(files):
    """An ARPA file listing a 2-gram twice (the header count still right) is refused by
    read_arpa with an error naming the file and line, not read and then refused, without
    the file's name, by the first query."""
    lines = files["arpa"].split(b"\n")
    first = lines.index(b"\\2-grams:") + 1
    lines[first + 1] = lines[first]  # the second 2-gram replaced by a copy of the first
    p = write(files, "duplicate.arpa", b"\n".join(lines))
    with pytest.raises(ArpaError, match=re.escape(str(p)) + ":"):
        lm = BackoffLM.read_arpa(p)
        lm.log10_probs(Corpus.from_strings(TEST, vocab=lm.vocab))


@pytest.mark.parametrize("name, member, index, value", [
    ("tree", "weights", 0, 711.0), ("tree", "weights", 0, 1e308), ("kn", "base.lnB", slice(None), -800.0)],
    ids=["weight-711", "weight-1e308", "lnB-all-minus-800"])
def test_model_file_with_extreme_finite_values_is_refused_or_scores(files, name, member, index, value):
    """A weight too large for exp, or base log-probabilities too small for it (the loader
    checks finiteness and sign only): ModelFormatError, or a model whose probabilities
    are numbers that sum to one; not NaN, -inf or +inf scores everywhere."""
    members = read_container(write(files, "src.lm", files["model_bytes"][name]))
    members[member][index] = value
    p = files["dir"] / "extreme.lm"
    write_container(p, members)
    check_model_load(files, name, p, {member})


def test_model_file_with_base_u0_off_by_its_tolerance_is_refused_or_scores_the_same(files):
    """The header's base_u0 is checked against the value the root's base.lnB give with
    a tolerance of 1e-9 (rounding on another machine), but the loaded model scores with
    the header's value: within the tolerance, the scores of the model differ from the
    saved model's (here, by ~1e-9 relative). Refuse the file or use the derived value."""
    members = read_container(write(files, "src.lm", files["model_bytes"]["kn"]))
    meta = json.loads(members["meta_json"].tobytes())
    meta["base_u0"] += 1e-9
    members["meta_json"] = np.frombuffer(json.dumps(meta).encode("utf-8"), dtype=np.uint8)
    p = files["dir"] / "u0.lm"
    write_container(p, members)
    check_model_load(files, "kn", p, {"meta:base_u0"})


# ---------------------------------------------------------------------- crashes, in a child process
TAMPERED_TREE = [("tree.children", "permute"), ("tree.children", 10**6), ("tree.child_offsets", -5),
                 ("tree.child_offsets", 10**6), ("tree.succ_words", 10**6), ("tree.succ_offsets", 10**6),
                 ("tree.parent", 10**6), ("tree.context_position", -(2**40)), ("tree.tokens", 10**6),
                 ("tree.offsets", 10**6), ("tree.max_depth", 2**40), ("tree.collapsed", 0)]


def test_tampered_tree_arrays_do_not_crash_the_process(files):
    """Suffix-tree arrays of a model file set out of range (or a child list permuted) in
    an otherwise well-formed file: loading and scoring, in a child process (a kernel
    reading out of bounds may kill it), gives ModelFormatError, never a signal."""
    paths = []
    for k, (member, change) in enumerate(TAMPERED_TREE):
        src = write(files, "src.lm", files["model_bytes"]["tree"])
        members = read_container(src)
        a = members[member].reshape(-1)
        if change == "permute":
            a[:] = a[::-1]
        else:
            a[len(a) // 2] = change
        p = files["dir"] / f"tampered{k}.lm"
        write_container(p, members)
        paths.append(str(p))
    code = f"""
        import sys
        from suffixlm.corpus import Corpus
        from suffixlm.model import LogLinearLM, ModelFormatError
        for p in {paths!r}:
            try:
                m = LogLinearLM.load(p)
                m.log10_probs(Corpus.from_strings({TEST!r}, vocab=m.vocab_))
                m.score({TEST[0]!r})
                print("loaded", p)
            except ModelFormatError as e:
                print("refused", p if p in str(e) else "without the file name: " + str(e))
    """
    r = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300)
    assert r.returncode >= 0, f"killed by signal {-r.returncode}:\n{r.stdout}\n{r.stderr[-3000:]}"
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split("\n")[:-1] == [f"refused {p}" for p in paths], r.stdout
