"""LiBai's module path for RoBERTa: ``from libai.models.roberta_model import RobertaModel``.

The classes live in :mod:`libai.models.roberta`; this module only re-exports them.
"""
from libai.models.roberta import (  # noqa: F401
    RobertaEmbeddings,
    RobertaForCausalLM,
    RobertaForPreTraining,
    RobertaLMHead,
    RobertaModel,
)

__all__ = ["RobertaEmbeddings", "RobertaForCausalLM", "RobertaForPreTraining", "RobertaLMHead",
           "RobertaModel"]
