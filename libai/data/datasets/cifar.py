"""CIFAR-10 and CIFAR-100 from their standard "python version" pickle batches.

The archives from https://www.cs.toronto.edu/~kriz/cifar.html extract to
``cifar-10-batches-py/{data_batch_1..5, test_batch}`` and ``cifar-100-python/{train, test}``.
Each batch is a pickled dict (keys are bytes) whose ``data`` is an ``(N, 3072)`` uint8 array,
one row per image laid out as 1024 red, 1024 green then 1024 blue values of a 32×32 image, and
whose labels are under ``labels`` (CIFAR-10) or ``fine_labels`` (CIFAR-100).
"""
import os
import pickle
from typing import List, Sequence, Tuple

import numpy as np

from libai.data.datasets.image_base import InMemoryImageDataset

__all__ = ["CIFAR10Dataset", "CIFAR100Dataset", "load_cifar_batches"]


def load_cifar_batches(paths: Sequence[str], label_key: str) -> Tuple[np.ndarray, np.ndarray]:
    """Concatenate pickle batches into ``(N, 32, 32, 3)`` uint8 images and ``(N,)`` labels."""
    images: List[np.ndarray] = []
    labels: List[np.ndarray] = []
    for path in paths:
        with open(path, "rb") as f:
            try:
                entry = pickle.load(f, encoding="bytes")
            except Exception as err:  # pickle raises many types on garbage input
                raise ValueError(f"{path} is not a CIFAR pickle batch ({err})") from err
        entry = {k.decode() if isinstance(k, bytes) else k: v for k, v in entry.items()}
        if "data" not in entry or label_key not in entry:
            raise ValueError(
                f"{path} lacks the 'data' and {label_key!r} entries of a CIFAR batch "
                f"(it has {sorted(entry)})"
            )
        data = np.asarray(entry["data"], dtype=np.uint8)
        if data.ndim != 2 or data.shape[1] != 3 * 32 * 32:
            raise ValueError(f"{path}: 'data' must be (N, 3072) uint8, got shape {data.shape}")
        batch_labels = np.asarray(entry[label_key], dtype=np.int64)
        if batch_labels.shape != (data.shape[0],):
            raise ValueError(
                f"{path}: {data.shape[0]} images but {batch_labels.shape[0]} labels"
            )
        images.append(data.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1))
        labels.append(batch_labels)
    return np.ascontiguousarray(np.concatenate(images)), np.concatenate(labels)


class _CIFARDataset(InMemoryImageDataset):
    """Shared loading; subclasses name their folder, files and label key."""

    folder = ""
    train_files: Tuple[str, ...] = ()
    test_files: Tuple[str, ...] = ()
    label_key = ""
    archive = ""

    def _read_split(self) -> Tuple[np.ndarray, np.ndarray]:
        names = self.train_files if self.train else self.test_files
        return load_cifar_batches(self._locate(self.root, names, self.download), self.label_key)

    @classmethod
    def _locate(cls, root: str, names: Sequence[str], download: bool = False) -> List[str]:
        # Accept both the folder holding the extracted directory and that directory itself.
        bases = [os.path.join(root, cls.folder), root]
        for base in bases:
            paths = [os.path.join(base, name) for name in names]
            if all(os.path.isfile(p) for p in paths):
                return paths
        looked = [os.path.join(base, name) for base in bases for name in names]
        asked = (" download=True was given, but libai never downloads at run time (runs are "
                 "reproducible from local files)." if download else "")
        raise FileNotFoundError(
            f"{cls.__name__}: batch files not found.{asked} Looked for:\n  "
            + "\n  ".join(looked)
            + f"\nDownload {cls.archive} from https://www.cs.toronto.edu/~kriz/cifar.html by hand "
            f"and extract it into {root!r} (tar -xzf {cls.archive} -C {root})."
        )


class CIFAR10Dataset(_CIFARDataset):
    """CIFAR-10: 10 classes, 50,000 training and 10,000 test 32×32 RGB images.

    Args:
        root: folder holding ``cifar-10-batches-py`` (or that folder itself).
        train: the five training batches, else ``test_batch``.
        transform: called on a PIL RGB image (see :class:`ImageClassificationDataset`).
        image_field / label_field: sample field names.
        download: LiBai's flag, accepted so its configs run; files already in place are used,
            and missing ones are an error saying where to get them (nothing is downloaded).
    """

    folder = "cifar-10-batches-py"
    train_files = tuple(f"data_batch_{i}" for i in range(1, 6))
    test_files = ("test_batch",)
    label_key = "labels"
    archive = "cifar-10-python.tar.gz"


class CIFAR100Dataset(_CIFARDataset):
    """CIFAR-100 with its 100 fine labels; same layout and arguments as :class:`CIFAR10Dataset`,
    with ``root`` holding ``cifar-100-python``."""

    folder = "cifar-100-python"
    train_files = ("train",)
    test_files = ("test",)
    label_key = "fine_labels"
    archive = "cifar-100-python.tar.gz"
