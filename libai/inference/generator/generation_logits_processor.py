"""LiBai's ``generation_logits_processor`` module path (the processors live in
:mod:`libai.models.utils.generation.processors`)."""
from libai.models.utils.generation.processors import (
    LogitsProcessor,
    LogitsProcessorList,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
)

__all__ = [
    "LogitsProcessor",
    "LogitsProcessorList",
    "RepetitionPenaltyLogitsProcessor",
    "TemperatureLogitsWarper",
    "TopKLogitsWarper",
    "TopPLogitsWarper",
]
