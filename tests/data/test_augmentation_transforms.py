"""Each augmentation transform against an independent computation of what it should do."""

import numpy as np
import pytest

import libai  # noqa: F401  (before oneflow)
from libai.data.augmentation import (
    CenterCrop,
    Normalize,
    RandomColorJitter,
    RandomCrop,
    RandomFlip,
    RandomResizedCrop,
    Resize,
    ToTensor,
)

RNG = np.random.default_rng


def _image(h=6, w=8, c=3, dtype=np.uint8, seed=0):
    if dtype == np.uint8:
        return RNG(seed).integers(0, 256, size=(h, w, c), dtype=np.uint8)
    return RNG(seed).random((h, w, c), dtype=np.float32)


def _jitter_only(step, value, **extra):
    """A RandomColorJitter that always applies ``step`` with factor ``value`` and nothing else."""
    kwargs = {
        f"{s}_p": 0.0 for s in ("brightness", "contrast", "saturation", "hue", "blur", "gamma")
    }
    kwargs[f"{step}_p"] = 1.0
    kwargs[f"{step}_limit"] = [value, value]
    kwargs.update(extra)
    return RandomColorJitter(**kwargs)


# ----------------------------------------------------------------------------- RandomFlip
@pytest.mark.parametrize(
    "direction, reference",
    [
        ("horizontal", lambda a: np.flip(a, axis=1)),
        ("vertical", lambda a: np.flip(a, axis=0)),
        ("diagonal", lambda a: np.flip(np.flip(a, axis=0), axis=1)),
    ],
)
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_flip_equals_np_flip(direction, reference, dtype):
    image = _image(dtype=dtype)
    out = RandomFlip(direction=direction, p=1.0)(image, RNG(0))
    assert out.dtype == image.dtype
    np.testing.assert_array_equal(out, reference(image))


def test_flip_probability_zero_one_and_split():
    image = _image()
    for seed in range(20):
        np.testing.assert_array_equal(
            RandomFlip(["horizontal", "vertical"], p=0.0)(image, RNG(seed)), image
        )
    flip = RandomFlip(["horizontal", "vertical", "diagonal"], p=0.6)
    rng = RNG(1)
    drawn = [flip.sample(rng, image) for _ in range(6000)]
    counts = {d: drawn.count(d) for d in ("horizontal", "vertical", "diagonal", None)}
    # Each direction gets p / 3 = 0.2, no flip 0.4 (binomial sd ~ 0.005 at n = 6000).
    assert abs(counts[None] / 6000 - 0.4) < 0.025
    for d in ("horizontal", "vertical", "diagonal"):
        assert abs(counts[d] / 6000 - 0.2) < 0.025
    always_vertical = RandomFlip(["horizontal", "vertical"], p=[0.0, 1.0])
    assert {always_vertical.sample(rng, image) for _ in range(50)} == {"vertical"}


def test_flip_argument_errors():
    with pytest.raises(ValueError, match="direction must be some of"):
        RandomFlip("sideways")
    with pytest.raises(ValueError, match="probability within"):
        RandomFlip("horizontal", p=1.5)
    with pytest.raises(ValueError, match="one probability per direction"):
        RandomFlip(["horizontal", "vertical"], p=[0.7, 0.7])


# ----------------------------------------------------------------------------- Resize
def test_resize_stretch_shapes_and_nearest_pixels():
    image = _image(6, 8)
    assert Resize(5)(image).shape == (5, 5, 3)
    assert Resize((3, 10))(image).shape == (3, 10, 3)
    # Nearest 2x upscaling repeats every pixel twice along each axis.
    up = Resize((12, 16), interpolation="INTER_NEAREST")(image)
    np.testing.assert_array_equal(up, np.repeat(np.repeat(image, 2, axis=0), 2, axis=1))
    # Area 2x downscaling of floats is the mean of each 2x2 block.
    x = _image(6, 8, dtype=np.float32)
    down = Resize((3, 4), interpolation="INTER_AREA")(x)
    np.testing.assert_allclose(down, x.reshape(3, 2, 4, 2, 3).mean(axis=(1, 3)), atol=1e-6)
    assert down.dtype == np.float32


