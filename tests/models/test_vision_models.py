"""ViT and Swin: shapes, losses on hard and soft labels against NumPy, the pieces of Swin against
independent references (window attention, shifted-window mask, relative position index, patch
merging), layer indices, seeding, configs, training through DefaultTrainer, and one launch of
two processes comparing tensor/data/pipeline parallel runs with the one-process run."""
import json
import os
import re

import numpy as np
import oneflow as flow
import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall, LazyConfig, get_config, instantiate
from libai.data.mixup import Mixup
from libai.layers import TransformerLayer
from libai.models import SwinTransformer, VisionTransformer
from libai.models.swin import (
    PatchMerging, SwinBlock, WindowAttention, relative_position_index, shifted_window_mask,
)
from libai.models.vision_common import ImageClassificationLoss, PatchEmbedding
from libai.utils.distributed import ParallelLayout
from libai.utils.testing import launch
from tests.configs.tiny_data import write_cifar100

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CLASSES = 5
VIT = dict(img_size=16, patch_size=4, embed_dim=32, depth=2, num_heads=4, num_classes=CLASSES)
SWIN = dict(img_size=32, patch_size=2, embed_dim=16, depths=(2, 2), num_heads=(2, 4),
            window_size=4, drop_path_rate=0.0, num_classes=CLASSES)
MODELS = {"vit": (VisionTransformer, VIT), "swin": (SwinTransformer, SWIN)}


def _build(name, seed=0, **overrides):
    cls, kwargs = MODELS[name]
    flow.manual_seed(seed)
    return cls(**dict(kwargs, **overrides))


def _images(name, batch=3, seed=0):
    size = MODELS[name][1]["img_size"]
    return np.random.RandomState(seed).randn(batch, 3, size, size).astype(np.float32)


def _log_softmax(z):
    z = z.astype(np.float64)
    z = z - z.max(-1, keepdims=True)
    return z - np.log(np.exp(z).sum(-1, keepdims=True))


def _layer_norm(x, eps=1e-5):
    mean = x.mean(-1, keepdims=True)
    return (x - mean) / np.sqrt(x.var(-1, keepdims=True) + eps)


def _eval_logits(model, images):
    model.eval()
    logits = model(flow.tensor(images))["prediction_scores"].numpy()
    model.train()
    return logits


# ------------------------------------------------------------------------------- outputs, losses
@pytest.mark.parametrize("name", ["vit", "swin"])
def test_outputs_by_mode_and_shape(local_layout, name):
    model = _build(name)
    images = flow.tensor(_images(name))
    labels = flow.tensor([0, 1, 4])
    assert set(model(images, labels)) == {"losses"}
    assert model(images, labels)["losses"].shape == ()
    scores = model(images)["prediction_scores"]  # no labels: predictions even in training
    assert tuple(scores.shape) == (3, CLASSES)
    model.eval()
    assert set(model(images, labels)) == {"prediction_scores"}


@pytest.mark.parametrize("name", ["vit", "swin"])
def test_hard_label_loss_matches_numpy(local_layout, name):
    model = _build(name)
    images, labels = _images(name, batch=4), np.array([3, 0, 4, 1])
    expected = -_log_softmax(_eval_logits(model, images))[np.arange(4), labels].mean()
    loss = model(flow.tensor(images), flow.tensor(labels))["losses"].numpy()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


@pytest.mark.parametrize("name", ["vit", "swin"])
def test_soft_mixup_targets_loss_matches_numpy(local_layout, name):
    model = _build(name)
    mixup = Mixup(mixup_alpha=0.8, cutmix_alpha=0.0, label_smoothing=0.1, num_classes=CLASSES, seed=3)
    images, targets = mixup(flow.tensor(_images(name, batch=4)), flow.tensor([3, 0, 4, 1]))
    targets = targets.numpy()
    assert targets.shape == (4, CLASSES) and not np.allclose(targets.max(1), 1.0)  # really soft
    logp = _log_softmax(_eval_logits(model, images.numpy()))
    expected = -(targets * logp).sum(1).mean()
    loss = model(images, flow.tensor(targets))["losses"].numpy()
    np.testing.assert_allclose(loss, expected, rtol=1e-5)


