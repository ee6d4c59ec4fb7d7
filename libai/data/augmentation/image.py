"""Array helpers shared by the transforms: what an image is, dtype round trips, sizes.

An image here is a NumPy array ``(H, W)`` or ``(H, W, C)`` of ``uint8`` (0..255) or ``float32``
(taken to be in ``[0, 1]``). Colour transforms compute in float32 and return the input's dtype,
so a pipeline never changes an image's dtype behind the user's back (only ``Normalize`` and
``ToTensor`` do, on purpose).
"""

import difflib
from typing import Any, Sequence, Tuple, Union

import numpy as np

__all__ = [
    "INTERPOLATIONS",
    "as_image",
    "check_image",
    "to_float",
    "from_float",
    "interpolation_flag",
    "size_pair",
]

Size = Union[int, Sequence[int]]

# OpenCV's names for the resampling filters (cv2.INTER_*), the spelling configs use.
INTERPOLATIONS = ("INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA", "INTER_LANCZOS4")

_DTYPES = (np.dtype(np.uint8), np.dtype(np.float32))


def as_image(image: Any) -> np.ndarray:
    """A PIL image or array as a NumPy array (PIL images are copied into ``(H, W[, C])``)."""
    if isinstance(image, np.ndarray):
        return image
    if hasattr(image, "mode") and hasattr(image, "size") and hasattr(image, "getdata"):
        return np.array(image)
    raise TypeError(
        f"augmentation transforms take NumPy (H, W[, C]) arrays or PIL images, got "
        f"{type(image).__name__}; convert tensors with .numpy() and move channels last"
    )


def check_image(image: Any, who: str, dtypes: Sequence[np.dtype] = _DTYPES) -> np.ndarray:
    """``image`` as an array after checking its rank and dtype, naming ``who`` on failure."""
    array = as_image(image)
    if array.ndim not in (2, 3):
        raise ValueError(
            f"{who} takes an (H, W) or (H, W, C) image, got an array of shape {array.shape}; "
            "channels-first tensors only appear after ToTensor, put ToTensor last"
        )
    if array.dtype not in dtypes:
        names = " or ".join(np.dtype(d).name for d in dtypes)
        raise TypeError(
            f"{who} takes {names} images, got {array.dtype}; convert with "
            "image.astype(np.float32) / 255 (floats are taken to be in [0, 1]) or to uint8"
        )
    return array


def to_float(image: np.ndarray) -> np.ndarray:
    """``image`` as float32 in ``[0, 1]`` (uint8 divided by 255; float32 copied)."""
    if image.dtype == np.uint8:
        return image.astype(np.float32) / np.float32(255.0)
    return image.astype(np.float32, copy=True)


def from_float(values: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """Float values in ``[0, 1]`` back to ``dtype``: clipped, and rounded for uint8."""
    clipped = np.clip(values, 0.0, 1.0)
    if np.dtype(dtype) == np.uint8:
        return np.rint(clipped * 255.0).astype(np.uint8)
    return clipped.astype(np.float32)


def interpolation_flag(name: str) -> int:
    """The ``cv2.INTER_*`` constant for one of :data:`INTERPOLATIONS`."""
    import cv2

    if name not in INTERPOLATIONS:
        close = difflib.get_close_matches(str(name).upper(), INTERPOLATIONS, n=1, cutoff=0.4)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise ValueError(
            f"unknown interpolation {name!r}; {hint}use one of {', '.join(INTERPOLATIONS)}"
        )
    return int(getattr(cv2, name))


def size_pair(size: Size, what: str = "size") -> Tuple[int, int]:
    """An int ``s`` as ``(s, s)``; a pair as ``(h, w)``; both positive."""
    if isinstance(size, (int, np.integer)):
        pair = (int(size), int(size))
    else:
        values = list(size)
        if len(values) != 2:
            raise ValueError(f"{what} must be an int or a (height, width) pair, got {size!r}")
        pair = (int(values[0]), int(values[1]))
    if min(pair) < 1:
        raise ValueError(f"{what} must be positive, got {size!r}")
    return pair
