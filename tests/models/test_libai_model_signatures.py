"""LiBai's shapes of the vision models and BertForClassification: ``cfg=`` by keyword (how
LiBai's configs build them), Swin's ``qk_scale`` / ``norm_layer`` / ``ape``, and a classifier
fed a whole BERT pre-training batch."""
import numpy as np
import oneflow as flow
import pytest
from omegaconf import DictConfig

from libai.config import LazyCall, instantiate
from libai.layers import LayerNorm
from libai.models import (
    BertForClassification,
    ResMLP,
    SwinTransformer,
    SwinTransformerV2,
    VisionTransformer,
)

VIT = dict(img_size=16, patch_size=8, in_chans=3, embed_dim=16, depth=1, num_heads=2, mlp_ratio=2.0,
           drop_rate=0.0, attn_drop_rate=0.0, drop_path_rate=0.0, num_classes=3, loss_func=None)
SWIN = dict(img_size=16, patch_size=2, in_chans=3, num_classes=3, embed_dim=8, depths=[1, 1],
            num_heads=[2, 2], window_size=4, mlp_ratio=2.0, qkv_bias=True, drop_rate=0.0,
            drop_path_rate=0.0, patch_norm=True, loss_func=None)
RESMLP = dict(img_size=16, patch_size=8, in_chans=3, embed_dim=16, depth=1, drop_rate=0.0,
              drop_path_rate=0.0, init_scale=0.1, num_classes=3, loss_func=None)


@pytest.mark.parametrize("cls, cfg", [
    (VisionTransformer, VIT),
    (SwinTransformer, dict(SWIN, qk_scale=None, ape=False)),
    (SwinTransformerV2, dict(SWIN, ape=False, pretrained_window_sizes=[0, 0])),
    (ResMLP, RESMLP),
])
def test_vision_model_built_as_libai_configs_write_it(local_layout, cls, cfg):
    node = LazyCall(cls)(cfg=DictConfig(cfg))  # LiBai: model = LazyCall(VisionTransformer)(cfg=cfg)
    model = instantiate(node)
    assert isinstance(model, cls)
    images = flow.tensor(np.random.default_rng(0).standard_normal((2, 3, 16, 16)).astype(np.float32))
    assert model.eval()(images)["prediction_scores"].shape == (2, 3)


def test_swin_qk_scale_replaces_the_score_scale(local_layout):
    flow.manual_seed(0)
    default = SwinTransformer(**SWIN)
    flow.manual_seed(0)
    scaled = SwinTransformer(**SWIN, qk_scale=0.125)
    heads_dim = SWIN["embed_dim"] // SWIN["num_heads"][0]
    assert [b.attn.scale for b in default._blocks()][0] == pytest.approx(heads_dim ** -0.5)
    assert all(b.attn.scale == 0.125 for b in scaled._blocks())
    images = flow.tensor(np.random.default_rng(1).standard_normal((1, 3, 16, 16)).astype(np.float32))
    with flow.no_grad():
        a = default.eval()(images)["prediction_scores"].numpy()
        b = scaled.eval()(images)["prediction_scores"].numpy()
    assert not np.allclose(a, b)  # the scale reaches the attention


def test_swin_norm_layer_and_ape_take_libais_values_only(local_layout):
    SwinTransformer(**SWIN, norm_layer=LayerNorm)  # LiBai's default class
    with pytest.raises(ValueError, match="only LayerNorm"):
        SwinTransformer(**SWIN, norm_layer=flow.nn.BatchNorm1d)
    with pytest.raises(ValueError, match=r"SwinTransformerV2\(ape=True\)"):
        SwinTransformerV2(**SWIN, ape=True)


def test_bert_classifier_takes_a_bert_pretraining_batch(local_layout):
    body = dict(vocab_size=40, hidden_size=16, hidden_layers=1, num_attention_heads=4,
                intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                max_position_embeddings=10, num_labels=2, classifier_dropout=None)
    flow.manual_seed(0)
    model = BertForClassification(cfg=DictConfig(body))
    rng = np.random.default_rng(0)
    batch = {
        "input_ids": flow.tensor(rng.integers(0, 40, (3, 6))),
        "attention_mask": flow.ones(3, 6, dtype=flow.int64),
        "tokentype_ids": flow.zeros(3, 6, dtype=flow.int64),
        "ns_labels": flow.tensor([0, 1, 1]),
        "lm_labels": flow.zeros(3, 6, dtype=flow.int64),
        "loss_mask": flow.zeros(3, 6, dtype=flow.int64),
    }
    model.train()
    from_ns = model(**batch)["cls_loss"]
    explicit = model(batch["input_ids"], batch["attention_mask"], batch["tokentype_ids"],
                     labels=batch["ns_labels"])["cls_loss"]
    np.testing.assert_allclose(from_ns.numpy(), explicit.numpy(), rtol=1e-6)
    model.eval()
    out = model(**batch)
    assert out["logits"] is out["prediction_scores"] and out["logits"].shape == (3, 2)
