"""Bad input and bad parameters give one clear error line, never a traceback or silent
garbage (the table in docs/bad_inputs.md names the test of each row).

Command-line cases assert the exit code (2: click usage error, 1: ``Error: ...``), that
exactly one ``Error:`` line names the problem, and that no exception escaped (click's
runner keeps an uncaught one in ``result.exception``). Python-API cases assert the
exception type and message.
"""

from __future__ import annotations

import gzip
import math
import os

import click
import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff.arpa import ArpaError, BackoffLM
from suffixlm.cli import main
from suffixlm.corpus import Corpus, CorpusError, Vocabulary, load_training_corpus
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.ngrams import count_ngrams
from suffixlm.options import INT32_MAX
from suffixlm.commands.params import FiniteFloat

TEXT = "the cat sat\nthe dog sat\na cat saw a dog\nthe dog saw the cat\n"
CONLL = "EU NNP B-NP\nrejects VBZ B-VP\n\nGerman JJ B-NP\ncall NN I-NP\n"
PATTERNS = "U:w=%x[0,0]\nU:p=%x[0,1]\nB\n"


def run(*args, input=None):
    return CliRunner().invoke(main, [str(a) for a in args], input=input)


def error_line(r, *words, code=1):
    """The one ``Error:`` line of a failed run, checked: exit code, no escaped exception,
    no traceback, and ``words`` in it."""
    assert r.exit_code == code, r.output
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output
    errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
    assert len(errors) == 1, r.output
    for w in words:
        assert w in errors[0], errors[0]
    return errors[0]


@pytest.fixture
def files(tmp_path):
    (tmp_path / "train.txt").write_text(TEXT, encoding="utf-8")
    (tmp_path / "train.conll").write_text(CONLL, encoding="utf-8")
    (tmp_path / "pat.txt").write_text(PATTERNS, encoding="utf-8")
    return tmp_path


@pytest.fixture
def arpa(files):
    p = files / "m.arpa"
    KneserNeyLM(2, min_counts=[1]).fit(load_training_corpus(files / "train.txt")).write_arpa(p)
    return p


@pytest.fixture
def crf_model(files):
    m = files / "m.crf"
    r = run("crf", "train", "-p", files / "pat.txt", "--quiet", files / "train.conll", m)
    assert r.exit_code == 0, r.output
    return m


# ---------------------------------------------------------------------- 1. parameters
def test_crf_rho1_nan_is_refused_before_training(files):
    """Reported: ``--rho1 nan`` trained an all-zero model with exit code 0."""
    for value in ("nan", "inf", "-inf", "-1"):
        r = run("crf", "train", "-p", files / "pat.txt", "--rho1", value, files / "train.conll", files / "m.crf")
        error_line(r, "--rho1", code=2)
    assert not (files / "m.crf").exists()


def test_crf_api_refuses_non_finite_and_out_of_range_parameters():
    from crf import CRF

    X, y = [[["a"], ["b"]]], [["A", "B"]]
    for kw, exc, what in [(dict(rho1=math.nan), ValueError, "rho1"), (dict(rho2=math.inf), ValueError, "rho2"),
                          (dict(stopeps=-1.0), ValueError, "stopeps"), (dict(history=0), ValueError, "history"),
                          (dict(max_iter=-1), ValueError, "max_iter"), (dict(seed=-1), ValueError, "seed"),
                          (dict(threads=0), ValueError, "threads"), (dict(rho1="0.5"), TypeError, "rho1"),
                          (dict(history=2.5), TypeError, "history"), (dict(recursion="fast"), ValueError, "recursion")]:
        with pytest.raises(exc, match=what):
            CRF(patterns=["U:w=%x[0,0]"], **kw).fit(X, y)


def test_train_tol_nan_is_refused(files):
    """Reported: ``suffixlm train --tol nan`` was accepted."""
    r = run("train", files / "train.txt", "-o", files / "m.lm", "--tol", "nan")
    error_line(r, "--tol", "not a finite number", code=2)
    assert not (files / "m.lm").exists()
    from suffixlm.model import LogLinearLM

    with pytest.raises(ValueError, match="tol = nan: expected a finite number >= 0"):
        LogLinearLM(order=2, tol=math.nan, max_iter=3).fit(Corpus.from_strings(["a b c", "b c a"]))


