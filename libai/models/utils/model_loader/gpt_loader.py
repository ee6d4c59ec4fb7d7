"""LiBai's GPT2 loaders: GPT-2 (``gpt2`` checkpoints: ``GPTModel``, ``GPTForPreTraining``).

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["GPT2LoaderHuggerFace", "GPT2LoaderLiBai"]


class GPT2LoaderHuggerFace(ModelLoaderHuggerFace):
    """``GPT2LoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class GPT2LoaderLiBai(ModelLoaderLiBai):
    """``GPT2LoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
