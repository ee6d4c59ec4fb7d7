"""AugmentationPipeline: building from names, seeding, paired fields, datasets."""

import numpy as np
import pytest
from omegaconf import OmegaConf

import libai  # noqa: F401  (before oneflow)
import oneflow as flow
from oneflow.utils.data import DataLoader, Dataset

from libai.config.registry import TRANSFORM_REGISTRY, RegistryError
from libai.data.augmentation import (
    AugmentationPipeline,
    Compose,
    RandomFlip,
    TRANSFORM_PATHS,
    get_preset,
)
from libai.data.augmentation import pipeline as pipeline_module
from libai.data.datasets import ImageFolderDataset

JITTER = get_preset("flip_resize_jitter")


def _photo(h=40, w=48, seed=0):
    """A smooth RGB picture (gradients + a disc), so every transform visibly changes it."""
    yy, xx = np.mgrid[0:h, 0:w].astype(np.float32)
    disc = ((yy - h / 3) ** 2 + (xx - w / 4) ** 2 < (h / 5) ** 2).astype(np.float32)
    rgb = np.stack([xx / w, yy / h, 0.5 * disc + 0.25], axis=2)
    noise = np.random.default_rng(seed).random((h, w, 3), dtype=np.float32) * 0.1
    return np.rint(np.clip(rgb + noise, 0, 1) * 255).astype(np.uint8)


def test_names_resolve_in_the_registry():
    for name, path in TRANSFORM_PATHS.items():
        obj = TRANSFORM_REGISTRY.get(name)
        assert f"{obj.__module__}.{obj.__qualname__}" == path
    assert Compose is AugmentationPipeline


def test_unknown_name_gets_did_you_mean():
    with pytest.raises(
        RegistryError, match="no 'RandomFlp' in the TRANSFORM registry; did you mean 'RandomFlip'"
    ):
        AugmentationPipeline([dict(name="RandomFlp", p=0.5)])
    with pytest.raises(ValueError, match="needs a 'name' key"):
        AugmentationPipeline([dict(p=0.5)])
    with pytest.raises(TypeError, match="transform 'Resize': .*unexpected keyword argument 'size'"):
        AugmentationPipeline([dict(name="Resize", size=3)])


def test_same_seed_same_output_different_seed_different():
    image = _photo()
    a = AugmentationPipeline(JITTER, seed=0)
    b = AugmentationPipeline(JITTER, seed=0)
    outs_a = [a({"image": image})["image"] for _ in range(8)]
    outs_b = [b({"image": image})["image"] for _ in range(8)]
    for x, y in zip(outs_a, outs_b):
        np.testing.assert_array_equal(x, y)
    c = AugmentationPipeline(JITTER, seed=1)
    outs_c = [c({"image": image})["image"] for _ in range(8)]
    assert any(not np.array_equal(x, y) for x, y in zip(outs_a, outs_c))
    # Successive draws of one pipeline differ (the stream advances).
    assert any(not np.array_equal(outs_a[0], x) for x in outs_a[1:])


def test_per_sample_seed_is_independent_of_call_order():
    image = _photo()
    p = AugmentationPipeline(JITTER, seed=7)
    forward = [p(image, seed=i) for i in range(6)]
    backward = [p(image, seed=i) for i in reversed(range(6))][::-1]
    for x, y in zip(forward, backward):
        np.testing.assert_array_equal(x, y)
    assert any(not np.array_equal(forward[0], x) for x in forward[1:])
    other = AugmentationPipeline(JITTER, seed=8)
    assert any(not np.array_equal(x, other(image, seed=i)) for i, x in enumerate(forward))


def test_worker_streams_differ_and_are_reproducible(monkeypatch):
    image = _photo()
    runs = {}
    for worker in (-1, 0, 1, 0):
        monkeypatch.setattr(pipeline_module, "_worker_id", lambda w=worker: w)
        p = AugmentationPipeline(JITTER, seed=3)
        runs.setdefault(worker, []).append(np.stack([p(image) for _ in range(4)]))
    np.testing.assert_array_equal(runs[0][0], runs[0][1])
    assert not np.array_equal(runs[0][0], runs[1][0])
    assert not np.array_equal(runs[-1][0], runs[0][0])


def test_paired_fields_stay_aligned_and_others_pass_through():
    image = _photo()
    mask = image.astype(np.float32) / 255.0  # the same picture as a float "target"
    p = AugmentationPipeline(
        [
            dict(name="RandomFlip", direction=["horizontal", "vertical", "diagonal"], p=0.9),
            dict(name="RandomCrop", size=(24, 30)),
            dict(name="Resize", target_size=(20, 20), interpolation="INTER_NEAREST"),
        ],
        keys=("input", "target"),
        seed=0,
    )
    sample = {"input": image, "target": mask, "label": 3, "name": "x"}
    crops = set()
    for i in range(30):
        out = p(sample, seed=i)
        np.testing.assert_allclose(out["target"], out["input"] / 255.0, atol=1e-6)
        assert out["label"] == 3 and out["name"] == "x"
        crops.add(out["input"].tobytes())
    assert len(crops) > 10  # really random
    assert sample["input"] is image  # the input dict is not modified
    with pytest.raises(KeyError, match="no field 'target'"):
        p({"input": image})


