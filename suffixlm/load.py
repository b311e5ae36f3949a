"""Load any language model file: an ARPA file (plain or gzip), a suffixlm model file or
a suffixlm binary model (``suffixlm build-binary``)."""

from __future__ import annotations

import os
import stat


def _regular_head(path, n: int) -> bytes | None:
    """The first ``n`` bytes of ``path`` when it is a regular file (None for a pipe or a
    device, which must not be read twice); ``OSError`` naming the file if it cannot be
    opened (missing, a directory, no permission), as kenlm raises."""
    if os.fspath(path) == "-":
        return None
    st = os.stat(path)
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(21, "Is a directory", os.fspath(path))
    if not stat.S_ISREG(st.st_mode):
        return None
    with open(path, "rb") as f:
        return f.read(n)


def is_binary_model(path) -> bool:
    """Whether ``path`` is a regular file that starts as a suffixlm binary model (False
    when it cannot be read: loading it says why)."""
    from .backoff.binary import MAGIC

    try:
        return _regular_head(path, len(MAGIC)) == MAGIC
    except OSError:
        return False


def load_model(path: str | os.PathLike, arpa: bool = False, only_for=None):
    """A suffixlm binary model (:class:`suffixlm.backoff.binary.BinaryLM`, memory-mapped), an
    ARPA file (``arpa=True``, or recognised by its content) as a
    :class:`suffixlm.backoff.arpa.BackoffLM`, else a suffixlm log-linear model file. For ARPA
    files, ``only_for`` (sentences as token lists) keeps just the n-grams those
    sentences can use. Raises ``OSError`` naming the file when it cannot be read, and
    ``ArpaError`` / ``ModelFormatError`` / ``BinaryFormatError`` (all ``ValueError``)
    when its content is not a valid model."""
    from .backoff.binary import MAGIC

    head = _regular_head(path, len(MAGIC))
    if head is not None and head == MAGIC:
        from .backoff.binary import BinaryLM

        if arpa:
            raise ValueError(f"{path}: a suffixlm binary model, not an ARPA file (give it as MODEL, without --arpa)")
        return BinaryLM(path)
    from .backoff.arpa import BackoffLM, is_arpa_file

    if arpa or is_arpa_file(path):
        return BackoffLM.read_arpa(path, only_for=only_for)
    from .model import LogLinearLM

    return LogLinearLM.load(path)


def Model(path: str | os.PathLike):
    """KenLM's ``kenlm.Model(path)``: any model file (ARPA, suffixlm model file, binary
    model), with KenLM's query API (:mod:`suffixlm.query`) and ``path``. ``OSError`` if
    the file cannot be read (as kenlm), ``ValueError`` if it is not a model."""
    model = load_model(path)
    model.path = os.fspath(path)
    return model


#: kenlm's older name of ``Model``
LanguageModel = Model
