"""ResNet and AlexNet: parameter counts against the published architectures (computed here by
formula), checkpoint key names, shapes, the global-batch BatchNorm against NumPy, layout rules,
configs, a loss that falls, and Graph mode equal to Eager through DefaultTrainer."""
import os

import numpy as np
import oneflow as flow
import pytest

from image_train_helpers import train_image_model
from libai.config import LazyCall, LazyConfig, instantiate
from libai.models import AlexNet, ResNet
from libai.models.cnn_common import BatchNorm2d
from libai.utils.distributed import ParallelLayout

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TINY_ALEX = dict(channels=(8, 16, 16, 16, 16), hidden_size=32, pool_size=2)


def _count(model):
    return sum(p.numel() for p in model.parameters())


def _conv(cin, cout, k, bias=False):
    return cin * cout * k * k + (cout if bias else 0)


def _bn(c):
    return 2 * c  # weight and bias (running statistics are buffers)


def _resnet_reference_count(blocks, bottleneck, classes=1000, width=64):
    """The ResNet paper's Table 1 architectures, counted conv by conv."""
    total = _conv(3, width, 7) + _bn(width)
    cin = width
    for stage, count in enumerate(blocks):
        w = width * 2 ** stage
        out = 4 * w if bottleneck else w
        for i in range(count):
            if bottleneck:
                total += _conv(cin, w, 1) + _bn(w) + _conv(w, w, 3) + _bn(w) + _conv(w, out, 1) + _bn(out)
            else:
                total += _conv(cin, w, 3) + _bn(w) + _conv(w, w, 3) + _bn(w)
            if i == 0 and (stage > 0 or cin != out):  # projection shortcut
                total += _conv(cin, out, 1) + _bn(out)
            cin = out
    return total + cin * classes + classes


def _alexnet_reference_count(classes=1000):
    convs = [(3, 64, 11), (64, 192, 5), (192, 384, 3), (384, 256, 3), (256, 256, 3)]
    total = sum(_conv(i, o, k, bias=True) for i, o, k in convs)
    return total + (256 * 6 * 6 + 1) * 4096 + (4096 + 1) * 4096 + (4096 + 1) * classes


# ------------------------------------------------------------------------------- architecture
def test_parameter_counts_equal_the_published_architectures(local_layout):
    assert _resnet_reference_count((3, 4, 6, 3), True) == 25_557_032  # ResNet-50, as published
    assert _alexnet_reference_count() == 61_100_840  # AlexNet (one-tower), as published
    assert _count(ResNet(depth=50)) == 25_557_032
    assert _count(ResNet(depth=18)) == _resnet_reference_count((2, 2, 2, 2), False) == 11_689_512
    assert _count(ResNet(depth=34, num_classes=10)) == _resnet_reference_count((3, 4, 6, 3), False, 10)
    assert _count(AlexNet()) == _alexnet_reference_count()


def test_checkpoint_keys_are_the_torchvision_names(local_layout):
    resnet = set(ResNet(depth=18, width=4, num_classes=3).state_dict())
    for key in ("conv1.weight", "bn1.running_var", "bn1.num_batches_tracked", "layer1.0.conv2.weight",
                "layer2.0.downsample.0.weight", "layer2.0.downsample.1.running_mean", "fc.weight", "fc.bias"):
        assert key in resnet
    assert "layer1.0.downsample.0.weight" not in resnet  # same width, stride 1: identity shortcut
    alex = dict(AlexNet(num_classes=3, **TINY_ALEX).state_dict())
    convs = sorted(int(k.split(".")[1]) for k in alex if k.startswith("features.") and k.endswith("weight"))
    fcs = sorted(int(k.split(".")[1]) for k in alex if k.startswith("classifier.") and k.endswith("weight"))
    assert convs == [0, 3, 6, 8, 10] and fcs == [1, 4, 6]
    assert tuple(alex["features.0.weight"].shape) == (8, 3, 11, 11)
    assert tuple(alex["classifier.1.weight"].shape) == (32, 16 * 2 * 2)


@pytest.mark.parametrize("build,size", [
    (lambda: ResNet(depth=18, width=4, num_classes=7, small_input=True), 16),
    (lambda: ResNet(depth=50, width=4, num_classes=7), 40),
    (lambda: AlexNet(num_classes=7, **TINY_ALEX), 64),
])
def test_outputs_follow_the_vision_contract(local_layout, build, size):
    flow.manual_seed(0)
    model = build()
    images, labels = flow.randn(3, 3, size, size), flow.tensor([0, 6, 2])
    loss = model(images, labels)
    assert set(loss) == {"losses"} and loss["losses"].ndim == 0
    loss["losses"].backward()
    assert all(p.grad is not None for p in model.parameters())
    model.eval()
    out = model(images, labels)
    assert set(out) == {"prediction_scores"} and tuple(out["prediction_scores"].shape) == (3, 7)
    # hard-label loss is the cross entropy of these logits
    model.train()


