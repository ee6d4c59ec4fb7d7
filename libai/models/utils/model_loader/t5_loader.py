"""LiBai's T5 loaders: T5 / T5 v1.1 / MT5 (``t5``/``mt5`` checkpoints; ``T5Model``,
``T5ForPreTraining``).

The checkpoint's ``config.json`` selects Google's flavour of libai's T5 (relative position
bias, RMS norms, no biases, unscaled attention, the feed-forward of ``feed_forward_proj``) on
top of ``libai_cfg``; the mapping is :mod:`libai.models.pretrained.families.t5`.

The family is found from ``config.json``'s ``model_type``; these names exist so LiBai code
keeps working, and behave exactly like :class:`~libai.models.utils.model_loader.base_loader.ModelLoaderHuggerFace`.
"""
from libai.models.utils.model_loader.base_loader import ModelLoaderHuggerFace, ModelLoaderLiBai

__all__ = ["T5LoaderHuggerFace", "T5LoaderLiBai"]


class T5LoaderHuggerFace(ModelLoaderHuggerFace):
    """``T5LoaderHuggerFace(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""


class T5LoaderLiBai(ModelLoaderLiBai):
    """``T5LoaderLiBai(model, libai_cfg, pretrained_model_path, **kwargs).load()``."""
