"""Llama-style decoder config: ``from configs.common.models.llama import model``.

The defaults are a tiny model that trains on a CPU. Named shapes: :func:`llama_cfg` with
``"tiny"``, ``"7b"`` (Llama-2-7B: 32 blocks of width 4096, 32 heads, SwiGLU 11008),
``"13b"`` (40 / 5120 / 40 / 13824) and ``"70b"`` (80 / 8192 / 64 heads with 8 key/value
heads, 28672); the config functions ``llama_tiny()``, ``llama2_7b()``, ``llama2_13b()``,
``llama2_70b()`` return ready model nodes. A pipelined run sets
``train.dist.pipeline_num_layers = model.cfg.hidden_layers``; tensor parallelism needs
``num_key_value_heads`` (and ``num_attention_heads``) divisible by the tensor parallel size.
"""
from libai.config import LazyCall
from libai.models import LlamaForCausalLM

cfg = dict(
    vocab_size=2048,  # Llama-2: 32000 (a multiple of the tensor parallel size is needed)
    hidden_size=128,
    hidden_layers=4,
    num_attention_heads=4,
    num_key_value_heads=2,  # grouped-query attention; None = as many as query heads
    intermediate_size=352,  # SwiGLU inner size (Llama: about 8/3 × hidden, rounded)
    max_position_embeddings=256,  # rotary positions need no table; this bounds the inputs
    rms_norm_eps=1e-6,
    rope_theta=10000.0,
    initializer_range=0.02,
    use_scaled_init_for_output_weights=False,
    tie_word_embeddings=False,
    attention_dropout_prob=0.0,
    hidden_dropout_prob=0.0,
    scale_mask_softmax_fusion=False,  # CUDA-only; ignored on the CPU
    amp_enabled=False,
)

model = LazyCall(LlamaForCausalLM)(cfg=cfg)

# name -> (hidden, layers, heads, key/value heads, intermediate, vocab, positions, eps)
_SHAPES = {
    "tiny": (128, 4, 4, 2, 352, 2048, 256, 1e-6),
    "7b": (4096, 32, 32, 32, 11008, 32000, 4096, 1e-5),
    "13b": (5120, 40, 40, 40, 13824, 32000, 4096, 1e-5),
    "70b": (8192, 80, 64, 8, 28672, 32000, 4096, 1e-5),
}


def llama_cfg(size: str) -> dict:
    """A copy of ``cfg`` at a named shape (``"tiny"``, ``"7b"``, ``"13b"``, ``"70b"``)."""
    if size not in _SHAPES:
        raise ValueError(f"unknown Llama shape {size!r}; choose one of {sorted(_SHAPES)}")
    hidden, layers, heads, kv, inner, vocab, positions, eps = _SHAPES[size]
    return dict(cfg, hidden_size=hidden, hidden_layers=layers, num_attention_heads=heads,
                num_key_value_heads=kv, intermediate_size=inner, vocab_size=vocab,
                max_position_embeddings=positions, rms_norm_eps=eps)


def llama_tiny():
    """The CPU-sized default (1.26M parameters with its 2048-token vocabulary)."""
    return LazyCall(LlamaForCausalLM)(cfg=llama_cfg("tiny"))


def llama2_7b():
    """Llama-2-7B's shape (6.7B parameters)."""
    return LazyCall(LlamaForCausalLM)(cfg=llama_cfg("7b"))


def llama2_13b():
    """Llama-2-13B's shape (13B parameters)."""
    return LazyCall(LlamaForCausalLM)(cfg=llama_cfg("13b"))


def llama2_70b():
    """Llama-2-70B's shape (69B parameters, grouped-query attention with 8 key/value heads)."""
    return LazyCall(LlamaForCausalLM)(cfg=llama_cfg("70b"))
