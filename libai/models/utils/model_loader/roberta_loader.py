"""LiBai's Roberta loaders: RoBERTa (``roberta`` checkpoints: ``RobertaModel``, ``RobertaForPreTraining``, ``RobertaForCausalLM``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["RobertaLoaderHuggerFace", "RobertaLoaderLiBai"]


class RobertaLoaderHuggerFace(ModelLoaderHuggerFace):
    """``RobertaLoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class RobertaLoaderLiBai(ModelLoaderLiBai):
    """``RobertaLoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
