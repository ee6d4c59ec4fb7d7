"""Weight initialisers for transformer models.

Each returns a function that fills a tensor in place, the form libai layers take as
``init_method``. Layers call it on the *full* parameter before sharding it, so the result does
not depend on the parallel layout.
"""
import math
from typing import Callable

import oneflow as flow
from oneflow import nn

__all__ = ["init_method_normal", "scaled_init_method_normal"]


def init_method_normal(sigma: float, mean: float = 0.0) -> Callable[[flow.Tensor], flow.Tensor]:
    """Normal(mean, sigma) initialisation (BERT/GPT use ``sigma=initializer_range=0.02``)."""

    def init(tensor: flow.Tensor) -> flow.Tensor:
        return nn.init.normal_(tensor, mean=mean, std=sigma)

    return init


def scaled_init_method_normal(
    sigma: float, num_layers: int, mean: float = 0.0
) -> Callable[[flow.Tensor], flow.Tensor]:
    """Normal(mean, sigma / sqrt(2 · num_layers)) for the output projections of residual branches.

    Every block adds two branches to the residual stream; shrinking their output weights with
    depth keeps the stream's variance from growing with the number of layers (GPT-2).
    """
    if num_layers < 1:
        raise ValueError(f"scaled_init_method_normal needs num_layers >= 1, got {num_layers}")
    std = sigma / math.sqrt(2.0 * num_layers)

    def init(tensor: flow.Tensor) -> flow.Tensor:
        return nn.init.normal_(tensor, mean=mean, std=std)

    return init
