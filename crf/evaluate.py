"""Evaluation of label sequences: token / sequence error, per-label P/R/F1, and
chunk P/R/F1 with the rules of the CoNLL ``conlleval`` script.

Chunk rules (conlleval): a tag ``B-X`` / ``I-X`` / ``E-X`` / ``S-X`` is split at the
first hyphen into a prefix and a type (a tag without hyphen is all prefix, type
``""``); ``O`` is outside.  The start/end tables are conlleval.pl's exactly (B/I/O/E
prefixes; a change of type also starts/ends a chunk), so IOB1 and IOB2 read
correctly.  A chunk is
correct when gold and guess start and end together with the same type.
Sequence boundaries act as ``O``.  Labels unseen in training are ordinary strings
here: they never match a prediction, so they count as errors.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from suffixlm.io import split_words

__all__ = ["ChunkScores", "chunk_scores", "conlleval_report", "token_scores", "split_tag",
           "label_scores", "read_label_output"]


def split_tag(tag: str) -> tuple[str, str]:
    """``"B-NP"`` -> ``("B", "NP")``; ``"O"`` -> ``("O", "")`` (conlleval's rule)."""
    i = tag.find("-")
    if i < 0:
        return tag, ""
    return tag[:i], tag[i + 1:]


_ENDS = {("B", "B"), ("B", "O"), ("I", "B"), ("I", "O"), ("E", "E"), ("E", "I"), ("E", "O")}
_STARTS = {("B", "B"), ("I", "B"), ("O", "B"), ("O", "I"), ("E", "E"), ("E", "I"), ("O", "E")}


def _end_of_chunk(prev_tag, tag, prev_type, typ) -> bool:
    """conlleval's endOfChunk: did a chunk end between the previous and this token?"""
    return ((prev_tag, tag) in _ENDS
            or (prev_tag not in ("O", ".") and prev_type != typ)
            or prev_tag in ("]", "["))


def _start_of_chunk(prev_tag, tag, prev_type, typ) -> bool:
    """conlleval's startOfChunk: did a chunk start at this token?"""
    return ((prev_tag, tag) in _STARTS
            or (tag not in ("O", ".") and prev_type != typ)
            or tag in ("[", "]"))


@dataclass
class ChunkScores:
    """Counts of a conlleval run (per type dictionaries keyed by chunk type)."""

    tokens: int = 0
    correct_tags: int = 0
    gold_chunks: int = 0
    guessed_chunks: int = 0
    correct_chunks: int = 0
    gold_by_type: Counter = field(default_factory=Counter)
    guessed_by_type: Counter = field(default_factory=Counter)
    correct_by_type: Counter = field(default_factory=Counter)

    @staticmethod
    def _prf(correct, guessed, gold):
        p = 100.0 * correct / guessed if guessed else 0.0
        r = 100.0 * correct / gold if gold else 0.0
        f = 2 * p * r / (p + r) if p + r else 0.0
        return p, r, f

    @property
    def accuracy(self) -> float:
        return 100.0 * self.correct_tags / self.tokens if self.tokens else 0.0

    @property
    def precision_recall_f1(self) -> tuple[float, float, float]:
        return self._prf(self.correct_chunks, self.guessed_chunks, self.gold_chunks)

    def by_type(self, typ: str) -> tuple[float, float, float]:
        return self._prf(self.correct_by_type[typ], self.guessed_by_type[typ], self.gold_by_type[typ])


def chunk_scores(gold: Iterable[Sequence[str]], guessed: Iterable[Sequence[str]]) -> ChunkScores:
    """conlleval counts over parallel lists of label sequences."""
    sc = ChunkScores()
    for gseq, pseq in zip(gold, guessed, strict=True):
        if len(gseq) != len(pseq):
            raise ValueError("gold and guessed sequences differ in length")
        in_correct = False
        last_c, last_ct, last_g, last_gt = "O", "", "O", ""
        for gtag, ptag in list(zip(gseq, pseq)) + [("O", "O")]:
            c, ct = split_tag(gtag)
            g, gt = split_tag(ptag)
            end_c = _end_of_chunk(last_c, c, last_ct, ct)
            end_g = _end_of_chunk(last_g, g, last_gt, gt)
            start_c = _start_of_chunk(last_c, c, last_ct, ct)
            start_g = _start_of_chunk(last_g, g, last_gt, gt)
            if in_correct:
                if end_c and end_g and last_gt == last_ct:
                    in_correct = False
                    sc.correct_chunks += 1
                    sc.correct_by_type[last_ct] += 1
                elif end_c != end_g or gt != ct:
                    in_correct = False
            if start_c and start_g and gt == ct:
                in_correct = True
            if start_c:
                sc.gold_chunks += 1
                sc.gold_by_type[ct] += 1
            if start_g:
                sc.guessed_chunks += 1
                sc.guessed_by_type[gt] += 1
            last_c, last_ct, last_g, last_gt = c, ct, g, gt
        # the appended boundary ("O", "O") is not a token
        n = len(gseq)
        sc.tokens += n
        sc.correct_tags += sum(1 for a, b in zip(gseq, pseq) if a == b)
    return sc


def conlleval_report(sc: ChunkScores) -> str:
    """The text conlleval prints for these counts."""
    p, r, f = sc.precision_recall_f1
    lines = [
        f"processed {sc.tokens} tokens with {sc.gold_chunks} phrases; "
        f"found: {sc.guessed_chunks} phrases; correct: {sc.correct_chunks}.",
    ]
    if sc.tokens:
        lines.append(f"accuracy: {sc.accuracy:6.2f}%; precision: {p:6.2f}%; recall: {r:6.2f}%; FB1: {f:6.2f}")
    types = sorted(set(sc.gold_by_type) | set(sc.guessed_by_type))
    for typ in types:
        if not typ:
            continue
        tp, tr, tf = sc.by_type(typ)
        lines.append(f"{typ:>17}: precision: {tp:6.2f}%; recall: {tr:6.2f}%; FB1: {tf:6.2f}  "
                     f"{sc.guessed_by_type[typ]}")
    return "\n".join(lines) + "\n"


def token_scores(gold: Iterable[Sequence[str]], guessed: Iterable[Sequence[str]]) -> tuple[float, float]:
    """``(token_error, sequence_error)`` in percent."""
    tok = err = seq = serr = 0
    for gseq, pseq in zip(gold, guessed, strict=True):
        e = sum(1 for a, b in zip(gseq, pseq, strict=True) if a != b)
        tok += len(gseq)
        err += e
        seq += 1
        serr += e > 0
    return (100.0 * err / tok if tok else 0.0, 100.0 * serr / seq if seq else 0.0)


def label_scores(gold: Iterable[Sequence[str]], guessed: Iterable[Sequence[str]]) -> dict[str, tuple[float, float, float, int]]:
    """Per-label ``(precision, recall, f1, support)`` in percent, over tokens."""
    tp: Counter = Counter()
    n_gold: Counter = Counter()
    n_guess: Counter = Counter()
    for gseq, pseq in zip(gold, guessed, strict=True):
        for a, b in zip(gseq, pseq, strict=True):
            n_gold[a] += 1
            n_guess[b] += 1
            if a == b:
                tp[a] += 1
    out = {}
    for lab in sorted(set(n_gold) | set(n_guess)):
        out[lab] = (*ChunkScores._prf(tp[lab], n_guess[lab], n_gold[lab]), n_gold[lab])
    return out


_SCORE_LINE = re.compile(r"^# \d+ [-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d+)?\s*$")


def check_label_columns(gold: list[list[str]], guess: list[list[str]], name: str = "<input>") -> None:
    """Raise ``ValueError`` when the last column cannot be predictions of the labels in
    the column before it: most of its tokens (over half) carry labels that the gold
    column never uses, e.g. a CoNLL file scored before labelling (POS tags read as the
    gold labels, chunk tags as the predictions)."""
    known = {lab for seq in gold for lab in seq}
    n = sum(len(seq) for seq in guess)
    strange: dict[str, int] = {}
    for seq in guess:
        for lab in seq:
            if lab not in known:
                strange[lab] = strange.get(lab, 0) + 1
    k = sum(strange.values())
    if n and 2 * k > n:
        examples = ", ".join(repr(x) for x in sorted(strange, key=lambda x: -strange[x])[:4])
        raise ValueError(f"{name}: the last column does not look like predictions of the column before it: "
                         f"{k} of {n} tokens carry labels the gold column never has ({examples}); score the "
                         "output of `suffixlm crf label` (... gold predicted)")


def read_label_output(lines: Iterable[str], name: str = "<input>") -> tuple[list[list[str]], list[list[str]]]:
    """Read ``... gold predicted`` lines (blank line between sequences): ``(gold, guessed)``.

    Lines ``# <rank> <log-probability>`` written by ``label --score`` are skipped
    (a token line such as ``# # B-NP B-NP`` is a token: WSJ has the word ``#``).
    """
    gold: list[list[str]] = []
    guess: list[list[str]] = []
    cg: list[str] = []
    cp: list[str] = []
    for lineno, line in enumerate(lines, 1):
        cols = split_words(line)  # ASCII white space, as every reader (suffixlm.io)
        if not cols or cols[0] == "-X-":
            if cg:
                gold.append(cg)
                guess.append(cp)
                cg, cp = [], []
            continue
        if len(cols) == 3 and _SCORE_LINE.match(line):  # `label --score` comment, not a token
            continue
        if len(cols) < 2:
            raise ValueError(f"{name}:{lineno}: expected at least 2 columns (gold predicted), found 1")
        cg.append(cols[-2])
        cp.append(cols[-1])
    if cg:
        gold.append(cg)
        guess.append(cp)
    return gold, guess
