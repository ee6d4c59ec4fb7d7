"""Swin Transformer V2: Swin V1's windows, shifts and stages with V2's three changes.

Swin V2 (Liu et al., 2022) keeps V1's architecture (:mod:`libai.models.swin`) and changes how
a block computes, which is all this module defines, as subclasses of V1's pieces:

- **scaled cosine attention**: scores are cosine similarities of q and k times a learned
  per-head temperature ``exp(min(logit_scale, log 100))`` (``logit_scale`` starts at log 10),
  instead of dot products over ``sqrt(d)``;
- **continuous relative position bias**: the bias of an offset ``(dy, dx)`` is produced by a
  small MLP (``2 -> 512 -> heads``, ReLU) from log-spaced coordinates
  ``sign(t) · log2(1 + |t|) / log2(8)`` with ``t = 8 · offset / (W - 1)`` (``W`` the window, or
  the window the weights were pretrained with, ``pretrained_window_sizes``), squashed to
  ``16 · sigmoid``, so it transfers to other window sizes;
- **res-post-norm**: ``x + LN(Attn(x))`` and ``x + LN(MLP(x))``, and patch merging that
  projects before it normalises.

q and v have learned biases, k has none (its bias would not cancel under the cosine). The
norms inside blocks start at zero gain, so each block starts as the identity (as in the
reference implementation). Layer indices, tensor/pipeline placement and the output convention
are V1's: ``train.dist.pipeline_num_layers = sum(depths)``.
"""
import math
from typing import Any, Callable, Dict, Optional, Sequence

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import Linear
from libai.layers.utils import make_parameter, place_constant, split
from libai.models.swin import SwinBlock, SwinTransformer, WindowAttention, check_swin_options
from libai.models.vision_common import trunc_normal_init

__all__ = ["SwinBlockV2", "SwinTransformerV2", "WindowAttentionV2", "log_spaced_coords"]

# the temperature exp(logit_scale) is capped at 1 / 0.01
_MAX_LOGIT_SCALE = math.log(1.0 / 0.01)
_CPB_HIDDEN = 512


def log_spaced_coords(window: int, pretrained_window: int = 0) -> np.ndarray:
    """``[(2w-1)², 2]`` float32: the continuous-position-bias MLP's input for each offset,
    rows in the order of :func:`libai.models.swin.relative_position_index`."""
    offsets = np.arange(-(window - 1), window, dtype=np.float32)
    dy, dx = np.meshgrid(offsets, offsets, indexing="ij")
    table = np.stack([dy, dx], axis=-1)
    span = pretrained_window if pretrained_window > 0 else window
    if span > 1:
        table = table / (span - 1)
    table = table * 8.0
    table = np.sign(table) * np.log2(np.abs(table) + 1.0) / np.log2(8.0)
    return table.reshape(-1, 2).astype(np.float32)


def _log_ten(tensor: flow.Tensor) -> None:
    tensor.fill_(math.log(10.0))


class WindowAttentionV2(WindowAttention):
    """Window attention with scaled cosine scores and the continuous position bias.

    Args: those of :class:`~libai.models.swin.WindowAttention` plus ``pretrained_window_size``
    (0: normalise offsets by this window). Parameters: ``qkv`` (no bias), ``q_bias``,
    ``v_bias``, ``logit_scale`` ``[heads, 1, 1]``, ``cpb_mlp`` (``0``: 2 -> 512 with bias,
    ``2``: 512 -> heads without). Heads are split over tensor-parallel ranks as in V1.
    """

    def __init__(self, dim: int, window_size: int, num_heads: int, qkv_bias: bool = True,
                 attn_drop: float = 0.0, proj_drop: float = 0.0,
                 init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(), *,
                 layer_idx: int = 0, pretrained_window_size: int = 0) -> None:
        self.pretrained_window_size = int(pretrained_window_size)  # read by the hooks below
        super().__init__(dim, window_size, num_heads, qkv_bias, attn_drop, proj_drop,
                         init_method, layer_idx=layer_idx)
        self.logit_scale = make_parameter((num_heads, 1, 1), _log_ten, self.layout, layer_idx,
                                          tensor_sbp=split(0))

    def _init_position_bias(self, init_method: Callable[[flow.Tensor], Any]) -> None:
        coords = flow.tensor(log_spaced_coords(self.window_size, self.pretrained_window_size))
        self.register_buffer("relative_coords_table",
                             place_constant(coords, self.layout, self.layer_idx), persistent=False)
        self.cpb_mlp = nn.Sequential(
            Linear(2, _CPB_HIDDEN, bias=True, init_method=init_method, layer_idx=self.layer_idx),
            nn.ReLU(),
            Linear(_CPB_HIDDEN, self.num_heads, bias=False, parallel="col",
                   init_method=init_method, layer_idx=self.layer_idx),
        )

    def _init_qkv(self, qkv_bias: bool, init_method: Callable[[flow.Tensor], Any]) -> None:
        self.qkv = Linear(self.dim, 3 * self.dim, bias=False, parallel="col",
                          init_method=init_method, layer_idx=self.layer_idx)
        if qkv_bias:
            for name in ("q_bias", "v_bias"):
                setattr(self, name, make_parameter((self.dim,), nn.init.zeros_, self.layout,
                                                   self.layer_idx, tensor_sbp=split(0)))
        else:
            self.register_parameter("q_bias", None)
            self.register_parameter("v_bias", None)

    def _bias_rows(self) -> flow.Tensor:
        return 16.0 * flow.sigmoid(self.cpb_mlp(self.relative_coords_table))

    def _project(self, x: flow.Tensor) -> flow.Tensor:
        qkv = self.qkv(x)
        if self.q_bias is None:
            return qkv
        # per-head layout [heads, (q, k, v), head_dim], like the fused projection's rows
        q = self.q_bias.view(self.num_heads, 1, self.head_dim)
        v = self.v_bias.view(self.num_heads, 1, self.head_dim)
        bias = flow.cat([q, q * 0.0, v], dim=1).view(-1)
        return qkv + bias

    def _scores(self, q: flow.Tensor, k: flow.Tensor) -> flow.Tensor:
        cosine = flow.matmul(nn.functional.normalize(q, dim=-1),
                             nn.functional.normalize(k, dim=-1), transpose_b=True)
        temperature = flow.clamp(self.logit_scale, max=_MAX_LOGIT_SCALE).exp().unsqueeze(0)
        return cosine * temperature + self.relative_position_bias()

    def extra_repr(self) -> str:
        return f"{super().extra_repr()}, pretrained_window_size={self.pretrained_window_size}"


