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


def _weighted(loss_class: Type[nn.Module], doc: str) -> Type[WeightedLoss]:
    """A :class:`WeightedLoss` subclass named after ``loss_class`` (e.g. ``L1Loss``), in this module."""
    name = loss_class.__name__
    return type(name, (WeightedLoss,), {"loss_class": loss_class, "__doc__": doc,
                                        "__module__": __name__, "__qualname__": name})


CrossEntropyLoss = _weighted(nn.CrossEntropyLoss,
                             "Weighted ``oneflow.nn.CrossEntropyLoss`` (inputs: logits, integer labels).")
NLLLoss = _weighted(nn.NLLLoss,
                    "Weighted ``oneflow.nn.NLLLoss`` (inputs: log-probabilities, integer labels).")
BCELoss = _weighted(nn.BCELoss,
                    "Weighted ``oneflow.nn.BCELoss`` (inputs: probabilities, targets in [0, 1]).")
BCEWithLogitsLoss = _weighted(nn.BCEWithLogitsLoss,
                              "Weighted ``oneflow.nn.BCEWithLogitsLoss`` (inputs: logits, targets in [0, 1]).")
L1Loss = _weighted(nn.L1Loss, "Weighted ``oneflow.nn.L1Loss`` (mean absolute error).")
MSELoss = _weighted(nn.MSELoss, "Weighted ``oneflow.nn.MSELoss`` (mean squared error).")
SmoothL1Loss = _weighted(nn.SmoothL1Loss,
                         "Weighted ``oneflow.nn.SmoothL1Loss`` (Huber-like, ``beta`` sets the switch point).")
KLDivLoss = _weighted(nn.KLDivLoss,
                      "Weighted ``oneflow.nn.KLDivLoss`` (inputs: log-probabilities, target probabilities).")
