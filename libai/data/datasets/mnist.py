"""MNIST in its original IDX files (:class:`MNISTDataset`).

Nothing is downloaded. To get files, either fetch the four ``*-ubyte.gz`` files from the MNIST
site by hand, or run ``python tools/make_digits_mnist.py --output-dir DIR``, which writes
scikit-learn's bundled 8×8 handwritten digits (1,797 real samples) upscaled to 28×28 in the
same format. The IDX reader and writers live in :mod:`libai.data.datasets.mnist_files` and are
importable from here too.
"""
import os
from typing import Tuple

import numpy as np

from libai.data.datasets.image_base import InMemoryImageDataset
from libai.data.datasets.mnist_files import (  # noqa: F401  (their historical import path)
    MNIST_FILES,
    make_digits_mnist,
    read_idx,
    upscale_digits,
    write_idx,
    write_idx_dataset,
)

__all__ = [
    "MNISTDataset",
    "read_idx",
    "write_idx",
    "write_idx_dataset",
    "make_digits_mnist",
    "upscale_digits",
    "MNIST_FILES",
]

def _find_split_files(root: str, split: str, download: bool = False) -> Tuple[str, str]:
    found, looked = [], []
    for name in MNIST_FILES[split]:
        candidates = [os.path.join(root, name), os.path.join(root, name + ".gz")]
        looked.extend(candidates)
        hit = next((c for c in candidates if os.path.isfile(c)), None)
        found.append(hit)
    if None in found:
        raise FileNotFoundError(
            f"MNIST {split} files not found under {root!r}."
            + (" download=True was given, but libai never downloads at run time." if download else "")
            + " Looked for:\n  "
            + "\n  ".join(looked)
            + "\nDownload the four *-ubyte.gz files from the MNIST site "
            "(http://yann.lecun.com/exdb/mnist/) into that folder by hand, or generate "
            "MNIST-format digits offline with:\n"
            f"  python tools/make_digits_mnist.py --output-dir {root}"
        )
    return found[0], found[1]  # type: ignore[return-value]


class MNISTDataset(InMemoryImageDataset):
    """MNIST (or any MNIST-format IDX files) held in memory.

    Each sample is ``Instance(images=(1, H, W) float tensor, labels=long scalar)``; without a
    ``transform`` images are scaled to ``[0, 1]``. The transform receives a grayscale PIL image.

    Args:
        root: folder holding ``train-images-idx3-ubyte`` etc. (plain or ``.gz``).
        train: the training split, else the ``t10k`` test split.
        transform: see :class:`ImageClassificationDataset`.
        image_field / label_field: sample field names (the model's ``forward`` arguments).
        download: LiBai's flag, accepted so its configs run; nothing is downloaded, missing
            files are an error saying how to get them.
    """

    def _read_split(self) -> Tuple[np.ndarray, np.ndarray]:
        split = "train" if self.train else "test"
        image_path, label_path = _find_split_files(self.root, split, self.download)
        images, labels = read_idx(image_path), read_idx(label_path)
        if images.ndim != 3 or labels.ndim != 1:
            raise ValueError(
                f"{image_path} must hold (N, H, W) images and {label_path} (N,) labels; got "
                f"shapes {images.shape} and {labels.shape}"
            )
        if len(images) != len(labels):
            raise ValueError(
                f"{image_path} holds {len(images)} images but {label_path} holds "
                f"{len(labels)} labels; the two files belong to different datasets"
            )
        return images, labels
