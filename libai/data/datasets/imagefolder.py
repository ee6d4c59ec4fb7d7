"""Class-per-folder image trees (the ImageNet layout): ``root/<class name>/<image file>``.

Classes are the sub-folders of ``root`` sorted by name, numbered from 0; samples are every file
with an accepted extension below a class folder (nested folders included), sorted by path, so the
index of a sample is the same on every machine and every rank.
"""
import os
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from PIL import Image

from libai.data.datasets.image_base import ImageClassificationDataset

__all__ = ["ImageFolderDataset", "scan_image_folder", "IMAGE_EXTENSIONS"]

IMAGE_EXTENSIONS = (".jpg", ".jpeg", ".png", ".bmp", ".webp")


def scan_image_folder(
    root: str, extensions: Sequence[str] = IMAGE_EXTENSIONS
) -> Tuple[List[str], List[Tuple[str, int]]]:
    """Return ``(class names, [(path, class index), ...])`` for a class-per-folder tree."""
    if not os.path.isdir(root):
        raise FileNotFoundError(
            f"image folder {root!r} does not exist; it should hold one sub-folder per class "
            "(root/<class>/<image>.jpg)"
        )
    exts = tuple(e.lower() if e.startswith(".") else "." + e.lower() for e in extensions)
    classes = sorted(e.name for e in os.scandir(root) if e.is_dir())
    if not classes:
        raise ValueError(
            f"{root!r} has no class sub-folders; put each class's images in root/<class name>/"
        )
    samples: List[Tuple[str, int]] = []
    for index, name in enumerate(classes):
        for folder, _, files in sorted(os.walk(os.path.join(root, name))):
            for file in sorted(files):
                if file.lower().endswith(exts):
                    samples.append((os.path.join(folder, file), index))
    if not samples:
        raise ValueError(
            f"no images with extensions {list(exts)} under the class folders of {root!r} "
            f"(classes {classes[:5]}{'...' if len(classes) > 5 else ''})"
        )
    return classes, samples


class ImageFolderDataset(ImageClassificationDataset):
    """Images read lazily from a class-per-folder tree, decoded as RGB with PIL.

    Args:
        root: the folder whose sub-folders are the classes.
        transform: called on a PIL RGB image (see :class:`ImageClassificationDataset`).
        extensions: accepted file extensions (case-insensitive).
        image_field / label_field: sample field names.

    Attributes:
        classes: class names in label order; ``class_to_idx`` maps a name to its label.
        samples: ``(path, label)`` pairs in index order.
    """

    def __init__(
        self,
        root: str,
        transform: Optional[Callable[[Any], Any]] = None,
        extensions: Sequence[str] = IMAGE_EXTENSIONS,
        image_field: str = "images",
        label_field: str = "labels",
    ) -> None:
        super().__init__(transform, image_field, label_field)
        self.root = root
        self.classes, self.samples = scan_image_folder(root, extensions)
        self.class_to_idx: Dict[str, int] = {name: i for i, name in enumerate(self.classes)}

    def __len__(self) -> int:
        return len(self.samples)

    def __getitem__(self, index: int) -> Any:
        path, label = self.samples[index]
        with Image.open(path) as img:
            image = img.convert("RGB")
        return self.make_sample(image, label)
