"""``Affine``: a per-channel scale and shift, ResMLP's replacement for LayerNorm.

ResMLP (Touvron et al., 2021) normalises nothing: ``y = alpha ⊙ x + beta`` over the last dim,
with ``alpha`` starting at 1 and ``beta`` at 0. With no statistics to compute it costs nothing at
inference and can be folded into the neighbouring linear layers. The parameter names ``alpha``
and ``beta`` are LiBai's (optimizer overrides exempt them from weight decay by those names).
"""
import oneflow as flow
from oneflow import nn

from libai.layers.utils import broadcast, make_parameter, to_sbp
from libai.utils.distributed import current_layout

__all__ = ["Affine"]


class Affine(nn.Module):
    """``alpha * x + beta`` with learned ``alpha, beta`` of shape ``[dim]`` (init 1 and 0).

    Args:
        dim: size of the last dim of the input.
        layer_idx: pipeline position.

    The parameters are replicated; the input is made whole over the tensor-parallel axis.
    """

    def __init__(self, dim: int, *, layer_idx: int = 0, dtype: flow.dtype = flow.float32) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.dim = dim
        self.alpha = make_parameter((dim,), nn.init.ones_, self.layout, layer_idx, None, dtype)
        self.beta = make_parameter((dim,), nn.init.zeros_, self.layout, layer_idx, None, dtype)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        if x.shape[-1] != self.dim:
            raise ValueError(f"Affine({self.dim}) got an input whose last dim is {x.shape[-1]}")
        x = to_sbp(x, self.layout, self.layer_idx, tensor_sbp=broadcast())
        return self.alpha * x + self.beta

    def extra_repr(self) -> str:
        return f"dim={self.dim}, layer_idx={self.layer_idx}"
