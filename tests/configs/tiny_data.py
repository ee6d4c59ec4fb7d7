"""A fake CIFAR-100 for the data-config and vision-model tests (libai's own synthetic writer)."""
from typing import Tuple

import numpy as np

from libai.data.synthetic_files import write_cifar_batches


def write_cifar100(root: str, rng: np.random.Generator, counts: Tuple[int, int] = (16, 8),
                   num_classes: int = 4) -> str:
    """``root/cifar-100-python/{train,test}``: ``counts`` random 32×32 RGB images per split
    (seeded from ``rng``), the i-th labelled ``i % num_classes``; returns ``root``."""
    return write_cifar_batches(root, "cifar-100-python", "fine_labels", dict(zip(("train", "test"), counts)),
                               num_classes=num_classes, seed=int(rng.integers(2**31)))
