"""Day-one habits (issue 31): SRILM's and KenLM's spellings get a one-line hint, swapped
arguments are named, the defaults train the best model and the log says which, progress
reports long steps only, and KenLM's ``score`` refuses what KenLM refuses."""

from __future__ import annotations

import io
import json
import time

import pytest
from click.testing import CliRunner

from suffixlm.cli import main
from suffixlm.corpora import sample_path

TRAIN = str(sample_path("tiny_lm.train.txt"))
TEST = str(sample_path("tiny_lm.test.txt"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def one_error_line(r) -> str:
    lines = [x for x in r.output.splitlines() if x.startswith("Error:")]
    assert len(lines) == 1, r.output
    return lines[0]


def test_bare_number_output_hints_at_order(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = run("kn", TRAIN, "-o", "5")
    assert r.exit_code == 2
    assert "did you mean --order 5?" in one_error_line(r)
    assert list(tmp_path.iterdir()) == []
    r = run("kn", TRAIN, "-o", "./5", "--order", "2", "-q")  # written when asked for plainly
    assert r.exit_code == 0 and (tmp_path / "5").exists()


@pytest.mark.parametrize("args, hint", [
    (["kn", TRAIN, "-order", "5", "-o", "x.arpa"], "did you mean --order?"),
    (["kn", TRAIN, "-order=5", "-o", "x.arpa"], "did you mean --order?"),
    (["ppl", "-lm", "x.arpa", TEST], "--arpa MODEL.arpa"),
    (["kn", "-text", TRAIN, "-o", "x.arpa"], "the training text is the argument"),
    (["kn", TRAIN, "-o", "x.arpa", "-kndiscount"], "modified Kneser-Ney is the default"),
])
def test_srilm_single_dash_options_get_a_hint(tmp_path, monkeypatch, args, hint):
    monkeypatch.chdir(tmp_path)
    r = run(*args)
    assert r.exit_code == 2
    assert hint in one_error_line(r)
    assert list(tmp_path.iterdir()) == []


def test_swapped_arguments_are_named(tmp_path):
    model = tmp_path / "m.slm"
    arpa = tmp_path / "m.arpa"
    assert run("train", TRAIN, "-o", model, "--order", "2", "--quiet", "--epochs", "3").exit_code == 0
    assert run("kn", TRAIN, "-o", arpa, "--order", "2", "-q").exit_code == 0
    r = run("ppl", TEST, model)
    assert r.exit_code == 2 and "arguments swapped?" in one_error_line(r) and "model file" in r.output
    r = run("kn", arpa, "-o", tmp_path / "x.arpa")
    assert r.exit_code == 2 and "an ARPA model, not the training text" in one_error_line(r)
    r = run("train", model, "-o", tmp_path / "x.slm")
    assert r.exit_code == 2 and "arguments swapped?" in one_error_line(r)


def test_min_count_is_renamed_with_a_warning(tmp_path):
    r = run("tree", TRAIN, "--order", "3", "--json", "--min-word-count", "40")
    assert r.exit_code == 0 and "warning" not in r.stderr
    new = json.loads(r.stdout)
    r = run("tree", TRAIN, "--order", "3", "--json", "--min-count", "40")
    assert r.exit_code == 0 and "now --min-word-count" in r.stderr
    assert json.loads(r.stdout)["vocab"] == new["vocab"] < json.loads(run("tree", TRAIN, "--order", "3",
                                                                           "--json").stdout)["vocab"]


def test_eval_refuses_a_file_without_predictions(tmp_path):
    f = tmp_path / "gold_only.txt"
    f.write_text("He PRP B-NP\nreckons VBZ B-VP\nthe DT B-NP\n\nOf IN B-PP\n", encoding="utf-8")
    r = run("crf", "eval", f)
    assert r.exit_code == 1 and "does not look like predictions" in one_error_line(r)
    g = tmp_path / "labelled.txt"
    g.write_text("He B-NP B-NP\nreckons B-VP B-NP\nthe B-NP B-NP\n\nOf B-PP O\n", encoding="utf-8")
    r = run("crf", "eval", g)
    assert r.exit_code == 0 and "FB1" in r.output


def test_score_of_a_word_list_raises_as_kenlm_does(tmp_path):
    import suffixlm

    arpa = tmp_path / "m.arpa"
    assert run("kn", TRAIN, "-o", arpa, "--order", "3", "-q").exit_code == 0
    m = suffixlm.Model(str(arpa))
    with pytest.raises(TypeError, match="one sentence as a string"):
        m.score(["the", "cat"])
    with pytest.raises(TypeError, match="one sentence as a string"):
        m.score(["the cat", "a dog"], bos=False)
    assert m.score("the cat") == m.score("the cat", bos=True, eos=True)
    assert m.score("the cat", bos=False) != m.score("the cat")
    # scikit-learn's score of a corpus (sentences with spaces) still works
    assert m.score(["the cat saw a dog", "a dog saw the cat"]) < 0


def test_train_defaults_and_log_name_the_model(tmp_path):
    r = run("train", TRAIN, "-o", tmp_path / "m.slm", "--order", "3")
    assert r.exit_code == 0, r.output
    assert ("model: order 3, modified-KN base measure, signed weights, linf-tree penalty, lambda 1/tokens"
            in r.stderr)
    assert "give --valid VALID.txt to choose it" in r.stderr
    r = run("train", TRAIN, "-o", tmp_path / "v.slm", "--order", "3", "--valid", TEST, "--json")
    assert r.exit_code == 0, r.output
    assert f"lambda chosen on {TEST}" in r.stderr and "chose lam=" in r.stderr
    summary = json.loads(r.stdout)
    assert summary["base"] == "kn" and summary["signed"] and summary["lam_grid"]
    r = run("train", TRAIN, "-o", tmp_path / "p.slm", "--order", "3", "--base", "none", "--lam", "1e-4")
    assert "no base measure (the paper's model), weights >= 0, linf-tree penalty, lambda 0.0001" in r.stderr


def test_compare_takes_train_model_options(tmp_path):
    r = run("compare", TRAIN, TEST, "--orders", "3", "--json", "--valid", TEST, "-q")
    assert r.exit_code == 0, r.output
    rows = {x["model"]: x["ppl"] for x in json.loads(r.stdout)}
    assert set(rows) == {"kn-modified", "loglinear-kn linf-tree"}
    assert rows["loglinear-kn linf-tree"] < rows["kn-modified"]  # lambda chosen on that very text
    r = run("compare", TRAIN, TEST, "--orders", "2", "--json", "--base", "none", "--lam", "1e-4", "-q")
    assert [x["model"] for x in json.loads(r.stdout)] == ["kn-modified", "loglinear linf-tree"]


def test_progress_reports_long_steps_only(monkeypatch):
    from suffixlm import progress as P

    monkeypatch.setattr(P, "AFTER", 0.05)
    out = io.StringIO()
    p = P.Progress(stream=out)
    with p.stage("short"):
        pass
    assert out.getvalue() == ""
    with p.stage("long"):
        time.sleep(0.3)
    lines = out.getvalue().splitlines()
    assert len(lines) == 2 and lines[0].endswith("long ...") and "long: done in" in lines[1]
    assert lines[0].startswith("[") and " s] " in lines[0]
    quiet = io.StringIO()
    with P.Progress(quiet=True, stream=quiet).stage("long"):
        time.sleep(0.2)
    assert quiet.getvalue() == ""


def test_iteration_lines_off_a_terminal_are_rate_limited(monkeypatch):
    from suffixlm import progress as P

    monkeypatch.setattr(P, "EVERY", 1000.0)
    out = io.StringIO()
    p = P.Progress(stream=out)
    for k in range(50):
        p.iteration(f"step {k}")
    p.end_iterations()
    lines = out.getvalue().splitlines()
    assert [x.split("] ", 1)[1] for x in lines] == ["step 0", "step 49"]


def test_compilation_is_announced_when_the_cache_is_empty(monkeypatch, tmp_path):
    from suffixlm import _lm_kernels
    from suffixlm import progress as P

    assert P.kernels_cached(_lm_kernels)  # the tests above ran them
    module = type(_lm_kernels)("fake_kernels")

    class Cache:
        class _cache_file:
            _index_path = str(tmp_path / "absent.nbi")

    class Kernel:
        _cache = Cache()

    module.k = Kernel()
    assert not P.kernels_cached(module)
    out = io.StringIO()
    P.announce_compilation(P.Progress(stream=out), module)
    assert "compiling the numba kernels" in out.getvalue()


def test_commands_are_imported_when_asked_for():
    """Every module of suffixlm/commands is a command named after it, imported only when
    it is asked for (a command's start pays for its own module alone)."""
    import importlib
    import pkgutil
    import subprocess
    import sys

    import suffixlm.commands as commands

    modules = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")
               and hasattr(importlib.import_module(f"suffixlm.commands.{m.name}"), "command")]
    assert len(modules) >= 11
    for m in modules:
        cmd = importlib.import_module(f"suffixlm.commands.{m}").command
        assert cmd.name == m.replace("_", "-")
        assert main.commands[cmd.name] is cmd
    listed = run("--help").output
    assert all(m.replace("_", "-") in listed for m in modules) and "crf" in listed
    code = ("import sys; from suffixlm.cli import main\n"
            "try:\n    main(['ppl', '--help'])\nexcept SystemExit:\n    pass\n"
            "print(sorted(m.rsplit('.', 1)[1] for m in sys.modules if m.startswith('suffixlm.commands.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip().splitlines()[-1] == "['params', 'ppl']"
