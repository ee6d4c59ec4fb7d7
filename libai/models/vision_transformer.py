"""LiBai's module path for ViT: ``from libai.models.vision_transformer import VisionTransformer``
(projects subclass ``libai.models.vision_transformer.VisionTransformer``).

The class lives in :mod:`libai.models.vit`; this module only re-exports it.
"""
from libai.models.vit import VisionTransformer  # noqa: F401

__all__ = ["VisionTransformer"]