def _commands():
    ctx = click.Context(main)

    def walk(cmd, path):
        if isinstance(cmd, click.Group):
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), path + [name])
        else:
            yield path, cmd

    return list(walk(main, []))


def test_every_numeric_option_is_bounded():
    """Every float option of every command is a FiniteFloat (click's FloatRange lets nan
    and inf through) and every integer option has explicit bounds (a huge value would
    overflow a kernel's 64-bit integer or size an allocation)."""
    seen = 0
    for path, cmd in _commands():
        for p in cmd.params:
            if isinstance(p.type, click.types.FloatParamType):
                assert isinstance(p.type, FiniteFloat), (path, p.name)
                seen += 1
            elif isinstance(p.type, click.types.IntParamType):
                assert isinstance(p.type, click.IntRange) and p.type.min is not None, (path, p.name)
                # --threads: more than the cores means all cores (clamped), so it needs no maximum
                assert p.type.max is not None or p.name == "threads", (path, p.name)
                seen += 1
    assert seen >= 30


FLOAT_OPTIONS = [
    (["train", "{train}", "-o", "{out}"], ["--alpha", "--discount", "--batch-growth", "--tol", "--lam"]),
    (["compare", "{train}", "{train}"], ["--lam", "--alpha"]),
    (["demo"], ["--lam"]),
    (["kn", "{train}", "-o", "{out}"], ["--prune"]),
    (["ppl", "--arpa", "{arpa}", "{train}", "--mix-lm", "{arpa}"], ["--lambda"]),
    (["ppl", "--arpa", "{arpa}", "{train}", "--mix-lm", "{arpa}", "--mix-lm2", "{arpa}"], ["--mix-lambda2"]),
    (["prune", "{arpa}", "-o", "{out}"], ["--threshold"]),
    (["best-mix", "{train}", "{arpa}", "{arpa}"], ["--precision"]),
    (["crf", "train", "-p", "{pat}", "{conll}", "{out}"], ["--rho1", "--rho2", "--stopeps"]),
]


@pytest.mark.parametrize("value", ["nan", "inf", "-inf"])
def test_float_options_refuse_non_finite_values(files, arpa, value):
    fill = dict(train=files / "train.txt", out=files / "out", arpa=arpa, pat=files / "pat.txt",
                conll=files / "train.conll")
    for base, options in FLOAT_OPTIONS:
        args = [a.format(**fill) for a in base]
        for opt in options:
            r = run(*args, opt, value)
            error_line(r, opt, code=2)
    assert not (files / "out").exists()


INT_OPTIONS = [
    (["train", "{train}", "-o", "{out}"], ["--order", "--epochs", "--batch-size", "--min-count", "--seed"]),
    (["compare", "{train}", "{train}"], ["--epochs", "--orders", "--kn-min-count"]),
    (["kn", "{train}", "-o", "{out}"], ["--order", "--min-count"]),
    (["tree", "{train}"], ["--order", "--min-count"]),
    (["prune", "{arpa}", "-o", "{out}", "-t", "1e-3"], ["--min-order"]),
    (["demo"], ["--order"]),
    (["crf", "train", "-p", "{pat}", "{conll}", "{out}"], ["--maxiter", "--stopwin", "--history", "--seed"]),
    (["crf", "label", "-m", "{model}", "{conll}"], ["--nbest"]),
]


@pytest.mark.parametrize("value", ["99999999999999999999", "-1", "0.5"])
def test_integer_options_refuse_huge_negative_and_fractional_values(files, arpa, crf_model, value):
    """Reported: ``--min-count 99999999999999999999`` overflowed a kernel."""
    fill = dict(train=files / "train.txt", out=files / "out", arpa=arpa, pat=files / "pat.txt",
                conll=files / "train.conll", model=crf_model)
    for base, options in INT_OPTIONS:
        args = [a.format(**fill) for a in base]
        for opt in options:
            r = run(*args, opt, value)
            error_line(r, opt, code=2)
    assert not (files / "out").exists()


@pytest.mark.parametrize("order", ["0", "65"])
def test_order_outside_1_to_64_is_a_usage_error(files, order):
    for args in (["train", files / "train.txt", "-o", files / "out"], ["kn", files / "train.txt", "-o", files / "out"],
                 ["tree", files / "train.txt"], ["compare", files / "train.txt", files / "train.txt"]):
        flag = "--orders" if args[0] == "compare" else "--order"
        error_line(run(*args, flag, order), flag, code=2)


