"""The CRF's model file (:class:`crf.model.CRF`: ``save``, ``load``): a ``.npz`` archive
read with ``allow_pickle=False`` holding

    meta         uint8   UTF-8 JSON: {"format": "suffixlm-crf", "version": 2,
                          "labels", "patterns" (pattern file text), "n_columns",
                          "params", "n_features", "sha256" (``digest``: of the other
                          header entries and of the arrays below)}
    obs_blob     uint8   observation strings, UTF-8, concatenated
    obs_offsets  int64   (n_obs + 1,) byte offsets into obs_blob
    kinds        int8    (n_obs,) bit mask: 1 unigram | 2 bigram | 4 trigram (second order)
    theta        float64 (n_params,) weights in the layout of crf.features

A model whose labellings are restricted to some label pairs (second order, or ``forbid``)
has the header entry ``"allowed_pairs"``: the list of allowed ``[previous, label]`` pairs
(absent: every pair). Trigram observations (``t`` patterns) own L^3 weights after the
bigram blocks (``crf.features``). A model of seen states (``"states": "seen"``) holds
``state_counts`` and ``state_labels`` too (``STATES_SPEC``).

A model trained with ``tags="iobes"`` (:mod:`crf.tagschemes`) has the header entry
``"tags": "iobes"``, and its labels are IOBES tags (``O``, or ``B-``, ``I-``, ``E-``, ``S-``
and a type).

A model trained on feature dicts or attribute lists (:mod:`crf.dicts`) has the header
entry ``"input": "dicts"`` (or ``"lists"``), the patterns ``B`` and no columns; column
models have no ``input`` entry (their files are as before).

Only observations with a non-zero weight are stored (after l1 training this is
what makes models small).  Files are written and read by ``suffixlm.io``'s
container (``save_container`` / ``load_container``): atomically, and with every
array's dtype and shape checked on reading; :func:`read` then checks every value.
Version 1 files (whose sha256 covered the arrays only) are still read.

No numba here: ``crf.model`` imports this module, and the commands start without numba.
"""

from __future__ import annotations

import hashlib
import json
import os
import re

import numpy as np

from suffixlm.checks import MISSING, UNEXPECTED, Field, check_fields, check_header
from suffixlm.io import load_container, save_container, word_problem

from .features import FeatureSpace
from .patterns import TRIGRAM, max_column, parse_patterns
from .strings import StringTable
from .tagschemes import TAG_SCHEMES, iobes_label_problem

__all__ = ["FORMAT_NAME", "FORMAT_VERSION", "ModelError", "INPUT_KINDS", "MAX_COLUMNS", "MAX_TRANSITION_SCORE",
           "CONTAINER_SPEC", "STATES_SPEC", "PARAMS", "container_spec", "digest", "digest_v1", "read", "write"]

FORMAT_NAME = "suffixlm-crf"
FORMAT_VERSION = 2  # 1: the checksum covered the arrays only (still read)
#: Commands whose meaning changed after format version 1 (regular expressions: Python's
#: ``re`` then, Wapiti's dialect now; absolute rows: 0-based then, Wapiti's 1-based now).
_V1_CHANGED_PATTERNS = re.compile(r"%[tmTM]\[|%[xtmXTM]\[\s*@")


class ModelError(ValueError):
    """Unreadable, truncated or tampered model file, or a model used before fit."""


#: what a model is trained on and labels: token rows of columns (expanded by patterns), or
#: python-crfsuite's feature dicts or lists of attribute names (:mod:`crf.dicts`)
INPUT_KINDS = ("columns", "dicts", "lists")

#: Most columns a model file may declare (labelling allocates per column).
MAX_COLUMNS = 1 << 16

#: Largest label-pair score at one position whose exponential the scaled forward-backward
#: takes without overflow (e**709.8 is float64's largest), with room for the sum over labels.
MAX_TRANSITION_SCORE = 700.0

#: the patterns of a model of feature dicts or attribute lists: (kind, text) at order 1 and 2
_DICT_PATTERNS = ([(2, "B")], [(2, "B"), (TRIGRAM, "T")])

#: arrays of a model file, in the order of their checksum, with their (dtype, ndim)
CONTAINER_SPEC = {"obs_blob": (np.uint8, 1), "obs_offsets": (np.int64, 1), "kinds": (np.int8, 1),
                  "theta": (np.float64, 1)}
