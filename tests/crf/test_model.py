"""CRF estimator, model files and the `suffixlm crf` commands end to end."""

import json
import os
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from crf import CRF, ModelError
from crf.data import DataError, read_sequences, split_labels
from suffixlm.cli import main

PATTERNS = ["u:w=%x[0,0]", "u:p=%x[0,1]", "u:pp=%x[-1,1]/%x[0,1]", "b:%x[0,1]", "B"]


@pytest.fixture
def tiny(tiny_file):
    X, y = split_labels(read_sequences(tiny_file))
    return X, y


def fitted(X, y, **kw):
    kw.setdefault("rho1", 0.01)
    return CRF(patterns=PATTERNS, max_iter=60, **kw).fit(X, y)


def test_fit_predict_marginals_nbest(tiny):
    X, y = tiny
    crf = fitted(X, y)
    assert crf.predict(X) == y
    marg = crf.predict_marginals(X)
    for seq, labs in zip(marg, y):
        for m, lab in zip(seq, labs):
            assert sum(m.values()) == pytest.approx(1.0)
            assert max(m, key=m.get) == lab
    best = crf.predict_nbest(X[:1], 3)[0]
    assert best[0][0] == y[0] and len(best) == 3
    assert best[0][1] >= best[1][1] >= best[2][1]
    assert sum(np.exp([lp for _, lp in crf.predict_nbest(X[1:2][:1], 400)[0]])) <= 1.0 + 1e-9
    assert set(crf.classes_) == {"B-NP", "I-NP", "B-VP", "O", "B-PP"}


def test_lbfgs_is_l2_only(tiny):
    X, y = tiny
    crf = CRF(patterns=PATTERNS, algorithm="lbfgs", rho2=0.1, max_iter=40).fit(X, y)
    # l2: only features that never fire (bigram observations seen at t = 0 only) stay at 0
    assert crf.n_active_features_ > 0.9 * crf.n_features_
    with pytest.raises(ValueError, match="l2"):
        CRF(patterns=PATTERNS, algorithm="lbfgs", rho1=0.5).fit(X, y)


def test_l1_gives_sparse_model_and_devel(tiny):
    X, y = tiny
    crf = CRF(patterns=PATTERNS, rho1=1.0, max_iter=50).fit(X, y, X, y)
    assert crf.n_active_features_ < crf.n_features_
    assert crf.training_log_ and "token_error" in crf.training_log_[-1]


def test_save_load_round_trip(tiny, tmp_path):
    X, y = tiny
    crf = fitted(X, y)
    path = tmp_path / "m.crf"
    crf.save(path)
    back = CRF.load(path)
    assert back.predict(X) == crf.predict(X)
    np.testing.assert_array_equal(back.theta_, crf.theta_)
    assert back.predict_marginals(X) == crf.predict_marginals(X)
    assert not list(tmp_path.glob("*.tmp"))
    umask = os.umask(0)
    os.umask(umask)
    assert path.stat().st_mode & 0o777 == 0o666 & ~umask


def test_damaged_model_files(tiny, tmp_path):
    X, y = tiny
    path = tmp_path / "m.crf"
    fitted(X, y).save(path)
    raw = path.read_bytes()
    (tmp_path / "trunc.crf").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ModelError, match="truncated|unreadable"):
        CRF.load(tmp_path / "trunc.crf")
    # tamper with one weight, keeping a valid archive
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["theta"] = arrays["theta"].copy()
    arrays["theta"][0] += 1.0
    np.savez(tmp_path / "tampered.npz", **arrays)
    with pytest.raises(ModelError, match="checksum"):
        CRF.load(tmp_path / "tampered.npz")
    meta = json.loads(arrays["meta"].tobytes())
    meta["version"] = 99
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    np.savez(tmp_path / "future.npz", **arrays)
    with pytest.raises(ModelError, match="version 99"):
        CRF.load(tmp_path / "future.npz")
    with pytest.raises(ModelError, match="no such"):
        CRF.load(tmp_path / "missing.crf")
    assert zipfile.is_zipfile(path)


