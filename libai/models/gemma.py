"""Gemma: the Llama skeleton with Gemma's norms, embedding scale, GeGLU and wide heads.

What Gemma sets differently from Llama, all settings of :class:`~libai.models.LlamaModel`:

- every RMSNorm scales by ``1 + w`` (``norm_weight_offset=1``; the weights start at 0), in
  float32 before casting back, as Hugging Face's GemmaRMSNorm does;
- the word embeddings are multiplied by ``sqrt(hidden_size)`` rounded to their dtype
  (``scale_embeddings=True``);
- the MLP is GeGLU: the gate goes through the tanh approximation of GELU
  (``activation="gelu_tanh"``, Hugging Face's ``gelu_pytorch_tanh``);
- heads are set apart from the width (``head_dim=256`` with 16 heads of a 3072-wide model in
  Gemma-7B);
- the head is tied to the word embedding (``tie_word_embeddings=True``).
"""
from typing import Optional

from libai.config import configurable
from libai.models.language_model import constructor_arguments
from libai.models.llama import LlamaForCausalLM, LlamaModel

__all__ = ["GemmaModel", "GemmaForCausalLM"]


class GemmaModel(LlamaModel):
    """The Gemma body; arguments as :class:`~libai.models.LlamaModel`'s with Gemma's defaults."""

    @configurable
    def __init__(
        self,
        vocab_size: int,
        hidden_size: int,
        hidden_layers: int,
        num_attention_heads: int,
        intermediate_size: int,
        num_key_value_heads: Optional[int] = None,
        max_position_embeddings: int = 8192,
        rms_norm_eps: float = 1e-6,
        rope_theta: float = 10000.0,
        initializer_range: float = 0.02,
        use_scaled_init_for_output_weights: bool = False,
        tie_word_embeddings: bool = True,
        attention_dropout_prob: float = 0.0,
        hidden_dropout_prob: float = 0.0,
        head_dim: Optional[int] = 256,
        activation: str = "gelu_tanh",
        norm_weight_offset: float = 1.0,
        scale_embeddings: bool = True,
        scale_mask_softmax_fusion: bool = False,
        amp_enabled: bool = False,
    ) -> None:
        super().__init__(**constructor_arguments(locals()))


class GemmaForCausalLM(LlamaForCausalLM):
    """Gemma with its (tied) LM head and causal LM loss (see
    :class:`~libai.models.LlamaForCausalLM`)."""

    body_class = GemmaModel
