"""Swin's windows: where they lie, which tokens of a window may attend to each other, and the
attention computed inside them.

- :func:`window_partition` / :func:`window_reverse`: cut a ``[B, H, W, C]`` map into
  ``window × window`` windows and put it back together;
- :func:`relative_position_index`: which row of the relative-position bias table each
  (query, key) pair of a window reads;
- :func:`shifted_window_mask`: after a cyclic shift, which pairs came from the same image
  region (the others must not attend to each other);
- :class:`WindowAttention`: multi-head self attention within one window plus the learned
  relative position bias. q/k/v come from one column-parallel Linear laid out head by head and
  the output projection is row-parallel, so tensor-parallel ranks each own whole heads, and
  the bias table is split by head to match. Swin V2's attention
  (:mod:`libai.models.swin_transformer_v2`) replaces its marked hooks.

:mod:`libai.models.swin` re-exports every name, LiBai's import path.
"""
from typing import Any, Callable, Optional

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers import Linear
from libai.layers.utils import make_parameter, place_constant, split
from libai.models.vision_common import trunc_normal_init
from libai.utils.distributed import current_layout

__all__ = [
    "MASK_FILL",
    "WindowAttention",
    "relative_position_index",
    "shifted_window_mask",
    "window_partition",
    "window_reverse",
]

# Added to the scores of forbidden pairs: exp() of it underflows to exactly 0 in float32.
MASK_FILL = -10000.0


