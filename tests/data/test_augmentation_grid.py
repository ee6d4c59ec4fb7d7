"""The visual check: tiling, display conversion, pipelines from files and tools/augment_grid.py."""

import os
import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

import libai  # noqa: F401  (before oneflow)
import oneflow as flow

from libai.data.augmentation import (
    AugmentationPipeline,
    augment_grid,
    get_preset,
    load_pipeline,
    tile_images,
    to_display,
)

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

YAML_PIPELINE = """\
pipeline:
  keys: [image]
  transforms:
    - {name: Resize, target_size: [32, 40], interpolation: INTER_AREA}
    - {name: RandomFlip, direction: [horizontal, vertical], p: 0.5}
    - {name: RandomColorJitter, brightness_limit: [0.6, 1.2], brightness_p: 0.6}
"""

PY_PIPELINE = """\
from libai.config import LazyCall
from libai.data.augmentation import AugmentationPipeline

pipeline = LazyCall(AugmentationPipeline)(
    transforms=[dict(name="Resize", target_size=[32, 40]), dict(name="RandomFlip", p=0.5)],
)
"""


def test_tile_images_layout():
    tiles = [np.full((3, 4, 3), v, dtype=np.uint8) for v in (10, 20, 30, 40, 50)]
    grid = tile_images(tiles, ncol=2, pad=1, background=255)
    assert grid.shape == (3 * 3 + 4, 2 * 4 + 3, 3)
    assert np.all(grid[1:4, 1:5] == 10) and np.all(grid[1:4, 6:10] == 20)
    assert np.all(grid[9:12, 1:5] == 50) and np.all(grid[9:12, 6:10] == 255)  # empty last cell
    assert np.all(grid[0] == 255) and np.all(grid[:, 5] == 255)  # padding lines


def test_to_display_conversions():
    chw = flow.tensor(np.full((3, 2, 2), 0.5, dtype=np.float32))
    np.testing.assert_array_equal(to_display(chw), np.full((2, 2, 3), 128, np.uint8))
    normalized = np.array([[-2.0, 0.0], [1.0, 2.0]], dtype=np.float32)  # stretched to 0..255
    np.testing.assert_array_equal(to_display(normalized)[..., 0], [[0, 128], [191, 255]])


def test_augment_grid_is_fixed_by_the_seed():
    image = np.random.default_rng(0).integers(0, 256, (24, 30, 3), dtype=np.uint8)
    grid_a = augment_grid(
        image, AugmentationPipeline(get_preset("flip_resize_jitter"), seed=0), n=4
    )
    grid_b = augment_grid(
        image, AugmentationPipeline(get_preset("flip_resize_jitter"), seed=0), n=4
    )
    grid_c = augment_grid(
        image, AugmentationPipeline(get_preset("flip_resize_jitter"), seed=1), n=4
    )
    assert grid_a.shape == (2 * 256 + 3 * 2, 2 * 256 + 3 * 2, 3)
    np.testing.assert_array_equal(grid_a, grid_b)
    assert not np.array_equal(grid_a, grid_c)


def test_load_pipeline_from_yaml_py_and_presets(tmp_path):
    image = np.random.default_rng(0).integers(0, 256, (20, 25, 3), dtype=np.uint8)
    (tmp_path / "aug.yaml").write_text(YAML_PIPELINE)
    (tmp_path / "aug.py").write_text(PY_PIPELINE)
    from_yaml = load_pipeline(str(tmp_path / "aug.yaml"), seed=3)
    from_py = load_pipeline(str(tmp_path / "aug.py"), seed=3)
    assert from_yaml.seed == 3 and [type(t).__name__ for t in from_yaml.transforms] == [
        "Resize",
        "RandomFlip",
        "RandomColorJitter",
    ]
    assert from_py(image).shape == from_yaml(image).shape == (32, 40, 3)
    with pytest.raises(KeyError, match="did you mean 'randaugment'"):
        load_pipeline("randaugmnt")
    with pytest.raises(FileNotFoundError, match="no pipeline config file"):
        load_pipeline(str(tmp_path / "missing.yaml"))


def test_tool_writes_a_png_of_the_expected_size(tmp_path):
    (tmp_path / "aug.yaml").write_text(YAML_PIPELINE)
    output = tmp_path / "grid.png"
    command = [
        sys.executable,
        os.path.join(REPO, "tools", "augment_grid.py"),
        "--sample",
        "flower.jpg",
        "--pipeline",
        str(tmp_path / "aug.yaml"),
        "--n",
        "5",
        "--seed",
        "0",
        "--output",
        str(output),
    ]
    result = subprocess.run(command, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    with Image.open(output) as png:
        assert png.format == "PNG" and png.mode == "RGB"
        # 5 tiles of 32 x 40 in ceil(sqrt(5)) = 3 columns and 2 rows, 2-pixel padding.
        assert png.size == (3 * 40 + 4 * 2, 2 * 32 + 3 * 2)
        pixels = np.asarray(png)
    # The tool's grid is the library's grid of scikit-learn's image under the same seed.
    from sklearn.datasets import load_sample_image

    expected = augment_grid(
        load_sample_image("flower.jpg"), load_pipeline(str(tmp_path / "aug.yaml"), seed=0), n=5
    )
    np.testing.assert_array_equal(pixels, expected)
