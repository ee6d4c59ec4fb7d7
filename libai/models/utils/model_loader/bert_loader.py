"""LiBai's Bert loaders: BERT (``bert`` checkpoints: ``BertModel``, ``BertForPreTraining``, ``BertForClassification``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["BertLoaderHuggerFace", "BertLoaderLiBai"]


class BertLoaderHuggerFace(ModelLoaderHuggerFace):
    """``BertLoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class BertLoaderLiBai(ModelLoaderLiBai):
    """``BertLoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
