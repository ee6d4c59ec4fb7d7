"""Run under ``oneflow.distributed.launch --nproc_per_node 2`` by test_checkpoint.py.

``save OUT``: a tiny model whose weight is tensor-parallel ``split(0)`` over ranks [[0, 1]] takes
one AdamW step and is saved with its optimizer and per-rank RNG state. Rank 0 writes the gathered
weight (``expected_weight.npy``) and, per rank, the numbers drawn right after saving and the weight
after one more optimizer step (what a resumed run must reproduce).

``load OUT``: the same model built with the weight ``split(1)`` (another layout) loads that
checkpoint; each rank writes what it then holds and draws, for the test to compare.
"""
import os
import random
import sys

import libai  # noqa: F401  (must precede oneflow)
import numpy as np
import oneflow as flow

from libai.utils.checkpoint import Checkpointer, CheckpointError, RNGState

B, S = flow.sbp.broadcast, flow.sbp.split
PLACEMENT = flow.placement("cpu", ranks=[[0, 1]])
RANK = flow.env.get_rank()


def reference_weight() -> np.ndarray:
    """The weight the saving run starts from; the test computes the same array itself."""
    return np.random.RandomState(7).randn(6, 4).astype(np.float32)


def build(weight_sbp, weight):
    model = flow.nn.Linear(4, 6)
    model.weight.data = flow.tensor(weight)
    model.bias.data = flow.zeros(6)
    model.to_global(placement=PLACEMENT, sbp=[B, B])
    model.weight.data = model.weight.data.to_global(sbp=[B, weight_sbp])
    optimizer = flow.optim.AdamW(model.parameters(), lr=0.1, weight_decay=0.01)
    return model, optimizer


def step(model, optimizer, seed):
    x = np.random.RandomState(seed).randn(3, 4).astype(np.float32)
    x = flow.tensor(x).to_global(placement=PLACEMENT, sbp=[B, B])
    optimizer.zero_grad()
    (model(x) ** 2).sum().backward()
    optimizer.step()


def full(tensor) -> np.ndarray:
    return tensor.to_global(sbp=[B, B]).to_local().numpy()


def draws() -> np.ndarray:
    return np.array([random.random(), np.random.rand(), float(flow.rand(1).numpy()[0])])


def save(out: str) -> None:
    random.seed(100 + RANK)  # ranks seeded differently: each must get its own stream back
    np.random.seed(100 + RANK)
    flow.manual_seed(100 + RANK)
    model, optimizer = build(S(0), reference_weight())
    assert tuple(model.weight.to_local().shape) == (3, 4), model.weight.to_local().shape
    step(model, optimizer, seed=1)
    checkpointer = Checkpointer(model, os.path.join(out, "run"), optimizer=optimizer,
                                rng=RNGState())
    checkpointer.save("model_0000001", iteration=1)
    np.save(os.path.join(out, f"draws_after_save_{RANK}.npy"), draws())
    gathered = full(model.weight)
    step(model, optimizer, seed=2)
    after_step = full(model.weight)  # a collective: every rank gathers, rank 0 writes
    if RANK == 0:
        np.save(os.path.join(out, "expected_weight.npy"), gathered)
        np.save(os.path.join(out, "weight_after_next_step.npy"), after_step)


def load(out: str) -> None:
    model, optimizer = build(S(1), np.zeros((6, 4), np.float32))  # loading must fill it
    checkpointer = Checkpointer(model, os.path.join(out, "run"), optimizer=optimizer,
                                rng=RNGState())
    try:  # rank 0 finds the problem; every rank must raise it rather than hang
        checkpointer.load(os.path.join(out, "run", "missing"))
    except CheckpointError as exc:
        assert "does not exist" in str(exc), exc
    else:
        raise AssertionError("loading a missing checkpoint did not raise")
    extra = checkpointer.resume_or_load(None, resume=True)
    assert extra == {"iteration": 1}, extra
    assert model.weight.sbp == (B, S(1)), model.weight.sbp
    np.save(os.path.join(out, f"draws_after_load_{RANK}.npy"), draws())
    np.save(os.path.join(out, f"local_shard_{RANK}.npy"), model.weight.to_local().numpy())
    loaded = full(model.weight)
    step(model, optimizer, seed=2)
    after_step = full(model.weight)
    if RANK == 0:
        np.save(os.path.join(out, "loaded_weight.npy"), loaded)
        np.save(os.path.join(out, "resumed_weight_after_step.npy"), after_step)


if __name__ == "__main__":
    {"save": save, "load": load}[sys.argv[1]](sys.argv[2])