@pytest.mark.parametrize("channels", [None, 1, 4])
def test_resize_keeps_channel_layout(channels):
    image = RNG(0).integers(
        0, 256, size=(6, 8) if channels is None else (6, 8, channels), dtype=np.uint8
    )
    out = Resize((3, 4))(image)
    assert out.shape == ((3, 4) if channels is None else (3, 4, channels))


def test_resize_keep_ratio_math():
    image = _image(40, 100)  # aspect 2.5
    # int target: the shorter side becomes the target (scale 20 / 40 = 0.5 -> 20 x 50).
    assert Resize(20, keep_ratio=True, clip_border=False)(image).shape == (20, 50, 3)
    # (h, w): the smallest scale covering the box: max(30/40, 30/100) = 0.75 -> 30 x 75.
    assert Resize((30, 30), keep_ratio=True, clip_border=False)(image).shape == (30, 75, 3)
    # clip_border cuts the overflow evenly: the centre of the 20 x 50 image, 20 x 20.
    full = Resize(20, keep_ratio=True, clip_border=False, interpolation="INTER_NEAREST")(image)
    clipped = Resize(20, keep_ratio=True, clip_border=True, interpolation="INTER_NEAREST")(image)
    np.testing.assert_array_equal(clipped, full[:, 15:35])
    # A constant image stays constant under every filter.
    flat = np.full((7, 9, 3), 77, dtype=np.uint8)
    for name in ("INTER_NEAREST", "INTER_LINEAR", "INTER_CUBIC", "INTER_AREA", "INTER_LANCZOS4"):
        out = Resize((5, 13), interpolation=name)(flat)
        assert out.shape == (5, 13, 3) and np.all(out == 77), name


def test_resize_interpolation_name_error():
    with pytest.raises(
        ValueError, match="unknown interpolation 'INTER_LINEARR'; did you mean 'INTER_LINEAR'"
    ):
        Resize(8, interpolation="INTER_LINEARR")


# ----------------------------------------------------------------------------- crops
def test_random_crop_is_a_window_and_covers_positions():
    image = np.arange(6 * 7, dtype=np.float32).reshape(6, 7, 1)
    crop = RandomCrop((3, 4))
    rng = RNG(0)
    corners = set()
    for _ in range(200):
        out = crop(image, rng)
        top, left = divmod(int(out[0, 0, 0]), 7)
        np.testing.assert_array_equal(out, image[top : top + 3, left : left + 4])
        corners.add((top, left))
    assert corners == {(t, l) for t in range(4) for l in range(4)}  # every window is reachable


def test_random_crop_padding_and_errors():
    image = np.full((4, 4), 9, dtype=np.uint8)
    crop = RandomCrop(4, padding=2, fill=1)
    rng = RNG(3)
    padded = np.pad(image, 2, constant_values=1)
    for _ in range(20):
        top, left, _shape = params = crop.sample(rng, image)
        np.testing.assert_array_equal(
            crop.apply(image, params), padded[top : top + 4, left : left + 4]
        )
    with pytest.raises(ValueError, match="use pad_if_needed=True"):
        RandomCrop(5)(image, rng)
    assert RandomCrop(6, pad_if_needed=True)(image, rng).shape == (6, 6)


def test_center_crop():
    image = _image(7, 9)
    np.testing.assert_array_equal(CenterCrop((3, 4))(image), image[2:5, 2:6])
    with pytest.raises(ValueError, match="resize first"):
        CenterCrop(10)(image)


# ----------------------------------------------------------------------------- colour
def test_brightness_and_gamma_on_constant_images():
    flat = np.full((4, 5, 3), 100, dtype=np.uint8)
    out = _jitter_only("brightness", 1.2)(flat, RNG(0))
    assert np.all(out == round(100 * 1.2))
    assert np.all(_jitter_only("brightness", 3.0)(flat, RNG(0)) == 255)  # clipped
    x = np.full((4, 5, 3), 0.25, dtype=np.float32)
    np.testing.assert_allclose(_jitter_only("gamma", 2.0)(x, RNG(0)), 0.0625, atol=1e-7)
    np.testing.assert_allclose(_jitter_only("gamma", 0.5)(x, RNG(0)), 0.5, atol=1e-7)


