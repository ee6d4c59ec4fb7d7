"""LiBai's ViT loaders: ViT (``vit`` checkpoints: ``VisionTransformer``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["ViTLoaderHuggerFace", "ViTLoaderLiBai"]


class ViTLoaderHuggerFace(ModelLoaderHuggerFace):
    """``ViTLoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class ViTLoaderLiBai(ModelLoaderLiBai):
    """``ViTLoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