def window_partition(x: flow.Tensor, window: int) -> flow.Tensor:
    """``[B, H, W, C] -> [B · nW, window², C]``, windows in row-major order per image."""
    batch, height, width, channels = x.shape
    x = x.view(batch, height // window, window, width // window, window, channels)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, window * window, channels)


def window_reverse(windows: flow.Tensor, window: int, height: int, width: int) -> flow.Tensor:
    """Inverse of :func:`window_partition`: ``[B · nW, window², C] -> [B, H, W, C]``."""
    channels = windows.shape[-1]
    x = windows.view(-1, height // window, width // window, window, window, channels)
    return x.permute(0, 1, 3, 2, 4, 5).reshape(-1, height, width, channels)


def relative_position_index(window: int) -> np.ndarray:
    """``[window², window²]`` int64: row of the bias table for each (query, key) pair.

    The offset ``(dy, dx)`` of key from query lies in ``[-(w-1), w-1]²``; shifted to start
    at 0 it numbers the ``(2w-1)²`` table rows as ``dy · (2w-1) + dx``.
    """
    ys, xs = np.meshgrid(np.arange(window), np.arange(window), indexing="ij")
    coords = np.stack([ys.reshape(-1), xs.reshape(-1)])  # [2, N]
    offsets = coords[:, :, None] - coords[:, None, :] + (window - 1)  # [2, N, N]
    return (offsets[0] * (2 * window - 1) + offsets[1]).astype(np.int64)


def shifted_window_mask(height: int, width: int, window: int, shift: int) -> np.ndarray:
    """``[nW, window², window²]`` bool, True where a query may attend to a key.

    After rolling the map by ``-shift``, the last window row/column holds tokens from two
    image borders. Along each axis positions fall in three bands (``[0, size-window)``,
    ``[size-window, size-shift)``, ``[size-shift, size)``); two tokens of a window may attend
    to each other only when they lie in the same band along both axes.
    """
    def bands(size: int) -> np.ndarray:
        label = np.zeros(size, dtype=np.int64)
        label[size - window:] = 1
        label[size - shift:] = 2
        return label

    regions = bands(height)[:, None] * 3 + bands(width)[None, :]  # [H, W]
    per_window = regions.reshape(height // window, window, width // window, window)
    per_window = per_window.transpose(0, 2, 1, 3).reshape(-1, window * window)
    return per_window[:, :, None] == per_window[:, None, :]



class WindowAttention(nn.Module):
    """Self attention within windows, with a relative position bias per head.

    Args:
        dim: token width; divisible by ``num_heads``.
        window_size: side of the square window.
        num_heads: divisible by the tensor parallel size (each rank owns whole heads).
        qkv_bias: learn biases for q, k, v.
        attn_drop, proj_drop: dropout on the attention weights and on the output.
        init_method: initialiser of the projections and of the bias table.
        layer_idx: pipeline position.

    ``forward(x [B·nW, window², dim], mask=None)``; ``mask`` is an additive
    ``[nW, window², window²]`` tensor (0 to attend, a large negative number to block).
    """

    def __init__(
        self,
        dim: int,
        window_size: int,
        num_heads: int,
        qkv_bias: bool = True,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        init_method: Callable[[flow.Tensor], Any] = trunc_normal_init(),
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        _check_heads(dim, num_heads, self.layout.tensor_parallel_size)
        self.layer_idx = layer_idx
        self.dim, self.window_size, self.num_heads = dim, window_size, num_heads
        self.head_dim = dim // num_heads
        self.scale = self.head_dim ** -0.5
        self._init_position_bias(init_method)
        index = flow.tensor(relative_position_index(window_size).reshape(-1))
        self.register_buffer(
            "relative_position_index", place_constant(index, self.layout, layer_idx),
            persistent=False,
        )
        self._init_qkv(qkv_bias, init_method)
        self.proj = Linear(dim, dim, parallel="row", init_method=init_method, layer_idx=layer_idx)
        self.attn_drop = nn.Dropout(attn_drop)
        self.proj_drop = nn.Dropout(proj_drop)

    # The hooks below are what Swin V2's attention (libai.models.swin_transformer_v2) replaces;
    # the windowing, masking, softmax and output projection stay this class's.
    def _init_position_bias(self, init_method: Callable[[flow.Tensor], Any]) -> None:
        """V1: a learned ``[(2w-1)², heads]`` table, split by head over tensor-parallel ranks."""
        rows = (2 * self.window_size - 1) ** 2
        self.relative_position_bias_table = make_parameter(
            (rows, self.num_heads), init_method, self.layout, self.layer_idx, tensor_sbp=split(1)
        )

    def _init_qkv(self, qkv_bias: bool, init_method: Callable[[flow.Tensor], Any]) -> None:
        """One column-parallel q/k/v projection laid out head by head."""
        self.qkv = Linear(self.dim, 3 * self.dim, bias=qkv_bias, parallel="col",
                          init_method=init_method, layer_idx=self.layer_idx)

    def _bias_rows(self) -> flow.Tensor:
        """``[(2w-1)², heads]``: the bias of each relative offset, per head."""
        return self.relative_position_bias_table

    def relative_position_bias(self) -> flow.Tensor:
        """``[1, heads, window², window²]``: the bias added to every window's scores."""
        tokens = self.window_size * self.window_size
        bias = flow.index_select(self._bias_rows(), 0, self.relative_position_index)
        return bias.view(tokens, tokens, self.num_heads).permute(2, 0, 1).unsqueeze(0)

    def _project(self, x: flow.Tensor) -> flow.Tensor:
        """``[B_, N, dim] -> [B_, N, heads · 3 · head_dim]`` (per-head q, k, v)."""
        return self.qkv(x)

    def _scores(self, q: flow.Tensor, k: flow.Tensor) -> flow.Tensor:
        """V1: scaled dot products plus the relative position bias."""
        return flow.matmul(q * self.scale, k, transpose_b=True) + self.relative_position_bias()

    def forward(self, x: flow.Tensor, mask: Optional[flow.Tensor] = None) -> flow.Tensor:
        windows, tokens, _ = x.shape
        qkv = self._project(x).view(windows, tokens, self.num_heads, 3 * self.head_dim)
        q, k, v = flow.chunk(qkv.permute(0, 2, 1, 3), 3, dim=-1)  # each [B_, heads, N, d]
        scores = self._scores(q, k)
        if mask is not None:
            num_windows = mask.shape[0]
            per_image = scores.view(
                windows // num_windows, num_windows, self.num_heads, tokens, tokens
            )
            scores = (per_image + mask.unsqueeze(1).unsqueeze(0)).view(
                windows, self.num_heads, tokens, tokens
            )
        probs = self.attn_drop(flow.softmax(scores, dim=-1))
        out = flow.matmul(probs, v).permute(0, 2, 1, 3).reshape(windows, tokens, self.dim)
        return self.proj_drop(self.proj(out))

    def extra_repr(self) -> str:
        return (f"dim={self.dim}, window_size={self.window_size}, num_heads={self.num_heads}, "
                f"layer_idx={self.layer_idx}")



def _check_heads(dim: int, num_heads: int, tp: int) -> None:
    if num_heads < 1 or dim % num_heads:
        raise ValueError(f"width {dim} is not divisible by num_heads={num_heads}")
    if num_heads % tp:
        raise ValueError(
            f"num_heads={num_heads} cannot be split over tensor_parallel_size={tp}; use head "
            f"counts divisible by {tp} in every stage"
        )