def test_contrast_formula():
    x = np.zeros((2, 2, 3), dtype=np.float32)
    x[0] = [0.2, 0.4, 0.6]
    x[1] = [0.6, 0.5, 0.4]
    gray = 0.299 * x[..., 0] + 0.587 * x[..., 1] + 0.114 * x[..., 2]
    expected = np.clip((x - gray.mean()) * 1.5 + gray.mean(), 0, 1)
    np.testing.assert_allclose(_jitter_only("contrast", 1.5)(x, RNG(0)), expected, atol=1e-6)
    flat = np.full((3, 3, 3), 0.3, dtype=np.float32)
    np.testing.assert_allclose(_jitter_only("contrast", 0.6)(flat, RNG(0)), flat, atol=1e-6)


def test_saturation_of_a_pure_colour():
    red = np.zeros((2, 2, 3), dtype=np.float32)
    red[..., 0] = 0.8
    gray = 0.299 * 0.8
    out = _jitter_only("saturation", 0.5)(red, RNG(0))
    np.testing.assert_allclose(
        out[0, 0], [gray + 0.5 * (0.8 - gray), gray * 0.5, gray * 0.5], atol=1e-6
    )
    np.testing.assert_allclose(_jitter_only("saturation", 0.0)(red, RNG(0)), gray, atol=1e-6)


@pytest.mark.parametrize(
    "shift, colour",
    [(1 / 3, [0, 255, 0]), (-1 / 3, [0, 0, 255]), (1 / 6, [255, 255, 0]), (0.5, [0, 255, 255])],
)
def test_hue_turns_a_pure_red(shift, colour):
    red = np.zeros((3, 3, 3), dtype=np.uint8)
    red[..., 0] = 255
    out = _jitter_only("hue", shift, hue_limit=[shift, shift])(red, RNG(0))
    np.testing.assert_array_equal(out, np.broadcast_to(np.array(colour, dtype=np.uint8), red.shape))


@pytest.mark.parametrize("k", [3, 5, 7])
def test_blur_kernel_size_spreads_an_impulse(k):
    x = np.zeros((11, 11), dtype=np.float32)
    x[5, 5] = 1.0
    out = _jitter_only("blur", k)(x, RNG(0))
    expected = np.zeros_like(x)
    r = k // 2
    expected[5 - r : 6 + r, 5 - r : 6 + r] = 1.0 / (k * k)
    np.testing.assert_allclose(out, expected, atol=1e-6)


def test_blur_draws_only_odd_sizes_in_the_limit():
    jitter = _jitter_only("blur", 3, blur_limit=[3, 7])
    rng = RNG(0)
    assert {jitter.sample(rng, None)["blur"] for _ in range(300)} == {3.0, 5.0, 7.0}
    with pytest.raises(ValueError, match="no odd kernel size"):
        RandomColorJitter(blur_limit=[4, 4])


def test_jitter_probability_zero_is_identity_and_one_always_changes():
    image = _image(8, 8)
    off = RandomColorJitter(
        **{f"{s}_p": 0.0 for s in ("brightness", "contrast", "saturation", "hue", "blur", "gamma")}
    )
    for seed in range(10):
        np.testing.assert_array_equal(off(image, RNG(seed)), image)
    on = _jitter_only("brightness", 0.5, brightness_limit=[0.5, 0.5])
    for seed in range(10):
        np.testing.assert_array_equal(on(image, RNG(seed)), np.rint(image * 0.5).astype(np.uint8))


