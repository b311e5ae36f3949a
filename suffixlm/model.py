"""Log-linear language models on suffix trees (Nelakanti et al. 2013).

    P(y = v | x) = exp(sum_j k_j w[j, v]) / sum_u exp(sum_j k_j w[j, u])

where j runs over the suffix-tree nodes on the path of the context x (its last
``order - 1`` words, reversed, never crossing the sentence start) and k_j is the
number of collapsed trie nodes of j that x covers. Weights are non-negative and
exist only where v followed context j in the training text (§2.5); everything else
is zero. The objective is the *mean* log-loss per predicted token plus
``lam * Omega(w)``, so ``lam`` does not scale with the corpus size.

Penalties: ``l1``, ``l2sq``, ``l2-tree``, ``linf-tree`` (heap merge, Algorithm 4),
``linf-tree-pivot`` (Algorithm 3). With ``alpha`` the groups at depth d are weighted
by alpha**d (§6). l1, l2sq and linf-tree keep the values of a collapsed chain equal
(Propositions 1-2) and run on the suffix tree; l2-tree and the weighted l1 / l2sq
break that equality and run on the suffix trie.
"""

from __future__ import annotations

import math
import os
import time
import warnings
from typing import Iterable, NamedTuple

import numpy as np

from . import _lm_kernels as K
from . import modelfile
from . import threads as _threads
from ._address import bound_entry
from ._tree_kernels import bfs_levels
from .checks import Field, check_fields
from .corpus import BOS_ID, EOS, UNK_ID, Corpus, Vocabulary, as_corpus
from .estimator import ParamsMixin
from .events import ContextEvents
from .objective import LMObjective
from .options import LM_BASES
from .options import LM_PENALTIES as PENALTIES
from .io import split_words
from .query import (UNKNOWN_MISSING_LOG10, FullScoreReturn, KenLMInterface, State, as_str, checked_ids,
                    decoder_calls, joined_lines, line_chunks, sentence_chunks)
from .solvers.result import ConvergenceWarning, StopReason
from .suffixtree import SuffixTree

LN10 = math.log(10.0)
# the model file is suffixlm.modelfile's; its names stay importable from here
FORMAT, FORMAT_VERSION, ModelFormatError = modelfile.FORMAT, modelfile.FORMAT_VERSION, modelfile.ModelFormatError


def _penalty_class(name: str):
    """The penalty class of ``name`` (:data:`suffixlm.penalties.PENALTIES`): its facts."""
    from .penalties import PENALTIES as CLASSES

    return CLASSES[name]


def _uses_trie(penalty: str, alpha: float | None, base: str = "none", order: int | None = 5) -> bool:
    """Whether the model is trained on the suffix trie: never at unbounded order (the trie
    grows with the square of the sentence length; the penalties and the Kneser-Ney base
    then act on the collapsed tree's nodes, the base with its closed form inside edges)."""
    if order is None:
        return False
    facts = _penalty_class(penalty)
    if not facts.collapsible or base != "none":
        return True
    return alpha is not None and not facts.collapsible_weighted


_as_corpus = as_corpus  # the module's old name for it
#: the message of a parameter that is none of its choices
_UNKNOWN = "unknown {key} {v}; expected {what}"
#: The weight of the leave-one-out novel-context events (``loo``) of the default model at
#: unbounded order. Its Kneser-Ney base keeps order 4's discounts at every deeper order
#: (``kn_tree.UNBOUNDED_OWN_ORDERS``), so on the training text itself a long context seen
#: once (the position itself) gives its word more than SRILM's deep D1 of 0.99+ would:
#: without these events the weights learn against that overconfident base and KN's gain
#: is lost (the ``loo=0`` variant against the model before, lambda 1 / tokens: PTB
#: 100k/20k test ppl 186.32 -> 186.87; full PTB 139.08 -> 139.54). The events train the
#: distributions used after a novel context as such.
#: Chosen on validation text at ``--lam auto`` (``benchmarks/unbounded.md``, variants):
#: loo 0, 1, 2 give PTB 100k valid 197.81, 197.45, 197.42; full PTB 145.54, 144.90,
#: 144.89; CoNLL-2002 Spanish words 160.95, 159.75, 159.71; Dutch 467.73, 467.45, 467.64.
#: At fixed orders the events raise validation perplexity (PTB 100k, order 5: 198.50 ->
#: 199.01; order 7: 198.01 -> 198.69), so there the default stays 0.
UNBOUNDED_LOO = 1.0


def _special_log10(word: int, lp: float, root: float) -> float:
    """A log-linear model's log10 p of ``<s>`` and of ``<unk>`` in a model without it,
    from ``lp`` and ``root`` (log10 p of the word after its context and after the empty
    context), as its exported ARPA file gives them: ``<s>`` is never predicted (SRILM's
    -99 for its unigram), and KenLM's p(<unk>) = 10^-100; each times the back-off
    weights of the context."""
    return (-99.0 if word == BOS_ID else UNKNOWN_MISSING_LOG10) + lp - root


def longest_sentence_order(path) -> int:
    """The order of unbounded context on the text file ``path``: its longest line's words
    plus ``<s>`` and ``</s>``."""
    from .corpus import CorpusError
    from .io import open_input

    longest = 0
    with open_input(path, text=True, error=CorpusError) as fh:
        for line in fh:
            longest = max(longest, len(split_words(line)))
    return longest + 2


def node_counts(tree) -> np.ndarray:
    """int64[n_nodes]: predictions made in each node's context (sum of its successor counts)."""
    c = np.concatenate([[0], np.cumsum(tree.succ_counts, dtype=np.int64)])
    return c[tree.succ_offsets[1:]] - c[tree.succ_offsets[:-1]]


def _param_depths(tree) -> tuple[np.ndarray, np.ndarray]:
    """int64[n_params] twice: the trie coordinates c a param stands for, and the depth of
    the deepest (its coordinates lie at depths deep - c + 1 .. deep)."""
    node = tree.param_node()
    return tree.collapsed[node].astype(np.int64), tree.depth[node].astype(np.int64)


def count_class_discounts(tree) -> np.ndarray:
    """float64[max_depth + 1, 3]: modified Kneser-Ney's discounts D_d(1), D_d(2), D_d(3+)
    (Chen & Goodman, 1999) of the (context, word) pairs with a context of d words, from
    their count-of-counts n1..n4: Y = n1 / (n1 + 2 n2), D(k) = k - (k + 1) Y n_{k+1} / n_k,
    clipped to [0, k]; 0 where a count-of-count is 0."""
    c, deep = _param_depths(tree)
    cnt = np.minimum(tree.succ_counts, 5).astype(np.int64)
    m = int(tree.max_depth)
    # a param of a collapsed node stands for one pair at each depth deep - c + 1 .. deep
    nk = np.zeros((m + 2, 6))
    np.add.at(nk, (deep - c + 1, cnt), 1.0)
    np.add.at(nk, (deep + 1, cnt), -1.0)
    nk = np.cumsum(nk, axis=0)[: m + 1]
    D = np.zeros((m + 1, 3))
    for d in range(m + 1):
        n1, n2, n3, n4 = nk[d, 1:5]
        if n1 <= 0 or n2 <= 0:
            continue
        Y = n1 / (n1 + 2.0 * n2)
        for k, (a, b) in enumerate(((n1, n2), (n2, n3), (n3, n4))):
            if a > 0:
                D[d, k] = min(max(k + 1 - (k + 2) * Y * b / a, 0.0), k + 1.0)
    return D


