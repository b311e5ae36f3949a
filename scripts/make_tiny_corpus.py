"""Generate the tiny LM sample corpus shipped in corpora/ (tiny_lm.train.txt, tiny_lm.test.txt).

A small probabilistic grammar of English-like sentences; deterministic given the seed.
Run: python scripts/make_tiny_corpus.py
"""

from __future__ import annotations

import random
from pathlib import Path

GRAMMAR = {
    "S": [(["NP", "VP"], 6), (["NP", "VP", "PP"], 3), (["ADV", ",", "NP", "VP"], 1)],
    "NP": [(["DET", "N"], 5), (["DET", "ADJ", "N"], 3), (["NAME"], 2), (["DET", "N", "PP"], 1)],
    "VP": [(["V", "NP"], 5), (["VI"], 2), (["V", "NP", "ADV"], 1), (["SAYS", "that", "S"], 1)],
    "PP": [(["P", "NP"], 1)],
    "DET": [(["the"], 6), (["a"], 3), (["every"], 1), (["some"], 1)],
    "N": [([w], c) for w, c in [("cat", 5), ("dog", 5), ("man", 3), ("woman", 3), ("park", 2), ("house", 2),
                                 ("telescope", 1), ("child", 2), ("garden", 1), ("river", 1), ("market", 1)]],
    "ADJ": [([w], c) for w, c in [("big", 3), ("small", 3), ("old", 2), ("red", 1), ("quiet", 1), ("happy", 2)]],
    "NAME": [([w], c) for w, c in [("alice", 3), ("bob", 3), ("carol", 1), ("dave", 1)]],
    "V": [([w], c) for w, c in [("saw", 5), ("liked", 3), ("chased", 3), ("found", 2), ("visited", 1)]],
    "VI": [([w], c) for w, c in [("slept", 3), ("ran", 3), ("laughed", 2), ("left", 1)]],
    "SAYS": [([w], c) for w, c in [("said", 3), ("thought", 2), ("knew", 1)]],
    "P": [([w], c) for w, c in [("in", 4), ("near", 2), ("with", 3), ("behind", 1)]],
    "ADV": [([w], c) for w, c in [("yesterday", 2), ("today", 2), ("quickly", 1), ("again", 1)]],
}


def expand(sym: str, rng: random.Random, depth: int = 0) -> list[str]:
    if sym not in GRAMMAR:
        return [sym]
    rules = GRAMMAR[sym]
    if depth > 6:  # keep sentences short: take the first (least recursive) rule
        rules = rules[:1]
    rhs = rng.choices([r for r, _ in rules], weights=[w for _, w in rules])[0]
    out: list[str] = []
    for s in rhs:
        out.extend(expand(s, rng, depth + 1))
    return out


def main() -> None:
    rng = random.Random(2013)
    here = Path(__file__).resolve().parent.parent / "corpora"
    for name, n in [("tiny_lm.train.txt", 1500), ("tiny_lm.test.txt", 200)]:
        lines = [" ".join(expand("S", rng)) for _ in range(n)]
        (here / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(name, n, "sentences", sum(len(x.split()) for x in lines), "words")


if __name__ == "__main__":
    main()
