"""ResMLP (Touvron et al., 2021): an image classifier made only of linear layers.

Patches are embedded as in ViT; each block then mixes information *across patches* with one
linear layer applied to the patch axis (the same for every channel), and *within a patch* with
a two-layer GELU MLP, each behind an :class:`~libai.layers.Affine` pre-normalisation and a
learned per-channel residual scale (``gamma_1``, ``gamma_2``, "LayerScale", starting small:
``init_scale``). A final Affine, the mean over patches and a linear head give the logits.

Built from libai's parallel layers, it runs under any layout: the channel MLP is column- then
row-parallel over tensor-parallel ranks (``embed_dim`` and ``4 · embed_dim`` divisible by the
tensor-parallel size), the cross-patch layer and the Affines are replicated, the batch is split
over data-parallel ranks, and blocks spread over pipeline stages: the patch embedding at
``layer_idx=0``, block ``i`` at ``i``, the final Affine, head and loss at ``-1``
(``train.dist.pipeline_num_layers = depth``). Parameter names follow LiBai's ResMLP.
"""
from typing import Dict, List, Optional

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import MLP, Affine, DropPath, Linear
from libai.layers.utils import make_parameter, to_layer
from libai.models.cnn_common import torch_default_init
from libai.models.vision_common import (
    ImageClassificationLoss,
    ImageClassifierMixin,
    PatchEmbedding,
    trunc_normal_init,
)
from libai.utils.distributed import current_layout

__all__ = ["ResMLP", "ResMLPBlock", "layers_scale_mlp_blocks"]


class ResMLPBlock(nn.Module):
    """``x += gamma_1 · mix_patches(Affine(x))``; ``x += gamma_2 · MLP(Affine(x))``.

    Args:
        dim: channels per patch.
        drop: dropout at the MLP's output.
        drop_path: stochastic depth of both branches.
        init_values: initial value of every entry of ``gamma_1`` and ``gamma_2``.
        num_patches: length of the patch axis the cross-patch layer mixes.
        layer_idx: pipeline position.
    """

    def __init__(
        self,
        dim: int,
        drop: float = 0.0,
        drop_path: float = 0.0,
        init_values: float = 1e-4,
        num_patches: int = 196,
        *,
        layer_idx: int = 0,
    ) -> None:
        super().__init__()
        self.layout = current_layout()
        self.layer_idx = layer_idx
        init = trunc_normal_init(0.02)
        self.norm1 = Affine(dim, layer_idx=layer_idx)
        self.attn = Linear(num_patches, num_patches, init_method=init, layer_idx=layer_idx)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = Affine(dim, layer_idx=layer_idx)
        self.mlp = MLP(dim, 4 * dim, output_dropout_prob=drop, init_method=init,
                       layer_idx=layer_idx)
        scale = lambda t: nn.init.constant_(t, init_values)  # noqa: E731
        self.gamma_1 = make_parameter((dim,), scale, self.layout, layer_idx)
        self.gamma_2 = make_parameter((dim,), scale, self.layout, layer_idx)

    def forward(self, x: flow.Tensor) -> flow.Tensor:
        x = to_layer(x, self.layout, self.layer_idx)
        mixed = self.attn(self.norm1(x).transpose(1, 2)).transpose(1, 2)
        x = x + self.drop_path(self.gamma_1 * mixed)
        return x + self.drop_path(self.gamma_2 * self.mlp(self.norm2(x)))


layers_scale_mlp_blocks = ResMLPBlock  # LiBai's name for the block


class ResMLP(nn.Module, ImageClassifierMixin):
    """ResMLP for image classification (LiBai's ``ResMLP``; the paper's ResMLP-S12 by default
    is ``embed_dim=384, depth=12, init_scale=0.1``).

    Args:
        img_size, patch_size, in_chans: input geometry; the image must divide into patches.
        embed_dim: channels per patch (divisible by the tensor-parallel size).
        depth: number of blocks.
        drop_rate: dropout at the output of each block's MLP.
        drop_path_rate: stochastic depth of every block (the same for all, as in ResMLP).
        init_scale: initial LayerScale (0.1 for 12 blocks, 1e-5 for 24, 1e-6 for 36).
        num_classes: width of the head.
        loss_func: a module ``(logits, labels) -> scalar``; the default takes hard labels and
            the soft targets of MixUp/CutMix.

    ``forward(images, labels=None)`` returns ``{"losses": loss}`` in training with labels, else
    ``{"prediction_scores": logits [B, num_classes]}``.
    """

    @configurable
    def __init__(
        self,
        img_size: int = 224,
        patch_size: int = 16,
        in_chans: int = 3,
        embed_dim: int = 768,
        depth: int = 12,
        drop_rate: float = 0.0,
        drop_path_rate: float = 0.0,
        init_scale: float = 1e-4,
        num_classes: int = 1000,
        loss_func: Optional[nn.Module] = None,
    ) -> None:
        super().__init__()
        if depth < 1 or num_classes < 1:
            raise ValueError(f"ResMLP needs depth >= 1 and num_classes >= 1, got {depth}, {num_classes}")
        if not 0.0 <= drop_path_rate < 1.0:
            raise ValueError(f"drop_path_rate must be within [0, 1), got {drop_path_rate}")
        self.layout = current_layout()
        self.num_classes, self.embed_dim, self.depth = num_classes, embed_dim, depth
        self.patch_embed = PatchEmbedding(
            img_size, patch_size, in_chans, embed_dim, init_method=torch_default_init, layer_idx=0
        )
        self.blocks = nn.ModuleList(
            [
                ResMLPBlock(embed_dim, drop_rate, drop_path_rate, init_scale,
                            self.patch_embed.num_patches, layer_idx=i)
                for i in range(depth)
            ]
        )
        self.norm = Affine(embed_dim, layer_idx=-1)
        self.head = Linear(embed_dim, num_classes, init_method=trunc_normal_init(0.02), layer_idx=-1)
        self.loss_func = ImageClassificationLoss(layer_idx=-1) if loss_func is None else loss_func

    def forward_features(self, images: flow.Tensor) -> flow.Tensor:
        """Patch features after the last block ``[B, patches, embed_dim]``."""
        x = self.patch_embed(images)
        for block in self.blocks:
            x = block(x)
        return x

    def forward_head(self, x: flow.Tensor) -> flow.Tensor:
        """Logits from patch features: final Affine, mean over patches, linear head."""
        return self.head(self.norm(x).mean(dim=1))

    def forward(
        self, images: flow.Tensor, labels: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        return self.classifier_outputs(self.forward_head(self.forward_features(images)), labels)

    def _blocks(self) -> List[nn.Module]:
        return list(self.blocks)
