"""Small on-disk image datasets made in the test session (nothing is downloaded)."""
import numpy as np
import pytest
from PIL import Image

import libai  # noqa: F401  (before oneflow)
import oneflow as flow
from oneflow.utils.data import Dataset

from libai.data.structures import DistTensorData, Instance


class IndexDataset(Dataset):
    """Sample ``i`` carries ``i`` as its label and ``i`` filled into a 2×2 image, so a batch tells
    exactly which indices it holds."""

    def __init__(self, n):
        self.n = n

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        return Instance(
            images=DistTensorData(flow.full((1, 2, 2), float(i))),
            labels=DistTensorData(flow.tensor(i, dtype=flow.long), placement_idx=-1),
        )


@pytest.fixture
def img_index_dataset():
    return IndexDataset


@pytest.fixture(scope="session")
def img_digits_dir(tmp_path_factory):
    """MNIST-format IDX files of scikit-learn's digits (default split)."""
    from libai.data.datasets.mnist import make_digits_mnist

    root = tmp_path_factory.mktemp("digits_mnist")
    make_digits_mnist(str(root))
    return root


@pytest.fixture(scope="session")
def img_png_tree(tmp_path_factory):
    """``root/{bird,cat,dog}/*.png`` with random RGB pixels; returns (root, {path: array})."""
    root = tmp_path_factory.mktemp("png_tree")
    rng = np.random.default_rng(0)
    arrays = {}
    for cls, count in (("cat", 3), ("dog", 2), ("bird", 2)):
        (root / cls).mkdir()
        for k in range(count):
            array = rng.integers(0, 256, size=(5 + k, 6, 3), dtype=np.uint8)
            path = root / cls / f"img{k}.png"
            Image.fromarray(array).save(path)
            arrays[str(path)] = array
    (root / "cat" / "notes.txt").write_text("not an image")
    return root, arrays
