"""``BertModel(cfg)`` with a config shaped like LiBai's.

LiBai's ``configs/common/models/bert.py`` gives one dict to the encoder and to its heads, so it
carries ``add_binary_head``; its classification projects (QQP, text_classification) add their
own keys (``num_classes``, ``pretrain_megatron_weight``) and hand the same config to
``BertModel``. LiBai's encoder reads the keys it needs and ignores the rest; ours does too, but
a key that looks like a misspelt setting is still refused.
"""
import logging

import pytest
from omegaconf import DictConfig

from libai.models import BertForPreTraining, BertModel

LIBAI_BERT = dict(  # LiBai's key names, tiny sizes
    vocab_size=64, hidden_size=16, hidden_layers=2, num_attention_heads=2, intermediate_size=32,
    hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, max_position_embeddings=16,
    num_tokentypes=2, add_pooling_layer=True, initializer_range=0.02, layernorm_eps=1e-5,
    bias_gelu_fusion=False, bias_dropout_fusion=False, scale_mask_softmax_fusion=False,
    apply_query_key_layer_scaling=True, apply_residual_post_layernorm=False,
    add_binary_head=True, amp_enabled=False,
)


def test_the_heads_key_add_binary_head_is_accepted_by_the_encoder(local_layout, caplog):
    with caplog.at_level(logging.WARNING):
        model = BertModel(DictConfig(LIBAI_BERT))
    assert model.pooler is not None
    assert "add_binary_head" not in caplog.text  # a key of the family: no warning either
    heads = BertForPreTraining(DictConfig(dict(LIBAI_BERT, add_binary_head=False)))
    assert heads.cls_head.seq_relationship is None


def test_a_projects_own_keys_are_ignored_with_a_warning(local_layout, caplog):
    cfg = DictConfig(dict(LIBAI_BERT, num_classes=2, pretrain_megatron_weight=None))
    with caplog.at_level(logging.WARNING):
        BertModel(cfg=cfg)  # LiBai's configs pass it by keyword
    assert "BertModel ignores the config key 'pretrain_megatron_weight'" in caplog.text
    assert "BertModel ignores the config key 'num_classes'" in caplog.text


def test_a_misspelt_setting_is_still_an_error(local_layout):
    with pytest.raises(ValueError, match="unknown model config key 'hiden_size'. Did you mean 'hidden_size'"):
        BertModel(dict(LIBAI_BERT, hiden_size=32))
    with pytest.raises(ValueError, match="unknown model config key 'num_tokentype'"):
        BertModel(dict(LIBAI_BERT, num_tokentype=1))
