"""LiBai's module path for GPT-2: ``from libai.models.gpt_model import GPTModel, GPTLoss``.

The classes live in :mod:`libai.models.gpt` (``GPTLoss`` in :mod:`libai.models.common.losses`);
this module only re-exports them.
"""
from libai.models.common.losses import GPTLoss  # noqa: F401
from libai.models.gpt import GPTForPreTraining, GPTModel  # noqa: F401

__all__ = ["GPTForPreTraining", "GPTLoss", "GPTModel"]
