"""LiBai's module paths resolve to libai's own objects, and the pieces only LiBai names
(``GPTLoss``, ``T5Loss``, ``_check_batch_size``, ``_load_state_dict_into_model``) behave as
LiBai's do."""
import importlib

import numpy as np
import oneflow as flow
import pytest
from omegaconf import OmegaConf

import libai.models as models

ALIASES = [
    ("libai.config.config", "configurable", "libai.config.configurable"),
    ("libai.models.bert_model", "BertModel", "libai.models.bert"),
    ("libai.models.bert_model", "BertForPreTraining", "libai.models.bert"),
    ("libai.models.gpt_model", "GPTModel", "libai.models.gpt"),
    ("libai.models.t5_model", "T5Model", "libai.models.t5"),
    ("libai.models.vision_transformer", "VisionTransformer", "libai.models.vit"),
    ("libai.models.swin_transformer", "SwinTransformer", "libai.models.swin"),
    ("libai.models.utils.graph_base", "GraphBase", "libai.engine.graph"),
    ("libai.layers.droppath", "DropPath", "libai.layers"),
    ("libai.data.datasets.imagenet", "ImageNetDataset", "libai.data.datasets"),
]


@pytest.mark.parametrize("alias, name, home", ALIASES)
def test_module_path_gives_the_same_object(alias, name, home):
    assert getattr(importlib.import_module(alias), name) is getattr(importlib.import_module(home), name)


def test_gpt_loss_is_the_models_loss(local_layout):
    from libai.models.gpt_model import GPTLoss

    logits = np.random.RandomState(0).randn(2, 3, 7).astype(np.float32)
    labels = np.array([[1, 2, -100], [0, 6, 3]])
    out = GPTLoss()(flow.tensor(logits), flow.tensor(labels))
    assert set(out) == {"lm_loss"}
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    keep = labels != -100
    expected = -logp[keep, labels[keep]].mean()
    assert float(out["lm_loss"].numpy()) == pytest.approx(expected, rel=1e-5)
    model = models.GPTForPreTraining(dict(vocab_size=7, hidden_size=8, hidden_layers=1,
                                          num_attention_heads=2, max_seq_length=4,
                                          intermediate_size=16))
    assert isinstance(model.loss_func, GPTLoss)


def test_t5_loss_averages_over_the_mask(local_layout):
    from libai.models.t5_model import T5Loss

    logits = np.random.RandomState(1).randn(2, 3, 5).astype(np.float32)
    labels = np.array([[1, 2, 3], [0, 4, 3]])
    mask = np.array([[1, 0, 1], [1, 1, 0]])
    out = T5Loss()(flow.tensor(logits), flow.tensor(labels), flow.tensor(mask))
    logp = logits - np.log(np.exp(logits).sum(-1, keepdims=True))
    per_token = -np.take_along_axis(logp, labels[..., None], -1)[..., 0]
    assert float(out["masked_lm_loss"].numpy()) == pytest.approx((per_token * mask).sum() / 4, rel=1e-5)


def test_check_batch_size_fills_accumulation_steps():
    from libai.engine.default import _check_batch_size

    cfg = OmegaConf.create(dict(train=dict(train_micro_batch_size=4, global_batch_size=32,
                                           num_accumulation_steps=None)))
    _check_batch_size(cfg)  # no layout: one data-parallel rank
    assert cfg.train.num_accumulation_steps == 8
    cfg.train.num_accumulation_steps = 3
    with pytest.raises(ValueError, match="global_batch_size \\(32\\) must equal"):
        _check_batch_size(cfg)


def test_load_state_dict_into_model_reports_mismatches(local_layout):
    from libai.layers import Linear
    from libai.models.utils.model_loader.base_loader import _load_state_dict_into_model

    flow.manual_seed(0)
    model = flow.nn.Sequential(Linear(3, 2), Linear(2, 4))
    weight = np.arange(6, dtype=np.float32).reshape(2, 3)
    state = {"m.0.weight": flow.tensor(weight), "m.1.weight": np.zeros((2, 2), np.float32),
             "m.9.bias": np.ones(3, np.float32)}
    before = model[1].weight.numpy().copy()
    errors = _load_state_dict_into_model(model, state, "m.")
    np.testing.assert_array_equal(model[0].weight.numpy(), weight)
    np.testing.assert_array_equal(model[1].weight.numpy(), before)  # mismatched: left alone
    assert len(errors) == 1 and "size mismatch for 1.weight" in errors[0]
