"""The memory-mapped indexed dataset: round trips in every index layout, random access and
corruption errors. (Reading files written by hand from Megatron's published layouts, and our
writer's exact bytes: test_text_index_formats.py.)"""
import os
import pickle
import struct

import numpy as np
import pytest

from libai.data.data_utils.indexed_dataset import (
    IndexedDatasetError,
    MMapIndexedDataset,
    MMapIndexedDatasetBuilder,
    best_fitting_dtype,
    get_indexed_dataset,
)


FORMATS = ["MMIDIDX", "TNTIDX", "LBTXTIDX"]


def _build(prefix, documents, dtype, index_format="MMIDIDX"):
    builder = MMapIndexedDatasetBuilder(prefix + ".bin", dtype, index_format=index_format)
    for sentences in documents:
        for sentence in sentences:
            builder.add_item(sentence)
        builder.end_document()
    builder.finalize(prefix + ".idx")
    return MMapIndexedDataset(prefix)


def _random_documents(rng, num_docs, high):
    docs = []
    for _ in range(num_docs):
        n = int(rng.integers(0, 4))  # empty documents too
        docs.append([rng.integers(0, high, size=int(rng.integers(0, 9))) for _ in range(n)])
    return docs


@pytest.mark.parametrize("index_format", FORMATS)
@pytest.mark.parametrize("vocab_size", [1000, 70000])
def test_round_trip_items_and_documents(tmp_path, vocab_size, index_format):
    rng = np.random.default_rng(0)
    docs = _random_documents(rng, 30, vocab_size)
    ds = _build(str(tmp_path / "c"), docs, best_fitting_dtype(vocab_size), index_format)
    assert ds.index_format == index_format
    flat = [s for d in docs for s in d]
    assert len(ds) == len(flat) and ds.num_documents == len(docs)
    assert ds.dtype == (np.uint16 if vocab_size < 65500 else np.int32)
    for i, sentence in enumerate(flat):
        np.testing.assert_array_equal(ds[i], sentence)
    np.testing.assert_array_equal(ds.sizes, [len(s) for s in flat])
    assert list(ds.doc_idx) == list(np.cumsum([0] + [len(d) for d in docs]))
    for d, sentences in enumerate(docs):
        whole = np.concatenate(sentences) if sentences else np.zeros(0)
        np.testing.assert_array_equal(ds.get_document(d), whole)
        assert ds.document_sizes[d] == len(whole)
        if len(whole) >= 3:  # a range crossing sentence boundaries
            np.testing.assert_array_equal(ds.get_document(d, 1, len(whole) - 2), whole[1:-1])


def test_get_offset_length_and_slices(tmp_path):
    ds = _build(str(tmp_path / "c"), [[[5, 6, 7, 8]], [[9], [10, 11]]], np.uint16)
    np.testing.assert_array_equal(ds.get(0, offset=1, length=2), [6, 7])
    np.testing.assert_array_equal(ds.get(0, offset=2), [7, 8])
    assert [list(a) for a in ds[1:3]] == [[9], [10, 11]]
    np.testing.assert_array_equal(ds[-1], [10, 11])
    with pytest.raises(IndexError, match="cannot read 3 from offset 2"):
        ds.get(0, offset=2, length=3)
    with pytest.raises(IndexError, match="item 3 out of range"):
        ds[3]


def test_pickles_by_prefix_and_reopens(tmp_path):
    ds = _build(str(tmp_path / "c"), [[[1, 2, 3]]], np.uint16)
    blob = pickle.dumps(ds)
    assert len(blob) < 500  # the prefix, not the tokens
    np.testing.assert_array_equal(pickle.loads(blob)[0], [1, 2, 3])


@pytest.mark.parametrize("data_impl", ["mmap", "lazy", "cached", "infer"])
def test_get_indexed_dataset_reads_the_layout_from_the_file(tmp_path, data_impl):
    for index_format in FORMATS:  # any LiBai data_impl name opens any layout
        prefix = str(tmp_path / index_format)
        _build(prefix, [[[1, 2]], [[3]]], np.uint16, index_format)
        ds = get_indexed_dataset(prefix, data_impl=data_impl, skip_warmup=False)
        assert ds.index_format == index_format and [list(ds[i]) for i in range(2)] == [[1, 2], [3]]


def test_get_indexed_dataset_bad_impl_names_the_supported_ones(tmp_path):
    prefix = str(tmp_path / "c")
    _build(prefix, [[[1]]], np.uint16)
    with pytest.raises(ValueError, match=r"data_impl='sparse' is not supported; use one of "
                       r"\['mmap', 'lazy', 'cached', 'infer', 'libai'\].*MMIDIDX.*TNTIDX.*LBTXTIDX"):
        get_indexed_dataset(prefix, data_impl="sparse")