def test_min_count_leaving_no_word_is_an_error(files):
    r = run("train", files / "train.txt", "-o", files / "out", "--min-count", "1000")
    error_line(r, "train.txt", "leaves no word", "seen 4 times")
    with pytest.raises(CorpusError, match="leaves no word"):
        load_training_corpus(files / "train.txt", min_count=INT32_MAX)


def test_kneser_ney_api_parameters():
    """Checked by fit (scikit-learn's protocol: the constructor only stores them)."""
    ref = Corpus.from_strings(["a b"])
    with pytest.raises(TypeError, match="order must be an integer"):
        KneserNeyLM(2.5).fit(ref)
    with pytest.raises(ValueError, match="order must be >= 1"):
        KneserNeyLM(0).fit(ref)
    with pytest.raises(ValueError, match="min_counts must be integers from 1"):
        KneserNeyLM(3, min_counts=[1, 10**20]).fit(ref)
    with pytest.raises(TypeError, match="min_counts must hold integers"):
        KneserNeyLM(3, min_counts=[math.nan]).fit(ref)
    lm = KneserNeyLM(0)  # stored as given, refused by fit
    assert lm.get_params()["order"] == 0
    with pytest.raises(TypeError, match="order must be an integer"):
        count_ngrams(Corpus.from_strings(["a b"]), 2.0)


# ---------------------------------------------------------------------- 2. <s> inside a sentence
def test_bos_inside_a_sentence_is_refused_by_train_kn_and_ppl(files, arpa):
    """Reported: a RuntimeError traceback in ``train``; ``kn`` / ``ppl`` scored it at -99."""
    mid = files / "mid.txt"
    mid.write_text("the cat\na <s> b c\n", encoding="utf-8")
    for args in (["train", mid, "-o", files / "out", "--epochs", "2"], ["kn", mid, "-o", files / "out"],
                 ["ppl", "--arpa", arpa, mid], ["best-mix", mid, arpa, arpa], ["tree", mid, "--order", "2"]):
        error_line(run(*args), f"{mid}:2:", "'<s>' inside a sentence (word 2)")
    assert not (files / "out").exists()
    with pytest.raises(CorpusError, match="sentence 1: '<s>' inside a sentence"):
        Corpus.from_strings(["a <s> b"])


def test_sentence_markers_around_a_line_and_eos_inside_one_are_fine(files):
    text = files / "marks.txt"
    text.write_text("<s> the cat </s>\nthe </s> dog\n<s> </s>\n", encoding="utf-8")
    c = load_training_corpus(text)
    assert list(c.sentences_as_words()) == [["the", "cat"], ["the", "</s>", "dog"], []]
    r = run("kn", text, "-o", files / "m.arpa", "--order", "3", "-q")
    assert r.exit_code == 0, r.output
    assert run("ppl", "--arpa", files / "m.arpa", text).exit_code == 0


# ---------------------------------------------------------------------- 3. order above the data
def test_kn_order_above_the_longest_sentence_writes_empty_sections(files):
    """Reported: ``suffixlm kn --order 7`` on a 3-word text raised IndexError. As SRILM,
    the higher orders are empty sections, and the lower ones are the order-5 model's."""
    three = files / "three.txt"
    three.write_text("a b c\n", encoding="utf-8")
    r7 = run("kn", three, "-o", files / "o7.arpa", "--order", "7", "--min-count", "none", "-q")
    r5 = run("kn", three, "-o", files / "o5.arpa", "--order", "5", "--min-count", "none", "-q")
    assert r7.exit_code == 0 and r5.exit_code == 0, r7.output
    o7 = (files / "o7.arpa").read_text()
    assert "ngram 6=0\nngram 7=0\n" in o7 and "\\6-grams:\n\n\\7-grams:\n\n\\end\\" in o7
    strip = o7.replace("ngram 6=0\nngram 7=0\n", "").replace("\n\\6-grams:\n\n\\7-grams:\n", "")
    assert strip == (files / "o5.arpa").read_text()
    r = run("ppl", "--arpa", files / "o7.arpa", three)
    assert r.exit_code == 0 and "0 zeroprobs" in r.output, r.output


