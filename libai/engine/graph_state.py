"""One checkpoint format for both modes: the optimizer state a training graph holds, presented
in (and loaded from) the eager optimizer's ``state_dict`` format.

In Graph mode OneFlow keeps the optimizer's moments inside the graph, as variables named
``<attr>.<param name>-<slot>`` (``-m``/``-v`` for Adam-style optimizers, ``-momentum`` for SGD,
``-mean_square`` for RMSprop) plus a step counter ``System-Train-TrainStep`` that also drives the
compiled LR schedule; the eager optimizer's own state stays empty. Translating both ways makes
checkpoints interchangeable: save in Graph mode and resume in Eager mode, or the reverse.
"""
from typing import Any, Dict, List, Mapping, Tuple

import oneflow as flow

from libai.utils.distributed import ttol

__all__ = ["GraphOptimizerState", "TRAIN_STEP_KEY"]

TRAIN_STEP_KEY = "System-Train-TrainStep"

# eager optimizer state slot -> graph variable suffix
_SLOTS: Dict[str, str] = {
    "exp_avg": "m",
    "exp_avg_sq": "v",
    "momentum_buf": "momentum",
    "square_avg": "mean_square",
}


class GraphOptimizerState:
    """Checkpointable view of a training graph's optimizer state.

    Args:
        graph: the training ``nn.Graph`` (its model attribute is named ``attr``).
        optimizer: the eager optimizer the graph was built with (param groups, options).
        model: the eager model, to name each parameter.
        attr: the graph attribute holding the model (``GraphBase`` uses ``"model"``).
    """

    def __init__(self, graph: flow.nn.Graph, optimizer: flow.optim.Optimizer,
                 model: flow.nn.Module, attr: str = "model") -> None:
        self.graph = graph
        self.optimizer = optimizer
        self.attr = attr
        names = {id(p): n for n, p in model.named_parameters()}
        self._ordered: List[Tuple[int, str]] = []
        index = 0
        for group in optimizer.param_groups:
            for p in group.parameters:
                if id(p) not in names:
                    raise ValueError("the optimizer holds a parameter that is not in the model")
                self._ordered.append((index, names[id(p)]))
                index += 1

    def _key(self, name: str, slot: str) -> str:
        return f"{self.attr}.{name}-{_SLOTS[slot]}"

    def state_dict(self) -> Dict[str, Any]:
        result = self.optimizer.state_dict()
        graph_state = self.graph.state_dict()
        if TRAIN_STEP_KEY not in graph_state:
            return result  # the graph has not run yet: nothing beyond the eager state
        state: Dict[Any, Any] = {"step": int(ttol(graph_state[TRAIN_STEP_KEY]).numpy().reshape(-1)[0])}
        for index, name in self._ordered:
            entry = {}
            for slot in _SLOTS:
                key = self._key(name, slot)
                if key in graph_state:
                    entry[slot] = graph_state[key]
            state[index] = entry
        result["state"] = state
        return result

    def load_state_dict(self, state_dict: Mapping[str, Any]) -> None:
        """Load eager-format optimizer state into the eager optimizer (options) and into the
        graph's variables (moments, step). Works before the graph is compiled."""
        state = state_dict.get("state", {})
        options_only = dict(state_dict)
        options_only["state"] = {}
        self.optimizer.load_state_dict(options_only)
        graph_vars: Dict[str, Any] = {}
        for index, name in self._ordered:
            for slot, tensor in state.get(index, {}).items():
                if slot not in _SLOTS:
                    raise ValueError(
                        f"optimizer state slot {slot!r} has no Graph-mode counterpart; resume this "
                        "checkpoint in Eager mode (graph.enabled=False) or with an Adam/AdamW/SGD/RMSprop optimizer"
                    )
                graph_vars[self._key(name, slot)] = tensor
        if "step" in state:
            graph_vars[TRAIN_STEP_KEY] = flow.tensor([int(state["step"])], dtype=flow.int64)
        if graph_vars:
            self.graph.load_state_dict(graph_vars, strict=False)