def test_set_doc_idx_regroups_documents(tmp_path):
    ds = _build(str(tmp_path / "c"), [[[1, 2], [3]], [[4]]], np.uint16)
    ds.set_doc_idx([0, 1, 3])
    assert list(ds.get_doc_idx()) == [0, 1, 3] and list(ds.document_sizes) == [2, 2]
    np.testing.assert_array_equal(ds.get_document(1), [3, 4])
    with pytest.raises(ValueError, match="end at the item count 3"):
        ds.set_doc_idx([0, 2])


def test_uint32_has_no_megatron_code(tmp_path):
    with pytest.raises(IndexedDatasetError, match=r"uint32 cannot be stored in a MMIDIDX index"):
        MMapIndexedDatasetBuilder(str(tmp_path / "c.bin"), np.uint32)
    assert not os.path.exists(tmp_path / "c.bin")
    ds = _build(str(tmp_path / "c"), [[[70000]]], np.uint32, "LBTXTIDX")
    assert list(ds[0]) == [70000]


def test_token_out_of_dtype_range_is_refused(tmp_path):
    builder = MMapIndexedDatasetBuilder(str(tmp_path / "c.bin"), np.uint16)
    with pytest.raises(IndexedDatasetError, match="does not fit uint16"):
        builder.add_item([1, 70000])


def test_merge_appends_documents(tmp_path):
    a = _build(str(tmp_path / "a"), [[[1, 2]], [[3]]], np.uint16)
    _build(str(tmp_path / "b"), [[[4], [5, 6]]], np.uint16, "LBTXTIDX")  # layouts mix
    builder = MMapIndexedDatasetBuilder(str(tmp_path / "m.bin"), np.uint16)
    builder.merge_file_(a.path_prefix)
    builder.merge_file_(str(tmp_path / "b"))
    builder.finalize(str(tmp_path / "m.idx"))
    merged = MMapIndexedDataset(str(tmp_path / "m"))
    assert [list(merged.get_document(d)) for d in range(3)] == [[1, 2], [3], [4, 5, 6]]


# ------------------------------------------------------------------------------- errors
# Where each layout keeps its version number, and its header size.
VERSION_FIELD = {"MMIDIDX": (9, "<Q"), "TNTIDX": (8, "<Q"), "LBTXTIDX": (8, "<I")}
HEADER_SIZE = {"MMIDIDX": 34, "TNTIDX": 56, "LBTXTIDX": 40}


@pytest.fixture(params=FORMATS)
def built(tmp_path, request):
    prefix = str(tmp_path / "corpus_text_document")
    _build(prefix, [[[1, 2, 3], [4]], [[5, 6]]], np.uint16, request.param)
    return prefix


def _layout(prefix):
    with open(prefix + ".idx", "rb") as f:
        head = f.read(9)
    return next(name for name, magic in (("MMIDIDX", b"MMIDIDX"), ("TNTIDX", b"TNTIDX"),
                                         ("LBTXTIDX", b"LBTXTIDX")) if head.startswith(magic))


@pytest.mark.parametrize("missing", [".bin", ".idx"])
def test_missing_file_names_prefix(built, missing):
    os.remove(built + missing)
    with pytest.raises(IndexedDatasetError, match=f"'{built}'.*missing \\{missing} file"):
        MMapIndexedDataset(built)


def test_bad_magic_names_prefix(built):
    with open(built + ".idx", "r+b") as f:
        f.write(b"NOTMAGIC")
    with pytest.raises(IndexedDatasetError, match=f"'{built}'.*bad magic b'NOTMAGIC'; readable index "
                       "layouts are: MMIDIDX .*TNTIDX .*LBTXTIDX"):
        MMapIndexedDataset(built)


def test_unknown_version(built):
    offset, fmt = VERSION_FIELD[_layout(built)]
    with open(built + ".idx", "r+b") as f:
        f.seek(offset)
        f.write(struct.pack(fmt, 99))
    with pytest.raises(IndexedDatasetError, match="format version 99"):
        MMapIndexedDataset(built)


def test_truncated_index_names_prefix(built):
    size = os.path.getsize(built + ".idx")
    with open(built + ".idx", "r+b") as f:
        f.truncate(size - 4)
    with pytest.raises(IndexedDatasetError, match=f"'{built}'.*truncated or damaged"):
        MMapIndexedDataset(built)


def test_index_shorter_than_header(built):
    header = HEADER_SIZE[_layout(built)]
    with open(built + ".idx", "r+b") as f:
        f.truncate(10)
    with pytest.raises(IndexedDatasetError, match=f"is 10 bytes, shorter than the {header}-byte header"):
        MMapIndexedDataset(built)


def test_truncated_bin_names_prefix(built):
    with open(built + ".bin", "r+b") as f:
        f.truncate(6)
    with pytest.raises(IndexedDatasetError, match=f"'{built}'.*is 6 bytes.*6 uint16 tokens \\(12 bytes\\)"):
        MMapIndexedDataset(built)