class SwinBlockV2(SwinBlock):
    """:class:`~libai.models.swin.SwinBlock` with V2's attention and res-post-norm
    (``x + LN(Attn(x))``, ``x + LN(MLP(x))``); takes ``pretrained_window_size`` too."""

    attention_cls = WindowAttentionV2
    post_norm = True


class SwinTransformerV2(SwinTransformer):
    """Swin Transformer V2 for image classification.

    Args: those of :class:`~libai.models.SwinTransformer` plus
        pretrained_window_sizes: per stage, the window the weights were trained with (0: this
            model's window); only the position-bias coordinates depend on it.
        ape: LiBai's absolute-position-embedding switch; only ``False`` exists here.

    SwinV2-T at 256×256: embed_dim=96, depths=(2, 2, 6, 2), num_heads=(3, 6, 12, 24),
    window_size=8 (or 16); -S: depths (2, 2, 18, 2); -B: embed_dim=128, heads (4, 8, 16, 32).
    ``forward(images, labels=None)``: ``{"losses"}`` in training with labels, else
    ``{"prediction_scores"}``.
    """

    @configurable
    def __init__(
        self,
        img_size: int = 224,
        patch_size: int = 4,
        in_chans: int = 3,
        num_classes: int = 1000,
        embed_dim: int = 96,
        depths: Sequence[int] = (2, 2, 6, 2),
        num_heads: Sequence[int] = (3, 6, 12, 24),
        window_size: int = 7,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.1,
        norm_layer: Any = None,
        ape: bool = False,
        patch_norm: bool = True,
        pretrained_window_sizes: Sequence[int] = (0, 0, 0, 0),
        loss_func: Optional[nn.Module] = None,
    ) -> None:
        check_swin_options("SwinTransformerV2", norm_layer, ape)
        sizes = [int(w) for w in pretrained_window_sizes]
        if len(sizes) < len(depths):
            raise ValueError(f"pretrained_window_sizes {sizes} needs one entry per stage "
                             f"({len(depths)} stages)")
        self.pretrained_window_sizes = sizes  # read by _stage_options during V1's init
        super().__init__(img_size=img_size, patch_size=patch_size, in_chans=in_chans,
                         num_classes=num_classes, embed_dim=embed_dim, depths=depths,
                         num_heads=num_heads, window_size=window_size, mlp_ratio=mlp_ratio,
                         qkv_bias=qkv_bias, drop_rate=drop_rate, attn_drop_rate=attn_drop_rate,
                         drop_path_rate=drop_path_rate, patch_norm=patch_norm, loss_func=loss_func)
        self._zero_block_norms()

    def _stage_options(self, stage: int) -> Dict[str, Any]:
        return dict(block_cls=SwinBlockV2, merge_post_norm=True,
                    pretrained_window_size=self.pretrained_window_sizes[stage])

    def _zero_block_norms(self) -> None:
        """Zero gain and shift of the norms inside blocks: each block starts as the identity."""
        with flow.no_grad():
            for block in self._blocks():
                for norm in (block.norm1, block.norm2):
                    norm.weight.zero_()
                    norm.bias.zero_()