def test_imagenet_resolution_shapes(local_layout):
    model = ResNet(depth=18, width=4, num_classes=5).eval()
    x = flow.randn(1, 3, 224, 224)
    assert tuple(model.forward_features(x).shape) == (1, 32)  # 8 · width after four stages
    alex = AlexNet(num_classes=5, **TINY_ALEX).eval()
    # 224 -> conv 55 -> pool 27 -> conv 27 -> pool 13 -> convs 13 -> pool 6 -> adaptive 2
    assert tuple(alex.features(x).shape) == (1, 16, 6, 6)
    assert tuple(alex.forward_features(x).shape) == (1, 16 * 4)


def test_zero_init_residual_starts_each_block_as_identity(local_layout):
    model = ResNet(depth=50, width=4, num_classes=3, zero_init_residual=True)
    assert all(float(b.bn3.weight.abs().sum()) == 0.0 for b in model._blocks())
    assert float(model.bn1.weight.sum()) == 4.0  # the stem's norm keeps its scale of 1


def test_bad_arguments_are_clear_errors(local_layout):
    with pytest.raises(ValueError, match=r"depth 20 is not one of \[18, 34, 50, 101, 152\]"):
        ResNet(depth=20)
    with pytest.raises(ValueError, match="channels must list 5 widths"):
        AlexNet(channels=(8, 8))
    with pytest.raises(ValueError, match="at least 63×63 pixels, got \\(32, 32\\)"):
        AlexNet(num_classes=3, **TINY_ALEX)(flow.randn(2, 3, 32, 32))
    with pytest.raises(ValueError, match=r"expected input \[batch, 3, height, width\]"):
        ResNet(depth=18, width=4)(flow.randn(2, 1, 32, 32))


@pytest.mark.parametrize("cls", [ResNet, AlexNet])
def test_pipeline_parallel_is_refused_with_the_fix(cls):
    pp2 = ParallelLayout.from_config({"pipeline_parallel_size": 2, "device_type": "cpu"},
                                     world_size=2, rank=0)
    with pp2, pytest.raises(ValueError, match="set train.dist.pipeline_parallel_size=1"):
        cls(num_classes=3)


# ------------------------------------------------------------------------------- batch norm
def test_batch_norm_matches_numpy_in_training_and_evaluation(local_layout):
    rng = np.random.RandomState(1)
    x = rng.randn(4, 3, 5, 6).astype(np.float32) * 2 + 1
    bn = BatchNorm2d(3, momentum=0.25)
    with flow.no_grad():
        bn.weight.copy_(np.array([1.0, 2.0, 0.5], dtype=np.float32))
        bn.bias.copy_(np.array([0.0, -1.0, 3.0], dtype=np.float32))
    y = bn(flow.tensor(x)).numpy()
    mean, var = x.mean((0, 2, 3)), x.var((0, 2, 3))
    shape = (1, 3, 1, 1)
    ref = (x - mean.reshape(shape)) / np.sqrt(var.reshape(shape) + 1e-5) * np.array(
        [1, 2, 0.5]).reshape(shape) + np.array([0, -1, 3]).reshape(shape)
    np.testing.assert_allclose(y, ref, rtol=1e-5, atol=1e-5)
    n = 4 * 5 * 6
    np.testing.assert_allclose(bn.running_mean.numpy(), 0.25 * mean, rtol=1e-5)
    np.testing.assert_allclose(bn.running_var.numpy(), 0.75 + 0.25 * var * n / (n - 1), rtol=1e-5)
    assert int(bn.num_batches_tracked.numpy()) == 1
    bn.eval()
    run_mean, run_var = bn.running_mean.numpy(), bn.running_var.numpy()
    ref_eval = (x - run_mean.reshape(shape)) / np.sqrt(run_var.reshape(shape) + 1e-5) * np.array(
        [1, 2, 0.5]).reshape(shape) + np.array([0, -1, 3]).reshape(shape)
    np.testing.assert_allclose(bn(flow.tensor(x)).numpy(), ref_eval, rtol=1e-5, atol=1e-5)
    assert int(bn.num_batches_tracked.numpy()) == 1  # evaluation leaves the statistics alone


def test_batch_norm_gives_the_same_values_in_both_broadcast_layouts(local_layout, monkeypatch):
    """On the CPU, the per-channel steps run on a [B*C, H*W] view when OneFlow uses its own
    elementwise kernels and on [B, C, H, W] when it uses oneDNN's (each layout is the fast one for
    its kernels): the same outputs, gradients and running statistics either way."""
    import libai.models.cnn_common as cnn_common

    x = np.random.RandomState(2).randn(4, 3, 5, 6).astype(np.float32) * 3 + 1
    results = {}
    for onednn in (False, True):
        monkeypatch.setattr(cnn_common, "onednn_elementwise_enabled", lambda onednn=onednn: onednn)
        bn = BatchNorm2d(3)
        with flow.no_grad():
            bn.weight.copy_(np.array([1.0, 2.0, 0.5], dtype=np.float32))
            bn.bias.copy_(np.array([0.0, -1.0, 3.0], dtype=np.float32))
        inp = flow.tensor(x, requires_grad=True)
        y = bn(inp)
        (y.sin() * y).sum().backward()
        bn.eval()
        results[onednn] = [t.numpy() for t in (y, inp.grad, bn.weight.grad, bn.bias.grad,
                                                bn.running_mean, bn.running_var, bn(flow.tensor(x)))]
    for rows, four_d in zip(results[False], results[True]):
        np.testing.assert_allclose(rows, four_d, rtol=1e-6, atol=1e-6)
    np.testing.assert_array_equal(results[False][0], results[True][0])


