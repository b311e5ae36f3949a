"""Generate the tiny sample corpora shipped in corpora/: the LM text (tiny_lm.train.txt,
tiny_lm.test.txt) and, from the same grammar, a chunking corpus in CoNLL-2000's columns
(tiny_chunk.train.txt, tiny_chunk.test.txt: word, part of speech, chunk tag), which
corpora/patterns/chunk.pat reads.

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


# preterminal -> (part of speech, chunk tag) in CoNLL-2000's tag sets; a base noun phrase
# starts at its determiner or name (an NP's PP is a chunk of its own, as in CoNLL-2000)
CHUNK_TAGS = {
    "DET": ("DT", "B-NP"), "ADJ": ("JJ", "I-NP"), "N": ("NN", "I-NP"), "NAME": ("NNP", "B-NP"),
    "V": ("VBD", "B-VP"), "VI": ("VBD", "B-VP"), "SAYS": ("VBD", "B-VP"), "P": ("IN", "B-PP"),
    "ADV": ("RB", "B-ADVP"), "that": ("IN", "B-SBAR"), ",": (",", "O"),
}


# "that" is also a determiner here, so that one word has two tags to tell apart by context
CHUNK_GRAMMAR = {**GRAMMAR, "DET": GRAMMAR["DET"] + [(["that"], 1)]}


def expand_tagged(sym: str, rng: random.Random, depth: int = 0) -> list[tuple[str, str]]:
    """As :func:`expand` (with CHUNK_GRAMMAR), with each word's preterminal:
    ``[(word, preterminal), ...]``."""
    if sym not in CHUNK_GRAMMAR:
        return [(sym, sym)]
    rules = CHUNK_GRAMMAR[sym]
    if depth > 6:
        rules = rules[:1]
    rhs = rng.choices([r for r, _ in rules], weights=[w for _, w in rules])[0]
    if all(s not in CHUNK_GRAMMAR for s in rhs):  # a preterminal's rule: its word
        return [(w, sym) for w in rhs]
    out: list[tuple[str, str]] = []
    for s in rhs:
        out.extend(expand_tagged(s, rng, depth + 1))
    return out


def main() -> None:
    rng = random.Random(2013)
    here = Path(__file__).resolve().parent.parent / "corpora"
    for name, n in [("tiny_lm.train.txt", 1500), ("tiny_lm.test.txt", 200)]:
        lines = [" ".join(expand("S", rng)) for _ in range(n)]
        (here / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(name, n, "sentences", sum(len(x.split()) for x in lines), "words")
    rng = random.Random(2010)
    for name, n in [("tiny_chunk.train.txt", 600), ("tiny_chunk.test.txt", 100)]:
        blocks = []
        for _ in range(n):
            rows = [f"{w} {' '.join(CHUNK_TAGS[pre])}" for w, pre in expand_tagged("S", rng)]
            blocks.append("\n".join(rows) + "\n")
        (here / name).write_text("\n".join(blocks), encoding="utf-8")
        print(name, n, "sentences", sum(b.count("\n") for b in blocks), "tokens")


if __name__ == "__main__":
    main()
