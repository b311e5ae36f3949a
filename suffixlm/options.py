"""The names users choose among, in one place (no heavy imports, and no click: the library
reads it; the CLIs read it at start-up for their option choices).

Both estimators speak scikit-learn's words for what they share: ``max_iter`` (cap on
iterations, epochs or passes), ``tol`` (convergence tolerance), ``n_iter_`` (iterations
done), ``converged_``. Penalty strengths keep the names of the papers and of the tools
users know: ``lam`` for the LM (Nelakanti et al.'s lambda), ``rho1`` / ``rho2`` for the
CRF (Wapiti's). Command-line flags keep SRILM's and Wapiti's spellings where users know
them; :data:`CLI_FLAGS` maps each such flag to the estimator parameter it sets.

The bounds the commands put on numbers are here too (:data:`INT32_MAX`, :data:`SEED_MAX`,
:data:`MAX_ORDER`); the click parameter types and option helpers that enforce them live
with the commands, in :mod:`suffixlm.commands.params`.
"""

from __future__ import annotations

#: Penalties of the log-linear LM (the classes are in :mod:`suffixlm.penalties`).
LM_PENALTIES = ("l1", "l2sq", "l2-tree", "linf-tree", "linf-tree-pivot")
#: Solvers of the log-linear LM (:mod:`suffixlm.solvers`).
LM_SOLVERS = ("fista", "sage")
#: Starting points of the log-linear LM.
LM_INITS = ("smoothed", "zeros")
#: Base measures of the log-linear LM (:mod:`suffixlm.base_measure`).
LM_BASES = ("none", "kn")

#: Suffix-tree constructions (:meth:`suffixlm.suffixtree.SuffixTree.build`).
TREE_METHODS = ("sort", "ukkonen")

#: command-line flag -> estimator parameter, where the two names differ.
CLI_FLAGS = {
    ("suffixlm train", "--epochs"): ("LogLinearLM", "max_iter"),
    ("suffixlm compare", "--epochs"): ("LogLinearLM", "max_iter"),
    ("suffixlm train", "--signed"): ("LogLinearLM", "positive"),
    ("suffixlm crf train", "--maxiter"): ("CRF", "max_iter"),
    ("suffixlm crf train", "--stopeps"): ("CRF", "stopeps"),
    ("suffixlm crf train", "--stopwin"): ("CRF", "stopwin"),
}


# ---------------------------------------------------------------------- bounds
#: Upper bound of counts, cut-offs and iteration caps given on the command line.
INT32_MAX = 2**31 - 1
#: Upper bound of random seeds (numba's and numpy's legacy generator take 32 bits).
SEED_MAX = 2**32 - 1
#: Largest model order the commands accept (``--order``).
MAX_ORDER = 64


def order_text(order: int | None) -> str:
    """How reports name an order: the number, or 'max'."""
    return "max" if order is None else str(order)
