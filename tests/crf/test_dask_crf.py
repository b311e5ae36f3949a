"""Data-parallel CRF training on a Dask cluster (``crf.distributed``, ``CRF.fit(client=)``,
``suffixlm crf train --workers``): the same objective and weights as one process."""

from __future__ import annotations

import numpy as np
import pytest
from click.testing import CliRunner
from suffixlm.corpora import sample_path

from crf import CRF
from crf.features import FeatureSpace
from crf.inference import Objective
from crf.patterns import parse_patterns
from suffixlm.cli import main

from ..dask_util import kill_once_plugin
from .crf_testutil import PATTERNS, random_corpus

pytest.importorskip("distributed")

CHUNK = str(sample_path("patterns/chunk.pat"))


@pytest.fixture(scope="module")
def client():
    from suffixlm.distributed import client_from_options

    with client_from_options(workers=2) as c:
        yield c


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(5)
    X, y = random_corpus(rng, 160, 9, 3, vocab=6)
    Xt, _ = random_corpus(rng, 60, 9, 3, vocab=6)
    return X, y, Xt


def _rel(a, b) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


@pytest.mark.parametrize("recursion", ["dense", "sparse"])
def test_objective_equals_single_process(client, corpus, recursion):
    from crf.distributed import DistributedObjective

    X, y, _ = corpus
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS)), X, y)
    ref = Objective(space, data, n_chunks=1, recursion=recursion)
    dist = DistributedObjective(client, space, data, n_shards=3, recursion=recursion)
    assert len(dist.shards) == 3 and sum(s.n_tokens for s in dist.shards) == data.n_tokens
    rng = np.random.default_rng(0)
    for _ in range(3):
        theta = rng.normal(size=space.n_params)
        theta[rng.random(space.n_params) < 0.5] = 0.0
        f0, g0 = ref.value_and_gradient(theta)
        g0 = g0.copy()
        f1, g1 = dist.value_and_gradient(theta)
        assert abs(f1 - f0) <= 1e-9 * abs(f0)
        assert _rel(g1, g0) <= 1e-9
        assert dist.last_sparse == (recursion == "sparse")
        assert dist.last_errors == pytest.approx(ref.last_errors)


@pytest.mark.parametrize("algorithm,params", [("owlqn", {}), ("lbfgs", {}),
                                              ("fista", {"penalty": "l2-tree", "rho1": 0.1})])
def test_fit_equals_single_process(client, corpus, algorithm, params):
    X, y, Xt = corpus
    kw = dict(patterns=PATTERNS, algorithm=algorithm, max_iter=40, threads=1, **params)
    ref = CRF(**kw).fit(X, y)
    got = CRF(**kw).fit(X, y, client=client)
    assert got.n_features_ == ref.n_features_ and got.classes_ == ref.classes_
    assert _rel(got.theta_, ref.theta_) <= 1e-6
    assert got.predict(Xt) == ref.predict(Xt)
    assert got.n_iter_ == ref.n_iter_


def test_fit_with_devel_set(client, corpus):
    X, y, Xt = corpus
    kw = dict(patterns=PATTERNS, max_iter=15, threads=1)
    ref = CRF(**kw).fit(X[:120], y[:120], X[120:], y[120:])
    got = CRF(**kw).fit(X[:120], y[:120], X[120:], y[120:], client=client)
    assert _rel(got.theta_, ref.theta_) <= 1e-6
    assert [e["token_error"] for e in got.training_log_] == [e["token_error"] for e in ref.training_log_]


def test_worker_killed_mid_fit(killable_client, corpus, tmp_path):
    """A worker process dies as it starts a gradient task: its shard is scattered again
    and the evaluation rerun; the model is the one of an undisturbed distributed fit."""
    marker = tmp_path / "killed"
    client = killable_client

    X, y, Xt = corpus
    kw = dict(patterns=PATTERNS, max_iter=25, threads=1)
    ref = CRF(**kw).fit(X, y, client=client)
    client.register_plugin(kill_once_plugin(marker, "crf-gradient-"))
    try:
        got = CRF(**kw).fit(X, y, client=client)
    finally:
        client.unregister_worker_plugin("kill-once")
    assert marker.exists()  # a worker did die mid-fit
    np.testing.assert_array_equal(got.theta_, ref.theta_)
    assert got.predict(Xt) == ref.predict(Xt)


