"""Swin's blocks and stages: how window attention, the MLP and patch merging compose.

- :class:`SwinBlock`: pre-norm window attention + MLP. Every second block shifts the map by
  half a window first (a cyclic roll), so windows straddle the previous block's boundaries;
  an attention mask stops tokens that the roll brought together from opposite image borders
  from attending to each other.
- :class:`PatchMerging`: concatenates each 2 × 2 neighbourhood (``4C``) and projects it to
  ``2C`` between stages.
- :class:`SwinStage`: ``depth`` blocks, alternately plain and shifted, then the merging.

Swin V2 (:mod:`libai.models.swin_transformer_v2`) reuses them with its own block class.
:mod:`libai.models.swin` re-exports every name, LiBai's import path.
"""
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers import MLP, DropPath, LayerNorm, Linear
from libai.layers.utils import place_constant, to_layer
from libai.models.swin_windows import (
    MASK_FILL, WindowAttention, shifted_window_mask, window_partition, window_reverse,
)
from libai.models.vision_common import trunc_normal_init
from libai.utils.distributed import current_layout

__all__ = ["PatchMerging", "SwinBlock", "SwinStage"]


class SwinBlock(nn.Module):
    """``x + Attn(LN(x))`` over (shifted) windows, then ``x + MLP(LN(x))``.

    Args:
        dim, num_heads, mlp_ratio: sizes.
        qkv_bias: learn biases for q, k, v.
        input_resolution: ``(H, W)`` of the token map, each divisible by the window.
        window_size: window side; when the map is no larger than a window, the window becomes
            the whole map and nothing is shifted (as in Swin).
        shift_size: cyclic shift before attention (``0`` or, usually, ``window_size // 2``).
        drop, attn_drop, drop_path: dropout, attention dropout, stochastic depth.
        layer_idx: this block's index (its pipeline stage).
        **attention_args: further arguments of ``attention_cls`` (Swin V2's
            ``pretrained_window_size``).
    """

    def __init__(
        self,
        dim: int,
        input_resolution: Tuple[int, int],
        num_heads: int,
        window_size: int = 7,
        shift_size: int = 0,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        drop: float = 0.0,
        attn_drop: float = 0.0,
        drop_path: float = 0.0,
        init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(),
        *,
        layer_idx: int = 0,
        **attention_args: Any,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.input_resolution = tuple(int(r) for r in input_resolution)
        height, width = self.input_resolution
        if min(height, width) <= window_size:
            window_size, shift_size = min(height, width), 0
        _check_window(self.input_resolution, window_size, shift_size)
        self.window_size, self.shift_size = window_size, shift_size
        self.norm1 = LayerNorm(dim, layer_idx=layer_idx)
        self.attn = self.attention_cls(dim, window_size, num_heads, qkv_bias, attn_drop, drop,
                                       init_method, layer_idx=layer_idx, **attention_args)
        self.drop_path = DropPath(drop_path)
        self.norm2 = LayerNorm(dim, layer_idx=layer_idx)
        self.mlp = MLP(dim, int(dim * mlp_ratio), drop, init_method, activation="gelu",
                       layer_idx=layer_idx)
        mask = None
        if shift_size > 0:
            allowed = shifted_window_mask(height, width, window_size, shift_size)
            additive = flow.tensor(np.where(allowed, 0.0, MASK_FILL).astype(np.float32))
            mask = place_constant(additive, self.layout, layer_idx)
        self.register_buffer("attn_mask", mask, persistent=False)

    #: The window attention class; Swin V2 swaps in its cosine attention.
    attention_cls: type = WindowAttention
    #: False: ``x + f(LN(x))`` (V1, pre-norm); True: ``x + LN(f(x))`` (V2's res-post-norm).
    post_norm: bool = False

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        x = to_layer(x, self.layout, self.layer_idx)
        height, width = self.input_resolution
        batch, length, channels = x.shape
        if length != height * width:
            raise ValueError(
                f"SwinBlock built for a {height}x{width} map got {length} tokens; "
                "the image size must match the model's img_size"
            )
        h = (x if self.post_norm else self.norm1(x)).view(batch, height, width, channels)
        shift = self.shift_size
        if shift:
            h = flow.roll(h, shifts=(-shift, -shift), dims=(1, 2))
        windows = self.attn(window_partition(h, self.window_size), self.attn_mask)
        h = window_reverse(windows, self.window_size, height, width)
        if shift:
            h = flow.roll(h, shifts=(shift, shift), dims=(1, 2))
        h = h.reshape(batch, length, channels)
        if self.post_norm:
            x = x + self.drop_path(self.norm1(h))
            return x + self.drop_path(self.norm2(self.mlp(x)))
        x = x + self.drop_path(h)
        return x + self.drop_path(self.mlp(self.norm2(x)))

    def extra_repr(self) -> str:
        return (f"input_resolution={self.input_resolution}, window_size={self.window_size}, "
                f"shift_size={self.shift_size}, layer_idx={self.layer_idx}")


class PatchMerging(nn.Module):
    """Halve the resolution, double the width: ``[B, H·W, C] -> [B, H/2 · W/2, 2C]``.

    Each 2 × 2 neighbourhood is concatenated in the order (top-left, bottom-left, top-right,
    bottom-right), normalised, and projected by a bias-free Linear (replicated over
    tensor-parallel ranks: it is small and its output must be whole for the next norm).
    ``post_norm=True`` (Swin V2) projects first and normalises the ``2C`` result.
    """

    def __init__(
        self,
        input_resolution: Tuple[int, int],
        dim: int,
        init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(),
        *,
        layer_idx: int = 0,
        post_norm: bool = False,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        self.input_resolution = tuple(int(r) for r in input_resolution)
        if any(r % 2 for r in self.input_resolution):
            raise ValueError(
                f"PatchMerging needs an even resolution, got {self.input_resolution}; the patch "
                "grid (img_size / patch_size) must be divisible by 2 ** (number of stages - 1)"
            )
        self.post_norm = post_norm
        self.norm = LayerNorm((2 if post_norm else 4) * dim, layer_idx=layer_idx)
        self.reduction = Linear(4 * dim, 2 * dim, bias=False, init_method=init_method,
                                layer_idx=layer_idx)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        x = to_layer(x, self.layout, self.layer_idx)
        height, width = self.input_resolution
        batch, _, channels = x.shape
        x = x.view(batch, height // 2, 2, width // 2, 2, channels)
        # [B, h, dy, w, dx, C] -> [B, h, w, dx, dy, C]: dy varies fastest, as the order above
        x = x.permute(0, 1, 3, 4, 2, 5).reshape(batch, (height // 2) * (width // 2), 4 * channels)
        if self.post_norm:
            return self.norm(self.reduction(x))
        return self.reduction(self.norm(x))


class SwinStage(nn.Module):
    """``depth`` blocks alternating plain and shifted windows, then an optional PatchMerging.

    Block ``j`` gets ``layer_idx = first_layer_idx + j`` and stochastic depth
    ``drop_paths[j]``; the merging shares the last index. ``block_args`` go to every block
    (``mlp_ratio``, ``qkv_bias``, ``drop``, ``attn_drop``, ``init_method``, and whatever a
    ``block_cls`` other than :class:`SwinBlock` takes); ``merge_post_norm`` is
    :class:`PatchMerging`'s ``post_norm`` (Swin V2 passes its block class and True).
    """

    def __init__(
        self,
        dim: int,
        input_resolution: Tuple[int, int],
        depth: int,
        num_heads: int,
        window_size: int,
        drop_paths: Sequence[float],
        downsample: bool,
        first_layer_idx: int,
        block_cls: Optional[type] = None,
        merge_post_norm: bool = False,
        **block_args: Any,
    ) -> None:
        super().__init__()
        block_cls = SwinBlock if block_cls is None else block_cls
        self.blocks = nn.ModuleList(
            [
                block_cls(
                    dim, input_resolution, num_heads, window_size,
                    shift_size=0 if j % 2 == 0 else window_size // 2, drop_path=drop_paths[j],
                    layer_idx=first_layer_idx + j, **block_args,
                )
                for j in range(depth)
            ]
        )
        self.downsample = (
            PatchMerging(input_resolution, dim, block_args.get("init_method", trunc_normal_init()),
                         layer_idx=first_layer_idx + depth - 1, post_norm=merge_post_norm)
            if downsample
            else None
        )

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        for block in self.blocks:
            x = block(x)
        return self.downsample(x) if self.downsample is not None else x



def _check_window(resolution: Tuple[int, int], window: int, shift: int) -> None:
    if any(r % window for r in resolution):
        raise ValueError(
            f"a {resolution[0]}x{resolution[1]} token map does not divide into {window}x{window} "
            "windows; choose img_size, patch_size and window_size so that every stage's map "
            "(img_size / patch_size / 2**stage) is a multiple of window_size"
        )
    if not 0 <= shift < window:
        raise ValueError(f"shift_size must be within [0, window_size={window}), got {shift}")

