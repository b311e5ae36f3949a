"""The log-linear model's file (:class:`suffixlm.model.LogLinearLM`: ``save``, ``load``):
an npz container (``suffixlm.io.save_container``, no pickle) holding the weights, the
vocabulary, the suffix tree's arrays (with the training text its edge labels point into;
for a model built from counts, the distinct (context, target) events and their counts
instead), the base measure's arrays, and a JSON header (:data:`HEADER`).

Reading checks every value a kernel or a probability relies on: the header's entries,
the vocabulary, the suffix tree (built again from the training text it stores, or from
the events and their counts, and compared array by array: ``SuffixTree.from_arrays``),
the weights, the base measure and the distributions they make. A truncated, tampered or
foreign file raises :class:`ModelFormatError` naming the file and the field.
"""

from __future__ import annotations

import math
import os
from typing import Iterable

import numpy as np

from .checks import Field, check_header, shown
from .corpus import Vocabulary
from .io import load_container, save_container
from .options import LM_BASES, LM_PENALTIES
from .suffixtree import SuffixTree

__all__ = ["FORMAT", "FORMAT_VERSION", "HEADER", "ModelFormatError", "read", "write"]

FORMAT = "suffixlm-loglinear"
FORMAT_VERSION = 1


class ModelFormatError(ValueError):
    """A model file that cannot be read: truncated, tampered, or of another format."""


# members of a model file and their (dtypes, ndim); the tree's values are checked by
# SuffixTree.from_arrays, the rest by read
_CONTAINER_SPEC = {
    "weights": (np.float64, 1),
    "vocab_utf8": (np.uint8, 1),
    **{"tree." + k: ((np.int32, np.int64), 1) for k in SuffixTree.FIELDS},
    "tree.max_depth": ((np.int32, np.int64), 0),
}
_BASE_SPEC = {"base.lnB": (np.float64, 1), "base.gamma": (np.float64, 1)}
# a Kneser-Ney base on the collapsed tree (unbounded order) keeps its closed form inside edges
_EDGE_BASE_SPEC = {"base.ln_d1_cum": (np.float64, 1)}
# a model built from counted events stores them (tree.tokens / tree.offsets) with their counts
_EVENTS_SPEC = {"tree.event_counts": ((np.int32, np.int64), 1)}

_TOP_ORDER = SuffixTree.MAX_STORED_DEPTH + 1

#: The header's entries (``suffixlm.checks.Field``). Those with a default are absent from
#: files of older writers.
HEADER = {
    "order": Field("int", low=1, high=_TOP_ORDER, none=True,
                   what=f"null (unbounded) or an integer in 1 .. {_TOP_ORDER}"),
    "penalty": Field("str", choices=LM_PENALTIES),
    "lam": Field("finite", low=0),
    "alpha": Field("finite", above=0, none=True, what="null or a finite number > 0"),
    "has_unk": Field("bool"),
    "vocab_size": Field("int"),
    "n_unseen": Field("finite"),
    "n_params": Field("int"),
    "objective": Field("number", default=float("nan")),
    "base": Field("str", choices=LM_BASES, default="none"),
    "positive": Field("bool", default=True),
    "base_u0": Field("finite", default=None),
    "base_ln_unseen": Field("finite", default=None),
    "training_text": Field(choices=("text", "events"), default="text", what="'text' or 'events'"),
    "vocab_order": Field(choices=("counts", "given"), default="given", what="'counts' or 'given'"),
}


