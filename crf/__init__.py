"""crf: linear-chain conditional random fields at Wapiti scale.

``from crf import CRF`` (the estimator, :mod:`crf.model`). The package imports its
modules lazily, so that the ``suffixlm crf`` command group loads without numpy.
"""

__all__ = ["CRF", "ModelError", "Tagger"]


def __getattr__(name):
    if name in __all__:
        from . import model

        return getattr(model, name)
    raise AttributeError(f"module 'crf' has no attribute {name!r}")
