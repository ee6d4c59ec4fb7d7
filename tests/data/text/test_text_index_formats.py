"""Corpora of Megatron-LM and LiBai open unchanged, and ours are byte-for-byte what they write.

The peers' files here are packed by hand from the published layouts (Megatron-LM's
``indexed_dataset.py``: ``MMIDIDX`` for ``--dataset-impl mmap``, ``TNTIDX`` for ``lazy``/``cached``),
never through libai's writer; the writer's output is compared with bytes spelled out below.
"""
import json
import os
import struct

import numpy as np
import pytest

from libai.data.data_utils import get_indexed_dataset
from libai.data.data_utils.indexed_dataset import IndexedDatasetError, MMapIndexedDatasetBuilder, make_builder
from libai.data.datasets.gpt_dataset import GPT2Dataset

from megatron_layouts import random_documents, write_megatron_mmidx, write_megatron_tntidx  # noqa: E402


# ------------------------------------------------------------------------------------ reading
@pytest.mark.parametrize("dtype,high", [(np.uint16, 65500), (np.int32, 70000)])
def test_megatron_mmidx_reads_back_equal(tmp_path, dtype, high):
    docs = random_documents(25, high)
    prefix = str(tmp_path / "megatron_text_sentence")
    write_megatron_mmidx(prefix, docs, dtype)
    ds = get_indexed_dataset(prefix, "mmap", skip_warmup=False)
    items = [s for d in docs for s in d]
    assert ds.index_format == "MMIDIDX" and ds.dtype == np.dtype(dtype)
    assert len(ds) == len(items) and ds.num_documents == len(docs)
    for i, s in enumerate(items):
        assert ds[i].tolist() == s
    assert ds.sizes.tolist() == [len(s) for s in items]
    assert ds.doc_idx.tolist() == list(np.cumsum([0] + [len(d) for d in docs]))
    for d, doc in enumerate(docs):
        assert ds.get_document(d).tolist() == [t for s in doc for t in s]


@pytest.mark.parametrize("data_impl", ["lazy", "cached"])
def test_megatron_tntidx_reads_back_equal(tmp_path, data_impl):
    docs = random_documents(10, 50000, seed=1)
    prefix = str(tmp_path / "old")
    write_megatron_tntidx(prefix, docs)
    ds = get_indexed_dataset(prefix, data_impl, skip_warmup=True)
    assert ds.index_format == "TNTIDX" and ds.dtype == np.int32
    assert [ds[i].tolist() for i in range(len(ds))] == [s for d in docs for s in d]
    assert [ds.get_document(d).tolist() for d in range(len(docs))] == [[t for s in d for t in s] for d in docs]


def test_float_token_dtype_is_refused(tmp_path):
    prefix = str(tmp_path / "floats")
    write_megatron_mmidx(prefix, [[[1, 2]]], np.uint16)
    with open(prefix + ".idx", "r+b") as f:
        f.seek(17)
        f.write(b"\x06")  # Megatron's code for float32
    with pytest.raises(IndexedDatasetError, match="dtype code 6 means float32, but a token corpus holds integer ids"):
        get_indexed_dataset(prefix)


def test_items_not_back_to_back_are_refused(tmp_path):
    prefix = str(tmp_path / "gappy")
    write_megatron_mmidx(prefix, [[[1, 2], [3]]], np.uint16)
    with open(prefix + ".idx", "r+b") as f:
        f.seek(34 + 4 * 2 + 8)  # second pointer
        f.write(struct.pack("<q", 2))
    with pytest.raises(IndexedDatasetError, match="do not lay the items back to back"):
        get_indexed_dataset(prefix)


@pytest.mark.parametrize("dtype,high", [(np.uint16, 500), (np.int32, 70000)])
def test_gpt_dataset_over_megatron_corpus(tmp_path, dtype, high):
    docs = random_documents(40, high, seed=2)
    prefix = str(tmp_path / "megatron_text_document")
    write_megatron_mmidx(prefix, [[[t for s in d for t in s]] for d in docs], dtype)  # document level
    seq = 8
    ds = GPT2Dataset("gpt", data_prefix=prefix, max_seq_length=seq, seed=5, splits_string="1,0,0",
                     cache_dir=str(tmp_path / "cache"))
    stream = np.concatenate([[t for s in docs[int(d)] for t in s] for d in ds.doc_idx])
    assert sorted(ds.doc_idx.tolist()) == list(range(len(docs)))
    assert len(ds) == (len(stream) - 1) // seq
    for i in range(len(ds)):
        j = int(ds.shuffle_idx[i])
        assert ds.tokens(i).tolist() == stream[j * seq : j * seq + seq + 1].tolist()


