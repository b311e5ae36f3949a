"""The size of a CRF before it is trained: its feature count and the memory its training
needs, checked against a limit during and after the observation pass, before any weight
vector is made (``CRF(max_features=...)``, ``suffixlm crf train --max-features``).

Features: every unigram observation owns L weights, every bigram observation L*L
(:mod:`crf.features`). Memory, estimated from the algorithm's own arrays:

* per feature, the weights and the solver's vectors (:func:`vector_bytes`): OWL-QN and
  L-BFGS keep the start point, x, the smooth gradients at x and at the trial point, a
  dense direction and trial point when the direction is not sparse (all float64), and
  ``history`` pairs (y dense float32, s sparse: up to an int32 and a float32 a weight);
* the work arrays of the forward-backward, per thread, and the gradient's batch rows
  (:func:`work_bytes`): rows of L per token, and, with bigram patterns, rows of L*L per
  token (the transition matrices, the pair marginals; none without bigram patterns);
* the observation strings (:data:`OBSERVATION_BYTES` each, the dictionary of the pass
  included) and the encoded corpus (an int64 per token and pattern).

The default limit is half of :func:`suffixlm.memory.memory_limit` (the least of the
machine's memory, the cgroup's limit and ``ulimit -v``); with ``max_features`` the limit
is that many features instead. The count is checked after every pattern of the pass
(the features counted so far are a lower bound: a pattern file asking for 100 million
features is refused as soon as the limit is passed, not after the pass), then exactly
at its end.
"""

from __future__ import annotations

from suffixlm.memory import human_bytes, memory_limit

__all__ = ["FeatureBudget", "TooManyFeatures", "vector_bytes", "work_bytes"]

#: bytes of observation string, its dictionary entry and its id arrays, per observation
OBSERVATION_BYTES = 160
#: the part of ``memory_limit()`` a model may take by default
DEFAULT_SHARE = 0.5


class TooManyFeatures(ValueError):
    """The patterns and labels give more features than the limit (the message gives the
    estimate and what to change)."""


def vector_bytes(algorithm: str, history: int = 5) -> int:
    """Bytes per feature of the weights and the solver's vectors (see the module doc)."""
    if algorithm in ("owlqn", "lbfgs"):
        return 8 * 6 + 4 + 12 * int(history)  # x0, x, sg, sg_new, d, x_new; s work row; y + sparse s
    if algorithm == "fista":
        return 8 * 7 + 8 * 4  # x0, x, y, gradient, x_new, prox work, model; the forest (int64 arrays)
    if algorithm == "sgd-l1":
        return 8 * 5  # x0, w, q, lastc, g
    if algorithm in ("sag", "sag-nus"):
        return 8 * 5  # x0, w, d, last (int64), g
    if algorithm == "bcd":
        return 8 * 2  # x0, w
    if algorithm == "l2sgd":
        return 8 * 5  # x0, w, the scaled weights, the gradient, the best weights
    if algorithm == "pa":
        return 8 * 5 + 1  # x0, w, ws, the averaged copy, the difference vector and its flags
    if algorithm == "arow":
        return 8 * 5 + 1  # x0, mean, cov, a copy of the mean, the difference vector and its flags
    return 8 * 4  # perceptron: x0, w, wa, w0


def work_bytes(n_labels: int, n_bigram_patterns: int, max_len: int, n_tokens: int, algorithm: str,
               n_threads: int) -> int:
    """Bytes of the work arrays of training (see the module doc)."""
    L = int(n_labels)
    L2 = L * L if n_bigram_patterns > 0 else 1
    T = max(int(max_len), 1)
    fb = 8 * (4 * T * L + T + L)  # U, eU, alpha, beta, scale, tmp
    if algorithm in ("owlqn", "lbfgs", "fista"):
        # the sparse recursion (S, mark, m_idx, m_val) or the dense one (psi), the larger,
        # and the pair row, per thread; the batch rows of the gradient
        fb += 8 * max(2 * L2 + 2 * T * L2, T * L2) + 8 * L2
        batch = max(1 << 20, 8 * T * (L + (L2 if n_bigram_patterns > 0 else 0)))
        return int(n_threads) * fb + batch + 8 * T * L
    fb += 8 * T * L2 + 8 * L2  # psi, the pair row (one thread)
    if algorithm in ("sag", "sag-nus"):  # the stored marginals: L per token, L*L per bigram block
        fb += 8 * int(n_tokens) * (L + (int(n_bigram_patterns) * L2 if n_bigram_patterns > 0 else 0))
    return fb


