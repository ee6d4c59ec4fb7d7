"""The transform protocol: draw the random parameters once, apply them to every field.

Splitting a random transform into :meth:`Transform.sample` (draw from the pipeline's NumPy
``Generator``, once per sample) and :meth:`Transform.apply` (pure function of image and drawn
parameters) is what keeps paired images aligned: the pipeline samples once and applies the same
parameters to the input, the target, a mask... And because every draw comes from one generator,
a seed fixes the whole pipeline.
"""

from typing import Any, Callable, Optional, Sequence

import numpy as np

from libai.data.augmentation.image import as_image

__all__ = ["Transform", "FunctionTransform", "check_probability", "check_range", "is_tensor"]


class Transform:
    """Base of the augmentation transforms.

    Subclasses override :meth:`apply` and, when random, :meth:`sample`. Called directly
    (``t(image, rng)``) a transform samples and applies in one go, which is handy in notebooks;
    inside an :class:`~libai.data.augmentation.AugmentationPipeline` the pipeline does both.
    """

    def sample(self, rng: np.random.Generator, image: Any) -> Any:
        """Draw this sample's parameters; ``image`` is the first image field (for its size).
        Deterministic transforms return ``None``."""
        return None

    def apply(self, image: Any, params: Any) -> Any:
        """``image`` transformed with the parameters :meth:`sample` drew."""
        raise NotImplementedError

    def __call__(self, image: Any, rng: Optional[np.random.Generator] = None) -> Any:
        rng = rng if rng is not None else np.random.default_rng()
        if not is_tensor(image):
            image = as_image(image)
        return self.apply(image, self.sample(rng, image))

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in vars(self).items() if not k.startswith("_"))
        return f"{type(self).__name__}({args})"


class FunctionTransform(Transform):
    """A plain ``image -> image`` callable used as a (deterministic) pipeline step."""

    def __init__(self, fn: Callable[[Any], Any]) -> None:
        self.fn = fn

    def apply(self, image: Any, params: Any) -> Any:
        return self.fn(image)


def check_probability(p: float, what: str = "p") -> float:
    """``p`` as a float after checking it is within ``[0, 1]``."""
    p = float(p)
    if not 0.0 <= p <= 1.0:
        raise ValueError(f"{what} is a probability within [0, 1], got {p}")
    return p


def check_range(limit: Sequence[float], what: str) -> tuple:
    """A ``[low, high]`` pair with ``low <= high``, as a tuple of floats."""
    values = [float(v) for v in limit]
    if len(values) != 2 or values[0] > values[1]:
        raise ValueError(f"{what} must be a [low, high] pair with low <= high, got {limit!r}")
    return tuple(values)


def is_tensor(value: Any) -> bool:
    """Whether ``value`` is a OneFlow tensor (checked without importing OneFlow)."""
    return type(value).__module__.startswith("oneflow")