def test_loss_rejects_labels_it_cannot_read(local_layout):
    loss = ImageClassificationLoss()
    logits = flow.randn(2, CLASSES)
    with pytest.raises(ValueError, match="integer class ids .* or float soft targets"):
        loss(logits, flow.tensor([0.0, 1.0]))
    with pytest.raises(ValueError, match=r"soft targets of shape \(2, 3\) .* Mixup's num_classes"):
        loss(logits, flow.rand(2, 3))
    with pytest.raises(ValueError, match="3 labels for a batch of 2"):
        loss(logits, flow.tensor([0, 1, 2]))


# ------------------------------------------------------------------------------- shared pieces
def test_patch_embedding_is_a_projection_of_each_patch(local_layout):
    embed = PatchEmbedding(img_size=(8, 12), patch_size=4, in_chans=2, embed_dim=5)
    with flow.no_grad():
        embed.proj.bias.copy_(np.arange(5, dtype=np.float32))
    images = np.random.RandomState(1).randn(2, 2, 8, 12).astype(np.float32)
    out = embed(flow.tensor(images)).numpy()
    weight, bias = embed.proj.weight.numpy().reshape(5, -1), embed.proj.bias.numpy()
    assert out.shape == (2, 6, 5) and embed.grid_size == (2, 3)
    for row in range(2):
        for col in range(3):
            patch = images[:, :, 4 * row:4 * row + 4, 4 * col:4 * col + 4].reshape(2, -1)
            np.testing.assert_allclose(out[:, row * 3 + col], patch @ weight.T + bias, rtol=1e-4, atol=1e-5)
    with pytest.raises(ValueError, match=r"expected images of shape \[batch, 2, 8, 12\]"):
        embed(flow.randn(2, 2, 8, 8))
    with pytest.raises(ValueError, match="does not divide into patches"):
        PatchEmbedding(img_size=10, patch_size=4)


# ------------------------------------------------------------------------------- Swin pieces
def test_relative_position_index_numbers_offsets(local_layout):
    window = 3
    index = relative_position_index(window)
    coords = [(y, x) for y in range(window) for x in range(window)]
    for i, (yi, xi) in enumerate(coords):
        for j, (yj, xj) in enumerate(coords):
            # offsets (dy, dx) in [-2, 2]² enumerated row by row over a 5 × 5 table
            assert index[i, j] == (yi - yj + 2) * 5 + (xi - xj + 2)
    assert sorted(set(index.ravel())) == list(range(25))  # every table row is used
    np.testing.assert_array_equal(np.diag(index), 12)  # zero offset is the centre row


