"""sklearn-crfsuite's / python-crfsuite's input: sequences of feature dicts (or of lists of
attribute names), as unigram observations of a :class:`crf.features.FeatureSpace`.

A token (python-crfsuite's *item*) becomes a list of (attribute name, value) pairs
exactly as ``pycrfsuite``'s ``to_item`` makes them (``_pycrfsuite.pyx``):

* ``{k: "v"}`` (str, or UTF-8 bytes): the attribute ``k:v`` with value 1;
* ``{k: number}`` (bool included: True 1.0, False 0.0): the attribute ``k`` with that value
  (finite, of magnitude at most ``MAX_FEATURE_VALUE`` = 1e5; others are refused);
* ``{k: dict | list | set}``: the nested item flattened, ``k:`` prefixed to each of its
  names (``{"d": {"p": 2.0, "q": "s"}}`` -> ``d:p`` 2.0, ``d:q:s`` 1.0;
  ``{"l": ["u", "v"]}`` -> ``l:u``, ``l:v``, each 1.0);
* a token that is a list (tuple, set) of strings: each string an attribute with value 1.

An attribute that occurs twice in one token counts twice (its values add up in the
score), as in CRFsuite.  Zero values contribute nothing; their names are observations
like any other, but a name whose weights all stay zero (e.g. one only ever False) is
dropped with the other all-zero observations when the model is compacted, so
``attributes_`` lists what CRFsuite's model lists: the attributes with a non-zero weight.

Layout (see :mod:`crf.features`): one unigram observation per distinct attribute name,
plus the observation ``"B"`` of the pure label-transition pattern ``B`` (CRFsuite's
transition features, all L*L pairs: its ``all_possible_transitions``) and, at order 2,
the observation ``"T"`` of the pure label-triple pattern ``T``.  Token i's
attributes with a non-zero value fill row i of ``unigram_base`` / ``unigram_value``, both
padded with -1 / 0.0 to the largest attribute count of a token (``unigram_value`` empty
when every value is 1: the indicator path): memory is 8 (16 with values) bytes * tokens *
that count, so one token with many more attributes than the others widens every row (a warning
says so when the padding is more than half of the arrays and above 64 MB).  Ids are
assigned column by column (the j-th attribute of every token, then the (j+1)-th), then
by decreasing frequency, as the pattern path does, so the same features written as
columns and patterns give the same parameter vector, bit for bit.
"""

from __future__ import annotations

import math
import warnings
from array import array
from itertools import repeat

import numpy as np

from .features import EncodedCorpus, FeatureSpace, unigram_base_type
from .patterns import parse_patterns

__all__ = ["ITEM_INPUTS", "input_kind", "item_attributes", "build", "encode"]

#: the input kinds of python-crfsuite: feature dicts, or lists of attribute names
ITEM_INPUTS = ("dicts", "lists")
TRANSITION = "B"  # the observation (and pattern) of the label-transition block
TRIPLE = "T"  # the observation (and pattern) of the label-triple block (second order)
#: the structure observations of order 1 and 2, with their kind bits (BIGRAM, TRIGRAM)
_STRUCTURE = ((TRANSITION, 2), (TRIPLE, 4))
#: the pattern text of each order's model
PATTERN_TEXT = {1: TRANSITION + "\n", 2: TRANSITION + "\n" + TRIPLE + "\n"}
_PATTERNS = {k: parse_patterns(v) for k, v in PATTERN_TEXT.items()}
PAD_WARN_BYTES = 64 << 20
#: The largest magnitude of a real feature value: beyond it the solvers cannot fit the tiny
#: weights such a value needs (values of 1e6 train to chance accuracy, 1e300 to one label
#: everywhere) and the scores near overflow. Scale such features (log, standardise).
MAX_FEATURE_VALUE = 1e5


class FeatureInputError(ValueError):
    """Bad feature dicts / attribute lists (names the sequence and token)."""


def _token_kind(tok) -> str:
    if isinstance(tok, dict):
        return "dicts"
    if isinstance(tok, (list, tuple, set, frozenset)):
        return "lists"
    return type(tok).__name__


