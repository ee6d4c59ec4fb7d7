"""Phi-3: the Llama skeleton as Phi-3 configures it.

Phi-3's blocks compute what Llama's do (RMSNorm, rotary positions, SwiGLU, grouped-query
attention, no biases, untied head); Phi-3-mini also slides a window over the keys
(``sliding_window=2047`` in its 4k-context release; see :mod:`libai.models.mistral` for how the
window applies). What is Phi-3's own is its checkpoint layout, fused ``qkv_proj`` and
``gate_up_proj`` tensors, which the mapping splits on load and fuses on export
(:mod:`libai.models.pretrained.families.phi3`); libai's modules are Llama's.
"""
from typing import Optional

from libai.config import configurable
from libai.models.language_model import constructor_arguments
from libai.models.llama import LlamaForCausalLM, LlamaModel

__all__ = ["Phi3Model", "Phi3ForCausalLM"]


class Phi3Model(LlamaModel):
    """The Phi-3 body; arguments as :class:`~libai.models.LlamaModel`'s with Phi-3-mini's
    defaults (``rms_norm_eps=1e-5``, ``sliding_window=2047``)."""

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = None,
        max_position_embeddings: int = 4096,
        rms_norm_eps: float = 1e-5,
        rope_theta: float = 10000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = False,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        head_dim: Optional[int] = None,
        sliding_window: Optional[int] = 2047,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(**constructor_arguments(locals()))


class Phi3ForCausalLM(LlamaForCausalLM):
    """Phi-3 with its LM head and causal LM loss (see :class:`~libai.models.LlamaForCausalLM`)."""

    body_class = Phi3Model
