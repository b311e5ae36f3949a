"""Chunk tag schemes a CRF can train in while it reads and writes IOB2 (``CRF(tags="iobes")``,
``suffixlm crf train --tags iobes``).

IOB2 marks a chunk of type X by ``B-X`` on its first token and ``I-X`` on the others; ``O``
is outside every chunk. IOBES (also called BILOU) tells more: ``S-X`` is a chunk of one
token, ``B-X`` / ``I-X`` / ``E-X`` the first / inner / last token of a longer one. The
extra tags let a token's features say whether the chunk goes on after it, which a
first- or second-order chain otherwise learns only through the next label; on CoNLL-2000
chunking it is worth a few tenths of F1 (``benchmarks/second_order.md``).

The training labels must be IOB2 (every chunk begins with ``B-``): :func:`to_iobes`
rewrites them exactly, and raises ``ValueError`` naming the sequence and token otherwise.
Labellings come back through :func:`to_iob2`, a map of each tag on its own (``B-X``,
``S-X`` -> ``B-X``; ``I-X``, ``E-X`` -> ``I-X``; ``O`` -> ``O``), which inverts
:func:`to_iobes` on every well-formed IOBES sequence. Marginals and label-pair marginals
are those of the mapped labelling: sums over the tags that map to a label
(:func:`output_index`). No numba here: the commands import this module.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TAG_SCHEMES", "to_iobes", "to_iob2", "output_labels", "output_index", "iobes_label_problem",
           "check_tags"]

#: the schemes ``tags`` may name (None: train on the labels as given)
TAG_SCHEMES = ("iobes",)

_TO_IOB2 = {"B": "B", "S": "B", "I": "I", "E": "I"}


def check_tags(tags) -> None:
    """``ValueError`` unless ``tags`` is None or one of :data:`TAG_SCHEMES`."""
    if tags is not None and (not isinstance(tags, str) or tags not in TAG_SCHEMES):
        raise ValueError(f"tags must be None (the labels as given) or one of {', '.join(TAG_SCHEMES)}, "
                         f"not {tags!r}")


def to_iobes(seq, where: str = "y[0]") -> list[str]:
    """The IOBES labels of the IOB2 sequence ``seq``; ``ValueError`` naming ``where`` and the
    token for a label that is not ``O`` or ``B-X`` / ``I-X`` with a type X, or an ``I-X``
    that does not continue a chunk of type X."""
    seq = list(seq)
    out = []
    prev = "O"
    for j, tag in enumerate(seq):
        if tag != "O":
            head, sep, typ = tag.partition("-")
            if head not in ("B", "I") or not sep or not typ:
                raise ValueError(f"{where}[{j}]: label {tag!r} is not IOB2 (O, B-TYPE or I-TYPE), which "
                                 f"tags='iobes' trains from")
            if head == "I" and prev not in ("B-" + typ, "I-" + typ):
                raise ValueError(f"{where}[{j}]: {tag!r} after {prev!r}: in IOB2 every chunk begins with B-; "
                                 f"tags='iobes' needs IOB2 labels")
        prev = tag
    for j, tag in enumerate(seq):
        if tag == "O":
            out.append(tag)
            continue
        typ = tag[2:]
        goes_on = j + 1 < len(seq) and seq[j + 1] == "I-" + typ
        if tag[0] == "B":
            out.append(("B-" if goes_on else "S-") + typ)
        else:
            out.append(("I-" if goes_on else "E-") + typ)
    return out


def to_iob2(tag: str) -> str:
    """The IOB2 label of an IOBES tag (a tag of no IOBES prefix is its own label)."""
    head, sep, typ = tag.partition("-")
    mapped = _TO_IOB2.get(head) if sep else None
    return tag if mapped is None else mapped + "-" + typ


def iobes_label_problem(label: str) -> str | None:
    """Why ``label`` cannot be a tag of an IOBES model (None: it can)."""
    if label == "O":
        return None
    head, sep, typ = label.partition("-")
    if head not in ("B", "I", "E", "S") or not sep or not typ:
        return f"{label!r} is not an IOBES tag (O, or B-, I-, E-, S- and a type)"
    return None


def output_labels(labels) -> list[str]:
    """The labels a model of IOBES tags ``labels`` gives back: their IOB2 labels, each once,
    in the order of their first tag."""
    return list(dict.fromkeys(to_iob2(t) for t in labels))


def output_index(labels) -> tuple[list[str], np.ndarray]:
    """(:func:`output_labels`, for each tag the index of its label there)."""
    out = output_labels(labels)
    where = {lab: i for i, lab in enumerate(out)}
    return out, np.array([where[to_iob2(t)] for t in labels], dtype=np.int64)
