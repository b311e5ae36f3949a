"""The objective of the log-linear LM: the mean log-loss of the training predictions
over the suffix tree's parameters, its gradient, per node and not per token
(``suffixlm/_lm_kernels.py``): one top-down pass gives every node's normaliser, one
bottom-up pass the whole gradient, so an evaluation costs O(parameters) whatever the
corpus length."""

from __future__ import annotations

import time

import numpy as np

from . import _lm_kernels as K
from ._tree_kernels import bfs_order


class LMObjective:
    """The mean log-loss of a training corpus as a ``SmoothProblem`` (see solvers): the
    twin of :class:`crf.inference.Objective`.

    The metric is ``collapsed * word_scale``: a collapsed node counts for its trie
    coordinates, and every coordinate of the tree of word v is scaled by
    ``word_scale[v]`` (a diagonal preconditioner, constant on each word's tree; see
    ``LogLinearLM``). ``value_grad`` returns the gradient in that metric, i.e. the
    partial derivatives divided by the metric.
    """

    def __init__(self, tree, end_node, target_param, n_unseen, word_scale=None):
        self.tree = tree
        keep = end_node >= 0
        self.end_node = np.ascontiguousarray(end_node[keep])
        self.target_param = np.ascontiguousarray(target_param[keep])
        self.n_samples = int(self.end_node.shape[0])
        self.n_unseen = float(n_unseen)
        t = tree
        self.topo = bfs_order(t.parent)
        self.param_node = t.param_node()
        self.param_parent = t.param_parent()
        self.collapsed = np.ascontiguousarray(t.collapsed, dtype=np.int64)
        self.metric = self.collapsed[self.param_node].astype(np.float64)
        self.scale = None
        if word_scale is not None:
            self.scale = np.ascontiguousarray(word_scale[t.succ_words], dtype=np.float64)
            self.metric *= self.scale
        n_params, n_nodes = t.n_params, t.n_nodes
        self.S = np.empty(n_params)
        self.expS = np.empty(n_params)
        self.Z = np.empty(n_nodes)
        self.A = np.empty(n_nodes)
        self.grad = np.empty(n_params)
        # statistics of the whole corpus, and scratch for mini-batches
        self.n_end_all = np.zeros(n_nodes)
        self.emp_all = np.zeros(n_params)
        K.accumulate_batch(np.arange(self.n_samples), self.end_node, self.target_param,
                           self.param_parent, self.n_end_all, self.emp_all, 1.0)
        self.n_end_b = np.zeros(n_nodes)
        self.emp_b = np.zeros(n_params)
        self.seconds_gradient = 0.0

    def _forward(self, w):
        t = self.tree
        K.forward_pass(w, self.topo, t.parent, self.collapsed, t.succ_offsets, self.param_parent,
                       self.n_unseen, self.S, self.expS, self.Z)

    def _stats(self, batch):
        if batch is None:
            return self.n_end_all, self.emp_all, self.n_samples
        K.accumulate_batch(batch, self.end_node, self.target_param, self.param_parent, self.n_end_b, self.emp_b, 1.0)
        return self.n_end_b, self.emp_b, len(batch)

    def _unstats(self, batch):
        if batch is not None:
            K.accumulate_batch(batch, self.end_node, self.target_param, self.param_parent,
                               self.n_end_b, self.emp_b, -1.0)

    def value_grad(self, w, batch=None):
        t0 = time.perf_counter()
        self._forward(w)
        n_end, emp, n = self._stats(batch)
        t = self.tree
        loss = K.loss_and_gradient(w, self.topo, t.parent, self.collapsed, t.succ_offsets, self.param_parent,
                                   self.param_node, self.S, self.expS, self.Z, n_end, emp, self.A, self.grad)
        self._unstats(batch)
        self.seconds_gradient += time.perf_counter() - t0
        g = self.grad / n
        if self.scale is not None:
            g /= self.scale
        return loss / n, g

    def value(self, w, batch=None):
        self._forward(w)
        n_end, emp, n = self._stats(batch)
        loss = K.loss_value(w, self.collapsed, self.param_node, self.Z, n_end, emp)
        self._unstats(batch)
        return loss / n
