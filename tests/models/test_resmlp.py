"""ResMLP: logits against a NumPy forward of the paper's equations, parameter counts by formula,
initial LayerScale and Affine values, pipeline layer indices, presets and configs, a falling
loss and Graph mode equal to Eager. (TP/PP parity: tests/models/zoo_cases/resmlp.py.)"""
import math
import os

import numpy as np
import oneflow as flow
import pytest

from image_train_helpers import train_image_model
from libai.config import LazyCall, LazyConfig, instantiate
from libai.layers import Affine
from libai.models import ResMLP
from libai.models.resmlp import ResMLPBlock, layers_scale_mlp_blocks

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY = dict(img_size=8, patch_size=2, embed_dim=8, depth=2, num_classes=3)


def _reference_count(dim, depth, patches, classes, patch=16, chans=3):
    patch_embed = chans * patch * patch * dim + dim
    block = 2 * 2 * dim + patches * patches + patches + 8 * dim * dim + 5 * dim + 2 * dim
    return patch_embed + depth * block + 2 * dim + dim * classes + classes


def _gelu(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def _numpy_logits(model, images, patch):
    """The ResMLP forward pass written from the paper, on the model's weights."""
    w = {k: v.numpy().astype(np.float64) for k, v in model.state_dict().items()}
    b, c, h, wd = images.shape
    gh, gw = h // patch, wd // patch
    cells = images.reshape(b, c, gh, patch, gw, patch).transpose(0, 2, 4, 1, 3, 5)
    kernel = w["patch_embed.proj.weight"].reshape(w["patch_embed.proj.weight"].shape[0], -1)
    x = cells.reshape(b, gh * gw, -1) @ kernel.T + w["patch_embed.proj.bias"]
    for i in range(len(model.blocks)):
        p = lambda name: w[f"blocks.{i}.{name}"]  # noqa: E731
        n1 = p("norm1.alpha") * x + p("norm1.beta")
        mixed = (n1.transpose(0, 2, 1) @ p("attn.weight").T + p("attn.bias")).transpose(0, 2, 1)
        x = x + p("gamma_1") * mixed
        n2 = p("norm2.alpha") * x + p("norm2.beta")
        inner = _gelu(n2 @ p("mlp.dense_h_to_4h.weight").T + p("mlp.dense_h_to_4h.bias"))
        x = x + p("gamma_2") * (inner @ p("mlp.dense_4h_to_h.weight").T + p("mlp.dense_4h_to_h.bias"))
    pooled = (w["norm.alpha"] * x + w["norm.beta"]).mean(axis=1)
    return pooled @ w["head.weight"].T + w["head.bias"]


def test_logits_match_a_numpy_forward(local_layout):
    flow.manual_seed(0)
    model = ResMLP(**TINY, init_scale=0.3)
    rng = np.random.RandomState(4)
    with flow.no_grad():  # move the Affines and LayerScales off their initial 1 / 0 / 0.3
        for name, param in model.named_parameters():
            if name.split(".")[-1] in ("alpha", "beta", "gamma_1", "gamma_2"):
                param.copy_(rng.randn(*param.shape).astype(np.float32))
    images = rng.randn(2, 3, 8, 8).astype(np.float32)
    model.eval()
    logits = model(flow.tensor(images))["prediction_scores"].numpy()
    np.testing.assert_allclose(logits, _numpy_logits(model, images.astype(np.float64), 2),
                               rtol=1e-4, atol=1e-5)


def test_outputs_follow_the_vision_contract(local_layout):
    model = ResMLP(**TINY)
    images, labels = flow.randn(4, 3, 8, 8), flow.tensor([0, 1, 2, 0])
    out = model(images, labels)
    assert set(out) == {"losses"} and out["losses"].ndim == 0
    model.eval()
    assert tuple(model(images, labels)["prediction_scores"].shape) == (4, 3)


def test_initial_values_and_names(local_layout):
    model = ResMLP(**TINY, init_scale=0.25)
    block = model.blocks[1]
    assert isinstance(block, ResMLPBlock) and layers_scale_mlp_blocks is ResMLPBlock
    for gamma in (block.gamma_1, block.gamma_2):
        assert np.all(gamma.numpy() == np.float32(0.25))
    assert isinstance(block.norm1, Affine)
    assert np.all(block.norm1.alpha.numpy() == 1) and np.all(block.norm1.beta.numpy() == 0)
    assert tuple(block.attn.weight.shape) == (16, 16)  # mixes the 4×4 patches
    assert block.mlp.dense_h_to_4h.parallel == "col" and block.mlp.dense_4h_to_h.parallel == "row"


def test_layer_indices_follow_the_pipeline_rule(local_layout):
    model = ResMLP(**dict(TINY, depth=3))
    assert model.patch_embed.layer_idx == 0
    assert [b.layer_idx for b in model.blocks] == [0, 1, 2]
    assert [b.mlp.dense_h_to_4h.layer_idx for b in model.blocks] == [0, 1, 2]
    assert model.norm.layer_idx == model.head.layer_idx == model.loss_func.layer_idx == -1
    assert model.activation_checkpoint_modules() == list(model.blocks)


def test_parameter_counts_of_the_presets(local_layout):
    from configs.common.models import resmlp as presets

    small = ResMLP(img_size=32, patch_size=8, embed_dim=12, depth=3, num_classes=7)
    assert sum(p.numel() for p in small.parameters()) == _reference_count(12, 3, 16, 7, patch=8)
    model = instantiate(presets.resmlp_12())
    assert sum(p.numel() for p in model.parameters()) == _reference_count(384, 12, 196, 1000) == 15_350_872
    sizes = {fn: (n.embed_dim, n.depth, n.patch_size, n.init_scale) for fn, n in (
        (fn, getattr(presets, fn)()) for fn in ("resmlp_12", "resmlp_24", "resmlp_36", "resmlpB_24"))}
    assert sizes == {"resmlp_12": (384, 12, 16, 0.1), "resmlp_24": (384, 24, 16, 1e-5),
                     "resmlp_36": (384, 36, 16, 1e-6), "resmlpB_24": (768, 24, 8, 1e-6)}
    with pytest.raises(ValueError, match="unknown ResMLP size '48'"):
        presets.resmlp_preset("48")


def test_config_file_round_trips_and_builds_from_a_dict(local_layout, tmp_path):
    cfg = LazyConfig.load(os.path.join(REPO, "configs", "common", "models", "resmlp.py"))
    LazyConfig.save(cfg, str(tmp_path / "model.yaml"))
    assert LazyConfig.to_py(LazyConfig.load(str(tmp_path / "model.yaml"))) == LazyConfig.to_py(cfg)
    model = ResMLP(dict(TINY, drop_path_rate=0.1))  # LiBai's one-dict form
    assert len(model.blocks) == 2
    with pytest.raises(ValueError, match="embed_dim"):
        ResMLP(dict(TINY, embed_dims=8))


def test_loss_falls_and_graph_equals_eager(tmp_path):
    model = LazyCall(ResMLP)(img_size=16, patch_size=4, embed_dim=16, depth=2, init_scale=0.1,
                             num_classes=4)
    eager_losses, eager_state = train_image_model(tmp_path, model, 16, 5, graph=False, lr=1e-2)
    assert eager_losses[-1] < eager_losses[0] - 0.1, eager_losses
    graph_losses, graph_state = train_image_model(tmp_path, model, 16, 5, graph=True, lr=1e-2)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-3, atol=1e-5)
    for key in ("blocks.1.gamma_2", "blocks.0.attn.weight", "head.weight", "patch_embed.proj.weight"):
        np.testing.assert_allclose(graph_state[key], eager_state[key], rtol=1e-3, atol=1e-5)


def test_docs_table_quotes_the_preset_parameter_counts():
    from configs.common.models import resmlp as presets

    with open(os.path.join(REPO, "docs", "cnn_models.md")) as f:
        rows = [line for line in f if line.startswith("| `resmlp")]
    assert len(rows) == 4
    for row in rows:
        cells = [c.strip() for c in row.strip().strip("|").split("|")]
        node = getattr(presets, cells[0].split("`")[1][:-2])()
        quoted = int(cells[-1].replace(",", ""))
        patches = (node.img_size // node.patch_size) ** 2
        assert quoted == _reference_count(node.embed_dim, node.depth, patches, node.num_classes,
                                          patch=node.patch_size), row
        assert [node.embed_dim, node.depth, node.patch_size] == [int(c) for c in cells[1:4]]
