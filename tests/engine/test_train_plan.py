"""The batch-size triple and the iteration count follow API.md's rules."""
import pytest
from omegaconf import OmegaConf

from libai.engine.train_plan import resolve_batch_sizes, resolve_iterations


def train(**kw):
    base = dict(train_micro_batch_size=8, num_accumulation_steps=None, global_batch_size=None,
                train_iter=0, train_epoch=0, train_samples=None, warmup_ratio=0.0)
    base.update(kw)
    return OmegaConf.create(base)


def test_any_two_of_the_triple_determine_the_third():
    assert resolve_batch_sizes(train(), 2).global_batch_size == 16
    b = resolve_batch_sizes(train(global_batch_size=64), 2)
    assert b.num_accumulation_steps == 4 and b.per_rank_step_batch == 32
    b = resolve_batch_sizes(train(num_accumulation_steps=3), 1)
    assert b.global_batch_size == 24


def test_an_inconsistent_triple_names_all_three_numbers():
    with pytest.raises(ValueError, match=r"global_batch_size \(30\).*\(8\) × num_accumulation_steps \(2\) × data_parallel_size \(2\) = 32"):
        resolve_batch_sizes(train(global_batch_size=30, num_accumulation_steps=2), 2)
    with pytest.raises(ValueError, match="not a multiple"):
        resolve_batch_sizes(train(global_batch_size=20), 1)


def test_iterations_are_the_max_of_iter_epoch_and_samples_and_warmup_a_ratio():
    b = resolve_batch_sizes(train(), 1)
    plan = resolve_iterations(train(train_iter=5, train_epoch=2, warmup_ratio=0.1), b, dataset_size=100)
    assert plan.iters_per_epoch == 12 and plan.max_iter == 24 and plan.warmup_iter == 2
    plan = resolve_iterations(train(train_iter=50, train_epoch=1), b, dataset_size=100)
    assert plan.max_iter == 50
    plan = resolve_iterations(train(train_samples=81), b, dataset_size=None)
    assert plan.max_iter == 11


def test_nothing_to_train_and_tiny_datasets_are_errors():
    b = resolve_batch_sizes(train(), 1)
    with pytest.raises(ValueError, match="nothing to train"):
        resolve_iterations(train(), b, dataset_size=100)
    with pytest.raises(ValueError, match="3 samples, fewer than one global batch"):
        resolve_iterations(train(train_epoch=1), b, dataset_size=3)
