"""Training visuals in real (tiny) runs: TensorBoard histograms, image grids and per-group lr
read back from the event file; live plots refreshed while training; the model summary; and
training results unchanged by all of them."""
import hashlib
import io
import os
import struct

import numpy as np
import oneflow as flow
import pytest
from oneflow import nn
from PIL import Image

from libai.config import LazyCall
from libai.data.build import build_image_train_loader
from libai.data.structures import DistTensorData, Instance
from libai.engine.default_trainer import DefaultTrainer
from libai.engine.trainer import HookBase

from toy import LossRecorder, toy_cfg


# ----------------------------------------------------------------------------- an image task
class ImageDataset(flow.utils.data.Dataset):
    """``n`` random 3x4x4 images; the label is whether the red channel's mean is positive."""

    def __init__(self, n: int = 64, seed: int = 0) -> None:
        g = flow.Generator()
        g.manual_seed(seed)
        self.x = flow.randn(n, 3, 4, 4, generator=g)
        self.y = (self.x[:, 0].mean((1, 2)) > 0).to(flow.long)

    def __len__(self) -> int:
        return len(self.y)

    def __getitem__(self, i: int) -> Instance:
        return Instance(images=DistTensorData(self.x[i]), labels=DistTensorData(self.y[i], placement_idx=-1))


class ImageModel(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 2, 3, padding=1)
        self.head = nn.Linear(32, 2)
        self.loss_func = nn.CrossEntropyLoss()

    def forward(self, images, labels=None):
        logits = self.head(flow.flatten(self.conv(images), 1))
        if self.training and labels is not None:
            return {"losses": self.loss_func(logits, labels)}
        return {"prediction_scores": logits}


def image_cfg(output_dir, **train):
    cfg = toy_cfg(output_dir, model=LazyCall(ImageModel)(), **train)
    cfg.dataloader.train = LazyCall(build_image_train_loader)(dataset=[LazyCall(ImageDataset)()], num_workers=0)
    cfg.train.evaluation.enabled = False
    return cfg


# ----------------------------------------------------------------------------- event file reader
def _crc32c_table():
    table = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_TABLE = _crc32c_table()


def _masked_crc(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for byte in data:
        crc = _TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    crc ^= 0xFFFFFFFF
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def read_events(folder):
    """Every (tag, step, value proto) of the folder's single event file, checking the TFRecord
    framing and both CRCs of every record as TensorBoard's reader does."""
    from tensorboardX.proto import event_pb2

    files = [f for f in os.listdir(folder) if f.startswith("events.out.tfevents")]
    assert len(files) == 1, files
    data = open(os.path.join(folder, files[0]), "rb").read()
    found, pos = [], 0
    while pos < len(data):
        header = data[pos:pos + 8]
        (length,) = struct.unpack("<Q", header)
        assert struct.unpack("<I", data[pos + 8:pos + 12])[0] == _masked_crc(header)
        payload = data[pos + 12:pos + 12 + length]
        assert struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])[0] == _masked_crc(payload)
        pos += 16 + length
        event = event_pb2.Event.FromString(payload)
        for value in event.summary.value:
            found.append((value.tag, event.step, value))
    return found


class Snapshots(HookBase):
    """Copies of every parameter and gradient as the visuals hook sees them (after backward)."""

    def __init__(self):
        self.params, self.grads = {}, {}

    def after_backward(self):
        it = self.trainer.iter
        for name, p in self.trainer.model.named_parameters():
            self.params[(name, it)] = p.detach().numpy().copy()
            self.grads[(name, it)] = p.grad.numpy().copy()


