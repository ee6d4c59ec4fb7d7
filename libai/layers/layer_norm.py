"""``LayerNorm`` that places itself like every libai layer and picks its kernel by device.

OneFlow 0.9.0's fused ``flow._C.layer_norm_affine`` exists only for CUDA; on the CPU it aborts
the whole process at compute time. The layer therefore decides once, at construction, from
``layout.device_type``: the fused kernel on CUDA, the composite ``nn.functional.layer_norm``
(mean/variance/rsqrt) elsewhere. Callers never choose.
"""
from typing import Sequence, Union

import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["LayerNorm"]


class LayerNorm(nn.Module):
    """Normalise over the last ``len(normalized_shape)`` dims, then scale and shift.

    Args:
        normalized_shape: size (or sizes) of the normalised trailing dims.
        eps: added to the variance.
        elementwise_affine: learn a scale (init 1) and a shift (init 0).
        bias: with ``elementwise_affine``, whether to learn the shift.
        layer_idx: pipeline position.

    The input is made whole over the tensor-parallel axis (normalisation needs every feature).
    """

    def __init__(
        self,
        normalized_shape: Union[int, Sequence[int]],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        *,
        layer_idx: int = 0,
        dtype: flow.dtype = flow.float32,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(int(n) for n in normalized_shape)
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self._fused = self.layout.device_type == "cuda"
        shape = self.normalized_shape
        self.weight = (
            make_parameter(shape, nn.init.ones_, self.layout, layer_idx, None, dtype)
            if elementwise_affine
            else None
        )
        self.bias = (
            make_parameter(shape, nn.init.zeros_, self.layout, layer_idx, None, dtype)
            if elementwise_affine and bias
            else None
        )

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        begin = x.ndim - len(self.normalized_shape)
        if self._fused and self.bias is not None:
            return flow._C.layer_norm_affine(
                x, self.weight, self.bias,
                begin_norm_axis=begin, begin_params_axis=begin, epsilon=self.eps,
            )
        if self._fused:
            normed = flow._C.layer_norm(
                x, begin_norm_axis=begin, begin_params_axis=begin, epsilon=self.eps
            )
        elif self.bias is not None:
            return flow.nn.functional.layer_norm(
                x, self.normalized_shape, self.weight, self.bias, self.eps
            )
        else:
            normed = flow.nn.functional.layer_norm(x, self.normalized_shape, eps=self.eps)
        return normed if self.weight is None else normed * self.weight

    def extra_repr(self) -> str:
        return (
            f"{self.normalized_shape}, eps={self.eps}, "
            f"elementwise_affine={self.elementwise_affine}, layer_idx={self.layer_idx}"
        )
