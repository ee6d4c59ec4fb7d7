"""Photometric jitter: brightness, contrast, saturation, hue, blur and gamma in one transform."""

from typing import Any, Dict, Optional, Sequence

import numpy as np

from libai.config.registry import TRANSFORM_REGISTRY
from libai.data.augmentation.base import Transform, check_probability, check_range
from libai.data.augmentation.image import check_image, from_float, to_float

__all__ = ["RandomColorJitter", "luma"]

# ITU-R BT.601 weights, the grayscale torchvision and PIL use.
_LUMA = np.array([0.299, 0.587, 0.114], dtype=np.float32)
_STEPS = ("brightness", "contrast", "saturation", "hue", "blur", "gamma")


def luma(image: np.ndarray) -> np.ndarray:
    """The ``(H, W)`` grayscale of a float ``(H, W, 3)`` RGB image, or the single channel."""
    if image.ndim == 3 and image.shape[2] == 3:
        return image @ _LUMA
    return image.reshape(image.shape[0], image.shape[1])


@TRANSFORM_REGISTRY.register()
class RandomColorJitter(Transform):
    """Each photometric change applied on its own coin flip, in a fixed order.

    With values in ``[0, 1]`` (uint8 is divided by 255, the result converted back and rounded),
    and a clip to ``[0, 1]`` after every step, the steps are, each with probability ``*_p`` and
    a factor drawn uniformly from ``*_limit``:

    1. brightness ``b``: ``x * b``
    2. contrast ``c``: ``(x - m) * c + m``, ``m`` the mean grayscale (BT.601) value of the image
    3. saturation ``s``: ``g + (x - g) * s``, ``g`` the pixel's grayscale value
    4. hue ``h`` (a fraction of the colour circle): the HSV hue is turned by ``h * 360`` degrees
    5. blur ``k`` (an odd kernel size within ``blur_limit``): a ``k x k`` mean filter
       (OpenCV's ``blur``, borders reflected)
    6. gamma ``g``: ``x ** g``

    Saturation and hue need RGB (3 channels) and leave 1-channel images unchanged.
    Accepts uint8 and float32 images with 1 or 3 channels.
    """

    def __init__(
        self,
        brightness_limit: Sequence[float] = (0.6, 1.2),
        brightness_p: float = 0.6,
        contrast_limit: Sequence[float] = (0.6, 1.4),
        contrast_p: float = 0.6,
        saturation_limit: Sequence[float] = (0.6, 1.4),
        saturation_p: float = 0.5,
        hue_limit: Sequence[float] = (-0.1, 0.1),
        hue_p: float = 0.05,
        blur_limit: Sequence[int] = (3, 7),
        blur_p: float = 0.2,
        gamma_limit: Sequence[float] = (0.3, 3.0),
        gamma_p: float = 0.1,
    ) -> None:
        self.limits = {
            "brightness": check_range(brightness_limit, "brightness_limit"),
            "contrast": check_range(contrast_limit, "contrast_limit"),
            "saturation": check_range(saturation_limit, "saturation_limit"),
            "hue": check_range(hue_limit, "hue_limit"),
            "blur": check_range(blur_limit, "blur_limit"),
            "gamma": check_range(gamma_limit, "gamma_limit"),
        }
        self.probs = {
            "brightness": check_probability(brightness_p, "brightness_p"),
            "contrast": check_probability(contrast_p, "contrast_p"),
            "saturation": check_probability(saturation_p, "saturation_p"),
            "hue": check_probability(hue_p, "hue_p"),
            "blur": check_probability(blur_p, "blur_p"),
            "gamma": check_probability(gamma_p, "gamma_p"),
        }
        low, high = self.limits["blur"]
        self._kernels = [k for k in range(int(np.ceil(low)), int(high) + 1) if k % 2 == 1 and k > 0]
        if not self._kernels:
            raise ValueError(
                f"blur_limit {list(blur_limit)} holds no odd kernel size; use e.g. [3, 7]"
            )
        if min(self.limits["gamma"]) <= 0:
            raise ValueError(f"gamma_limit must be positive, got {list(gamma_limit)}")

    def sample(self, rng: np.random.Generator, image: Any) -> Dict[str, Optional[float]]:
        # Two draws per step whatever happens, so one step's probability never shifts another's.
        params: Dict[str, Optional[float]] = {}
        for step in _STEPS:
            coin, value = rng.random(), rng.random()
            if coin >= self.probs[step]:
                params[step] = None
            elif step == "blur":
                params[step] = float(
                    self._kernels[min(int(value * len(self._kernels)), len(self._kernels) - 1)]
                )
            else:
                low, high = self.limits[step]
                params[step] = low + (high - low) * value
        return params

    def apply(self, image: np.ndarray, params: Dict[str, Optional[float]]) -> np.ndarray:
        image = check_image(image, "RandomColorJitter")
        channels = 1 if image.ndim == 2 else image.shape[2]
        if channels not in (1, 3):
            raise ValueError(
                f"RandomColorJitter takes 1- or 3-channel images, got {channels} channels"
            )
        if all(v is None for v in params.values()):
            return image.copy()
        x = to_float(image)
        for step in _STEPS:
            value = params.get(step)
            if value is not None:
                x = np.clip(_STEP_FUNCTIONS[step](x, value), 0.0, 1.0).astype(np.float32)
        return from_float(x, image.dtype)


def _brightness(x: np.ndarray, b: float) -> np.ndarray:
    return x * np.float32(b)


def _contrast(x: np.ndarray, c: float) -> np.ndarray:
    mean = np.float32(luma(x).mean())
    return (x - mean) * np.float32(c) + mean


def _saturation(x: np.ndarray, s: float) -> np.ndarray:
    if x.ndim != 3 or x.shape[2] != 3:
        return x
    gray = luma(x)[:, :, None]
    return gray + (x - gray) * np.float32(s)


def _hue(x: np.ndarray, h: float) -> np.ndarray:
    import cv2

    if x.ndim != 3 or x.shape[2] != 3:
        return x
    hsv = cv2.cvtColor(np.ascontiguousarray(x), cv2.COLOR_RGB2HSV)  # float: H in [0, 360)
    hsv[:, :, 0] = np.mod(hsv[:, :, 0] + np.float32(h * 360.0), 360.0)
    return cv2.cvtColor(hsv, cv2.COLOR_HSV2RGB)


def _blur(x: np.ndarray, k: float) -> np.ndarray:
    import cv2

    size = int(k)
    out = cv2.blur(np.ascontiguousarray(x), (size, size))
    return out.reshape(x.shape)


def _gamma(x: np.ndarray, g: float) -> np.ndarray:
    return np.power(x, np.float32(g))


_STEP_FUNCTIONS = {
    "brightness": _brightness,
    "contrast": _contrast,
    "saturation": _saturation,
    "hue": _hue,
    "blur": _blur,
    "gamma": _gamma,
}
