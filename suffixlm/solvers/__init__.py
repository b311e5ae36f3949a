"""Solvers for  min_w f(w) + lam * Omega(w)  subject to w >= 0.

``f`` is smooth (a mean log-loss), ``Omega`` a penalty with a cheap proximal operator.
Both solvers work in a weighted metric ``<a, b> = sum_i metric[i] a[i] b[i]`` so that
a coordinate standing for ``metric[i]`` identical trie coordinates (a collapsed
suffix-tree node) behaves exactly like those coordinates in the expanded trie:
gradients are given per trie coordinate and the prox acts on trie values.

* ``fista``: full-batch FISTA with backtracking (Beck & Teboulle 2009), the reference.
* ``sage``: Algorithm 1 of Nelakanti et al. 2013 (accelerated stochastic proximal
  gradient of Hu, Kwok & Pan 2009) over mini-batches.
"""

from ._problem import SmoothProblem, SolverResult
from .fista import fista
from .sage import sage

__all__ = ["SmoothProblem", "SolverResult", "fista", "sage"]
