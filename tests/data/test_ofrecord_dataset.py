"""OFRecord: image folder → part files (tool) → images and labels back, by us and by OneFlow."""
import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import oneflow as flow

from libai.data.datasets import ImageFolderDataset, OFRecordImageDataset
from libai.data.datasets.ofrecord import (
    OFRecordPartWriter,
    convert_image_folder_to_ofrecord,
    iter_ofrecord_file,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOOL = os.path.join(REPO, "tools", "images_to_ofrecord.py")


@pytest.fixture(scope="module")
def records(img_png_tree, tmp_path_factory):
    root, _ = img_png_tree
    out = tmp_path_factory.mktemp("ofrecord") / "train"
    result = subprocess.run(
        [sys.executable, TOOL, "--input-dir", str(root), "--output-dir", str(out),
         "--num-parts", "2"],
        capture_output=True, text=True, timeout=120,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "wrote 7 images of 3 classes into 2 part file(s)" in result.stdout
    return out


def test_tool_help_runs():
    result = subprocess.run([sys.executable, TOOL, "--help"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 0 and "--num-parts" in result.stdout


def test_round_trip_gives_back_the_same_images_and_labels(records, img_png_tree):
    root, arrays = img_png_tree
    folder = ImageFolderDataset(str(root))
    dataset = OFRecordImageDataset(str(records))
    assert sorted(os.listdir(records)) == ["classes.txt", "part-00000", "part-00001"]
    assert dataset.classes == folder.classes and len(dataset) == len(folder)
    for i, (path, label) in enumerate(folder.samples):
        sample = dataset[i]
        expected = arrays[path].transpose(2, 0, 1) / 255.0
        assert np.allclose(sample.images.tensor.numpy(), expected, atol=1e-6)
        assert int(sample.labels.tensor.item()) == label
        assert sample.labels.placement_idx == -1


def test_oneflow_native_reader_reads_our_parts(records, img_png_tree):
    root, _ = img_png_tree
    folder = ImageFolderDataset(str(root))
    reader = flow.nn.OFRecordReader(
        str(records), batch_size=len(folder), data_part_num=2, part_name_suffix_length=5
    )
    batch = reader()
    labels = flow.nn.OFRecordRawDecoder("class/label", shape=(), dtype=flow.int32)(batch)
    assert labels.tolist() == [label for _, label in folder.samples]
    encoded = flow.nn.OFRecordBytesDecoder("encoded")(batch).numpy()
    for (path, _), payload in zip(folder.samples, encoded):
        with open(path, "rb") as f:
            assert payload.tobytes() == f.read()  # stored unchanged


def test_shuffle_is_a_seeded_permutation(img_png_tree, tmp_path):
    root, _ = img_png_tree
    labels = {}
    for name, seed in (("a", 5), ("b", 5), ("c", 6)):
        convert_image_folder_to_ofrecord(str(root), str(tmp_path / name), shuffle=True, seed=seed)
        records = list(iter_ofrecord_file(str(tmp_path / name / "part-00000")))
        labels[name] = [r.feature["encoded"].bytes_list.value[0] for r in records]
    assert labels["a"] == labels["b"] and labels["a"] != labels["c"]
    assert sorted(labels["a"]) == sorted(labels["c"])


def test_jpeg_reencoding_decodes_alike_in_oneflow_and_in_the_dataset(tmp_path):
    rng = np.random.default_rng(2)
    for cls in ("a", "b"):
        (tmp_path / "src" / cls).mkdir(parents=True)
        for k in range(2):
            # smooth gradients: what JPEG is made for, so both decoders agree closely
            base = np.linspace(0, 200, 8 * 10 * 3).reshape(8, 10, 3) + rng.integers(0, 40)
            Image.fromarray(base.astype(np.uint8)).save(tmp_path / "src" / cls / f"{k}.png")
    out = tmp_path / "jpeg"
    convert_image_folder_to_ofrecord(str(tmp_path / "src"), str(out), jpeg_quality=95)
    first = next(iter_ofrecord_file(str(out / "part-00000"))).feature["encoded"].bytes_list.value[0]
    assert first[:2] == b"\xff\xd8"  # JPEG start-of-image marker
    batch = flow.nn.OFRecordReader(str(out), batch_size=4, part_name_suffix_length=5)()
    decoded = flow.nn.OFRecordImageDecoder("encoded", color_space="RGB")(batch)
    native = flow.tensor_buffer_to_tensor(decoded, instance_shape=(8, 10, 3), dtype=flow.uint8)
    dataset = OFRecordImageDataset(str(out))
    ours = np.stack([dataset[i].images.tensor.numpy() for i in range(4)])
    assert np.abs(ours - native.numpy().transpose(0, 3, 1, 2) / 255.0).max() <= 3 / 255.0
    labels = [int(dataset[i].labels.tensor.item()) for i in range(4)]
    assert labels == [0, 0, 1, 1]


def test_reader_and_writer_errors(img_png_tree, records, tmp_path):
    root, _ = img_png_tree
    with pytest.raises(FileNotFoundError, match="tools/images_to_ofrecord.py"):
        OFRecordImageDataset(str(tmp_path / "missing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(FileNotFoundError, match="no part files named part-"):
        OFRecordImageDataset(str(tmp_path / "empty"))
    with pytest.raises(FileExistsError, match="already holds part files"):
        convert_image_folder_to_ofrecord(str(root), str(records))
    broken = tmp_path / "broken"
    broken.mkdir()
    data = (records / "part-00000").read_bytes()
    (broken / "part-00000").write_bytes(data[:-3])
    with pytest.raises(ValueError, match="truncated or not an OFRecord part file"):
        OFRecordImageDataset(str(broken))
    with pytest.raises(KeyError, match="no feature 'image'"):
        OFRecordImageDataset(str(records), image_key="image")[0]


def test_part_writer_feature_kinds(tmp_path):
    with OFRecordPartWriter(str(tmp_path / "part-00000")) as writer:
        writer.write({"b": b"xy", "i": [1, 2], "f": 0.5, "bl": [b"a", b"b"]})
    (record,) = list(iter_ofrecord_file(str(tmp_path / "part-00000")))
    assert record.feature["b"].bytes_list.value == [b"xy"]
    assert list(record.feature["i"].int32_list.value) == [1, 2]
    assert list(record.feature["f"].float_list.value) == [0.5]
    assert record.feature["bl"].bytes_list.value == [b"a", b"b"]
    with OFRecordPartWriter(str(tmp_path / "part-00001")) as writer:
        with pytest.raises(TypeError, match="feature 'bad'"):
            writer.write({"bad": {"nested": 1}})
