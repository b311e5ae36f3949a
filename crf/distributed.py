"""Data-parallel CRF training on a Dask cluster (``suffixlm crf train --workers N``).

The driver builds the feature space and encodes the corpus as in a single-process
fit, cuts the encoded corpus into shards of whole sequences (balanced by tokens) and
scatters each shard to a worker once.  Every evaluation of the objective sends theta
to the workers, runs the numba loss/gradient kernel (:func:`crf._inference_kernels.loss_gradient`)
on each shard, sums the (loss, gradient, errors) triples pairwise on the workers (a
tree sum) and gathers the total.  The solver (OWL-QN, L-BFGS, FISTA) runs on the driver.

Scattered data lives only in worker memory: when a worker dies its shards are lost,
so the driver keeps the encoded shards and scatters the lost ones again before
evaluating anew (same shards, same sums: the same bits as without the failure).
"""

from __future__ import annotations

import uuid

import numpy as np

from . import _inference_kernels as K
from .features import EncodedCorpus, FeatureSpace
from .inference import choose_sparse
from .solvers import names

__all__ = ["DistributedObjective", "split_shards", "DISTRIBUTED_ALGORITHMS"]

#: the algorithms whose work is full-batch gradients, which map over the shards
DISTRIBUTED_ALGORITHMS = names(batch=True)
MAX_RETRIES = 5  # evaluations re-run after workers died (each re-scatters the lost shards)


def split_shards(data: EncodedCorpus, n_shards: int) -> list[EncodedCorpus]:
    """Contiguous runs of whole sequences with about equal token counts (at most
    ``n_shards``, none empty); each shard's ``seq_offsets`` start at 0."""
    n_shards = max(1, min(int(n_shards), data.n_sequences))
    targets = np.arange(1, n_shards) * (data.n_tokens / n_shards)
    inner = np.searchsorted(data.seq_offsets[1:], targets) + 1
    bounds = np.unique(np.concatenate([[0], inner, [data.n_sequences]])).astype(np.int64)
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        s, e = int(data.seq_offsets[a]), int(data.seq_offsets[b])
        out.append(EncodedCorpus(np.ascontiguousarray(data.seq_offsets[a:b + 1] - s),
                                 np.ascontiguousarray(data.unigram_base[s:e]),
                                 np.ascontiguousarray(data.bigram_base[s:e]),
                                 np.ascontiguousarray(data.labels[s:e]),
                                 np.ascontiguousarray(data.unigram_value[s:e] if data.valued else data.unigram_value),
                                 np.ascontiguousarray(data.trigram_base[s:e]), data.unigram_states))
    return out


def _shard_loss_gradient(theta, shard: EncodedCorpus, n_labels, sparse, bigram_start, n_bigram_obs):
    """(loss, gradient float64 (n_params,), errors int64 (2,)) of one shard, on one numba thread."""
    import numba

    numba.set_num_threads(1)  # a worker is one process per core: no numba pool inside it
    if sparse:
        nnz = int(np.count_nonzero(theta[bigram_start:]))
        nz_ptr = np.zeros(n_bigram_obs + 1, dtype=np.int64)
        nz_idx = np.empty(max(nnz, 1), dtype=np.int64)
        K.bigram_nonzeros(theta, np.int64(bigram_start), np.int64(n_bigram_obs), np.int64(n_labels ** 2),
                          nz_ptr, nz_idx)
    else:
        nz_ptr = nz_idx = np.zeros(1, dtype=np.int64)
    chunks = np.array([0, shard.n_sequences], dtype=np.int64)
    G = np.empty((1, theta.shape[0]))
    errors = np.zeros((1, 2), dtype=np.int64)
    loss = K.loss_gradient(theta, shard.seq_offsets, shard.unigram_base, shard.unigram_value, shard.unigram_states,
                           shard.bigram_base, shard.labels, np.int64(n_labels), sparse, np.int64(bigram_start), nz_ptr,
                           nz_idx, chunks, G, errors)
    return float(loss), G[0], errors[0]


def _shard_loss_gradient2(theta, shard: EncodedCorpus, layout: FeatureSpace):
    """:func:`_shard_loss_gradient` of a model on label-pair states (second order, or
    forbidden pairs): ``layout`` is the model's feature space without its observation
    strings (the kernels need the layout and the allowed pairs only)."""
    import numba

    from .inference import Objective

    numba.set_num_threads(1)
    obj = Objective(layout, shard)
    loss, g = obj.value_and_gradient(theta)
    errors = np.array([int(obj.seq_err.sum()), int(np.count_nonzero(obj.seq_err))], dtype=np.int64)
    return float(loss), g.copy(), errors


def _add(a, b):
    """Sum of two (loss, gradient, errors) triples (the gradient of ``a`` is reused)."""
    g = a[1]
    g += b[1]
    return a[0] + b[0], g, a[2] + b[2]


