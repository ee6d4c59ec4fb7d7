"""``ParallelCrossEntropyLoss``: token cross entropy over a vocabulary split across ranks.

The LM head leaves logits split on the vocabulary dim over tensor-parallel ranks; gathering
them would cost ``batch × seq × vocab`` floats per rank. OneFlow's
``sparse_softmax_cross_entropy`` accepts logits split on the class dim: each rank computes
its share of the max and of the normaliser, and the result comes back as a partial sum over
the tensor axis, which is then made whole. On the CPU without tensor parallelism (every rank
holds whole rows) the same loss is computed from faster ops (``_cpu_softmax_cross_entropy``).
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
        # OneFlow's op computes the split max and normaliser itself when the vocabulary is split
        # over tensor-parallel ranks; with whole rows on the CPU the written-out loss is faster
        self._written_out = (self.layout.device_type == "cpu"
                             and self.layout.tensor_parallel_size == 1)

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
        flat_logits, flat_target = logits.reshape(-1, vocab), safe_target.reshape(-1)
        if self._written_out:
            loss = _cpu_softmax_cross_entropy(flat_logits, flat_target)
        else:
            loss = flow._C.sparse_softmax_cross_entropy(flat_logits, flat_target)
        loss = to_sbp(loss, layout, idx, tensor_sbp=broadcast())
        loss = loss.view(*target.shape)
        return loss * valid.to(loss.dtype)


def _cpu_softmax_cross_entropy(logits: flow.Tensor, target: flow.Tensor) -> flow.Tensor:
    """``sparse_softmax_cross_entropy`` of ``[tokens, vocab]`` logits and ``[tokens]`` targets,
    from OneFlow's faster CPU ops (see :class:`_SoftmaxCrossEntropy`)."""
    return _SoftmaxCrossEntropy.apply(logits, target)


class _SoftmaxCrossEntropy(flow.autograd.Function):
    """The loss of ``sparse_softmax_cross_entropy`` with its gradient written out.

    OneFlow 0.9's CPU kernel for the op is slow where it matters most, the vocabulary
    projection's ``[tokens, vocab]`` logits: its gradient is a loop over every element with two
    checks and an integer division each, and its forward costs about two softmaxes. For GPT-2
    tiny's 512 x 8192 logits, forward and backward took 91-140 ms against about 50 here, on one
    thread (docs/benchmarks.md, "Three CPU formulations").

    The value is computed in the log domain, as the op does, so it stays exact where the
    target's probability underflows: with ``p = softmax(x)`` and ``j`` a row's largest logit,
    ``p[j] = 1 / sum(exp(x - x[j]))``, hence ``loss = x[j] - x[target] - log p[j]`` (``p[j]`` is
    at least ``1 / vocab``, never tiny). The gradient is the op's, ``dloss * (p - onehot)``.
    """

    @staticmethod
    def forward(ctx, logits: flow.Tensor, target: flow.Tensor) -> flow.Tensor:
        probs = flow.softmax(logits, dim=-1)
        picked = target.unsqueeze(1)
        # x[j] and p[j] are the rows' maxima (softmax is monotonic in x): two reductions cost
        # less than OneFlow's CPU argmax and two gathers (2.0 against 3.2 ms at 512 x 2048)
        top_logit = flow.amax(logits, dim=1, keepdim=True)
        top_prob = flow.amax(probs, dim=1, keepdim=True)
        loss = top_logit - logits.gather(1, picked) - flow.log(top_prob)
        ctx.save_for_backward(probs, picked)
        return loss.view(-1)

    @staticmethod
    def backward(ctx, dloss: flow.Tensor):
        probs, picked = ctx.saved_tensors
        dloss = dloss.unsqueeze(1)
        return flow.scatter_add(probs * dloss, 1, picked, -dloss), None
