"""LiBai's T5 loaders: T5 / MT5 (``t5``/``mt5`` checkpoints; the family mapping is not in libai yet: ``load()`` says so).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["T5LoaderHuggerFace", "T5LoaderLiBai"]


class T5LoaderHuggerFace(ModelLoaderHuggerFace):
    """``T5LoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class T5LoaderLiBai(ModelLoaderLiBai):
    """``T5LoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
