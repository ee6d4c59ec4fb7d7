"""LiBai's module path for Swin: ``from libai.models.swin_transformer import SwinTransformer``.

The class lives in :mod:`libai.models.swin`; this module only re-exports it.
"""
from libai.models.swin import SwinTransformer  # noqa: F401

__all__ = ["SwinTransformer"]
