"""What the language-model configs (bert.py, roberta.py, gpt.py, t5.py) share.

``LIBAI_SWITCHES``: LiBai's CUDA-fusion and numerics switches, which every LiBai language-model
config carries; all off here (the fusions are CUDA-only and ignored on the CPU).
``sized_cfg``: a copy of a config at one of a family's published sizes.
"""

LIBAI_SWITCHES = dict(
    bias_gelu_fusion=False,
    bias_dropout_fusion=False,
    scale_mask_softmax_fusion=False,
    apply_query_key_layer_scaling=False,
    apply_residual_post_layernorm=False,
    amp_enabled=False,
)


def check_size(size: str, sizes: dict, family: str) -> tuple:
    """The shape of ``size`` in ``sizes``, or an error naming the family's sizes."""
    if size not in sizes:
        raise ValueError(f"unknown {family} size {size!r}; choose one of {sorted(sizes)}")
    return sizes[size]


def sized_cfg(cfg: dict, sizes: dict, size: str, family: str, **settings) -> dict:
    """A copy of ``cfg`` at ``sizes[size]`` = (width, layers, heads), the MLP 4 × width, with
    ``settings`` on top."""
    hidden, layers, heads = check_size(size, sizes, family)
    return dict(cfg, hidden_size=hidden, hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=4 * hidden, **settings)
