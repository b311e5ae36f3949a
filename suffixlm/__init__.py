"""suffixlm: log-linear n-gram language models on suffix trees with structured penalties.

``suffixlm.LogLinearLM`` and ``suffixlm.KneserNeyLM`` are the two estimators
(:mod:`suffixlm.model`, :mod:`suffixlm.backoff.kn`). ``suffixlm.Model(path)`` loads an ARPA
file or a suffixlm model file with KenLM's query API (``score``, ``full_scores``,
``perplexity``, ``State``, ``BaseScore``, ...; see :mod:`suffixlm.query`)."""

__version__ = "0.1.0"

# First: OMP_WAIT_POLICY=PASSIVE unless set, before numba's threading layer loads (docs/threads.md)
from . import threads as _threads  # noqa: E402, F401


def __getattr__(name):
    # lazy: importing suffixlm stays cheap (the CLI starts without numba)
    if name in ("Model", "LanguageModel"):
        from .load import Model

        return Model
    if name == "KneserNeyLM":
        from .backoff.kn import KneserNeyLM

        return KneserNeyLM
    if name == "LogLinearLM":
        from .model import LogLinearLM

        return LogLinearLM
    if name == "install_as_kenlm":
        from .query import install_as_kenlm

        return install_as_kenlm
    if name in ("State", "FullScoreReturn"):
        from . import query

        return getattr(query, name)
    raise AttributeError(f"module 'suffixlm' has no attribute {name!r}")
