"""GPT-2 model config: ``from configs.common.models.gpt import model``.

Override sizes with ``model.cfg.hidden_layers=12`` etc. The defaults are a small GPT that trains
on a CPU; GPT-2 small is hidden_layers=12, hidden_size=768, num_attention_heads=12,
intermediate_size=3072, max_seq_length=1024 (GPT-2 medium: 24 / 1024 / 16 / 4096).
A pipelined run sets ``train.dist.pipeline_num_layers = model.cfg.hidden_layers``.
Published sizes: ``gpt2_small()`` ... ``gpt2_xl()`` and ``gpt2_cfg(size)`` at the end of this file.
"""
from libai.config import LazyCall
from libai.models import GPTForPreTraining

from ._language import LIBAI_SWITCHES as _LIBAI_SWITCHES, sized_cfg

cfg = dict(
    vocab_size=50304,  # GPT-2's 50257 tokens padded to a multiple of 128 (tensor parallel splits it)
    hidden_size=256,  # GPT-2 small: 768
    hidden_layers=4,  # GPT-2 small: 12
    num_attention_heads=8,  # GPT-2 small: 12
    intermediate_size=1024,  # 4 × hidden_size (GPT-2 small: 3072)
    max_seq_length=1024,  # learned positions; keep equal to the dataset's max_seq_length
    embedding_dropout_prob=0.1,
    attention_dropout_prob=0.1,
    hidden_dropout_prob=0.1,  # dropout after attention and MLP (LiBai's output_dropout_prob)
    layernorm_epsilon=1e-5,
    initializer_range=0.02,
    use_scaled_init_for_output_weights=True,
    **_LIBAI_SWITCHES,  # LiBai's CUDA fusions and numerics switches, all off (see _language.py)
)

model = LazyCall(GPTForPreTraining)(cfg=cfg)


# Named sizes (GPT-2's released models): width, layers, heads; the MLP is 4 × width.
_GPT2_SIZES = {
    "small": (768, 12, 12),
    "medium": (1024, 24, 16),
    "large": (1280, 36, 20),
    "xl": (1600, 48, 25),
}


def gpt2_cfg(size: str) -> dict:
    """A copy of ``cfg`` above at a named GPT-2 size (``"small"``, ``"medium"``, ``"large"``,
    ``"xl"``), 1024 positions."""
    return sized_cfg(cfg, _GPT2_SIZES, size, "GPT-2", max_seq_length=1024)


def gpt2_small():
    """GPT-2 small (124M parameters)."""
    return LazyCall(GPTForPreTraining)(cfg=gpt2_cfg("small"))


def gpt2_medium():
    """GPT-2 medium (355M parameters)."""
    return LazyCall(GPTForPreTraining)(cfg=gpt2_cfg("medium"))


def gpt2_large():
    """GPT-2 large (774M parameters)."""
    return LazyCall(GPTForPreTraining)(cfg=gpt2_cfg("large"))


def gpt2_xl():
    """GPT-2 XL (1.5B parameters)."""
    return LazyCall(GPTForPreTraining)(cfg=gpt2_cfg("xl"))
