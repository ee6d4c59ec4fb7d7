"""Swin V2: the log-spaced position coordinates, the cosine attention computed another way,
res-post-norm blocks, Hugging Face parity on the committed fixture (tests/fixtures/hf/swinv2),
export round trip, LiBai's loader class and a tiny run whose loss falls."""
import math
import os

import numpy as np
import oneflow as flow
import pytest

from libai.models import SwinTransformer, SwinTransformerV2
from libai.models.swin import relative_position_index
from libai.models.swin_transformer_v2 import WindowAttentionV2, log_spaced_coords
from tests.models.hf_export_checks import assert_export_round_trips

FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fixtures", "hf", "swinv2")
TOL = 1e-4
SMALL = dict(img_size=16, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
             window_size=4, num_classes=4, drop_path_rate=0.0)


def _logits(model, pixels):
    with flow.no_grad():
        return model.eval()(flow.tensor(pixels))["prediction_scores"].numpy()


def test_log_spaced_coords_values_and_order():
    table = log_spaced_coords(3)  # offsets -2..2, normalised by window - 1 = 2
    assert table.shape == (25, 2)
    f = lambda t: math.copysign(math.log2(abs(t) * 8 + 1) / 3, t) if t else 0.0  # noqa: E731
    expected = [[f(dy / 2), f(dx / 2)] for dy in range(-2, 3) for dx in range(-2, 3)]
    assert np.allclose(table, expected, atol=1e-6)
    assert np.allclose(log_spaced_coords(3, pretrained_window=5)[0], [f(-2 / 4)] * 2, atol=1e-6)
    assert table[12].tolist() == [0.0, 0.0] and np.abs(table).max() == pytest.approx(math.log2(9) / 3)


def test_cosine_attention_equals_a_numpy_computation(local_layout):
    flow.manual_seed(0)
    attn = WindowAttentionV2(8, 2, 2).eval()
    with flow.no_grad():
        attn.q_bias.copy_(flow.randn(8).numpy())
        attn.v_bias.copy_(flow.randn(8).numpy())
        attn.logit_scale.copy_(np.array([[[0.5]], [[5.0]]], dtype=np.float32))  # the second is capped at log 100
    x = np.random.RandomState(1).randn(3, 4, 8).astype(np.float32)
    with flow.no_grad():
        out = attn(flow.tensor(x)).numpy()
    params = {k: v.numpy() for k, v in attn.state_dict().items()}
    w = params["qkv.weight"].reshape(2, 3, 4, 8)  # per head: q, k, v rows
    q = np.einsum("bnc,hdc->bhnd", x, w[:, 0]) + params["q_bias"].reshape(1, 2, 1, 4)
    k = np.einsum("bnc,hdc->bhnd", x, w[:, 1])
    v = np.einsum("bnc,hdc->bhnd", x, w[:, 2]) + params["v_bias"].reshape(1, 2, 1, 4)
    unit = lambda t: t / np.linalg.norm(t, axis=-1, keepdims=True)  # noqa: E731
    scale = np.exp(np.minimum([0.5, 5.0], np.log(100))).reshape(1, 2, 1, 1)
    hidden = np.maximum(log_spaced_coords(2) @ params["cpb_mlp.0.weight"].T + params["cpb_mlp.0.bias"], 0)
    table = 16 / (1 + np.exp(-(hidden @ params["cpb_mlp.2.weight"].T)))  # [(2w-1)², heads]
    bias = table[relative_position_index(2).reshape(-1)].reshape(4, 4, 2).transpose(2, 0, 1)
    scores = unit(q) @ unit(k).transpose(0, 1, 3, 2) * scale + bias[None]
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    merged = (probs @ v).transpose(0, 2, 1, 3).reshape(3, 4, 8)
    expected = merged @ params["proj.weight"].T + params["proj.bias"]
    assert np.abs(out - expected).max() < 1e-5


