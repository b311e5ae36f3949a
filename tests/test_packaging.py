"""The project as a newcomer meets it: the README's two commands, CI, the distribution."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _readme_commands():
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.readme_commands((ROOT / "README.md").read_text(encoding="utf-8"))


def test_readme_opens_with_the_two_setup_commands():
    assert _readme_commands() == ["pip install -e . && suffixlm demo",
                                  "pip install -e '.[test]' && pytest"]


def test_ci_runs_the_readme_commands_in_a_fresh_venv():
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    # the commands come from the README, not from a copy in the script
    assert "readme_commands.py README.md" in ci
    assert "python3 -m venv" in ci and 'source "$VENV/bin/activate"' in ci
    assert "NUMBA_BOUNDSCHECK=1" in ci
    for cmd in _readme_commands():
        assert cmd not in ci


def test_ci_reads_exactly_the_first_block():
    spec = importlib.util.spec_from_file_location("readme_commands", ROOT / ".ci" / "readme_commands.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    text = "# t\n\nintro\n\n```\na && b\n\n  c  \n```\n\n```\nnot this\n```\n"
    assert mod.readme_commands(text) == ["a && b", "c"]
    assert mod.readme_commands("no block") == []


def _declared_packages():
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    m = re.search(r"^packages = \[(.*?)\]", text, re.S | re.M)
    assert m, "pyproject.toml lists its packages under [tool.setuptools]"
    return set(re.findall(r'"([^"]+)"', m.group(1)))


def test_pyproject_lists_every_package_folder():
    found = {".".join(p.parent.relative_to(ROOT).parts)
             for top in ("suffixlm", "crf") for p in (ROOT / top).rglob("__init__.py")}
    assert _declared_packages() == found | {"suffixlm.corpora"}


def test_sample_data_is_installed_under_suffixlm():
    from suffixlm.corpora import sample_path

    for name in ("tiny_lm.train.txt", "tiny_lm.test.txt", "tiny_chunk.train.txt", "tiny_chunk.test.txt",
                 "patterns/chunk.pat", "patterns/ner.pat"):
        assert sample_path(name).is_file()
    with pytest.raises(FileNotFoundError):
        sample_path("no_such_file.txt")


def test_package_imports_do_not_come_from_the_test_folders():
    import crf
    import suffixlm

    for mod, folder in ((crf, "crf"), (suffixlm, "suffixlm")):
        assert mod.__file__ is not None, f"{folder} imported as a namespace package"
        here = Path(mod.__file__).resolve()
        assert here.name == "__init__.py" and here.parent.name == folder
        assert ROOT / "tests" not in here.parents
    assert hasattr(crf, "CRF") and hasattr(suffixlm, "__version__")
    assert suffixlm.KneserNeyLM.__module__ == "suffixlm.backoff.kn"
    assert suffixlm.LogLinearLM.__module__ == "suffixlm.model"


def test_pytest_runs_from_another_directory(tmp_path):
    # `pytest /path/to/repo/tests/...` from elsewhere collects the same way.
    target = ROOT / "tests" / "test_packaging.py"
    exe = Path(sys.executable).parent / "pytest"   # the console script, as a user types it
    cmd = [str(exe)] if exe.exists() else [sys.executable, "-m", "pytest"]
    r = subprocess.run(cmd + ["-q", "-p", "no:cacheprovider",
                        f"{target}::test_package_imports_do_not_come_from_the_test_folders"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "1 passed" in r.stdout


# ---------------------------------------------------------------- the distribution's files

def _sdist_files() -> set[str]:
    """The files MANIFEST.in adds to the source distribution, found as setuptools finds
    them (the packages and their data come on top, from pyproject.toml)."""
    filelist = pytest.importorskip("setuptools._distutils.filelist")
    fl = filelist.FileList()
    here = os.getcwd()
    os.chdir(ROOT)  # the template's patterns are relative to the project folder
    try:
        fl.findall()
        for line in (ROOT / "MANIFEST.in").read_text(encoding="utf-8").splitlines():
            if line.strip() and not line.lstrip().startswith("#"):
                fl.process_template_line(line)
    finally:
        os.chdir(here)
    return {Path(f).as_posix() for f in fl.files}


def test_sdist_carries_tests_docs_benchmarks_and_project_files():
    files = _sdist_files()
    for name in ("LICENSE", "CITATION.cff", "CHANGELOG.md", "README.md", ".ci/run", ".ci/readme_commands.py"):
        assert name in files, name
    on_disk = {p.relative_to(ROOT).as_posix() for folder in ("tests", "docs", "scripts")
               for p in (ROOT / folder).rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    assert on_disk and on_disk <= files, sorted(on_disk - files)[:5]
    reports = {p.relative_to(ROOT).as_posix() for p in (ROOT / "benchmarks").glob("*.md")}
    assert reports and reports <= files
    assert "benchmarks/figure2.png" in files  # the README shows it
    assert not [f for f in files if "__pycache__" in f or f.endswith((".pyc", ".nbi", ".nbc"))]


@pytest.mark.slow
def test_built_sdist_lists_them(tmp_path):
    # the real build (an isolated environment with the pinned setuptools): needs `build`
    pytest.importorskip("build")
    r = subprocess.run([sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-2000:]
    import tarfile

    (sdist,) = tmp_path.glob("suffixlm-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    assert _sdist_files() <= names
    assert {"suffixlm/__init__.py", "crf/__init__.py", "corpora/patterns/chunk.pat", "pyproject.toml"} <= names


def test_license_citation_and_changelog_agree_with_the_metadata():
    import suffixlm

    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'^license = "MIT"$', pyproject, re.M)
    assert re.search(r'^license-files = \["LICENSE"\]$', pyproject, re.M)
    license_text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert license_text.startswith("MIT License\n") and "the suffixlm authors" in license_text
    cff = (ROOT / "CITATION.cff").read_text(encoding="utf-8")
    assert re.search(rf"^version: {re.escape(suffixlm.__version__)}$", cff, re.M)
    assert re.search(r"^license: MIT$", cff, re.M)
    assert "Structured Penalties for Log-linear Language Models" in cff
    assert "Practical very large scale CRFs" in cff
    version = re.search(r'^version = "([^"]+)"$', pyproject, re.M).group(1)
    assert version == suffixlm.__version__
    changelog = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    assert "## [Unreleased]" in changelog and f"## [{version}]" in changelog


def _readme_examples() -> list[tuple[str, str]]:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return re.findall(r"^```(sh|python)\n(.*?)^```$", text, re.S | re.M)


def test_readme_has_tutorial_examples():
    langs = [lang for lang, _ in _readme_examples()]
    assert langs.count("sh") >= 2 and langs.count("python") >= 3


@pytest.mark.slow
@pytest.mark.parametrize("index", range(len(_readme_examples())))
def test_readme_example_runs_verbatim(index, tmp_path):
    """Every ```sh and ```python block of the README, as it is, in an empty folder (the
    shipped samples are all they read)."""
    lang, code = _readme_examples()[index]
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    cmd = ["bash", "-euo", "pipefail", "-c", code] if lang == "sh" else [sys.executable, "-c", code]
    r = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, f"README block {index} ({lang}):\n{code}\n{r.stdout[-2000:]}\n{r.stderr[-3000:]}"
