"""build_image_transforms and image_to_tensor."""
import numpy as np
import pytest
from PIL import Image

import oneflow as flow

from libai.data.transforms import build_image_transforms, image_to_tensor


def constant_image(h, w, rgb):
    return Image.fromarray(np.tile(np.array(rgb, np.uint8), (h, w, 1)))


def test_eval_resizes_crops_and_normalizes():
    mean, std = (0.5, 0.25, 0.0), (0.5, 0.25, 1.0)
    transform = build_image_transforms(False, size=16, mean=mean, std=std, crop_pct=0.8)
    out = transform(constant_image(30, 40, (255, 51, 102))).numpy()
    assert out.shape == (3, 16, 16)
    for c, value in enumerate((255, 51, 102)):
        assert np.allclose(out[c], (value / 255.0 - mean[c]) / std[c], atol=1e-5)


def test_train_without_crop_or_flip_is_exact_normalisation():
    array = np.random.default_rng(0).integers(0, 256, size=(7, 9), dtype=np.uint8)
    transform = build_image_transforms(True, size=7, mean=[0.1], std=[0.2], crop="none", hflip=0)
    out = transform(Image.fromarray(array)).numpy()
    assert np.allclose(out[0], (array / 255.0 - 0.1) / 0.2, atol=1e-5)


@pytest.mark.parametrize("crop,height,width", [("resized", 20, 14), ("pad", 12, 12)])
def test_train_crops_give_the_requested_size(crop, height, width):
    transform = build_image_transforms(True, size=12, crop=crop)
    assert tuple(transform(constant_image(height, width, (1, 2, 3))).shape) == (3, 12, 12)


def test_flip_with_probability_one_mirrors():
    array = np.arange(12, dtype=np.uint8).reshape(3, 4) * 20
    transform = build_image_transforms(True, size=4, mean=[0.0], std=[1.0], crop="none", hflip=1.0)
    assert np.allclose(transform(Image.fromarray(array)).numpy()[0], array[:, ::-1] / 255.0)


@pytest.mark.parametrize(
    "kwargs,match",
    [
        ({"mean": [0.5, 0.5], "std": [0.5, 0.5]}, "one value per channel"),
        ({"crop": "random"}, "crop must be one of"),
        ({"hflip": 2.0}, "hflip is a probability"),
        ({"interpolation": "lanczos"}, "interpolation must be one of"),
        ({"std": [0.0, 1.0, 1.0]}, "std values must be positive"),
    ],
)
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        build_image_transforms(True, size=8, **kwargs)


def test_image_to_tensor_layouts():
    rgb = np.arange(2 * 3 * 3, dtype=np.uint8).reshape(2, 3, 3)
    from_pil = image_to_tensor(Image.fromarray(rgb)).numpy()
    assert from_pil.shape == (3, 2, 3) and np.allclose(from_pil, rgb.transpose(2, 0, 1) / 255.0)
    chw = np.ones((1, 4, 5), np.float32) * 2
    assert np.array_equal(image_to_tensor(chw).numpy(), chw)  # arrays are channels-first
    assert tuple(image_to_tensor(np.zeros((4, 5), np.uint8)).shape) == (1, 4, 5)
    tensor = flow.zeros(3, 2, 2)
    assert image_to_tensor(tensor) is tensor
    with pytest.raises(TypeError, match="cannot turn"):
        image_to_tensor(np.zeros((1, 2, 3, 4)))
