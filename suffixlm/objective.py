"""The objective of the log-linear LM: the mean log-loss of the training predictions
over the suffix tree's parameters, its gradient, per node and not per token
(``suffixlm/_lm_kernels.py``): one top-down pass gives every node's normaliser, one
bottom-up pass the whole gradient, so an evaluation costs O(parameters) whatever the
corpus length."""

from __future__ import annotations

import time

import numpy as np

from . import _lm_kernels as K
from .memory import allocate
from ._tree_kernels import bfs_levels


class LMObjective:
    """The mean log-loss of a training corpus as a ``SmoothProblem`` (see solvers): the
    twin of :class:`crf.inference.Objective`.

    The metric is ``collapsed * scale``: a collapsed node counts for its trie
    coordinates, and every param q is scaled by ``scale[q]`` (float64[n_params] > 0,
    a diagonal preconditioner; see ``LogLinearLM(precondition=)``). ``value_grad``
    returns the gradient in that metric, i.e. the partial derivatives divided by the
    metric.

    ``base``: the :class:`suffixlm.base_measure.BaseMeasure`, or for the paper's model the number
    of predicted words that are no root param. ``extra_events``: (end nodes, params,
    weight) of events added to the whole-corpus statistics (``LogLinearLM(loo=...)``).
    ``event_count``: float64 or int64 per entry of ``end_node`` / ``target_param``, how
    many training positions each stands for (distinct events with their counts, a model
    built from counts: ``suffixlm.events``); None: one each. The statistics are sums of
    integers, exact in float64, so they equal those of the positions one by one; with
    counts there are no positions to draw mini-batches from (``batch`` must be None).
    """

    def __init__(self, tree, end_node, target_param, base, scale=None, extra_events=None, event_count=None):
        self.tree = tree
        if not hasattr(base, "kind"):  # a number: the unseen words of the plain model
            from .base_measure import no_base

            base = no_base(tree, float(base))
        self.base = base
        keep = end_node >= 0
        if keep.all():  # nothing to drop: no copies (on a large corpus these are its biggest arrays)
            keep = slice(None)
        self.end_node = np.ascontiguousarray(end_node[keep])
        self.target_param = np.ascontiguousarray(target_param[keep])
        self.event_count = None
        if event_count is not None:
            event_count = np.asarray(event_count)
            if event_count.dtype not in (np.int64, np.float64):
                event_count = event_count.astype(np.float64)
            self.event_count = np.ascontiguousarray(event_count[keep])
        self.n_samples = int(self.end_node.shape[0]) if event_count is None else int(self.event_count.sum())
        t = tree
        self.topo, self.level_start, self.child_start = bfs_levels(t.parent)
        self.param_node = t.param_node()
        self.param_parent = t.param_parent()
        self.collapsed = np.ascontiguousarray(t.collapsed, dtype=np.int64)
        self.metric = self.collapsed[self.param_node].astype(np.float64)
        self.scale = None
        if scale is not None:
            self.scale = np.ascontiguousarray(scale, dtype=np.float64)
            if self.scale.shape != (t.n_params,):
                raise ValueError(f"scale has shape {self.scale.shape}, expected ({t.n_params},)")
            self.metric *= self.scale
        n_params, n_nodes = t.n_params, t.n_nodes
        step = f"LM objective ({n_params:,} parameters, {n_nodes:,} suffix-tree nodes)"
        self.S = allocate(n_params, np.float64, f"{step}: the scores")
        self.expS = allocate(n_params, np.float64, f"{step}: the exponentiated scores")
        self.Z = allocate(n_nodes, np.float64, f"{step}: the normalisers")
        self.A = allocate(n_nodes, np.float64, f"{step}: the node sums")
        self.grad = allocate(n_params, np.float64, f"{step}: the gradient")
        # statistics of the whole corpus, and scratch for mini-batches
        self.n_end_all = allocate(n_nodes, np.float64, f"{step}: the context counts", zero=True)
        self.emp_all = allocate(n_params, np.float64, f"{step}: the empirical counts", zero=True)
        if self.event_count is None:
            K.accumulate_batch(np.arange(self.n_samples), self.end_node, self.target_param,
                               self.param_parent, self.n_end_all, self.emp_all, 1.0)
        else:
            self._accumulate_counts()
        # extra (end node, param, weight) events of the whole corpus only: the mean is
        # over all events, counted with their weight (mini-batches see the plain ones)
        self.n_events = float(self.n_samples)
        if extra_events is not None:
            x_end, x_param, x_weight = extra_events
            K.accumulate_batch(np.arange(len(x_end)), np.ascontiguousarray(x_end, dtype=np.int64),
                               np.ascontiguousarray(x_param, dtype=np.int64), self.param_parent,
                               self.n_end_all, self.emp_all, float(x_weight))
            self.n_events += float(x_weight) * len(x_end)
        # - sum ln B(y | x) over the events: constant in w (0 without a base measure)
        self.base_loss_all = 0.0
        if base.kind != "none":
            lb = base.event_log_base(tree, self.end_node, self.target_param)
            self.base_loss_all = -float(lb.sum() if self.event_count is None else lb @ self.event_count)
            if extra_events is not None:
                self.base_loss_all -= float(x_weight) * float(base.event_log_base(tree, x_end, x_param).sum())
        self.n_end_b = allocate(n_nodes, np.float64, f"{step}: the batch context counts", zero=True)
        self.emp_b = allocate(n_params, np.float64, f"{step}: the batch empirical counts", zero=True)
        self.seconds_gradient = 0.0

    def _accumulate_counts(self):
        """n_end_all and emp_all of counted events: each count at its end node, and at its
        param and every param above it (``K.accumulate_counts``, no temporary array). Sums
        of integers, exact: the arrays of ``accumulate_batch`` over the positions."""
        K.accumulate_counts(self.end_node, self.target_param, self.event_count, self.param_parent, self.n_end_all,
                            self.emp_all)

    def _forward(self, w):
        t = self.tree
        b = self.base
        K.forward_pass(w, self.topo, self.level_start, t.parent, self.collapsed, t.succ_offsets,
                       self.param_parent, b.lnB, b.gamma, b.u0, self.S, self.expS, self.Z)

    def _stats(self, batch):
        """(events per end node, per param, their number, their - sum ln B)."""
        if batch is None:
            return self.n_end_all, self.emp_all, self.n_events, self.base_loss_all
        if self.event_count is not None:
            raise ValueError("mini-batches draw training positions; a model built from counted events has none "
                             "(use the full-batch solver, fista)")
        K.accumulate_batch(batch, self.end_node, self.target_param, self.param_parent, self.n_end_b, self.emp_b, 1.0)
        base_loss = 0.0
        if self.base.kind != "none":
            base_loss = -float(self.base.event_log_base(self.tree, self.end_node[batch], self.target_param[batch]).sum())
        return self.n_end_b, self.emp_b, len(batch), base_loss

    def _unstats(self, batch):
        if batch is not None:
            K.accumulate_batch(batch, self.end_node, self.target_param, self.param_parent,
                               self.n_end_b, self.emp_b, -1.0)

    def value_grad(self, w, batch=None):
        t0 = time.perf_counter()
        self._forward(w)
        n_end, emp, n, base_loss = self._stats(batch)
        t = self.tree
        loss = base_loss + K.loss_and_gradient(w, self.topo, self.level_start, self.child_start, self.collapsed,
                                               t.succ_offsets, self.param_parent, self.param_node, self.base.gcum,
                                               self.S, self.expS, self.Z, n_end, emp, self.A, self.grad)
        self._unstats(batch)
        self.seconds_gradient += time.perf_counter() - t0
        g = self.grad / n
        if self.scale is not None:
            g /= self.scale
        return loss / n, g

    def value(self, w, batch=None):
        self._forward(w)
        n_end, emp, n, base_loss = self._stats(batch)
        loss = base_loss + K.loss_value(w, self.collapsed, self.param_node, self.base.gcum, self.Z, n_end, emp)
        self._unstats(batch)
        return loss / n
