"""Qwen2: the Llama skeleton with biased query/key/value projections.

Qwen2 is :class:`~libai.models.LlamaModel`'s block (RMSNorm, rotary positions, SwiGLU,
grouped-query attention) with two differences that are settings, not code: the q/k/v
projections carry biases (``qkv_bias=True``; the output projection and the MLP do not), and
the rotary base is large (``rope_theta=1e6`` in the published models). The head is untied in
the 7B model (tied in the smallest ones: ``tie_word_embeddings`` follows ``config.json``).
Module names, caching and parallelism are Llama's (see :mod:`libai.models.llama`).
Hugging Face's sliding-window option (``use_sliding_window``) is off in every published Qwen2
and refused on import (see :mod:`libai.models.pretrained.families.qwen2`).
"""
from typing import Optional

from libai.config import configurable
from libai.models.language_model import constructor_arguments
from libai.models.llama import LlamaForCausalLM, LlamaModel

__all__ = ["Qwen2Model", "Qwen2ForCausalLM"]


class Qwen2Model(LlamaModel):
    """The Qwen2 body; arguments as :class:`~libai.models.LlamaModel`'s with Qwen2's defaults
    (``qkv_bias=True``, ``rope_theta=1e6``)."""

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = None,
        max_position_embeddings: int = 32768,
        rms_norm_eps: float = 1e-6,
        rope_theta: float = 1000000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = False,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        head_dim: Optional[int] = None,
        qkv_bias: bool = True,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(**constructor_arguments(locals()))


class Qwen2ForCausalLM(LlamaForCausalLM):
    """Qwen2 with its LM head and causal LM loss (see :class:`~libai.models.LlamaForCausalLM`)."""

    body_class = Qwen2Model
