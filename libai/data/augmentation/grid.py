"""A visual check of a pipeline: many augmented versions of one image, tiled into one PNG."""

import math
from typing import Any, List, Optional, Sequence

import numpy as np

from libai.data.augmentation.base import is_tensor
from libai.data.augmentation.image import as_image
from libai.data.augmentation.pipeline import AugmentationPipeline

__all__ = ["to_display", "tile_images", "augment_grid", "save_png"]


def to_display(image: Any) -> np.ndarray:
    """Any pipeline output as a viewable uint8 ``(H, W, 3)`` array.

    ``(C, H, W)`` tensors are moved channels-last; floats within ``[0, 1]`` are scaled by 255,
    other floats (e.g. after ``Normalize``) are stretched from their min..max to 0..255.
    """
    if is_tensor(image):
        image = np.transpose(image.numpy(), (1, 2, 0))
    array = as_image(image)
    if array.ndim == 3 and array.shape[2] == 1:
        array = array[:, :, 0]
    if array.dtype != np.uint8:
        x = array.astype(np.float32)
        low, high = float(x.min()), float(x.max())
        if low < 0.0 or high > 1.0:
            x = (x - low) / max(high - low, 1e-12)
        array = np.rint(np.clip(x, 0.0, 1.0) * 255.0).astype(np.uint8)
    if array.ndim == 2:
        array = np.repeat(array[:, :, None], 3, axis=2)
    if array.shape[2] != 3:
        raise ValueError(f"can only show 1- or 3-channel images, got {array.shape[2]} channels")
    return array


def tile_images(
    images: Sequence[np.ndarray], ncol: Optional[int] = None, pad: int = 2, background: int = 255
) -> np.ndarray:
    """uint8 ``(H, W, 3)`` images in a grid of ``ncol`` columns (default: about square).

    Every cell is as large as the largest image (smaller ones sit in its top-left corner) and
    cells are separated and surrounded by ``pad`` pixels of ``background``.
    """
    if not images:
        raise ValueError("no images to tile")
    ncol = int(ncol or math.ceil(math.sqrt(len(images))))
    nrow = math.ceil(len(images) / ncol)
    cell_h, cell_w = max(i.shape[0] for i in images), max(i.shape[1] for i in images)
    grid = np.full(
        (nrow * cell_h + (nrow + 1) * pad, ncol * cell_w + (ncol + 1) * pad, 3),
        background,
        dtype=np.uint8,
    )
    for index, image in enumerate(images):
        row, col = divmod(index, ncol)
        top, left = pad + row * (cell_h + pad), pad + col * (cell_w + pad)
        grid[top : top + image.shape[0], left : left + image.shape[1]] = image
    return grid


def augment_grid(
    image: Any,
    pipeline: AugmentationPipeline,
    n: int = 16,
    ncol: Optional[int] = None,
    pad: int = 2,
) -> np.ndarray:
    """``n`` augmentations of ``image`` (sample ``i`` drawn with ``pipeline(image, seed=i)``, so
    the grid is fixed by the pipeline's seed) tiled with :func:`tile_images`."""
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    tiles: List[np.ndarray] = [to_display(pipeline(image, seed=i)) for i in range(n)]
    return tile_images(tiles, ncol=ncol, pad=pad)


def save_png(array: np.ndarray, path: str) -> None:
    """Write a uint8 ``(H, W, 3)`` array as a PNG file."""
    from PIL import Image

    Image.fromarray(array).save(path, format="PNG")
