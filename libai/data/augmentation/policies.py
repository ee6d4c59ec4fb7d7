"""The timm recipes LiBai's image configs use, from flowvision, made seedable.

flowvision's ``rand_augment_transform``, ``auto_augment_transform`` and ``RandomErasing``
draw from the global ``random``, ``numpy.random`` and OneFlow generators. Each wrapper here
draws one 32-bit seed from the pipeline's generator in :meth:`sample`, and runs flowvision's
op with the three global generators seeded from it (their previous states are restored
afterwards). So the wrappers are as reproducible as the rest of the pipeline, and paired
fields get the same ops with the same magnitudes. Conversions happen at the boundary: uint8
``(H, W, 3)`` arrays become PIL images for the policies and come back as arrays.
(flowvision 0.2.1's AugMix is not offered: it mixes arrays of transposed shapes and fails on
any non-square image.)
"""

import contextlib
import random
from typing import Any, Callable, Dict, Iterator, Optional

import numpy as np

from libai.config.registry import TRANSFORM_REGISTRY
from libai.data.augmentation.base import Transform, is_tensor
from libai.data.augmentation.image import check_image, from_float, to_float

__all__ = ["RandAugment", "AutoAugment", "RandomErasing", "seeded_global_generators"]

_PIL_FILTERS = {"nearest": 0, "bilinear": 2, "bicubic": 3, "lanczos": 1}


@contextlib.contextmanager
def seeded_global_generators(seed: int) -> Iterator[None]:
    """Seed Python's, NumPy's and OneFlow's global generators; restore them on exit."""
    import oneflow as flow

    states = (random.getstate(), np.random.get_state(), flow.default_generator.get_state())
    random.seed(seed)
    np.random.seed(seed)
    flow.default_generator.manual_seed(seed)
    try:
        yield
    finally:
        random.setstate(states[0])
        np.random.set_state(states[1])
        flow.default_generator.set_state(states[2])


class _SeededOp(Transform):
    """Draws a seed per sample and runs ``self._op`` under it."""

    _op: Callable[[Any], Any]

    def sample(self, rng: np.random.Generator, image: Any) -> int:
        return int(rng.integers(0, 2**32 - 1))

    def _run(self, value: Any, seed: int) -> Any:
        with seeded_global_generators(seed):
            return self._op(value)


class _PolicyOp(_SeededOp):
    """A flowvision PIL policy built from a timm config string and ``hparams``."""

    def _build(
        self,
        factory: Callable[[str, Dict[str, Any]], Any],
        config_str: str,
        hparams: Optional[Dict[str, Any]],
    ) -> None:
        self.config_str = config_str
        self.hparams = dict(hparams or {})
        try:
            self._op = factory(config_str, _pil_hparams(self.hparams))
        except (AssertionError, ValueError, KeyError) as err:
            raise ValueError(
                f"{type(self).__name__}: flowvision rejected config_str={config_str!r} "
                f"({err or 'unknown section'}); see flowvision.data.auto_augment for its syntax"
            ) from err

    def apply(self, image: Any, params: int) -> np.ndarray:
        from PIL import Image

        image = check_image(image, type(self).__name__, (np.dtype(np.uint8),))
        if image.ndim != 3 or image.shape[2] != 3:
            raise ValueError(
                f"{type(self).__name__} takes RGB (H, W, 3) uint8 images, got {image.shape}"
            )
        return np.asarray(self._run(Image.fromarray(image), params), dtype=np.uint8)


@TRANSFORM_REGISTRY.register()
class RandAugment(_PolicyOp):
    """timm's RandAugment via ``flowvision.data.rand_augment_transform(config_str, hparams)``.

    ``config_str`` like ``"rand-m9-mstd0.5-inc1"``; ``hparams`` as in LiBai's ImageNet config
    (``translate_const``, ``img_mean``, ``interpolation``, where ``interpolation`` may be a name:
    ``"bilinear"``, ``"bicubic"``, ``"nearest"``). Accepts RGB uint8 images.
    """

    def __init__(
        self, config_str: str = "rand-m9-mstd0.5-inc1", hparams: Optional[Dict[str, Any]] = None
    ) -> None:
        from flowvision.data import rand_augment_transform

        self._build(rand_augment_transform, config_str, hparams)


@TRANSFORM_REGISTRY.register()
class AutoAugment(_PolicyOp):
    """timm's AutoAugment via ``flowvision.data.auto_augment_transform`` (``config_str`` like
    ``"original-mstd0.5"`` or ``"v0"``). Accepts RGB uint8 images."""

    def __init__(self, config_str: str = "v0", hparams: Optional[Dict[str, Any]] = None) -> None:
        from flowvision.data import auto_augment_transform

        self._build(auto_augment_transform, config_str, hparams)


@TRANSFORM_REGISTRY.register()
class RandomErasing(_SeededOp):
    """timm's Random Erasing via ``flowvision.data.RandomErasing`` (same arguments).

    flowvision erases a ``(C, H, W)`` tensor, normally after ``Normalize``; this wrapper takes
    that, or an ``(H, W[, C])`` float32 array (uint8 arrays go through ``[0, 1]`` floats and
    back, so random fills are clipped). The input is never modified in place. ``device``
    defaults to ``"cpu"`` (flowvision's default, ``"cuda"``, fails on a CPU-only machine).
    """

    def __init__(
        self,
        probability: float = 0.5,
        min_area: float = 0.02,
        max_area: float = 1 / 3,
        min_aspect: float = 0.3,
        max_aspect: Optional[float] = None,
        mode: str = "const",
        min_count: int = 1,
        max_count: Optional[int] = None,
        num_splits: int = 0,
        device: str = "cpu",
    ) -> None:
        from flowvision.data import RandomErasing as _FlowVisionErasing

        if mode not in ("const", "rand", "pixel"):
            raise ValueError(f"RandomErasing mode must be 'const', 'rand' or 'pixel', got {mode!r}")
        self.probability, self.mode, self.device = float(probability), mode, device
        self._op = _FlowVisionErasing(
            probability=probability,
            min_area=min_area,
            max_area=max_area,
            min_aspect=min_aspect,
            max_aspect=max_aspect,
            mode=mode,
            min_count=min_count,
            max_count=max_count,
            num_splits=num_splits,
            device=device,
        )

    def apply(self, image: Any, params: int) -> Any:
        import oneflow as flow

        if is_tensor(image):
            return self._run(image.clone(), params)
        array = check_image(image, "RandomErasing")
        x = to_float(array)
        chw = x[None] if x.ndim == 2 else np.transpose(x, (2, 0, 1))
        erased = self._run(flow.tensor(np.ascontiguousarray(chw)), params).numpy()
        out = erased[0] if x.ndim == 2 else np.transpose(erased, (1, 2, 0))
        return from_float(out, np.uint8) if array.dtype == np.uint8 else np.ascontiguousarray(out)


def _pil_hparams(hparams: Dict[str, Any]) -> Dict[str, Any]:
    """Config-friendly ``hparams`` (lists, filter names) in the types flowvision expects."""
    out = dict(hparams)
    if "img_mean" in out:
        out["img_mean"] = tuple(int(round(v)) for v in out["img_mean"])
    name = out.get("interpolation")
    if isinstance(name, str):
        if name.lower() not in _PIL_FILTERS:
            raise ValueError(
                f"hparams interpolation must be one of {sorted(_PIL_FILTERS)}, got {name!r}"
            )
        out["interpolation"] = _PIL_FILTERS[name.lower()]
    return out