def test_blocks_start_as_identity_and_are_post_norm(local_layout):
    flow.manual_seed(2)
    model = SwinTransformerV2(**SMALL)
    block = model.layers[0].blocks[0]
    assert block.post_norm
    assert float(block.norm1.weight.abs().sum().numpy()) == 0.0
    x = flow.randn(2, 64, 16)
    assert np.array_equal(block(x).numpy(), x.numpy())
    assert model.layers[0].downsample.norm.weight.shape == (32,)  # projects, then normalises 2C
    v1 = SwinTransformer(**SMALL)
    assert v1.layers[0].downsample.norm.weight.shape == (64,) and not v1.layers[0].blocks[0].post_norm
    assert model(flow.randn(2, 3, 16, 16))["prediction_scores"].shape == (2, 4)
    with pytest.raises(ValueError, match="ape=False"):
        SwinTransformerV2(**SMALL, ape=True)


def test_fixture_matches_transformers_logits():
    ref = np.load(os.path.join(FIXTURE, "reference.npz"))
    logits = _logits(SwinTransformerV2.from_pretrained(FIXTURE), ref["pixel_values"])
    assert logits.shape == ref["logits"].shape
    assert np.abs(logits - ref["logits"]).max() < TOL


def test_export_round_trips_tensors_and_config(tmp_path):
    assert_export_round_trips(
        SwinTransformerV2.from_pretrained(FIXTURE), FIXTURE, str(tmp_path),
        ("model_type", "architectures", "image_size", "patch_size", "embed_dim", "depths",
         "num_heads", "window_size", "qkv_bias", "pretrained_window_sizes", "hidden_size"))


def test_libai_loader_class_loads_through_the_same_mapping():
    import libai
    from libai.models.utils.model_loader import SwinV2LoaderHuggerFace

    ref = np.load(os.path.join(FIXTURE, "reference.npz"))
    libai_cfg = dict(img_size=256, patch_size=4, in_chans=3, num_classes=1000, embed_dim=96,
                     depths=[2, 2, 6, 2], num_heads=[3, 6, 12, 24], window_size=8, mlp_ratio=4.0,
                     qkv_bias=True, drop_rate=0.0, drop_path_rate=0.2, ape=False, patch_norm=True,
                     pretrained_window_sizes=[0, 0, 0, 0], loss_func=None)  # LiBai's SwinV2-T cfg
    model, info = SwinV2LoaderHuggerFace(libai.models.SwinTransformerV2, libai_cfg, FIXTURE,
                                         output_loading_info=True).load()
    assert model.num_features == 32 and len(model.layers) == 2  # sizes from config.json
    assert info == {"missing_keys": [], "unexpected_keys": [], "mismatched_keys": [], "error_msgs": []}
    assert np.abs(_logits(model, ref["pixel_values"]) - ref["logits"]).max() < TOL


def test_presets_match_the_paper():
    from configs.common.models import swinv2

    base = swinv2.swinv2_base_patch4_window16_256()
    assert (base.embed_dim, list(base.depths), list(base.num_heads), base.window_size,
            base.img_size) == (128, [2, 2, 18, 2], [4, 8, 16, 32], 16, 256)
    tiny = swinv2.swinv2_tiny_patch4_window8_256()
    assert (tiny.embed_dim, list(tiny.depths), tiny.window_size) == (96, [2, 2, 6, 2], 8)
    assert list(swinv2.swinv2_small_patch4_window8_256().depths) == [2, 2, 18, 2]
    with pytest.raises(ValueError, match="unknown SwinV2 size 'huge'"):
        swinv2.swinv2_preset("huge")


def test_a_tiny_run_lowers_the_loss(local_layout):
    flow.manual_seed(3)
    model = SwinTransformerV2(**SMALL).train()
    rng = np.random.RandomState(4)
    images = flow.tensor(rng.randn(8, 3, 16, 16).astype(np.float32))
    labels = flow.tensor(rng.randint(0, 4, size=(8,)))
    optimizer = flow.optim.AdamW(model.parameters(), lr=3e-3)
    losses = []
    for _ in range(10):
        loss = model(images, labels)["losses"]
        losses.append(float(loss.numpy()))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
    assert losses[-1] < 0.7 * losses[0], losses
    assert float(model.layers[0].blocks[0].norm1.weight.abs().sum().numpy()) > 0  # norms learn
