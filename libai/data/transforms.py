"""Standard image transforms (flowvision) and the conversion of an image to a tensor.

Image datasets hand a PIL image to ``transform`` and need a ``oneflow`` tensor back;
:func:`image_to_tensor` is that last step when no transform is given (or the transform returns a
PIL image or an array), so every dataset yields the same ``(C, H, W)`` float layout.

:func:`build_image_transforms` assembles the usual recipes so that configs can say what they
want in one call: ImageNet-style random-resized-crop training, CIFAR-style pad-and-crop, or no
geometric change (MNIST); evaluation resizes and centre-crops.
"""
from typing import Any, Callable, Optional, Sequence, Tuple

import numpy as np
import oneflow as flow

__all__ = [
    "IMAGENET_MEAN",
    "IMAGENET_STD",
    "CIFAR_MEAN",
    "CIFAR_STD",
    "MNIST_MEAN",
    "MNIST_STD",
    "build_image_transforms",
    "image_to_tensor",
    "apply_transform",
]

IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
CIFAR_MEAN = (0.5071, 0.4865, 0.4409)
CIFAR_STD = (0.2673, 0.2564, 0.2762)
MNIST_MEAN = (0.1307,)
MNIST_STD = (0.3081,)

_CROPS = ("resized", "pad", "none")


def image_to_tensor(image: Any) -> flow.Tensor:
    """A PIL image, NumPy array or tensor as a float ``(C, H, W)`` tensor.

    A PIL image is ``(H, W[, C])`` and is moved to channels-first; an array is taken to be
    channels-first already (the layout transforms produce), and a ``(H, W)`` one gets a channel
    dimension. ``uint8`` values are scaled to ``[0, 1]`` as ``ToTensor`` does. Tensors pass
    through unchanged.
    """
    if isinstance(image, flow.Tensor):
        return image
    is_array = isinstance(image, np.ndarray)
    array = np.asarray(image)
    if array.dtype == object or array.ndim not in (2, 3):
        raise TypeError(
            f"cannot turn {type(image).__name__} (array shape {array.shape}) into an image tensor; "
            "a transform must return a oneflow tensor, a PIL image or a (C, H, W) / (H, W) array"
        )
    if array.ndim == 2:
        array = array[None, :, :]
    elif not is_array:
        array = np.transpose(array, (2, 0, 1))
    if array.dtype == np.uint8:
        array = array.astype(np.float32) / 255.0
    return flow.tensor(np.ascontiguousarray(array, dtype=np.float32))


def build_image_transforms(
    train: bool,
    size: int = 224,
    mean: Sequence[float] = IMAGENET_MEAN,
    std: Sequence[float] = IMAGENET_STD,
    crop: str = "resized",
    scale: Tuple[float, float] = (0.08, 1.0),
    padding: int = 4,
    hflip: float = 0.5,
    crop_pct: float = 0.875,
    interpolation: str = "bilinear",
) -> Callable[[Any], flow.Tensor]:
    """A flowvision ``Compose`` for training or evaluation.

    Training applies ``crop`` (``"resized"``: RandomResizedCrop to ``size`` with ``scale``;
    ``"pad"``: RandomCrop of ``size`` after ``padding`` pixels; ``"none"``: no geometric change),
    then a horizontal flip with probability ``hflip``. Evaluation resizes the shorter side to
    ``size / crop_pct`` and centre-crops ``size`` (with ``crop="none"`` it does neither). Both end
    with ToTensor and Normalize(``mean``, ``std``), one value per channel.

    Args:
        train: training (random) or evaluation (deterministic) recipe.
        size: output height and width.
        mean / std: per-channel normalisation (1 value for grayscale, 3 for RGB).
        crop: ``"resized"`` (ImageNet), ``"pad"`` (CIFAR) or ``"none"`` (MNIST).
        scale: area range of RandomResizedCrop.
        padding: border added before RandomCrop with ``crop="pad"``.
        hflip: probability of a horizontal flip in training (0 disables it).
        crop_pct: centre-crop fraction in evaluation.
        interpolation: ``"bilinear"``, ``"bicubic"`` or ``"nearest"``.
    """
    import flowvision.transforms as T  # imported lazily: only image pipelines need flowvision

    _validate(size, mean, std, crop, hflip, crop_pct)
    modes = {
        "bilinear": T.InterpolationMode.BILINEAR,
        "bicubic": T.InterpolationMode.BICUBIC,
        "nearest": T.InterpolationMode.NEAREST,
    }
    if interpolation not in modes:
        raise ValueError(f"interpolation must be one of {sorted(modes)}, got {interpolation!r}")
    mode = modes[interpolation]
    steps = []
    if train:
        if crop == "resized":
            steps.append(T.RandomResizedCrop(size, scale=tuple(scale), interpolation=mode))
        elif crop == "pad":
            steps.append(T.RandomCrop(size, padding=padding))
        if hflip > 0:
            steps.append(T.RandomHorizontalFlip(hflip))
    elif crop != "none":
        steps.append(T.Resize(int(round(size / crop_pct)), interpolation=mode))
        steps.append(T.CenterCrop(size))
    steps.append(T.ToTensor())
    steps.append(T.Normalize(mean=list(mean), std=list(std)))
    return T.Compose(steps)


def _validate(
    size: int, mean: Sequence[float], std: Sequence[float], crop: str, hflip: float, crop_pct: float
) -> None:
    if int(size) < 1:
        raise ValueError(f"size must be a positive number of pixels, got {size}")
    if len(mean) != len(std) or len(mean) not in (1, 3):
        raise ValueError(
            f"mean and std need one value per channel (1 or 3 each), got {len(mean)} and {len(std)}"
        )
    if any(s <= 0 for s in std):
        raise ValueError(f"std values must be positive, got {list(std)}")
    if crop not in _CROPS:
        raise ValueError(f"crop must be one of {list(_CROPS)}, got {crop!r}")
    if not 0.0 <= hflip <= 1.0:
        raise ValueError(f"hflip is a probability within [0, 1], got {hflip}")
    if not 0.0 < crop_pct <= 1.0:
        raise ValueError(f"crop_pct must be within (0, 1], got {crop_pct}")


def apply_transform(image: Any, transform: Optional[Callable[[Any], Any]]) -> flow.Tensor:
    """Run ``transform`` (if any) on a PIL image and return a float ``(C, H, W)`` tensor."""
    if transform is not None:
        image = transform(image)
    return image_to_tensor(image)
