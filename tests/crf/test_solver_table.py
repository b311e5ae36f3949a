"""crf.solvers: one table of the CRF's training algorithms, from which the estimator, the
command line, the checkpoints and the Dask path read every fact."""

import warnings

import pytest
from click.testing import CliRunner

from crf import CRF
from crf.solvers import ALGORITHMS, SOLVERS, TrainRun, names, spec
from suffixlm.solvers.result import ConvergenceWarning, OptimizeResult, StopReason


def test_every_row_names_a_module_with_train_crf_and_its_state_class():
    import importlib

    for name, s in SOLVERS.items():
        assert s.name == name
        module = importlib.import_module(f"crf.train.{s.module}")
        assert callable(module.train_crf), name
        if s.checkpointable:
            cls = s.state_class()
            assert hasattr(cls, "to_arrays") and hasattr(cls, "from_arrays"), name
        else:
            with pytest.raises(ValueError, match="cannot be checkpointed"):
                s.state_class()
        assert s.penalty in ("elastic", "l2", "none", "proximal")
        assert s.alias_of is None or s.alias_of in SOLVERS


def test_the_estimator_and_the_command_line_read_the_table():
    from crf.cli import train
    from crf.compat import CRFSUITE_ALGORITHMS, L2_ONLY, NO_PENALTY
    from crf.distributed import DISTRIBUTED_ALGORITHMS

    choices = next(p for p in train.params if p.name == "algorithm").type.choices
    assert tuple(choices) == ALGORITHMS
    assert DISTRIBUTED_ALGORITHMS == names(batch=True) == ("owlqn", "lbfgs", "fista")
    assert set(CRFSUITE_ALGORITHMS) == {"lbfgs", "ap", "l2sgd", "pa", "arow"}
    assert set(L2_ONLY) == {n for n, s in SOLVERS.items() if s.penalty == "l2"}
    assert set(NO_PENALTY) == {"perceptron", "ap", "pa", "arow"}
    for name, s in SOLVERS.items():
        st = CRF(algorithm=name)._settings()
        assert st.max_iter == s.max_iter, name
        assert SOLVERS[st.algorithm].module == s.module
    with pytest.raises(ValueError, match="algorithm must be one of"):
        spec("nope")


def test_train_dispatches_to_the_rows_module(monkeypatch):
    """``crf.solvers.train`` runs the row's ``train_crf``: the one place a solver is called."""
    import crf.train.sag as sag_module
    from crf import solvers

    seen = {}

    def fake(run):
        seen["run"] = run
        return OptimizeResult(run.x0, 0.0, 0, 0, True, StopReason.CONVERGED, [])

    monkeypatch.setattr(sag_module, "train_crf", fake)
    st = CRF(algorithm="sag-nus")._settings()
    run = TrainRun(space=None, data=None, x0=[0.0], settings=st, seed=3, callback=None)
    assert solvers.train(run).reason == "converged" and seen["run"] is run


def test_stop_reasons_read_as_their_words():
    r = StopReason.STOPPING_CRITERION
    assert r == "stopping criterion" and str(r) == f"{r}" == "stopping criterion"
    import json

    assert json.dumps({"reason": r}) == '{"reason": "stopping criterion"}'
    assert StopReason.GRADIENT_TOLERANCE.is_convergence and not StopReason.MAX_ITER.is_convergence


def _toy():
    X = [[["a"], ["b"]], [["b"], ["a"]], [["a"], ["a"]]] * 4
    y = [["A", "B"], ["B", "A"], ["A", "A"]] * 4
    return X, y


def test_a_batch_fit_stopped_at_max_iter_warns_and_its_command_does_not(tmp_path):
    X, y = _toy()
    with pytest.warns(ConvergenceWarning, match="max_iter=2"):
        crf = CRF(patterns=["u:%x[0,0]", "b"], algorithm="owlqn", max_iter=2).fit(X, y)
    assert crf.stop_reason_ == "max_iter"
    with warnings.catch_warnings():
        warnings.simplefilter("error", ConvergenceWarning)
        CRF(patterns=["u:%x[0,0]", "b"], algorithm="perceptron", max_iter=2).fit(X, y)  # passes: its normal end
    train = tmp_path / "train.txt"
    train.write_text("".join("".join(f"{t[0]} {lab}\n" for t, lab in zip(s, ls)) + "\n" for s, ls in zip(X, y)))
    pat = tmp_path / "p.pat"
    pat.write_text("u:%x[0,0]\nb\n")
    from suffixlm.cli import main

    r = CliRunner().invoke(main, ["crf", "train", "-p", str(pat), "--maxiter", "2", str(train),
                                  str(tmp_path / "m.crf")])
    assert r.exit_code == 0, r.output
    assert "ConvergenceWarning" not in r.output and "(max_iter)" in r.output
