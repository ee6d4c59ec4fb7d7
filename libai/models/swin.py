"""Swin Transformer (V1): attention inside local windows, shifted between blocks, over a
feature map that is halved in resolution and doubled in width from stage to stage.

Pieces, each built from libai's parallel layers so the model runs under any layout:

- :class:`WindowAttention`: multi-head self attention within one ``window × window`` window plus
  a learned bias indexed by the relative position of the two tokens. q/k/v come from one
  column-parallel Linear laid out head by head and the output projection is row-parallel, so
  tensor-parallel ranks each own whole heads, and the bias table is split by head to match.
- :class:`SwinBlock`: pre-norm window attention + MLP. Every second block shifts the map by
  half a window first (a cyclic roll), so windows straddle the previous block's boundaries;
  an attention mask stops tokens that the roll brought together from opposite image borders
  from attending to each other.
- :class:`PatchMerging`: concatenates each 2 × 2 neighbourhood (``4C``) and projects it to
  ``2C`` between stages.

Layer indices: patch embedding ``0``, the blocks of all stages numbered ``0 .. sum(depths)-1``
in order (a stage's patch merging goes with its last block), final norm, head and loss ``-1``;
so ``train.dist.pipeline_num_layers = sum(depths)``.
"""
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import MLP, DropPath, LayerNorm, Linear
from libai.layers.utils import make_parameter, place_constant, split, to_layer
from libai.models.common.config import resolve_arguments
from libai.models.pretrained.api import PretrainedMixin
from libai.models.vision_common import (
    ImageClassificationLoss,
    ImageClassifierMixin,
    PatchEmbedding,
    drop_path_rates,
    trunc_normal_init,
)
from libai.utils.distributed import current_layout

__all__ = [
    "PatchMerging",
    "SwinBlock",
    "SwinStage",
    "SwinTransformer",
    "WindowAttention",
    "relative_position_index",
    "shifted_window_mask",
    "window_partition",
    "window_reverse",
]

# Added to the scores of forbidden pairs: exp() of it underflows to exactly 0 in float32.
_MASK_FILL = -10000.0


# --------------------------------------------------------------------------- window geometry
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


# --------------------------------------------------------------------------- layers
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
            additive = flow.tensor(np.where(allowed, 0.0, _MASK_FILL).astype(np.float32))
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


# --------------------------------------------------------------------------- the model
def check_swin_options(owner: str, norm_layer: Any, ape: bool) -> None:
    """Refuse LiBai's Swin options that this implementation does not have, by name."""
    if norm_layer is not None and not (isinstance(norm_layer, type) and norm_layer.__name__ == "LayerNorm"):
        raise ValueError(f"{owner}(norm_layer={norm_layer!r}): only LayerNorm (libai.layers.LayerNorm, "
                         "the default) is supported; leave norm_layer unset")
    if ape:
        raise ValueError(f"{owner}(ape=True): absolute position embeddings are not supported; Swin "
                         "uses its relative position bias (set ape=False)")


