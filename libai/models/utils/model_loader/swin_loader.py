"""LiBai's Swin loaders: Swin V1 (``swin`` checkpoints: ``SwinTransformer``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["SwinLoaderHuggerFace", "SwinLoaderLiBai"]


class SwinLoaderHuggerFace(ModelLoaderHuggerFace):
    """``SwinLoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class SwinLoaderLiBai(ModelLoaderLiBai):
    """``SwinLoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
