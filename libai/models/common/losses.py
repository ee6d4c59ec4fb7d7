"""Losses the language models share: token LM loss with a mask, and sequence classification.

Both reduce over the *global* batch: under data parallelism a sum over a batch-split tensor
is a sum over every rank's samples, so the mean equals the one-process mean of the same batch
(not a mean of per-rank means, which would differ when ranks hold different mask counts).
"""
from typing import Dict, Optional

import oneflow as flow
from oneflow import nn

from libai.layers import ParallelCrossEntropyLoss
from libai.layers.utils import broadcast, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["LMLoss", "ClassificationLoss", "GPTLoss", "T5Loss"]


class LMLoss(nn.Module):
    """Mean token cross entropy over positions where ``loss_mask`` is 1.

    Without a mask, every position whose label is not ``ignore_index`` (-100) counts.
    ``forward(logits [b, s, vocab], labels [b, s], loss_mask [b, s] | None)`` -> scalar.
    """

    def __init__(self, ignore_index: int = -100, *, layer_idx: int = -1) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.ignore_index = ignore_index
        self.cross_entropy = ParallelCrossEntropyLoss(ignore_index, layer_idx=layer_idx)

    def forward(
        self, logits: flow.Tensor, labels: flow.Tensor, loss_mask: Optional[flow.Tensor] = None
    ) -> flow.Tensor:
        per_token = self.cross_entropy(logits, labels)
        if loss_mask is None:
            labels = to_sbp(labels, self.layout, self.layer_idx, tensor_sbp=broadcast())
            weights = (labels != self.ignore_index).to(per_token.dtype)
        else:
            loss_mask = to_sbp(loss_mask, self.layout, self.layer_idx, tensor_sbp=broadcast())
            weights = loss_mask.to(per_token.dtype)
        total = (per_token * weights).sum()
        count = flow.clamp(weights.sum(), min=1.0)
        return _whole(total / count, self.layout, self.layer_idx)


class GPTLoss(LMLoss):
    """The causal LM loss as the model's loss dict: ``forward(logits, lm_labels)`` ->
    ``{"lm_loss": scalar}`` (LiBai's name and key; positions labelled -100 are ignored)."""

    def forward(  # type: ignore[override]
        self, logits: flow.Tensor, lm_labels: flow.Tensor
    ) -> Dict[str, flow.Tensor]:
        # LMLoss.forward by name, not super(): inside nn.Graph ``self`` is the graph's proxy
        return {"lm_loss": LMLoss.forward(self, logits, lm_labels)}


class T5Loss(LMLoss):
    """The span-corruption loss as the model's loss dict: ``forward(logits, lm_labels,
    loss_mask)`` -> ``{"masked_lm_loss": scalar}`` (mean over ``loss_mask == 1``; LiBai's key)."""

    def forward(  # type: ignore[override]
        self, logits: flow.Tensor, lm_labels: flow.Tensor, loss_mask: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        return {"masked_lm_loss": LMLoss.forward(self, logits, lm_labels, loss_mask)}


class ClassificationLoss(nn.Module):
    """Mean cross entropy of ``logits [b, classes]`` against ``labels [b]``."""

    def __init__(self, *, layer_idx: int = -1) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.cross_entropy = ParallelCrossEntropyLoss(layer_idx=layer_idx)

    def forward(self, logits: flow.Tensor, labels: flow.Tensor) -> flow.Tensor:
        loss = self.cross_entropy(logits, labels.view(-1)).mean()
        return _whole(loss, self.layout, self.layer_idx)


def _whole(loss: flow.Tensor, layout, layer_idx: int) -> flow.Tensor:
    """The reduced loss as the full value on every rank of its stage.

    A sum over a batch-split tensor is a partial sum over data-parallel ranks; reading it with
    ``to_local()`` would give one rank's share. One scalar all-reduce makes it whole.
    """
    return to_sbp(loss, layout, layer_idx, tensor_sbp=broadcast(), data_sbp=broadcast())
