"""The four loader builders: batches, data-parallel defaults, pin_memory, mixup, errors."""
import itertools
import logging

import pytest

import oneflow as flow

from libai.data import build
from libai.data.build import (
    build_image_test_loader,
    build_image_train_loader,
    build_nlp_test_loader,
    build_nlp_train_loader,
)
from libai.data.mixup import Mixup
from libai.data.samplers import CyclicSampler, SingleRoundSampler
from libai.data.structures import DistTensorData, Instance
from libai.utils import distributed as dist


def labels_of(batch):
    return batch.labels.tensor.tolist()


def test_train_loader_yields_instance_batches(img_index_dataset):
    train, valid, test = build_image_train_loader(img_index_dataset(10), 4, num_workers=0)
    assert valid is None and test is None
    assert isinstance(train.batch_sampler, CyclicSampler) and len(train.dataset) == 10
    batch = next(iter(train))
    assert isinstance(batch, Instance) and list(batch.get_fields()) == ["images", "labels"]
    assert tuple(batch.images.tensor.shape) == (4, 1, 2, 2)
    assert batch.labels.placement_idx == -1 and batch.images.placement_idx == 0
    # each image is filled with its own index
    assert batch.images.tensor[:, 0, 0, 0].tolist() == [float(i) for i in labels_of(batch)]


def test_list_of_datasets_is_concatenated(img_index_dataset):
    train, _, _ = build_image_train_loader(
        [img_index_dataset(5), img_index_dataset(3)], 2, num_workers=0, seed=1
    )
    assert len(train.dataset) == 8
    seen = sum((labels_of(b) for b in itertools.islice(train, 4)), [])
    # the second dataset's indices 0..2 appear too, so every label lies in 0..4
    assert sorted(seen) == sorted([0, 1, 2, 3, 4, 0, 1, 2])


def test_workers_give_the_same_batches_as_main_process(img_index_dataset):
    loaders = [
        build_image_train_loader(img_index_dataset(12), 3, num_workers=w, seed=4)[0] for w in (0, 2)
    ]
    got = [[labels_of(b) for b in itertools.islice(loader, 6)] for loader in loaders]
    assert got[0] == got[1]


def test_consumed_samples_resume(img_index_dataset):
    full, _, _ = build_image_train_loader(img_index_dataset(9), 2, num_workers=0, seed=3)
    resumed, _, _ = build_image_train_loader(
        img_index_dataset(9), 2, num_workers=0, seed=3, consumed_samples=6
    )
    expected = [labels_of(b) for b in itertools.islice(full, 7)][3:]
    assert [labels_of(b) for b in itertools.islice(resumed, 4)] == expected


def test_data_parallel_defaults_come_from_the_layout(img_index_dataset):
    layout = dist.ParallelLayout.from_config(
        {"device_type": "cpu", "data_parallel_size": 2}, world_size=2, rank=1
    )
    with layout:
        train, _, _ = build_image_train_loader(img_index_dataset(8), 2, num_workers=0, seed=0)
        test = build_image_test_loader(img_index_dataset(7), 2, num_workers=0)
    sampler = train.batch_sampler
    assert (sampler.data_parallel_rank, sampler.data_parallel_size) == (1, 2)
    assert [labels_of(b) for b in test] == [[2, 3], [6, 6]]


def test_one_process_without_layout_is_rank_0_of_1(img_index_dataset):
    assert not dist.has_layout()
    assert build.resolve_data_parallel(None, None) == (0, 1)
    assert build.resolve_data_parallel(1, 3) == (1, 3)
    with pytest.raises(ValueError, match="both data_parallel_rank and data_parallel_size"):
        build.resolve_data_parallel(1, None)


def test_many_processes_without_layout_is_an_error(img_index_dataset, monkeypatch):
    monkeypatch.setattr(dist, "get_world_size", lambda: 2)
    match = "2 processes but no parallel layout.*Pass data_parallel_rank="
    with pytest.raises(RuntimeError, match=match):
        build_image_train_loader(img_index_dataset(8), 2, num_workers=0)


def test_pin_memory_follows_device_and_warns_once_on_cpu(img_index_dataset, local_layout, caplog):
    build._warn_pin_memory_once.cache_clear()
    assert build_image_test_loader(img_index_dataset(4), 2, num_workers=0).pin_memory is False
    with caplog.at_level(logging.WARNING, logger="libai.data.build"):
        for _ in range(2):
            loader = build_image_test_loader(
                img_index_dataset(4), 2, num_workers=0, pin_memory=True
            )
            assert loader.pin_memory is False
    assert sum("pin_memory=True has no effect" in r.getMessage() for r in caplog.records) == 1


