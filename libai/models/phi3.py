"""Phi-3: the Llama skeleton as Phi-3 configures it.

Phi-3's blocks compute what Llama's do (RMSNorm, rotary positions, SwiGLU, grouped-query
attention, no biases, untied head); Phi-3-mini also slides a window over the keys
(``sliding_window=2047`` in its 4k-context release; see :mod:`libai.models.mistral` for how the
window applies). What is Phi-3's own is its checkpoint layout, fused ``qkv_proj`` and
``gate_up_proj`` tensors, which the mapping splits on load and fuses on export
(:mod:`libai.models.pretrained.families.phi3`); libai's modules are Llama's.
"""
from libai.models.llama import llama_family

__all__ = ["Phi3Model", "Phi3ForCausalLM"]

Phi3Model, Phi3ForCausalLM = llama_family(
    __name__, "Phi3Model", "Phi3ForCausalLM",
    """The Phi-3 body: :class:`~libai.models.LlamaModel` with Phi-3-mini's defaults (``rms_norm_eps=1e-5``, ``sliding_window=2047``).""",
    sliding_window=2047, rms_norm_eps=1e-5, max_position_embeddings=4096,
)
