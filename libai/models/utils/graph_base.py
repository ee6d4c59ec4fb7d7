"""LiBai's module path of ``GraphBase``: ``from libai.models.utils.graph_base import GraphBase``.

The class lives in the engine (:mod:`libai.engine.graph`); :mod:`libai.models.utils` hands it
out on first use (the layering's one sanctioned upward import), and so does this module, through
that package, so importing it does not load the engine.
"""
from typing import Any

__all__ = ["GraphBase"]


def __getattr__(name: str) -> Any:
    if name == "GraphBase":
        from libai import models

        return models.utils.GraphBase
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
