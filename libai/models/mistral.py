"""Mistral: the Llama skeleton with sliding-window attention.

Each query attends to the ``sliding_window`` most recent tokens (itself included), in every
block: :class:`~libai.layers.MultiheadAttention`'s ``sliding_window`` masks the scores the
same way in training, in a full forward and in cached decoding, also once the sequence is
longer than the window. Everything else (RMSNorm, rotary positions, SwiGLU, grouped-query
attention, untied head, module names, parallelism) is Llama's (see :mod:`libai.models.llama`).
``sliding_window=None`` (Mistral-7B-v0.2 and later) is full causal attention.
"""
from typing import Optional

from libai.config import configurable
from libai.models.language_model import constructor_arguments
from libai.models.llama import LlamaForCausalLM, LlamaModel

__all__ = ["MistralModel", "MistralForCausalLM"]


class MistralModel(LlamaModel):
    """The Mistral body; arguments as :class:`~libai.models.LlamaModel`'s with Mistral-7B-v0.1's
    defaults (``sliding_window=4096``, 8 key/value heads when not given otherwise)."""

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = 8,
        max_position_embeddings: int = 32768,
        rms_norm_eps: float = 1e-5,
        rope_theta: float = 10000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = False,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        head_dim: Optional[int] = None,
        qkv_bias: bool = False,
        sliding_window: Optional[int] = 4096,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(**constructor_arguments(locals()))


class MistralForCausalLM(LlamaForCausalLM):
    """Mistral with its LM head and causal LM loss (see :class:`~libai.models.LlamaForCausalLM`)."""

    body_class = MistralModel
