"""RoBERTa model config: ``from configs.common.models.roberta import pretrain_model``.

``cfg`` is RoBERTa-base (hidden 768, 12 layers, 12 heads, MLP 3072, the 50265-token byte-level
BPE vocabulary, 514 positions: 512 tokens after the padding id 1, one token type, LayerNorm
eps 1e-5). ``pretrain_model`` is the masked-LM model, ``roberta_model`` the bare encoder and
``roberta_causal_lm`` the causal LM, all sharing ``cfg``; ``roberta_base()`` /
``roberta_large()`` return fresh nodes at the paper's sizes. A pipelined run sets
``train.dist.pipeline_num_layers = model.cfg.hidden_layers``.
"""
from libai.config import LazyCall
from libai.models import RobertaForCausalLM, RobertaForPreTraining, RobertaModel

cfg = dict(
    vocab_size=50265,  # roberta-base's vocabulary (pad to a multiple of the tensor parallel size)
    hidden_size=768,
    hidden_layers=12,
    num_attention_heads=12,
    intermediate_size=3072,
    hidden_dropout_prob=0.1,
    attention_dropout_prob=0.1,
    max_position_embeddings=514,  # 512 tokens: positions start after pad_token_id
    num_tokentypes=1,
    add_pooler=True,  # the LM models drop it (nothing reads it)
    initializer_range=0.02,
    layernorm_epsilon=1e-5,
    pad_token_id=1,
    layernorm_position="pre",  # "post" = the original RoBERTa arrangement (from_pretrained's)
    bias_gelu_fusion=False,  # CUDA-only fusions; ignored on the CPU
    bias_dropout_fusion=False,
    scale_mask_softmax_fusion=False,
    apply_query_key_layer_scaling=False,
    apply_residual_post_layernorm=False,
    amp_enabled=False,
)

roberta_model = LazyCall(RobertaModel)(cfg=cfg)
roberta_causal_lm = LazyCall(RobertaForCausalLM)(cfg=cfg)
pretrain_model = LazyCall(RobertaForPreTraining)(cfg=cfg)


# Named sizes (the RoBERTa paper's): width, layers, heads; the MLP is 4 × width.
_ROBERTA_SIZES = {"base": (768, 12, 12), "large": (1024, 24, 16)}


def roberta_cfg(size: str) -> dict:
    """A copy of ``cfg`` at a named size (``"base"`` or ``"large"``), for any RoBERTa class."""
    if size not in _ROBERTA_SIZES:
        raise ValueError(f"unknown RoBERTa size {size!r}; choose one of {sorted(_ROBERTA_SIZES)}")
    hidden, layers, heads = _ROBERTA_SIZES[size]
    return dict(cfg, hidden_size=hidden, hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=4 * hidden)


def roberta_base():
    """RoBERTa-base masked-LM model (125M parameters)."""
    return LazyCall(RobertaForPreTraining)(cfg=roberta_cfg("base"))


def roberta_large():
    """RoBERTa-large masked-LM model (355M parameters)."""
    return LazyCall(RobertaForPreTraining)(cfg=roberta_cfg("large"))
