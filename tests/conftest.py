"""Shared test set-up: import libai first (it makes OneFlow's libraries loadable) and give
every test a clean parallel-layout stack."""
import os
import sys

import pytest

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)

import libai  # noqa: E402,F401  (must precede oneflow)
from libai.utils import distributed as dist  # noqa: E402


@pytest.fixture(autouse=True)
def _clean_layouts():
    dist.reset_layouts()
    yield
    dist.reset_layouts()


@pytest.fixture
def local_layout():
    """A one-process layout on the CPU, entered for the test."""
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        yield layout


@pytest.fixture(scope="session")
def digits_dir(tmp_path_factory):
    """scikit-learn's real digits written as MNIST IDX files (about 1,400 train, 360 test)."""
    from libai.data.datasets.mnist import make_digits_mnist

    root = str(tmp_path_factory.mktemp("digits"))
    make_digits_mnist(root, test_fraction=0.2, seed=0)
    return root
