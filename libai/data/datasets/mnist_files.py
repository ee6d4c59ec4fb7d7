"""MNIST's IDX files: read, write, and make them from real digits, without OneFlow.

The IDX format (from the MNIST site) is a big-endian header followed by raw values:
two zero bytes, a type code (``0x08`` = unsigned byte), the number of dimensions, one 4-byte
size per dimension, then the data. Images are ``(N, 28, 28)`` uint8, labels ``(N,)`` uint8.

``python tools/make_digits_mnist.py --output-dir DIR`` writes scikit-learn's bundled 8×8
handwritten digits (1,797 real samples) upscaled to 28×28 in this format
(:func:`make_digits_mnist`). The dataset that reads them is
:class:`libai.data.datasets.mnist.MNISTDataset`; this module is apart from it so that the tool
does not load OneFlow.
"""
import gzip
import os
import struct
from typing import Dict, Tuple

import numpy as np

__all__ = ["read_idx", "write_idx", "write_idx_dataset", "make_digits_mnist", "upscale_digits", "MNIST_FILES"]

# split -> (images file, labels file), without the optional ".gz"
MNIST_FILES: Dict[str, Tuple[str, str]] = {
    "train": ("train-images-idx3-ubyte", "train-labels-idx1-ubyte"),
    "test": ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"),
}
_UBYTE = 0x08


def read_idx(path: str) -> np.ndarray:
    """Read an unsigned-byte IDX file (plain or ``.gz``) into a uint8 array.

    Raises ``ValueError`` naming the file when the header is not IDX or the data size does not
    match the header's dimensions.
    """
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    if len(data) < 4 or data[0] != 0 or data[1] != 0:
        raise ValueError(
            f"{path} is not an IDX file: it must start with two zero bytes (got {data[:4]!r}); "
            "is it an unextracted archive or a different format?"
        )
    if data[2] != _UBYTE:
        raise ValueError(
            f"{path}: IDX type code 0x{data[2]:02x} is not supported; MNIST files are unsigned "
            "bytes (0x08)"
        )
    ndim = data[3]
    header = 4 + 4 * ndim
    if ndim == 0 or len(data) < header:
        raise ValueError(f"{path}: truncated IDX header ({len(data)} bytes for {ndim} dimensions)")
    shape = struct.unpack(f">{ndim}I", data[4:header])
    expected = int(np.prod(shape))
    if len(data) - header != expected:
        raise ValueError(
            f"{path}: header says shape {tuple(shape)} ({expected} bytes of data) but the file "
            f"holds {len(data) - header}; the file is truncated or corrupt, fetch it again"
        )
    return np.frombuffer(data, dtype=np.uint8, offset=header).reshape(shape)


def write_idx(path: str, array: np.ndarray) -> None:
    """Write a uint8 array as an IDX file (gzip-compressed when ``path`` ends in ``.gz``)."""
    array = np.asarray(array)
    if array.dtype != np.uint8:
        raise TypeError(f"IDX files written here hold uint8 values, got {array.dtype}")
    if not 1 <= array.ndim <= 255:
        raise ValueError(f"IDX needs 1 to 255 dimensions, got {array.ndim}")
    header = bytes([0, 0, _UBYTE, array.ndim]) + struct.pack(f">{array.ndim}I", *array.shape)
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "wb") as f:
        f.write(header + np.ascontiguousarray(array).tobytes())


def write_idx_dataset(
    output_dir: str,
    split: str,
    images: np.ndarray,
    labels: np.ndarray,
    compress: bool = False,
) -> Tuple[str, str]:
    """Write one split (``"train"`` or ``"test"``) as MNIST's two IDX files; return their paths."""
    if split not in MNIST_FILES:
        raise ValueError(f"split must be one of {sorted(MNIST_FILES)}, got {split!r}")
    if images.ndim != 3 or labels.shape != (images.shape[0],):
        raise ValueError(
            f"expected images (N, H, W) and labels (N,), got {images.shape} and {labels.shape}"
        )
    os.makedirs(output_dir, exist_ok=True)
    suffix = ".gz" if compress else ""
    paths = tuple(os.path.join(output_dir, name + suffix) for name in MNIST_FILES[split])
    write_idx(paths[0], images)
    write_idx(paths[1], labels)
    return paths  # type: ignore[return-value]


def upscale_digits(images: np.ndarray, size: int = 28) -> np.ndarray:
    """8×8 digits with values 0..16 → ``size``×``size`` uint8 (0..255), MNIST-like.

    Each pixel becomes a ``k``×``k`` block (``k = size // 8``), and the result is centred in a
    black ``size``×``size`` frame, as MNIST centres its digits inside a margin.
    """
    if size < 8:
        raise ValueError(f"size must be at least 8 (the digits are 8×8), got {size}")
    k = size // 8
    scaled = np.rint(images.astype(np.float64) * (255.0 / 16.0)).astype(np.uint8)
    blocks = np.kron(scaled, np.ones((1, k, k), dtype=np.uint8))
    top = (size - 8 * k) // 2
    out = np.zeros((images.shape[0], size, size), dtype=np.uint8)
    out[:, top : top + 8 * k, top : top + 8 * k] = blocks
    return out


def make_digits_mnist(
    output_dir: str,
    size: int = 28,
    test_fraction: float = 0.2,
    seed: int = 0,
    compress: bool = False,
) -> Dict[str, Tuple[str, str]]:
    """Write scikit-learn's ``load_digits`` as the four MNIST IDX files.

    The split is deterministic: a permutation drawn from ``seed``; the first
    ``round(n × test_fraction)`` samples of it form the test split, the rest the train split,
    each kept in the permutation's order. Returns ``{"train": (images, labels), "test": ...}``.
    """
    from sklearn.datasets import load_digits  # bundled data: no download

    if not 0.0 < test_fraction < 1.0:
        raise ValueError(f"test_fraction must be within (0, 1), got {test_fraction}")
    digits = load_digits()
    images = upscale_digits(digits.images, size)
    labels = digits.target.astype(np.uint8)
    order = np.random.default_rng(seed).permutation(len(labels))
    n_test = int(round(len(labels) * test_fraction))
    splits = {"test": order[:n_test], "train": order[n_test:]}
    return {
        split: write_idx_dataset(output_dir, split, images[idx], labels[idx], compress)
        for split, idx in splits.items()
    }
