"""LiBai's ``build_nlp_train_val_test_loader``: one corpus cut into train/valid/test loaders by
document ratios, from dataset nodes the function builds itself."""
import numpy as np
import pytest

from libai.config import LazyCall
from libai.data import build_nlp_train_val_test_loader
from libai.data.datasets import GPT2Dataset
from libai.data.samplers import CyclicSampler, SingleRoundSampler


def _node(corpus, tmp_path):
    return LazyCall(GPT2Dataset)(
        name="gpt", data_prefix=corpus.doc_prefix, max_seq_length=8, seed=1,
        cache_dir=str(tmp_path),
    )


def _token_rows(loader):
    return [row for batch in loader for row in batch.get("input_ids").tensor.numpy().tolist()]


def test_each_loader_reads_its_own_document_split(corpus, tmp_path):
    splits = [[80.0, 10.0, 10.0]]
    train, valid, test = build_nlp_train_val_test_loader(
        dataset=[_node(corpus, tmp_path)], splits=splits, weights=[1.0],
        train_val_test_num_samples=None, train_batch_size=4, test_batch_size=2, num_workers=0,
    )
    # the same parts, built directly by role, are what the loaders serve
    for loader, role in ((valid, "valid"), (test, "test")):
        direct = GPT2Dataset(name="gpt", data_prefix=corpus.doc_prefix, max_seq_length=8, seed=1,
                             split=role, splits_string="80.0,10.0,10.0", cache_dir=str(tmp_path))
        expected = [direct[i].get("input_ids").tensor.numpy().tolist() for i in range(len(direct))]
        assert _token_rows(loader) == expected
        assert len(expected) > 0
    train_set = train.dataset
    direct_train = GPT2Dataset(name="gpt", data_prefix=corpus.doc_prefix, max_seq_length=8,
                               seed=1, split="train", splits_string="80.0,10.0,10.0",
                               cache_dir=str(tmp_path))
    assert len(train_set) == len(direct_train)
    batch = next(iter(train))
    assert tuple(batch.get("input_ids").tensor.shape) == (4, 8)


def test_sampler_nodes_and_sample_counts(corpus, tmp_path):
    train, valid, test = build_nlp_train_val_test_loader(
        dataset=_node(corpus, tmp_path), splits=[90, 10, 0], weights=[1.0],
        train_val_test_num_samples=[50, 6, None], train_batch_size=5, test_batch_size=3,
        train_sampler=LazyCall(CyclicSampler)(shuffle=False),
        test_sampler=LazyCall(SingleRoundSampler)(shuffle=False, drop_last=False),
        num_workers=0,
    )
    assert isinstance(train.batch_sampler, CyclicSampler) and not train.batch_sampler.shuffle
    assert len(train.dataset) >= 50  # epochs repeated until the asked-for samples exist
    assert len(valid.dataset) >= 6
    assert test is None  # a 0 share makes no loader
    rows = _token_rows(valid)
    assert len(rows) == len(valid.dataset)


def test_mismatched_splits_are_refused(corpus, tmp_path):
    with pytest.raises(ValueError, match="2 triples for 1 dataset"):
        build_nlp_train_val_test_loader(
            dataset=[_node(corpus, tmp_path)], splits=[[1, 1, 1], [1, 1, 1]], weights=[1.0],
            train_val_test_num_samples=None, train_batch_size=2, test_batch_size=2,
        )
    with pytest.raises(ValueError, match="train_val_test_num_samples"):
        build_nlp_train_val_test_loader(
            dataset=[_node(corpus, tmp_path)], splits=[[1, 1, 1]], weights=[1.0],
            train_val_test_num_samples=[4, 4], train_batch_size=2, test_batch_size=2,
        )


def test_default_trainer_hands_the_dataset_nodes_over_unbuilt(corpus, tmp_path):
    from omegaconf import OmegaConf

    from libai.config import LazyConfig
    from libai.engine import DefaultTrainer

    cfg = LazyConfig.load("configs/common/train.py")
    cfg.train.update(train_micro_batch_size=3, test_micro_batch_size=2)
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_nlp_train_val_test_loader)(
        dataset=[_node(corpus, tmp_path)], splits=[[8, 1, 1]], weights=[1.0],
        train_val_test_num_samples=None, num_workers=0,
    )
    train, valid, test = DefaultTrainer.build_train_loader(cfg)
    assert train.batch_sampler.batch_size_per_rank == 3
    assert valid is not None and test is not None
    assert next(iter(valid)).get("input_ids").tensor.shape[0] == 2


def test_split_counts_replace_a_nodes_max_num_samples(corpus, tmp_path):
    """As LiBai's loader does: each part's count goes into the node's ``max_num_samples``."""
    node = _node(corpus, tmp_path)
    node.max_num_samples = 3  # LiBai's configs may carry one; the split's count wins
    train, valid, test = build_nlp_train_val_test_loader(
        dataset=[node], splits=[[80.0, 10.0, 10.0]], weights=[1.0],
        train_val_test_num_samples=[7, 2, 1], train_batch_size=1, test_batch_size=1, num_workers=0,
    )
    assert (len(train.dataset), len(valid.dataset), len(test.dataset)) == (7, 2, 1)
    assert node.max_num_samples == 3  # the config is left as it was
