"""``Conv1D``: GPT-2's name for a dense layer whose weight is stored ``[in, out]``.

OpenAI's GPT-2 code (and Hugging Face's ``Conv1D``) keep the projection transposed compared with
``nn.Linear``. Models ported from there keep that layout so their checkpoints load without a
transpose; the computation is ``y = x W + b`` and the parallel modes are :class:`Linear`'s
(``"col"`` splits the output features, here weight dim 1; ``"row"`` splits the input features,
weight dim 0, and sums the partial products before the bias).
"""
from libai.layers.linear import Linear

__all__ = ["Conv1D"]


class Conv1D(Linear):
    """``y = x W + b`` with ``W`` of shape ``[in_features, out_features]``.

    Args are :class:`libai.layers.Linear`'s (LiBai's order: ``in_features, out_features, bias,
    parallel, init_method, skip_bias_add, dtype``, then keyword-only ``layer_idx``);
    ``init_method`` fills the full ``[in, out]`` weight.
    """

    _stored_transposed = True
