"""Image augmentation pipelines on NumPy images, seeded, with registered transform names.

Interface (what configs and datasets code against)::

    from libai.data.augmentation import AugmentationPipeline

    pipeline = AugmentationPipeline(
        transforms=[                      # dict(name=<TRANSFORM_REGISTRY name>, **params),
            dict(name="RandomFlip", direction=["horizontal", "vertical", "diagonal"], p=0.5),
            dict(name="Resize", target_size=256, interpolation="INTER_LINEAR"),
        ],                                # ... or Transform objects, or image -> image callables
        keys=("input", "target"),         # the image fields of a sample dict
        seed=0,                           # None: not reproducible
    )
    out = pipeline({"input": a, "target": b, "label": 3}, seed=index)   # -> a new dict
    image = pipeline(pil_or_array)        # one image in, one image out (a dataset's transform)

- One random draw per sample is applied to every field in ``keys``: paired images stay aligned.
  Other fields pass through unchanged.
- Images are ``(H, W)`` / ``(H, W, C)`` arrays, uint8 (0..255) or float32 (taken as [0, 1]);
  PIL images are converted on entry. Each transform's docstring says which dtypes it accepts.
  ``ToTensor`` ends a pipeline with a float ``(C, H, W)`` OneFlow tensor.
- ``seed=index`` on the call makes the output a function of (pipeline seed, index) alone, so
  DataLoader workers are reproducible; without it the pipeline's own stream is used, derived
  per worker.
- Registered names (``TRANSFORM_REGISTRY``, registered when this package is imported):
  ``RandomFlip``, ``Resize``, ``RandomCrop``, ``CenterCrop``, ``RandomResizedCrop``,
  ``RandomColorJitter``,
  ``Normalize``, ``ToTensor``, ``RandAugment``, ``AutoAugment``, ``RandomErasing``
  (the last three wrap flowvision), and ``AugmentationPipeline`` (also
  ``Compose``) itself. :data:`TRANSFORM_PATHS` gives each name's dotted path, for registries
  that declare entries without importing them.

See docs/augmentation.md.
"""

from libai.data.augmentation.base import FunctionTransform, Transform
from libai.data.augmentation.color import RandomColorJitter
from libai.data.augmentation.geometric import (
    CenterCrop,
    RandomCrop,
    RandomFlip,
    RandomResizedCrop,
    Resize,
)
from libai.data.augmentation.grid import augment_grid, save_png, tile_images, to_display
from libai.data.augmentation.image import INTERPOLATIONS
from libai.data.augmentation.pipeline import AugmentationPipeline, Compose, build_transform
from libai.data.augmentation.policies import AutoAugment, RandAugment, RandomErasing
from libai.data.augmentation.presets import PRESETS, get_preset, load_pipeline
from libai.data.augmentation.tensor import Normalize, ToTensor

__all__ = [
    "AugmentationPipeline",
    "Compose",
    "build_transform",
    "Transform",
    "FunctionTransform",
    "RandomFlip",
    "Resize",
    "RandomCrop",
    "CenterCrop",
    "RandomResizedCrop",
    "RandomColorJitter",
    "Normalize",
    "ToTensor",
    "RandAugment",
    "AutoAugment",
    "RandomErasing",
    "INTERPOLATIONS",
    "PRESETS",
    "get_preset",
    "load_pipeline",
    "augment_grid",
    "tile_images",
    "to_display",
    "save_png",
    "TRANSFORM_PATHS",
]

_PACKAGE = "libai.data.augmentation"
TRANSFORM_PATHS = {
    "AugmentationPipeline": f"{_PACKAGE}.pipeline.AugmentationPipeline",
    "Compose": f"{_PACKAGE}.pipeline.AugmentationPipeline",
    "RandomFlip": f"{_PACKAGE}.geometric.RandomFlip",
    "Resize": f"{_PACKAGE}.geometric.Resize",
    "RandomCrop": f"{_PACKAGE}.geometric.RandomCrop",
    "CenterCrop": f"{_PACKAGE}.geometric.CenterCrop",
    "RandomResizedCrop": f"{_PACKAGE}.geometric.RandomResizedCrop",
    "RandomColorJitter": f"{_PACKAGE}.color.RandomColorJitter",
    "Normalize": f"{_PACKAGE}.tensor.Normalize",
    "ToTensor": f"{_PACKAGE}.tensor.ToTensor",
    "RandAugment": f"{_PACKAGE}.policies.RandAugment",
    "AutoAugment": f"{_PACKAGE}.policies.AutoAugment",
    "RandomErasing": f"{_PACKAGE}.policies.RandomErasing",
}
