"""Training algorithms for linear-chain CRFs.

- :func:`owlqn` — OWL-QN for l1 / elastic-net penalties (Andrew & Gao 2007);
- :func:`lbfgs` — L-BFGS for the l2 penalty (OWL-QN with rho1 = 0).
"""

from .owlqn import IterationInfo, OptimizeResult, OwlqnState, lbfgs, owlqn

__all__ = ["lbfgs", "owlqn", "IterationInfo", "OptimizeResult", "OwlqnState"]
