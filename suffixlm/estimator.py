"""scikit-learn's estimator protocol without scikit-learn: ``get_params`` / ``set_params``
read from the constructor's signature, so that ``sklearn.base.clone``, ``GridSearchCV``,
``cross_val_score`` and pipelines work on :class:`suffixlm.LogLinearLM`,
:class:`suffixlm.backoff.kn.KneserNeyLM` and :class:`crf.CRF` alike (every constructor stores
each argument unchanged under its own name, as scikit-learn requires)."""

from __future__ import annotations

import inspect


class ParamsMixin:
    """``get_params(deep=True)`` and ``set_params(**params)`` of scikit-learn's protocol."""

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return sorted(name for name, p in sig.parameters.items()
                      if name != "self" and p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD))

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters and their current values (``deep`` is accepted for
        scikit-learn: no parameter here is itself an estimator)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters (checked when the model is fitted); returns self.
        An unknown name is a ``ValueError`` naming the valid ones."""
        names = set(self._param_names())
        for key in params:
            if key not in names:
                raise ValueError(f"{type(self).__name__} has no parameter {key!r}; its parameters are "
                                 f"{', '.join(sorted(names))}")
        for key, value in params.items():
            setattr(self, key, value)
        return self

    #: whether fit needs y (the CRF's label sequences); the language models take none
    _requires_y = False

    def __sklearn_tags__(self):
        """scikit-learn's tags (scikit-learn >= 1.6 asks every estimator for them; called
        only by scikit-learn, so it is imported here): inputs are lists of sentences or
        sequences that the estimator validates itself, not arrays."""
        from sklearn.utils import InputTags, Tags, TargetTags

        return Tags(estimator_type=None, target_tags=TargetTags(required=self._requires_y),
                    input_tags=InputTags(two_d_array=False, string=True), no_validation=True)
