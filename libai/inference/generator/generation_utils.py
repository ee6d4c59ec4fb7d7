"""LiBai's ``generation_utils``: ``Generator`` is the models' generation mixin.

LiBai models inherit ``Generator`` to gain ``generate``; here that is
:class:`~libai.models.utils.generation.GenerationMixin` (libai's own models already have it).
"""
from libai.models.utils.generation import GenerationMixin, LogitsProcessorList

#: LiBai's name of the mixin that gives a model ``generate``.
Generator = GenerationMixin

__all__ = ["Generator", "GenerationMixin", "LogitsProcessorList"]
