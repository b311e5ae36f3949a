"""Small sample corpora shipped with suffixlm, and paths to the standard corpora.

``sample_path(name)`` returns the path of a file shipped in this package.
``shared_path(*parts)`` returns ``../shared/corpora/...`` relative to the project
root when it exists (for benchmarks and optional tests), else ``None``.
"""

from __future__ import annotations

import os
from pathlib import Path

_HERE = Path(__file__).resolve().parent


def sample_path(name: str) -> Path:
    """Path of a sample file shipped in the ``corpora`` package (e.g. ``"tiny_lm.txt"``)."""
    p = _HERE / name
    if not p.exists():
        raise FileNotFoundError(f"no sample corpus {name!r} in {_HERE}")
    return p


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
