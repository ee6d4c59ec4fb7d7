"""Model utilities: the static-graph wrapper."""
from libai.models.utils.graph_base import GraphBase

__all__ = ["GraphBase"]
