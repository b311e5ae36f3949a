"""CRF model files tampered with one field at a time.

Each tampered file is otherwise well formed: written back with
``suffixlm.io.save_container`` and, as an attacker would, with its sha256 recomputed
(the digest is unkeyed). The loader must refuse each with ``ModelError`` naming the
file and the field. Edits that keep the old digest are refused as a checksum mismatch,
the header included. The untampered model, and a version 1 file as the previous writer
made it, load and predict identically.
"""

import hashlib
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner

from crf import CRF, ModelError
from crf.data import read_sequences, split_labels
from crf.modelfile import FORMAT_NAME, FORMAT_VERSION, digest
from suffixlm.cli import main
from suffixlm.io import save_container

PATTERNS = ["u:w=%x[0,0]", "u:p=%x[0,1]", "u:pp=%x[-1,1]/%x[0,1]", "b:%x[0,1]", "*:c=%x[0,1]", "B"]


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    from .conftest import TINY

    d = tmp_path_factory.mktemp("crf")
    (d / "tiny.txt").write_text(TINY, encoding="utf-8")
    X, y = split_labels(read_sequences(d / "tiny.txt"))
    crf = CRF(patterns=PATTERNS, rho1=0.01, max_iter=60).fit(X, y)
    path = d / "m.crf"
    crf.save(path)
    assert set(crf.space_.kinds.tolist()) == {1, 2, 3}
    return crf, path, X, d / "tiny.txt"


def read(path):
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k].copy() for k in z.files}
    meta = json.loads(arrays.pop("meta").tobytes())
    assert meta.pop("format") == FORMAT_NAME
    return arrays, meta, meta.pop("version")


def rewritten(tmp_path, src, edit, rehash=True, name="tampered.crf"):
    """``src`` with ``edit(arrays, header)`` applied, its digest recomputed (``rehash``)."""
    arrays, meta, version = read(src)
    edit(arrays, meta)
    if rehash:
        meta.pop("sha256", None)
        meta["sha256"] = digest({"format": FORMAT_NAME, "version": version, **meta}, arrays)
    out = tmp_path / name
    save_container(out, arrays, meta, FORMAT_NAME, version, meta_key="meta")
    return out


def assert_refused(tmp_path, src, edit, field, rehash=True):
    bad = rewritten(tmp_path, src, edit, rehash)
    with pytest.raises(ModelError, match=re.escape(str(bad)) + ".*" + re.escape(field)):
        CRF.load(bad)


def test_untampered_file_rewritten_loads_and_predicts_identically(saved, tmp_path):
    crf, path, X, _ = saved
    back = CRF.load(rewritten(tmp_path, path, lambda a, m: None))
    assert back.predict(X) == crf.predict(X)
    assert back.predict_marginals(X) == crf.predict_marginals(X)
    assert back.predict_nbest(X, 3) == crf.predict_nbest(X, 3)
    np.testing.assert_array_equal(back.theta_, crf.theta_)
    assert back.space_.labels == crf.space_.labels and back.n_features_ == crf.n_features_
    assert back.settings_ == crf.settings_  # what it was trained with, every value resolved


def test_version_1_files_still_load(saved, tmp_path):
    """A file as the version 1 writer made it: the same members, the sha256 of the
    arrays' bytes alone (the header not covered); it loads, predicts the same, and its
    values are checked all the same."""
    crf, path, X, _ = saved

    def as_version_1(tmp_path, edit=lambda a, m: None, name="v1.crf"):
        arrays, meta, _ = read(path)
        edit(arrays, meta)
        h = hashlib.sha256()
        for k in ("obs_blob", "obs_offsets", "kinds", "theta"):
            h.update(np.ascontiguousarray(arrays[k]).tobytes())
        meta["sha256"] = h.hexdigest()
        save_container(tmp_path / name, arrays, meta, FORMAT_NAME, 1, meta_key="meta")
        return tmp_path / name

    back = CRF.load(as_version_1(tmp_path))
    assert back.predict(X) == crf.predict(X) and back.predict_marginals(X) == crf.predict_marginals(X)
    bad = as_version_1(tmp_path, lambda a, m: m.update(labels=[]), "v1-nolabels.crf")
    with pytest.raises(ModelError, match=re.escape(str(bad)) + ".*'labels'"):
        CRF.load(bad)
    bad = as_version_1(tmp_path, lambda a, m: a["theta"].__setitem__(0, np.nan), "v1-nan.crf")
    with pytest.raises(ModelError, match=re.escape(str(bad)) + ".*theta"):
        CRF.load(bad)
    assert FORMAT_VERSION == 2 and read(path)[2] == 2  # the writer writes the new version
    # patterns whose meaning changed since version 1 (regular expressions, @ rows): refused
    for i, text in enumerate(['%t[0,0,"^[A-Z]"]', '%m[0,0,"..$"]', "%x[@0,0]", '%T[0,0,"a"]']):
        bad = as_version_1(tmp_path, lambda a, m: m.update(patterns=m["patterns"] + "\nu:z=" + text + "\n"),
                           f"v1-pattern{i}.crf")
        with pytest.raises(ModelError, match=re.escape(str(bad)) + ".*'patterns'.*train the model again"):
            CRF.load(bad)