def input_kind(X, name: str = "X") -> str:
    """``"dicts"`` when the tokens of X are feature dicts, ``"lists"`` when they are lists
    (attribute names, or columns: the caller decides); ValueError when tokens of both kinds
    (or of neither) occur."""
    first = None
    for i, seq in enumerate(X):
        if isinstance(seq, (str, bytes, dict)) or not hasattr(seq, "__len__"):
            raise FeatureInputError(f"{name}[{i}] is a {type(seq).__name__}, not a sequence of tokens")
        for j, tok in enumerate(seq):
            k = _token_kind(tok)
            if k not in ITEM_INPUTS:
                raise FeatureInputError(f"{name}[{i}][{j}] is a {k}: a token is a dict of features or a list")
            if first is None:
                first = (k, i, j)
            elif k != first[0]:
                raise FeatureInputError(
                    f"{name}[{i}][{j}] is a {k[:-1]} but {name}[{first[1]}][{first[2]}] is a {first[0][:-1]}: "
                    "one call takes tokens of one kind (feature dicts, or lists)")
    return first[0] if first else "dicts"


def _where(where) -> str:
    name, i, j = where if isinstance(where, tuple) else (where, None, None)
    return name if i is None else f"{name}[{i}][{j}]"


def _key(key, where) -> str:
    if isinstance(key, str):
        return key
    if isinstance(key, bytes):
        try:
            return key.decode("utf-8")
        except UnicodeDecodeError:
            raise FeatureInputError(f"{_where(where)}: key {key!r} is not UTF-8") from None
    raise FeatureInputError(f"{_where(where)}: key {key!r} is a {type(key).__name__}, expected a string")


def _flatten(x, prefix: str, names: list, values: list, where) -> None:
    """pycrfsuite's ``to_item``: append x's (name, value) pairs, each name prefixed.
    where: the token's place for errors, (name of X, i, j) or a string."""
    if not isinstance(x, dict):
        for key in x:  # list / set of attribute names, value 1 each
            names.append(prefix + _key(key, where))
            values.append(1.0)
        return
    for key, v in x.items():
        k = prefix + (key if isinstance(key, str) else _key(key, where))
        if isinstance(v, str):
            names.append(k + ":" + v)
            values.append(1.0)
        elif isinstance(v, (float, int, np.floating, np.integer, np.bool_)):  # bool is an int
            try:
                f = float(v)
            except OverflowError:  # an int beyond float64
                f = math.inf
            if not math.isfinite(f):
                raise FeatureInputError(f"{_where(where)}: feature {k!r} = {v!r} is not finite")
            if abs(f) > MAX_FEATURE_VALUE:
                raise FeatureInputError(f"{_where(where)}: feature {k!r} = {v!r} is beyond +-{MAX_FEATURE_VALUE:g}, "
                                        "the largest magnitude a feature value may have (scale it: log, standardise)")
            names.append(k)
            values.append(f)
        elif isinstance(v, (dict, list, set)):
            _flatten(v, k + ":", names, values, where)
        elif isinstance(v, bytes):
            try:
                names.append(k + ":" + v.decode("utf-8"))
            except UnicodeDecodeError:
                raise FeatureInputError(f"{_where(where)}: feature {k!r} = {v!r} is not UTF-8") from None
            values.append(1.0)
        else:
            raise FeatureInputError(f"{_where(where)}: feature {k!r} has a value of type {type(v).__name__}; "
                                    "expected a string, a number, a bool, or a dict / list / set of them")


def _flat_dict(x: dict, names: list, values: list, where) -> None:
    """``_flatten(x, "", ...)`` for a dict, with a fast path for the common values
    (strings, bools, floats, ints): same names, values and order."""
    for key, v in x.items():
        tv = type(v)
        if type(key) is not str:
            _flatten({key: v}, "", names, values, where)
        elif tv is str:
            names.append(key + ":" + v)
            values.append(1.0)
        elif tv is bool:
            names.append(key)
            values.append(1.0 if v else 0.0)
        elif tv is float and -MAX_FEATURE_VALUE <= v <= MAX_FEATURE_VALUE:
            names.append(key)
            values.append(v)
        else:
            _flatten({key: v}, "", names, values, where)


def item_attributes(item, where: str = "token") -> tuple[list[str], list[float]]:
    """(names, values) of one token, as pycrfsuite's ``ItemSequence(...).items()`` gives them
    (in order, duplicates kept)."""
    names: list[str] = []
    values: list[float] = []
    if type(item) is dict:
        _flat_dict(item, names, values, where)
    else:
        _flatten(item, "", names, values, where)
    return names, values