# ----------------------------------------------------------------------------- TensorBoard
def test_histograms_images_and_group_lrs_are_readable(tmp_path):
    cfg = image_cfg(str(tmp_path), tensorboard=dict(lr_period=1, histogram_period=2, image_period=3, max_images=4))
    trainer = DefaultTrainer(cfg)
    lrs, snaps = {}, Snapshots()
    trainer.register_hooks([LossRecorder.make(lrs), snaps])
    trainer.train()
    events = read_events(str(tmp_path))
    names = [name for name, _ in trainer.model.named_parameters()]
    assert len(names) == 4

    hist = {(tag, step): v.histo for tag, step, v in events if v.HasField("histo")}
    expected_tags = {f"params/{n}" for n in names} | {f"grads/{n}" for n in names}
    assert {tag for tag, _ in hist} == expected_tags
    assert {step for _, step in hist} == {1, 3, 5}
    for name in names:
        for step in (1, 3, 5):
            for kind, values in (("params", snaps.params[(name, step)]), ("grads", snaps.grads[(name, step)])):
                h = hist[(f"{kind}/{name}", step)]
                assert h.num == values.size
                assert h.min == pytest.approx(float(values.min())) and h.max == pytest.approx(float(values.max()))
                assert h.sum == pytest.approx(float(values.astype(np.float64).sum()), rel=1e-5, abs=1e-6)

    images = {(tag, step): v.image for tag, step, v in events if v.HasField("image")}
    assert set(images) == {("train_images/images", 2), ("train_images/images", 5)}
    for image in images.values():
        # 4 of the 8 images, 2x2 grid of 4x4 images with 2 pixels of padding: 2 + 2 * 6 = 14.
        assert (image.height, image.width, image.colorspace) == (14, 14, 3)
        pixels = np.asarray(Image.open(io.BytesIO(image.encoded_image_string)).convert("RGB"))
        assert pixels.shape == (14, 14, 3)
        for row in range(2):
            for col in range(2):
                cell = pixels[2 + 6 * row:6 + 6 * row, 2 + 6 * col:6 + 6 * col]
                assert cell.min() == 0 and cell.max() == 255  # each image min-max scaled
        assert pixels[:2].max() == 0 and pixels[:, 6:8].max() == 0  # black padding

    groups = len(trainer.optimizer.param_groups)
    assert groups == 2  # the default optimizer splits off the no-weight-decay parameters
    scalars = {(tag, step): v.simple_value for tag, step, v in events if tag.startswith("lr/")}
    assert set(scalars) == {(f"lr/group{g}", s) for g in range(groups) for s in range(6)}
    for step in range(6):
        for g in range(groups):
            assert scalars[(f"lr/group{g}", step)] == pytest.approx(lrs[step][1], rel=1e-6)
    # The scalar writer shares the file: total_loss is in it too.
    assert {step for tag, step, _ in events if tag == "total_loss"} == set(range(6))
    assert not hasattr(trainer, "batch_tap") and "get_batch" not in vars(trainer)


def test_batch_without_images_writes_no_grid_and_says_why(tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="libai")
    trainer = DefaultTrainer(toy_cfg(str(tmp_path), tensorboard=dict(image_period=2)))
    trainer.train()
    assert not [tag for tag, _, v in read_events(str(tmp_path)) if v.HasField("image")]
    assert "the batch holds no image field" in caplog.text
    assert caplog.text.count("the batch holds no image field") == 1


# ----------------------------------------------------------------------------- results unchanged
ALL_ON = dict(tensorboard=dict(lr_period=1, histogram_period=1, image_period=1),
              live_plots=dict(enabled=True, period=1, weight="conv.weight"),
              model_summary=dict(enabled=True))
ALL_OFF = dict(tensorboard=dict(lr_period=0), model_summary=dict(enabled=False))


@pytest.mark.parametrize("graph", [False, True], ids=["eager", "graph"])
def test_visuals_do_not_change_training(tmp_path, graph):
    results = []
    for name, visuals in (("on", ALL_ON), ("off", ALL_OFF)):
        cfg = image_cfg(str(tmp_path / name), **visuals)
        cfg.graph.enabled = graph
        trainer = DefaultTrainer(cfg)
        record = {}
        trainer.register_hooks([LossRecorder.make(record)])
        trainer.train()
        weights = {n: p.numpy() for n, p in trainer.model.named_parameters()}
        results.append((record, weights, trainer))
    (on, on_weights, on_trainer), (off, off_weights, off_trainer) = results
    assert len(on) == 6 and on == off  # every loss and lr, bit for bit
    for n in on_weights:
        np.testing.assert_array_equal(on_weights[n], off_weights[n])
    assert [h.name for h in on_trainer._hooks][-4:-1] == ["ModelSummaryHook", "TensorboardVisuals", "LivePlots"]
    visual = {"ModelSummaryHook", "TensorboardVisuals", "LivePlots"}
    assert not visual & {h.name for h in off_trainer._hooks}
    assert not os.path.exists(tmp_path / "off" / "plots")
    assert not os.path.exists(tmp_path / "off" / "model-summary.txt")