# ------------------------------------------------------------------------------------ writing
# Tiny corpus: document 0 = sentences [5, 6, 7] and [8]; document 1 = [300].
TINY = [[[5, 6, 7], [8]], [[300]]]
REFERENCE_IDX = {
    np.uint16: bytes.fromhex(
        "4d4d494449445800 00"  # magic MMIDIDX\0\0
        "0100000000000000"  # version 1
        "08"  # dtype code 8 = uint16
        "0300000000000000"  # 3 items
        "0300000000000000"  # 3 doc_idx entries
        "03000000 01000000 01000000"  # sizes
        "0000000000000000 0600000000000000 0800000000000000"  # byte pointers 0, 6, 8
        "0000000000000000 0200000000000000 0300000000000000"  # doc_idx 0, 2, 3
    ),
    np.int32: bytes.fromhex(
        "4d4d494449445800 00" "0100000000000000" "04"  # dtype code 4 = int32
        "0300000000000000" "0300000000000000" "03000000 01000000 01000000"
        "0000000000000000 0c00000000000000 1000000000000000"  # byte pointers 0, 12, 16
        "0000000000000000 0200000000000000 0300000000000000"
    ),
}
REFERENCE_BIN = {
    np.uint16: bytes.fromhex("0500 0600 0700 0800 2c01"),
    np.int32: bytes.fromhex("05000000 06000000 07000000 08000000 2c010000"),
}


@pytest.mark.parametrize("dtype", [np.uint16, np.int32])
def test_writer_output_matches_reference_bytes(tmp_path, dtype):
    prefix = str(tmp_path / "ours")
    builder = MMapIndexedDatasetBuilder(prefix + ".bin", dtype)  # MMIDIDX is the default layout
    for doc in TINY:
        for sentence in doc:
            builder.add_item(sentence)
        builder.end_document()
    builder.finalize(prefix + ".idx")
    assert open(prefix + ".idx", "rb").read() == REFERENCE_IDX[dtype]
    assert open(prefix + ".bin", "rb").read() == REFERENCE_BIN[dtype]


def test_make_builder_lazy_writes_megatron_tntidx_bytes(tmp_path):
    """LiBai's lazy/cached builder stores int32 tokens; ours writes what the hand packer does."""
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    builder = make_builder(ours + ".bin", impl="lazy", vocab_size=1000)
    for doc in TINY:
        for sentence in doc:
            builder.add_item(sentence)
        builder.end_document()
    builder.finalize(ours + ".idx")
    write_megatron_tntidx(theirs, TINY)
    for ext in (".idx", ".bin"):
        assert open(ours + ext, "rb").read() == open(theirs + ext, "rb").read()


def test_gpt_trains_on_a_megatron_corpus(tmp_path):
    from libai.config import LazyCall, LazyConfig
    from libai.engine import DefaultTrainer

    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    cfg = LazyConfig.load(os.path.join(repo, "configs", "examples", "gpt_tiny_synthetic.py"))
    prefix = str(tmp_path / "megatron_text_document")
    docs = random_documents(60, 128, seed=4)
    write_megatron_mmidx(prefix, [[[t for s in d for t in s]] for d in docs], np.uint16)
    cfg.dataloader.train.dataset = [
        LazyCall(GPT2Dataset)(data_prefix=prefix, max_seq_length=32, seed=1, splits_string="1,0,0",
                              cache_dir=str(tmp_path / "cache"))
    ]
    cfg.dataloader.test = []
    cfg.train.update(dict(output_dir=str(tmp_path / "out"), train_micro_batch_size=4, train_iter=3,
                          log_period=1, checkpointer=dict(period=100)))
    cfg.train.evaluation.enabled = False
    trainer = DefaultTrainer(cfg)
    trainer.train()
    with open(os.path.join(cfg.train.output_dir, "metrics.json")) as f:
        records = [json.loads(line) for line in f if "total_loss" in line]
    losses = [r["total_loss"] for r in records]
    assert [r["iteration"] for r in records] == [0, 1, 2] and all(np.isfinite(losses))
    assert losses[0] == pytest.approx(np.log(128), rel=0.1)  # an untrained model over 128 ids
