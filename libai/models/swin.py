"""Swin Transformer (V1): attention inside local windows, shifted between blocks, over a
feature map that is halved in resolution and doubled in width from stage to stage.

The model is split by question, each module built from libai's parallel layers so the model
runs under any layout:

- :mod:`libai.models.swin_windows`: window geometry, the shifted-window mask and
  :class:`WindowAttention`;
- :mod:`libai.models.swin_blocks`: :class:`SwinBlock`, :class:`PatchMerging`,
  :class:`SwinStage`;
- this module: :class:`SwinTransformer`, the classifier that stacks the stages, and LiBai's
  import path for all of the above (re-exported).

Layer indices: patch embedding ``0``, the blocks of all stages numbered ``0 .. sum(depths)-1``
in order (a stage's patch merging goes with its last block), final norm, head and loss ``-1``;
so ``train.dist.pipeline_num_layers = sum(depths)``.
"""
from typing import Any, Dict, List, Optional, Sequence, Tuple

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import LayerNorm, Linear
from libai.models.pretrained.api import PretrainedMixin
from libai.models.swin_blocks import PatchMerging, SwinBlock, SwinStage
from libai.models.swin_windows import (
    WindowAttention,
    relative_position_index,
    shifted_window_mask,
    window_partition,
    window_reverse,
)
from libai.models.vision_common import (
    ImageClassificationLoss,
    ImageClassifierMixin,
    PatchEmbedding,
    drop_path_rates,
    trunc_normal_init,
)

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
