"""Throughput of the image loaders: samples per second from dataset files to a batch Instance.

    python benchmarks/bench_image_loader.py [--batch 64] [--steps 30] [--workers 0 2]

Builds, in a temporary folder, the digits as MNIST IDX files, as a PNG class-per-folder tree and
as OFRecord parts (the same 1,797 images each time, 32×32 RGB for the last two), then times
``steps`` training batches from ``build_image_train_loader`` for each format and worker count,
after ``--warmup`` batches (plus the batches the workers prefetch). Each configuration is
measured ``--repeats`` times and the median is reported: timings on a shared machine move a lot
between runs.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from typing import Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import libai  # noqa: E402,F401  (before oneflow)
import numpy as np  # noqa: E402
from PIL import Image  # noqa: E402

from libai.data.build import build_image_train_loader  # noqa: E402
from libai.data.datasets import (  # noqa: E402
    ImageFolderDataset,
    MNISTDataset,
    OFRecordImageDataset,
)
from libai.data.datasets.mnist import make_digits_mnist  # noqa: E402
from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord  # noqa: E402
from libai.data.transforms import build_image_transforms  # noqa: E402


def make_data(root: str) -> Dict[str, Callable[[], object]]:
    """Write the three formats under ``root``; return dataset factories by format name."""
    from sklearn.datasets import load_digits

    make_digits_mnist(os.path.join(root, "mnist"))
    digits = load_digits()
    for i, (image, label) in enumerate(zip(digits.images, digits.target)):
        folder = os.path.join(root, "folder", f"digit_{label}")
        os.makedirs(folder, exist_ok=True)
        big = np.kron(np.rint(image * 255 / 16), np.ones((4, 4))).astype(np.uint8)
        Image.fromarray(big).convert("RGB").save(os.path.join(folder, f"{i:04d}.png"))
    convert_image_folder_to_ofrecord(
        os.path.join(root, "folder"), os.path.join(root, "ofrecord"), num_parts=4
    )
    rgb = build_image_transforms(True, size=32, crop="pad", padding=4)
    gray = build_image_transforms(
        True, size=28, mean=[0.1307], std=[0.3081], crop="none", hflip=0.0
    )
    return {
        "mnist-idx": lambda: MNISTDataset(os.path.join(root, "mnist"), transform=gray),
        "png-folder": lambda: ImageFolderDataset(os.path.join(root, "folder"), transform=rgb),
        "ofrecord": lambda: OFRecordImageDataset(os.path.join(root, "ofrecord"), transform=rgb),
    }


def time_loader(dataset: object, batch: int, workers: int, steps: int, warmup: int) -> float:
    """Samples per second over ``steps`` batches, after ``warmup`` batches."""
    loader, _, _ = build_image_train_loader(
        dataset, batch, num_workers=workers, seed=0, data_parallel_rank=0, data_parallel_size=1
    )
    it = iter(loader)
    # Workers prefetch two batches each; drain those too so that only steady state is timed.
    for _ in range(warmup + 2 * workers):
        next(it)
    start = time.perf_counter()
    for _ in range(steps):
        next(it)
    return batch * steps / (time.perf_counter() - start)


def main(argv: List[str] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", type=int, nargs="+", default=[0, 2])
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as root:
        factories = make_data(root)
        print(f"| format | workers | samples/s (median of {args.repeats}) |")
        print("|---|---|---|")
        for name, factory in factories.items():
            dataset = factory()
            for workers in args.workers:
                rates = [
                    time_loader(dataset, args.batch, workers, args.steps, args.warmup)
                    for _ in range(args.repeats)
                ]
                print(f"| {name} | {workers} | {statistics.median(rates):,.0f} |")


if __name__ == "__main__":
    main()
