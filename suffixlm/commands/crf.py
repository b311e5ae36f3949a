"""``suffixlm crf ...``: linear-chain CRFs (the group lives in :mod:`crf.cli`)."""

from crf.cli import command

__all__ = ["command"]
