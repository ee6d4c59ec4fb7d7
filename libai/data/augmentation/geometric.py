"""Geometric transforms: flips, resizing and crops (uint8 or float32, any channel count)."""

from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from libai.config.registry import TRANSFORM_REGISTRY
from libai.data.augmentation.base import Transform, check_probability
from libai.data.augmentation.image import Size, check_image, interpolation_flag, size_pair

__all__ = ["RandomFlip", "Resize", "RandomCrop", "CenterCrop", "RandomResizedCrop"]

_FLIPS = ("horizontal", "vertical", "diagonal")


@TRANSFORM_REGISTRY.register()
class RandomFlip(Transform):
    """Flip with probability ``p``, in one of ``direction``.

    ``horizontal`` mirrors left-right, ``vertical`` top-bottom, ``diagonal`` both (a 180 degree
    turn, as in mmcv). With several directions and a scalar ``p`` the image is flipped with
    probability ``p`` in the directions' union, each direction equally likely (``p / n`` each);
    a list ``p`` gives each direction its own probability (their sum at most 1).
    Accepts uint8 and float32 images.
    """

    def __init__(
        self,
        direction: Union[str, Sequence[str]] = "horizontal",
        p: Union[float, Sequence[float]] = 0.5,
    ) -> None:
        directions = [direction] if isinstance(direction, str) else list(direction)
        unknown = [d for d in directions if d not in _FLIPS]
        if not directions or unknown:
            raise ValueError(f"direction must be some of {list(_FLIPS)}, got {direction!r}")
        if isinstance(p, (int, float)):
            probs = [check_probability(p) / len(directions)] * len(directions)
        else:
            probs = [check_probability(v) for v in p]
            if len(probs) != len(directions) or sum(probs) > 1.0 + 1e-9:
                raise ValueError(
                    f"a list p needs one probability per direction ({len(directions)}) summing to "
                    f"at most 1, got {list(p)}"
                )
        self.direction = directions
        self.p = p
        self._cumulative = np.cumsum(probs)

    def sample(self, rng: np.random.Generator, image: Any) -> Optional[str]:
        u = rng.random()
        index = int(np.searchsorted(self._cumulative, u, side="right"))
        return self.direction[index] if index < len(self.direction) else None

    def apply(self, image: np.ndarray, params: Optional[str]) -> np.ndarray:
        image = check_image(image, "RandomFlip")
        if params == "horizontal":
            image = image[:, ::-1]
        elif params == "vertical":
            image = image[::-1]
        elif params == "diagonal":
            image = image[::-1, ::-1]
        return np.ascontiguousarray(image)


@TRANSFORM_REGISTRY.register()
class Resize(Transform):
    """Resize to ``target_size`` (an int for a square, or ``(h, w)``) with OpenCV.

    ``keep_ratio=False`` stretches to exactly ``(h, w)``. ``keep_ratio=True`` scales both sides
    by the same factor, the smallest one at which the image covers ``(h, w)`` (so an int
    ``target_size`` sets the shorter side, as torchvision's ``Resize(int)`` does); then
    ``clip_border=True`` cuts the overflow equally from both ends, giving exactly ``(h, w)``,
    and ``clip_border=False`` keeps the whole scaled image. ``interpolation`` is an OpenCV name
    (``INTER_NEAREST``, ``INTER_LINEAR``, ``INTER_CUBIC``, ``INTER_AREA``, ``INTER_LANCZOS4``).
    Accepts uint8 and float32 images.
    """

    def __init__(
        self,
        target_size: Size = 256,
        interpolation: str = "INTER_LINEAR",
        keep_ratio: bool = False,
        clip_border: bool = True,
    ) -> None:
        self.target_size = size_pair(target_size, "target_size")
        self.interpolation = interpolation
        self._flag = interpolation_flag(interpolation)
        self.keep_ratio = bool(keep_ratio)
        self.clip_border = bool(clip_border)

    def output_size(self, height: int, width: int) -> Tuple[int, int]:
        """The ``(h, w)`` an image of ``height x width`` is scaled to (before any clipping)."""
        th, tw = self.target_size
        if not self.keep_ratio:
            return th, tw
        scale = max(th / height, tw / width)
        return max(1, int(round(height * scale))), max(1, int(round(width * scale)))

    def apply(self, image: np.ndarray, params: Any) -> np.ndarray:
        import cv2

        image = check_image(image, "Resize")
        h, w = self.output_size(*image.shape[:2])
        out = cv2.resize(image, (w, h), interpolation=self._flag)
        if out.ndim == 2 and image.ndim == 3:  # OpenCV drops a single channel axis
            out = out[:, :, None]
        if self.keep_ratio and self.clip_border:
            th, tw = self.target_size
            top, left = (h - th) // 2, (w - tw) // 2
            out = out[top : top + th, left : left + tw]
        return np.ascontiguousarray(out)


