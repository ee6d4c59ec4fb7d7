"""BERT model config: ``from configs.common.models.bert import model``.

The defaults are a small BERT that trains on a CPU; BERT-base is hidden_size=768,
hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=30522,
max_position_embeddings=512 (BERT-large: 1024 / 24 / 16 / 4096).
A pipelined run sets ``train.dist.pipeline_num_layers = model.cfg.hidden_layers``.
Published sizes: ``bert_base()``, ``bert_large()`` and ``bert_cfg(size)`` at the end of this file.
"""
from libai.config import LazyCall
from libai.models import BertForPreTraining

cfg = dict(
    vocab_size=30522,  # bert-base-uncased vocabulary (pad to a multiple of the tensor parallel size)
    hidden_size=256,  # BERT-base: 768
    hidden_layers=4,  # BERT-base: 12
    num_attention_heads=4,  # BERT-base: 12
    intermediate_size=1024,  # 4 × hidden_size (BERT-base: 3072)
    hidden_dropout_prob=0.1,
    attention_dropout_prob=0.1,
    max_position_embeddings=512,
    num_tokentypes=2,
    add_pooler=True,
    add_binary_head=True,  # the sentence-order head and its sop_loss
    initializer_range=0.02,
    layernorm_epsilon=1e-5,
    layernorm_position="pre",  # "post" = the original BERT arrangement
    bias_gelu_fusion=False,  # CUDA-only fusions; ignored on the CPU
    bias_dropout_fusion=False,
    scale_mask_softmax_fusion=False,
    apply_query_key_layer_scaling=False,
    apply_residual_post_layernorm=False,
    amp_enabled=False,
)

model = LazyCall(BertForPreTraining)(cfg=cfg)


# Named sizes (the BERT paper's): width, layers, heads; the MLP is 4 × width.
_BERT_SIZES = {"base": (768, 12, 12), "large": (1024, 24, 16)}


def bert_cfg(size: str) -> dict:
    """A copy of ``cfg`` above at a named size (``"base"`` or ``"large"``), for any BERT head
    (``LazyCall(BertForClassification)(cfg=bert_cfg("base"))``)."""
    if size not in _BERT_SIZES:
        raise ValueError(f"unknown BERT size {size!r}; choose one of {sorted(_BERT_SIZES)}")
    hidden, layers, heads = _BERT_SIZES[size]
    return dict(cfg, hidden_size=hidden, hidden_layers=layers, num_attention_heads=heads,
                intermediate_size=4 * hidden)


def bert_base():
    """BERT-base pretraining model (110M parameters with the 30522-token vocabulary)."""
    return LazyCall(BertForPreTraining)(cfg=bert_cfg("base"))


def bert_large():
    """BERT-large pretraining model (340M parameters)."""
    return LazyCall(BertForPreTraining)(cfg=bert_cfg("large"))