class DistributedObjective:
    """:class:`crf.inference.Objective` over the workers of a ``distributed.Client``.

    ``value_and_gradient(theta)`` -> ``(loss, grad)``, grad float64 (n_params,);
    ``value_and_gradient_parts`` is the same with grad as a (1, n_params) array;
    ``last_errors`` and ``last_sparse`` as for :class:`~crf.inference.Objective`.
    n_shards: default the number of workers (one shard each).
    """

    def __init__(self, client, space: FeatureSpace, data: EncodedCorpus, n_shards: int | None = None,
                 recursion: str = "auto"):
        if data.n_sequences == 0:
            raise ValueError("no training sequence")
        if (data.labels < 0).any():
            raise ValueError("training data has tokens without a known label")
        choose_sparse(np.zeros(0), space, recursion)  # checks the name
        self.client = client
        self.space = space
        self.data = data
        self.recursion = recursion
        if n_shards is None:
            n_shards = max(1, len(client.scheduler_info(n_workers=-1)["workers"]))
        self.shards = split_shards(data, n_shards)
        self._futures = [None] * len(self.shards)
        self._scatter(range(len(self.shards)))
        self.errors = np.zeros(2, dtype=np.int64)
        self.last_sparse = False
        self._layout = None
        self.n_rescatters = 0  # shards scattered again after a worker died

    def _scatter(self, which) -> None:
        which = list(which)
        if not which:
            return
        futures = self.client.scatter([self.shards[i] for i in which], hash=False)
        for i, f in zip(which, futures):
            self._futures[i] = f

    def _lost(self) -> list[int]:
        """Shards no worker holds any more (their futures cancelled, or no holder left)."""
        live = [f for f in self._futures if f.status == "finished"]
        who = self.client.who_has(live) if live else {}
        return [i for i, f in enumerate(self._futures) if f.status != "finished" or not who.get(f.key)]

    def close(self) -> None:
        """Release the shards on the workers."""
        self._futures = [None] * len(self.shards)

    @property
    def last_errors(self) -> tuple[float, float]:
        """Token and sequence error (percent) of posterior decoding at the last evaluated point."""
        te, se = self.errors
        return 100.0 * te / self.data.n_tokens, 100.0 * se / self.data.n_sequences

    def _evaluate(self, theta: np.ndarray, sparse: bool):
        from distributed import wait

        sp = self.space
        tag = uuid.uuid4().hex
        theta_f = self.client.scatter(theta, broadcast=True, hash=False)
        if sp.pairwise:
            if self._layout is None:  # the space without its strings, once on every worker
                light = FeatureSpace(sp.patterns, [], sp.kinds, sp.labels, sp.n_columns, sp.allowed,
                                     state_ptr=sp.state_ptr, state_labels=sp.state_labels)
                self._layout = self.client.scatter(light, broadcast=True, hash=False)
            level = [self.client.submit(_shard_loss_gradient2, theta_f, f, self._layout,
                                        key=f"crf-gradient-{i}-{tag}", pure=False)
                     for i, f in enumerate(self._futures)]
        else:
            level = [self.client.submit(_shard_loss_gradient, theta_f, f, sp.n_labels, sparse, sp.bigram_start,
                                        sp.n_bigram_obs, key=f"crf-gradient-{i}-{tag}", pure=False)
                     for i, f in enumerate(self._futures)]
        depth = 0
        while len(level) > 1:  # pairwise sums on the workers
            depth += 1
            nxt = [self.client.submit(_add, level[i], level[i + 1], key=f"crf-sum-{depth}-{i}-{tag}", pure=False)
                   for i in range(0, len(level) - 1, 2)]
            if len(level) % 2:
                nxt.append(level[-1])
            level = nxt
        wait(level)
        return level[0].result()

    def value_and_gradient(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        from concurrent.futures import CancelledError

        from distributed import KilledWorker

        theta = np.ascontiguousarray(theta, dtype=np.float64)
        sparse = not self.space.pairwise and choose_sparse(theta, self.space, self.recursion)
        self.last_sparse = sparse
        for attempt in range(MAX_RETRIES + 1):
            try:
                loss, grad, errors = self._evaluate(theta, sparse)
                break
            except (CancelledError, KilledWorker):
                lost = self._lost()
                if not lost or attempt == MAX_RETRIES:
                    raise
                self.n_rescatters += len(lost)
                self._scatter(lost)
        self.errors = np.asarray(errors, dtype=np.int64)
        if self.space.frozen is not None:  # weights held at zero, as Objective does
            grad[self.space.frozen] = 0.0
        return float(loss), grad

    def value_and_gradient_parts(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        loss, grad = self.value_and_gradient(theta)
        return loss, grad.reshape(1, -1)