#: the arrays of a model with seen states only (header entry "states": "seen"): the number of
#: labels of each unigram observation's block, and the labels, block after block
STATES_SPEC = {"state_counts": (np.int32, 1), "state_labels": (np.int32, 1)}

#: the training parameters of the header entry "params" (``suffixlm.checks.Field``)
PARAMS = {
    "algorithm": Field("str"),
    "penalty": Field("str", default=None),
    "rho1": Field("finite"),
    "rho2": Field("finite"),
    "max_iter": Field("int", none=True, default=None),
    "max_iterations": Field("int", none=True, default=None),
    "stopeps": Field("finite"),
    "stopwin": Field("int"),
    "history": Field("int"),
    "seed": Field("int", none=True, default=None),
}


def container_spec(meta: dict) -> dict:
    """The arrays a model file with this header holds."""
    return {**CONTAINER_SPEC, **STATES_SPEC} if meta.get("states") == "seen" else CONTAINER_SPEC


def digest(meta: dict, arrays) -> str:
    """sha256 of everything that decides the model's behaviour (format version 2): the
    header's entries but the digest itself (canonical JSON: sorted keys, no spaces), then
    each array of ``CONTAINER_SPEC`` with its name, dtype and shape. Unkeyed: it catches
    accidents; the loader checks every value on its own as well."""
    h = hashlib.sha256()
    header = {k: v for k, v in meta.items() if k != "sha256"}
    h.update(json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8"))
    for name in container_spec(meta):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\n{name} {a.dtype.str} {a.shape}\n".encode("ascii"))
        h.update(a.tobytes())
    return h.hexdigest()


def digest_v1(arrays) -> str:
    """Format version 1's sha256: the bytes of the arrays alone, in order."""
    h = hashlib.sha256()
    for name in CONTAINER_SPEC:
        h.update(np.ascontiguousarray(arrays[name]).tobytes())
    return h.hexdigest()


def write(path: str | os.PathLike, m, st, inputs=()) -> None:
    """Write the fitted :class:`crf.model.CRF` ``m``, trained with the settings ``st``
    (:class:`crf.compat.Settings`), to ``path`` atomically (``suffixlm.io.save_container``)."""
    sp = m.space_
    blob, offsets = sp.observations.blob, sp.observations.offsets
    arrays = {"obs_blob": blob, "obs_offsets": offsets, "kinds": sp.kinds.astype(np.int8),
              "theta": np.asarray(m.theta_, dtype=np.float64)}
    meta = {
        "labels": sp.labels, "patterns": m.pattern_text_, "n_columns": sp.n_columns,
        "params": {"algorithm": st.name, "penalty": st.penalty, "rho1": st.rho1, "rho2": st.rho2,
                   "max_iter": st.max_iter, "stopeps": st.stopeps, "stopwin": st.stopwin,
                   "history": st.history, "seed": m.seed},
        "n_features": int(m.n_features_),
    }
    if getattr(m, "tags_", None) is not None:
        meta["tags"] = m.tags_
    kind = getattr(m, "input_kind_", "columns")
    if kind != "columns":  # column models' files stay as they were
        meta["input"] = kind
    if sp.seen_states:
        meta["states"] = "seen"
        arrays["state_counts"] = np.diff(sp.state_ptr).astype(np.int32)
        arrays["state_labels"] = sp.state_labels.astype(np.int32)
    if sp.allowed is not None:
        meta["allowed_pairs"] = [[sp.labels[k // sp.n_labels], sp.labels[k % sp.n_labels]]
                                 for k in np.flatnonzero(sp.allowed).tolist()]
    meta["sha256"] = digest({"format": FORMAT_NAME, "version": FORMAT_VERSION, **meta}, arrays)
    save_container(path, arrays, meta, FORMAT_NAME, FORMAT_VERSION, meta_key="meta", inputs=inputs)


def read(path: str | os.PathLike, cls):
    """The model of the file ``path`` (this format version or version 1), an instance of
    ``cls`` (``CRF``) but for its ``settings_``. The checksum is checked first (it
    catches accidents, not an attacker, who can recompute it), then every value
    independently: the header's entries (labels, patterns, column count, training
    parameters), the observation arrays and the weights, whose number must be the one
    the labels and observations give and which must be finite. ModelError, naming the
    file and the field, on any inconsistency."""
    data, meta = load_container(path, FORMAT_NAME, (1, FORMAT_VERSION), container_spec, meta_key="meta",
                                error=ModelError)
    if (digest(meta, data) if meta["version"] >= 2 else digest_v1(data)) != meta.get("sha256"):
        raise ModelError(f"{path}: checksum mismatch, the model file was modified or damaged")
    h = _checked_header(path, meta)
    observations, kinds = _checked_observations(path, data)
    theta = data["theta"]
    L = len(h["labels"])  # FeatureSpace's layout, before the space is built
    state_ptr, state_labels = _checked_states(path, data, kinds, L) if meta.get("states") else (None, None)
    n_unigram = int(np.count_nonzero(kinds & 1)) * L if state_ptr is None else int(state_ptr[-1])
    n_params = (n_unigram + int(np.count_nonzero(kinds & 2)) * L * L
                + int(np.count_nonzero(kinds & TRIGRAM)) * L ** 3)
    if theta.shape[0] != n_params:
        raise ModelError(f"{path}: theta: {theta.shape[0]} weights, the {L} labels and the observations' "
                         f"kinds need {n_params}")
    if not np.all(np.isfinite(theta)):
        raise ModelError(f"{path}: theta: weight {int(np.flatnonzero(~np.isfinite(theta))[0])} is not finite")
    _check_score_range(path, theta, n_unigram, kinds, L, h["patterns"])
    if h["n_features"] is not None and h["n_features"] < n_params:
        raise ModelError(f"{path}: header entry 'n_features': {h['n_features']}, fewer than the "
                         f"{n_params} weights kept")
    params = h["params"]
    try:
        model = cls(patterns=None, algorithm=params["algorithm"], penalty=params.get("penalty", "l1"),
                    rho1=params["rho1"], rho2=params["rho2"],
                    max_iter=params.get("max_iter", params.get("max_iterations")), stopeps=params["stopeps"],
                    stopwin=params["stopwin"], history=params["history"], seed=params.get("seed", 0),
                    all_possible_states=False if state_ptr is not None else None, tags=h["tags"])
        model.check_params()
    except (KeyError, TypeError, ValueError) as exc:
        raise ModelError(f"{path}: header entry 'params': {exc}") from None
    if meta["version"] < 2 and _V1_CHANGED_PATTERNS.search(meta["patterns"]):
        raise ModelError(f"{path}: header entry 'patterns': a version-1 model whose patterns use %t/%m regular "
                         f"expressions or @ positions, which meant Python's re and 0-based rows when it was "
                         f"written and mean Wapiti's dialect now: train the model again")
    if h["input"] != "columns":
        other = [o for o, k in zip(observations, kinds) if k & 2 and o != "B"]
        if other:
            raise ModelError(f"{path}: obs_blob: bigram observation {other[0]!r} in a model of {h['input']}, "
                             "whose only bigram observation is the transition 'B'")
        other = [o for o, k in zip(observations, kinds) if k & TRIGRAM and o != "T"]
        if other:
            raise ModelError(f"{path}: obs_blob: trigram observation {other[0]!r} in a model of {h['input']}, "
                             "whose only trigram observation is the triple 'T'")
    if any(p.kind & TRIGRAM for p in h["patterns"]) or h["allowed"] is not None:
        from .transitions import PairStructure

        try:  # the size of the transitions the kernels will loop over
            PairStructure(L, np.ones(L * L, dtype=np.bool_) if h["allowed"] is None else h["allowed"])
        except ValueError as exc:
            raise ModelError(f"{path}: {exc}") from None
    space = FeatureSpace(h["patterns"], observations, kinds, h["labels"], h["n_columns"], h["allowed"],
                         state_ptr=state_ptr, state_labels=state_labels)
    model.input_kind_ = h["input"]
    model.tags_ = h["tags"]
    model.space_ = space
    model.theta_ = np.ascontiguousarray(theta, dtype=np.float64)
    model.pattern_text_ = meta["patterns"]
    model.n_features_ = h["n_features"] if h["n_features"] is not None else space.n_params
    model.n_active_features_ = int(np.count_nonzero(model.theta_))
    return model


def _checked_header(path, meta: dict) -> dict:
    """The header's entries, each checked: labels (at least one, distinct strings),
    patterns (they parse, and use only the model's columns), n_columns, params (known
    names, values of the right types), n_features. The patterns come back parsed, the
    allowed pairs as a mask (None: every pair)."""
    made = {}  # what the checks make of the values: the parsed patterns, the allowed pairs

    def bad(key, what):
        return ModelError(f"{path}: header entry {key!r}: {what}")

    def labels_problem(labels):
        if len(set(labels)) != len(labels):
            return "a label appears twice"
        for lab in labels:
            if word_problem(lab) is not None:
                return f"label {word_problem(lab)} (a label is one column of a CoNLL file)"
        return None

    def patterns_problem(text):
        try:
            made["patterns"] = patterns = parse_patterns(text, f"{path}:patterns")
        except ValueError as exc:
            raise ModelError(str(exc)) from None
        if max_column(patterns) >= meta["n_columns"]:
            return f"a pattern uses column {max_column(patterns)}, the model has {meta['n_columns']} observation " \
                   "column(s)"
        return None

    def params_problem(params):
        def fail(key, reason, text):
            if reason in (UNEXPECTED, MISSING):
                raise bad("params", f"{'unknown' if reason == UNEXPECTED else 'missing'} parameter {key!r}")
            raise bad("params", f"{key} = {params[key]!r} has the wrong type")

        check_fields(params, PARAMS, fail)

    def tags_problem(tags):  # the labels are read first
        for lab in meta["labels"]:
            why = iobes_label_problem(lab)
            if why is not None:
                raise bad("labels", f"{why}, in a model of tags {tags!r}")
        return None

    def input_problem(kind):  # reported on the patterns
        patterns = made["patterns"]
        if not (meta["n_columns"] == 0 and [(p.kind, p.text) for p in patterns] in _DICT_PATTERNS
                and not any(p.commands for p in patterns)):
            raise bad("patterns", f"a model of {kind} has the transition pattern 'B' (and at order 2 the triple "
                                  f"pattern 'T') and no columns")

    def pairs_problem(pairs):
        index = {lab: i for i, lab in enumerate(meta["labels"])}
        L = len(index)
        allowed = made["allowed"] = np.zeros(L * L, dtype=np.bool_)
        for p in pairs:
            if not (isinstance(p, list) and len(p) == 2 and all(isinstance(x, str) and x in index for x in p)):
                return f"{p!r} is not a pair of the model's labels"
            k = index[p[0]] * L + index[p[1]]
            if allowed[k]:
                return f"the pair {p!r} appears twice"
            allowed[k] = True
        return None if allowed.any() else "no label pair is allowed"

    inputs = INPUT_KINDS[1:]
    h = check_header(path, meta, {
        "states": Field(choices=("seen",), default=None,
                        problem="{v}; the only value is 'seen' (absent: every label in every block)"),
        "labels": Field("list", low=1, items="str", problem="not a non-empty list of strings", check=labels_problem),
        "n_columns": Field("int", low=0, high=MAX_COLUMNS),
        "patterns": Field("str", problem="not a string", check=patterns_problem),
        "params": Field("dict", problem="not an object", check=params_problem),
        "n_features": Field("int", low=0, none=True, default=None),
        "input": Field(choices=inputs, default="columns", what=f"one of {', '.join(inputs)} (absent: columns)",
                       check=input_problem),
        "allowed_pairs": Field("list", default=None, problem="not a list of label pairs", check=pairs_problem),
        "tags": Field(choices=TAG_SCHEMES, default=None, what=f"one of {', '.join(TAG_SCHEMES)} (absent: the labels "
                      "as given)", check=tags_problem),
    }, ModelError, known=("sha256",))
    return {"labels": h["labels"], "patterns": made["patterns"], "n_columns": h["n_columns"], "params": h["params"],
            "n_features": h["n_features"], "input": h["input"], "allowed": made.get("allowed"), "tags": h["tags"]}


def _checked_observations(path, data: dict) -> tuple[StringTable, np.ndarray]:
    """The observation strings (distinct, UTF-8) and their kinds (1 unigram, 2 bigram, 3
    both) from ``obs_blob``, ``obs_offsets`` (0 .. size of the blob, non-decreasing, each
    on a character boundary) and ``kinds``."""
    blob = data["obs_blob"]
    off, kinds = data["obs_offsets"], data["kinds"]
    if off.shape[0] != kinds.shape[0] + 1:
        raise ModelError(f"{path}: obs_offsets: {off.shape[0]} entries, kinds has {kinds.shape[0]} "
                         f"(needs {kinds.shape[0] + 1})")
    if off[0] != 0 or off[-1] != blob.shape[0] or np.any(np.diff(off) < 0):
        raise ModelError(f"{path}: obs_offsets: not non-decreasing from 0 to the {blob.shape[0]} bytes of obs_blob")
    bad_kind = (kinds < 1) | (kinds > 7)
    if np.any(bad_kind):
        raise ModelError(f"{path}: kinds: entry {int(np.flatnonzero(bad_kind)[0])} is not "
                         "a bit mask of 1 (unigram), 2 (bigram) and 4 (trigram), from 1 to 7")
    try:
        blob.tobytes().decode("utf-8")
    except UnicodeDecodeError:
        raise ModelError(f"{path}: obs_blob: an observation is not valid UTF-8") from None
    starts = off[:-1][off[:-1] < blob.shape[0]]
    if np.any((blob[starts] & 0xC0) == 0x80):  # a continuation byte: an offset inside a character
        raise ModelError(f"{path}: obs_offsets: an offset falls inside a UTF-8 character")
    observations = StringTable(blob, off)
    if len(set(observations)) != len(observations):
        raise ModelError(f"{path}: obs_blob: an observation appears twice")
    return observations, kinds


def _checked_states(path, data, kinds: np.ndarray, L: int) -> tuple[np.ndarray, np.ndarray]:
    """(state_ptr, state_labels) of a seen-states model, checked as the kernels need them: one
    count per unigram observation, each in 1..L (a block has a label at least: the kernels
    read a block's end at its first weight), as many labels as the counts sum to, and the
    labels of each block strictly increasing in 0..L-1 (the lookups bisect them)."""
    counts, labels = data["state_counts"], data["state_labels"]
    n_uobs = int(np.count_nonzero(kinds & 1))
    if counts.shape[0] != n_uobs:
        raise ModelError(f"{path}: state_counts: {counts.shape[0]} entries for {n_uobs} unigram observations")
    bad = np.flatnonzero((counts < 1) | (counts > L))
    if bad.size:
        raise ModelError(f"{path}: state_counts: entry {int(bad[0])} is {int(counts[bad[0]])}, not in 1..{L}")
    ptr = np.zeros(n_uobs + 1, dtype=np.int64)
    np.cumsum(counts, out=ptr[1:])
    if labels.shape[0] != ptr[-1]:
        raise ModelError(f"{path}: state_labels: {labels.shape[0]} labels, state_counts sum to {int(ptr[-1])}")
    bad = np.flatnonzero((labels < 0) | (labels >= L))
    if bad.size:
        raise ModelError(f"{path}: state_labels: entry {int(bad[0])} is {int(labels[bad[0]])}, not a label id "
                         f"(0..{L - 1})")
    lab = labels.astype(np.int64)
    step = np.diff(lab)
    first = np.zeros(lab.shape[0], dtype=bool)
    first[ptr[:-1]] = True
    bad = np.flatnonzero((step <= 0) & ~first[1:])
    if bad.size:
        raise ModelError(f"{path}: state_labels: entry {int(bad[0]) + 1} does not follow the label before it "
                         "in its block (the labels of a block are increasing)")
    return ptr, lab


def _check_score_range(path, theta: np.ndarray, start: int, kinds: np.ndarray, L: int, patterns) -> None:
    """Finite weights can still overflow inference: a position sums one weight per pattern
    (unary scores, taken relative to their maximum, need only a finite sum) and the
    label-pair scores are exponentiated as they are. Refuse weights for which either can
    happen (trained models stay far below: their weights are of order 1-100). ``start``:
    the number of unigram weights."""
    n_uni_pat = sum(1 for p in patterns if p.kind & 1)
    n_bi_pat = sum(1 for p in patterns if p.kind & 2)
    n_tri_pat = sum(1 for p in patterns if p.kind & TRIGRAM)
    tstart = start + int(np.count_nonzero(kinds & 2)) * L * L
    max_u = float(np.abs(theta[:start]).max()) if start else 0.0
    max_b = float(np.abs(theta[start:tstart]).max()) if tstart > start else 0.0
    max_t = float(np.abs(theta[tstart:]).max()) if theta.shape[0] > tstart else 0.0
    if n_bi_pat * max_b + n_tri_pat * max_t > MAX_TRANSITION_SCORE:
        raise ModelError(f"{path}: theta: label-pair weights up to {max_b:g} over {n_bi_pat} bigram pattern(s) "
                         f"and label-triple weights up to {max_t:g} over {n_tri_pat} trigram pattern(s) give "
                         f"scores beyond {MAX_TRANSITION_SCORE:g}, whose exponentials overflow")
    if n_uni_pat * max_u > 1e300:
        raise ModelError(f"{path}: theta: unigram weights up to {max_u:g} over {n_uni_pat} pattern(s) overflow "
                         "a position's score")
