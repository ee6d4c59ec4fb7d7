"""GPT2Dataset: windows over shuffled documents, epochs, determinism, the index cache."""
import os

import numpy as np
import oneflow as flow
import pytest

from libai.data.data_utils.gpt_index import build_gpt_indices, num_epochs_needed
from libai.data.data_utils.splits import split_documents
from libai.data.datasets.gpt_dataset import GPT2Dataset, GPTDataset
from libai.data.structures import Instance


def _stream(corpus, doc_order):
    """The reference token stream: documents tokenized afresh, in the dataset's order."""
    return np.concatenate([corpus.doc_tokens(int(d)) for d in doc_order])


def test_samples_are_windows_of_the_shuffled_document_stream(corpus, tmp_path):
    seq = 16
    ds = GPT2Dataset("gpt", data_prefix=corpus.doc_prefix, max_seq_length=seq, num_samples=None,
                     seed=7, cache_dir=str(tmp_path))
    start, end = split_documents("949,50,1", "train", len(corpus.docs))
    assert sorted(ds.doc_idx) == list(range(start, end))  # one epoch: a permutation of the split
    stream = _stream(corpus, ds.doc_idx)
    assert len(ds) == (len(stream) - 1) // seq
    served = set()
    for i in range(len(ds)):
        j = int(ds.shuffle_idx[i])
        served.add(j)
        np.testing.assert_array_equal(ds.tokens(i), stream[j * seq : j * seq + seq + 1])
    assert served == set(range(len(ds)))


def test_instance_fields_shapes_and_placement(corpus, tmp_path):
    ds = GPTDataset(data_prefix=corpus.doc_prefix, max_seq_length=12, seed=1, cache_dir=str(tmp_path))
    sample = ds[3]
    assert isinstance(sample, Instance) and list(sample.get_fields()) == ["input_ids", "labels"]
    tokens = ds.tokens(3)
    assert sample.input_ids.tensor.dtype == flow.int64 and tuple(sample.input_ids.tensor.shape) == (12,)
    np.testing.assert_array_equal(sample.input_ids.tensor.numpy(), tokens[:-1])
    np.testing.assert_array_equal(sample.labels.tensor.numpy(), tokens[1:])
    assert sample.input_ids.placement_idx == 0 and sample.labels.placement_idx == -1
    batch = Instance.stack([ds[0], ds[1]])
    assert tuple(batch.labels.tensor.shape) == (2, 12)


def test_num_samples_sets_epochs_and_last_epoch_is_served_last(corpus, tmp_path):
    seq = 32
    one_epoch = len(GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=seq, cache_dir=str(tmp_path)))
    wanted = int(one_epoch * 2.5)
    ds = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=seq, num_samples=wanted, seed=2,
                     cache_dir=str(tmp_path))
    assert len(ds) == wanted
    start, end = split_documents("949,50,1", "train", len(corpus.docs))
    epochs = len(ds.doc_idx) // (end - start)
    assert epochs == 3 and len(ds.doc_idx) == 3 * (end - start)
    for e in range(epochs):  # each epoch a fresh permutation of the split
        assert sorted(ds.doc_idx[e * (end - start) : (e + 1) * (end - start)]) == list(range(start, end))
    tokens_per_epoch = sum(len(corpus.doc_tokens(d)) for d in range(start, end))
    first_block = -(-2 * tokens_per_epoch // seq)  # samples starting in epochs 1-2
    assert sorted(ds.shuffle_idx[:first_block]) == list(range(first_block))
    assert min(ds.shuffle_idx[first_block:]) >= first_block
    stream = _stream(corpus, ds.doc_idx)
    for i in (0, first_block, wanted - 1):
        j = int(ds.shuffle_idx[i])
        np.testing.assert_array_equal(ds.tokens(i), stream[j * seq : j * seq + seq + 1])


def test_num_epochs_needed():
    assert num_epochs_needed(100, 10, None) == 1
    assert num_epochs_needed(100, 10, 9) == 1  # 91 tokens
    assert num_epochs_needed(100, 10, 10) == 2  # 101 tokens
    with pytest.raises(ValueError, match="no tokens"):
        num_epochs_needed(0, 10, 1)


def test_empty_documents_are_skipped_by_windows():
    sizes = np.array([0, 5, 0, 0, 4, 0])
    out = build_gpt_indices(sizes, np.arange(6), seq_length=3, num_samples=None, seed=0)
    order_sizes = sizes[out["doc_idx"]]
    for position, offset in out["sample_idx"]:
        assert offset < order_sizes[position]  # every boundary points into a real token


def test_same_seed_same_samples_other_seed_differs(corpus, tmp_path):
    def build(seed, cache):
        return GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=16, seed=seed,
                           cache_dir=str(tmp_path / cache))

    a, b, c = build(5, "a"), build(5, "b"), build(6, "c")
    assert all(np.array_equal(a.tokens(i), b.tokens(i)) for i in range(len(a)))
    assert not all(np.array_equal(a.tokens(i), c.tokens(i)) for i in range(min(len(a), len(c))))