def write(path: str | os.PathLike, m, inputs: Iterable[str | os.PathLike] = ()) -> None:
    """Write the fitted :class:`suffixlm.model.LogLinearLM` ``m`` to exactly ``path``,
    atomically (``io.save_container``)."""
    arrays = {"weights": np.asarray(m.weights_, dtype=np.float64)}
    for k, v in m.tree_.to_arrays().items():
        arrays["tree." + k] = np.asarray(v)
    blob = "\n".join(m.vocab_.words).encode("utf-8")
    arrays["vocab_utf8"] = np.frombuffer(blob, dtype=np.uint8)
    if m.base_.kind != "none":
        arrays["base.lnB"] = m.base_.lnB
        arrays["base.gamma"] = m.base_.gamma
    if m.base_.on_edges:
        arrays["base.ln_d1_cum"] = m.base_.ln_d1_cum
    meta = {
        "order": None if m.order is None else int(m.order),
        "penalty": m.penalty,
        "lam": float(m.lam_),
        "alpha": None if m.alpha is None else float(m.alpha),
        "has_unk": bool(m.vocab_.has_unk),
        "vocab_size": len(m.vocab_),
        "n_unseen": float(m.n_unseen_),
        "n_params": int(m.tree_.n_params),
        "objective": float(getattr(m, "objective_", float("nan"))),
        "base": m.base_.kind,
        "positive": bool(m.positive),
        "base_u0": float(m.base_.u0),
        "base_ln_unseen": float(m.base_.ln_unseen),
    }
    if m.tree_.event_counts is not None:
        meta["training_text"] = "events"
    if _vocab_order_problem(m.vocab_.words, arrays["tree.tokens"]) is None:
        meta["vocab_order"] = "counts"
    save_container(path, arrays, meta, FORMAT, FORMAT_VERSION, inputs=inputs)


def read(path: str | os.PathLike, cls):
    """The model of the file ``path``, an instance of ``cls`` (``LogLinearLM``) ready to
    score, every value checked (the module's docstring)."""
    def spec(meta):  # base arrays with a base measure, the events' counts in a model built from them
        # (an unknown base or training_text is refused with the header)
        base = meta.get("base", "none")
        edges = base == "kn" and meta.get("order", 0) is None
        return {**_CONTAINER_SPEC, **(_BASE_SPEC if base != "none" and base in LM_BASES else {}),
                **(_EDGE_BASE_SPEC if edges else {}),
                **(_EVENTS_SPEC if meta.get("training_text", "text") != "text" else {})}

    data, meta = load_container(path, FORMAT, (FORMAT_VERSION,), spec, error=ModelFormatError)
    h = _checked_header(path, meta)
    vocab = _checked_vocab(path, data["vocab_utf8"], h)
    m = cls(order=h["order"], penalty=h["penalty"], lam=h["lam"], alpha=h["alpha"], base=h["base"],
            positive=h["positive"])
    try:
        tree = SuffixTree.from_arrays({k[5:]: v for k, v in data.items() if k.startswith("tree.")}, len(vocab),
                                      collapse=not m._on_trie())
    except ValueError as e:
        raise ModelFormatError(f"{path}: {e}") from None
    if h["vocab_order"] == "counts":
        why = _vocab_order_problem(vocab.words, data["tree.tokens"])
        if why is not None:
            raise ModelFormatError(f"{path}: vocab_utf8: {why}, not in the order of their counts in the stored "
                                   "training text (header entry 'vocab_order': 'counts')")
    if h["order"] is not None and tree.max_depth != h["order"] - 1:
        raise ModelFormatError(f"{path}: tree.max_depth: {tree.max_depth}, the header's order "
                               f"{h['order']} needs {h['order'] - 1}")
    if h["n_params"] != tree.n_params:
        raise ModelFormatError(f"{path}: header entry 'n_params': {h['n_params']}, the suffix tree has "
                               f"{tree.n_params}")
    try:
        m._check_params()
    except ValueError as e:
        raise ModelFormatError(f"{path}: header: {e}") from None
    n_unseen = m._n_unseen(tree, vocab)
    if h["n_unseen"] != n_unseen:
        raise ModelFormatError(f"{path}: header entry 'n_unseen': {h['n_unseen']!r}, the vocabulary and the "
                               f"suffix tree leave {n_unseen:g} words unseen")
    w = _checked_weights(path, data["weights"], tree, h["positive"])
    base = _checked_base(path, h, data, tree, n_unseen, vocab)
    m.vocab_ = vocab
    m.tree_ = tree
    m.weights_ = w
    m.lam_ = m.lam  # the value the model was trained with (write stores lam_)
    m.n_unseen_ = n_unseen
    m.base_ = base
    m.objective_ = float(h["objective"])
    m._prepare_scoring()
    _check_distributions(path, m)
    return m


