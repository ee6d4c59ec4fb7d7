"""Text generation for libai's causal and encoder-decoder models (``model.generate``).

See :mod:`~libai.models.utils.generation.mixin` for the design and the model hooks, and
docs/generate_and_predict.md for usage.
"""
from libai.models.utils.generation.beam_search import BeamSearch
from libai.models.utils.generation.mixin import GenerationMixin
from libai.models.utils.generation.processors import (
    LogitsProcessor,
    LogitsProcessorList,
    MinLengthLogitsProcessor,
    RepetitionPenaltyLogitsProcessor,
    TemperatureLogitsWarper,
    TopKLogitsWarper,
    TopPLogitsWarper,
    build_processors,
)

__all__ = [
    "BeamSearch",
    "GenerationMixin",
    "LogitsProcessor",
    "LogitsProcessorList",
    "MinLengthLogitsProcessor",
    "RepetitionPenaltyLogitsProcessor",
    "TemperatureLogitsWarper",
    "TopKLogitsWarper",
    "TopPLogitsWarper",
    "build_processors",
]
