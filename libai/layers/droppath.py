"""Stochastic depth: ``drop_path`` and its module ``DropPath`` (LiBai's module path).

A residual block with stochastic depth drops its whole branch for a random subset of the
samples in a batch (Huang et al., 2016); the kept samples are rescaled by ``1 / keep`` so the
expected output is unchanged (``scale_by_keep``).
"""
import oneflow as flow
from oneflow import nn

__all__ = ["DropPath", "drop_path"]


def drop_path(
    x: flow.Tensor, drop_prob: float = 0.5, training: bool = False, scale_by_keep: bool = True
) -> flow.Tensor:
    """Zero the residual branch ``x`` of each sample with probability ``drop_prob``.

    The per-sample keep mask is a dropout of a ``[batch, 1, ...]`` slice of ones derived from
    ``x``, so it inherits ``x``'s placement and SBP without any layout branch (and the
    data-parallel ranks draw independent masks for their own samples).
    """
    if drop_prob == 0.0 or not training:
        return x
    first = (slice(None),) + (slice(0, 1),) * (x.ndim - 1)
    ones = x[first].detach() * 0 + 1  # ops, not ones_like (a module nn.Graph would flag)
    keep = flow.nn.functional.dropout(ones, p=drop_prob, training=True)  # 0 or 1/(1-p)
    if not scale_by_keep:
        keep = keep * (1.0 - drop_prob)
    return x * keep


class DropPath(nn.Module):
    """:func:`drop_path` as a module; active in training mode only."""

    def __init__(self, drop_prob: float = 0.0, scale_by_keep: bool = True) -> None:
        super().__init__()
        self.drop_prob = drop_prob
        self.scale_by_keep = scale_by_keep

    @property
    def prob(self) -> float:  # the name earlier libai releases used
        return self.drop_prob

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        return drop_path(x, self.drop_prob, self.training, self.scale_by_keep)

    def extra_repr(self) -> str:
        return f"drop_prob={self.drop_prob}, scale_by_keep={self.scale_by_keep}"