# ---------------------------------------------------------------- the digest covers the header
HEADER_ONLY_EDITS = [
    ("patterns", lambda a, m: m.update(patterns=m["patterns"].replace("%x[0,1]", "%x[0,0]"))),
    ("labels", lambda a, m: m.update(labels=m["labels"][::-1])),
    ("n_columns", lambda a, m: m.update(n_columns=m["n_columns"] + 1)),
    ("params", lambda a, m: m["params"].update(rho2=1.0)),
    ("n_features", lambda a, m: m.update(n_features=m["n_features"] + 1)),
    ("theta", lambda a, m: a["theta"].__setitem__(0, a["theta"][0] + 1.0)),
]


@pytest.mark.parametrize("edit", [e for _, e in HEADER_ONLY_EDITS], ids=[k for k, _ in HEADER_ONLY_EDITS])
def test_edits_keeping_the_old_digest_are_a_checksum_mismatch(saved, tmp_path, edit):
    assert_refused(tmp_path, saved[1], edit, "checksum mismatch", rehash=False)


# ---------------------------------------------------------------- every invariant on its own
def _set_kind(a, value):
    a["kinds"][0] = value


def _obs(a, strings):
    raw = [s.encode("utf-8") if isinstance(s, str) else s for s in strings]
    a["obs_blob"] = np.frombuffer(b"".join(raw), dtype=np.uint8).copy()
    a["obs_offsets"] = np.concatenate([[0], np.cumsum([len(r) for r in raw])]).astype(np.int64)


def _observations(a):
    blob, off = a["obs_blob"].tobytes(), a["obs_offsets"]
    return [blob[off[i]:off[i + 1]].decode("utf-8") for i in range(len(off) - 1)]


def observation_twice(a, m):
    obs = _observations(a)
    _obs(a, obs[:-1] + [obs[0]])


def observation_not_utf8(a, m):
    obs = _observations(a)
    _obs(a, obs[:-1] + [b"\xff\xfe"])


def offset_inside_a_character(a, m):
    """Two observations, ``é`` and ``éx``, split one byte later: each half is valid only
    with its neighbour's byte, and the whole blob is still valid UTF-8."""
    obs = _observations(a)
    _obs(a, obs[:-2] + ["é", "éx"])
    a["obs_offsets"][-2] += 1


def offsets_decreasing(a, m):
    o = a["obs_offsets"]
    o[1], o[2] = o[2], o[1]


