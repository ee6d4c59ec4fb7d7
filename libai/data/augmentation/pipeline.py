"""AugmentationPipeline: a list of transforms run on the image fields of a sample, seeded."""

import os
from collections.abc import Mapping
from typing import Any, Dict, Iterable, List, Optional, Sequence, Tuple, Union

import numpy as np

from libai.config.registry import TRANSFORM_REGISTRY
from libai.data.augmentation.base import FunctionTransform, Transform, is_tensor
from libai.data.augmentation.image import as_image

__all__ = ["AugmentationPipeline", "Compose", "build_transform"]

TransformSpec = Union[Transform, Dict[str, Any], Any]


def build_transform(spec: TransformSpec) -> Transform:
    """A transform from ``dict(name="RandomFlip", **params)``, a :class:`Transform`, or any
    ``image -> image`` callable (run on each image field, with no randomness of ours)."""
    if isinstance(spec, Transform):
        return spec
    if isinstance(spec, AugmentationPipeline):
        return _NestedPipeline(spec)
    if isinstance(spec, Mapping):
        params = _plain(spec)
        if "name" not in params:
            raise ValueError(
                f"a transform given as a dict needs a 'name' key naming a registered transform "
                f"(e.g. dict(name='RandomFlip', p=0.5)), got keys {sorted(params)}"
            )
        name = params.pop("name")
        cls = TRANSFORM_REGISTRY.get(name)
        try:
            built = cls(**params)
        except TypeError as err:
            raise TypeError(f"transform {name!r}: {err}") from err
        return build_transform(built)
    if callable(spec):
        return FunctionTransform(spec)
    raise TypeError(
        f"a pipeline step must be dict(name=..., **params), a Transform or a callable, got {spec!r}"
    )


@TRANSFORM_REGISTRY.register()
class AugmentationPipeline:
    """Run ``transforms`` in order on the ``keys`` fields of a sample dict (or on one image).

    Each transform's random parameters are drawn once per sample and applied to every field in
    ``keys``, so paired images stay aligned; other fields pass through. Draws come from a NumPy
    ``Generator`` owned by the pipeline:

    - ``pipeline(sample, seed=i)`` uses a generator seeded from ``(seed, i)``: the output
      depends only on the pipeline's seed and ``i`` (e.g. the dataset index), never on which
      DataLoader worker runs it or in what order;
    - ``pipeline(sample)`` draws from the pipeline's own stream, seeded from ``seed`` and the
      DataLoader worker id (workers do not repeat each other), or from fresh entropy when
      ``seed`` is None.

    Args:
        transforms: steps, each ``dict(name=..., **params)`` naming a ``TRANSFORM_REGISTRY``
            entry, a :class:`Transform`, or an ``image -> image`` callable.
        keys: names of the image fields of a sample dict.
        seed: base seed of every draw; None for non-reproducible augmentation.
    """

    def __init__(
        self,
        transforms: Iterable[TransformSpec],
        keys: Union[str, Sequence[str]] = ("image",),
        seed: Optional[int] = None,
    ) -> None:
        self.transforms: List[Transform] = [build_transform(t) for t in transforms]
        self.keys: Tuple[str, ...] = (keys,) if isinstance(keys, str) else tuple(keys)
        if not self.keys:
            raise ValueError("keys must name at least one image field")
        if seed is not None and int(seed) < 0:
            raise ValueError(f"seed must be a non-negative integer or None, got {seed}")
        self.seed = None if seed is None else int(seed)
        self._rng: Optional[np.random.Generator] = None
        self._rng_owner: Optional[Tuple[int, int]] = None

    def __call__(self, sample: Any, seed: Optional[int] = None) -> Any:
        """A new sample dict with the image fields transformed, or the transformed image when
        ``sample`` is a single image (PIL image or array), as a dataset's ``transform``."""
        rng = self.generator(seed)
        if not isinstance(sample, Mapping):
            return self._run({"_": _as_input(sample)}, ("_",), rng)["_"]
        missing = [k for k in self.keys if k not in sample]
        if missing:
            raise KeyError(
                f"AugmentationPipeline: the sample has no field {missing[0]!r} (it has "
                f"{sorted(sample)}); set keys= to the names of its image fields"
            )
        out = dict(sample)
        out.update(self._run({k: _as_input(sample[k]) for k in self.keys}, self.keys, rng))
        return out

    def _run(
        self, images: Dict[str, Any], keys: Sequence[str], rng: np.random.Generator
    ) -> Dict[str, Any]:
        for transform in self.transforms:
            params = transform.sample(rng, images[keys[0]])
            for key in keys:
                images[key] = transform.apply(images[key], params)
        return images

    def generator(self, seed: Optional[int] = None) -> np.random.Generator:
        """The generator a call with this per-sample ``seed`` draws from (see the class doc)."""
        if seed is not None:
            if int(seed) < 0:
                raise ValueError(f"a per-sample seed must be non-negative, got {seed}")
            entropy = [int(seed)] if self.seed is None else [self.seed, int(seed)]
            return np.random.default_rng(np.random.SeedSequence(entropy))
        owner = (os.getpid(), _worker_id())
        if self._rng is None or self._rng_owner != owner:
            # A forked worker inherits the parent's generator: re-derive it per worker.
            sequence = np.random.SeedSequence(self.seed, spawn_key=(owner[1] + 1,))
            self._rng, self._rng_owner = np.random.default_rng(sequence), owner
        return self._rng

    def __getstate__(self) -> Dict[str, Any]:
        state = dict(self.__dict__)
        state["_rng"], state["_rng_owner"] = None, None  # a worker derives its own stream
        return state

    def __repr__(self) -> str:
        steps = "".join(f"\n    {t!r}," for t in self.transforms)
        return f"AugmentationPipeline(keys={self.keys}, seed={self.seed}, transforms=[{steps}\n])"


class _NestedPipeline(Transform):
    """A pipeline used as one step of another: it draws its per-sample seed from the outer
    pipeline's generator, so nesting keeps both reproducibility and paired alignment."""

    def __init__(self, pipeline: AugmentationPipeline) -> None:
        self.pipeline = pipeline

    def sample(self, rng: np.random.Generator, image: Any) -> int:
        return int(rng.integers(0, 2**63 - 1))

    def apply(self, image: Any, params: int) -> Any:
        return self.pipeline(image, seed=params)

    def __repr__(self) -> str:
        return repr(self.pipeline)


# The name registry-style and torchvision-style configs use for the same thing.
Compose = AugmentationPipeline
TRANSFORM_REGISTRY.register(AugmentationPipeline, name="Compose")


def _as_input(image: Any) -> Any:
    return image if is_tensor(image) else as_image(image)


def _worker_id() -> int:
    """The DataLoader worker id in a worker process, -1 in the main process."""
    from oneflow.utils.data import get_worker_info

    info = get_worker_info()
    return -1 if info is None else int(info.id)


def _plain(spec: Mapping) -> Dict[str, Any]:
    """A mapping (OmegaConf DictConfig included) as a plain dict of plain values."""
    from omegaconf import DictConfig, OmegaConf

    if isinstance(spec, DictConfig):
        return dict(OmegaConf.to_container(spec, resolve=True))
    return dict(spec)