@TRANSFORM_REGISTRY.register()
class RandomCrop(Transform):
    """Crop a random ``size`` window, after an optional constant border of ``padding`` pixels.

    With ``pad_if_needed`` an image smaller than ``size`` is padded (with ``fill``) up to it;
    otherwise that is an error. Paired fields must share their height and width, since they
    are cut at the same place. Accepts uint8 and float32 images.
    """

    def __init__(
        self, size: Size, padding: int = 0, pad_if_needed: bool = False, fill: float = 0
    ) -> None:
        if int(padding) < 0:
            raise ValueError(f"padding must be >= 0, got {padding}")
        self.size = size_pair(size)
        self.padding = int(padding)
        self.pad_if_needed = bool(pad_if_needed)
        self.fill = fill

    def _padded_shape(self, height: int, width: int) -> Tuple[int, int]:
        height, width = height + 2 * self.padding, width + 2 * self.padding
        if self.pad_if_needed:
            height, width = max(height, self.size[0]), max(width, self.size[1])
        return height, width

    def sample(self, rng: np.random.Generator, image: Any) -> Tuple[int, int, Tuple[int, ...]]:
        shape = tuple(np.shape(image)[:2])
        height, width = self._padded_shape(*shape)
        th, tw = self.size
        if height < th or width < tw:
            raise ValueError(
                f"RandomCrop of {self.size} from a {shape[0]}x{shape[1]} image (padding "
                f"{self.padding}); use pad_if_needed=True or a Resize before it"
            )
        return int(rng.integers(0, height - th + 1)), int(rng.integers(0, width - tw + 1)), shape

    def apply(self, image: np.ndarray, params: Tuple[int, int, Tuple[int, ...]]) -> np.ndarray:
        image = check_image(image, "RandomCrop")
        top, left, shape = params
        if image.shape[:2] != shape:
            raise ValueError(
                f"RandomCrop: paired image fields must have the same height and width, got "
                f"{shape} and {image.shape[:2]}; resize them to one size first"
            )
        height, width = self._padded_shape(*shape)
        extra_h, extra_w = height - shape[0] - 2 * self.padding, width - shape[1] - 2 * self.padding
        pad = [
            (self.padding + extra_h // 2, self.padding + extra_h - extra_h // 2),
            (self.padding + extra_w // 2, self.padding + extra_w - extra_w // 2),
        ] + [(0, 0)] * (image.ndim - 2)
        if any(before or after for before, after in pad):
            image = np.pad(image, pad, mode="constant", constant_values=self.fill)
        th, tw = self.size
        return np.ascontiguousarray(image[top : top + th, left : left + tw])


@TRANSFORM_REGISTRY.register()
class CenterCrop(Transform):
    """Cut the central ``size`` window (an int for a square, or ``(h, w)``).

    When the difference is odd the extra row/column is dropped from the bottom/right.
    Accepts uint8 and float32 images.
    """

    def __init__(self, size: Size) -> None:
        self.size = size_pair(size)

    def apply(self, image: np.ndarray, params: Any) -> np.ndarray:
        image = check_image(image, "CenterCrop")
        (th, tw), (h, w) = self.size, image.shape[:2]
        if h < th or w < tw:
            raise ValueError(
                f"CenterCrop of {self.size} from a {h}x{w} image; resize first "
                "(Resize(target_size=..., keep_ratio=True, clip_border=False))"
            )
        top, left = (h - th) // 2, (w - tw) // 2
        return np.ascontiguousarray(image[top : top + th, left : left + tw])


@TRANSFORM_REGISTRY.register()
class RandomResizedCrop(Transform):
    """A random window of random area and aspect ratio, resized to ``size`` (the ImageNet crop).

    The window's area is a fraction of the image drawn uniformly from ``scale`` and its aspect
    ratio (width / height) is drawn log-uniformly from ``ratio``; up to 10 draws are tried for a
    window that fits, after which the largest centred window with a ratio inside ``ratio`` is
    taken (torchvision's and flowvision's rule). Paired fields must share height and width.
    ``interpolation`` is an OpenCV name as in :class:`Resize`. Accepts uint8 and float32 images.
    """

    def __init__(
        self,
        size: Size,
        scale: Sequence[float] = (0.08, 1.0),
        ratio: Sequence[float] = (3.0 / 4.0, 4.0 / 3.0),
        interpolation: str = "INTER_LINEAR",
    ) -> None:
        self.size = size_pair(size)
        self.scale = (float(scale[0]), float(scale[1]))
        self.ratio = (float(ratio[0]), float(ratio[1]))
        if not 0.0 < self.scale[0] <= self.scale[1] or not 0.0 < self.ratio[0] <= self.ratio[1]:
            raise ValueError(
                f"scale and ratio must be positive (low, high) pairs, got {scale!r} and {ratio!r}"
            )
        self.interpolation = interpolation
        self._flag = interpolation_flag(interpolation)

    def sample(self, rng: np.random.Generator, image: Any) -> Tuple[int, int, int, int, tuple]:
        height, width = tuple(np.shape(image)[:2])
        area = height * width
        log_ratio = np.log(self.ratio)
        for _ in range(10):
            target = area * rng.uniform(*self.scale)
            aspect = float(np.exp(rng.uniform(*log_ratio)))
            w = int(round(np.sqrt(target * aspect)))
            h = int(round(np.sqrt(target / aspect)))
            if 0 < w <= width and 0 < h <= height:
                top = int(rng.integers(0, height - h + 1))
                left = int(rng.integers(0, width - w + 1))
                return top, left, h, w, (height, width)
        aspect = width / height
        if aspect < self.ratio[0]:
            w, h = width, int(round(width / self.ratio[0]))
        elif aspect > self.ratio[1]:
            h, w = height, int(round(height * self.ratio[1]))
        else:
            h, w = height, width
        return (height - h) // 2, (width - w) // 2, h, w, (height, width)

    def apply(self, image: np.ndarray, params: Tuple[int, int, int, int, tuple]) -> np.ndarray:
        import cv2

        image = check_image(image, "RandomResizedCrop")
        top, left, h, w, shape = params
        if image.shape[:2] != shape:
            raise ValueError(
                f"RandomResizedCrop: paired image fields must have the same height and width, "
                f"got {shape} and {image.shape[:2]}; resize them to one size first"
            )
        window = np.ascontiguousarray(image[top : top + h, left : left + w])
        out = cv2.resize(window, (self.size[1], self.size[0]), interpolation=self._flag)
        if out.ndim == 2 and image.ndim == 3:
            out = out[:, :, None]
        return out
