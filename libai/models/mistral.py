"""Mistral: the Llama skeleton with sliding-window attention.

Each query attends to the ``sliding_window`` most recent tokens (itself included), in every
block: :class:`~libai.layers.MultiheadAttention`'s ``sliding_window`` masks the scores the
same way in training, in a full forward and in cached decoding, also once the sequence is
longer than the window. Everything else (RMSNorm, rotary positions, SwiGLU, grouped-query
attention, untied head, module names, parallelism) is Llama's (see :mod:`libai.models.llama`).
``sliding_window=None`` (Mistral-7B-v0.2 and later) is full causal attention.
"""
from libai.models.llama import llama_family

__all__ = ["MistralModel", "MistralForCausalLM"]

MistralModel, MistralForCausalLM = llama_family(
    __name__, "MistralModel", "MistralForCausalLM",
    """The Mistral body: :class:`~libai.models.LlamaModel` with Mistral-7B-v0.1's defaults (``sliding_window=4096``, 8 key/value heads).""",
    sliding_window=4096, num_key_value_heads=8, max_position_embeddings=32768, rms_norm_eps=1e-5,
)
