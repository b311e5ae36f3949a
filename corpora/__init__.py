"""Small sample corpora shipped with suffixlm, and paths to the standard corpora.

``sample_path(name)`` returns the path of a file shipped in this package.
``pattern_files()`` names the shipped CRF pattern files (``patterns/*.pat``; listed by
``suffixlm patterns``, found by ``suffixlm crf train -p NAME``).
``shared_path(*parts)`` returns ``../shared/corpora/...`` relative to the project
root when it exists (for benchmarks and optional tests), else ``None``.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def sample_path(name: str) -> Path:
    """Path of a sample file shipped in the ``corpora`` package (e.g. ``"tiny_lm.txt"``)."""
    p = _HERE / name
    if not p.exists():
        raise FileNotFoundError(f"no sample corpus {name!r} in {_HERE}")
    return p


def pattern_files() -> dict[str, Path]:
    """The shipped pattern files, by name without ``.pat`` (``{"chunk": .../chunk.pat, ...}``),
    sorted by name. Found through ``importlib.resources``, so they are there after a wheel
    install as in a clone."""
    folder = resources.files(__name__) / "patterns"
    found = {}
    for entry in folder.iterdir():
        if entry.name.endswith(".pat") and entry.is_file():
            found[entry.name[:-len(".pat")]] = Path(str(entry))
    return dict(sorted(found.items()))


def pattern_description(text: str) -> str:
    """One line about a pattern file: the first line of its leading comment ("" if it has
    none), without the comment mark and a trailing comma, colon or semicolon."""
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        if not line.startswith("#"):
            return ""
        line = line.lstrip("#").strip()
        if line:
            return line.rstrip(",;:").rstrip()
    return ""


def shared_root() -> Path | None:
    """``$SUFFIXLM_SHARED`` when set (a path without ``corpora/`` gives None, so setting it
    to nowhere runs the suite as on a machine without the data), else the ``shared/``
    folder beside the project checkout; None if absent."""
    env = os.environ.get("SUFFIXLM_SHARED")
    c = Path(env) if env else _HERE.parent.parent / "shared"
    return c if (c / "corpora").is_dir() else None


def shared_path(*parts: str) -> Path | None:
    """``shared/<parts...>`` if it exists, else None."""
    root = shared_root()
    if root is None:
        return None
    p = root.joinpath(*parts)
    return p if p.exists() else None
