"""crf: linear-chain conditional random fields at Wapiti scale."""

from .model import CRF, ModelError

__all__ = ["CRF", "ModelError"]
