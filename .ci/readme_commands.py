"""Print the set-up commands of a README: the non-empty lines of its first ``` block.

Used by .ci/run (which runs them verbatim) and by tests/test_packaging.py (which checks
that there are exactly two and what they do), so CI and the README cannot disagree.
"""

from __future__ import annotations

import sys
from pathlib import Path


def readme_commands(text: str) -> list[str]:
    lines = text.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.startswith("```"))
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith("```"))
    except StopIteration:
        return []
    return [line.strip() for line in lines[start + 1:end] if line.strip()]


if __name__ == "__main__":
    for command in readme_commands(Path(sys.argv[1]).read_text(encoding="utf-8")):
        print(command)
