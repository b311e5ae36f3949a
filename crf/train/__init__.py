"""Training algorithms for linear-chain CRFs (``crf.CRF(algorithm=...)`` picks one; every
name and every fact about each, such as its default cap, penalty, checkpoint state and
whether it runs on Dask, is one row of the table in :mod:`crf.solvers`, and each module
here defines the ``train_crf(run)`` that row calls).

- :func:`owlqn` — OWL-QN for l1 / elastic-net penalties (Andrew & Gao 2007);
- :func:`lbfgs` — L-BFGS for the l2 penalty (OWL-QN with rho1 = 0);
- :mod:`.sgd_l1` — SGD with the cumulative l1 penalty (Tsuruoka et al. 2009);
- :mod:`.bcd` — block coordinate descent (Lavergne et al. 2010);
- :mod:`.sag` — SAG and SAG-NUS* (Schmidt et al.);
- :mod:`.perceptron` — the averaged perceptron (Collins 2002; CRFsuite's ``ap``);
- :mod:`.proximal` — FISTA with l1 or tree penalties, incremental feature sets;
- :mod:`.l2sgd` — CRFsuite's SGD with l2 and its calibrated learning rate;
- :mod:`.online` — CRFsuite's passive-aggressive (``pa``) and AROW (``arow``).
"""

from .owlqn import IterationInfo, OptimizeResult, OwlqnState, lbfgs, owlqn

__all__ = ["lbfgs", "owlqn", "IterationInfo", "OptimizeResult", "OwlqnState"]
