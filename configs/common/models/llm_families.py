"""The published shapes of the decoder families built on the Llama skeleton.

``from configs.common.models.llm_families import qwen2_7b`` (a function returning a ready
model node, like ``llama2_7b`` in :mod:`configs.common.models.llama`); :func:`family_cfg`
gives the settings dict of a named shape. The values are those of each model's published
``config.json``; a pipelined run sets ``train.dist.pipeline_num_layers =
model.cfg.hidden_layers``. Plan one with ``tools/train_net.py --config-file <cfg> --dry-run``
after ``model = qwen2_7b()`` in the config.
"""
from typing import Any, Dict

from libai.config import LazyCall
from libai.models import (
    GemmaForCausalLM, MistralForCausalLM, Phi3ForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM,
)

# name -> (class, settings of its published config.json)
_SHAPES: Dict[str, Any] = {
    "qwen2-7b": (Qwen2ForCausalLM, dict(
        vocab_size=152064, hidden_size=3584, hidden_layers=28, num_attention_heads=28,
        num_key_value_heads=4, intermediate_size=18944, max_position_embeddings=131072,
        rms_norm_eps=1e-6, rope_theta=1000000.0, tie_word_embeddings=False, qkv_bias=True)),
    "mistral-7b-v0.1": (MistralForCausalLM, dict(
        vocab_size=32000, hidden_size=4096, hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=8, intermediate_size=14336, max_position_embeddings=32768,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, sliding_window=4096)),
    "qwen3-8b": (Qwen3ForCausalLM, dict(
        vocab_size=151936, hidden_size=4096, hidden_layers=36, num_attention_heads=32,
        num_key_value_heads=8, head_dim=128, intermediate_size=12288,
        max_position_embeddings=40960, rms_norm_eps=1e-6, rope_theta=1000000.0,
        tie_word_embeddings=False, qk_norm=True)),
    "gemma-7b": (GemmaForCausalLM, dict(
        vocab_size=256000, hidden_size=3072, hidden_layers=28, num_attention_heads=16,
        num_key_value_heads=16, head_dim=256, intermediate_size=24576,
        max_position_embeddings=8192, rms_norm_eps=1e-6, rope_theta=10000.0,
        tie_word_embeddings=True, activation="gelu_tanh", norm_weight_offset=1.0,
        scale_embeddings=True)),
    "phi-3-mini": (Phi3ForCausalLM, dict(
        vocab_size=32064, hidden_size=3072, hidden_layers=32, num_attention_heads=32,
        num_key_value_heads=32, intermediate_size=8192, max_position_embeddings=4096,
        rms_norm_eps=1e-5, rope_theta=10000.0, tie_word_embeddings=False, sliding_window=2047)),
}


def family_cfg(name: str) -> Dict[str, Any]:
    """A copy of the settings of the named shape (``"qwen2-7b"``, ...)."""
    if name not in _SHAPES:
        raise ValueError(f"unknown model shape {name!r}; choose one of {sorted(_SHAPES)}")
    return dict(_SHAPES[name][1])


def _node(name: str):
    return LazyCall(_SHAPES[name][0])(cfg=family_cfg(name))


def qwen2_7b():
    """Qwen2-7B's shape (7.62B parameters: q/k/v biases, 4 key/value heads, untied head)."""
    return _node("qwen2-7b")


def mistral_7b():
    """Mistral-7B-v0.1's shape (7.24B parameters, a 4096-token sliding window)."""
    return _node("mistral-7b-v0.1")


def qwen3_8b():
    """Qwen3-8B's shape (8.19B parameters: per-head q/k norms, head_dim 128)."""
    return _node("qwen3-8b")


def gemma_7b():
    """Gemma-7B's shape (8.54B parameters: 16 heads of 256 in a 3072-wide model, GeGLU)."""
    return _node("gemma-7b")


def phi3_mini():
    """Phi-3-mini-4k's shape (3.82B parameters, a 2047-token sliding window)."""
    return _node("phi-3-mini")