def _attributes(X, y, name, ids_of):
    """Every token's attributes, flat in token order, as ids: (ids int64, values float64,
    counts per token int64, sequence lengths). ``ids_of(names)``: the ids of a token's
    attribute names (the names themselves are not kept: one token's at a time)."""
    ids = array("q")
    values = array("d")
    counts = array("q")
    lengths: list[int] = []
    if y is not None and len(y) != len(X):
        raise FeatureInputError(f"{len(X)} sequences in {name} but {len(y)} label sequences")
    for i, seq in enumerate(X):
        if len(seq) == 0:
            raise FeatureInputError(f"{name}[{i}] is an empty sequence")
        if y is not None and len(y[i]) != len(seq):
            raise FeatureInputError(f"{name}[{i}] has {len(seq)} tokens but its label sequence {len(y[i])}")
        lengths.append(len(seq))
        names: list[str] = []  # one sequence's at a time
        vals: list[float] = []
        for j, tok in enumerate(seq):
            before = len(names)
            if type(tok) is dict:
                _flat_dict(tok, names, vals, (name, i, j))
            else:
                _flatten(tok, "", names, vals, (name, i, j))
            counts.append(len(names) - before)
        ids.extend(ids_of(names))
        values.extend(vals)
    return (np.frombuffer(ids, dtype=np.int64), np.frombuffer(values, dtype=np.float64),
            np.frombuffer(counts, dtype=np.int64), lengths)


def _rectangular(ids, values, counts, name):
    """(unigram observation ids int64 (n_tokens, width), values float64 (n_tokens, width)),
    padded with -1 / 0.0, and the column of each flat attribute."""
    n = len(counts)
    keep = values != 0.0
    if not keep.all():  # zero values contribute nothing: not in the rows (their names stay observations)
        counts = np.bincount(np.repeat(np.arange(n, dtype=np.int32), counts)[keep], minlength=n).astype(np.int64)
        ids, values = ids[keep], values[keep]
    del keep
    width = int(counts.max()) if n else 0
    total = int(counts.sum())
    cells = n * width
    size = cells * (16 if np.any(values != 1.0) else 8)  # offsets, and values unless all 1
    if size > PAD_WARN_BYTES and cells > 2 * total:
        t = int(np.argmax(counts))
        warnings.warn(f"{name}: a token has {width} attributes (token {t} of {n}), the mean is "
                      f"{total / max(n, 1):.1f}: the padded feature arrays take {size / 2**20:.0f} MB", ResourceWarning, stacklevel=4)
    start = np.zeros(n, dtype=np.int64)
    np.cumsum(counts[:-1], out=start[1:])
    row = np.repeat(np.arange(n, dtype=np.int32 if n < 2**31 else np.int64), counts)
    col = np.arange(total, dtype=np.int64)
    col -= start[row]
    obs = np.full((n, width), -1, dtype=np.int64)
    val = np.zeros((n, width))
    obs[row, col] = ids
    val[row, col] = values
    return obs, val


def _labels(y, n, index=None) -> tuple[np.ndarray, dict]:
    labels: dict[str, int] = {} if index is None else index
    if y is None:
        return np.full(n, -1, dtype=np.int64), labels
    for i, seq in enumerate(y):
        for j, lab in enumerate(seq):
            if not isinstance(lab, str):
                raise FeatureInputError(f"y[{i}][{j}] = {lab!r} is a {type(lab).__name__}, expected a label string")
    if index is None:
        gold = np.fromiter((labels.setdefault(lab, len(labels)) for seq in y for lab in seq), dtype=np.int64, count=n)
    else:
        gold = np.fromiter((labels.get(lab, -1) for seq in y for lab in seq), dtype=np.int64, count=n)
    return gold, labels


def _corpus(space: FeatureSpace, obs_ids: np.ndarray, val: np.ndarray, lengths, gold) -> EncodedCorpus:
    offsets = np.zeros(len(lengths) + 1, dtype=np.int64)
    np.cumsum(lengths, out=offsets[1:])
    uoff = space.unigram_offset
    ubase = obs_ids  # observation ids -> theta offsets, in place
    unknown = ubase < 0
    if len(uoff):
        np.maximum(ubase, 0, out=ubase)
        np.take(uoff, ubase, out=ubase)
    ubase[unknown] = -1
    del unknown
    if unigram_base_type(space) is np.int32:
        ubase = ubase.astype(np.int32)
    t = space.obs_index.get(TRANSITION, -1)
    b = space.bigram_offset[t] if t >= 0 else -1
    bbase = np.full((obs_ids.shape[0], 1), b, dtype=np.int64)
    tbase = None
    if space.order == 2:
        q = space.obs_index.get(TRIPLE, -1)
        tbase = np.full((obs_ids.shape[0], 1), space.trigram_offset[q] if q >= 0 else -1, dtype=np.int64)
    # values all 1 (indicator features only): no value array, the kernels' fast path
    valued = bool(np.any((val != 1.0) & (ubase >= 0)))
    return EncodedCorpus(offsets, ubase, bbase, gold, np.ascontiguousarray(val) if valued else None,
                         trigram_base=tbase, unigram_states=space.ustates)


