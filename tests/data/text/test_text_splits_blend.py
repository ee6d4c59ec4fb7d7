"""Document splits, weighted blending, and the index cache's rank protocol."""
import os

import numpy as np
import pytest

from libai.data.data_utils.blendable_dataset import BlendableDataset, build_blending_indices
from libai.data.data_utils.index_cache import load_or_build_indices
from libai.data.data_utils.splits import parse_splits_string, split_boundaries, split_documents
from libai.data.datasets.gpt_dataset import GPT2Dataset


def test_parse_splits_string():
    assert parse_splits_string("949,50,1") == [949.0, 50.0, 1.0]
    assert parse_splits_string("98/2") == [98.0, 2.0, 0.0]
    assert parse_splits_string([1, 1, 2]) == [1.0, 1.0, 2.0]
    with pytest.raises(ValueError, match="numbers separated by"):
        parse_splits_string("a,b")
    with pytest.raises(ValueError, match="1 to 3 weights"):
        parse_splits_string("1,1,1,1")
    with pytest.raises(ValueError, match="positive sum"):
        parse_splits_string("0,0")


@pytest.mark.parametrize("splits, n", [("949,50,1", 1000), ("8,1,1", 37), ("1,1,1", 2), ("98,2", 50)])
def test_splits_partition_documents(splits, n):
    ranges = [split_documents(splits, s, n) for s in ("train", "valid", "test")]
    covered = [d for start, end in ranges for d in range(start, end)]
    assert covered == list(range(n))  # contiguous, disjoint, complete
    weights = np.array(parse_splits_string(splits))
    sizes = np.array([end - start for start, end in ranges])
    assert np.all(np.abs(sizes - weights / weights.sum() * n) <= 1)  # each within rounding


def test_split_boundaries_and_names():
    assert split_boundaries("949,50,1", 1000) == [0, 949, 999, 1000]
    assert split_documents("949,50,1", 1, 1000) == split_documents("949,50,1", "valid", 1000)
    with pytest.raises(ValueError, match="split 'dev' is unknown"):
        split_documents("1,1,1", "dev", 10)


def test_split_datasets_only_read_their_documents(corpus, tmp_path):
    seen = {}
    for split in ("train", "valid", "test"):
        ds = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=4, split=split, splits_string="6,3,1",
                         cache_dir=str(tmp_path))
        seen[split] = set(int(d) for d in ds.doc_idx)
        start, end = split_documents("6,3,1", split, len(corpus.docs))
        assert seen[split] == set(range(start, end))
    assert not (seen["train"] & seen["valid"]) and not (seen["valid"] & seen["test"])


def test_blending_indices_track_weights_at_every_prefix():
    weights = [0.5, 0.3, 0.2]
    index, sample = build_blending_indices(weights, 1000)
    counts = np.zeros(3)
    for i, d in enumerate(index):
        assert sample[i] == counts[d]  # each dataset read in order, from 0
        counts[d] += 1
        assert np.all(np.abs(counts - np.array(weights) * (i + 1)) < 1.0 + 1e-9)
    assert counts.tolist() == [500, 300, 200]
    again, _ = build_blending_indices(weights, 1000)
    assert np.array_equal(index, again)  # deterministic


def test_blendable_dataset_serves_from_each_dataset():
    a = [("a", i) for i in range(10)]
    b = [("b", i) for i in range(10)]
    blend = BlendableDataset([a, b], [3, 1], size=8)
    # By hand: error_d = w_d * (i + 1) - taken_d with w = (0.75, 0.25), ties to dataset 0.
    assert [blend[i] for i in range(8)] == [
        ("a", 0), ("a", 1), ("b", 0), ("a", 2), ("a", 3), ("a", 4), ("b", 1), ("a", 5)
    ]
    assert len(blend) == 8
    with pytest.raises(IndexError, match="out of range"):
        blend[8]


def test_blendable_dataset_errors():
    with pytest.raises(ValueError, match="2 datasets but 1 weights"):
        BlendableDataset([[1], [2]], [1.0])
    with pytest.raises(ValueError, match="non-negative with a positive sum"):
        BlendableDataset([[1]], [-1.0])
    with pytest.raises(ValueError, match="dataset 1 \\(list\\) has 2 samples but the blend of size 10 takes 5"):
        BlendableDataset([list(range(10)), [0, 1]], [1, 1], size=10)


def test_index_cache_rank_protocol(tmp_path):
    calls = []

    def build():
        calls.append(1)
        return {"x": np.arange(5)}

    # A non-zero rank never writes: with no files it builds in memory.
    other = load_or_build_indices(str(tmp_path), "s", ["x"], build, rank=1)
    assert calls == [1] and not other.hit and os.listdir(tmp_path) == []
    # Rank 0 builds and writes; afterwards every rank reads the files without building.
    first = load_or_build_indices(str(tmp_path), "s", ["x"], build, rank=0)
    assert calls == [1, 1] and not first.hit and os.listdir(tmp_path) == ["s_x.npy"]
    for rank in (0, 1):
        again = load_or_build_indices(str(tmp_path), "s", ["x"], build, rank=rank)
        assert again.hit and calls == [1, 1]
        np.testing.assert_array_equal(again.arrays["x"], np.arange(5))


def test_default_blend_size_uses_up_the_scarcest_dataset():
    a, b = list(range(100)), list(range(10))
    blend = BlendableDataset([a, b], [0.5, 0.5])
    counts = np.bincount(blend.dataset_index, minlength=2)
    assert len(blend) == 20 and counts.tolist() == [10, 10]  # b (10 samples) at half the blend


def test_blend_as_the_loader_dataset_mixer(corpus, tmp_path):
    from libai.data.build import build_nlp_train_loader

    def gpt(seed, n):
        return GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=8, num_samples=n, seed=seed,
                           cache_dir=str(tmp_path))

    a, b = gpt(1, 60), gpt(2, 20)
    loader, _, _ = build_nlp_train_loader([a, b], train_batch_size=4, num_workers=0, weights=[3, 1],
                                          dataset_mixer=BlendableDataset)
    blend = loader.dataset
    assert isinstance(blend, BlendableDataset) and len(blend) == 80
    assert np.bincount(blend.dataset_index).tolist() == [60, 20]
    batch = next(iter(loader))
    assert tuple(batch.input_ids.tensor.shape) == (4, 8)
