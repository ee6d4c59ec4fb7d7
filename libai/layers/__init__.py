"""Parallel-aware layers: write a model once, run it under any data/tensor/pipeline layout.

Every layer reads the current :class:`~libai.utils.distributed.ParallelLayout` when it is
built, keeps it as ``self.layout`` and records ``self.layer_idx`` (its pipeline position).
See ``docs/parallel_layers.md``.
"""
from libai.layers.activation import Activation, build_activation, gelu, gelu_tanh, quick_gelu
from libai.layers.affine import Affine
from libai.layers.attention import AttnMaskType, MultiheadAttention
from libai.layers.conv import Conv1D
from libai.layers.cross_entropy import ParallelCrossEntropyLoss
from libai.layers.droppath import DropPath, drop_path
from libai.layers.embedding import Embedding, SinePositionalEmbedding, VocabEmbedding
from libai.layers.layer_norm import LayerNorm, RMSLayerNorm, RMSNorm
from libai.layers.linear import Linear, Linear1D
from libai.layers.lora import LoRALinear
from libai.layers.lm_logits import LMLogits
from libai.layers.loss_compose import LossKeyCompose
from libai.layers.mlp import MLP
from libai.layers.patch_embedding import PatchEmbedding
from libai.layers.rotary import RotaryEmbedding
from libai.layers.transformer_layer import TransformerLayer
from libai.layers.utils import skip_weight_init

__all__ = [
    "Activation",
    "Affine",
    "AttnMaskType",
    "Conv1D",
    "DropPath",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Linear1D",
    "LoRALinear",
    "LMLogits",
    "LossKeyCompose",
    "MLP",
    "MultiheadAttention",
    "PatchEmbedding",
    "ParallelCrossEntropyLoss",
    "RMSLayerNorm",
    "RMSNorm",
    "RotaryEmbedding",
    "SinePositionalEmbedding",
    "TransformerLayer",
    "VocabEmbedding",
    "build_activation",
    "drop_path",
    "gelu",
    "gelu_tanh",
    "quick_gelu",
    "skip_weight_init",
]
