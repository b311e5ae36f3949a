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
    """The ``shared/`` folder beside the project checkout, or ``$SUFFIXLM_SHARED``; None if absent."""
    env = os.environ.get("SUFFIXLM_SHARED")
    candidates = [Path(env)] if env else []
    candidates.append(_HERE.parent.parent / "shared")
    for c in candidates:
        if (c / "corpora").is_dir():
            return c
    return None


def shared_path(*parts: str) -> Path | None:
    """``shared/<parts...>`` if it exists, else None."""
    root = shared_root()
    if root is None:
        return None
    p = root.joinpath(*parts)
    return p if p.exists() else None
