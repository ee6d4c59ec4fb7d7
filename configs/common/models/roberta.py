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

from ._language import sized_cfg
from .bert import _BERT_SIZES, bert_cfg

# RoBERTa-base is BERT-base's encoder (sizes, dropouts, initialisation, LayerNorm eps 1e-5, the
# LiBai switches) with its own vocabulary, positions counted after the padding id, one token
# type and no sentence-order head.
cfg = {key: value for key, value in bert_cfg("base").items() if key != "add_binary_head"}
cfg.update(
    vocab_size=50265,  # roberta-base's vocabulary (pad to a multiple of the tensor parallel size)
    max_position_embeddings=514,  # 512 tokens: positions start after pad_token_id
    num_tokentypes=1,
    pad_token_id=1,
)
# add_pooler stays True: the LM models drop it (nothing reads it); layernorm_position "post" is
# the original RoBERTa arrangement (from_pretrained's)

roberta_model = LazyCall(RobertaModel)(cfg=cfg)
roberta_causal_lm = LazyCall(RobertaForCausalLM)(cfg=cfg)
pretrain_model = LazyCall(RobertaForPreTraining)(cfg=cfg)


# Named sizes: the RoBERTa paper kept BERT's (width, layers, heads; the MLP is 4 × width).
_ROBERTA_SIZES = _BERT_SIZES


def roberta_cfg(size: str) -> dict:
    """A copy of ``cfg`` at a named size (``"base"`` or ``"large"``), for any RoBERTa class."""
    return sized_cfg(cfg, _ROBERTA_SIZES, size, "RoBERTa")


def roberta_base():
    """RoBERTa-base masked-LM model (125M parameters)."""
    return LazyCall(RobertaForPreTraining)(cfg=roberta_cfg("base"))


def roberta_large():
    """RoBERTa-large masked-LM model (355M parameters)."""
    return LazyCall(RobertaForPreTraining)(cfg=roberta_cfg("large"))
