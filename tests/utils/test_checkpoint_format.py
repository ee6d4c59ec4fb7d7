"""The checkpoint format we promise, checked against a committed fixture (fixtures/checkpoint_v1,
written once by fixtures/make_checkpoint_fixture.py, whose docstring gives its content).

Three promises: today's code loads the old files into the same values (written down here,
not computed by libai); the bytes of every saved tensor are its float32 values in order; and
what today's code writes has the fixture's layout (parts, files, manifest keys), so a change
to the format shows up as a failing test rather than as checkpoints users cannot load.
"""
import json
import os
import re
import sys

import numpy as np
import oneflow as flow
import pytest

from libai.utils.checkpoint import Checkpointer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "fixtures"))
from make_checkpoint_fixture import SHAPES, build, initial_values, train_and_save  # noqa: E402

FIXTURE = os.path.join(HERE, "fixtures", "checkpoint_v1", "model_0000003")
PARTS = ["counter", "extra", "model", "optimizer", "scheduler"]

# The values after the fixture's one SGD step, by hand: parameter k started at k + arange(n)/8,
# every gradient was 1 and lr 0.1, so each element moved down by 0.1.
AFTER_STEP = {
    "encoder.weight": [[-0.1, 0.025, 0.15, 0.275], [0.4, 0.525, 0.65, 0.775]],
    "encoder.bias": [0.9, 1.025],
    "head.weight": [[1.9, 2.025], [2.15, 2.275], [2.4, 2.525]],
    "head.bias": [2.9, 3.025, 3.15],
}


def _layout(path):
    """Every file under a checkpoint directory, relative, with OneFlow's tensor ids elided."""
    files = []
    for root, _, names in os.walk(path):
        for name in names:
            rel = os.path.relpath(os.path.join(root, name), path)
            files.append(re.sub(r"tensor_\d+", "tensor_N", rel))
    return sorted(files)


def test_the_fixture_loads_into_the_known_values():
    model, optimizer, scheduler, counter = build({k: np.zeros(s, np.float32) for k, s in SHAPES.items()})
    extra = Checkpointer(model, optimizer=optimizer, scheduler=scheduler, counter=counter).load(FIXTURE)
    assert extra == {"iteration": 3}
    for name, value in model.state_dict().items():
        np.testing.assert_allclose(value.numpy(), AFTER_STEP[name], rtol=0, atol=1e-6, err_msg=name)
    state = optimizer.state_dict()["state"]
    for idx, (name, shape) in enumerate(SHAPES.items()):
        np.testing.assert_array_equal(state[idx]["momentum_buf"].numpy(), np.ones(shape), err_msg=name)
    assert scheduler.last_step == 3 and scheduler.get_last_lr() == [pytest.approx(0.05)]
    assert optimizer.param_groups[0]["lr"] == pytest.approx(0.05)
    assert counter.value == 7


def test_the_fixture_layout_and_tensor_bytes():
    assert _layout(FIXTURE) == sorted(
        ["manifest.json", "counter/pickled_data", "extra/pickled_data", "scheduler/pickled_data",
         "model/pickled_data", "optimizer/pickled_data"]
        + [f"{part}/tensor_N/{leaf}" for part in ("model", "optimizer") for leaf in ("meta", "out")] * 4)
    with open(os.path.join(FIXTURE, "manifest.json")) as f:
        manifest = json.load(f)
    assert set(manifest) == {"format", "version", "name", "created", "world_size", "parts", "extra_keys", "files"}
    assert (manifest["format"], manifest["version"], manifest["name"], manifest["world_size"]) == (
        "libai-checkpoint", 1, "model_0000003", 1)
    assert sorted(manifest["parts"]) == ["counter", "model", "optimizer", "scheduler"]
    assert manifest["extra_keys"] == ["iteration"]
    # a weight file holds exactly the float32 values in C order: nothing else
    weight_files = sorted(
        open(os.path.join(root, "out"), "rb").read()
        for root, _, names in os.walk(os.path.join(FIXTURE, "model")) if "out" in names)
    # (SGD subtracts lr × 1 in float32: start − float32(0.1), rounded as NumPy rounds it)
    expected = sorted((v - np.float32(0.1)).tobytes() for v in initial_values().values())
    assert weight_files == expected
    # the model part alone is a plain flow.save of the state dict: its keys are the parameter names
    assert sorted(flow.load(os.path.join(FIXTURE, "model"))) == sorted(SHAPES)
    # the other parts are the objects' own state dicts (OneFlow's optimizer and scheduler formats)
    optimizer = flow.load(os.path.join(FIXTURE, "optimizer"))
    assert sorted(optimizer) == ["param_groups", "state"]
    assert optimizer["param_groups"][0]["_options"]["lr"] == 0.05 and optimizer["param_groups"][0]["params"] == [0, 1, 2, 3]
    assert flow.load(os.path.join(FIXTURE, "scheduler")) == {
        "step_size": 2, "gamma": 0.5, "last_step": 3, "verbose": False, "base_lrs": [0.1], "_last_lr": [0.05]}
    assert flow.load(os.path.join(FIXTURE, "counter")) == {"value": 7}
    assert flow.load(os.path.join(FIXTURE, "extra")) == {"iteration": 3}


def test_todays_checkpoints_have_the_fixture_layout(tmp_path):
    path = train_and_save(str(tmp_path))
    assert _layout(path) == _layout(FIXTURE)
    with open(os.path.join(path, "manifest.json")) as f:
        mine = json.load(f)
    with open(os.path.join(FIXTURE, "manifest.json")) as f:
        fixture = json.load(f)
    for key in ("format", "version", "name", "world_size", "parts", "extra_keys"):
        assert mine[key] == fixture[key], key
    assert sorted(re.sub(r"tensor_\d+", "tensor_N", k) for k in mine["files"]) == sorted(
        re.sub(r"tensor_\d+", "tensor_N", k) for k in fixture["files"])
    for part in PARTS:
        ours, theirs = flow.load(os.path.join(path, part)), flow.load(os.path.join(FIXTURE, part))
        assert _plain(ours) == _plain(theirs), part
    with open(os.path.join(str(tmp_path), "last_checkpoint")) as f:
        assert f.read().strip() == "model_0000003"


def _plain(tree):
    """A loaded part as nested Python values (tensors as lists), for equality."""
    if isinstance(tree, flow.Tensor):
        return tree.numpy().tolist()
    if isinstance(tree, dict):
        return {k: _plain(v) for k, v in tree.items()}
    if isinstance(tree, (list, tuple)):
        return [_plain(v) for v in tree]
    return tree
