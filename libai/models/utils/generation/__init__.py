"""Text generation for libai's causal and encoder-decoder models (``model.generate``).

See :mod:`~libai.models.utils.generation.mixin` for the design and the model hooks, and
docs/generate_and_predict.md for usage.
"""
from libai.models.utils.generation.beam_search import BeamSearch
from libai.models.utils.generation.mixin import GenerationMixin
from libai.models.utils.generation import processors
from libai.models.utils.generation.processors import *  # noqa: F401,F403  (its __all__, listed once)

__all__ = ["BeamSearch", "GenerationMixin", *processors.__all__]
