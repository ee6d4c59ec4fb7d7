"""MNIST IDX files: the digits tool, the reader, and its errors."""
import gzip
import os
import subprocess
import sys

import numpy as np
import pytest
from sklearn.datasets import load_digits

from libai.data.datasets import MNISTDataset
from libai.data.datasets.mnist import make_digits_mnist, read_idx, write_idx

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def split_indices(n, test_fraction=0.2, seed=0):
    """The documented split: a permutation from ``seed``; its first part is the test split."""
    order = np.random.default_rng(seed).permutation(n)
    n_test = int(round(n * test_fraction))
    return order[n_test:], order[:n_test]


def test_digits_round_trip_through_idx_and_dataset(img_digits_dir):
    digits = load_digits()
    train_idx, test_idx = split_indices(len(digits.target))
    train = MNISTDataset(str(img_digits_dir), train=True)
    test = MNISTDataset(str(img_digits_dir), train=False)
    assert (len(train), len(test)) == (1438, 359)
    for dataset, source in ((train, train_idx), (test, test_idx)):
        for pos in (0, 1, len(dataset) - 1):
            k = source[pos]
            sample = dataset[pos]
            image = sample.images.tensor.numpy()
            assert image.shape == (1, 28, 28)
            assert int(sample.labels.tensor.item()) == digits.target[k]
            # 8×8 pixel (i, j) with value v (0..16) is a 3×3 block of round(v·255/16) at
            # rows/cols 2+3i .. 4+3i, inside a 2-pixel black margin.
            for i, j in ((0, 0), (3, 4), (5, 2), (7, 7)):
                expected = round(digits.images[k][i, j] * 255 / 16) / 255.0
                block = image[0, 2 + 3 * i:5 + 3 * i, 2 + 3 * j:5 + 3 * j]
                assert np.allclose(block, expected, atol=1e-6)
            assert image[0, :2].max() == 0 and image[0, -2:].max() == 0


def test_every_digit_lands_in_exactly_one_split(img_digits_dir):
    digits = load_digits()
    got = []
    for split in ("train", "t10k"):
        images = read_idx(os.path.join(img_digits_dir, f"{split}-images-idx3-ubyte"))
        labels = read_idx(os.path.join(img_digits_dir, f"{split}-labels-idx1-ubyte"))
        assert images.dtype == np.uint8 and images.shape[1:] == (28, 28)
        small = images[:, 2:26:3, 2:26:3]  # one pixel of each 3×3 block
        got += [(lab, img.tobytes()) for lab, img in zip(labels, small)]
    expected = [
        (t, np.rint(img * 255 / 16).astype(np.uint8).tobytes())
        for t, img in zip(digits.target, digits.images)
    ]
    assert sorted(got) == sorted(expected)


def test_tool_cli_writes_gzip_files_that_the_dataset_reads(tmp_path):
    out = tmp_path / "mnist"
    result = subprocess.run(
        [sys.executable, os.path.join(REPO, "tools", "make_digits_mnist.py"), "--output-dir",
         str(out), "--size", "32", "--test-fraction", "0.5", "--seed", "3", "--gzip"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(os.listdir(out)) == sorted(
        ["train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz",
         "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"]
    )
    test = MNISTDataset(str(out), train=False)
    _, test_idx = split_indices(1797, 0.5, 3)
    assert len(test) == len(test_idx)
    k = test_idx[0]
    # size 32 = 4×8: 4×4 blocks, no margin
    expected = round(load_digits().images[k][4, 4] * 255 / 16) / 255.0
    assert np.allclose(test[0].images.tensor.numpy()[0, 16:20, 16:20], expected)


def test_idx_writer_and_reader_agree(tmp_path):
    array = np.random.default_rng(1).integers(0, 256, size=(3, 4, 5), dtype=np.uint8)
    for name in ("a-idx3-ubyte", "b-idx3-ubyte.gz"):
        write_idx(str(tmp_path / name), array)
        assert np.array_equal(read_idx(str(tmp_path / name)), array)
    raw = (tmp_path / "a-idx3-ubyte").read_bytes()
    assert raw[:4] == bytes([0, 0, 8, 3]) and raw[4:8] == (3).to_bytes(4, "big")
    with gzip.open(tmp_path / "b-idx3-ubyte.gz", "rb") as f:
        assert f.read() == raw


def test_missing_files_name_every_path_and_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as info:
        MNISTDataset(str(tmp_path), train=False)
    message = str(info.value)
    for name in ("t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte"):
        assert os.path.join(str(tmp_path), name) in message
        assert os.path.join(str(tmp_path), name + ".gz") in message
    assert "tools/make_digits_mnist.py" in message and "by hand" in message


def test_corrupt_headers_are_reported(tmp_path, img_digits_dir):
    bad_magic = tmp_path / "x-idx3-ubyte"
    bad_magic.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 20)
    with pytest.raises(ValueError, match="not an IDX file"):
        read_idx(str(bad_magic))
    truncated = tmp_path / "y-idx3-ubyte"
    truncated.write_bytes(bytes([0, 0, 8, 3]) + (10).to_bytes(4, "big") * 3 + b"\x00" * 50)
    with pytest.raises(ValueError, match=r"shape \(10, 10, 10\) \(1000 bytes.*holds 50"):
        read_idx(str(truncated))
    wrong_type = tmp_path / "z-idx1-ubyte"
    wrong_type.write_bytes(bytes([0, 0, 0x0D, 1]) + (1).to_bytes(4, "big") + b"\x00" * 4)
    with pytest.raises(ValueError, match="type code 0x0d"):
        read_idx(str(wrong_type))


def test_image_and_label_counts_must_match(tmp_path):
    write_idx(str(tmp_path / "train-images-idx3-ubyte"), np.zeros((4, 28, 28), np.uint8))
    write_idx(str(tmp_path / "train-labels-idx1-ubyte"), np.zeros((3,), np.uint8))
    with pytest.raises(ValueError, match="holds 4 images but .* holds 3 labels"):
        MNISTDataset(str(tmp_path))


def test_transform_receives_a_grayscale_pil_image(img_digits_dir):
    seen = []

    def transform(image):
        seen.append((image.mode, image.size))
        return np.asarray(image)[None].astype(np.float32)

    sample = MNISTDataset(str(img_digits_dir), transform=transform, image_field="x")[0]
    assert seen == [("L", (28, 28))]
    assert tuple(sample.x.tensor.shape) == (1, 28, 28) and sample.has("labels")


def test_make_digits_rejects_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="test_fraction"):
        make_digits_mnist(str(tmp_path), test_fraction=1.5)
    with pytest.raises(ValueError, match="at least 8"):
        make_digits_mnist(str(tmp_path), size=4)
