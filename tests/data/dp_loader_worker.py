"""Run under ``oneflow.distributed.launch`` by test_dp_loader_multiprocess.py (not a test itself).

Each rank builds the training and test loaders with data-parallel size 2 taken from the layout,
and writes, per step, its local batch labels and the full global batch after ``to_global``.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))

import libai  # noqa: E402,F401

from libai.data.build import build_image_test_loader, build_image_train_loader  # noqa: E402
from libai.utils import distributed as dist  # noqa: E402
from tests.data.index_dataset import IndexDataset  # noqa: E402


def record(loader, layout, steps):
    local, full = [], []
    it = iter(loader)
    for _ in range(steps):
        batch = next(it)
        local.append(batch.labels.tensor.tolist())
        placed = batch.to_global(layout)
        full.append(dist.tton(placed.labels).tolist())
        images = dist.tton(placed.images)
        assert images[:, 0, 0, 0].tolist() == [float(v) for v in full[-1]]
    return local, full


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", required=True)
    parser.add_argument("--samples", type=int, default=11)
    parser.add_argument("--micro", type=int, default=2)
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"})
    assert layout.data_parallel_size == 2 and layout.is_global
    with layout:
        train, _, _ = build_image_train_loader(
            IndexDataset(args.samples), args.micro, num_workers=0, seed=args.seed
        )
        test = build_image_test_loader(IndexDataset(args.samples), args.micro, num_workers=0)
        train_local, train_full = record(train, layout, args.steps)
        test_local, test_full = record(test, layout, len(test))
    out = {"train_local": train_local, "train_full": train_full,
           "test_local": test_local, "test_full": test_full}
    with open(os.path.join(args.out, f"rank{layout.rank}.json"), "w") as f:
        json.dump(out, f)


if __name__ == "__main__":
    main()