def test_jitter_draw_probabilities():
    jitter = RandomColorJitter()  # the defaults of the registry-style configs
    rng = RNG(0)
    draws = [jitter.sample(rng, None) for _ in range(4000)]
    for step, p in (("brightness", 0.6), ("saturation", 0.5), ("hue", 0.05), ("blur", 0.2)):
        rate = sum(d[step] is not None for d in draws) / len(draws)
        assert abs(rate - p) < 0.03, (step, rate)
    values = [d["gamma"] for d in draws if d["gamma"] is not None]
    assert min(values) >= 0.3 and max(values) <= 3.0


def test_jitter_rejects_unsupported_images():
    with pytest.raises(TypeError, match="takes uint8 or float32 images, got float64"):
        RandomColorJitter()(np.zeros((4, 4, 3)), RNG(0))
    with pytest.raises(ValueError, match="1- or 3-channel"):
        RandomColorJitter()(np.zeros((4, 4, 2), dtype=np.uint8), RNG(0))


# ----------------------------------------------------------------------------- tensors
def test_normalize_and_to_tensor():
    image = _image(3, 4)
    mean, std = [0.1, 0.2, 0.3], [0.5, 0.25, 2.0]
    expected = (image / 255.0 - np.array(mean)) / np.array(std)
    out = Normalize(mean, std)(image)
    assert out.dtype == np.float32
    np.testing.assert_allclose(out, expected, atol=1e-6)
    tensor = ToTensor()(image)
    assert tuple(tensor.shape) == (3, 3, 4)
    np.testing.assert_allclose(tensor.numpy(), image.transpose(2, 0, 1) / 255.0, atol=1e-7)
    # After ToTensor (the flowvision order) Normalize works on (C, H, W) tensors.
    np.testing.assert_allclose(
        Normalize(mean, std)(tensor).numpy(), expected.transpose(2, 0, 1), atol=1e-6
    )
    gray = ToTensor()(np.ones((2, 5), dtype=np.float32))
    assert tuple(gray.shape) == (1, 2, 5)
    with pytest.raises(ValueError, match="3 mean/std values for an image of 1 channels"):
        Normalize(mean, std)(np.ones((2, 2), dtype=np.float32))


# ----------------------------------------------------------------------------- RandomResizedCrop
def test_random_resized_crop_windows_respect_scale_and_ratio():
    image = _image(60, 80)
    crop = RandomResizedCrop(16, scale=(0.2, 0.6), ratio=(0.5, 2.0))
    rng = RNG(0)
    fractions = []
    for _ in range(300):
        top, left, h, w, shape = crop.sample(rng, image)
        assert shape == (60, 80) and 0 <= top <= 60 - h and 0 <= left <= 80 - w
        # Each side is the exact value rounded to whole pixels (within 0.5 of it).
        assert (h + 0.5) * (w + 0.5) >= 0.2 * 4800 and (h - 0.5) * (w - 0.5) <= 0.6 * 4800
        assert (w + 0.5) / (h - 0.5) >= 0.5 and (w - 0.5) / (h + 0.5) <= 2.0
        fractions.append(h * w / 4800)
    assert min(fractions) < 0.25 and max(fractions) > 0.55  # the whole scale range is used
    assert crop(image, rng).shape == (16, 16, 3)


def test_random_resized_crop_whole_image_and_fallback():
    image = _image(30, 40)
    whole = RandomResizedCrop((30, 40), scale=(1.0, 1.0), ratio=(40 / 30, 40 / 30))
    np.testing.assert_array_equal(whole(image, RNG(0)), image)  # the window is the image itself
    resized = RandomResizedCrop((15, 20), scale=(1.0, 1.0), ratio=(4 / 3, 4 / 3))(image, RNG(0))
    np.testing.assert_array_equal(resized, Resize((15, 20))(image))
    # A square of the whole area cannot fit a 10 x 100 strip: the centred 10 x 10 square is taken.
    strip = np.arange(10 * 100, dtype=np.float32).reshape(10, 100)
    out = RandomResizedCrop(10, scale=(1.0, 1.0), ratio=(1.0, 1.0), interpolation="INTER_NEAREST")
    np.testing.assert_array_equal(out(strip, RNG(0)), strip[:, 45:55])
