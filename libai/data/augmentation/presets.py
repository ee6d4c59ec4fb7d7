"""Named, ready-made pipelines, and turning a preset name or a config file into a pipeline.

Presets stop before ``Normalize`` / ``ToTensor`` so their output can be looked at
(``tools/augment_grid.py``); a training recipe appends those two.
"""

import copy
import difflib
import os
from collections.abc import Mapping
from typing import Any, Dict, List, Optional

from libai.data.augmentation.pipeline import AugmentationPipeline

__all__ = ["PRESETS", "get_preset", "load_pipeline"]

_IMAGENET_MEAN_255 = (124, 116, 104)


def _imagenet_crop_flip() -> List[Dict[str, Any]]:
    """LiBai's ImageNet training crop and flip, which its policy presets start with (new dicts
    on each call, so that no two presets share one)."""
    return [
        dict(name="RandomResizedCrop", size=224, scale=[0.08, 1.0], interpolation="INTER_CUBIC"),
        dict(name="RandomFlip", direction="horizontal", p=0.5),
    ]


PRESETS: Dict[str, List[Dict[str, Any]]] = {
    # The pipeline of the registry-style framework's configs, parameter for parameter.
    "flip_resize_jitter": [
        dict(name="RandomFlip", direction=["horizontal", "vertical", "diagonal"], p=0.5),
        dict(
            name="Resize",
            target_size=256,
            interpolation="INTER_LINEAR",
            keep_ratio=False,
            clip_border=True,
        ),
        dict(
            name="RandomColorJitter",
            brightness_limit=[0.6, 1.2],
            brightness_p=0.6,
            contrast_limit=[0.6, 1.4],
            contrast_p=0.6,
            saturation_limit=[0.6, 1.4],
            saturation_p=0.5,
            hue_limit=[-0.1, 0.1],
            hue_p=0.05,
            blur_limit=[3, 7],
            blur_p=0.2,
            gamma_limit=[0.3, 3.0],
            gamma_p=0.1,
        ),
    ],
    # LiBai's ImageNet training augmentation (RandAugment "rand-m9-mstd0.5-inc1"), before
    # ToTensor/Normalize/RandomErasing.
    "randaugment": [
        *_imagenet_crop_flip(),
        dict(
            name="RandAugment",
            config_str="rand-m9-mstd0.5-inc1",
            hparams=dict(
                translate_const=int(224 * 0.45),
                img_mean=_IMAGENET_MEAN_255,
                interpolation="bicubic",
            ),
        ),
    ],
    "autoaugment": [
        *_imagenet_crop_flip(),
        dict(
            name="AutoAugment",
            config_str="original-mstd0.5",
            hparams=dict(img_mean=_IMAGENET_MEAN_255),
        ),
    ],
    "random_erasing": [
        dict(name="Resize", target_size=224, keep_ratio=True, clip_border=True),
        dict(name="RandomErasing", probability=0.5, mode="const", max_count=2),
    ],
}


def get_preset(name: str) -> List[Dict[str, Any]]:
    """A copy of the transform list of preset ``name``."""
    if name not in PRESETS:
        close = difflib.get_close_matches(name, list(PRESETS), n=1, cutoff=0.5)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise KeyError(
            f"no augmentation preset {name!r}; {hint}presets: {', '.join(sorted(PRESETS))}"
        )
    return copy.deepcopy(PRESETS[name])


def load_pipeline(spec: str, seed: Optional[int] = None) -> AugmentationPipeline:
    """A pipeline from a preset name or a config file (``.py``, ``.yaml``, ``.yml``, ``.json``).

    The file defines ``pipeline`` (a list of transform dicts; a dict of
    :class:`AugmentationPipeline` arguments; a ``LazyCall`` node) or ``transforms`` (a list).
    ``seed`` replaces the pipeline's own seed.
    """
    if not os.path.splitext(spec)[1]:
        return AugmentationPipeline(get_preset(spec), seed=seed)
    from libai.config import LazyConfig, instantiate, is_node

    if not os.path.isfile(spec):
        raise FileNotFoundError(
            f"no pipeline config file {spec!r} (or give a preset: {', '.join(sorted(PRESETS))})"
        )
    cfg = LazyConfig.load(spec)
    value = cfg.get("pipeline", cfg.get("transforms"))
    if value is None:
        raise KeyError(
            f"{spec} defines neither 'pipeline' nor 'transforms' (a list of dict(name=..., ...))"
        )
    if is_node(value):
        value = instantiate(value)
    if isinstance(value, AugmentationPipeline):
        return AugmentationPipeline(value.transforms, keys=value.keys, seed=seed)
    if isinstance(value, Mapping):
        args = {k: v for k, v in value.items() if k not in ("name", "seed")}
        return AugmentationPipeline(**args, seed=seed)
    return AugmentationPipeline(list(value), seed=seed)
