"""LiBai's keywords on the image datasets, and the trainer handing the tokenizer to the
dataset nodes of LiBai's configs (which never name a ``tokenizer`` key)."""
import pickle

import numpy as np
import pytest
from omegaconf import OmegaConf

from libai.config import LazyCall
from libai.data import build_nlp_test_loader
from libai.data.datasets import CIFAR100Dataset, MNISTDataset
from libai.engine.default_trainer import DefaultTrainer


def test_cifar100_accepts_download_and_reads_local_files(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    data = np.random.default_rng(0).integers(0, 256, size=(3, 3072), dtype=np.uint8)
    with open(folder / "test", "wb") as handle:
        pickle.dump({b"data": data, b"fine_labels": [7, 8, 9]}, handle)
    # LiBai's order: (root, train, transform, download)
    ds = CIFAR100Dataset(str(tmp_path), False, None, True)
    assert ds.download is True and [int(ds[i].labels.tensor) for i in range(3)] == [7, 8, 9]


@pytest.mark.parametrize("cls", [CIFAR100Dataset, MNISTDataset])
def test_download_true_with_missing_files_says_nothing_is_downloaded(cls, tmp_path):
    with pytest.raises(FileNotFoundError, match="download=True was given, but libai never downloads"):
        cls(str(tmp_path), train=True, download=True)


class _Recorder:
    """A dataset that keeps the tokenizer it was given."""

    def __init__(self, size: int = 4, tokenizer=None):
        self.size, self.tokenizer = size, tokenizer

    def __len__(self):
        return self.size

    def __getitem__(self, i):
        return i


class _NoTokenizer(_Recorder):
    def __init__(self, size: int = 4):
        super().__init__(size)


def _cfg(dataset_node):
    cfg = OmegaConf.create({"train": {"test_micro_batch_size": 2, "seed": 3}})
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.test = [LazyCall(build_nlp_test_loader)(dataset=dataset_node, num_workers=0)]
    return cfg


def test_tokenizer_reaches_a_dataset_node_that_does_not_name_it():
    tokenizer = object()
    node = LazyCall(_Recorder)(size=4)  # as in LiBai's configs: no tokenizer key
    (loader,) = DefaultTrainer.build_test_loader(_cfg(node), tokenizer)
    assert loader.dataset.tokenizer is tokenizer
    assert "tokenizer" not in node  # the config itself is left as it was


def test_tokenizer_is_not_forced_on_a_dataset_that_takes_none():
    (loader,) = DefaultTrainer.build_test_loader(_cfg(LazyCall(_NoTokenizer)(size=4)), object())
    assert isinstance(loader.dataset, _NoTokenizer) and loader.dataset.tokenizer is None
