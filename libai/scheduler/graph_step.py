"""Resuming a schedule that is compiled into an ``nn.Graph``.

Why this exists: once a scheduler is given to ``graph.add_optimizer(opt, lr_sch=sch)``, the
graph computes the lr from its *own* step counter (the graph state ``System-Train-TrainStep``),
not from ``sch.last_step``. Loading a scheduler's state therefore does not move a graph's
schedule; a resumed graph run would restart its warmup at iteration 0. Setting that counter
before the graph's first call does (checked with OneFlow 0.9.0, one process and two).
"""
from typing import Any

import oneflow as flow

__all__ = ["GRAPH_TRAIN_STEP_KEY", "set_graph_schedule_step"]

GRAPH_TRAIN_STEP_KEY = "System-Train-TrainStep"


def set_graph_schedule_step(graph: Any, iteration: int) -> None:
    """Make ``graph``'s compiled lr schedule start at ``iteration`` (the resumed start_iter).

    Must be called before the graph's first call (OneFlow only loads graph state then). The
    counter is given as a local tensor; OneFlow places it itself, in one process or several.
    """
    if not isinstance(graph, flow.nn.Graph):
        raise TypeError(f"set_graph_schedule_step needs an oneflow.nn.Graph, got {type(graph).__name__}")
    if isinstance(iteration, bool) or not isinstance(iteration, int) or iteration < 0:
        raise ValueError(f"iteration must be a non-negative int, got {iteration!r}")
    if getattr(graph, "_is_compiled", False):
        raise RuntimeError(
            "the graph has already run, so its step counter can no longer be set; call "
            "set_graph_schedule_step(graph, start_iter) right after building the graph"
        )
    step = flow.tensor([iteration], dtype=flow.int64)
    graph.load_state_dict({GRAPH_TRAIN_STEP_KEY: step}, strict=False)
