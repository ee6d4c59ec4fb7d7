"""Qwen3: the Llama skeleton with per-head query/key RMSNorm and an explicit head size.

Each head's query and key are RMS-normalised over the head's features (``query_norm`` /
``key_norm`` of the attention, weights ``[head_dim]``) after projection and before rotation
(``qk_norm=True``), and the head size is set on its own (``head_dim``: 128 in the published
models, where ``heads x head_dim`` need not equal the width). No biases. Everything else
(module names, caching, parallelism) is Llama's (see :mod:`libai.models.llama`).
"""
from typing import Optional

from libai.config import configurable
from libai.models.language_model import constructor_arguments
from libai.models.llama import LlamaForCausalLM, LlamaModel

__all__ = ["Qwen3Model", "Qwen3ForCausalLM"]


class Qwen3Model(LlamaModel):
    """The Qwen3 body; arguments as :class:`~libai.models.LlamaModel`'s with Qwen3's defaults
    (``qk_norm=True``, ``head_dim=128``, ``rope_theta=1e6``)."""

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = None,
        max_position_embeddings: int = 40960,
        rms_norm_eps: float = 1e-6,
        rope_theta: float = 1000000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = False,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        head_dim: Optional[int] = 128,
        qk_norm: bool = True,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(**constructor_arguments(locals()))


class Qwen3ForCausalLM(LlamaForCausalLM):
    """Qwen3 with its LM head and causal LM loss (see :class:`~libai.models.LlamaForCausalLM`)."""

    body_class = Qwen3Model
