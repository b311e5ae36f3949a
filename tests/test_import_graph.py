"""The import graph of the installed packages, read from their source: dependencies run
one way (crf may import suffixlm, suffixlm never imports crf) and no file imports
itself through others (no cycle), counting imports at any depth (inside functions too).
"""

from __future__ import annotations

import ast
from pathlib import Path

import crf
import suffixlm

PACKAGES = {"suffixlm": Path(suffixlm.__file__).parent, "crf": Path(crf.__file__).parent}


def _modules() -> dict[str, Path]:
    mods = {}
    for name, root in PACKAGES.items():
        for path in root.rglob("*.py"):
            parts = (name,) + path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            mods[".".join(parts)] = path
    # suffixlm.corpora is mapped from another folder (pyproject.toml)
    import suffixlm.corpora

    mods["suffixlm.corpora"] = Path(suffixlm.corpora.__file__)
    return mods


def _known(name: str, mods) -> str | None:
    """The longest prefix of a dotted name that is one of our modules."""
    parts = name.split(".")
    for k in range(len(parts), 0, -1):
        cand = ".".join(parts[:k])
        if cand in mods:
            return cand
    return None


def import_graph() -> dict[str, set[str]]:
    mods = _modules()
    edges: dict[str, set[str]] = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        package = mod.split(".") if is_pkg else mod.split(".")[:-1]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    stem = ".".join(base + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                targets = [f"{stem}.{a.name}" for a in node.names] + [stem]
            elif (isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", ""))
                  in ("import_module", "__import__") and node.args
                  and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
                targets = [node.args[0].value]
            for t in targets:
                k = _known(t, mods)
                # a package's own __init__ re-exporting from inside is not a cycle of logic
                if k is not None and k != mod and not (mod.startswith(k + ".") and mods[k].name == "__init__.py"):
                    edges[mod].add(k)
                    break
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out = []
    counter = 0
    for root in edges:
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def test_the_graph_is_read():
    edges = import_graph()
    assert "crf.cli" in edges and "suffixlm.cli" in edges
    assert "suffixlm.penalties" in edges["crf.train.proximal"] or any(
        e.startswith("suffixlm.") for e in edges["crf.train.proximal"])


def test_cycle_finder_on_known_graphs():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_files():
    assert cycles(import_graph()) == []


def test_suffixlm_never_imports_crf():
    bad = {m: sorted(t for t in ts if t.split(".")[0] == "crf")
           for m, ts in import_graph().items() if m.split(".")[0] == "suffixlm"}
    assert {m: ts for m, ts in bad.items() if ts} == {}


def test_crf_command_group_comes_from_an_entry_point():
    from click.testing import CliRunner

    from suffixlm.cli import main

    r = CliRunner().invoke(main, ["crf", "--help"])
    assert r.exit_code == 0 and "Linear-chain CRFs" in r.output


#: the modules that make up the command line: the only ones that may import click
COMMAND_LINE = ("suffixlm.cli", "suffixlm.commands", "crf.cli")


def _imports_click(path: Path) -> bool:
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import) and any(a.name.split(".")[0] == "click" for a in node.names):
            return True
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "click":
            return True
    return False


def test_library_modules_never_import_click():
    """click is the command line's: ``import suffixlm.model`` or ``crf.model`` (at any depth,
    inside functions too) never loads it."""
    library = {m: p for m, p in _modules().items()
               if not any(m == c or m.startswith(c + ".") for c in COMMAND_LINE)}
    assert sorted(m for m, p in library.items() if _imports_click(p)) == []
    # and the command-line modules are where the check looks
    assert _imports_click(_modules()["suffixlm.commands.params"])


def test_importing_the_estimators_loads_no_click():
    import subprocess
    import sys

    code = "import sys, suffixlm.model, crf.model, suffixlm.distributed; print('click' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_every_list_of_penalty_names_is_the_penalty_classes():
    """The command line's choices (read without importing the numba kernels) are the
    penalty classes' names and their ``crf`` fact."""
    from crf.solvers import PENALTIES as CRF_PENALTIES
    from suffixlm.options import LM_PENALTIES
    from suffixlm.penalties import PENALTIES

    assert LM_PENALTIES == tuple(PENALTIES)
    assert CRF_PENALTIES == tuple(n for n, c in PENALTIES.items() if c.crf)


def private_names_crossing(mods: dict[str, Path] | None = None) -> list[str]:
    """Every ``_private`` name (not a module, not a dunder) that a module takes from another
    of our modules: ``from m import _x``, or ``m._x`` where ``m`` names one of our modules
    (imported as a module, at any depth)."""
    mods = mods or _modules()
    found = []
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        package = mod.split(".") if is_pkg else mod.split(".")[:-1]
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        aliases = {}  # local name -> our module it is bound to
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    stem = ".".join(package[: len(package) - node.level + 1] + ([node.module] if node.module else []))
                else:
                    stem = node.module or ""
                if _known(stem, mods) is None:
                    continue
                for a in node.names:
                    full = f"{stem}.{a.name}"
                    if full in mods:
                        aliases[a.asname or a.name] = full
                    elif a.name.startswith("_") and not a.name.startswith("__") and stem != mod:
                        found.append(f"{mod}:{node.lineno}: from {stem} import {a.name}")
            elif isinstance(node, ast.Import):
                for a in node.names:
                    if a.name in mods and a.asname:
                        aliases[a.asname] = a.name
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and f"{aliases[node.value.id]}.{node.attr}" not in mods and aliases[node.value.id] != mod):
                found.append(f"{mod}:{node.lineno}: {aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


def test_no_private_name_crosses_modules():
    """A module uses another's public names only: what one file marks private (a leading
    underscore) no other file imports or reaches into."""
    assert private_names_crossing() == []


def test_private_name_finder_finds_them(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("_hidden = 1\nshown = 2\n")
    (pkg / "b.py").write_text("from .a import _hidden, shown\nfrom . import a as A\nx = A._hidden + A.shown\n")
    mods = {"pkg": pkg / "__init__.py", "pkg.a": pkg / "a.py", "pkg.b": pkg / "b.py"}
    assert private_names_crossing(mods) == ["pkg.b:1: from pkg.a import _hidden", "pkg.b:3: pkg.a._hidden"]
