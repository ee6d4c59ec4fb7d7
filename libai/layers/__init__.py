"""Parallel-aware layers: write a model once, run it under any data/tensor/pipeline layout.

Every layer reads the current :class:`~libai.utils.distributed.ParallelLayout` when it is
built, keeps it as ``self.layout`` and records ``self.layer_idx`` (its pipeline position).
See ``docs/parallel_layers.md``.
"""
from libai.layers.activation import Activation, build_activation, gelu, gelu_tanh, quick_gelu
from libai.layers.attention import AttnMaskType, MultiheadAttention
from libai.layers.cross_entropy import ParallelCrossEntropyLoss
from libai.layers.embedding import Embedding, VocabEmbedding
from libai.layers.layer_norm import LayerNorm
from libai.layers.linear import Linear, Linear1D
from libai.layers.lm_logits import LMLogits
from libai.layers.mlp import MLP
from libai.layers.transformer_layer import DropPath, TransformerLayer, drop_path

__all__ = [
    "Activation",
    "AttnMaskType",
    "DropPath",
    "Embedding",
    "LayerNorm",
    "Linear",
    "Linear1D",
    "LMLogits",
    "MLP",
    "MultiheadAttention",
    "ParallelCrossEntropyLoss",
    "TransformerLayer",
    "VocabEmbedding",
    "build_activation",
    "drop_path",
    "gelu",
    "gelu_tanh",
    "quick_gelu",
]