def test_bad_input_errors(tiny_file, tmp_path):
    bad = tmp_path / "bad.txt"
    bad.write_text("a B X\nb C\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"bad.txt:2: expected 3 columns, found 2"):
        read_sequences(bad)
    with pytest.raises(ValueError, match="no training sequence"):
        CRF(patterns=PATTERNS).fit([], [])
    with pytest.raises(ValueError, match="y_dev"):
        CRF(patterns=PATTERNS).fit([[["a", "b"]]], [["L"]], [[["a", "b"]]])
    X, y = split_labels(read_sequences(tiny_file))
    crf = fitted(X, y)
    with pytest.raises(ValueError, match="observation column"):
        crf.predict([[["only-one-column"]]])


def test_cli_end_to_end(tiny_file, tmp_path):
    runner = CliRunner()
    pat = tmp_path / "p.pat"
    pat.write_text("\n".join(PATTERNS) + "\n")
    model = tmp_path / "m.crf"
    r = runner.invoke(main, ["crf", "train", "-p", str(pat), "--rho1", "0.01", "--maxiter", "60",
                             str(tiny_file), str(model)])
    assert r.exit_code == 0, r.output
    assert "obj=" in r.output  # progress lines (stderr is mixed in by CliRunner)
    out = tmp_path / "out.txt"
    r = runner.invoke(main, ["crf", "label", "-m", str(model), "--check", str(tiny_file), str(out)])
    assert r.exit_code == 0, r.output
    assert "token error: 0.00%" in r.output
    lines = out.read_text().splitlines()
    src = tiny_file.read_text().splitlines()
    assert len(lines) == len(src) + 1  # a blank line after the last sequence too
    for a, b in zip(src, lines):
        if a:
            assert b == a + "\t" + a.split()[-1]
        else:
            assert b == ""
    r = runner.invoke(main, ["crf", "eval", str(out)])
    assert r.exit_code == 0 and "FB1: 100.00" in r.output
    # nothing lost: OUT may not be IN or the model, and a failed run leaves OUT as it was
    before = tiny_file.read_bytes()
    r = runner.invoke(main, ["crf", "label", "-m", str(model), str(tiny_file), str(tiny_file)])
    assert r.exit_code != 0 and "refusing to overwrite" in r.output and tiny_file.read_bytes() == before
    r = runner.invoke(main, ["crf", "label", "-m", str(model), str(tiny_file), str(model)])
    assert r.exit_code != 0 and "refusing to overwrite" in r.output
    labelled = out.read_bytes()
    bad_in = tmp_path / "bad_in.txt"
    bad_in.write_text("a b\nc\n")
    r = runner.invoke(main, ["crf", "label", "-m", str(model), str(bad_in), str(out)])
    assert r.exit_code != 0 and out.read_bytes() == labelled
    assert sorted(p.name for p in tmp_path.iterdir() if ".tmp" in p.name) == []
    # unlabelled input from stdin, n-best with scores
    unl = "\n".join(" ".join(x.split()[:2]) for x in src)
    r = runner.invoke(main, ["crf", "label", "-m", str(model), "--nbest", "2", "--score", "-", "-"], input=unl)
    assert r.exit_code == 0, r.output
    assert r.output.count("# 0 ") == 3 and r.output.count("# 1 ") == 3
    r = runner.invoke(main, ["crf", "label", "-m", str(model), "--no-label", str(tiny_file), "-"])
    assert r.exit_code != 0 and "expects 2 observation column" in r.output
    r = runner.invoke(main, ["crf", "dump", str(model)])
    assert r.exit_code == 0 and "\tB\t" not in r.output.splitlines()[0]
    assert any(line.startswith("B\t") for line in r.output.splitlines())
    # errors are one clean line, no traceback
    bad = tmp_path / "bad.txt"
    bad.write_text("a b c\nd e\n")
    r = runner.invoke(main, ["crf", "train", "-p", str(pat), str(bad), str(model)])
    assert r.exit_code != 0 and "bad.txt:2" in r.output and "Traceback" not in r.output
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n")
    r = runner.invoke(main, ["crf", "train", "-p", str(pat), str(empty), str(model)])
    assert r.exit_code != 0 and "no sequence" in r.output
    r = runner.invoke(main, ["crf", "label", "-m", str(tiny_file), str(tiny_file)])
    assert r.exit_code != 0 and "Error" in r.output and "Traceback" not in r.output


def test_crf_train_never_replaces_its_inputs(tiny_file, tmp_path):
    pat = tmp_path / "p.pat"
    pat.write_text("\n".join(PATTERNS) + "\n")
    before = tiny_file.read_bytes(), pat.read_bytes()
    for out in (tiny_file, pat):
        r = CliRunner().invoke(main, ["crf", "train", "-p", str(pat), str(tiny_file), str(out)])
        assert r.exit_code != 0 and "refusing to overwrite" in r.output
    assert (tiny_file.read_bytes(), pat.read_bytes()) == before
