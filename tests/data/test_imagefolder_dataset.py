"""Class-per-folder PNG trees."""
import os

import numpy as np
import pytest

from libai.data.datasets import ImageFolderDataset


def test_classes_labels_and_pixels(img_png_tree):
    root, arrays = img_png_tree
    dataset = ImageFolderDataset(str(root))
    assert dataset.classes == ["bird", "cat", "dog"]
    assert len(dataset) == 7  # notes.txt is not an image
    for i, (path, label) in enumerate(dataset.samples):
        assert dataset.classes[label] == os.path.basename(os.path.dirname(path))
        sample = dataset[i]
        expected = arrays[path].transpose(2, 0, 1) / 255.0
        assert np.allclose(sample.images.tensor.numpy(), expected, atol=1e-6)
        assert int(sample.labels.tensor.item()) == label
    assert [label for _, label in dataset.samples] == [0, 0, 1, 1, 1, 2, 2]


def test_extensions_filter_and_field_names(img_png_tree):
    root, _ = img_png_tree
    with pytest.raises(ValueError, match=r"no images with extensions \['.jpg'\]"):
        ImageFolderDataset(str(root), extensions=["jpg"])
    sample = ImageFolderDataset(str(root), image_field="pixel_values", label_field="y")[0]
    assert list(sample.get_fields()) == ["pixel_values", "y"]


def test_folder_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        ImageFolderDataset(str(tmp_path / "nope"))
    with pytest.raises(ValueError, match="no class sub-folders"):
        ImageFolderDataset(str(tmp_path))
    with pytest.raises(ValueError, match="must differ"):
        ImageFolderDataset(str(tmp_path), image_field="x", label_field="x")
