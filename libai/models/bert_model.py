"""LiBai's module path for BERT: ``from libai.models.bert_model import BertModel``.

The classes live in :mod:`libai.models.bert`; this module only re-exports them.
"""
from libai.models.bert import (  # noqa: F401
    BertForClassification,
    BertForPreTraining,
    BertModel,
    BertPreTrainingHeads,
)

__all__ = ["BertForClassification", "BertForPreTraining", "BertModel", "BertPreTrainingHeads"]