# ----------------------------------------------------------------------------- live plots
class PlotWatcher(HookBase):
    """What a viewer would see in output_dir/plots after each iteration."""

    def __init__(self, folder):
        self.folder, self.seen = folder, {}

    def after_step(self):
        state = {}
        if os.path.isdir(self.folder):
            for f in sorted(os.listdir(self.folder)):
                data = open(os.path.join(self.folder, f), "rb").read()
                state[f] = (os.stat(os.path.join(self.folder, f)).st_mtime_ns, hashlib.sha1(data).hexdigest(), data[:8])
        self.seen[self.trainer.iter] = state


def test_live_plots_are_refreshed_while_training(tmp_path):
    cfg = toy_cfg(str(tmp_path), live_plots=dict(enabled=True, period=2, weight="net.0.weight"))
    trainer = DefaultTrainer(cfg)
    watcher = PlotWatcher(str(tmp_path / "plots"))
    trainer.register_hooks([watcher])
    trainer.train()
    seen = watcher.seen
    assert seen[0] == {}  # the first refresh is at the end of iteration 1
    assert set(seen[1]) == {"losses.png", "lr.png", "weight_net.0.weight.png"}
    # The evaluation at iteration 2 (eval_period=3) appears at the next refresh.
    assert set(seen[3]) == set(seen[1]) | {"metric_Acc_1.png"}
    for name in ("losses.png", "lr.png", "weight_net.0.weight.png"):
        assert seen[2][name] == seen[1][name]  # not a refresh iteration
        assert seen[3][name][0] > seen[1][name][0] and seen[3][name][1] != seen[1][name][1]
        assert seen[5][name][1] != seen[3][name][1]
    for state in seen.values():
        assert all(magic == b"\x89PNG\r\n\x1a\n" for _, _, magic in state.values())
    assert sorted(os.listdir(tmp_path / "plots")) == sorted(seen[3])  # no temporary files left
    with Image.open(tmp_path / "plots" / "losses.png") as image:
        assert image.size == (800, 450)


def test_live_plots_unknown_weight_suggests_the_name(tmp_path):
    trainer = DefaultTrainer(toy_cfg(str(tmp_path), live_plots=dict(enabled=True, weight="net.0.wieght")))
    with pytest.raises(ValueError, match=r"'net\.0\.wieght' is not a parameter of the model\. Did you mean 'net\.0\.weight'"):
        trainer.train()


# ----------------------------------------------------------------------------- model summary
def test_model_summary_is_logged_and_saved_with_shapes(tmp_path, caplog):
    import logging

    caplog.set_level(logging.INFO, logger="libai")
    trainer = DefaultTrainer(image_cfg(str(tmp_path)))
    trainer.train()
    total = sum(p.numel() for p in trainer.model.parameters())
    assert total == (3 * 2 * 9 + 2) + (32 * 2 + 2)  # conv 3x3 from 3 to 2 channels, linear 32 -> 2
    text = (tmp_path / "model-summary.txt").read_text()
    assert f"Total parameters: {total:,}" in text and f"Trainable parameters: {total:,}" in text
    lines = {line.split()[0]: line.split() for line in text.splitlines() if line.split()}
    assert lines["conv"][:4] == ["conv", "Conv2d", "[8,", "2,"] and lines["conv"][-1] == "56"
    assert lines["head"][1:] == ["Linear", "[8,", "2]", "66"]
    assert "Model summary (model-summary.txt)" in caplog.text and "Total parameters: 122" in caplog.text
    assert all(len(m._forward_hooks) == 0 for m in trainer.model.modules())


# ----------------------------------------------------------------------------- two ranks
@pytest.fixture(scope="module")
def two_rank_runs(tmp_path_factory):
    """Both two-rank trainings, one after the other in one launch: ``OUT/<mode>/result.json``."""
    from libai.utils.testing import launch

    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "visuals_two_ranks_script.py")
    out = tmp_path_factory.mktemp("two_ranks")
    result = launch(script, nproc=2, args=[str(out), "dp", "tp"], timeout=600)
    assert result.returncode == 0, result.stdout[-4000:]
    return out