def test_cli_workers_same_model(tiny_file, tmp_path):
    one, two = tmp_path / "one.crf", tmp_path / "two.crf"
    base = ["crf", "train", "-p", CHUNK, "--quiet", str(tiny_file)]
    r = CliRunner().invoke(main, base[:-1] + ["--threads", "1", str(tiny_file), str(one)])
    assert r.exit_code == 0, r.output
    r = CliRunner().invoke(main, base[:-1] + ["--workers", "2", str(tiny_file), str(two)])
    assert r.exit_code == 0, r.output
    a, b = CRF.load(one), CRF.load(two)
    assert a.classes_ == b.classes_
    assert _rel(b.theta_, a.theta_) <= 1e-6
    out = []
    for m in (one, two):
        r = CliRunner().invoke(main, ["crf", "label", "-m", str(m), str(tiny_file)])
        assert r.exit_code == 0, r.output
        out.append(r.output)
    assert out[0] == out[1]


@pytest.mark.parametrize("extra,message", [
    (["-a", "sgd-l1"], "--workers/--scheduler supports owlqn, lbfgs, fista, not --algorithm sgd-l1"),
    (["-a", "perceptron"], "not --algorithm perceptron"),
    (["--checkpoint", "{tmp}/ck"], "--workers/--scheduler is not supported with --checkpoint"),
    (["--grow"], "--workers/--scheduler is not supported with --grow"),
])
def test_cli_refusals(tiny_file, tmp_path, extra, message):
    extra = [e.format(tmp=tmp_path) for e in extra]
    r = CliRunner().invoke(main, ["crf", "train", "-p", CHUNK, "--workers", "2", *extra, str(tiny_file),
                                  str(tmp_path / "m.crf")])
    assert r.exit_code != 0 and message in r.output, r.output
    assert not (tmp_path / "m.crf").exists()


def test_api_refusals(client, corpus):
    X, y, _ = corpus
    with pytest.raises(ValueError, match="supports owlqn, lbfgs, fista, not 'bcd'"):
        CRF(patterns=PATTERNS, algorithm="bcd").fit(X, y, client=client)
    with pytest.raises(ValueError, match="checkpoints are not supported when training on Dask workers"):
        CRF(patterns=PATTERNS).fit(X, y, checkpoint=object(), client=client)  # refused before it is used


def test_second_order_objective_and_fit_equal_single_process(client, corpus):
    """A second-order model (pair states, forbidden unseen pairs) on the workers: the same
    loss and gradient as one process, and the same fit."""
    from crf.distributed import DistributedObjective
    from crf.transitions import allowed_pairs

    X, y, Xt = corpus
    space, data = FeatureSpace.build(parse_patterns("\n".join(PATTERNS + ["T", "t:e=%x[0,1]"])), X, y)
    space.set_allowed(allowed_pairs("unseen", space.labels, data.labels, data.seq_offsets))
    ref = Objective(space, data)
    dist = DistributedObjective(client, space, data, n_shards=3)
    theta = np.random.default_rng(1).normal(size=space.n_params)
    f0, g0 = ref.value_and_gradient(theta)
    g0 = g0.copy()
    f1, g1 = dist.value_and_gradient(theta)
    assert f1 == pytest.approx(f0, rel=1e-9)
    assert _rel(g1, g0) <= 1e-9
    assert dist.last_errors == pytest.approx(ref.last_errors)
    kw = dict(patterns=PATTERNS, order=2, max_iter=15, threads=1)
    a = CRF(**kw).fit(X, y)
    b = CRF(**kw).fit(X, y, client=client)
    assert _rel(b.theta_, a.theta_) <= 1e-6 and b.predict(Xt) == a.predict(Xt)


@pytest.mark.parametrize("order", [1, 2])
def test_seen_states_and_frozen_transitions_on_the_workers(client, corpus, order):
    """Seen states (the shards carry the blocks' labels, the layout its offsets) and
    transitions held at zero: the workers' objective is the single process'."""
    from crf.distributed import DistributedObjective
    from crf.transitions import allowed_pairs

    X, y, _ = corpus
    pats = PATTERNS + (["T"] if order == 2 else [])
    space, data = FeatureSpace.build(parse_patterns("\n".join(pats)), X, y)
    space = space.restrict_states(data)
    counts = {}
    for ys in y:
        for a, b in zip(ys, ys[1:]):
            counts[a, b] = counts.get((a, b), 0) + 1
    space.freeze_transitions(data, possible=False, min_freq=float(np.median(list(counts.values()))))  # some go
    if order == 2:
        space.set_allowed(allowed_pairs("unseen", space.labels, data.labels, data.seq_offsets))
    assert space.seen_states and space.frozen is not None
    ref = Objective(space, data, n_chunks=1)
    dist = DistributedObjective(client, space, data, n_shards=3)
    theta = np.random.default_rng(1).normal(size=space.n_params)
    f0, g0 = ref.value_and_gradient(theta)
    g0 = g0.copy()
    f1, g1 = dist.value_and_gradient(theta)
    assert f1 == pytest.approx(f0, rel=1e-12)
    assert _rel(g1, g0) < 1e-12
    assert not g1[space.frozen].any()
