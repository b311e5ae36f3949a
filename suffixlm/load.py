"""Load any language model file: an ARPA file (plain or gzip) or a suffixlm model file."""

from __future__ import annotations

import os


def load_model(path: str | os.PathLike, arpa: bool = False, only_for=None):
    """An ARPA file (``arpa=True``, or recognised by its content) as a
    :class:`suffixlm.arpa.BackoffLM`, else a suffixlm log-linear model file. For ARPA
    files, ``only_for`` (sentences as token lists) keeps just the n-grams those
    sentences can use. Raises ``ArpaError`` / ``ModelFormatError`` (both ``ValueError``)
    or ``OSError`` naming the file."""
    from .arpa import BackoffLM, is_arpa_file

    if arpa or is_arpa_file(path):
        return BackoffLM.read_arpa(path, only_for=only_for)
    from .model import LogLinearLM

    return LogLinearLM.load(path)


def Model(path: str | os.PathLike):
    """KenLM's ``kenlm.Model(path)``: any model file, with KenLM's query API
    (:mod:`suffixlm.query`)."""
    return load_model(path)