def discount_weights(tree) -> np.ndarray:
    """float64[n_params]: the sum, over the trie coordinates a param stands for, of the
    discount of its count class at that depth (``count_class_discounts``)."""
    D = count_class_discounts(tree)
    c, deep = _param_depths(tree)
    cls = np.minimum(tree.succ_counts, 3).astype(np.int64) - 1
    cum = np.vstack([np.zeros((1, 3)), np.cumsum(D, axis=0)])  # cum[d] = sum of D[:d]
    return cum[deep + 1, cls] - cum[deep - c + 1, cls]


class ScoringArrays(NamedTuple):
    """A fitted :class:`LogLinearLM`'s scores on its tree (``LogLinearLM.scoring_arrays``)."""

    param_parent: np.ndarray  #: int64[n_params]: the parameter one node up with the same word, -1 at the top
    collapsed: np.ndarray  #: int64[n_nodes]: trie contexts on each node's edge
    S: np.ndarray  #: float64[n_params]: each parameter's score (its weight plus those above it)
    Z: np.ndarray  #: float64[n_nodes]: each node's normaliser
    edge_base: tuple  #: the base's closed form inside edges (ln D1 products, events, non-events)


class LogLinearLM(ParamsMixin, KenLMInterface):
    """Log-linear n-gram LM with structured penalties.

    Parameters
    ----------
    order : int           n-gram order (contexts of up to order - 1 words)
    penalty : str         one of ``PENALTIES``
    lam : float | None    regularisation strength (per-token mean loss + lam * Omega);
                          None = 1 / (predicted tokens), near the best value found on
                          PTB-100k and full PTB (scripts/reproduce_figure2.py,
                          scripts/bench_lm_ptb.py); the value used is ``lam_``
    alpha : float | None  depth weighting alpha**depth of the groups (weighted variants)
    solver : str          ``"fista"`` (full batch, the default: measured fastest, see
                          benchmarks/lm_solvers.json) or ``"sage"`` (Algorithm 1, mini-batches)
    max_iter : int        maximum iterations (fista) / epochs (sage); the default is a cap
                          only: on full PTB (order 5) FISTA stops by ``tol`` after 45-173
    batch_size : int|None initial mini-batch size (sage); None = n_tokens / 32
    batch_growth : float  factor by which the batch grows each epoch (sage)
    tol : float           stop when the objective's relative decrease stays below tol
    seed : int            shuffling seed (training is deterministic given it)
    init : str            starting point: ``"smoothed"`` (the weights of an interpolated
                          absolute-discounting model, see ``_lm_kernels``) or ``"zeros"``.
                          The objective is convex, so both reach the same optimum; the
                          smoothed start is much closer to it for small ``lam``.
    warm_start : bool     start from the current ``weights_`` when refitting the same
                          corpus with the same structure (a path over ``lam``)
    penalize_root : bool  whether the groups rooted at the empty context (one per word,
                          the whole tree of that word; the unigram weights) are
                          penalized, as in eq. 8 (default). False leaves the unigram
                          weights and those groups free.
    precondition : bool   a diagonal metric for the solver (default): each param
                          weighted by its n-gram's training count (the loss's
                          curvature along it), which makes FISTA converge in about
                          10x fewer steps; exact for linf-tree, l1 and l2sq (their
                          operators in a diagonal metric, ``Penalty.in_metric``). The
                          l2-tree operator needs a scale constant on each word's tree:
                          there, each word's unigram frequency.
    loo : float | None    weight of the leave-one-out novel-context events (0: none):
                          every training prediction whose context was seen once is also
                          predicted from the parent node, the deepest context that stays
                          seen without it (``_lm_kernels.novel_context_events``), so the
                          distributions used after a novel context are trained as such
                          (full-batch FISTA only). None (default): ``UNBOUNDED_LOO`` at
                          unbounded order with the KN base and FISTA, else 0; the value
                          used is ``loo_`` (why: ``UNBOUNDED_LOO``)
    discount : float      multiplier of count-class l1 weights added under the tree
                          penalty (0: none): a trie coordinate of count c at depth d gets
                          weight discount * D_d(c) / n, D_d(c) modified Kneser-Ney's three
                          discounts (counts 1, 2, 3+) from the count-of-counts at that
                          depth, so the model's expected count of a seen event is its
                          count minus that discount (see ``count_class_discounts``)
    base : str            base measure inside the softmax (``suffixlm.base_measure``): ``"none"``
                          (the paper's model) or ``"kn"``: P(v | x) proportional to
                          P_KN(v | x) exp(score), interpolated modified Kneser-Ney of the
                          same order without cut-offs, so w = 0 is exactly that model;
                          trains on the suffix trie and starts from w = 0
    positive : bool       weights >= 0 (the paper's model; default). With a base measure,
                          False lets the weights also lower the base's probabilities
    threads : int | None  numba threads of fit and scoring (None: numba's setting, all
                          cores by default; more than ``NUMBA_NUM_THREADS`` means all);
                          restored after each call. The weights are the same bits for
                          any count. A model under ``threads.MIN_PARALLEL`` parameters
                          runs on one thread (docs/threads.md)
    n_jobs : int | None   scikit-learn's spelling of ``threads`` (-1: all, -2: all but one)

    Learned attributes: ``vocab_``, ``tree_``, ``weights_`` (float64[n_params]),
    ``objective_``, ``n_iter_``, ``converged_``, ``history_`` (one
    :class:`suffixlm.solvers.IterationInfo` per iteration), ``n_params_``, ``n_nonzero_``.
    """

    def __init__(
        self,
        order: int = 5,
        penalty: str = "linf-tree",
        lam: float | None = None,
        alpha: float | None = None,
        solver: str = "fista",
        max_iter: int = 2000,
        batch_size: int | None = None,
        batch_growth: float = 2.0,
        tol: float = 1e-6,
        seed: int = 0,
        init: str = "smoothed",
        warm_start: bool = False,
        penalize_root: bool = True,
        precondition: bool = True,
        loo: float | None = None,
        discount: float = 0.0,
        base: str = "none",
        positive: bool = True,
        threads: int | None = None,
        n_jobs: int | None = None,
    ):
        self.order = order
        self.penalty = penalty
        self.lam = lam
        self.alpha = alpha
        self.solver = solver
        self.max_iter = max_iter
        self.batch_size = batch_size
        self.batch_growth = batch_growth
        self.tol = tol
        self.seed = seed
        self.init = init
        self.warm_start = warm_start
        self.penalize_root = penalize_root
        self.precondition = precondition
        self.loo = loo
        self.discount = discount
        self.base = base
        self.positive = positive
        self.threads = threads
        self.n_jobs = n_jobs

    _step_fn = None  # kenlm_step's closure (``_stepper``; ``_prepare_scoring`` clears it)

    # ------------------------------------------------------------------ training
    #: the parameters ``_check_params`` checks one by one (``suffixlm.checks``), in this order
    _PARAMS = {
        "order": Field("int", low=1, none=True, what="an integer >= 1 or None (unbounded)"),
        "penalty": Field(choices=PENALTIES, problem=_UNKNOWN),
        "lam": Field("finite", low=0, none=True),
        "alpha": Field("finite", above=0, none=True, what="> 0"),
        "init": Field(choices=("smoothed", "zeros"), what="'smoothed' or 'zeros'", problem=_UNKNOWN),
        "solver": Field(choices=("sage", "fista"), what="'sage' or 'fista'", problem=_UNKNOWN),
        "loo": Field("finite", low=0, none=True),
        "discount": Field("finite", low=0),
        "base": Field(choices=LM_BASES, problem=_UNKNOWN),
    }

    def _check_params(self):
        """``ValueError`` naming the first parameter out of its range (``_PARAMS``) or a bad
        combination."""
        def fail(key, reason, text):
            raise ValueError(text)

        check_fields({k: getattr(self, k) for k in self._PARAMS}, self._PARAMS, fail,
                     problem="{key} must be {what}, got {v}")
        if self.order is None and not _penalty_class(self.penalty).collapsible:
            raise ValueError(f"penalty {self.penalty!r} needs the suffix trie, which at unbounded order grows with "
                             "the square of the sentence length: use linf-tree (the default), l1 or l2sq, or a "
                             "finite order")
        if self.loo is not None and self.loo > 0 and self.solver != "fista":
            raise ValueError("loo events need the full-batch solver (solver='fista')")

    def _build(self, corpus: Corpus):
        from .contexts import extract_contexts
        from .suffixtree import SuffixTree

        t0 = time.perf_counter()
        # the sorting build, also at unbounded order (the faster of the two there:
        # benchmarks/unbounded.md); the same tree
        tree = SuffixTree.build(corpus, max_depth=self._max_depth(corpus.offsets), collapse=not self._on_trie())
        ctx = extract_contexts(tree, corpus)
        keep = corpus.target_mask()[ctx.positions]
        end_node = np.empty(len(ctx.positions), dtype=np.int64)
        target_param = np.empty(len(ctx.positions), dtype=np.int64)
        ok = K.training_statistics(ctx.offsets, ctx.nodes, ctx.targets.astype(np.int64), keep,
                                   tree.succ_offsets, tree.succ_words, end_node, target_param)
        if not ok:
            raise RuntimeError("internal error: a training target is missing from the suffix tree")
        self.seconds_build_ = time.perf_counter() - t0
        return tree, end_node, target_param

    def _build_events(self, events: ContextEvents):
        """``_build`` from counted events: the tree (``SuffixTree.from_events``, the same as
        the text's but for its edge labels) and per distinct event its end node, its
        target's param and its count (end node -1 for targets that are not scored)."""
        from .contexts import lookup_params

        t0 = time.perf_counter()
        tree = SuffixTree.from_events(events.tokens, events.offsets, events.counts, self._max_depth(events.offsets),
                                      collapse=not self._on_trie())
        # the tree's per-event nodes become end_node (no copy): the tree keeps no positions
        end_node = np.asarray(tree.position_node, dtype=np.int64)
        tree.position_node = np.zeros(0, np.int64)  # scoring walks every text
        targets = tree.tokens[tree.offsets[1:] - 1]
        target_param = lookup_params(tree, end_node, targets)
        if not events.vocab.has_unk:
            keep = targets != UNK_ID
            end_node[~keep] = -1
            target_param[~keep] = -1
        if np.any(target_param[end_node >= 0] < 0):
            raise RuntimeError("internal error: a training target is missing from the suffix tree")
        self.seconds_build_ = time.perf_counter() - t0
        return tree, end_node, target_param, tree.event_counts

    def _max_depth(self, offsets) -> int:
        """The tree's depth cap: order - 1, or at unbounded order the longest context of
        the text (its longest sentence's words and ``<s>``; events: their longest n-gram's
        context)."""
        if self.order is not None:
            return int(self.order) - 1
        return max(int(np.diff(np.asarray(offsets)).max(initial=1)) - 1, 0)

    @property
    def loo_(self) -> float:
        """The weight of the leave-one-out events this model trains with: ``loo``, or where
        that is None ``UNBOUNDED_LOO`` at unbounded order with the KN base and FISTA, else 0."""
        if self.loo is not None:
            return float(self.loo)
        return UNBOUNDED_LOO if (self.order is None and self.base == "kn" and self.solver == "fista") else 0.0

    def _on_trie(self) -> bool:
        return _uses_trie(self.penalty, self.alpha, self.base, self.order)

    @property
    def order_(self) -> int:
        """The model's order as fitted: ``order``, or at unbounded order one more than the
        longest context of the training text."""
        self._check_fitted()
        return int(self.tree_.max_depth) + 1

    def _n_unseen(self, tree, vocab: Vocabulary) -> float:
        """Words of the predicted vocabulary that are no root param: they keep score 0
        and add exp(0) = 1 each to every normaliser. (A ``<unk>`` root param in a
        closed vocabulary is not a word but stays at w = 0, since nothing is ever
        predicted as it, and its exp(0) takes the place of one unseen word:
        n_predicted - |root params| is right in both cases.)"""
        root = int(np.flatnonzero(tree.parent < 0)[0])
        n_root = int(tree.succ_offsets[root + 1] - tree.succ_offsets[root])
        return float(vocab.n_predicted - n_root)

    def _penalty(self, tree, scale=None, n_events=1.0):
        """The penalty object ``lam_ * Omega`` on the parameter forest (w >= 0), its prox in
        the problem's metric.

        With a per-param scale s: argmin 1/2 sum c s (w - v)^2 + kappa Omega_eta(w)
        (:meth:`Penalty.in_metric`)."""
        from . import penalties as P

        node = tree.param_node()
        counts = np.ascontiguousarray(tree.collapsed[node], dtype=np.int64)
        if self.alpha is not None:
            weights = P.depth_weights(np.ascontiguousarray(tree.depth[node], dtype=np.int64), counts, float(self.alpha))
        else:
            weights = counts.astype(np.float64)
        if not self.penalize_root:
            weights[tree.parent[node] < 0] = 0.0
        structure = P.ForestStructure.from_parent(tree.param_parent(), counts=counts, weights=weights)
        penalty = P.make_penalty(self.penalty, structure, self.lam_, nonneg=bool(self.positive))
        if self.discount > 0:
            eta = self.discount * discount_weights(tree) / n_events
            l1 = P.L1(P.ForestStructure.from_parent(tree.param_parent(), counts=counts, weights=eta), 1.0,
                      nonneg=bool(self.positive))
            penalty = P.NestedSum([l1, penalty])
        return penalty if scale is None else penalty.in_metric(scale)

    @_threads.scoped
    def fit(self, corpus, valid=None, callback=None, checkpoint=None, client=None):
        """Train on ``corpus`` (a Corpus, a path, or a list of sentence strings; or the
        text's counted events, :class:`suffixlm.events.ContextEvents`).

        ``client``: a ``distributed.Client``; ``corpus`` is then a path, read and counted
        in shards by the workers (``distributed.lm_events.count_text_events``, vocabulary of the text
        itself, closed, as ``fit(path)``), and the model is built from the merged
        counts alone: the same tree and weights as the single-process fit (to rounding).
        A model built from counts trains with the full-batch solver (fista) only.

        ``valid`` (same kinds, encoded with the training vocabulary) adds the
        validation perplexity to each iteration's record (``info.extra["valid_ppl"]``).
        ``callback(info, w)`` sees each iteration's record (the solvers' protocol,
        :mod:`suffixlm.solvers.result`); returning True stops.
        ``checkpoint``: a :class:`suffixlm.checkpoint.Checkpoint`: the solver's state is
        written to it periodically and on a requested stop (which raises
        ``checkpoint.Interrupted``); with ``resume`` the fit goes on from the state it
        holds, refused (``CheckpointError``) unless it was written for the same corpus
        and the same parameters (``max_iter`` may differ: it is a cap).
        """
        from .solvers import FistaState, SageState, fista, sage

        self._check_params()
        previous = getattr(self, "weights_", None)
        corpus = self._training_data(corpus, client)
        resumed = hook = None
        if checkpoint is not None:
            identity = self._checkpoint_identity(corpus)
            resumed = checkpoint.resume_fit("LogLinearLM", identity)  # refused before any work
            hook = checkpoint.hook("LogLinearLM", identity)
        problem = self._problem(corpus)
        tree = self.tree_
        _threads.serial_if_small(tree.n_params)
        self.lam_ = float(self.lam) if self.lam is not None else 1.0 / max(problem.n_samples, 1)
        penalty = self._penalty(tree, problem.scale, problem.n_events)
        valid_corpus = None if valid is None else _as_corpus(valid, self.vocab_)
        L_bound = 0.5 * min(tree.max_depth + 1, 16)  # softmax Hessian <= 1/2, m + 1 trie features (a first guess)
        state = None
        if resumed is not None:
            state = resumed.state(FistaState if self.solver == "fista" else SageState, tree.n_params)
            w0 = state.x if self.solver == "fista" else state.W
            if self.positive and np.any(w0 < 0):
                raise resumed.bad_state(f"{'x' if self.solver == 'fista' else 'W'}: entry "
                                        f"{int(np.flatnonzero(w0 < 0)[0])} is negative (weights >= 0)")
        else:
            w0 = self._initial_weights(problem, previous)
        self.weights_ = w0.copy()

        def cb(info, w):
            if valid_corpus is not None:
                self.weights_ = w
                info.extra["valid_ppl"] = self.corpus_perplexity(valid_corpus)
            info.extra["prox_seconds"] = penalty.prox_seconds
            info.extra["gradient_seconds"] = problem.seconds_gradient
            return callback(info, w) if callback is not None else None

        t0 = time.perf_counter()
        if self.solver == "fista":
            res = fista(problem.value_grad, penalty, w0, value=problem.value, metric=problem.metric,
                        L0=L_bound / 16, max_iter=self.max_iter, tol=self.tol, callback=cb, state=state,
                        checkpoint=hook)
        else:
            B = self.batch_size if self.batch_size is not None else max(400, problem.n_samples // 32)
            res = sage(problem, penalty, w0, batch_size=B, batch_growth=self.batch_growth, max_iter=self.max_iter,
                       L0=L_bound / 16, tol=self.tol, seed=self.seed, callback=cb, state=state, checkpoint=hook)
        self.seconds_train_ = time.perf_counter() - t0
        self.weights_ = res.x
        self.objective_ = res.objective
        self.converged_ = res.converged
        self.n_iter_ = res.n_iter
        self.history_ = res.history
        if res.reason == StopReason.MAX_ITER:
            warnings.warn(f"the fit stopped at max_iter={self.max_iter} before its tolerance (tol={self.tol:g}) "
                          "held; raise max_iter", ConvergenceWarning, stacklevel=3)  # past fit and its threads wrapper
        self.prox_seconds_ = penalty.prox_seconds
        self.gradient_seconds_ = problem.seconds_gradient
        self._prepare_scoring()
        return self

    def _training_data(self, data, client=None):
        """The training data of ``fit``: a Corpus, or counted events (given, or counted on
        the cluster of ``client`` from a path), checked against this estimator."""
        if client is not None and not isinstance(data, ContextEvents):
            if not isinstance(data, (str, os.PathLike)):
                raise TypeError("with a client the training text is given as a path (the workers read it), got "
                                f"{type(data).__name__}")
            self._check_events_params(self.order)
            from .distributed.lm_events import count_text_events

            # at unbounded order the Kneser-Ney base is computed on the tree of the events
            order = self.order if self.order is not None else longest_sentence_order(data)
            return count_text_events(client, data, int(order), keep_ngram_counts=self.base == "kn"
                                     and self.order is not None)
        if isinstance(data, ContextEvents):
            self._check_events_params(data.order)
            if self.base == "kn" and self.order is not None and data.ngram_counts is None:
                raise ValueError("base='kn' needs the text's n-gram counts: count the events with "
                                 "keep_ngram_counts=True")
            if data.tokens.shape[0] and int(data.tokens.max()) >= len(data.vocab):
                raise ValueError("events: word ids outside the vocabulary")
            return data
        return _as_corpus(data, None)

    def _check_events_params(self, order):
        """The options a model built from counted events cannot have: mini-batches (sage
        draws training positions, which counts do not keep); events of another order."""
        if self.solver != "fista":
            raise ValueError(f"solver={self.solver!r} draws mini-batches of training positions; a model built from "
                             "counts (client=, --workers/--scheduler) trains with solver='fista'")
        if self.order is not None and int(order) != int(self.order):
            raise ValueError(f"events counted for order {order}, the model has order {self.order}")

    #: parameters that change a fit's result (max_iter, a cap, and warm_start, whose
    #: starting point a checkpoint's state replaces, are not among them)
    _RESULT_PARAMS = ("order", "penalty", "lam", "alpha", "solver", "batch_size", "batch_growth", "tol", "seed",
                      "init", "penalize_root", "precondition", "loo", "discount", "base", "positive")

    def _checkpoint_identity(self, corpus: Corpus) -> dict:
        """What a checkpoint of a fit on ``corpus`` must match to be resumed: the corpus's
        content (sha256 of its vocabulary and token ids) and the parameters that change
        the result."""
        from .checkpoint import content_digest

        if isinstance(corpus, ContextEvents):
            data = corpus.digest()
        else:
            data = content_digest(corpus.vocab.words, bool(corpus.vocab.has_unk), corpus.tokens, corpus.offsets)
        return {"training data": data, **{k: getattr(self, k) for k in self._RESULT_PARAMS}}

    def fit_record(self) -> tuple[dict, dict]:
        """The last fit's weights and summary as (arrays, JSON-able meta): how a loop of
        fits (``model_selection.select_lam``) keeps a fit in a checkpoint."""
        from .solvers.state import history_to_json

        self._check_fitted()
        meta = {"lam": float(self.lam_), "objective": float(self.objective_), "n_iter": int(self.n_iter_),
                "converged": bool(self.converged_), "history": history_to_json(self.history_)}
        for k in ("seconds_train_", "prox_seconds_", "gradient_seconds_"):
            meta[k] = float(getattr(self, k, 0.0))
        return {"weights": np.asarray(self.weights_, dtype=np.float64)}, meta

    def restore_fit(self, corpus, arrays: dict, meta: dict) -> "LogLinearLM":
        """Become the fit of ``fit_record`` on ``corpus`` (this estimator's parameters, the
        corpus of that fit): the problem is built (or reused), the weights and summary
        checked (``StateError`` naming the field) and set. Returns self."""
        from .solvers import state as S

        self._check_params()
        self._problem(self._training_data(corpus))
        w = S.array(arrays, "weights", (self.tree_.n_params,))
        if self.positive and np.any(w < 0):
            raise S.StateError(f"weights: entry {int(np.flatnonzero(w < 0)[0])} is negative")
        n_iter = S.number(meta, "n_iter", integer=True, low=0)
        history = S.history_from_json(meta.get("history"), "history", first=0 if self.solver == "sage" else 1)
        if not isinstance(meta.get("converged"), bool):
            raise S.StateError("converged: not true or false")
        self.lam_ = S.number(meta, "lam", low=0.0)
        self.objective_ = S.number(meta, "objective")
        self.n_iter_, self.converged_, self.history_ = n_iter, meta["converged"], history
        for k in ("seconds_train_", "prox_seconds_", "gradient_seconds_"):
            setattr(self, k, S.number(meta, k, low=0.0))
        self.weights_ = w
        self._prepare_scoring()
        return self

    def _problem(self, corpus) -> LMObjective:
        """The objective on ``corpus`` (tree, statistics, base measure): built, or with
        ``warm_start`` reused when this same Corpus object was fitted last with the same
        structure (a lambda path rebuilds only the penalty)."""
        key = (self.order, self._on_trie(), self.loo_, self.base,
               bool(self.precondition))
        cache = getattr(self, "_fit_cache", None)
        if self.warm_start and cache is not None and cache[0] is corpus and cache[1] == key:
            return cache[2]
        self._fit_cache = None
        self.vocab_ = corpus.vocab
        count = None
        if isinstance(corpus, ContextEvents):
            tree, end_node, target_param, count = self._build_events(corpus)
        else:
            tree, end_node, target_param = self._build(corpus)
        self.tree_ = tree
        self.n_unseen_ = self._n_unseen(tree, corpus.vocab)
        scale = self._param_scale(tree, corpus.vocab) if self.precondition else None
        extra = self._novel_context_events(tree, end_node, target_param) if self.loo_ > 0 else None
        self.base_ = self._base_measure(tree, corpus)
        problem = LMObjective(tree, end_node, target_param, self.base_, scale, extra, event_count=count)
        if self.warm_start:
            self._fit_cache = (corpus, key, problem)
        return problem

    def __copy__(self):
        """A snapshot sharing the fitted arrays (never changed in place) but with its own
        scoring scratch, so it scores correctly while the original is refitted."""
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._fit_cache = None
        if hasattr(self, "weights_"):
            new._prepare_scoring()
        return new

    def __getstate__(self):
        """The model's state without its query closures (made again on the next query)."""
        state = dict(self.__dict__)
        for name in ("BaseScore", "BaseFullScore", "_step_fn", "_terms"):  # _terms: made again too
            state.pop(name, None)
        return state

    def _base_measure(self, tree, corpus):
        from .base_measure import kneser_ney_base, no_base

        if self.base == "kn" and not self._on_trie():
            from .base_measure import kneser_ney_tree_base
            from .backoff.kn_tree import UNBOUNDED_OWN_ORDERS

            return kneser_ney_tree_base(tree, corpus.vocab, self.n_unseen_,
                                        own_orders=UNBOUNDED_OWN_ORDERS if self.order is None else None)
        if self.base == "kn":
            return kneser_ney_base(tree, corpus, self.order, self.n_unseen_)
        return no_base(tree, self.n_unseen_)

    def _novel_context_events(self, tree, end_node, target_param):
        """(end nodes, params, weight ``loo``) of the leave-one-out novel-context events."""
        node_count = node_counts(tree)
        out_end = np.empty(len(end_node), dtype=np.int64)
        out_param = np.empty(len(end_node), dtype=np.int64)
        k = K.novel_context_events(end_node, target_param, tree.parent, node_count, tree.param_node(),
                                   tree.param_parent(), out_end, out_param)
        return out_end[:k], out_param[:k], self.loo_

    def _param_scale(self, tree, vocab: Vocabulary) -> np.ndarray:
        """Per-param diagonal preconditioner (float64[n_params]). The loss's curvature
        along param (x, v) is about the count of the n-gram x v: from the unigrams'
        tens of thousands down to 1 for deep contexts, in every word's tree. Weighting
        each param by its count relative to the largest lets the rare ones take
        proportionally longer steps (full PTB order 5: 45 FISTA steps to tol 1e-6 and a
        lower objective, against 354 with the per-word scale). l2-tree: the per-word
        scale, the only one its operator allows."""
        if not _penalty_class(self.penalty).metric:
            return self._word_scale(tree, vocab)[tree.succ_words]
        counts = np.maximum(np.asarray(tree.succ_counts, dtype=np.float64), 1.0)
        return counts / counts.max(initial=1.0)

    def _word_scale(self, tree, vocab: Vocabulary) -> np.ndarray:
        """Per-word scale: the relative unigram frequency of each word (floored at 1e-4),
        constant on each word's tree."""
        root = int(np.flatnonzero(tree.parent < 0)[0])
        lo, hi = tree.succ_offsets[root], tree.succ_offsets[root + 1]
        freq = np.zeros(len(vocab))
        freq[tree.succ_words[lo:hi]] = tree.succ_counts[lo:hi]
        freq /= max(freq.max(), 1.0)
        return np.maximum(freq, 1e-4)

    def _initial_weights(self, problem, previous=None) -> np.ndarray:
        if self.warm_start and previous is not None and previous.shape == (self.tree_.n_params,):
            return previous.copy()
        w = np.zeros(self.tree_.n_params)
        if self.init == "smoothed" and self.base == "none":
            t = self.tree_
            K.smoothed_initial_weights(problem.topo, t.parent, problem.collapsed, t.succ_offsets, t.succ_counts,
                                       problem.param_parent, problem.base.u0, 0.7, w, problem.S, problem.expS,
                                       problem.Z)
        return w

    # ------------------------------------------------------------------ scoring
    def _prepare_scoring(self):
        t = self.tree_
        self._topo, self._level_start, _ = bfs_levels(t.parent)
        self._param_parent = t.param_parent()
        self._param_node = t.param_node()
        self._collapsed = np.ascontiguousarray(t.collapsed, dtype=np.int64)
        self._S = np.empty(t.n_params)
        self._expS = np.empty(t.n_params)
        self._Z = np.empty(t.n_nodes)
        self._scored_w = None
        self._terms = None  # score_terms of the scored weights (_score_terms)
        self._step_fn = None  # kenlm_step's closure (_stepper)
        self.__dict__.pop("BaseScore", None)  # the decoder's closures (_bind_queries) of earlier weights
        self.__dict__.pop("BaseFullScore", None)
        self.__dict__.pop("score", None)  # and score's (_bind_score)

    def _edge_args(self):
        """The closed form of the base inside collapsed edges, for ``score_positions``."""
        b = self.base_
        if not b.on_edges:
            return self.tree_.depth, np.zeros(0), np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.bool_)
        from .backoff.kn_tree import nonevents

        return self.tree_.depth, b.ln_d1_cum, b.n_events, nonevents(self.vocab_)

    def _ensure_forward(self):
        if self._scored_w is not self.weights_:
            t = self.tree_
            b = self.base_
            with _threads.using(getattr(self, "threads", None), getattr(self, "n_jobs", None), size=t.n_params):
                K.forward_pass(self.weights_, self._topo, self._level_start, t.parent, self._collapsed,
                               t.succ_offsets, self._param_parent, b.lnB, b.gamma, b.u0, self._S, self._expS, self._Z)
            self._scored_w = self.weights_
            self._terms = None

    def _score_terms(self):
        """(Q, Nn) of ``_lm_kernels.score_terms`` for the current weights (after
        ``_ensure_forward``): what the query kernels read for a context that ends at its
        node; made on the first query of these weights."""
        self._ensure_forward()
        if getattr(self, "_terms", None) is None:
            t = self.tree_
            Q, Nn = np.empty(t.n_params), np.empty(t.n_nodes)
            K.score_terms(self._param_node, self.base_.lnB, self.base_.gcum, self._S, self._Z, Q, Nn)
            self._terms = (Q, Nn)
        return self._terms

    def _check_fitted(self):
        if not hasattr(self, "weights_"):
            raise RuntimeError("this LogLinearLM is not fitted yet: call fit() or load()")

    def scoring_arrays(self) -> ScoringArrays:
        """The arrays the fitted model scores with (computed once for its weights): what
        :mod:`suffixlm.export` expands into a back-off model. Read-only."""
        self._check_fitted()
        if not hasattr(self, "_topo"):
            self._prepare_scoring()
        self._ensure_forward()
        return ScoringArrays(self._param_parent, self._collapsed, self._S, self._Z, self._edge_args()[1:])

    def log10_probs(self, corpus: Corpus) -> np.ndarray:
        """log10 P(token | context) for every predicted position of ``corpus`` (all
        non-``<s>`` tokens, in order); NaN where the target is an OOV that is not
        scored (``<unk>`` not a word)."""
        from .contexts import extract_contexts

        self._check_fitted()
        if not hasattr(self, "_topo"):
            self._prepare_scoring()
        self._ensure_forward()
        t = self.tree_
        ctx = extract_contexts(t, corpus)
        out = np.empty(len(ctx.positions))
        b = self.base_
        K.score_positions(self.weights_, t.parent, self._collapsed, t.succ_offsets, t.succ_words, self._param_parent,
                          self._param_node, b.lnB, b.gcum, b.ln_unseen, self._S, self._expS, self._Z,
                          *self._score_terms(), ctx.offsets, ctx.nodes, ctx.cover, ctx.targets.astype(np.int64), out,
                          *self._edge_args())
        out /= LN10
        mask = corpus.target_mask()[ctx.positions]
        out[~mask] = np.nan
        return out

    def _corpus_of(self, data) -> Corpus:
        self._check_fitted()
        return _as_corpus(data, self.vocab_)

    @property
    def vocab(self) -> Vocabulary:
        """The vocabulary (scoring protocol of ``suffixlm.evaluate``)."""
        self._check_fitted()
        return self.vocab_

    def kenlm_step(self, context, word):
        """(log10 p(word | context), n-gram length, next context) for the KenLM API
        (:mod:`suffixlm.query`), in one compiled call (``_lm_kernels.kenlm_step``). The
        n-gram length is one more than the depth of the deepest context where ``word``
        has a parameter (where an ARPA export lists the n-gram); the next context is the
        part of the history the tree matches."""
        return self._stepper()(tuple(context), word)

    def _stepper(self):
        """``kenlm_step`` as a closure over the scoring arrays of the current weights
        (made again when they change)."""
        made = self._step_fn
        if made is not None and made.weights is self.weights_:
            return made
        self._check_fitted()
        if not hasattr(self, "_topo"):
            self._prepare_scoring()
        self._ensure_forward()
        t = self.tree_
        b = self.base_
        m = int(t.max_depth)
        arrays = (self.weights_, t.parent, self._collapsed, t.succ_offsets, t.succ_words, self._param_parent,
                  self._param_node, b.lnB, b.gcum, b.ln_unseen, self._S, self._expS, self._Z, *self._score_terms(),
                  *self._edge_args(),
                  t.context_position, t.child_offsets, t.children, t.child_first_word, t.tokens, self._node_words(), m)
        nodes, cover = np.empty(m + 2, dtype=np.int64), np.empty(m + 2, dtype=np.int64)
        kernel, has_unk = K.kenlm_step, self.vocab_.has_unk

        def walk_input(context: tuple, word: int):
            """(the context's last ``max_depth`` words, the word and a spare slot as
            int32, the word's position there): what the kernels walk."""
            if len(context) > m:
                context = context[len(context) - m:]
            return np.array(context + (word, 0), dtype=np.int32), len(context)

        def step(context: tuple, word: int):
            x, i = walk_input(context, word)
            special = word == BOS_ID or (word == UNK_ID and not has_unk)
            lp, root, ngram, keep = kernel(*arrays, x, i, special, nodes, cover)
            lp = float(lp / LN10)
            if special:
                lp = _special_log10(word, lp, float(root / LN10))
                if word == UNK_ID:  # KenLM keeps that <unk> in the state
                    return lp, 1, (word,) if m > 0 else ()
            return lp, int(ngram), tuple(x[i + 1 - keep:i + 1].tolist())

        step.weights, step.arguments, step.walk_input, step.buffers = self.weights_, arrays, walk_input, (nodes, cover)
        self._state_steps(step)
        self._step_fn = step
        return step

    def _node_words(self) -> np.ndarray:
        """The tree's ``node_word_table`` (``_contexts_kernels``), which the query kernels
        look children and params up in, one random access each instead of a binary
        search: made on the first query of this tree (about 0.25 s and 114 MB for 1.5M
        nodes and 2.3M params; empty where the tree is too large for its packing, the
        kernels then search)."""
        t = self.tree_
        made = getattr(self, "_nw", None)
        if made is not None and made[0] is t:
            return made[1]
        from . import _contexts_kernels as C

        V = len(self.vocab_)
        entries = int(t.n_params) + int(len(t.children))
        n_slots = max(1, math.ceil(entries * C.TABLE_SLOTS_PER_ENTRY))
        if t.n_nodes >= 2 ** 31 or t.n_params >= 2 ** 32 - 1 or t.n_nodes * V >= 2 ** 62 or n_slots >= 2 ** 32:
            H = np.zeros(0, dtype=np.int64)
        else:
            H = C.node_word_table(V, n_slots, t.succ_offsets, t.succ_words, t.child_offsets, t.children,
                                  t.child_first_word, bool((self._collapsed == 1).all()))
        self._nw = (t, H)
        return H

    def _state_steps(self, step) -> None:
        """Give ``step`` (``_stepper``) the decoder's per-call path on tree-position states
        (``_lm_kernels.kenlm_state_step``, the arrays by address): ``state_step(state,
        word) -> (log10 p, n-gram length, next state)``, ``to_state(context tuple)``,
        ``words_of(state)`` (the context tuple) and the states ``begin`` (after ``<s>``)
        and ``null`` (the empty context). A state is an int: equal states are equal
        contexts, as KenLM's are; an int that is no state of this model is the empty
        context, as for a binary model."""
        m, has_unk = int(self.tree_.max_depth), self.vocab_.has_unk
        a = step.arguments
        held = tuple(np.ascontiguousarray(x, dtype=dt) for x, dt in zip(a[:9] + a[10:25], K.STEP_DTYPES)) + \
            tuple(np.zeros(size(m), dtype=dt) for dt, size in K.STATE_SCRATCH)
        ln_unseen, radix = float(a[9]), int(self._collapsed.max()) + 1
        depth, collapsed, position, tokens = held[14], held[2], held[18], held[22]
        walk = held[18:24]

        def to_state(context) -> int:
            context = tuple(context)
            if context == (UNK_ID,) and not has_unk and m > 0:
                return K.UNK_STATE
            return int(K.context_state(depth, *walk, m, radix, step.walk_input(context, 0)[0][:-1]))

        def words_of(state: int) -> tuple:
            if state == K.UNK_STATE:
                return (UNK_ID,)
            j, k = divmod(state, radix)
            if not 0 <= j < len(collapsed) or not 1 <= k <= collapsed[j]:  # another model's: no context
                return ()
            n = min(int(depth[j] - collapsed[j]) + k, m)
            end = int(position[j])
            return tuple(tokens[end - n:end].tolist())

        specials = (-1 if has_unk else UNK_ID, -99.0, UNKNOWN_MISSING_LOG10)  # _special_log10's
        null = to_state(())
        params = [m, radix, null, specials[0]] + np.array([ln_unseen, *specials[1:]]).view(np.int64).tolist()
        desc = np.array([v for x in held for v in (x.ctypes.data, x.shape[0])] + [0, 0] + params, dtype=np.int64)
        address = int(desc.ctypes.data)  # K.STATE_PARAMS_AT: the parameters (K.STATE_PARAMS)

        def forward():
            """Give ``desc`` the trie's ``forward_table`` (K.STATE_FORWARD), made on the first
            sentence scored in a batch or a line: the sentence walks then look half as much up
            (``_lm_kernels.forward_sentence``). A copy of the ``node_word_table`` (its bytes
            again); none for a tree that is no trie."""
            if step.forward is None:
                from . import _contexts_kernels as C

                # node_parent, succ_offsets, param_parent, the children; the tree's levels
                F = C.forward_table(held[23], held[1], held[3], held[5], held[19], held[20], held[21], self._topo,
                                    self._level_start)
                step.forward = F
                if F.shape[0]:
                    desc[K.STATE_FORWARD:K.STATE_FORWARD + 2] = (F.ctypes.data, F.shape[0])

        def score_lines(text: bytes, n_lines: int, bos: bool, eos: bool) -> np.ndarray:
            forward()
            if step.word_table is None:  # made on the first sentence scored so
                from ._text_kernels import word_table_of

                step.word_table = word_table_of(self.vocab_.words)
            sums = np.empty(n_lines)
            text, starts, bounds = line_chunks(text, n_lines)
            if bounds is None:
                K.kenlm_score_lines(address, ln_unseen, m, *step.word_table, text, bos, eos, *specials, sums)
            else:
                with _threads.spread():
                    K.kenlm_score_lines_parallel(address, ln_unseen, m, *step.word_table, text, starts, bos, eos,
                                                 *specials, sums, bounds)
            return sums

        def score_ids(ids: np.ndarray, offsets: np.ndarray, bos: bool) -> np.ndarray:
            forward()
            sums = np.empty(len(offsets) - 1)
            bounds = sentence_chunks(offsets, len(ids))
            if bounds is None:
                K.kenlm_score_ids(address, ln_unseen, m, ids, offsets, bos, *specials, sums)
            else:
                with _threads.spread():
                    K.kenlm_score_ids_parallel(address, ln_unseen, m, ids, offsets, bos, *specials, sums, bounds)
            return sums

        def line_entry():
            """``score_line(text: bytes) -> float``: ``_lm_kernels.kenlm_score_line_at``
            bound to this model's block (made on the first call, with the word table)."""
            if step.line is None:
                forward()
                if step.word_table is None:
                    from ._text_kernels import word_table_of

                    step.word_table = word_table_of(self.vocab_.words)
                W, blob = step.word_table
                work = (np.zeros(K.LINE_WORK_WORDS, dtype=np.int32), np.zeros(K.LINE_WORK_WORDS),
                        np.zeros(K.LINE_WORK_WORDS), np.zeros(K.LINE_WORK_WORDS, dtype=np.int64))
                W, blob = np.ascontiguousarray(W, dtype=np.int64), np.ascontiguousarray(blob, dtype=np.uint8)
                block = np.array([address, W.ctypes.data, W.shape[0], blob.ctypes.data, blob.shape[0],
                                  *(b.ctypes.data for b in work)], dtype=np.int64)  # K.LINE_BLOCK
                step.line_hold = (block, work, W, blob)  # alive while their addresses are in use
                step.line = bound_entry(K.kenlm_score_line_at, int(block.ctypes.data), b"")
            return step.line

        state_step = bound_entry(K.kenlm_state_step, address, null, 1)  # EOS_ID: in every vocabulary
        step.state_step, step.to_state, step.words_of = state_step, to_state, words_of
        step.score_lines, step.score_ids, step.word_table = score_lines, score_ids, None
        step.line, step.line_entry, step.forward = None, line_entry, None
        step.begin, step.null, step.hold = to_state((BOS_ID,)), null, (held, desc)

    def _context_of(self, words) -> tuple[int, ...]:
        return self._stepper().words_of(words) if isinstance(words, int) else tuple(words)

    def BeginSentenceWrite(self, state: State) -> None:
        """Make ``state`` the start of a sentence (context ``<s>``)."""
        state.words = self._stepper().begin

    def NullContextWrite(self, state: State) -> None:
        """Make ``state`` the empty context."""
        state.words = self._stepper().null

    def _sentence(self, sentence, bos: bool, eos: bool):
        """(word ids of ``<s>`` when ``bos``, the sentence and ``</s>`` when ``eos``; the
        log10 probability and the n-gram length of each from position ``first`` on
        (``first``: 1 after ``<s>``, else 0); ``first``): ``kenlm_step`` word after word,
        in one compiled call (``_lm_kernels.kenlm_sentence``)."""
        arrays = self._stepper().arguments
        vocab = self.vocab_
        ids = [vocab.id(w) for w in split_words(as_str(sentence))]
        if eos:
            ids.append(vocab.id(EOS))
        first = 1 if bos else 0
        x = np.array([BOS_ID] * first + ids + [0], dtype=np.int32)
        n = x.shape[0] - 1
        lp, root, ngram = np.zeros(n), np.zeros(n), np.zeros(n, dtype=np.int64)
        has_unk = vocab.has_unk
        K.kenlm_sentence(*arrays, x, first, BOS_ID, -1 if has_unk else UNK_ID, lp, root, ngram)
        words = x[:n].tolist()
        values = (lp / LN10).tolist()
        for p, word in enumerate(words):
            if p >= first and (word == BOS_ID or (word == UNK_ID and not has_unk)):
                values[p] = _special_log10(word, values[p], float(root[p] / LN10))
        return words, values, ngram.tolist(), first

    def full_scores(self, sentence: str, bos: bool = True, eos: bool = True):
        """``(log10 p, n-gram length, oov)`` for every word of ``sentence``, then for
        ``</s>`` when ``eos`` (KenLM's ``full_scores``): ``kenlm_step`` word after word,
        in one compiled call (``_lm_kernels.kenlm_sentence``)."""
        words, values, ngram, first = self._sentence(sentence, bos, eos)
        last = len(words) - 1 if eos else len(words)
        for p in range(first, len(words)):
            yield (values[p], ngram[p], words[p] == UNK_ID and p != last)

    def score(self, sentence, bos=None, eos=None) -> float:
        """KenLM's ``score`` of one sentence (and scikit-learn's of a corpus):
        :meth:`KenLMInterface.score`, the sum taken over :meth:`_sentence` directly (the
        same float64 additions in the same order)."""
        if not isinstance(sentence, (str, bytes)):
            return KenLMInterface.score(self, sentence, bos, eos)
        bos, eos = True if bos is None else bool(bos), True if eos is None else bool(eos)
        if sentence.__class__ is str and "\n" not in sentence:
            try:  # words split, looked up and walked in one compiled call (kenlm_score_lines)
                if bos and eos:  # the compiled line walk, bound for the next calls
                    return self._bind_score()(sentence.encode())
                return float(self._stepper().score_lines(sentence.encode(), 1, bos, eos)[0])
            except UnicodeEncodeError:  # a lone surrogate: the words as Python reads them
                pass
        _, values, _, first = self._sentence(sentence, bos, eos)
        total = 0.0
        for v in values[first:]:
            total += v
        return total

    def _bind_score(self):
        """``score`` as a closure bound to this model (replacing the method on the
        instance; dropped when the weights change, ``_prepare_scoring``): a line without
        a line feed, ``bos`` and ``eos`` true, goes straight to the compiled line walk
        (``_lm_kernels.kenlm_score_line_at``), anything else to the method. Returns
        that line walk (``text: bytes -> float``)."""
        step = self._stepper()
        line, weights, method = step.line_entry(), self.weights_, LogLinearLM.score

        def score(sentence, bos=None, eos=None) -> float:
            if sentence.__class__ is str and (bos is None or bos) and (eos is None or eos) and "\n" not in sentence \
                    and self.weights_ is weights:
                try:
                    return line(sentence.encode())
                except UnicodeEncodeError:  # a lone surrogate: the words as Python reads them
                    pass
            return method(self, sentence, bos, eos)

        score.__doc__ = method.__doc__
        self.score = score
        return line

    def score_batch(self, sentences, bos: bool = True, eos: bool = True) -> np.ndarray:
        """:meth:`score` of every sentence of ``sentences`` (an iterable of strings) in one
        compiled call (``_lm_kernels.kenlm_score_lines``): float64[k]."""
        sentences, text = joined_lines(sentences)
        if text is not None:
            return self._stepper().score_lines(text, len(sentences), bool(bos), bool(eos))
        return KenLMInterface.score_batch(self, sentences, bos, eos)

    def score_ids(self, ids, offsets=None, bos: bool = True) -> np.ndarray:
        """:meth:`score` of sentences given as word ids (``vocab`` ids, ``</s>`` included
        where it is to be scored; ``offsets`` as :meth:`KenLMInterface.score_ids`), in
        one compiled call (``_lm_kernels.kenlm_score_ids``): float64[k]."""
        ids, offsets = checked_ids(ids, offsets, len(self.vocab_))
        return self._stepper().score_ids(ids.astype(np.int32), offsets, bool(bos))

    def _bind_queries(self):
        """``BaseScore`` and ``BaseFullScore`` as closures over ``_stepper`` and the
        vocabulary (a decoder's per-call path); dropped when the weights change
        (``_prepare_scoring``)."""
        step = self._stepper()
        self.BaseScore, self.BaseFullScore = decoder_calls(step.state_step, int, step.to_state, self.vocab_.index.get,
                                                           self._word_id, hold=step.hold)

    def BaseScore(self, in_state: State, word, out_state: State) -> float:  # replaced per model (_bind_queries)
        """log10 p(word | in_state); ``out_state`` becomes the context after ``word``."""
        self._bind_queries()
        return self.BaseScore(in_state, word, out_state)

    def BaseFullScore(self, in_state: State, word, out_state: State) -> FullScoreReturn:  # replaced per model
        """p(word | in_state) as a :class:`FullScoreReturn`; ``out_state`` becomes the
        context after ``word``."""
        self._bind_queries()
        return self.BaseFullScore(in_state, word, out_state)

    def distributions(self, states) -> np.ndarray:
        """log10 p(w | state) of every word id w of ``vocab`` (what ``BaseScore`` gives
        each), for every state of ``states``: float32[len(states), V]. Each state's
        context is walked once and every word scored in one pass over the params of its
        path's nodes (``_lm_kernels.score_all_words``: the numbers of ``BaseScore``)."""
        if isinstance(states, State):
            states = [states]
        step = self._stepper()
        out = np.empty((len(states), len(self.vocab)), dtype=np.float32)
        row = np.empty(len(self.vocab))
        for r, st in enumerate(states):
            ctx = self._context_of(st.words)
            K.score_all_words(*step.arguments, *step.walk_input(ctx, 0), *step.buffers, row)
            out[r] = row / LN10
            for w in (BOS_ID, UNK_ID):  # scored as in kenlm_step (<s> never predicted; a missing <unk>)
                out[r, w] = step(ctx, w)[0]
        return out

    def to_backoff(self):
        """The model as a back-off model (:class:`suffixlm.backoff.arpa.BackoffLM`, exactly the
        same probabilities up to float32; :mod:`suffixlm.export`)."""
        from .export import loglinear_to_backoff

        return loglinear_to_backoff(self)

    def write_arpa(self, path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
        """Write the model as an ARPA file (``.gz``: compressed), atomically, never over
        one of ``inputs``."""
        bo = self.to_backoff()
        bo.sources = tuple(os.fspath(p) for p in inputs)
        bo.write_arpa(path)

    # ------------------------------------------------------------------ info
    @property
    def n_params_(self) -> int:
        return int(self.tree_.n_params)

    @property
    def n_nonzero_(self) -> int:
        return int(np.count_nonzero(self.weights_))

    # ------------------------------------------------------------------ files
    def save(self, path: str | os.PathLike, inputs: Iterable[str | os.PathLike] = ()) -> None:
        """Write the model to exactly ``path`` (:mod:`suffixlm.modelfile`: an npz container,
        no pickle, holding the weights, the vocabulary, the suffix tree's arrays and a JSON
        header), atomically, so an interrupted save leaves no broken file. ``inputs``:
        files the model was made from (training text...); ``path`` must not be one of them
        (``io.SameFileError``)."""
        self._check_fitted()
        modelfile.write(path, self, inputs)

    @classmethod
    def load(cls, path: str | os.PathLike) -> "LogLinearLM":
        """Read a model written by ``save`` (:func:`suffixlm.modelfile.read`). Never
        unpickles. Every value a kernel or a probability relies on is checked; a
        truncated, tampered or foreign file raises ``ModelFormatError`` naming the file
        and the field."""
        return modelfile.read(path, cls)


def tree_kneser_ney_model(data, modified: bool = True):
    """Kneser-Ney at unbounded order on ``data`` (a Corpus or counted events) as a scoring
    model: a fitted :class:`suffixlm.model.LogLinearLM` whose weights are all 0, so its
    probabilities are its base, the tree's KN (``kn_``: the ``kn_tree.TreeKN``). Its
    ``to_backoff()`` is the ARPA form (one n-gram per trie context and word)."""
    from .base_measure import kneser_ney_tree_base
    from .backoff.kn_tree import UNBOUNDED_OWN_ORDERS, estimate_tree_kn

    lm = LogLinearLM(order=None, base="kn", lam=0.0)
    lm.vocab_ = data.vocab
    tree = lm._build_events(data)[0] if isinstance(data, ContextEvents) else lm._build(data)[0]
    lm.tree_ = tree
    lm.n_unseen_ = lm._n_unseen(tree, data.vocab)
    lm.kn_ = estimate_tree_kn(tree, data.vocab, modified, own_orders=UNBOUNDED_OWN_ORDERS)
    lm.base_ = kneser_ney_tree_base(tree, data.vocab, lm.n_unseen_, kn=lm.kn_)
    lm.weights_ = np.zeros(tree.n_params)
    lm.lam_ = 0.0
    lm._prepare_scoring()
    return lm