EDITS = [
    # labels
    ("labels empty", lambda a, m: m.update(labels=[]), "'labels'"),
    ("labels not a list", lambda a, m: m.update(labels="B-NP"), "'labels'"),
    ("label not a string", lambda a, m: m["labels"].__setitem__(0, 1), "'labels'"),
    ("label twice", lambda a, m: m["labels"].__setitem__(1, m["labels"][0]), "'labels'"),
    ("label empty", lambda a, m: m["labels"].__setitem__(0, ""), "'labels': label '' is empty"),
    ("label with a space", lambda a, m: m["labels"].__setitem__(0, "B NP"), "'labels': label 'B NP' holds white"),
    ("label with a tab", lambda a, m: m["labels"].__setitem__(0, "B\tNP"), "'labels'"),
    ("label dropped", lambda a, m: m["labels"].pop(), "theta"),
    ("label added", lambda a, m: m["labels"].append("X"), "theta"),
    # patterns and columns
    ("patterns unparsable", lambda a, m: m.update(patterns="q:%x[0,0]\n"), ":patterns"),
    ("patterns empty", lambda a, m: m.update(patterns="# nothing\n"), ":patterns"),
    ("patterns not a string", lambda a, m: m.update(patterns=["u:%x[0,0]"]), "'patterns'"),
    ("pattern column past n_columns", lambda a, m: m.update(patterns=m["patterns"] + "u:%x[0,7]\n"), "'patterns'"),
    ("n_columns lowered", lambda a, m: m.update(n_columns=1), "'patterns'"),
    ("n_columns negative", lambda a, m: m.update(n_columns=-1), "'n_columns'"),
    ("n_columns huge (an allocation per column)", lambda a, m: m.update(n_columns=10**9), "'n_columns'"),
    ("n_columns bool", lambda a, m: m.update(n_columns=True), "'n_columns'"),
    ("n_columns string", lambda a, m: m.update(n_columns="2"), "'n_columns'"),
    # training parameters
    ("params not an object", lambda a, m: m.update(params=[]), "'params'"),
    ("params unknown", lambda a, m: m["params"].update(eta=1), "'params'"),
    ("params missing", lambda a, m: m["params"].pop("rho2"), "'params'"),
    ("params rho1 string", lambda a, m: m["params"].update(rho1="0.5"), "'params'"),
    ("params rho2 nan", lambda a, m: m["params"].update(rho2=float("nan")), "'params'"),
    ("params history float", lambda a, m: m["params"].update(history=5.5), "'params'"),
    ("params algorithm unknown", lambda a, m: m["params"].update(algorithm="crfsuite"), "'params'"),
    ("params rho1 negative", lambda a, m: m["params"].update(rho1=-1.0), "'params'"),
    ("n_features below the weights", lambda a, m: m.update(n_features=1), "'n_features'"),
    ("n_features string", lambda a, m: m.update(n_features="many"), "'n_features'"),
    # header entries
    ("unexpected entry", lambda a, m: m.update(extra=1), "unexpected entry 'extra'"),
    ("missing labels", lambda a, m: m.pop("labels"), "missing entry 'labels'"),
    # observations
    ("kinds zero", lambda a, m: _set_kind(a, 0), "kinds"),
    ("kinds four", lambda a, m: _set_kind(a, 4), "kinds"),
    ("kinds negative", lambda a, m: _set_kind(a, -1), "kinds"),
    ("kinds changed", lambda a, m: _set_kind(a, 3 if a["kinds"][0] != 3 else 1), "theta"),
    ("kinds short", lambda a, m: a.update(kinds=a["kinds"][:-1].copy()), "obs_offsets"),
    ("obs_offsets decreasing", offsets_decreasing, "obs_offsets"),
    ("obs_offsets not from 0", lambda a, m: a["obs_offsets"].__setitem__(0, 1), "obs_offsets"),
    ("obs_offsets past the blob", lambda a, m: a["obs_offsets"].__setitem__(-1, a["obs_offsets"][-1] + 9),
     "obs_offsets"),
    ("obs_offsets short of the blob", lambda a, m: a.update(obs_blob=np.append(a["obs_blob"], np.uint8(65))),
     "obs_offsets"),
    ("observation twice", observation_twice, "obs_blob"),
    ("observation not UTF-8", observation_not_utf8, "obs_blob"),
    ("obs_offsets inside a character", offset_inside_a_character, "obs_offsets"),
    # weights
    ("theta short", lambda a, m: a.update(theta=a["theta"][:-1].copy()), "theta"),
    ("theta long", lambda a, m: a.update(theta=np.append(a["theta"], 0.0)), "theta"),
    ("theta nan", lambda a, m: a["theta"].__setitem__(3, np.nan), "theta"),
    ("theta inf", lambda a, m: a["theta"].__setitem__(-1, -np.inf), "theta"),
    ("theta as float32", lambda a, m: a.update(theta=a["theta"].astype(np.float32)), "'theta'"),
]


@pytest.mark.parametrize("edit, field", [(e, f) for _, e, f in EDITS], ids=[k for k, _, _ in EDITS])
def test_tampered_field_is_refused_even_with_the_digest_recomputed(saved, tmp_path, edit, field):
    assert_refused(tmp_path, saved[1], edit, field)


def test_label_with_non_finite_weights_fails_cleanly(saved, tmp_path):
    """``crf label`` with such a model: a one-line error, a non-zero exit, no output file."""
    _, path, _, data = saved
    bad = rewritten(tmp_path, path, lambda a, m: a["theta"].__setitem__(0, np.inf))
    out = tmp_path / "out.txt"
    r = CliRunner().invoke(main, ["crf", "label", "-m", str(bad), str(data), str(out)])
    assert r.exit_code != 0 and "theta" in r.output and "Traceback" not in r.output
    assert not out.exists()