# ------------------------------------------------------------------------------- configs
@pytest.mark.parametrize("name", ["resnet", "alexnet"])
def test_model_configs_load_round_trip_and_build(local_layout, tmp_path, name):
    cfg = LazyConfig.load(os.path.join(REPO, "configs", "common", "models", f"{name}.py"))
    LazyConfig.save(cfg, str(tmp_path / "model.yaml"))
    assert LazyConfig.to_py(LazyConfig.load(str(tmp_path / "model.yaml"))) == LazyConfig.to_py(cfg)
    expected = {"resnet": 25_557_032, "alexnet": 61_100_840}[name]
    assert _count(instantiate(cfg.model)) == expected


def test_resnet_presets(local_layout):
    from configs.common.models import resnet as presets

    depths = {fn: getattr(presets, fn)().depth for fn in ("resnet18", "resnet34", "resnet50",
                                                         "resnet101", "resnet152")}
    assert depths == {"resnet18": 18, "resnet34": 34, "resnet50": 50, "resnet101": 101, "resnet152": 152}
    node = presets.resnet18()
    node.num_classes = 10
    assert presets.resnet18().num_classes == 1000  # each call is a fresh node
    assert _count(instantiate(node)) == _resnet_reference_count((2, 2, 2, 2), False, 10)


# ------------------------------------------------------------------------------- training
def test_resnet_loss_falls_and_graph_equals_eager(tmp_path):
    model = LazyCall(ResNet)(depth=18, width=4, num_classes=4, small_input=True)
    eager_losses, eager_state = train_image_model(tmp_path, model, 8, 5, graph=False)
    # the same 8 samples every step: the loss on them must go down
    assert eager_losses[-1] < eager_losses[0] - 0.1, eager_losses
    graph_losses, graph_state = train_image_model(tmp_path, model, 8, 5, graph=True)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-3, atol=1e-5)
    # the running statistics advance in the compiled graph exactly as in Eager (the count
    # num_batches_tracked only in Eager: OneFlow 0.9 drops in-place writes to global buffers in a graph)
    assert int(eager_state["bn1.num_batches_tracked"]) == 5
    for key in ("bn1.running_mean", "layer4.1.bn2.running_var", "fc.weight", "conv1.weight"):
        np.testing.assert_allclose(graph_state[key], eager_state[key], rtol=1e-3, atol=1e-5)


def test_alexnet_graph_equals_eager_for_one_step(tmp_path):
    model = LazyCall(AlexNet)(num_classes=4, dropout=0.0, **TINY_ALEX)
    eager_losses, eager_state = train_image_model(tmp_path, model, 64, 1, graph=False)
    graph_losses, graph_state = train_image_model(tmp_path, model, 64, 1, graph=True)
    np.testing.assert_allclose(graph_losses, eager_losses, rtol=1e-5)
    for key, value in eager_state.items():
        np.testing.assert_allclose(graph_state[key], value, rtol=1e-4, atol=1e-6, err_msg=key)


# ------------------------------------------------------------------------------- the docs page
def _doc():
    with open(os.path.join(REPO, "docs", "cnn_models.md")) as f:
        return f.read()


def test_docs_example_prints_what_the_page_says(capsys):
    import re

    block = re.findall(r"```python\n(.*?)```", _doc(), flags=re.S)[0]
    exec(compile(block, "docs/cnn_models.md", "exec"), {})
    printed = capsys.readouterr().out.splitlines()
    commented = [line.split("# ", 1)[1] for line in block.splitlines() if line.startswith("print(")]
    assert len(commented) == 3
    assert printed[-2:] == commented[1:]
    losses = "\n".join(printed[:-2])  # a global tensor prints over several lines
    assert losses.startswith("{'losses': tensor(") and "grad_fn=" in losses and "placement=" in losses


def test_docs_quote_the_pipeline_refusal_exactly():
    import re

    quoted = re.findall(r"```\n(ValueError: .*?)```", _doc(), flags=re.S)[0]
    pp2 = ParallelLayout.from_config({"pipeline_parallel_size": 2, "device_type": "cpu"},
                                     world_size=2, rank=0)
    with pp2, pytest.raises(ValueError) as error:
        ResNet(depth=18)
    assert " ".join(quoted.split()) == f"ValueError: {error.value}"
