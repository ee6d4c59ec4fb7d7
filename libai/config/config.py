"""LiBai's module path of ``configurable``: ``from libai.config.config import configurable``.

The pieces live in :mod:`libai.config.configurable`, :mod:`libai.config.paths` and
:mod:`libai.config.builtin`; this module only re-exports them.
"""
from libai.config.builtin import get_config  # noqa: F401
from libai.config.configurable import configurable  # noqa: F401
from libai.config.paths import try_get_key  # noqa: F401

__all__ = ["configurable", "get_config", "try_get_key"]
