"""Files of another kind given where a model is expected are named in plain words (issue
24, item 6): "this is an ARPA language model, not a suffixlm CRF model file (score with
it: suffixlm ppl --arpa FILE TEST)", "this is a training checkpoint ... --resume", "a zip
archive of 'hello.txt'", instead of "File is not a zip file" or a header member's name."""

from __future__ import annotations

import gzip
import zipfile

import numpy as np
import pytest
from click.testing import CliRunner

from crf.model import CRF, ModelError
from suffixlm.cli import main
from suffixlm.io import save_container
from suffixlm.model import LogLinearLM, ModelFormatError

ARPA = "\n\\data\\\nngram 1=3\n\n\\1-grams:\n-1 <s>\n-1 </s>\n-1 a\n\n\\end\\\n"


@pytest.fixture(scope="module")
def kinds(tmp_path_factory):
    d = tmp_path_factory.mktemp("kinds")
    out = {}
    (d / "m.arpa").write_text(ARPA)
    out["arpa"] = d / "m.arpa"
    with gzip.open(d / "m.arpa.gz", "wt") as fh:
        fh.write("\ufeff" + ARPA)
    out["arpa.gz"] = d / "m.arpa.gz"
    (d / "t.txt").write_text("a b c\n")
    out["text"] = d / "t.txt"
    (d / "empty").write_bytes(b"")
    out["empty"] = d / "empty"
    np.save(d / "a.npy", np.zeros(3))
    out["npy"] = d / "a.npy"
    np.savez(d / "a.npz", x=np.zeros(3))
    out["npz"] = d / "a.npz"
    with zipfile.ZipFile(d / "z.zip", "w") as zf:
        zf.writestr("hello.txt", "hi")
    out["zip"] = d / "z.zip"
    save_container(d / "ck", {"x": np.zeros(2)}, {"solver": "owlqn"}, "suffixlm-checkpoint", 1)
    out["checkpoint"] = d / "ck"
    lm = LogLinearLM(order=2, lam=1e-3, max_iter=5).fit(["a b", "b a"])
    lm.save(d / "m.lm")
    out["lm"] = d / "m.lm"
    crf = CRF(patterns=["u:%x[0,0]", "b"], max_iter=5).fit([[["a"], ["b"]]], [["A", "B"]])
    crf.save(d / "m.crf")
    out["crf"] = d / "m.crf"
    return out


WORDS = {
    "arpa": "this is an ARPA language model, not a suffixlm {what} model file (score with it: suffixlm ppl --arpa",
    "arpa.gz": "this is an ARPA language model",
    "text": "this is a text file, not a suffixlm {what} model file",
    "empty": "this is an empty file",
    "npy": "this is a numpy .npy array",
    "npz": "this is a numpy .npz archive of other arrays ('x.npy')",
    "zip": "this is a zip archive of 'hello.txt'",
    "checkpoint": "this is a training checkpoint, not a suffixlm {what} model file (go on training from it with --resume",
    "lm": "this is a suffixlm log-linear language model, not a suffixlm CRF model file",
    "crf": "this is a suffixlm CRF model, not a suffixlm log-linear model file (label with it: suffixlm crf label",
}


@pytest.mark.parametrize("kind", sorted(WORDS))
def test_loaders_name_other_file_kinds(kinds, kind):
    for load, error, what in ((CRF.load, ModelError, "CRF"), (LogLinearLM.load, ModelFormatError, "log-linear")):
        if kind == {"CRF": "crf", "log-linear": "lm"}[what]:
            continue
        with pytest.raises(error) as exc:
            load(kinds[kind])
        msg = str(exc.value)
        assert msg.startswith(f"{kinds[kind]}: ") and "\n" not in msg
        assert WORDS[kind].format(what=what) in msg, msg
        assert "meta_json" not in msg and "is not a zip file" not in msg


def test_crf_label_with_a_checkpoint_or_an_arpa_file_says_what_it_is(kinds, tmp_path):
    test = tmp_path / "test.txt"
    test.write_text("a\nb\n")
    for kind, words in (("checkpoint", "training checkpoint"), ("arpa", "ARPA language model")):
        r = CliRunner().invoke(main, ["crf", "label", "-m", str(kinds[kind]), str(test)])
        assert r.exit_code == 1 and "Traceback" not in r.output, r.output
        errors = [ln for ln in r.output.splitlines() if ln.startswith("Error:")]
        assert len(errors) == 1 and words in errors[0], r.output