class FeatureBudget:
    """The limit on a model's size and the check of it (``check``), for a training set of
    ``n_labels`` labels, sequences of up to ``max_len`` tokens (``n_tokens`` in all),
    ``n_patterns`` patterns of which ``n_bigram_patterns`` have bigram features.

    max_features: the most features allowed (None: as many as fit in ``memory``, default
    half of :func:`suffixlm.memory.memory_limit`)."""

    def __init__(self, n_labels: int, n_patterns: int, n_bigram_patterns: int, max_len: int, n_tokens: int,
                 algorithm: str = "owlqn", history: int = 5, n_threads: int = 1, max_features: int | None = None,
                 memory: tuple[int, str] | None = None, seen_states: bool = False):
        self.L = int(n_labels)
        self.seen_states = bool(seen_states)
        self.n_patterns = int(n_patterns)
        self.n_tokens = int(n_tokens)
        self.max_features = max_features
        self.per_feature = vector_bytes(algorithm, history)
        self.work = work_bytes(n_labels, n_bigram_patterns, max_len, n_tokens, algorithm, n_threads)
        threads = "" if algorithm not in ("owlqn", "lbfgs", "fista") else f", {int(n_threads)} thread(s)"
        self.work_note = (f"{self.L:,}^2 label pairs a token" if n_bigram_patterns > 0 else
                          f"{self.L:,} labels a token") + f", sequences of up to {int(max_len):,} tokens{threads}"
        self.corpus = 8 * self.n_tokens * self.n_patterns
        if memory is None:
            total, source = memory_limit()
            memory = (int(total * DEFAULT_SHARE), f"half of {source}, {human_bytes(total)}")
        self.memory, self.memory_source = memory

    def n_features(self, n_unigram_obs: int, n_bigram_obs: int, n_trigram_obs: int = 0) -> int:
        """The features of these observations: L per unigram observation, or with seen states
        at most one per occurrence (a token and a pattern), L^2 and L^3 for the others."""
        n_u = int(n_unigram_obs) * self.L
        if self.seen_states:
            n_u = min(n_u, self.n_tokens * self.n_patterns)
        return n_u + int(n_bigram_obs) * self.L * self.L + int(n_trigram_obs) * self.L ** 3

    def bytes(self, n_features: int, n_obs: int) -> int:
        """The estimated memory of training a model of that many features and observations."""
        return n_features * self.per_feature + n_obs * OBSERVATION_BYTES + self.work + self.corpus

    def check(self, n_unigram_obs: int, n_bigram_obs: int, n_obs: int, done: int | None = None,
              n_trigram_obs: int = 0) -> int:
        """The feature count of ``n_unigram_obs`` unigram, ``n_bigram_obs`` bigram and
        ``n_trigram_obs`` trigram observations (``n_obs`` distinct strings);
        ``TooManyFeatures`` when it passes the limit. ``done``: the patterns expanded so far,
        during the observation pass (the counts are then lower bounds); None: the pass is
        over, the counts exact."""
        n = self.n_features(n_unigram_obs, n_bigram_obs, n_trigram_obs)
        need = self.bytes(n, n_obs)
        if self.max_features is not None:
            if n <= self.max_features:
                return n
            over = f"more than max_features = {self.max_features:,} (--max-features)"
        else:
            if need <= self.memory:
                return n
            over = f"more than the limit of {human_bytes(self.memory)} ({self.memory_source})"
        L = self.L
        parts = []
        if n_unigram_obs:
            parts.append(f"{n_unigram_obs:,} unigram observations x {L:,} labels" if not self.seen_states else
                         f"{n_unigram_obs:,} unigram observations with the labels seen, at most "
                         f"{self.n_features(n_unigram_obs, 0):,}")
        if n_bigram_obs:
            parts.append(f"{n_bigram_obs:,} bigram observations x {L:,}^2 label pairs")
        if n_trigram_obs:
            parts.append(f"{n_trigram_obs:,} trigram observations x {L:,}^3 label triples")
        what = " + ".join(parts) or "no observation"
        at_least = "" if done is None else "at least "
        so_far = "" if done is None else f", from the first {done:,} of {self.n_patterns:,} patterns"
        raise TooManyFeatures(
            f"the patterns give {at_least}{n:,} features ({what}{so_far}): training needs about "
            f"{human_bytes(need)} (weights and solver vectors {human_bytes(n * self.per_feature)}, work arrays "
            f"{human_bytes(self.work)}: {self.work_note}; observations and corpus {human_bytes(n_obs * OBSERVATION_BYTES + self.corpus)})"
            f", {over}; use fewer patterns, rarer observations or fewer labels, or raise max_features "
            f"(--max-features N)")