def test_paired_crop_of_different_sizes_is_an_error():
    p = AugmentationPipeline([dict(name="RandomCrop", size=4)], keys=("a", "b"), seed=0)
    with pytest.raises(ValueError, match="same height and width"):
        p({"a": np.zeros((8, 8), np.uint8), "b": np.zeros((6, 8), np.uint8)})


def test_objects_callables_and_omegaconf_specs():
    image = _photo()
    spec = OmegaConf.create([{"name": "RandomFlip", "direction": ["vertical"], "p": 1.0}])
    p = AugmentationPipeline(
        list(spec) + [RandomFlip("horizontal", p=1.0), lambda x: x[:5]], seed=0
    )
    np.testing.assert_array_equal(p(image), image[::-1, ::-1][:5])
    with pytest.raises(
        TypeError,
        match=r"must be dict\(name=\.\.\., \*\*params\), a Transform or a callable, got 42",
    ):
        AugmentationPipeline([42])


def test_a_nested_pipeline_follows_the_outer_seed_and_keeps_pairs_aligned():
    image = _photo()
    inner = dict(name="Compose", transforms=JITTER)
    outer = [inner, dict(name="RandomCrop", size=16)]
    a = AugmentationPipeline(outer, keys=("x", "y"), seed=0)
    b = AugmentationPipeline(outer, keys=("x", "y"), seed=0)
    for i in range(5):
        out_a, out_b = a({"x": image, "y": image}, seed=i), b({"x": image, "y": image}, seed=i)
        np.testing.assert_array_equal(out_a["x"], out_b["x"])
        np.testing.assert_array_equal(out_a["x"], out_a["y"])
    assert not np.array_equal(
        a({"x": image, "y": image}, seed=0)["x"], a({"x": image, "y": image}, seed=1)["x"]
    )


def test_pil_input_and_tensor_output():
    from PIL import Image

    image = _photo()
    p = AugmentationPipeline([dict(name="RandomFlip", p=1.0), dict(name="ToTensor")], seed=0)
    out = p(Image.fromarray(image))
    assert isinstance(out, flow.Tensor) and tuple(out.shape) == (3, 40, 48)
    np.testing.assert_allclose(out.numpy(), image[:, ::-1].transpose(2, 0, 1) / 255.0, atol=1e-7)


def test_a_dataset_transform_can_be_a_pipeline(img_png_tree):
    root, arrays = img_png_tree
    p = AugmentationPipeline(
        [
            dict(name="Resize", target_size=4, interpolation="INTER_NEAREST"),
            dict(name="RandomFlip", direction="horizontal", p=1.0),
            dict(name="ToTensor"),
        ],
        seed=0,
    )
    dataset = ImageFolderDataset(str(root), transform=p)
    for i, (path, _label) in enumerate(dataset.samples):
        source = arrays[path]
        h, w = source.shape[:2]
        # OpenCV's nearest filter takes source pixel floor(dst * src / dst_size).
        rows = np.floor(np.arange(4) * h / 4).astype(int)
        cols = np.floor(np.arange(4) * w / 4).astype(int)
        expected = source[rows][:, cols][:, ::-1].transpose(2, 0, 1) / 255.0
        np.testing.assert_allclose(dataset[i].images.tensor.numpy(), expected, atol=1e-7)


class _SeededSamples(Dataset):
    """Seeds the pipeline with the sample index: the recommended way for exact reproducibility."""

    def __init__(self, image, pipeline, n):
        self.image, self.pipeline, self.n = image, pipeline, n

    def __len__(self):
        return self.n

    def __getitem__(self, index):
        return self.pipeline({"image": self.image}, seed=index)["image"]


def test_dataloader_workers_reproduce_the_single_process_result():
    p = AugmentationPipeline(JITTER + [dict(name="ToTensor")], seed=5)
    dataset = _SeededSamples(_photo(), p, 8)
    serial = np.stack([dataset[i].numpy() for i in range(8)])
    loader = DataLoader(dataset, batch_size=2, num_workers=2, shuffle=False)
    parallel = np.concatenate([batch.numpy() for batch in loader])
    np.testing.assert_array_equal(parallel, serial)
    assert len({serial[i].tobytes() for i in range(8)}) == 8
