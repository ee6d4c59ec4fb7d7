"""configs/common/data/{mnist,cifar100,imagenet,imagenet_ofrecord}.py load, save and build."""
import os

import numpy as np
import pytest

from libai.config import LazyConfig, instantiate
from libai.data.datasets.ofrecord import convert_image_folder_to_ofrecord
from libai.data.mixup import Mixup
from tests.configs.tiny_data import write_cifar100

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = ["mnist", "cifar100", "imagenet", "imagenet_ofrecord"]


def load(name):
    return LazyConfig.load(os.path.join(REPO, "configs", "common", "data", f"{name}.py"))


@pytest.mark.parametrize("name", CONFIGS)
def test_config_has_train_and_test_loaders_and_survives_yaml(name, tmp_path):
    cfg = load(name)
    assert list(cfg.keys()) == ["dataloader"]
    assert cfg.dataloader.train.num_workers == 4
    assert len(cfg.dataloader.test) == 1
    LazyConfig.save(cfg, str(tmp_path / "config.yaml"))
    reloaded = LazyConfig.load(str(tmp_path / "config.yaml"))
    assert LazyConfig.to_py(reloaded) == LazyConfig.to_py(cfg)  # targets saved by name


@pytest.fixture
def cifar100_root(tmp_path):
    write_cifar100(str(tmp_path), np.random.default_rng(0), counts=(6, 3), num_classes=100)
    return tmp_path


def build(cfg, train_root, test_root, batch=2):
    train_cfg = cfg.dataloader.train
    train_cfg.dataset[0].root = str(train_root)
    train_cfg.train_batch_size = batch
    train_cfg.num_workers = 0
    test_cfg = cfg.dataloader.test[0]
    test_cfg.dataset.root = str(test_root)
    test_cfg.test_batch_size = batch
    test_cfg.num_workers = 0
    train, _, _ = instantiate(train_cfg)
    return next(iter(train)), next(iter(instantiate(test_cfg))), train


def test_mnist_config_builds(img_digits_dir):
    train_batch, test_batch, _ = build(load("mnist"), img_digits_dir, img_digits_dir)
    assert tuple(train_batch.images.tensor.shape) == (2, 1, 28, 28)
    assert tuple(train_batch.labels.tensor.shape) == (2,)
    assert tuple(test_batch.images.tensor.shape) == (2, 1, 28, 28)


def test_cifar100_config_builds_with_mixup(cifar100_root):
    train_batch, test_batch, train = build(load("cifar100"), cifar100_root, cifar100_root)
    assert isinstance(train.mixup_func, Mixup) and train.mixup_func.num_classes == 100
    assert tuple(train_batch.images.tensor.shape) == (2, 3, 32, 32)
    assert tuple(train_batch.labels.tensor.shape) == (2, 100)  # soft targets
    assert tuple(test_batch.labels.tensor.shape) == (2,)


@pytest.mark.parametrize("name", ["imagenet", "imagenet_ofrecord"])
def test_imagenet_configs_build(name, img_png_tree, tmp_path):
    root, _ = img_png_tree
    if name == "imagenet_ofrecord":
        convert_image_folder_to_ofrecord(str(root), str(tmp_path / "records"))
        root = tmp_path / "records"
    train_batch, test_batch, _ = build(load(name), root, root)
    assert tuple(train_batch.images.tensor.shape) == (2, 3, 224, 224)
    # LiBai's default: no MixUp, hard labels (a self-supervised project such as MAE needs them)
    assert tuple(train_batch.labels.tensor.shape) == (2,)
    assert tuple(test_batch.images.tensor.shape) == (2, 3, 224, 224)


def test_imagenet_recipe_mixup_gives_soft_targets(img_png_tree):
    """The recipes that train on soft targets add DeiT's MixUp themselves (deit_mixup)."""
    from configs.common.data.imagenet import deit_mixup

    root, _ = img_png_tree
    cfg = load("imagenet")
    cfg.dataloader.train.mixup_func = deit_mixup(7)
    train_batch, _, train = build(cfg, root, root)
    assert isinstance(train.mixup_func, Mixup) and train.mixup_func.num_classes == 7
    assert tuple(train_batch.labels.tensor.shape) == (2, 7)
    assert deit_mixup(3) is not deit_mixup(3)  # a new node per call: recipes never share one
