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
from libai.models.llama import llama_family

__all__ = ["Qwen2Model", "Qwen2ForCausalLM"]

Qwen2Model, Qwen2ForCausalLM = llama_family(
    __name__, "Qwen2Model", "Qwen2ForCausalLM",
    """The Qwen2 body: :class:`~libai.models.LlamaModel` with Qwen2's defaults (``qkv_bias=True``, ``rope_theta=1e6``).""",
    qkv_bias=True, rope_theta=1000000.0, max_position_embeddings=32768,
)
