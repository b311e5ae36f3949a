"""The names users choose among, in one place (no heavy imports: the CLIs read it at
start-up for their option choices).

Both estimators speak scikit-learn's words for what they share: ``max_iter`` (cap on
iterations, epochs or passes), ``tol`` (convergence tolerance), ``n_iter_`` (iterations
done), ``converged_``. Penalty strengths keep the names of the papers and of the tools
users know: ``lam`` for the LM (Nelakanti et al.'s lambda), ``rho1`` / ``rho2`` for the
CRF (Wapiti's). Command-line flags keep SRILM's and Wapiti's spellings where users know
them; :data:`CLI_FLAGS` maps each such flag to the estimator parameter it sets.

The command-line parameter types shared by every command are here too, so that a bad
value is refused the same way everywhere, as a click usage error before any work:
:class:`FiniteFloat` (click's ``FloatRange`` lets ``nan``, ``inf`` and ``-inf``
through), the integer bounds :data:`INT32_MAX` (counts, cut-offs, iterations: the
kernels hold them in 32 or 64 bits) and :data:`SEED_MAX`, and
:func:`check_output` (an output that is an input, or that cannot be written, fails
before the work that would produce it).
"""

from __future__ import annotations

import math

import click

#: Penalties of the log-linear LM (the classes are in :mod:`suffixlm.penalties`).
LM_PENALTIES = ("l1", "l2sq", "l2-tree", "linf-tree", "linf-tree-pivot")
#: Solvers of the log-linear LM (:mod:`suffixlm.solvers`).
LM_SOLVERS = ("fista", "sage")
#: Starting points of the log-linear LM.
LM_INITS = ("smoothed", "zeros")
#: Base measures of the log-linear LM (:mod:`suffixlm.base`).
LM_BASES = ("none", "kn")

#: CRF training algorithms (:mod:`crf.train`).
CRF_ALGORITHMS = ("owlqn", "lbfgs", "sgd-l1", "bcd", "sag", "sag-nus", "perceptron", "fista")
#: CRF penalties: l1, or a tree penalty on the nested-window features (needs fista).
CRF_PENALTIES = ("l1", "l2-tree", "linf-tree")
#: CRF algorithms for the l2 penalty only.
CRF_L2_ONLY = ("lbfgs", "sag", "sag-nus")

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


# ---------------------------------------------------------------------- parameter types
#: Upper bound of counts, cut-offs and iteration caps given on the command line.
INT32_MAX = 2**31 - 1
#: Upper bound of random seeds (numba's and numpy's legacy generator take 32 bits).
SEED_MAX = 2**32 - 1
#: Largest model order the commands accept (``--order``).
MAX_ORDER = 64


class FiniteFloat(click.FloatRange):
    """A float option that must be finite (``nan``, ``inf`` and ``-inf`` are refused) and,
    optionally, within ``[min, max]`` (``min_open`` / ``max_open``: strict bounds)."""

    name = "float"

    def convert(self, value, param, ctx):
        rv = click.FLOAT.convert(value, param, ctx)
        if not math.isfinite(rv):
            self.fail(f"{value!r} is not a finite number.", param, ctx)
        return super().convert(rv, param, ctx)


def check_output(output, inputs=()) -> None:
    """Before any work: refuse (``click.ClickException``, one line) an ``output`` that is
    one of ``inputs`` or that cannot be written (its directory is missing, is not a
    directory or refuses a new file; ``output`` is a directory). ``-`` (stdout) passes."""
    from .io import check_not_input, check_writable, write_error_message

    if output is None or str(output) == "-":
        return
    try:
        check_not_input(output, inputs)
    except ValueError as e:
        raise click.ClickException(str(e)) from None
    try:
        check_writable(output)
    except OSError as e:
        raise click.ClickException(write_error_message(output, e)) from None