@pytest.mark.parametrize("height,width", [(8, 8), (8, 12)])
def test_shifted_window_mask_blocks_tokens_from_opposite_borders(height, width):
    window, shift = 4, 2
    mask = shifted_window_mask(height, width, window, shift)
    # Independent rule: after rolling by -shift, the token at (h, w) came from
    # ((h + shift) % H, (w + shift) % W); it "wrapped" on an axis when h + shift >= H. Two tokens
    # of one window are neighbours in the image only if they wrapped on the same axes.
    cols = width // window
    assert mask.shape == ((height // window) * cols, window * window, window * window)
    for win in range(mask.shape[0]):
        top, left = (win // cols) * window, (win % cols) * window
        cells = [(top + dy, left + dx) for dy in range(window) for dx in range(window)]
        for i, (hi, wi) in enumerate(cells):
            for j, (hj, wj) in enumerate(cells):
                same_side = (hi + shift >= height) == (hj + shift >= height) and (
                    wi + shift >= width) == (wj + shift >= width)
                assert mask[win, i, j] == same_side, (win, i, j)
    assert mask[0].all()  # the first window never straddles a border


def _changed_positions(block, resolution, position):
    height, width = resolution
    x = np.random.RandomState(0).randn(1, height * width, 8).astype(np.float32)
    moved = x.copy()
    moved[0, position[0] * width + position[1]] += np.linspace(-3.0, 3.0, 8)  # not a constant: LN would erase it
    a, b = block(flow.tensor(x)).numpy(), block(flow.tensor(moved)).numpy()
    changed = np.abs(a - b).max(-1)[0] > 1e-6
    return {(int(i) // width, int(i) % width) for i in np.flatnonzero(changed)}


def test_shifted_block_never_mixes_tokens_across_image_borders(local_layout):
    flow.manual_seed(0)
    shifted = SwinBlock(8, (8, 8), num_heads=2, window_size=4, shift_size=2)
    plain = SwinBlock(8, (8, 8), num_heads=2, window_size=4, shift_size=0)
    # Token (0, 0) shares its shifted window with rows/cols 6-7 of the far borders, but the
    # mask lets it reach only the tokens that are its neighbours in the image.
    assert _changed_positions(shifted, (8, 8), (0, 0)) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    # A token in the middle of a shifted window reaches the whole window: rows/cols 2-5.
    assert _changed_positions(shifted, (8, 8), (3, 3)) == {(h, w) for h in range(2, 6) for w in range(2, 6)}
    # Without the shift, token (0, 0) reaches its whole 4 × 4 window.
    assert _changed_positions(plain, (8, 8), (0, 0)) == {(h, w) for h in range(4) for w in range(4)}


def test_window_attention_matches_numpy(local_layout):
    dim, heads, window, batch = 8, 2, 3, 2
    attn = WindowAttention(dim, window, heads)
    rng = np.random.RandomState(5)
    table = rng.randn(25, heads).astype(np.float32)
    with flow.no_grad():  # a bias large enough to matter
        attn.relative_position_bias_table.copy_(np.asarray(table, dtype=np.float32))
    allowed = shifted_window_mask(6, 6, window, 1)  # 4 windows
    additive = np.where(allowed, 0.0, -10000.0).astype(np.float32)
    x = rng.randn(batch * 4, window * window, dim).astype(np.float32)
    b = flow.sbp.broadcast  # the model places its mask; here the test does
    out = attn(flow.tensor(x), local_layout.to_global(flow.tensor(additive), [b, b])).numpy()

    qkv = x @ attn.qkv.weight.numpy().T + attn.qkv.bias.numpy()
    qkv = qkv.reshape(batch * 4, 9, heads, 3, dim // heads)  # laid out head by head
    q, k, v = (qkv[:, :, :, part].transpose(0, 2, 1, 3) for part in range(3))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(dim // heads)
    coords = [(y, x_) for y in range(window) for x_ in range(window)]
    for i, (yi, xi) in enumerate(coords):
        for j, (yj, xj) in enumerate(coords):
            scores[:, :, i, j] += table[(yi - yj + 2) * 5 + (xi - xj + 2)]
    scores = np.where(allowed[np.arange(batch * 4) % 4][:, None], scores, -np.inf)
    probs = np.exp(scores - scores.max(-1, keepdims=True))
    probs /= probs.sum(-1, keepdims=True)
    context = (probs @ v).transpose(0, 2, 1, 3).reshape(batch * 4, 9, dim)
    expected = context @ attn.proj.weight.numpy().T + attn.proj.bias.numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_patch_merging_concatenates_2x2_neighbourhoods(local_layout):
    merge = PatchMerging((4, 6), dim=3)
    x = np.random.RandomState(2).randn(2, 4, 6, 3).astype(np.float32)
    out = merge(flow.tensor(x.reshape(2, 24, 3))).numpy()
    parts = [x[:, 0::2, 0::2], x[:, 1::2, 0::2], x[:, 0::2, 1::2], x[:, 1::2, 1::2]]
    merged = np.concatenate(parts, -1).reshape(2, 6, 12)
    expected = _layer_norm(merged) @ merge.reduction.weight.numpy().T
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-5)


def test_small_maps_use_one_unshifted_window(local_layout):
    block = SwinBlock(8, (4, 4), num_heads=2, window_size=7, shift_size=3)
    assert (block.window_size, block.shift_size, block.attn_mask) == (4, 0, None)


# ------------------------------------------------------------------------------- structure
def test_layer_indices_follow_the_pipeline_rule(local_layout):
    vit = _build("vit")
    assert vit.patch_embed.layer_idx == 0
    assert [b.layer_idx for b in vit.blocks] == [0, 1]
    assert (vit.norm.layer_idx, vit.head.layer_idx, vit.loss_func.layer_idx) == (-1, -1, -1)
    swin = _build("swin")
    assert swin.patch_embed.layer_idx == 0
    assert [b.layer_idx for b in swin.activation_checkpoint_modules()] == [0, 1, 2, 3]
    assert swin.layers[0].downsample.layer_idx == 1  # merging goes with its stage's last block
    assert swin.layers[1].downsample is None
    assert (swin.norm.layer_idx, swin.head.layer_idx) == (-1, -1)


def test_activation_checkpoint_modules_are_the_blocks(local_layout):
    vit, swin = _build("vit"), _build("swin")
    vit_blocks = vit.activation_checkpoint_modules()
    assert [id(b) for b in vit_blocks] == [id(b) for b in vit.blocks]
    assert all(isinstance(b, TransformerLayer) for b in vit_blocks)
    swin_blocks = swin.activation_checkpoint_modules()
    assert len(swin_blocks) == 4 and all(isinstance(b, SwinBlock) for b in swin_blocks)
    assert [b.shift_size for b in swin_blocks] == [0, 2, 0, 2]  # every second block shifts
    assert [b.input_resolution for b in swin_blocks] == [(16, 16)] * 2 + [(8, 8)] * 2


@pytest.mark.parametrize("name", ["vit", "swin"])
def test_same_seed_same_weights(local_layout, name):
    a, b, c = _build(name, seed=3), _build(name, seed=3), _build(name, seed=4)
    pa, pb, pc = (dict(m.named_parameters()) for m in (a, b, c))
    for key in pa:
        np.testing.assert_array_equal(pa[key].numpy(), pb[key].numpy())
    assert any(not np.array_equal(pa[k].numpy(), pc[k].numpy()) for k in pa)
    # truncated normal init: std 0.02, nothing beyond 2 std
    head = pa["head.weight"].numpy()
    assert np.abs(head).max() <= 0.04 + 1e-7 and 0.01 < head.std() < 0.03


def test_bad_sizes_are_clear_errors(local_layout):
    with pytest.raises(ValueError, match="Did you mean 'depth'"):
        VisionTransformer(dict(VIT, dept=2))
    with pytest.raises(ValueError, match="cannot be halved 2 times for 3 stages"):
        SwinTransformer(**dict(SWIN, img_size=12, depths=(1, 1, 1), num_heads=(2, 2, 2)))
    with pytest.raises(ValueError, match="does not divide into 3x3 windows"):
        SwinTransformer(**dict(SWIN, window_size=3))
    with pytest.raises(ValueError, match="one entry per stage"):
        SwinTransformer(**dict(SWIN, num_heads=(2,)))


def test_heads_must_split_over_tensor_parallel_ranks():
    tp2 = ParallelLayout.from_config({"tensor_parallel_size": 2, "device_type": "cpu"}, world_size=2, rank=0)
    with tp2, pytest.raises(ValueError, match="num_heads=3 cannot be split over tensor_parallel_size=2"):
        WindowAttention(12, 4, num_heads=3)


# ------------------------------------------------------------------------------- configs
@pytest.mark.parametrize("name,blocks", [("vit", "depth"), ("swin", "depths")])
def test_model_configs_load_and_build(local_layout, tmp_path, name, blocks):
    cfg = LazyConfig.load(os.path.join(REPO, "configs", "common", "models", f"{name}.py"))
    LazyConfig.save(cfg, str(tmp_path / "model.yaml"))
    assert LazyConfig.to_py(LazyConfig.load(str(tmp_path / "model.yaml"))) == LazyConfig.to_py(cfg)
    model = instantiate(cfg.model)
    images = flow.randn(2, 3, cfg.model.img_size, cfg.model.img_size)
    assert tuple(model(images)["prediction_scores"].shape) == (2, cfg.model.num_classes)
    # what the docs tell a pipelined run to set as train.dist.pipeline_num_layers
    expected_layers = np.sum(cfg.model[blocks])
    assert len(model.activation_checkpoint_modules()) == expected_layers
    # the size table of docs/vision_models.md quotes this config's parameter count
    with open(os.path.join(REPO, "docs", "vision_models.md")) as f:
        row = next(line for line in f if line.startswith(f"| `configs/common/models/{name}.py`"))
    quoted = int(row.rstrip(" |\n").rsplit("|", 1)[1].replace(",", ""))
    assert sum(p.numel() for p in model.parameters()) == quoted


# ------------------------------------------------------------------------------- training
def _train_cfg(output_dir, model, iters):
    from libai.data.build import build_image_test_loader, build_image_train_loader
    from libai.data.datasets.synthetic import SyntheticImageDataset

    cfg = OmegaConf.create()
    cfg.model = model
    cfg.train = get_config("common/train.py").train
    cfg.optim = get_config("common/optim.py").optim
    cfg.graph = get_config("common/models/graph.py").graph
    data = LazyCall(SyntheticImageDataset)(num_samples=16, image_size=16, num_classes=4)
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_image_train_loader)(dataset=[data], num_workers=0)
    cfg.dataloader.test = [LazyCall(build_image_test_loader)(dataset=data, num_workers=0)]
    cfg.optim.lr = 3e-3
    cfg.train.update(dict(
        output_dir=output_dir, train_micro_batch_size=16, test_micro_batch_size=16,
        train_iter=iters, warmup_ratio=0.0, log_period=1, checkpointer=dict(period=1000),
        evaluation=dict(enabled=False), dist=dict(device_type="cpu"),
    ))
    return cfg


@pytest.mark.parametrize("name,graph", [("vit", False), ("swin", False), ("swin", True)])
def test_default_trainer_reduces_the_loss(tmp_path, name, graph):
    from libai.engine import DefaultTrainer
    from libai.engine.trainer import HookBase

    small = dict(VIT, num_classes=4) if name == "vit" else dict(
        SWIN, img_size=16, patch_size=2, num_classes=4)
    cfg = _train_cfg(str(tmp_path), LazyCall(MODELS[name][0])(**small), iters=6)
    # Graph mode compiles the rolls, gathers and mask buffers; checkpointing wraps SwinBlocks
    cfg.graph.enabled = graph
    cfg.train.activation_checkpoint.enabled = graph
    losses = []

    class Record(HookBase):
        def after_step(self):
            losses.append(float(self.trainer.storage.history("total_loss").latest()))

    trainer = DefaultTrainer(cfg)
    trainer.register_hooks([Record()])
    trainer.train()
    from libai.utils.testing import COMPILED_GRAPH, runner_description

    assert runner_description(trainer) == (COMPILED_GRAPH if graph else "EagerTrainer")
    # every step sees the same 16 samples: the loss on them must go down
    assert len(losses) == 6
    assert losses[-1] < losses[0] - 0.1, losses


# ------------------------------------------------------------------------------- the docs page
def _doc_blocks():
    with open(os.path.join(REPO, "docs", "vision_models.md")) as f:
        return re.findall(r"```python\n(.*?)```", f.read(), flags=re.S)


def _doc_config():
    return next(b for b in _doc_blocks() if "configs.common.data.cifar100" in b)


def test_docs_python_examples_print_what_the_page_says(capsys):
    examples = [b for b in _doc_blocks() if "configs.common" not in b]
    assert len(examples) == 2
    for code in examples:
        exec(compile(code, "docs/vision_models.md", "exec"), {"__name__": "__doc_example__"})
    out = capsys.readouterr().out
    assert "{'losses': tensor(" in out
    assert "oneflow.Size([])" in out and "oneflow.Size([8, 10])" in out
    assert "(4, 16, 16) True 64" in out


def test_docs_cifar_config_trains_and_evaluates(tmp_path):
    from libai.engine import DefaultTrainer

    write_cifar100(str(tmp_path), np.random.default_rng(0), num_classes=100)
    path = tmp_path / "vit_cifar100.py"
    path.write_text(_doc_config())
    cfg = LazyConfig.load(str(path))
    assert cfg.model.num_classes == 100 and cfg.dataloader.train.mixup_func.num_classes == 100
    LazyConfig.apply_overrides(cfg, [
        f"dataloader.train.dataset.0.root={tmp_path}", f"dataloader.test.0.dataset.root={tmp_path}",
        "dataloader.train.num_workers=0", "dataloader.test.0.num_workers=0",
        f"train.output_dir={tmp_path / 'out'}", "train.train_epoch=0", "train.train_iter=2",
        "train.train_micro_batch_size=4", "train.test_micro_batch_size=4", "train.log_period=1",
        "train.evaluation.eval_period=2", "model.depth=2", "model.embed_dim=32",
    ])
    DefaultTrainer(cfg).train()
    with open(tmp_path / "out" / "metrics.json") as f:
        lines = [json.loads(line) for line in f]
    assert np.isfinite([l["total_loss"] for l in lines if "total_loss" in l]).all()
    assert any("Acc@1" in l for l in lines)


# ------------------------------------------------------------------------------- two processes
RTOL = 1e-5


@pytest.fixture(scope="module")
def parallel_results(tmp_path_factory):
    out = str(tmp_path_factory.mktemp("vision") / "results.json")
    script = os.path.join(HERE, "parallel_vision_script.py")
    proc = launch(script, 2, args=[out, "tp2", "dp2", "pp2"], timeout=600, cwd=HERE)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(out) as f:
        return json.load(f)


@pytest.mark.parametrize("layout", ["tp2", "dp2", "pp2"])
@pytest.mark.parametrize("name", ["vit", "swin"])
def test_parallel_layouts_match_one_process(parallel_results, layout, name):
    check = parallel_results[f"{layout}/{name}"]
    parallel, reference = check["loss"]
    assert parallel == pytest.approx(reference, rel=RTOL)
    for param, (norm_p, norm_r) in check["grad_norms"].items():
        assert norm_r > 0 and norm_p == pytest.approx(norm_r, rel=RTOL), param
    bad = {k: v for k, v in check["grads"].items() if not v < RTOL}
    assert not bad, f"gradients differ from the one-process run: {bad}"
    assert max(check["init"].values()) == 0.0, "initial weights depend on the layout"
    assert check["loss_sbp"] and set(check["loss_sbp"]) == {"oneflow.sbp.broadcast"}  # whole on every rank


@pytest.mark.parametrize("name", ["vit", "swin"])
def test_data_parallel_work_stays_split_over_the_batch(parallel_results, name):
    # ViT's class token, replicated, made OneFlow replicate the concatenation with the split
    # patches and every block after it: each rank computed the whole batch
    assert parallel_results[f"dp2/{name}"]["replicated"] == []
