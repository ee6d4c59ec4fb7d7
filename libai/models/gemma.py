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
from libai.models.llama import llama_family

__all__ = ["GemmaModel", "GemmaForCausalLM"]

GemmaModel, GemmaForCausalLM = llama_family(
    __name__, "GemmaModel", "GemmaForCausalLM",
    """The Gemma body: :class:`~libai.models.LlamaModel` with Gemma's settings as defaults.""",
    head_dim=256, activation="gelu_tanh", norm_weight_offset=1.0, scale_embeddings=True,
    tie_word_embeddings=True, max_position_embeddings=8192,
)