def _checked_header(path, meta: dict) -> dict:
    """The header's entries, each checked for its type and range (defaults filled in)."""
    out = check_header(path, meta, HEADER, ModelFormatError, show=shown)
    if out["base"] != "none" and (out["base_u0"] is None or out["base_ln_unseen"] is None):
        raise ModelFormatError(f"{path}: header: a model with base {out['base']!r} needs 'base_u0' and "
                               "'base_ln_unseen'")
    return out


def _checked_vocab(path, raw: np.ndarray, h: dict) -> Vocabulary:
    """The vocabulary of member ``vocab_utf8``: UTF-8 words, one a line, none empty or
    holding white space (a corpus word never does), as many as the header says."""
    try:
        text = raw.tobytes().decode("utf-8")
    except UnicodeDecodeError as e:
        raise ModelFormatError(f"{path}: vocab_utf8: invalid UTF-8 at byte {e.start}") from None
    words = text.split("\n")
    try:
        vocab = Vocabulary(words, has_unk=h["has_unk"])
    except ValueError as e:
        raise ModelFormatError(f"{path}: vocab_utf8: {e}") from None
    if len(vocab) != h["vocab_size"]:
        raise ModelFormatError(f"{path}: header entry 'vocab_size': {h['vocab_size']}, vocab_utf8 holds "
                               f"{len(vocab)} words")
    return vocab


def _vocab_order_problem(words: list[str], tokens: np.ndarray) -> str | None:
    """None when ``words[3:]`` are in ``Vocabulary.from_counts``'s order for the counts of
    ``tokens`` (decreasing count, ties in code-point order), every one of them counted;
    else which words break it. A vocabulary built from the training text is in that
    order, which the model file records (``vocab_order``) and the loader checks: words
    of equal counts swapped, a word the text never holds or words out of count order are
    then refused (names of words of different counts swapped remain a valid model)."""
    if tokens.size and (int(tokens.min()) < 0 or int(tokens.max()) >= len(words)):
        return "word ids of the training text outside the vocabulary"
    counts = np.bincount(tokens, minlength=len(words))[3:]
    if counts.size and counts.min() < 1:
        return f"word {int(np.argmin(counts)) + 3} ({words[int(np.argmin(counts)) + 3]!r}) is never seen"
    rest = words[3:]
    for i in np.flatnonzero(counts[1:] >= counts[:-1]).tolist():
        if counts[i + 1] > counts[i] or rest[i + 1] <= rest[i]:
            return f"words {i + 3} and {i + 4} ({rest[i]!r}, {rest[i + 1]!r}) are seen {counts[i]} and " \
                   f"{counts[i + 1]} times"
    return None


def _checked_weights(path, w: np.ndarray, tree: SuffixTree, positive: bool) -> np.ndarray:
    """One finite weight per parameter of the tree, >= 0 for a positive model."""
    if w.shape != (tree.n_params,):
        raise ModelFormatError(f"{path}: weights: {w.shape[0]} entries, the suffix tree has {tree.n_params} "
                               "parameters")
    if not np.all(np.isfinite(w)):
        raise ModelFormatError(f"{path}: weights: entry {int(np.flatnonzero(~np.isfinite(w))[0])} is not finite")
    if positive and np.any(w < 0):
        raise ModelFormatError(f"{path}: weights: entry {int(np.flatnonzero(w < 0)[0])} is negative in a model "
                               "with positive weights")
    return np.ascontiguousarray(w, dtype=np.float64)


