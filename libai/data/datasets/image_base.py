"""What every image-classification dataset shares: turning (image, label) into a sample.

Subclasses only know how to find and decode their files; this base decides the sample's shape:
``Instance(<image_field>=DistTensorData(image), <label_field>=DistTensorData(label,
placement_idx=-1))``. The label lives on the last pipeline stage because only the loss reads it.
Field names are constructor arguments because they must equal the model's ``forward``
argument names (``images`` / ``labels`` by default).
"""
from typing import Any, Callable, Optional

import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.structures import DistTensorData, Instance
from libai.data.transforms import apply_transform

__all__ = ["ImageClassificationDataset"]


class ImageClassificationDataset(Dataset):
    """Base of the image datasets: a ``transform`` and the two field names.

    Args:
        transform: called on a PIL image; should return a ``(C, H, W)`` tensor (a PIL image or
            array is converted with :func:`libai.data.transforms.image_to_tensor`).
        image_field: name of the image field of each sample.
        label_field: name of the label field of each sample.
    """

    def __init__(
        self,
        transform: Optional[Callable[[Any], Any]] = None,
        image_field: str = "images",
        label_field: str = "labels",
    ) -> None:
        if image_field == label_field:
            raise ValueError(
                f"image_field and label_field must differ, both are {image_field!r}"
            )
        self.transform = transform
        self.image_field = image_field
        self.label_field = label_field

    def make_sample(self, image: Any, label: int) -> Instance:
        """The Instance for one decoded image (PIL) and its integer class."""
        tensor = apply_transform(image, self.transform)
        return Instance(
            **{
                self.image_field: DistTensorData(tensor),
                self.label_field: DistTensorData(
                    flow.tensor(int(label), dtype=flow.long), placement_idx=-1
                ),
            }
        )
