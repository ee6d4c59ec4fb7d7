"""What every image-classification dataset shares: turning (image, label) into a sample.

Subclasses only know how to find and decode their files; this base decides the sample's shape:
``Instance(<image_field>=DistTensorData(image), <label_field>=DistTensorData(label,
placement_idx=-1))``. The label lives on the last pipeline stage because only the loss reads it.
Field names are constructor arguments because they must equal the model's ``forward``
argument names (``images`` / ``labels`` by default). :class:`InMemoryImageDataset` adds what the
small datasets read whole into memory share (MNIST, CIFAR): LiBai's ``(root, train, transform,
download)`` arguments and indexing into two arrays.
"""
from typing import Any, Callable, Optional, Tuple

import numpy as np
import oneflow as flow
from oneflow.utils.data import Dataset
from PIL import Image

from libai.data.structures import DistTensorData, Instance
from libai.data.transforms import apply_transform

__all__ = ["ImageClassificationDataset", "InMemoryImageDataset"]


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


class InMemoryImageDataset(ImageClassificationDataset):
    """An image dataset read whole into two arrays when it is built: ``images`` (uint8,
    ``(N, H, W)`` grayscale or ``(N, H, W, 3)`` RGB) and ``labels`` (``(N,)`` integers).

    Subclasses implement :meth:`_read_split`, which finds the split's files under ``self.root``
    and returns the two arrays.

    Args:
        root: the folder holding the dataset's files.
        train: the training split, else the test split.
        transform: see :class:`ImageClassificationDataset`.
        download: LiBai's flag, accepted so its configs run; nothing is downloaded, and
            missing files are an error saying how to get them.
        image_field / label_field: sample field names (the model's ``forward`` arguments).
    """

    def __init__(
        self,
        root: str,
        train: bool = True,
        transform: Optional[Callable[[Any], Any]] = None,
        download: bool = False,
        image_field: str = "images",
        label_field: str = "labels",
    ) -> None:
        super().__init__(transform, image_field, label_field)
        self.root = root
        self.train = bool(train)
        self.download = bool(download)
        self.images, self.labels = self._read_split()

    def _read_split(self) -> Tuple[np.ndarray, np.ndarray]:
        """``(images, labels)`` of the split ``self.train`` names, from files under ``self.root``."""
        raise NotImplementedError(f"{type(self).__name__} must implement _read_split()")

    def __len__(self) -> int:
        return len(self.labels)

    def __getitem__(self, index: int) -> Any:
        # uint8 (H, W) becomes a mode "L" image, (H, W, 3) an RGB one
        return self.make_sample(Image.fromarray(self.images[index]), int(self.labels[index]))