# ---------------------------------------------------------------------- 4. NaN / inf in ARPA files
ARPA_TEXT = ("\n\\data\\\nngram 1=4\nngram 2=2\n\n\\1-grams:\n-99\t<s>\t-0.3\n-0.5\t</s>\n-0.5\ta\t-0.2\n-0.7\tb\n\n"
             "\\2-grams:\n-0.2\t<s> a\t-0.1\n-0.3\ta b\n\n\\end\\\n")


@pytest.mark.parametrize("old,new,line,what", [
    ("-0.5\ta\t", "nan\ta\t", 9, "not a number"),
    ("-0.5\ta\t", "inf\ta\t", 9, "not a number"),
    ("-0.5\ta\t", "1e400\ta\t", 9, "probability above 0"),
    ("-0.5\ta\t", "0.5\ta\t", 9, "probability above 0"),
    ("a\t-0.2", "a\tnan", 9, "not a number"),
    ("a\t-0.2", "a\t-inf", 9, "not a number"),
    ("a\t-0.2", "a\t-1e400", 9, "back-off weight is not a finite"),
    ("-0.2\t<s> a", "NaN\t<s> a", 13, "probability is not a number"),
    ("-0.3\ta b", "1e39\ta b", 14, "probability above 0"),
    ("<s> a\t-0.1", "<s> a\tinf", 13, "back-off weight is not a number"),
    ("<s> a\t-0.1", "<s> a\t1e39", 13, "back-off weight is not a finite"),
])
def test_arpa_nan_and_inf_are_refused_at_load_with_file_and_line(tmp_path, old, new, line, what):
    """Reported: NaN / inf in an ARPA file raised only while scoring."""
    assert ARPA_TEXT.count(old) == 1
    p = tmp_path / "bad.arpa"
    p.write_text(ARPA_TEXT.replace(old, new), encoding="utf-8")
    with pytest.raises(ArpaError, match=f"bad.arpa:{line}: {what}"):
        BackoffLM.read_arpa(p)
    test = tmp_path / "t.txt"
    test.write_text("a b\n", encoding="utf-8")
    error_line(run("ppl", "--arpa", p, test), f"bad.arpa:{line}:", what)


def test_arpa_minus_inf_probability_is_a_zero_probability(tmp_path):
    """``-inf`` (printf's log 0; SRILM and KenLM read it) is read as -99 is: probability 0."""
    p = tmp_path / "m.arpa"
    p.write_text(ARPA_TEXT.replace("-0.3\ta b", "-inf\ta b").replace("-0.7\tb", "-Infinity\tb"), encoding="utf-8")
    lm = BackoffLM.read_arpa(p)
    lp = lm.log10_probs(Corpus.from_strings(["a b"], vocab=lm.vocab))
    assert lp[1] == -np.inf
    assert "-99\ta b" in lm.arpa_bytes().decode()


