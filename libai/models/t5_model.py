"""LiBai's module path for T5: ``from libai.models.t5_model import T5Model, T5Loss``.

The classes live in :mod:`libai.models.t5` (``T5Loss`` in :mod:`libai.models.common.losses`);
this module only re-exports them.
"""
from libai.models.common.losses import T5Loss  # noqa: F401
from libai.models.t5 import T5ForPreTraining, T5Model  # noqa: F401

__all__ = ["T5ForPreTraining", "T5Loss", "T5Model"]
