"""Layers LiBai code imports by name: ``Conv1D``, ``SinePositionalEmbedding``, ``PatchEmbedding``
(LiBai's ``norm_layer``/``flatten`` form) and ``libai.layers.droppath``; each checked against a
NumPy computation of its definition."""
import math

import numpy as np
import oneflow as flow
import pytest

from libai.layers import Conv1D, LayerNorm, Linear, PatchEmbedding, SinePositionalEmbedding
from libai.layers.droppath import DropPath, drop_path


def test_conv1d_is_x_times_w_plus_b(local_layout):
    layer = Conv1D(5, 3, init_method=lambda w: w.copy_(flow.arange(15.0).reshape(5, 3) / 10))
    assert tuple(layer.weight.shape) == (5, 3)  # stored [in, out], the GPT-2 checkpoint layout
    with flow.no_grad():
        layer.bias.copy_(np.array([1.0, -1.0, 0.5], dtype=np.float32))
    x = np.random.RandomState(0).randn(2, 4, 5).astype(np.float32)
    expected = x @ (np.arange(15.0).reshape(5, 3) / 10) + np.array([1.0, -1.0, 0.5])
    np.testing.assert_allclose(layer(flow.tensor(x)).numpy(), expected, rtol=1e-5, atol=1e-5)
    y, bias = Conv1D(5, 3, skip_bias_add=True)(flow.tensor(x))
    assert tuple(y.shape) == (2, 4, 3) and tuple(bias.shape) == (3,)


def test_linear_and_conv1d_take_libais_positional_order(local_layout):
    # LiBai: (in, out, bias, parallel, init_method, skip_bias_add, dtype, *, layer_idx)
    for cls, shape in ((Linear, (3, 5)), (Conv1D, (5, 3))):
        layer = cls(5, 3, False, "data", flow.nn.init.ones_, False, flow.float64, layer_idx=0)
        assert layer.weight.dtype == flow.float64 and tuple(layer.weight.shape) == shape
        assert layer.bias is None
        np.testing.assert_allclose(layer(flow.ones(2, 5, dtype=flow.float64)).numpy(), 5.0)
        with pytest.raises(TypeError):  # layer_idx stays keyword-only, as in LiBai
            cls(5, 3, True, "data", flow.nn.init.ones_, False, flow.float32, 0)


def test_conv1d_rejects_unknown_parallel_mode(local_layout):
    with pytest.raises(ValueError, match="parallel mode"):
        Conv1D(4, 4, parallel="diagonal")


def test_sine_positional_embedding_follows_the_formula(local_layout):
    dim, n = 6, 10
    emb = SinePositionalEmbedding(n, dim)
    out = emb(flow.tensor([[0, 3, 9]])).numpy()
    assert out.shape == (1, 3, dim)
    for j, pos in enumerate((0, 3, 9)):
        for i in range(0, dim, 2):
            angle = pos / (10000 ** (i / dim))
            assert out[0, j, i] == pytest.approx(math.sin(angle), abs=1e-6)
            assert out[0, j, i + 1] == pytest.approx(math.cos(angle), abs=1e-6)
    assert not any(p.requires_grad for p in emb.parameters())
    assert "position_embedding" in emb.state_dict()


def test_patch_embedding_libai_form_keeps_the_map(local_layout):
    flow.manual_seed(0)
    flat = PatchEmbedding(img_size=8, patch_size=4, in_chans=2, embed_dim=6)
    grid = PatchEmbedding(img_size=8, patch_size=4, in_chans=2, embed_dim=6, flatten=False)
    grid.load_state_dict(flat.state_dict())
    images = flow.tensor(np.random.RandomState(2).randn(3, 2, 8, 8).astype(np.float32))
    kept = grid(images).numpy()
    assert kept.shape == (3, 6, 2, 2)
    np.testing.assert_allclose(kept.reshape(3, 6, 4).transpose(0, 2, 1), flat(images).numpy(),
                               rtol=1e-6)


def test_patch_embedding_norm_layer_class(local_layout):
    embed = PatchEmbedding(img_size=4, patch_size=2, in_chans=1, embed_dim=4, norm_layer=LayerNorm)
    out = embed(flow.tensor(np.random.RandomState(3).randn(2, 1, 4, 4).astype(np.float32))).numpy()
    np.testing.assert_allclose(out.mean(-1), 0.0, atol=1e-5)  # every patch vector normalised
    with pytest.raises(ValueError, match="either norm=True or norm_layer"):
        PatchEmbedding(img_size=4, patch_size=2, embed_dim=4, norm=True, norm_layer=LayerNorm)


def test_drop_path_scale_by_keep(local_layout):
    flow.manual_seed(1)
    x = flow.ones(64, 3)
    scaled = drop_path(x, 0.5, training=True).numpy()
    assert set(np.unique(scaled).tolist()) <= {0.0, 2.0}
    flow.manual_seed(1)
    unscaled = drop_path(x, 0.5, training=True, scale_by_keep=False).numpy()
    np.testing.assert_array_equal(unscaled, scaled / 2.0)  # same draw, no 1/keep factor
    module = DropPath(0.25)
    module.eval()
    np.testing.assert_array_equal(module(x).numpy(), x.numpy())
    assert module.prob == module.drop_prob == 0.25
