"""The last steps of a pipeline: per-channel normalisation and the move to a OneFlow tensor."""

from typing import Any, Sequence

import numpy as np

from libai.config.registry import TRANSFORM_REGISTRY
from libai.data.augmentation.base import Transform, is_tensor
from libai.data.augmentation.image import check_image, to_float

__all__ = ["Normalize", "ToTensor"]


@TRANSFORM_REGISTRY.register()
class Normalize(Transform):
    """``(x - mean) / std`` per channel, with ``x`` in ``[0, 1]`` (uint8 is divided by 255 first).

    ``mean`` and ``std`` hold one value per channel, or one value for all. Works before
    ``ToTensor`` on a uint8/float32 ``(H, W[, C])`` array (giving float32) and, as in flowvision
    recipes, after it on a float ``(C, H, W)`` tensor.
    """

    def __init__(self, mean: Sequence[float], std: Sequence[float]) -> None:
        self.mean = [float(v) for v in np.atleast_1d(mean)]
        self.std = [float(v) for v in np.atleast_1d(std)]
        if len(self.mean) != len(self.std):
            raise ValueError(f"mean and std need the same length, got {self.mean} and {self.std}")
        if any(s <= 0 for s in self.std):
            raise ValueError(f"std values must be positive, got {self.std}")

    def _stats(self, channels: int) -> tuple:
        if len(self.mean) not in (1, channels):
            raise ValueError(
                f"Normalize has {len(self.mean)} mean/std values for an image of "
                f"{channels} channels"
            )
        mean = np.resize(np.asarray(self.mean, dtype=np.float32), channels)
        std = np.resize(np.asarray(self.std, dtype=np.float32), channels)
        return mean, std

    def apply(self, image: Any, params: Any) -> Any:
        if is_tensor(image):
            import oneflow as flow

            mean, std = self._stats(image.shape[0])
            view = (-1,) + (1,) * (image.ndim - 1)
            return (image - flow.tensor(mean).reshape(view)) / flow.tensor(std).reshape(view)
        image = check_image(image, "Normalize")
        mean, std = self._stats(1 if image.ndim == 2 else image.shape[2])
        x = to_float(image)
        if x.ndim == 2:
            return (x - mean[0]) / std[0]
        return (x - mean) / std


@TRANSFORM_REGISTRY.register()
class ToTensor(Transform):
    """``(H, W[, C])`` array -> float32 ``(C, H, W)`` OneFlow tensor; uint8 is divided by 255.

    Put it last (only tensor-aware steps such as ``Normalize`` and ``RandomErasing`` may
    follow). Accepts uint8 and float32 arrays; tensors pass through.
    """

    def apply(self, image: Any, params: Any) -> Any:
        import oneflow as flow

        if is_tensor(image):
            return image
        image = check_image(image, "ToTensor")
        x = to_float(image) if image.dtype == np.uint8 else image.astype(np.float32)
        x = x[None] if x.ndim == 2 else np.transpose(x, (2, 0, 1))
        return flow.tensor(np.ascontiguousarray(x))
