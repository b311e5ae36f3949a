"""The optimisation layer of both packages.

Problems are  min_w f(w) + Omega(w)  with f smooth and Omega a penalty object of
:mod:`suffixlm.penalties` (value and ``prox(x, step)``; its ``nonneg`` flag adds the
constraint w >= 0). Every solver, here and in :mod:`crf.train`, returns an
:class:`OptimizeResult`, reports one :class:`IterationInfo` per iteration and calls
``callback(info, x)`` (:mod:`suffixlm.solvers.result`); the stopping rules live in
:mod:`suffixlm.solvers.stopping`; a solver's state at the end of an iteration, for
checkpoints, in :mod:`suffixlm.solvers.state` (``state=`` to go on from one,
``checkpoint=`` to be handed one every iteration).

* ``fista``: full-batch FISTA with backtracking and adaptive restart (Beck & Teboulle
  2009), in a metric per coordinate: the LM's default solver and the CRF's proximal one.
* ``sage``: Algorithm 1 of Nelakanti et al. 2013 (accelerated stochastic proximal
  gradient of Hu, Kwok & Pan 2009) over mini-batches.

The metric ``<a, b> = sum_i metric[i] a[i] b[i]`` lets a coordinate standing for
``metric[i]`` identical trie coordinates (a collapsed suffix-tree node) behave exactly
like those coordinates in the expanded trie.
"""

from ._problem import SmoothProblem
from .fista import FistaState, fista
from .result import Callback, IterationInfo, OptimizeResult
from .sage import SageState, sage
from .stopping import RelativeDecrease, WindowRule

__all__ = ["Callback", "FistaState", "IterationInfo", "OptimizeResult", "RelativeDecrease", "SageState",
           "SmoothProblem", "WindowRule", "fista", "sage"]
