"""BERT model config: ``from configs.common.models.bert import model``.

The defaults are a small BERT that trains on a CPU; BERT-base is hidden_size=768,
hidden_layers=12, num_attention_heads=12, intermediate_size=3072, vocab_size=30522,
max_position_embeddings=512 (BERT-large: 1024 / 24 / 16 / 4096).
A pipelined run sets ``train.dist.pipeline_num_layers = model.cfg.hidden_layers``.
Published sizes: ``bert_base()``, ``bert_large()`` and ``bert_cfg(size)`` at the end of this file.
"""
from libai.config import LazyCall
from libai.models import BertForPreTraining

from ._language import LIBAI_SWITCHES as _LIBAI_SWITCHES, sized_cfg

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
    **_LIBAI_SWITCHES,  # LiBai's CUDA fusions and numerics switches, all off (see _language.py)
)

model = LazyCall(BertForPreTraining)(cfg=cfg)


# Named sizes (the BERT paper's): width, layers, heads; the MLP is 4 × width.
_BERT_SIZES = {"base": (768, 12, 12), "large": (1024, 24, 16)}


def bert_cfg(size: str) -> dict:
    """A copy of ``cfg`` above at a named size (``"base"`` or ``"large"``), for any BERT head
    (``LazyCall(BertForClassification)(cfg=bert_cfg("base"))``)."""
    return sized_cfg(cfg, _BERT_SIZES, size, "BERT")


def bert_base():
    """BERT-base pretraining model (110M parameters with the 30522-token vocabulary)."""
    return LazyCall(BertForPreTraining)(cfg=bert_cfg("base"))


def bert_large():
    """BERT-large pretraining model (340M parameters)."""
    return LazyCall(BertForPreTraining)(cfg=bert_cfg("large"))
