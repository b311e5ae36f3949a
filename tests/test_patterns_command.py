"""`suffixlm patterns` and `suffixlm crf train -p NAME`: the shipped pattern files by name."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from crf.patterns import PatternError, resolve_pattern_file
from suffixlm.cli import main
from suffixlm.corpora import pattern_description, pattern_files, sample_path

ROOT = Path(__file__).resolve().parent.parent
CHUNK = sample_path("patterns/chunk.pat")

TRAIN = sample_path("tiny_chunk.train.txt")  # word, part of speech, chunk tag


def _exe(name: str) -> list[str]:
    """The console script as a user types it (the test environment's)."""
    exe = Path(sys.executable).parent / name
    return [str(exe)] if exe.exists() else [sys.executable, "-m", "suffixlm.cli"]


def test_shipped_files_are_found_by_name():
    shipped = pattern_files()
    assert list(shipped) == sorted(shipped) and {"chunk", "ner"} <= set(shipped)
    assert shipped["chunk"].samefile(CHUNK)
    for path in shipped.values():
        assert path.suffix == ".pat" and path.is_file()


def test_description_is_the_first_comment_line():
    assert pattern_description("# CoNLL chunking,\n# more\nu:a=%x[0,0]\n") == "CoNLL chunking"
    assert pattern_description("\n  #  one line  \n") == "one line"
    assert pattern_description("u:a=%x[0,0]\n# late comment\n") == ""
    assert pattern_description("") == ""
    for path in pattern_files().values():
        assert pattern_description(path.read_text(encoding="utf-8"))


def test_list_and_print():
    r = CliRunner().invoke(main, ["patterns"])
    assert r.exit_code == 0, r.output
    lines = r.output.splitlines()
    assert [line.split()[0] for line in lines] == list(pattern_files())
    assert "CoNLL-2000 chunking" in next(line for line in lines if line.startswith("chunk "))
    text = CHUNK.read_text(encoding="utf-8")
    for name in ("chunk", "chunk.pat"):
        r = CliRunner().invoke(main, ["patterns", name])
        assert r.exit_code == 0 and r.output == text
    r = CliRunner().invoke(main, ["patterns", "--path", "ner"])
    assert r.exit_code == 0 and Path(r.output.strip()).samefile(sample_path("patterns/ner.pat"))


def test_unknown_name_is_one_line_naming_the_shipped_files():
    r = CliRunner().invoke(main, ["patterns", "chunky"])
    assert r.exit_code == 1
    names = ", ".join(pattern_files())
    assert {"chunk", "ner"} <= set(names.split(", "))
    assert r.output.strip().splitlines() == [f"Error: no shipped pattern file 'chunky' (shipped: {names})"]
    r = CliRunner().invoke(main, ["patterns", "--path"])
    assert r.exit_code == 2 and "--path needs a NAME" in r.output


def test_resolver(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert Path(resolve_pattern_file("chunk")).samefile(CHUNK)
    assert Path(resolve_pattern_file("chunk.pat")).samefile(CHUNK)
    # an existing path wins over a shipped name
    (tmp_path / "chunk").write_text("u:mine=%x[0,0]\n", encoding="utf-8")
    assert resolve_pattern_file("chunk") == "chunk"
    assert resolve_pattern_file(tmp_path / "chunk") == str(tmp_path / "chunk")
    # a name with a folder is a path, never a shipped file
    with pytest.raises(PatternError, match=r"^sub/ner: no such file.*shipped: chunk, chunk-rich, ner"):
        resolve_pattern_file("sub/ner")
    with pytest.raises(PatternError, match="`suffixlm patterns` lists them"):
        resolve_pattern_file("nope")


def test_crf_train_with_a_bad_name_is_one_line(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = CliRunner().invoke(main, ["crf", "train", "-p", "chunkk", str(TRAIN), "m.crf"])
    assert r.exit_code == 2 and "chunkk: no such file" in r.output and "shipped: chunk, chunk-rich, ner" in r.output
    assert not (tmp_path / "m.crf").exists()


def test_commands_run_from_a_directory_that_is_not_the_clone(tmp_path):
    """As after a wheel install: the shipped files are found through the package, not the
    current directory."""
    assert ROOT not in tmp_path.parents and not (tmp_path / "corpora").exists()
    r = subprocess.run(_exe("suffixlm") + ["patterns"], cwd=tmp_path, capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "chunk"
    r = subprocess.run(_exe("suffixlm") + ["crf", "train", "-p", "chunk", "--maxiter", "2", "--quiet",
                                          str(TRAIN), "m.crf"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    from crf import CRF

    assert CRF.load(tmp_path / "m.crf").pattern_text_ == CHUNK.read_text(encoding="utf-8")


def test_the_sample_chunking_corpus_fits_chunk_pat():
    """tiny_chunk.*.txt (scripts/make_tiny_corpus.py): CoNLL-2000's three columns."""
    from crf.data import read_sequences

    for name in ("tiny_chunk.train.txt", "tiny_chunk.test.txt"):
        seqs = read_sequences(sample_path(name), n_columns=3)
        assert seqs and all(row[2] == "O" or row[2][:2] in ("B-", "I-") for s in seqs for row in s)
