"""T5 model config: ``from configs.common.models.t5 import model``.

The defaults are a small T5 (LiBai's flavour) that trains on a CPU. Named presets below:
``t5_small()`` / ``t5_base()`` / ``t5_large()`` (LiBai's flavour at Google's sizes),
``t5_v1_1_small()`` / ``t5_v1_1_base()``, ``mt5_small()`` / ``mt5_base()``, and
``t5_cfg(size, flavour)`` for any size/flavour pair (flavour ``"t5"`` is Google's original T5).
A pipelined run sets ``train.dist.pipeline_num_layers`` to encoder + decoder layers
(``2 * hidden_layers`` by default).
"""
from libai.config import LazyCall
from libai.models import T5ForPreTraining

from ._language import LIBAI_SWITCHES as _LIBAI_SWITCHES, check_size

cfg = dict(
    vocab_size=30522,  # LiBai's T5 uses the BERT vocabulary
    hidden_size=256,  # T5-base: 768
    hidden_layers=4,  # encoder layers (T5-base: 12)
    decoder_layers=None,  # None = as many as the encoder
    num_attention_heads=4,  # T5-base: 12
    intermediate_size=1024,  # T5-base: 3072
    embedding_dropout_prob=0.1,
    hidden_dropout_prob=0.1,
    attention_dropout_prob=0.1,
    max_position_embeddings=512,
    initializer_range=0.02,
    layernorm_epsilon=1e-5,
    **_LIBAI_SWITCHES,  # LiBai's CUDA fusions and numerics switches, all off (see _language.py)
)

model = LazyCall(T5ForPreTraining)(cfg=cfg)


# ---------------------------------------------------------------------------- presets
# Google's released sizes: d_model, encoder = decoder layers, heads, d_kv, d_ff.
_T5_SIZES = {
    "small": (512, 6, 8, 64, 2048),
    "base": (768, 12, 12, 64, 3072),
    "large": (1024, 24, 16, 64, 4096),
}
# T5 v1.1 and MT5 (same shapes; MT5 has a 250112-token vocabulary).
_T5_V1_1_SIZES = {
    "small": (512, 8, 6, 64, 1024),
    "base": (768, 12, 12, 64, 2048),
    "large": (1024, 24, 16, 64, 2816),
}

# How Google's T5 differs from LiBai's flavour (the defaults of ``cfg`` above); see
# libai/models/t5.py for what each option computes.
_GOOGLE = dict(
    position_embedding_type="relative", relative_attention_num_buckets=32,
    relative_attention_max_distance=128, softmax_scale=1.0, normalization="rmsnorm",
    linear_bias=False, layernorm_epsilon=1e-6, embedding_dropout_prob=0.1,
    hidden_dropout_prob=0.1, attention_dropout_prob=0.1,
)
FLAVOURS = {
    "libai": {},
    "t5": dict(_GOOGLE, vocab_size=32128, activation="relu", gated_mlp=False,
               tie_word_embeddings=True, scale_decoder_outputs=True),
    "t5_v1_1": dict(_GOOGLE, vocab_size=32128, activation="gelu_new", gated_mlp=True,
                    tie_word_embeddings=False),
    "mt5": dict(_GOOGLE, vocab_size=250112, activation="gelu_new", gated_mlp=True,
                tie_word_embeddings=False),
}


def t5_cfg(size: str, flavour: str = "libai") -> dict:
    """A copy of ``cfg`` at a named size (``"small"``, ``"base"``, ``"large"``) and flavour:
    ``"libai"`` (LiBai's T5: learned positions, LayerNorm, biases, GELU, tied head),
    ``"t5"`` (Google's original T5), ``"t5_v1_1"`` or ``"mt5"``. A pipelined run sets
    ``train.dist.pipeline_num_layers = 2 * hidden_layers``."""
    if flavour not in FLAVOURS:
        raise ValueError(f"unknown T5 flavour {flavour!r}; choose one of {sorted(FLAVOURS)}")
    sizes = _T5_SIZES if flavour in ("libai", "t5") else _T5_V1_1_SIZES
    hidden, layers, heads, head_size, ffn = check_size(size, sizes, "T5")
    return dict(cfg, hidden_size=hidden, hidden_layers=layers, decoder_layers=layers,
                num_attention_heads=heads, head_size=head_size, intermediate_size=ffn,
                **FLAVOURS[flavour])


def t5_small():
    """LiBai's T5 at T5-small's size (6 + 6 layers, width 512)."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("small"))


def t5_base():
    """LiBai's T5 at T5-base's size (12 + 12 layers, width 768)."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("base"))


def t5_large():
    """LiBai's T5 at T5-large's size (24 + 24 layers, width 1024)."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("large"))


def t5_v1_1_small():
    """Google's T5 v1.1 small (gated-GELU, untied head, 8 + 8 layers, 6 heads of 64)."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("small", "t5_v1_1"))


def t5_v1_1_base():
    """Google's T5 v1.1 base."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("base", "t5_v1_1"))


def mt5_small():
    """MT5 small (T5 v1.1 small with a 250112-token vocabulary)."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("small", "mt5"))


def mt5_base():
    """MT5 base."""
    return LazyCall(T5ForPreTraining)(cfg=t5_cfg("base", "mt5"))