def _checked_base(path, h: dict, data: dict, tree: SuffixTree, n_unseen: float, vocab: Vocabulary):
    """The base measure: none (its header values those ``save`` writes for it), or the
    stored arrays, checked against the tree: ln B <= 0 and finite per parameter, gamma
    finite and > 0 per node with finite, non-zero products along every path, and the
    mass u0 of the unseen words (and the ln B of each) as ``kneser_ney_base`` derives
    them from the root's ln B."""
    from .base_measure import event_counts, from_arrays, no_base

    if h["base"] == "none":
        for key, want in (("base_u0", n_unseen), ("base_ln_unseen", 0.0)):
            if h[key] is not None and h[key] != want:
                raise ModelFormatError(f"{path}: header entry {key!r}: {h[key]!r}, a model without a base "
                                       f"measure has {want!r}")
        return no_base(tree, n_unseen)
    lnB, gamma = data["base.lnB"], data["base.gamma"]
    for key, a, n, what in (("base.lnB", lnB, tree.n_params, "parameters"), ("base.gamma", gamma, tree.n_nodes,
                                                                             "nodes")):
        if a.shape != (n,):
            raise ModelFormatError(f"{path}: {key}: {a.shape[0]} entries, the suffix tree has {n} {what}")
        if not np.all(np.isfinite(a)):
            raise ModelFormatError(f"{path}: {key}: entry {int(np.flatnonzero(~np.isfinite(a))[0])} is not finite")
    if np.any(lnB > 0):
        raise ModelFormatError(f"{path}: base.lnB: entry {int(np.flatnonzero(lnB > 0)[0])} is > 0 (a log-probability)")
    if np.any(gamma <= 0):
        raise ModelFormatError(f"{path}: base.gamma: entry {int(np.flatnonzero(gamma <= 0)[0])} is <= 0")
    u0, ln_unseen = h["base_u0"], h["base_ln_unseen"]
    root = slice(tree.succ_offsets[0], tree.succ_offsets[1])
    seen = float(np.exp(lnB[root]).sum())
    want_u0 = max(1.0 - seen, 0.0) if n_unseen > 0 else 0.0
    if not abs(u0 - want_u0) <= 1e-9 or (n_unseen == 0 and u0 != 0.0):  # exp and sum may round differently
        raise ModelFormatError(f"{path}: header entry 'base_u0': {u0!r}, the root's base.lnB leave {want_u0!r} "
                               "to the unseen words")
    want_ln = math.log(max(u0, 1e-300) / n_unseen) if n_unseen > 0 else 0.0
    if not math.isclose(ln_unseen, want_ln, rel_tol=1e-12, abs_tol=1e-12):
        raise ModelFormatError(f"{path}: header entry 'base_ln_unseen': {ln_unseen!r}, base_u0 shared by "
                               f"{n_unseen:g} unseen words gives {want_ln!r}")
    try:
        with np.errstate(over="ignore"):  # an overflowing product is refused below
            edges = "base.ln_d1_cum" in data
            base = from_arrays(h["base"], tree, lnB, gamma, u0, ln_unseen, data["base.ln_d1_cum"] if edges else None,
                               event_counts(tree, vocab) if edges else None)
    except ValueError as e:
        field = "base.ln_d1_cum" if "ln_d1_cum" in str(e) else "base.gamma"
        raise ModelFormatError(f"{path}: {field}: {e}") from None
    if not np.all(np.isfinite(base.gcum)):
        raise ModelFormatError(f"{path}: base.gamma: the product along a path from the root overflows")
    return base


def _check_distributions(path, m) -> None:
    """Every distribution the loaded weights and base define is one: each context node's
    normaliser finite and > 0, each stored (node, word) probability in (0, 1]. Finite
    weights can still overflow the exponentials (a weight of 800) and a finite base can
    still underflow them; the scores would be -inf or NaN."""
    m._ensure_forward()
    Z = m._Z
    bad = ~(np.isfinite(Z) & (Z > 0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"{path}: weights / base: the normaliser of suffix-tree node {j} is {Z[j]!r}, "
                               "not a finite positive number")
    with np.errstate(all="ignore"):
        p = m._expS / Z[m._param_node]
    bad = ~((p > 0) & (p <= 1.0 + 1e-9))
    if bad.any():
        q = int(np.flatnonzero(bad)[0])
        raise ModelFormatError(f"{path}: weights / base: parameter {q} gives the probability {p[q]!r}, "
                               "not one in (0, 1]")