def _first_by_column(ids, counts, n_ids):
    """The ids 0..n_ids-1 in the order of their first occurrence column by column (every
    token's first attribute in token order, then every token's second, ...): the pattern
    path's numbering (ids are numbered token by token as they are read). Column j holds the
    tokens of more than j attributes; work O(attributes log), small temporaries."""
    n = len(counts)
    start = np.zeros(n, dtype=np.int64)
    if n:
        np.cumsum(counts[:-1], out=start[1:])
    by_count = np.argsort(-counts, kind="stable")
    desc = -counts[by_count]  # ascending
    seen = np.zeros(n_ids, dtype=bool)
    parts = []
    for j in range(int(counts.max()) if n else 0):
        rows = np.sort(by_count[: np.searchsorted(desc, -j, side="left")])
        u, first = np.unique(ids[start[rows] + j], return_index=True)
        new = ~seen[u]
        u, first = u[new], first[new]
        seen[u] = True
        parts.append(u[np.argsort(first, kind="stable")])
    return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)


def build(X, y, name: str = "training data", order: int = 1) -> tuple[FeatureSpace, EncodedCorpus]:
    """The feature space of sequences of feature dicts / attribute lists X with labels y,
    and X encoded in it. ``order`` 2: the label-triple observation ``T`` too (a second-order
    model: its transitions are between tag pairs)."""
    index: dict[str, int] = {}

    def ids_of(names):
        return [index.setdefault(s, len(index)) for s in names]

    ids, values, counts, lengths = _attributes(X, y, name, ids_of)
    n = len(counts)
    gold, labels = _labels(y, n)
    n_attr = len(index)
    extra = _STRUCTURE[:order]
    n_x = len(extra)
    # the transition (and triple) observations last
    column_order = np.concatenate([_first_by_column(ids, counts, n_attr), np.arange(n_attr, n_attr + n_x)])
    freq = np.bincount(ids, minlength=n_attr + n_x)
    freq[n_attr:] = n
    order_ = column_order[np.argsort(-freq[column_order], kind="stable")]
    rank = np.empty_like(order_)
    rank[order_] = np.arange(len(order_))
    np.take(rank, ids, out=ids)
    kinds = np.zeros(n_attr + n_x, dtype=np.int8)
    kinds[ids] |= 1
    strings = list(index)
    for k, (string, bit) in enumerate(extra):
        if string in index:  # an attribute named B (T): one observation with both blocks
            kinds[rank[index[string]]] |= bit
        else:
            kinds[rank[n_attr + k]] |= bit
        strings.append(string)
    keep = kinds[rank] != 0
    observations = [strings[i] for i in order_ if keep[i]]
    if not keep.all():  # drop the duplicate transition observations, renumber
        new = np.cumsum(kinds[np.arange(len(order_))] != 0) - 1
        ids = new[ids]
        kinds = kinds[kinds != 0]
    space = FeatureSpace(_PATTERNS[order], observations, kinds, list(labels), 0)
    obs, val = _rectangular(ids, values, counts, name)
    return space, _corpus(space, obs, val, lengths, gold)


def encode(space: FeatureSpace, X, y=None, name: str = "<input>") -> EncodedCorpus:
    """X (feature dicts / attribute lists) encoded with a fitted space; attributes unknown
    to it are -1 (skipped), labels unknown to it -1."""
    get = space.obs_index.get

    def ids_of(names):
        return map(get, names, repeat(-1))

    ids, values, counts, lengths = _attributes(X, y, name, ids_of)
    gold, _ = _labels(y, int(counts.shape[0]), space.label_index)
    obs, val = _rectangular(ids, values, counts, name)
    return _corpus(space, obs, val, lengths, gold)