def test_test_loader_pads_last_batch(img_index_dataset):
    loader = build_image_test_loader(img_index_dataset(5), 2, num_workers=0)
    assert isinstance(loader.batch_sampler, SingleRoundSampler) and len(loader) == 3
    assert [labels_of(b) for b in loader] == [[0, 1], [2, 3], [4, 4]]


def test_empty_dataset_and_too_large_batch_errors(img_index_dataset):
    with pytest.raises(ValueError, match=r"training dataset is empty \(0 samples\)"):
        build_image_train_loader(img_index_dataset(0), 2)
    with pytest.raises(ValueError, match=r"test dataset is empty"):
        build_image_test_loader(img_index_dataset(0), 2)
    match = r"train_batch_size 4 × data_parallel_size 2 = 8 .* only 5"
    with pytest.raises(ValueError, match=match):
        build_image_train_loader(
            img_index_dataset(5), 4, data_parallel_rank=0, data_parallel_size=2
        )
    with pytest.raises(ValueError, match="test_batch_size must be a positive integer"):
        build_image_test_loader(img_index_dataset(3), None)


def test_mixup_is_applied_to_training_batches(img_index_dataset):
    mixup = Mixup(mixup_alpha=1.0, cutmix_alpha=0.0, label_smoothing=0.0, num_classes=6, seed=0)
    loader, _, _ = build_image_train_loader(
        img_index_dataset(6), 4, num_workers=0, mixup_func=mixup
    )
    plain, _, _ = build_image_train_loader(img_index_dataset(6), 4, num_workers=0)
    mixed, hard = next(iter(loader)), next(iter(plain))
    targets = mixed.labels.tensor
    assert tuple(targets.shape) == (4, 6) and targets.dtype == flow.float32
    assert flow.allclose(targets.sum(dim=1), flow.ones(4))
    assert isinstance(mixed.labels, DistTensorData) and mixed.labels.placement_idx == -1
    # soft target mass sits on the sample's own label and its partner's (the reversed batch)
    labels = labels_of(hard)
    for i, y in enumerate(labels):
        partner = labels[len(labels) - 1 - i]
        mass = targets[i, y].item() + (targets[i, partner].item() if partner != y else 0.0)
        assert mass == pytest.approx(1.0, abs=1e-6)


def test_nlp_builders_share_the_contract_and_split(img_index_dataset):
    train, valid, test = build_nlp_train_loader(img_index_dataset(10), 2, num_workers=0)
    assert valid is None and test is None and len(train.dataset) == 10
    train, valid, test = build_nlp_train_loader(
        img_index_dataset(20), 2, test_batch_size=3, num_workers=0, splits=[[8, 1, 1]]
    )
    assert len(train.dataset) == 16 and len(valid.dataset) == 2 and len(test.dataset) == 2
    assert [labels_of(b) for b in valid] == [[16, 17, 17]]
    assert [labels_of(b) for b in test] == [[18, 19, 19]]
    seen = set(sum((labels_of(b) for b in itertools.islice(train, 8)), []))
    assert seen == set(range(16))  # one epoch of the train part, never a held-out index
    nlp_test = build_nlp_test_loader(img_index_dataset(3), 2, num_workers=0)
    assert [labels_of(b) for b in nlp_test] == [[0, 1], [2, 2]]
    with pytest.raises(ValueError, match="need a blending dataset_mixer"):
        build_nlp_train_loader(
            [img_index_dataset(4), img_index_dataset(4)], 2, num_workers=0, weights=[0.7, 0.3]
        )


def test_default_collate_handles_plain_tuples():
    batch = build.default_collate([(flow.tensor([1.0]), 3), (flow.tensor([2.0]), 4)])
    assert batch[0].tolist() == [[1.0], [2.0]] and batch[1].tolist() == [3, 4]


def test_iterating_a_loader_leaves_the_global_oneflow_rng_alone(img_index_dataset):
    loader = build_image_test_loader(img_index_dataset(4), 2, num_workers=0)
    flow.manual_seed(123)
    expected = flow.rand(3).tolist()
    flow.manual_seed(123)
    for _ in range(3):
        list(loader)  # each pass creates an iterator, which draws a base seed
    assert flow.rand(3).tolist() == expected
