"""SklearnDigits: scikit-learn's bundled 8x8 digits (1,797 images, shipped with the package: no
download) as a registered dataset whose images go through an augmentation pipeline.

``transforms`` is a list of ``dict(name=<TRANSFORM_REGISTRY name>, **params)`` (built by the
config before it arrives here) run by :class:`~libai.data.augmentation.AugmentationPipeline`
on the sample's ``image`` field; end it with ``ToTensor``.
"""
from typing import Any, Optional, Sequence

import numpy as np
import oneflow as flow

from libai.config import DATASET_REGISTRY
from libai.data.augmentation import AugmentationPipeline
from libai.data.structures import DistTensorData, Instance

__all__ = ["SklearnDigits"]


@DATASET_REGISTRY.register()
class SklearnDigits:
    """One split of the digits: a fixed, seeded, stratification-free shuffle cut at
    ``test_fraction``. Images are uint8 ``(8, 8)`` arrays (the 0..16 counts scaled to 0..255)
    before the pipeline.

    Args:
        split: "train" or "test".
        transforms: the augmentation steps; ``[ToTensor]`` at least.
        test_fraction: share of the 1,797 images held out as the test split.
        seed: seeds the split and the pipeline (test images use the sample index as the
            draw seed, so evaluation is identical run to run).
    """

    def __init__(self, split: str = "train", transforms: Sequence[Any] = (dict(name="ToTensor"),),
                 test_fraction: float = 0.2, seed: int = 0) -> None:
        from sklearn.datasets import load_digits

        if split not in ("train", "test"):
            raise ValueError(f"SklearnDigits split must be 'train' or 'test', got {split!r}")
        digits = load_digits()
        order = np.random.default_rng(seed).permutation(len(digits.target))
        cut = int(round(len(order) * (1.0 - test_fraction)))
        chosen = order[:cut] if split == "train" else order[cut:]
        self.images = (digits.images[chosen] * (255.0 / 16.0)).round().astype(np.uint8)
        self.labels = digits.target[chosen].astype(np.int64)
        self.split = split
        self.pipeline = AugmentationPipeline(list(transforms), keys=("image",), seed=seed)

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> Instance:
        draw_seed: Optional[int] = index if self.split == "test" else None
        image = self.pipeline({"image": self.images[index]}, seed=draw_seed)["image"]
        if not isinstance(image, flow.Tensor):
            raise TypeError("SklearnDigits: end the transforms with dict(name='ToTensor')")
        return Instance(
            images=DistTensorData(image),
            labels=DistTensorData(flow.tensor(int(self.labels[index]), dtype=flow.long), placement_idx=-1),
        )
