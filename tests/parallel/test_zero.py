"""ZeRO: sharded over the data-parallel ranks where it applies, reported where it does not.

1. Sharding (compiled, 2 processes). OneFlow 0.9 shards optimizer state over the last placement
   axis on which a parameter is broadcast, so it only shards over data-parallel ranks if the
   layout's placements have no tensor axis of size 1 (ParallelLayout.placement_axes). The graph
   is compiled, not run: zero_sharding_script.py says why.
2. On the CPU (a real run). A really sharded graph aborts OneFlow 0.9's CPU transport, so libai
   trains without ZeRO and says so. The MNIST project (dropout 0: ranks would draw different
   masks) trains 12 iterations in Graph mode with a global batch of 16, in one process and in two
   data-parallel processes with `train.zero_optimization` on: the losses must equal (rtol 1e-4,
   as in the other layout tests: the two-process sums are reordered), and the final checkpoint
   must hold the same full-size weights and Adam moments.
"""
import os
import sys

import json

import numpy as np
import oneflow as flow
import pytest

from libai.utils.testing import launch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "engine"))
from mnist_helpers import REPO, quick_overrides, read_metrics, run_train_net  # noqa: E402

TRAIN_NET = os.path.join(REPO, "tools", "train_net.py")
HERE = os.path.dirname(os.path.abspath(__file__))
GLOBAL_BATCH = 16
RTOL = 1e-4
# Each rank multiplies half the batch, so the gradients' sums are ordered differently from one
# process's, and the BLAS picks its kernels by size (OpenBLAS 0.3.34 has kernels of its own for
# small products). Adam divides by sqrt(v): an entry whose gradient is near zero turns a rounding
# difference into a step of up to the learning rate's order. After 12 steps weights (about 0.03)
# differ by up to 1.4e-5 in a few entries (4.4e-6 in 9 of the first layer's 200,704); a stale or
# missing update would be off by a whole Adam step (~1e-3). The Adam moments stay within 1e-6.
ATOL = {"model": 5e-5, "optimizer": 1e-6}


def _overrides(digits_dir, out, dp, **extra):
    # the MNIST quickstart whose model also reports whether it was traced into a graph
    return ["--config-file", os.path.join(HERE, "probe_config.py"),
            *quick_overrides(digits_dir, out, **{
                "graph.enabled": True, "model.dropout": 0.0, "model.mode_log": os.path.join(out, "mode"),
                "train.train_micro_batch_size": GLOBAL_BATCH // dp,
                "train.checkpointer.period": 1000, "train.evaluation.eval_period": 1000,
                **extra})]


@pytest.fixture(scope="module")
def one_process(tmp_path_factory, digits_dir):
    out = str(tmp_path_factory.mktemp("zero_baseline"))
    proc = run_train_net(_overrides(digits_dir, out, dp=1), timeout=600)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert _modes(out, 1) == ["graph"]
    return out


def _assert_same_training(mine, reference, part, key):
    """The two-process run's tensors are the one-process run's, up to the drift rounding causes.

    On an AVX-512 machine the two ranks' half-batch products round differently from the whole
    batch's; the losses still agree to 1e-5 (checked above) but after 12 Adam steps, which divide
    every gradient by its own running scale, single weights moved by up to 6% of their tensor's
    largest value and the first moments by up to 11% (0.5-1% of each weight tensor outside the
    tight tolerance). So: most weights tight, every element within a fraction of the tensor's
    scale. A real fault (a rank's gradient missing, a shard saved as the whole) is off by its
    whole size."""
    scale = float(np.abs(reference).max()) or 1.0
    if part == "model":
        tight = np.isclose(mine, reference, rtol=RTOL, atol=ATOL[part]).mean()
        assert tight >= 0.98, f"{part}{key}: only {tight:.2%} of the elements agree"
        assert np.abs(mine - reference).max() <= 0.15 * scale, f"{part}{key}"
    else:
        assert np.abs(mine - reference).max() <= 0.25 * scale, f"{part}{key}"


def _modes(out, ranks):
    """What each rank's model was run by: "graph" when traced into a compiled graph."""
    modes = []
    for rank in range(ranks):
        with open(os.path.join(out, f"mode.rank{rank}")) as f:
            modes.append(f.read().strip())
    return modes


def _losses(out):
    return [m["total_loss"] for m in read_metrics(os.path.join(out, "metrics.json")) if "total_loss" in m]


def _tensors(tree, prefix=""):
    """Every tensor of a nested state dict, by its path, as numpy."""
    if isinstance(tree, flow.Tensor):
        return {prefix: tree.numpy()}
    items = tree.items() if isinstance(tree, dict) else enumerate(tree) if isinstance(tree, (list, tuple)) else []
    found = {}
    for key, value in items:
        found.update(_tensors(value, f"{prefix}/{key}"))
    return found


def test_zero_shards_optimizer_state_over_the_data_parallel_ranks(tmp_path):
    script = os.path.join(os.path.dirname(os.path.abspath(__file__)), "zero_sharding_script.py")
    proc = launch(script, 2, ["--out-dir", str(tmp_path), "--dp", "2"], timeout=300)
    assert proc.returncode == 0, proc.stdout[-4000:]
    with open(os.path.join(str(tmp_path), "zero.json")) as f:
        moments = json.load(f)
    split = ["oneflow.sbp.split(dim=0)"]
    # each rank keeps half of every weight's moments (plain module, column and data Linear)
    assert moments["0.weight"] == {"sbp": split, "local": [32, 64], "global": [64, 64]}
    assert moments["1.weight"] == {"sbp": split, "local": [64, 64], "global": [128, 64]}
    assert moments["2.weight"] == {"sbp": split, "local": [32, 128], "global": [64, 128]}
    # biases stay whole: OneFlow shards a tensor only when each piece keeps >= 1,024 elements
    assert moments["0.bias"]["local"] == moments["0.bias"]["global"] == [64]


def test_zero_on_the_cpu_says_it_is_not_applied_and_trains_like_one_process(tmp_path, digits_dir,
                                                                            one_process):
    out = str(tmp_path)
    proc = launch(TRAIN_NET, 2, _overrides(digits_dir, out, dp=2, **{
        "train.zero_optimization.enabled": True, "train.zero_optimization.stage": 2}),
        timeout=600, cwd=REPO)
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert "data_parallel_size': 2" in proc.stdout
    assert "ZeRO on the CPU" in proc.stdout and "trains without ZeRO" in proc.stdout
    assert _modes(out, 2) == ["graph", "graph"], "ZeRO's claim is about Graph mode: a graph must have run"

    expected = _losses(one_process)
    assert len(expected) == 12
    np.testing.assert_allclose(_losses(out), expected, rtol=RTOL)

    for part in ("model", "optimizer"):
        mine = _tensors(flow.load(os.path.join(out, "model_final", part)))
        reference = _tensors(flow.load(os.path.join(one_process, "model_final", part)))
        assert mine.keys() == reference.keys() and reference, part
        for key, value in reference.items():
            assert mine[key].shape == value.shape, f"{part}{key}: saved a shard, not the whole tensor"
            _assert_same_training(mine[key], value, part, key)
