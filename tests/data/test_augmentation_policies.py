"""The flowvision (timm) recipes: same results as flowvision under the same seeds, reproducible,
aligned across paired fields, and leaving the global generators as they were."""

import random

import numpy as np
import pytest
from PIL import Image

import libai  # noqa: F401  (before oneflow)
import oneflow as flow
from flowvision.data import RandomErasing as FlowVisionErasing
from flowvision.data import auto_augment_transform, rand_augment_transform

from libai.data.augmentation import AugmentationPipeline, AutoAugment, RandAugment, RandomErasing


def _photo(seed=0):
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:32, 0:40]
    base = np.stack([xx * 6, yy * 7, (xx + yy) * 3], axis=2) + rng.integers(0, 20, (32, 40, 3))
    return np.clip(base, 0, 255).astype(np.uint8)


def _seed_all(seed):
    random.seed(seed)
    np.random.seed(seed)
    flow.default_generator.manual_seed(seed)


@pytest.mark.parametrize(
    "ours, factory, config_str",
    [
        (RandAugment, rand_augment_transform, "rand-m9-mstd0.5-inc1"),
        (AutoAugment, auto_augment_transform, "original-mstd0.5"),
    ],
)
def test_policy_equals_flowvision_under_the_drawn_seed(ours, factory, config_str):
    image = _photo()
    hparams = dict(translate_const=14, img_mean=[124, 116, 104])
    transform = ours(config_str=config_str, hparams=hparams)
    seed = transform.sample(np.random.default_rng(11), image)
    out = transform.apply(image, seed)
    reference_op = factory(config_str, dict(translate_const=14, img_mean=(124, 116, 104)))
    _seed_all(seed)
    expected = np.asarray(reference_op(Image.fromarray(image)))
    np.testing.assert_array_equal(out, expected)
    assert out.dtype == np.uint8 and out.shape == image.shape


@pytest.mark.parametrize(
    "spec",
    [
        dict(
            name="RandAugment",
            config_str="rand-m9-n3-mstd0.5",
            hparams=dict(interpolation="bicubic"),
        ),
        dict(name="AutoAugment", config_str="v0"),
    ],
)
def test_policies_reproducible_aligned_and_global_state_untouched(spec):
    image = _photo()
    p = AugmentationPipeline([spec], keys=("a", "b"), seed=0)
    random.seed(123)
    np.random.seed(123)
    before = (random.random(), np.random.random())
    random.seed(123)
    np.random.seed(123)
    outs = [p({"a": image, "b": image.copy()}, seed=i) for i in range(6)]
    assert (random.random(), np.random.random()) == before  # our seeding was undone
    for i, out in enumerate(outs):
        np.testing.assert_array_equal(out["a"], out["b"])
        np.testing.assert_array_equal(out["a"], p({"a": image, "b": image}, seed=i)["a"])
    assert len({o["a"].tobytes() for o in outs}) > 2


def test_policy_errors():
    with pytest.raises(ValueError, match="flowvision rejected config_str='rand-q3'"):
        RandAugment(config_str="rand-q3")
    with pytest.raises(ValueError, match="interpolation must be one of"):
        RandAugment(hparams=dict(interpolation="fancy"))
    with pytest.raises(TypeError, match="RandAugment takes uint8 images"):
        RandAugment()(np.zeros((4, 4, 3), np.float32))
    with pytest.raises(ValueError, match="AutoAugment takes RGB"):
        AutoAugment()(np.zeros((4, 4), np.uint8))


def test_random_erasing_matches_flowvision_and_spares_its_input():
    x = flow.tensor(np.random.default_rng(0).random((3, 20, 24), dtype=np.float32))
    original = x.numpy().copy()
    erasing = RandomErasing(probability=1.0, mode="pixel", max_count=1)
    seed = erasing.sample(np.random.default_rng(4), x)
    out = erasing.apply(x, seed).numpy()
    np.testing.assert_array_equal(x.numpy(), original)
    _seed_all(seed)
    expected = FlowVisionErasing(probability=1.0, mode="pixel", max_count=1, device="cpu")(
        flow.tensor(original)
    )
    np.testing.assert_array_equal(out, expected.numpy())
    assert (out != original).any()


def test_random_erasing_on_arrays_const_mode_and_probability_zero():
    image = np.full((20, 24, 3), 200, dtype=np.uint8)
    out = RandomErasing(probability=1.0, mode="const")(image, np.random.default_rng(1))
    assert out.dtype == np.uint8 and out.shape == image.shape
    erased = np.all(out == 0, axis=2)
    rows, cols = np.nonzero(erased)
    assert erased.any() and np.all(out[~erased] == 200)
    # The erased pixels form one filled rectangle.
    assert erased[rows.min() : rows.max() + 1, cols.min() : cols.max() + 1].all()
    for seed in range(10):
        np.testing.assert_array_equal(
            RandomErasing(probability=0.0)(image, np.random.default_rng(seed)), image
        )
    with pytest.raises(ValueError, match="mode must be"):
        RandomErasing(mode="noise")
