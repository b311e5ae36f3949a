"""Quantised binary models (suffixlm.backoff.quantize, ``build-binary --quantize``): the
codebooks against brute force, the quantised table's every query against the exact
kernels on the table of centres it codes (bit for bit), the loader's checks, the
command line."""

from __future__ import annotations

import json
import zlib

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff import _table_numpy as T
from suffixlm.backoff import table
from suffixlm.backoff.binary import BinaryFormatError, BinaryLM, write_binary
from suffixlm.backoff.kn import KneserNeyLM
from suffixlm.backoff.prune import prune_entropy
from suffixlm.backoff.quantize import codebook, dequantize_table, encode, make_bins, quantize_table
from suffixlm.backoff.table import build_table
from suffixlm.cli import main
from suffixlm.corpus import Corpus

from .test_binary import _assert_same, _damaged_answers, _header_len, _random_corpus, _sentences


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


# ---------------------------------------------------------------------------- codebooks
@pytest.mark.parametrize("n, bins", [(0, 4), (1, 4), (3, 8), (10, 4), (1000, 16), (257, 255)])
def test_bins_are_equal_count_means(n, bins):
    rng = np.random.default_rng(n + bins)
    v = rng.normal(-2, 1, n).astype(np.float32)
    got = make_bins(v, bins)
    s = np.sort(v)
    want, prev = [], 0.0 if n == 0 else s[0]
    for i in range(bins):  # KenLM's MakeBins, one bin at a time
        part = s[n * i // bins:n * (i + 1) // bins]
        if len(part):
            prev = np.float32(sum(float(x) for x in part) / len(part))
        want.append(prev)
    assert np.allclose(got, np.array(want, dtype=np.float32), rtol=0, atol=1e-6)
    assert np.all(np.diff(got) >= 0)


def test_each_value_gets_its_nearest_centre():
    rng = np.random.default_rng(1)
    centres = np.sort(rng.normal(0, 1, 13).astype(np.float32))
    values = np.concatenate([rng.normal(0, 2, 500).astype(np.float32), centres,
                             (centres[:-1] + centres[1:]) / 2]).astype(np.float32)  # ties too
    got = encode(values, centres)
    for v, c in zip(values, got):
        d = np.abs(centres.astype(np.float64) - np.float64(v))
        best = np.flatnonzero(d == d.min())
        assert c == best[-1]  # the nearest; of two as near, the upper (KenLM's rule)


def test_zero_and_minus_infinity_keep_codes_of_their_own():
    v = np.array([0, 0, -0.5, -1.5, -np.inf, -2.0, 0], dtype=np.float32)
    centres, codes = codebook(v, 2, exact=(-np.inf, 0.0))
    assert centres[codes[4]] == -np.inf and centres[codes[0]] == 0 and codes[0] == codes[1] == codes[6]
    assert np.isfinite(centres[codes[[2, 3, 5]]]).all()
    centres, codes = codebook(np.array([-1.0, -2.0], dtype=np.float32), 1, exact=(0.0,))
    assert centres[0] == 0 and codes.tolist() == [1, 1]  # 0 has its code even when absent
    with pytest.raises(ValueError, match="NaN"):
        codebook(np.array([np.nan], dtype=np.float32), 4)


# ---------------------------------------------------------------------------- the table
def _models(seed, order):
    corpus = Corpus.from_strings(_random_corpus(seed, n=150, vocab=20))
    arpa = KneserNeyLM(order=order, min_counts=[1, 1, 2] if seed % 2 else [1]).fit(corpus).model_
    if seed >= 2 and order > 1:
        arpa = prune_entropy(arpa, 0.02)  # blanks
    return arpa


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("order", [2, 3, 5])
def test_quantised_table_round_trip(seed, order):
    arpa = _models(seed, order)
    D, S = build_table(arpa)
    V = len(arpa.vocab)
    Q = quantize_table(D, V, S, order, 3, 2)
    assert Q.dtype == np.uint64 and Q.shape[0] == V + S + 2 * (order + 1) + V + 256 * (order + 1)
    R = dequantize_table(Q, V, S, order)
    assert np.array_equal(R[0::2], D[0::2])  # keys, flags, empty slots and directory
    F, G = D.view(np.float32), R.view(np.float32)
    assert np.array_equal(F[2:4 * V:4], G[2:4 * V:4]) and np.array_equal(F[3:4 * V:4], G[3:4 * V:4])
    Qi = Q.view(np.int64)
    for L in range(2, order + 1):
        B, n = T.region(D, V, S, L)
        rows = np.flatnonzero(D[2 * (V + B):2 * (V + B + n):2] != T.EMPTY) + V + B
        pc = (Qi[rows] >> T.QPROB_SHIFT) & T.QCODE_MASK
        bc = (Qi[rows] >> T.QBOW_SHIFT) & T.QCODE_MASK
        assert pc.max(initial=0) < 8 and bc.max(initial=0) < 4  # 3 and 2 bits
        bw = F[4 * rows + 3]
        assert np.array_equal(G[4 * rows + 3][bw == 0], bw[bw == 0])  # a zero weight stays exact
        if L == order:
            assert (bc == 0).all()


@pytest.mark.parametrize("tier", ["auto", "numpy", "compiled"])
@pytest.mark.parametrize("bits", [(8, 8), (3, 2)])
@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", [1, 2, 3, 5])
def test_every_query_is_the_exact_one_on_the_centres(tmp_path, monkeypatch, seed, order, bits, tier):
    """The quantised file (batch queries in numpy or compiled: ``tier``) against the exact
    layout's code on the table of centres it codes: the same numbers, states and
    distributions."""
    monkeypatch.setattr(table, "TIER", tier)
    arpa = _models(seed, order)
    write_binary(arpa, tmp_path / "q.bin", quantize=bits[0], backoff_bits=bits[1])
    q = BinaryLM(tmp_path / "q.bin", load=("auto", "lazy", "read", "lazy")[seed])
    assert q.quantization == bits and q._D.dtype == np.uint64
    ref = BinaryLM(tmp_path / "q.bin")
    ref._attach_table(dequantize_table(np.asarray(ref._D), ref._V, ref._S, ref.order), ref._S, ref._missing)
    monkeypatch.setattr(table, "LANES", bool(seed % 2))  # the lanes' walk and the plain one
    _assert_same(ref, q)


def test_quantised_file_is_about_half_and_close_in_perplexity(tmp_path):
    corpus = Corpus.from_strings(_random_corpus(7, n=3000, vocab=60))
    arpa = KneserNeyLM(order=4, min_counts=[1]).fit(corpus).model_
    info = write_binary(arpa, tmp_path / "e.bin")
    qinfo = write_binary(arpa, tmp_path / "q.bin", quantize=8)
    assert qinfo["quantization"] == {"prob_bits": 8, "backoff_bits": 8}
    assert qinfo["file_size"] < 0.6 * info["file_size"]
    test = Corpus.from_strings(_random_corpus(8, n=300, vocab=60), vocab=arpa.vocab)
    e, q = BinaryLM(tmp_path / "e.bin"), BinaryLM(tmp_path / "q.bin")
    pe, pq = e.score_file(test).ppl, q.score_file(test).ppl
    assert pe != pq and abs(pq / pe - 1) < 0.01


def test_too_large_for_the_quantised_keys():
    with pytest.raises(ValueError, match="too large for the quantised format"):
        quantize_table(np.zeros(4, dtype=np.int64), 1 << 20, 1 << 26, 3)
    with pytest.raises(ValueError, match="1 to 8 bits"):
        quantize_table(np.zeros(4, dtype=np.int64), 3, 1, 2, 9)


# ---------------------------------------------------------------------------- the loader
def _with_header(data: bytes, edit) -> bytes:
    """``data`` with its header edited by ``edit`` (a valid checksum: a header that lies)."""
    n = _header_len(data)
    h = json.loads(data[24:24 + n])
    edit(h)
    text = json.dumps(h, sort_keys=True).encode("ascii")
    body = data[24 + n:]
    new = data[:16] + len(text).to_bytes(4, "little") + zlib.crc32(text).to_bytes(4, "little") + text
    shift = len(new) - (24 + n)  # the padding after the header takes up the difference
    assert shift <= 64 and not any(body[:max(shift, 0)])
    return new + body[shift:] if shift >= 0 else new + b"\0" * -shift + body


def test_damaged_quantised_headers_are_clear_errors(tmp_path):
    arpa = _models(1, 3)
    write_binary(arpa, tmp_path / "q.bin", quantize=8)
    write_binary(arpa, tmp_path / "e.bin")
    q, e = (tmp_path / "q.bin").read_bytes(), (tmp_path / "e.bin").read_bytes()
    assert BinaryLM(tmp_path / "q.bin").quantization == (8, 8) and BinaryLM(tmp_path / "e.bin").quantization is None
    cases = [
        (q, lambda h: h["quantization"].update(prob_bits=9), "quantization"),
        (q, lambda h: h["quantization"].update(backoff_bits=True), "quantization"),
        (q, lambda h: h["quantization"].update(extra=1), "quantization"),
        (q, lambda h: h.pop("quantization"), "quantization"),
        (q, lambda h: h.update(version=1), "quantization"),
        (e, lambda h: h.update(quantization={"prob_bits": 8, "backoff_bits": 8}), "quantization"),
        (e, lambda h: h.update(version=2), "quantization"),
        (q, lambda h: h.update(version=3), "version 3"),
        # a header that says quantised over an exact table (and the reverse): the table's size
        (e, lambda h: h.update(version=2, quantization={"prob_bits": 8, "backoff_bits": 8}), "section table"),
        (q, lambda h: (h.update(version=1), h.pop("quantization")), "section table"),
        (q[:-8], lambda h: None, "truncated"),
    ]
    bad = tmp_path / "bad.bin"
    for data, edit, msg in cases:
        bad.write_bytes(_with_header(data, edit))
        with pytest.raises(BinaryFormatError, match=msg):
            BinaryLM(bad)


@pytest.mark.parametrize("tier", ["numpy", "compiled"])
def test_a_damaged_quantised_table_never_crashes(tmp_path, monkeypatch, tier):
    """Random records (keys, codes, flags) or every slot full: wrong numbers, never a
    crash or a hang; a damaged directory is refused at open; ``verify`` sees the rest."""
    monkeypatch.setattr(table, "TIER", tier)
    arpa = _models(2, 4)
    p = tmp_path / "q.bin"
    write_binary(arpa, p, quantize=8)
    data = p.read_bytes()
    h = BinaryLM(p).header
    t_off = h["sections"]["table"][0]
    V, S, order = h["vocab_size"], h["table_slots"], h["order"]
    d = bytearray(data)
    d[t_off + 8 * (V + S) + 8 * 2 * order] ^= 0x10  # the directory's entry of the longest n-grams
    (tmp_path / "dir.bin").write_bytes(bytes(d))
    with pytest.raises(BinaryFormatError, match="directory"):
        BinaryLM(tmp_path / "dir.bin")
    lines = _sentences(arpa, n=30)
    rng = np.random.default_rng(0)
    for trial in range(6):
        tab = np.frombuffer(data[t_off:t_off + 8 * (V + S)], dtype=np.uint64).copy()
        if trial < 3:
            tab[:] = rng.integers(0, 2 ** 63, V + S, dtype=np.uint64) * np.uint64(2) + np.uint64(trial % 2)
        else:
            tab[:] = rng.integers(0, 2 ** 63, V + S, dtype=np.uint64)  # no slot empty
        d = bytearray(data)
        d[t_off:t_off + 8 * (V + S)] = tab.tobytes()
        bad = tmp_path / f"bad{trial}.bin"
        bad.write_bytes(bytes(d))
        m = BinaryLM(bad)
        m.score_batch(lines)
        _damaged_answers(m, lines)


# ---------------------------------------------------------------------------- command line
def test_build_binary_quantize(tmp_path):
    arpa = _models(0, 3)
    arpa.write_arpa(tmp_path / "m.arpa")
    r = run("build-binary", "--quantize", 3, "--backoff-bits", 2, tmp_path / "m.arpa", tmp_path / "q.bin")
    assert r.exit_code == 0, r.output
    assert "quantised to 3/2 bits" in r.output
    assert BinaryLM(tmp_path / "q.bin").quantization == (3, 2)
    r = run("build-binary", "--verify", tmp_path / "q.bin")
    assert r.exit_code == 0 and "a valid binary model" in r.output
    r = run("build-binary", "--backoff-bits", 4, tmp_path / "m.arpa", tmp_path / "x.bin")
    assert r.exit_code != 0 and "--backoff-bits needs --quantize" in r.output
    r = run("build-binary", "--quantize", 0, tmp_path / "m.arpa", tmp_path / "x.bin")
    assert r.exit_code != 0 and not (tmp_path / "x.bin").exists()
    (tmp_path / "t.txt").write_text("\n".join(_random_corpus(4, n=30, vocab=20)) + "\n")
    r = run("build-binary", tmp_path / "m.arpa", tmp_path / "e.bin")
    ppl = {}
    for name in ("q", "e"):
        r = run("ppl", tmp_path / f"{name}.bin", tmp_path / "t.txt")
        assert r.exit_code == 0, r.output
        ppl[name] = float(r.output.split("ppl=")[1].split()[0])
    assert ppl["q"] != ppl["e"] and abs(ppl["q"] / ppl["e"] - 1) < 0.1


def test_commands_that_write_binary_models_quantise_them(tmp_path):
    """``--quantize BITS`` of kn, prune, export (implies --binary) and of train (with
    --write-binary): the quantised table of the exact binary the same command writes."""
    train = tmp_path / "train.txt"
    train.write_text("\n".join(_random_corpus(11, n=300, vocab=25)) + "\n")

    def same_as_quantised(q_path, exact_path, bits):
        q, e = BinaryLM(q_path), BinaryLM(exact_path)
        assert q.quantization == (bits, bits) and e.quantization is None
        want = quantize_table(np.asarray(e._D), e._V, e._S, e.order, bits)
        assert np.array_equal(np.asarray(q._D), want)

    for bits in (8, 5):
        assert run("kn", train, "--order", 3, "-o", tmp_path / "k.bin", "--binary", "-q").exit_code == 0
        r = run("kn", train, "--order", 3, "-o", tmp_path / f"k{bits}.bin", "--quantize", bits, "-q")
        assert r.exit_code == 0, r.output
        same_as_quantised(tmp_path / f"k{bits}.bin", tmp_path / "k.bin", bits)
    assert run("kn", train, "--order", 3, "-o", tmp_path / "k.arpa", "-q").exit_code == 0
    assert run("prune", tmp_path / "k.arpa", "-o", tmp_path / "p.bin", "-t", 1e-4, "--binary", "-q").exit_code == 0
    assert run("prune", tmp_path / "k.arpa", "-o", tmp_path / "p8.bin", "-t", 1e-4, "--quantize", 8,
               "-q").exit_code == 0
    same_as_quantised(tmp_path / "p8.bin", tmp_path / "p.bin", 8)
    r = run("train", train, "--order", 3, "-o", tmp_path / "m.slm", "--write-binary", tmp_path / "m8.bin",
            "--quantize", 8, "-q")
    assert r.exit_code == 0, r.output
    assert run("export", tmp_path / "m.slm", "-o", tmp_path / "m.bin", "--binary", "-q").exit_code == 0
    same_as_quantised(tmp_path / "m8.bin", tmp_path / "m.bin", 8)
    assert run("export", tmp_path / "m.slm", "-o", tmp_path / "e8.bin", "--quantize", 8, "-q").exit_code == 0
    same_as_quantised(tmp_path / "e8.bin", tmp_path / "m.bin", 8)
    # refused before any work
    r = run("train", train, "--order", 3, "-o", tmp_path / "n.slm", "--quantize", 8, "-q")
    assert r.exit_code != 0 and "--write-binary" in r.output and not (tmp_path / "n.slm").exists()
    r = run("kn", train, "--order", 3, "-o", tmp_path / "x.bin", "--quantize", 9, "-q")
    assert r.exit_code != 0 and not (tmp_path / "x.bin").exists()