class SwinTransformer(nn.Module, ImageClassifierMixin, PretrainedMixin):
    """Swin Transformer V1 for image classification.

    Args:
        img_size, patch_size, in_chans: input geometry. The patch grid must halve cleanly
            ``len(depths) - 1`` times and each stage's map must divide into windows.
        num_classes: width of the head.
        embed_dim: width of stage 1 (doubles per stage). Swin-T: 96.
        depths, num_heads: blocks and heads per stage. Swin-T: (2, 2, 6, 2), (3, 6, 12, 24);
            under tensor parallelism every head count must be divisible by its size.
        window_size: window side (Swin-T at 224: 7).
        mlp_ratio, qkv_bias: MLP width factor; biases on q/k/v.
        qk_scale: the attention score scale, instead of ``head_dim ** -0.5`` (LiBai's option).
        drop_rate, attn_drop_rate, drop_path_rate: dropouts and the last block's stochastic
            depth (rising linearly from 0 over all blocks).
        norm_layer, ape: LiBai's arguments, accepted with the values its configs use: the norm
            is ``libai.layers.LayerNorm`` (``None`` or that class), and absolute position
            embeddings are not supported (``ape=False``).
        patch_norm: LayerNorm after the patch embedding.
        loss_func: ``(logits, labels) -> scalar``; the default takes hard labels and soft
            MixUp targets.

    ``forward(images, labels=None)`` returns ``{"losses": loss}`` in training with labels, else
    ``{"prediction_scores": logits}``.
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
        qk_scale: Optional[float] = None,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.1,
        norm_layer: Any = None,
        ape: bool = False,
        patch_norm: bool = True,
        loss_func: Optional[nn.Module] = None,
    ) -> None:
        super().__init__()
        check_swin_options(type(self).__name__, norm_layer, ape)
        depths, num_heads = [int(d) for d in depths], [int(h) for h in num_heads]
        _check_stages(depths, num_heads, num_classes)
        init = trunc_normal_init(0.02)
        self.patch_embed = PatchEmbedding(img_size, patch_size, in_chans, embed_dim,
                                          norm=patch_norm, init_method=init, layer_idx=0)
        grid = self.patch_embed.grid_size
        _check_grid(grid, len(depths))
        self.pos_drop = nn.Dropout(drop_rate)
        rates = drop_path_rates(drop_path_rate, sum(depths))
        stages = []
        for i, (depth, heads) in enumerate(zip(depths, num_heads)):
            first = sum(depths[:i])
            stages.append(SwinStage(
                embed_dim * 2 ** i, (grid[0] // 2 ** i, grid[1] // 2 ** i), depth, heads,
                window_size, rates[first:first + depth], downsample=i < len(depths) - 1,
                first_layer_idx=first, mlp_ratio=mlp_ratio, qkv_bias=qkv_bias, drop=drop_rate,
                attn_drop=attn_drop_rate, init_method=init, **self._stage_options(i),
            ))
        self.layers = nn.ModuleList(stages)
        self.num_features = embed_dim * 2 ** (len(depths) - 1)
        self.norm = LayerNorm(self.num_features, layer_idx=-1)
        self.head = Linear(self.num_features, num_classes, init_method=init, layer_idx=-1)
        self.loss_func = ImageClassificationLoss(layer_idx=-1) if loss_func is None else loss_func
        if qk_scale is not None:  # LiBai's override of the head_dim ** -0.5 score scale
            for block in self._blocks():
                block.attn.scale = float(qk_scale)

    @classmethod
    def from_config(cls, cfg: Mapping) -> Dict[str, Any]:
        return resolve_arguments(cfg, cls.__init__, cls.__name__)[0]

    def _stage_options(self, stage: int) -> Dict[str, Any]:
        """Extra :class:`SwinStage` arguments of stage ``stage`` (V1: none; V2 picks its
        block class and per-stage pretrained window size here)."""
        return {}

    def forward_features(self, images: flow.Tensor) -> flow.Tensor:
        """Average-pooled, normalised features of the last stage ``[B, num_features]``."""
        x = self.pos_drop(self.patch_embed(images))
        for stage in self.layers:
            x = stage(x)
        return self.norm(x).mean(dim=1)

    def forward(
        self, images: flow.Tensor, labels: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        logits = self.head(self.forward_features(images))
        return self.classifier_outputs(logits, labels)

    def _blocks(self) -> List[SwinBlock]:
        return [block for stage in self.layers for block in stage.blocks]


# --------------------------------------------------------------------------- checks
def _check_heads(dim: int, num_heads: int, tp: int) -> None:
    if num_heads < 1 or dim % num_heads:
        raise ValueError(f"width {dim} is not divisible by num_heads={num_heads}")
    if num_heads % tp:
        raise ValueError(
            f"num_heads={num_heads} cannot be split over tensor_parallel_size={tp}; use head "
            f"counts divisible by {tp} in every stage"
        )


def _check_window(resolution: Tuple[int, int], window: int, shift: int) -> None:
    if any(r % window for r in resolution):
        raise ValueError(
            f"a {resolution[0]}x{resolution[1]} token map does not divide into {window}x{window} "
            "windows; choose img_size, patch_size and window_size so that every stage's map "
            "(img_size / patch_size / 2**stage) is a multiple of window_size"
        )
    if not 0 <= shift < window:
        raise ValueError(f"shift_size must be within [0, window_size={window}), got {shift}")


def _check_stages(depths: List[int], num_heads: List[int], num_classes: int) -> None:
    if not depths or len(depths) != len(num_heads):
        raise ValueError(
            f"depths {depths} and num_heads {num_heads} must list one entry per stage"
        )
    if min(depths) < 1:
        raise ValueError(f"every stage needs at least one block, got depths={depths}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")


def _check_grid(grid: Tuple[int, int], num_stages: int) -> None:
    factor = 2 ** (num_stages - 1)
    if grid[0] % factor or grid[1] % factor:
        raise ValueError(
            f"the {grid[0]}x{grid[1]} patch grid cannot be halved {num_stages - 1} times for "
            f"{num_stages} stages; make img_size / patch_size a multiple of {factor}"
        )
