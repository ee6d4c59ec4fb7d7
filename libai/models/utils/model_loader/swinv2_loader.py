"""LiBai's SwinV2 loaders: Swin V2 (``swinv2`` checkpoints: ``SwinTransformerV2``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["SwinV2LoaderHuggerFace", "SwinV2LoaderLiBai"]


class SwinV2LoaderHuggerFace(ModelLoaderHuggerFace):
    """``SwinV2LoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class SwinV2LoaderLiBai(ModelLoaderLiBai):
    """``SwinV2LoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