@pytest.mark.parametrize("mode", ["dp", "tp"])
def test_two_ranks_gather_to_rank0_which_alone_writes(two_rank_runs, mode):
    """Data parallel (the batch is split over the ranks) and tensor parallel (weights are split):
    histograms hold the whole tensors, the image grid the first samples of the global batch,
    and rank 0 alone writes the event file."""
    import json

    found = json.loads((two_rank_runs / mode / "result.json").read_text())
    if mode == "tp":
        assert set(found["split"]) == {"fc1.weight", "fc1.bias", "fc2.weight"}
        sizes = {"fc1.weight": 384, "fc1.bias": 8, "fc2.weight": 16, "fc2.bias": 2}
        weight, total = "fc1.weight", 410
    else:
        sizes = {"conv.weight": 54, "conv.bias": 2, "head.weight": 64, "head.bias": 2}
        weight, total = "conv.weight", 122
    expected = {f"{kind}/{name}@{step}" for kind in ("params", "grads") for name in sizes for step in (1, 3)}
    assert set(found["hist"]) == expected
    for key, (num, low, high, total_sum) in found["hist"].items():
        ref = found["full"][key]
        assert num == ref[0] == sizes[key.split("/")[1].split("@")[0]]
        assert (low, high) == pytest.approx((ref[1], ref[2]), rel=1e-6)
        assert total_sum == pytest.approx(ref[3], rel=1e-5, abs=1e-6)
    assert found["images"] == [["train_images/images", 1, 14, 14], ["train_images/images", 3, 14, 14]]
    assert found["plots"] == ["losses.png", "lr.png", f"weight_{weight}.png"]
    assert f"Total parameters: {total}" in found["summary"]


# ----------------------------------------------------------------------------- settings
def test_bad_settings_are_refused_with_the_key_and_off_means_no_hook(tmp_path):
    from libai.engine.hooks import LivePlots, ModelSummaryHook, TensorboardVisuals

    with pytest.raises(ValueError, match=r"train\.tensorboard\.histogram_period must be >= 0 \(0 = off\), got -1"):
        TensorboardVisuals(str(tmp_path), histogram_period=-1)
    with pytest.raises(ValueError, match=r"train\.tensorboard\.max_images must be >= 1, got 0"):
        TensorboardVisuals(str(tmp_path), max_images=0)
    with pytest.raises(ValueError, match=r"train\.live_plots\.period must be >= 1, got 0"):
        LivePlots(str(tmp_path), period=0)
    off = dict(lr_period=0, histogram_period=0, image_period=0, max_images=16)
    assert TensorboardVisuals.from_config(off, str(tmp_path), log_period=20) is None
    only_lr = TensorboardVisuals.from_config(dict(off, lr_period=None), str(tmp_path), log_period=7)
    assert only_lr.lr_period == 7 and not only_lr.needs_all_ranks
    assert LivePlots.from_config(dict(enabled=False, period=None, weight=None), str(tmp_path), 5) is None
    live = LivePlots.from_config(dict(enabled=True, period=None, weight=None), str(tmp_path), 5)
    assert live.period == 5 and live.plots_dir == os.path.join(str(tmp_path), "plots")
    assert ModelSummaryHook.from_config(dict(enabled=False), str(tmp_path)) is None


def test_batch_tap_keeps_the_latest_inputs_and_restores_get_batch():
    from libai.engine.hooks.batch_tap import tap_batches, untap_batches

    class Owner:
        def get_batch(self, data, device=None, mixup=None):
            return {"x": data}

    def users_own(data, device=None, mixup=None):
        return {"y": data}

    plain, custom = Owner(), Owner()
    custom.get_batch = users_own  # a user's instance attribute must come back, not vanish
    for owner, field in ((plain, "x"), (custom, "y")):
        first, second = tap_batches(owner), tap_batches(owner)
        assert first is second and owner.batch_tap is first and first.latest is None
        assert owner.get_batch(3, "cpu", None) == {field: 3} and first.latest == {field: 3}
        untap_batches(owner)
        assert owner.batch_tap is first  # one user left
        untap_batches(owner)
        assert not hasattr(owner, "batch_tap")
    assert "get_batch" not in vars(plain) and plain.get_batch(1) == {"x": 1}
    assert custom.get_batch is users_own
    assert tap_batches(object()) is None  # nothing to tap: the hooks go without the batch
