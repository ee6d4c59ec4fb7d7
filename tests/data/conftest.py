"""Small on-disk image datasets made in the test session (nothing is downloaded)."""
import numpy as np
import pytest
from PIL import Image

from tests.data.index_dataset import IndexDataset


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
