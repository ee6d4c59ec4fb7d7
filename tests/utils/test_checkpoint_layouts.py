"""Tests of libai.utils.checkpoint across processes and layouts, and of RNGState."""
import os
import random

import numpy as np
import oneflow as flow

from libai.utils.checkpoint import Checkpointer, RNGState
from libai.utils.testing import launch

HERE = os.path.dirname(os.path.abspath(__file__))


# ---------------------------------------------------------------------------------------------
# RNG state
# ---------------------------------------------------------------------------------------------
def draws():
    return np.concatenate([
        [random.random() for _ in range(3)], np.random.rand(3), flow.rand(3).numpy(),
        flow.randn(2, 2).numpy().ravel(),
    ])


def test_rng_state_restores_python_numpy_and_oneflow_streams():
    random.seed(1)
    np.random.seed(1)
    flow.manual_seed(1)
    rng = RNGState()
    state = rng.state_dict()
    first = draws()
    second = draws()
    assert not np.array_equal(first, second)  # the streams really move on
    rng.load_state_dict(state)
    np.testing.assert_array_equal(draws(), first)


def test_rng_state_resumes_through_a_checkpoint(tmp_path):
    model = flow.nn.Linear(2, 2)
    random.seed(2)
    np.random.seed(2)
    checkpointer = Checkpointer(model, str(tmp_path), rng=RNGState())
    checkpointer.save("model_0000001")
    expected = draws()
    draws()
    assert Checkpointer(model, str(tmp_path), rng=RNGState()).resume_or_load(None) == {}
    np.testing.assert_array_equal(draws(), expected)


# ---------------------------------------------------------------------------------------------
# Across parallel layouts (two processes)
# ---------------------------------------------------------------------------------------------
def independent_reference(steps):
    """AdamW steps of the script's model computed here, locally, without any parallelism."""
    model = flow.nn.Linear(4, 6)
    model.weight.data = flow.tensor(np.random.RandomState(7).randn(6, 4).astype(np.float32))
    model.bias.data = flow.zeros(6)
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.01)
    for seed in steps:
        x = flow.tensor(np.random.RandomState(seed).randn(3, 4).astype(np.float32))
        optimizer.zero_grad()
        (model(x) ** 2).sum().backward()
        optimizer.step()
    return model, optimizer


def test_tensor_parallel_checkpoint_loads_in_one_process_and_in_another_layout(tmp_path):
    out = str(tmp_path)
    script = os.path.join(HERE, "dist_checkpoint_script.py")
    saved = launch(script, 2, ["save", out], timeout=240)
    assert saved.returncode == 0, saved.stdout[-4000:]
    expected = np.load(os.path.join(out, "expected_weight.npy"))
    reference, _ = independent_reference(steps=[1])
    np.testing.assert_allclose(expected, reference.weight.numpy(), rtol=1e-5, atol=1e-6)

    # (a) one process, plain local model: the full gathered weight, and an optimizer that
    # continues exactly as the two-process run did.
    model = flow.nn.Linear(4, 6)
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.01)
    checkpointer = Checkpointer(model, os.path.join(out, "run"), optimizer=optimizer,
                                rng=RNGState())
    assert checkpointer.resume_or_load(None) == {"iteration": 1}
    np.testing.assert_array_equal(model.weight.numpy(), expected)
    assert checkpointer.last_load_report.absent_parts == ["rng"]  # saved by 2 processes
    x = flow.tensor(np.random.RandomState(2).randn(3, 4).astype(np.float32))
    optimizer.zero_grad()
    (model(x) ** 2).sum().backward()
    optimizer.step()
    np.testing.assert_allclose(model.weight.numpy(),
                               np.load(os.path.join(out, "weight_after_next_step.npy")),
                               rtol=1e-5, atol=1e-6)

    # (b) two processes, weight split(1) instead of split(0).
    loaded = launch(script, 2, ["load", out], timeout=240)
    assert loaded.returncode == 0, loaded.stdout[-4000:]
    np.testing.assert_array_equal(np.load(os.path.join(out, "loaded_weight.npy")), expected)
    for rank in (0, 1):
        shard = np.load(os.path.join(out, f"local_shard_{rank}.npy"))
        np.testing.assert_array_equal(shard, expected[:, 2 * rank: 2 * rank + 2])
        np.testing.assert_array_equal(np.load(os.path.join(out, f"draws_after_load_{rank}.npy")),
                                      np.load(os.path.join(out, f"draws_after_save_{rank}.npy")))
    assert not np.array_equal(np.load(os.path.join(out, "draws_after_save_0.npy")),
                              np.load(os.path.join(out, "draws_after_save_1.npy")))
    np.testing.assert_allclose(np.load(os.path.join(out, "resumed_weight_after_step.npy")),
                               np.load(os.path.join(out, "weight_after_next_step.npy")),
                               rtol=1e-5, atol=1e-6)
