"""``Conv1D``: GPT-2's name for a dense layer whose weight is stored ``[in, out]``.

OpenAI's GPT-2 code (and Hugging Face's ``Conv1D``) keep the projection transposed compared with
``nn.Linear``. Models ported from there keep that layout so their checkpoints load without a
transpose; the computation is ``y = x W + b`` and the parallel modes are :class:`Linear`'s
(``"col"`` splits the output features, here weight dim 1; ``"row"`` splits the input features,
weight dim 0, and sums the partial products before the bias).
"""
from typing import Any, Callable

import oneflow as flow
from oneflow import nn

from libai.layers.linear import Linear

__all__ = ["Conv1D"]


class Conv1D(Linear):
    """``y = x W + b`` with ``W`` of shape ``[in_features, out_features]``.

    Args are :class:`libai.layers.Linear`'s, with ``dtype`` also accepted positionally (as in
    LiBai); ``init_method`` fills the full ``[in, out]`` weight.
    """

    _stored_transposed = True

    def __init__(
        self,
        in_features: int,
        out_features: int,
        bias: bool = True,
        parallel: str = "data",
        init_method: Callable[[flow.Tensor], Any] = nn.init.xavier_normal_,
        skip_bias_add: bool = False,
        dtype: flow.dtype = flow.float32,
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__(in_features, out_features, bias, parallel, init_method, skip_bias_add,
                         layer_idx=layer_idx, dtype=dtype)
