"""ImageNet-2012 classification in its usual folder layout: ``root/{train,val}/<wnid>/*.JPEG``.

``ImageNetDataset(root, train=True)`` is an :class:`ImageFolderDataset` over ``root/train`` (or
``root/val``) — LiBai's name and signature. How to arrange the official archives into that
layout (the validation images must be sorted into class folders) is in
``docs/prepare_image_data.md``; nothing is downloaded.
"""
import os
from typing import Any, Callable, Optional

from libai.data.datasets.imagefolder import ImageFolderDataset

__all__ = ["ImageNetDataset"]


class ImageNetDataset(ImageFolderDataset):
    """The ``train`` or ``val`` split of an ImageNet-style tree under ``root``.

    Args:
        root: the folder holding ``train/`` and ``val/``.
        train: read ``train/`` (True) or ``val/`` (False).
        transform: called on each PIL RGB image (see :class:`ImageFolderDataset`).
        kwargs: any other :class:`ImageFolderDataset` argument (``extensions``, field names).
    """

    def __init__(
        self,
        root: str,
        train: bool = True,
        transform: Optional[Callable[[Any], Any]] = None,
        **kwargs: Any,
    ) -> None:
        self.train = bool(train)
        super().__init__(os.path.join(root, "train" if train else "val"), transform, **kwargs)