def test_index_cache_built_once_then_reused(corpus, tmp_path):
    first = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=16, num_samples=50, seed=9,
                        cache_dir=str(tmp_path))
    assert not first.index_cache_hit
    files = sorted(os.listdir(tmp_path))
    assert len(files) == 3 and all(f.startswith("docs_text_document_gpt_train_") for f in files)
    assert {f.rsplit("_", 2)[-2] + "_" + f.rsplit("_", 2)[-1] for f in files} == {
        "doc_idx.npy", "sample_idx.npy", "shuffle_idx.npy"
    }
    mtimes = {f: os.stat(tmp_path / f).st_mtime_ns for f in files}
    second = GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=16, num_samples=50, seed=9,
                         cache_dir=str(tmp_path))
    assert second.index_cache_hit
    assert {f: os.stat(tmp_path / f).st_mtime_ns for f in os.listdir(tmp_path)} == mtimes
    for k in (0, 17, 49):  # sample k of a fresh build equals sample k read from the cache
        np.testing.assert_array_equal(first.tokens(k), second.tokens(k))
    GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=16, num_samples=50, seed=10,
                cache_dir=str(tmp_path))
    assert len(os.listdir(tmp_path)) == 6  # another seed, another set


def test_default_cache_dir_is_beside_the_data(tmp_path, corpus):
    import shutil

    for ext in (".bin", ".idx"):
        shutil.copy(corpus.doc_prefix + ext, tmp_path / ("c" + ext))
    GPT2Dataset(data_prefix=str(tmp_path / "c"), max_seq_length=8, seed=1)
    assert len([f for f in os.listdir(tmp_path) if f.endswith(".npy")]) == 3


def test_unusable_cache_dir_names_the_fix(corpus, tmp_path):
    blocker = tmp_path / "not_a_dir"
    blocker.write_text("")  # a file where the cache directory would have to be created
    with pytest.raises(PermissionError, match="cannot create the index cache directory .*pass cache_dir="):
        GPT2Dataset(data_prefix=corpus.doc_prefix, max_seq_length=8, cache_dir=str(blocker / "cache"))


def test_bad_arguments(corpus, tmp_path):
    with pytest.raises(ValueError, match="give data_prefix"):
        GPT2Dataset(max_seq_length=8)
    with pytest.raises(ValueError, match="split 'test' .* is empty"):
        GPT2Dataset(data_prefix=corpus.doc_prefix, split="test", splits_string="1,1,0", cache_dir=str(tmp_path))


def test_split_shorter_than_one_sample_repeats_its_documents(corpus, tmp_path):
    """As in LiBai: a held-out part with fewer tokens than one sample still gives a sample,
    read from its documents repeated (epochs) until the window is full."""
    ratios = f"{len(corpus.docs) - 2},1,1"  # a one-document test part
    start, end = split_documents(ratios, "test", len(corpus.docs))
    tokens = sum(len(corpus.doc_tokens(d)) for d in range(start, end))
    seq = tokens + 5  # longer than the whole split
    ds = GPT2Dataset(data_prefix=corpus.doc_prefix, split="test", splits_string=ratios,
                     max_seq_length=seq, cache_dir=str(tmp_path))
    assert len(ds) == 1
    stream = _stream(corpus, ds.doc_idx)
    assert len(ds.doc_idx) == 2 * (end - start)  # two passes over the split fill seq + 1 tokens
    np.testing.assert_array_equal(ds.tokens(0), stream[: seq + 1])
    sample = ds[0]
    assert tuple(sample.input_ids.tensor.shape) == (seq,)
