"""Vision Transformer (ViT): an image is a sequence of patches fed to a plain transformer.

``images [B, C, H, W]`` are cut into ``patch × patch`` squares and projected
(:class:`~libai.models.vision_common.PatchEmbedding`), a learned class token is prepended and
learned position embeddings added; ``depth`` pre-norm :class:`~libai.layers.TransformerLayer`
blocks (GELU MLP, stochastic depth) follow, then a final LayerNorm, and a linear head reads the
class token.

Built from libai's parallel layers, it runs under any layout: attention heads and MLP features
split over tensor-parallel ranks, the batch over data-parallel ranks, and the blocks over
pipeline stages with the patch embedding at ``layer_idx=0``, block ``i`` at ``i`` and the
final norm, head and loss at ``-1`` (``train.dist.pipeline_num_layers = depth``).
"""
from typing import Dict, List, Optional

import oneflow as flow
from oneflow import nn

from libai.config import configurable
from libai.layers import LayerNorm, Linear, TransformerLayer
from libai.layers.utils import make_parameter, split_like
from libai.models.pretrained.api import PretrainedMixin
from libai.models.vision_common import (
    ImageClassificationLoss,
    ImageClassifierMixin,
    PatchEmbedding,
    drop_path_rates,
    trunc_normal_init,
)
from libai.utils.distributed import current_layout

__all__ = ["VisionTransformer"]


class VisionTransformer(nn.Module, ImageClassifierMixin, PretrainedMixin):
    """ViT for image classification.

    Args:
        img_size, patch_size, in_chans: input geometry; ``img_size`` must divide into patches.
        embed_dim, depth, num_heads, mlp_ratio: transformer sizes (ViT-B/16: 768, 12, 12, 4.0).
            ``num_heads`` must be divisible by the tensor parallel size.
        drop_rate: dropout on the embeddings and after attention and MLP.
        attn_drop_rate: dropout on the attention weights.
        drop_path_rate: stochastic depth of the last block (rising linearly from 0).
        num_classes: width of the head.
        loss_func: a module ``(logits, labels) -> scalar``; the default
            :class:`~libai.models.vision_common.ImageClassificationLoss` takes hard labels and
            the soft targets MixUp produces.
        layernorm_epsilon: eps of every LayerNorm (1e-5, LiBai's, so its ViT configs and
            checkpoints give its logits; timm's ViTs use 1e-6, Hugging Face's their config's
            ``layer_norm_eps``, 1e-12, which ``from_pretrained`` sets).
        activation: the MLP non-linearity.

    ``forward(images, labels=None)`` returns ``{"losses": loss}`` in training with labels, else
    ``{"prediction_scores": logits [B, num_classes]}``. Also buildable from one config dict:
    ``VisionTransformer(dict(img_size=32, ...))``.
    """

    @configurable
    def __init__(
        self,
        img_size: int = 224,
        patch_size: int = 16,
        in_chans: int = 3,
        embed_dim: int = 768,
        depth: int = 12,
        num_heads: int = 12,
        mlp_ratio: float = 4.0,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        drop_path_rate: float = 0.0,
        num_classes: int = 1000,
        loss_func: Optional[nn.Module] = None,
        layernorm_epsilon: float = 1e-5,
        activation: str = "gelu",
    ) -> None:
        super().__init__()
        _check_sizes(depth, num_classes)
        self.layout = current_layout()
        init = trunc_normal_init(0.02)
        self.patch_embed = PatchEmbedding(
            img_size, patch_size, in_chans, embed_dim, init_method=init, layer_idx=0
        )
        positions = self.patch_embed.num_patches + 1
        self.cls_token = make_parameter((1, 1, embed_dim), init, self.layout, 0)
        self.pos_embed = make_parameter((1, positions, embed_dim), init, self.layout, 0)
        self.pos_drop = nn.Dropout(drop_rate)
        self.blocks = nn.ModuleList(
            [
                TransformerLayer(
                    embed_dim, int(embed_dim * mlp_ratio), num_heads,
                    attention_dropout_prob=attn_drop_rate, output_dropout_prob=drop_rate,
                    drop_path_prob=rate, layernorm_epsilon=layernorm_epsilon, init_method=init,
                    layernorm_position="pre", activation=activation, layer_idx=i,
                )
                for i, rate in enumerate(drop_path_rates(drop_path_rate, depth))
            ]
        )
        self.norm = LayerNorm(embed_dim, eps=layernorm_epsilon, layer_idx=-1)
        self.head = Linear(embed_dim, num_classes, init_method=init, layer_idx=-1)
        self.loss_func = ImageClassificationLoss(layer_idx=-1) if loss_func is None else loss_func

    def forward_features(self, images: flow.Tensor) -> flow.Tensor:
        """The normalised class-token features ``[B, embed_dim]``."""
        x = self.patch_embed(images)
        # the class token split over the batch like the patches: a replicated one would make
        # OneFlow replicate the concatenation and every block after it (split_like says why)
        cls_token = split_like(self.cls_token.expand(x.shape[0], -1, -1), x)
        x = flow.cat([cls_token, x], dim=1) + self.pos_embed
        x = self.pos_drop(x)
        for block in self.blocks:
            x = block(x)
        return self.norm(x[:, 0])  # LayerNorm is per token: only the class token is needed

    def forward(
        self, images: flow.Tensor, labels: Optional[flow.Tensor] = None
    ) -> Dict[str, flow.Tensor]:
        logits = self.head(self.forward_features(images))
        return self.classifier_outputs(logits, labels)

    def _blocks(self) -> List[nn.Module]:
        return list(self.blocks)


def _check_sizes(depth: int, num_classes: int) -> None:
    if depth < 1:
        raise ValueError(f"a VisionTransformer needs depth >= 1, got {depth}")
    if num_classes < 1:
        raise ValueError(f"num_classes must be >= 1, got {num_classes}")