# ---------------------------------------------------------------------- 5. damaged gzip
def _damaged(data: bytes, how: str) -> bytes:
    gz = bytearray(gzip.compress(data, mtime=0))
    if how == "truncated":
        return bytes(gz[: len(gz) // 2])
    if how == "crc":
        gz[-8:-4] = b"\0\0\0\0"
    elif how == "method":
        gz[2] = 7  # an unknown compression method in the header
    elif how == "trailing":
        gz += b"garbage!"
    return bytes(gz)


@pytest.mark.parametrize("how", ["truncated", "crc", "method", "trailing"])
def test_damaged_gzip_is_one_error_naming_the_file(files, arpa, how):
    """Reported: zlib.error / EOFError / gzip.BadGzipFile tracebacks for gzip inputs."""
    text = files / "t.txt.gz"
    text.write_bytes(_damaged(TEXT.encode(), how))
    model = files / "m.arpa.gz"
    model.write_bytes(_damaged(arpa.read_bytes(), how))
    conll = files / "c.conll.gz"
    conll.write_bytes(_damaged(CONLL.encode(), how))
    for args, name in [(["kn", text, "-o", files / "out"], text), (["train", text, "-o", files / "out"], text),
                       (["ppl", "--arpa", arpa, text], text), (["ppl", "--arpa", model, files / "train.txt"], model),
                       (["prune", model, "-t", "1e-3", "-o", files / "out"], model),
                       (["crf", "train", "-p", files / "pat.txt", conll, files / "out"], conll),
                       (["crf", "eval", conll], conll)]:
        error_line(run(*args), str(name), "damaged gzip data")
    assert not (files / "out").exists()


# ---------------------------------------------------------------------- 6. odd dtypes in the API
def test_corpus_arrays_of_other_integer_dtypes_are_converted():
    ref = Corpus.from_strings(["a b c", "b c a", "c a b"])
    want = KneserNeyLM(2, min_counts=[1]).fit(ref).model_.arpa_bytes()
    for conv in (lambda a: a.astype(np.int64), lambda a: a.astype(np.uint16), lambda a: a.tolist()):
        c = Corpus(conv(ref.tokens), conv(ref.offsets), ref.vocab, ref.n_words, 0)
        assert c.tokens.dtype == np.int32 and c.offsets.dtype == np.int64
        assert KneserNeyLM(2, min_counts=[1]).fit(c).model_.arpa_bytes() == want


def test_corpus_arrays_that_are_not_integers_or_out_of_range_are_refused():
    ref = Corpus.from_strings(["a b c", "b c a"])
    with pytest.raises(TypeError, match="tokens must be an integer array, got dtype float64"):
        Corpus(ref.tokens.astype(float), ref.offsets, ref.vocab, ref.n_words, 0)
    with pytest.raises(TypeError, match="offsets must be an integer array, got dtype object"):
        Corpus(ref.tokens, ref.offsets.astype(object), ref.vocab, ref.n_words, 0)
    with pytest.raises(ValueError, match="tokens must be 1-d"):
        Corpus(ref.tokens.reshape(2, -1), ref.offsets, ref.vocab, ref.n_words, 0)
    # an id outside the vocabulary made the counting kernel crash the process
    bad = Corpus(np.array([0, 5, 99, 1], dtype=np.int32), np.array([0, 4]), ref.vocab, 2, 0)
    with pytest.raises(ValueError, match="token 2 has id 99; ids must be >= 0 and < 6"):
        KneserNeyLM(2).fit(bad)
    lm = KneserNeyLM(2, min_counts=[1]).fit(ref).model_
    with pytest.raises(ValueError, match="token 2 has id 99"):
        lm.log10_probs(bad)
    with pytest.raises(ValueError, match="offsets must increase"):
        count_ngrams(Corpus(ref.tokens, np.array([0, 5, 3, len(ref.tokens)]), ref.vocab, 6, 0), 2)
    with pytest.raises(CorpusError, match="'<s>' at token 5, inside sentence 1"):
        count_ngrams(Corpus(ref.tokens, np.array([0, len(ref.tokens)]), ref.vocab, 6, 0), 2)
    with pytest.raises(TypeError, match="not one string"):
        Corpus.from_strings("a b c")
    with pytest.raises(TypeError, match="sentence 1: a sentence must be a list of words"):
        Corpus.from_sentences(["a b c"], ref.vocab)


def test_backoff_model_arrays_are_checked():
    v = Vocabulary(["<s>", "</s>", "<unk>", "a"])
    ok = (np.arange(4).reshape(-1, 1), np.full(4, -0.5), np.zeros(4), np.zeros(4, bool))
    assert BackoffLM(v, [ok]).order == 1
    with pytest.raises(TypeError, match="word ids must be integers"):
        BackoffLM(v, [(ok[0] + 0.5,) + ok[1:]])
    with pytest.raises(ValueError, match=r"rows must have shape \(m, 1\)"):
        BackoffLM(v, [(np.arange(4).reshape(2, 2),) + ok[1:]])
    with pytest.raises(ValueError, match="outside the vocabulary"):
        BackoffLM(v, [(ok[0] + 1,) + ok[1:]])
    with pytest.raises(ValueError, match="NaN"):
        BackoffLM(v, [(ok[0], np.array([-1, math.nan, -1, -1]), ok[2], ok[3])])
    with pytest.raises(ValueError, match=r"logprob must have shape \(4,\)"):
        BackoffLM(v, [(ok[0], ok[1][:3], ok[2], ok[3])])


# ---------------------------------------------------------------------- 7. unwritable outputs
def test_crf_label_into_an_unwritable_place_fails_before_any_work(files):
    """Reported: a traceback, after the labelling. The model given here is not even a
    model: the output is checked first."""
    not_a_model = files / "not.crf"
    not_a_model.write_text("garbage")
    for out, why in [(files / "train.txt" / "out.txt", "a part of the path is not a directory"),
                     (files / "missing" / "out.txt", "no such directory"), (files, "is a directory")]:
        r = run("crf", "label", "-m", not_a_model, files / "train.conll", out)
        if out == files:
            error_line(r, "is a directory", code=2)  # click's own check of the argument
        else:
            error_line(r, f"{out}: cannot write: {why}")
    if os.geteuid() != 0:  # root writes anywhere
        ro = files / "ro"
        ro.mkdir()
        ro.chmod(0o555)
        error_line(run("crf", "label", "-m", not_a_model, files / "train.conll", ro / "o.txt"), "permission denied")


def test_every_output_is_checked_before_the_work(files, arpa, crf_model):
    bad = files / "train.txt" / "out"  # a regular file as a directory: refused even for root
    for args in (["train", files / "train.txt", "-o", bad], ["kn", files / "train.txt", "-o", bad],
                 ["prune", arpa, "-t", "1e-3", "-o", bad], ["export", files / "no.lm", "-o", bad],
                 ["ppl", "--arpa", arpa, files / "train.txt", "--mix-lm", arpa, "--write-lm", bad],
                 ["compare", files / "train.txt", files / "train.txt", "--plot", bad],
                 ["crf", "train", "-p", files / "pat.txt", files / "train.conll", bad],
                 ["crf", "dump", crf_model, bad]):
        error_line(run(*args), f"{bad}: cannot write: a part of the path is not a directory")


# ---------------------------------------------------------------------- 8. invalid UTF-8 in CoNLL files
@pytest.mark.parametrize("gz", [False, True])
def test_invalid_utf8_in_crf_files_names_its_line(files, crf_model, gz):
    """Reported: the wrong line number. Line 6 here, after a blank line, CRLF ends and a
    valid non-ASCII word (the number must count lines, not decoded characters)."""
    data = "EU NNP B-NP\r\nr\u00e9jects VBZ B-VP\r\n\r\nGerman JJ B-NP\r\ncall NN I-NP\r\n".encode()
    data += b"to\xff TO B-PP\r\n"
    bad = files / ("bad.conll.gz" if gz else "bad.conll")
    bad.write_bytes(gzip.compress(data) if gz else data)
    for args in (["crf", "train", "-p", files / "pat.txt", bad, files / "out"], ["crf", "label", "-m", crf_model, bad],
                 ["crf", "eval", bad], ["crf", "train", "-p", files / "pat.txt", "--devel", bad, files / "train.conll",
                                        files / "out"]):
        error_line(run(*args), f"{bad}:6: invalid UTF-8")
    r = run("crf", "label", "-m", crf_model, input=data)
    error_line(r, "<stdin>:6: invalid UTF-8")


# ---------------------------------------------------------------------- 9. other odd inputs
@pytest.mark.parametrize("kind", ["empty", "blank", "directory", "devnull", "binary", "missing"])
def test_odd_input_files(files, arpa, kind):
    p = {"empty": files / "empty.txt", "blank": files / "blank.txt", "directory": files / "dir",
         "devnull": os.devnull, "binary": files / "bin.dat", "missing": files / "missing.txt"}[kind]
    if kind == "empty":
        p.write_bytes(b"")
    elif kind == "blank":
        p.write_bytes(b"\n \n\t\n")
    elif kind == "directory":
        p.mkdir()
    elif kind == "binary":
        p.write_bytes(bytes(range(256)) * 8)
    for args in (["kn", p, "-o", files / "out"], ["train", p, "-o", files / "out"], ["ppl", "--arpa", arpa, p],
                 ["ppl", "--arpa", p, files / "train.txt"], ["prune", p, "-t", "1e-3", "-o", files / "out"],
                 ["tree", p, "--order", "2"], ["crf", "train", "-p", files / "pat.txt", p, files / "out"],
                 ["train", files / "train.txt", "-o", files / "out", "--vocab", p], ["export", p, "-o", files / "out"]):
        r = run(*args)
        assert r.exit_code in (1, 2), (args, r.output)
        error_line(r, code=r.exit_code)
    assert not (files / "out").exists()


def test_symbolic_link_loops_are_named_not_missing(files, arpa, crf_model):
    """Before: a symlink loop given as an input was "File 'loop' does not exist" where click
    checks the path (crf train / label / dump, compare --arpa), a capitalised strerror
    elsewhere; a link to nothing is said to be one."""
    loop = files / "loop"
    os.symlink("loop", loop)
    dangling = files / "dangling"
    os.symlink("nothing-here", dangling)
    cases = [["kn", loop, "-o", files / "out"], ["train", loop, "-o", files / "out"], ["ppl", "--arpa", arpa, loop],
             ["ppl", "--arpa", loop, files / "train.txt"], ["tree", loop, "--order", "2"],
             ["crf", "train", "-p", files / "pat.txt", loop, files / "out"],
             ["crf", "train", "-p", loop, files / "train.conll", files / "out"],
             ["crf", "train", "-p", files / "pat.txt", "--devel", loop, files / "train.conll", files / "out"],
             ["crf", "label", "-m", loop, files / "train.conll"], ["crf", "label", "-m", crf_model, loop],
             ["crf", "dump", loop], ["crf", "eval", loop],
             ["compare", files / "train.txt", files / "train.txt", "--arpa", loop]]
    for args in cases:
        r = run(*args)
        line = error_line(r, "too many levels of symbolic links", code=r.exit_code)
        assert r.exit_code in (1, 2) and "does not exist" not in line, (args, line)
    line = error_line(run("crf", "train", "-p", files / "pat.txt", dangling, files / "out"), code=2)
    assert "a symbolic link to a missing file (nothing-here)" in line
    assert not (files / "out").exists()


@pytest.mark.parametrize("orders", ["2,,3", "2,", ",3", ",", "2, ,3"])
def test_compare_orders_with_an_empty_part_are_refused(files, orders):
    """Before: '--orders 2,,3' was read as 2,3."""
    r = run("compare", files / "train.txt", files / "train.txt", "--orders", orders)
    error_line(r, "--orders", "an empty order between commas", code=2)


def test_lm_fit_takes_any_iterable_of_sentences_and_names_other_values(files):
    sentences = TEXT.splitlines()
    a = KneserNeyLM(2, min_counts=[1]).fit(sentences)
    b = KneserNeyLM(2, min_counts=[1]).fit(s for s in sentences)
    assert a.perplexity(sentences[0]) == b.perplexity(sentences[0])
    from suffixlm.model import LogLinearLM

    c = LogLinearLM(order=2, max_iter=3).fit(s for s in sentences)
    d = LogLinearLM(order=2, max_iter=3).fit(sentences, valid=iter(sentences[:2]))
    np.testing.assert_array_equal(c.weights_, LogLinearLM(order=2, max_iter=3).fit(sentences).weights_)
    assert d.n_iter_ >= 1
    for est in (KneserNeyLM(2), LogLinearLM(order=2)):
        with pytest.raises(TypeError, match="expected a Corpus, a text file or an iterable of sentence strings .*"
                                            "not a int"):
            est.fit(5)


def test_labelling_an_empty_input_gives_an_empty_output(files, crf_model):
    """A filter: nothing in, nothing out (documented, not an error)."""
    (files / "empty.conll").write_bytes(b"")
    r = run("crf", "label", "-m", crf_model, files / "empty.conll", files / "out.txt")
    assert r.exit_code == 0 and (files / "out.txt").read_bytes() == b""


def test_long_tokens_and_long_lines_are_read(files):
    """No line or token length limit (memory grows with the longest line only)."""
    long = files / "long.txt"
    words = [f"w{i % 97}" for i in range(200_000)]
    long.write_text(" ".join(words) + "\nx" + "y" * 100_000 + " a\n", encoding="utf-8")
    r = run("kn", long, "-o", files / "m.arpa", "--order", "3", "-q")
    assert r.exit_code == 0, r.output
    lm = BackoffLM.read_arpa(files / "m.arpa")
    assert "x" + "y" * 100_000 in lm.vocab.index


def test_vocabulary_file_with_duplicates_counts_each_word_once(files):
    dup = files / "vocab.txt"
    dup.write_text("the\ncat\nthe\n<s>\ncat 3\ndog\n", encoding="utf-8")
    assert Vocabulary.from_file(dup).words == ["<s>", "</s>", "<unk>", "the", "cat", "dog"]


def test_out_of_memory_is_one_line(files, monkeypatch):
    import suffixlm.corpus

    def boom(*a, **k):
        raise MemoryError("Unable to allocate 7.46 PiB for an array")

    monkeypatch.setattr(suffixlm.corpus, "load_training_corpus", boom)
    error_line(run("kn", files / "train.txt", "-o", files / "out"), "out of memory", "7.46 PiB")
