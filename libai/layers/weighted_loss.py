"""OneFlow's common losses with a ``lambda_weight``: the entries of ``LOSS_REGISTRY``.

Registry-style configs name a loss and give its weight next to its arguments
(``dict(name="L1Loss", param=dict(lambda_weight=1.0))``). These classes are thin wrappers:
``forward(*inputs)`` is ``lambda_weight * oneflow.nn.<Loss>(**kwargs)(*inputs)``, so a loss
built on its own keeps its weight. :class:`~libai.layers.loss_compose.LossKeyCompose` builds
them with weight 1 and applies ``lambda_weight`` itself, which lets it weight *any*
registered loss the same way (see docs/registry_configs.md).
"""
from typing import Any, Type

import oneflow as flow
from oneflow import nn

__all__ = [
    "WeightedLoss",
    "CrossEntropyLoss",
    "NLLLoss",
    "BCELoss",
    "BCEWithLogitsLoss",
    "L1Loss",
    "MSELoss",
    "SmoothL1Loss",
    "KLDivLoss",
]


class WeightedLoss(nn.Module):
    """``lambda_weight * loss_class(**kwargs)(*inputs)``; subclasses set ``loss_class``.

    Args:
        lambda_weight: the factor the loss is multiplied by.
        kwargs: arguments of the wrapped OneFlow loss (``reduction``, ``ignore_index``, ...).
    """

    loss_class: Type[nn.Module] = nn.Module

    def __init__(self, lambda_weight: float = 1.0, **kwargs: Any) -> None:
        super().__init__()
        if type(self) is WeightedLoss:
            raise TypeError("WeightedLoss is a base class; use e.g. L1Loss or CrossEntropyLoss")
        self.lambda_weight = float(lambda_weight)
        self.loss = self.loss_class(**kwargs)

    def forward(self, *inputs: flow.Tensor) -> flow.Tensor:
        value = self.loss(*inputs)
        return value if self.lambda_weight == 1.0 else value * self.lambda_weight

    def extra_repr(self) -> str:
        return f"lambda_weight={self.lambda_weight}"


class CrossEntropyLoss(WeightedLoss):
    """Weighted ``oneflow.nn.CrossEntropyLoss`` (inputs: logits, integer labels)."""

    loss_class = nn.CrossEntropyLoss


class NLLLoss(WeightedLoss):
    """Weighted ``oneflow.nn.NLLLoss`` (inputs: log-probabilities, integer labels)."""

    loss_class = nn.NLLLoss


class BCELoss(WeightedLoss):
    """Weighted ``oneflow.nn.BCELoss`` (inputs: probabilities, targets in [0, 1])."""

    loss_class = nn.BCELoss


class BCEWithLogitsLoss(WeightedLoss):
    """Weighted ``oneflow.nn.BCEWithLogitsLoss`` (inputs: logits, targets in [0, 1])."""

    loss_class = nn.BCEWithLogitsLoss


class L1Loss(WeightedLoss):
    """Weighted ``oneflow.nn.L1Loss`` (mean absolute error)."""

    loss_class = nn.L1Loss


class MSELoss(WeightedLoss):
    """Weighted ``oneflow.nn.MSELoss`` (mean squared error)."""

    loss_class = nn.MSELoss


class SmoothL1Loss(WeightedLoss):
    """Weighted ``oneflow.nn.SmoothL1Loss`` (Huber-like, ``beta`` sets the switch point)."""

    loss_class = nn.SmoothL1Loss


class KLDivLoss(WeightedLoss):
    """Weighted ``oneflow.nn.KLDivLoss`` (inputs: log-probabilities, target probabilities)."""

    loss_class = nn.KLDivLoss
