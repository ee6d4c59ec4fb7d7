"""Activation functions by name.

Configs name activations as strings (``activation="gelu"``) so that a yaml round trip keeps
them; :func:`build_activation` turns the name into a module. Every function here is a
composite of element-wise ops, so it runs on the CPU and on CUDA, on local and global tensors
(element-wise ops keep any SBP).
"""
import math
from typing import Callable, Dict, Optional

import oneflow as flow
from oneflow import nn

__all__ = [
    "gelu",
    "gelu_tanh",
    "quick_gelu",
    "relu",
    "silu",
    "Activation",
    "build_activation",
    "ACTIVATIONS",
]


def gelu(x: flow.Tensor) -> flow.Tensor:
    """Exact GELU, ``x * Φ(x)`` with the Gaussian CDF (BERT, GPT-2 in LiBai, ViT)."""
    return flow.nn.functional.gelu(x)


def gelu_tanh(x: flow.Tensor) -> flow.Tensor:
    """The tanh approximation of GELU used by the original GPT-2 code."""
    inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
    return 0.5 * x * (1.0 + flow.tanh(inner))


def quick_gelu(x: flow.Tensor) -> flow.Tensor:
    """``x * sigmoid(1.702 x)``, the cheap GELU approximation used by CLIP."""
    return x * flow.sigmoid(1.702 * x)


def relu(x: flow.Tensor) -> flow.Tensor:
    return flow.relu(x)


def silu(x: flow.Tensor) -> flow.Tensor:
    """``x * sigmoid(x)`` (also called swish)."""
    return x * flow.sigmoid(x)


def _identity(x: flow.Tensor) -> flow.Tensor:
    return x


ACTIVATIONS: Dict[str, Callable[[flow.Tensor], flow.Tensor]] = {
    "gelu": gelu,
    "gelu_tanh": gelu_tanh,
    "gelu_new": gelu_tanh,
    "quick_gelu": quick_gelu,
    "relu": relu,
    "silu": silu,
    "swish": silu,
    "tanh": flow.tanh,
    "sigmoid": flow.sigmoid,
    "identity": _identity,
}


class Activation(nn.Module):
    """An activation function as a module, remembered by name (shows in ``print(model)``)."""

    def __init__(self, name: str) -> None:
        super().__init__()
        if name not in ACTIVATIONS:
            raise ValueError(
                f"unknown activation {name!r}; choose one of {sorted(ACTIVATIONS)}"
            )
        self.name = name
        self._func = ACTIVATIONS[name]

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        return self._func(x)

    def extra_repr(self) -> str:
        return self.name


def build_activation(name: Optional[str]) -> nn.Module:
    """The activation called ``name`` as a module; ``None`` gives the identity."""
    return Activation("identity" if name is None else name)
