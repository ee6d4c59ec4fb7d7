"""CIFAR-10/100 from tiny pickle batches written in the standard layout."""
import os
import pickle

import numpy as np
import pytest

from libai.data.datasets import CIFAR10Dataset, CIFAR100Dataset


def write_batch(path, data, labels, label_key):
    with open(path, "wb") as f:
        pickle.dump({b"data": data, label_key.encode(): list(labels), b"batch_label": b"x"}, f)


@pytest.fixture
def cifar10_root(tmp_path):
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    batches = {}
    for name, count in [(f"data_batch_{i}", 2) for i in range(1, 6)] + [("test_batch", 3)]:
        data = rng.integers(0, 256, size=(count, 3072), dtype=np.uint8)
        labels = rng.integers(0, 10, size=count)
        write_batch(folder / name, data, labels, "labels")
        batches[name] = (data, labels)
    return tmp_path, batches


def test_cifar10_pixels_and_labels_match_the_rows(cifar10_root):
    root, batches = cifar10_root
    train = CIFAR10Dataset(str(root), train=True)
    test = CIFAR10Dataset(str(root), train=False)
    assert (len(train), len(test)) == (10, 3)
    rows = np.concatenate([batches[f"data_batch_{i}"][0] for i in range(1, 6)])
    labels = np.concatenate([batches[f"data_batch_{i}"][1] for i in range(1, 6)])
    for i in (0, 3, 9):
        image = train[i].images.tensor.numpy()
        assert image.shape == (3, 32, 32)
        for c, y, x in ((0, 0, 0), (1, 5, 7), (2, 31, 30)):
            # a row is 1024 red, then green, then blue values, each row-major over 32×32
            assert image[c, y, x] == pytest.approx(rows[i, c * 1024 + y * 32 + x] / 255.0)
        assert int(train[i].labels.tensor.item()) == labels[i]
    assert int(test[2].labels.tensor.item()) == batches["test_batch"][1][2]


def test_root_may_be_the_batch_folder_itself(cifar10_root):
    root, _ = cifar10_root
    assert len(CIFAR10Dataset(str(root / "cifar-10-batches-py"), train=False)) == 3


def test_cifar100_uses_fine_labels(tmp_path):
    folder = tmp_path / "cifar-100-python"
    folder.mkdir()
    data = np.arange(2 * 3072, dtype=np.int64).reshape(2, 3072) % 256
    with open(folder / "train", "wb") as f:
        pickle.dump({b"data": data.astype(np.uint8), b"fine_labels": [42, 99],
                     b"coarse_labels": [1, 2]}, f)
    write_batch(folder / "test", data.astype(np.uint8), [7, 8], "fine_labels")
    train = CIFAR100Dataset(str(tmp_path), train=True)
    assert [int(train[i].labels.tensor.item()) for i in range(2)] == [42, 99]
    assert train[1].images.tensor.numpy()[0, 0, 1] == pytest.approx(((3072 + 1) % 256) / 255.0)


def test_missing_batches_list_paths_and_download_hint(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        CIFAR100Dataset(str(tmp_path), train=False)
    message = str(info.value)
    assert os.path.join(str(tmp_path), "cifar-100-python", "test") in message
    assert "cifar-100-python.tar.gz" in message and "by hand" in message


def test_malformed_batch_is_reported(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    write_batch(folder / "test_batch", np.zeros((2, 100), np.uint8), [0, 1], "labels")
    with pytest.raises(ValueError, match=r"\(N, 3072\).*\(2, 100\)"):
        CIFAR10Dataset(str(tmp_path), train=False)
    (folder / "test_batch").write_bytes(b"garbage")
    with pytest.raises(ValueError, match="not a CIFAR pickle batch"):
        CIFAR10Dataset(str(tmp_path), train=False)
