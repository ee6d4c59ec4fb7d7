"""``ParallelCrossEntropyLoss``: token cross entropy over a vocabulary split across ranks.

The LM head leaves logits split on the vocabulary dim over tensor-parallel ranks; gathering
them would cost ``batch × seq × vocab`` floats per rank. OneFlow's
``sparse_softmax_cross_entropy`` accepts logits split on the class dim: each rank computes
its share of the max and of the normaliser, and the result comes back as a partial sum over
the tensor axis, which is then made whole. On a one-process layout it is the ordinary op.
"""
import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, to_layer, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["ParallelCrossEntropyLoss"]


class ParallelCrossEntropyLoss(nn.Module):
    """Per-token loss ``-log softmax(logits)[target]``; no reduction.

    Args:
        ignore_index: targets equal to it get loss 0 (a reduction then has to count only the
            others; models divide by their loss mask).
        layer_idx: pipeline position, normally ``-1`` (the last stage, where the logits are).

    ``forward(logits [..., vocab], target [...])`` returns a float tensor of ``target``'s shape.
    """

    def __init__(self, ignore_index: int = -100, *, layer_idx: int = -1) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.ignore_index = ignore_index

    def forward(self, logits: flow.Tensor, target: flow.Tensor) -> flow.Tensor:
        if logits.ndim != target.ndim + 1 or tuple(logits.shape[:-1]) != tuple(target.shape):
            raise ValueError(
                f"ParallelCrossEntropyLoss expects logits [..., vocab] and target [...] with "
                f"matching leading dims; got logits {tuple(logits.shape)} and target "
                f"{tuple(target.shape)}"
            )
        layout, idx = self.layout, self.layer_idx
        logits = to_layer(logits, layout, idx)
        if logits.dtype != flow.float32:
            logits = logits.to(flow.float32)
        target = to_sbp(target, layout, idx, tensor_sbp=broadcast())
        valid = target != self.ignore_index
        safe_target = target.masked_fill(flow.logical_not(valid), 0)
        vocab = logits.shape[-1]
        loss = flow._C.sparse_softmax_cross_entropy(
            logits.reshape(-1, vocab), safe_target.reshape(-1)
        )
        loss = to_sbp(loss, layout, idx, tensor_sbp=broadcast())
        loss = loss.view(*target.shape)
        return loss * valid.to(loss.dtype)
