"""Qwen3: the Llama skeleton with per-head query/key RMSNorm and an explicit head size.

Each head's query and key are RMS-normalised over the head's features (``query_norm`` /
``key_norm`` of the attention, weights ``[head_dim]``) after projection and before rotation
(``qk_norm=True``), and the head size is set on its own (``head_dim``: 128 in the published
models, where ``heads x head_dim`` need not equal the width). No biases. Everything else
(module names, caching, parallelism) is Llama's (see :mod:`libai.models.llama`).
"""
from libai.models.llama import llama_family

__all__ = ["Qwen3Model", "Qwen3ForCausalLM"]

Qwen3Model, Qwen3ForCausalLM = llama_family(
    __name__, "Qwen3Model", "Qwen3ForCausalLM",
    """The Qwen3 body: :class:`~libai.models.LlamaModel` with Qwen3's defaults (``qk_norm=True``, ``head_dim=128``, ``rope_theta=1e6``).""",
    qk_norm=True, head_dim=128, rope_theta=1000000.0, max_position_embeddings=40960,
)
