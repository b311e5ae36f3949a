"""Every operation on ARPA files accepts what ``ppl`` accepts (issue 24, item 4): empty
high-order sections (``ngram 3=0``, as SRILM writes an order above the data) and n-grams
whose prefix is absent ("b a b" without "b a": SRILM reads such files and keeps the
n-gram). Static and dynamic mixing, pruning, ``best-mix`` and ``ppl --write-lm`` end with
exit 0 and an ARPA file that reads back; never an IndexError (``mix._cut_starts``) or the
"internal error" of ``arpa.row_index``."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner

from suffixlm.backoff.arpa import BackoffLM, row_index
from suffixlm.cli import main
from suffixlm.backoff.mix import _cut_starts

HEAD = "\n\\data\\\nngram 1=4\nngram 2=2\nngram 3={n3}\n\n\\1-grams:\n-1 <s>\t-0.3\n-1 </s>\n-0.5 a\t-0.2\n" \
       "-0.6 b\t-0.1\n\n\\2-grams:\n-0.2 <s> a\n-0.3 a b\n\n\\3-grams:\n{tri}\n\\end\\\n"
FILES = {
    "empty-trigrams": HEAD.format(n3=0, tri=""),
    "absent-prefix": HEAD.format(n3=1, tri="-0.1 b a b\n"),
    "plain": HEAD.format(n3=1, tri="-0.1 <s> a b\n"),
}


@pytest.fixture
def arpas(tmp_path):
    out = {}
    for name, text in FILES.items():
        out[name] = tmp_path / f"{name}.arpa"
        out[name].write_text(text)
    (tmp_path / "t.txt").write_text("a b a\nb a\na b b a\n")
    return out, tmp_path / "t.txt"


def run(*args):
    r = CliRunner().invoke(main, [str(a) for a in args])
    assert r.exception is None or isinstance(r.exception, SystemExit), repr(r.exception)
    assert "Traceback" not in r.output and "internal error" not in r.output, r.output
    return r


@pytest.mark.parametrize("first", sorted(FILES))
@pytest.mark.parametrize("second", sorted(FILES))
def test_mixing_accepts_what_ppl_accepts(arpas, first, second, tmp_path):
    files, text = arpas
    for f in (files[first], files[second]):
        assert run("ppl", "--arpa", f, text).exit_code == 0
    for static in ((), ("--static",)):
        out = tmp_path / f"mix{len(static)}.arpa"
        r = run("ppl", "--arpa", files[first], text, "--mix-lm", files[second], "--lambda", "0.3", *static,
                "--write-lm", out)
        assert r.exit_code == 0, r.output
        BackoffLM.read_arpa(out)
    r = run("best-mix", text, files[first], files[second])
    assert r.exit_code == 0, r.output


@pytest.mark.parametrize("name", sorted(FILES))
def test_pruning_accepts_what_ppl_accepts(arpas, name, tmp_path):
    files, text = arpas
    for threshold in ("0", "0.5"):
        r = run("prune", files[name], "-o", tmp_path / "p.arpa", "--threshold", threshold)
        assert r.exit_code == 0, r.output
        assert run("ppl", "--arpa", tmp_path / "p.arpa", text).exit_code == 0


def test_the_helpers_take_empty_and_absent_rows():
    assert _cut_starts(np.zeros(0, np.int64), np.zeros(0, np.int64), np.ones(3, bool)).shape == (0,)
    table = np.array([[1, 2], [3, 4]], dtype=np.int32)
    assert row_index(table, np.array([[3, 4], [5, 6]]), missing=-1).tolist() == [1, -1]
    assert row_index(table[:0], np.array([[3, 4]]), missing=-1).tolist() == [-1]
    with pytest.raises(RuntimeError):
        row_index(table, np.array([[5, 6]]))


def test_header_orders_out_of_turn_are_worded_plainly(tmp_path):
    p = tmp_path / "m.arpa"
    p.write_text(FILES["plain"].replace("ngram 1=4\n", ""))
    with pytest.raises(ValueError, match=r"m.arpa:3: header lists order 2 first; the orders must be listed 1, 2, 3"):
        BackoffLM.read_arpa(p)
    p.write_text(FILES["plain"].replace("ngram 2=2\n", ""))
    with pytest.raises(ValueError, match=r"m.arpa:4: header lists order 3 after order 1;"):
        BackoffLM.read_arpa(p)
