"""Memory-mapped indexed token datasets: one writer, one lazy reader, three index layouts.

A tokenized corpus is two files sharing a *prefix*: ``PREFIX.bin`` holds every token id of
every sentence back to back, and ``PREFIX.idx`` says where each sentence starts, how long it
is, and which sentences form a document. The reader maps both files and never loads the
tokens, so a corpus far bigger than memory opens instantly and any sentence or document is one
slice away (O(1) random access).

The ``.idx`` layout is recognised from its magic bytes (see :mod:`.index_formats`): Megatron-LM's
and LiBai's ``MMIDIDX`` (what the builder writes by default, so their tools read our corpora),
their older ``TNTIDX`` (``--dataset-impl lazy``/``cached``), and libai's first layout
``LBTXTIDX``. Whatever the layout, items of one document are contiguous in ``.bin``, so a whole
document (or any token range of it) is a single slice: :meth:`MMapIndexedDataset.get_document`.
"""
import logging
import os
from typing import List, Optional, Sequence, Union

import numpy as np

from libai.data.data_utils.index_formats import (
    FORMATS,
    IndexFormatError,
    decode_index,
    encode_index,
    supported_formats,
)

__all__ = [
    "DATA_IMPLS",
    "IndexedCachedDataset",
    "IndexedDataset",
    "MMapIndexedDataset",
    "MMapIndexedDatasetBuilder",
    "IndexedDatasetError",
    "best_fitting_dtype",
    "data_file_path",
    "index_file_path",
    "get_indexed_dataset",
    "make_builder",
]

logger = logging.getLogger(__name__)

# LiBai's / Megatron's ``data_impl`` names, and the index layout each one writes. The reader needs
# none of them (it reads the layout from the file); "infer" is Megatron's "look at the file".
DATA_IMPLS = {"mmap": "MMIDIDX", "lazy": "TNTIDX", "cached": "TNTIDX", "libai": "LBTXTIDX"}
_READ_IMPLS = ("mmap", "lazy", "cached", "infer", "libai")
DEFAULT_INDEX_FORMAT = "MMIDIDX"


class IndexedDatasetError(ValueError):
    """A missing, corrupt or inconsistent ``.bin``/``.idx`` pair."""


def data_file_path(prefix: str) -> str:
    return prefix + ".bin"


def index_file_path(prefix: str) -> str:
    return prefix + ".idx"


def best_fitting_dtype(vocab_size: Optional[int]) -> type:
    """The smallest token dtype for a vocabulary: ``uint16`` below 65500 ids, else ``int32``.

    Halving the token width halves the disk footprint and page-cache pressure of the corpus,
    which is what bounds data loading on big runs.
    """
    if vocab_size is not None and vocab_size < 65500:
        return np.uint16
    return np.int32


# ------------------------------------------------------------------------------------------
# Writer
# ------------------------------------------------------------------------------------------
class MMapIndexedDatasetBuilder:
    """Append items (sentences) and document boundaries, then write the index.

    Args:
        bin_path: the ``.bin`` to write (``PREFIX.bin``).
        dtype: token dtype; :func:`best_fitting_dtype` picks the smallest that holds a vocabulary.
        index_format: ``.idx`` layout: ``"MMIDIDX"`` (default; what Megatron-LM and LiBai read
            with ``data_impl="mmap"``), ``"TNTIDX"`` (their ``lazy``/``cached``) or ``"LBTXTIDX"``
            (libai's first layout). The ``.bin`` is the same for all three.

    Example::

        builder = MMapIndexedDatasetBuilder("corpus_text_document.bin", dtype=np.uint16)
        builder.add_item([5, 6, 7]); builder.end_document()
        builder.finalize("corpus_text_document.idx")
    """

    def __init__(
        self, bin_path: str, dtype: Union[type, np.dtype] = np.int32, index_format: str = DEFAULT_INDEX_FORMAT
    ) -> None:
        self._dtype = np.dtype(dtype)
        if index_format not in FORMATS:
            raise IndexedDatasetError(
                f"unknown index_format {index_format!r}; use one of {sorted(FORMATS)}"
            )
        try:  # refuse a dtype the layout cannot record before writing any token
            encode_index(index_format, self._dtype, [], [0])
        except IndexFormatError as exc:
            raise IndexedDatasetError(str(exc)) from None
        self._index_format = index_format
        self._bin_path = bin_path
        self._file = open(bin_path, "wb")
        self._sizes: List[int] = []
        self._doc_idx: List[int] = [0]
        self._num_tokens = 0

    @property
    def index_format(self) -> str:
        return self._index_format

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    def add_item(self, tokens: Union[Sequence[int], np.ndarray]) -> None:
        """Append one item (a sentence, or a whole document at document level)."""
        array = np.asarray(tokens)
        if array.ndim != 1:
            raise IndexedDatasetError(f"an item is a 1-D sequence of token ids, got shape {array.shape}")
        if array.size:
            info = np.iinfo(self._dtype)
            low, high = int(array.min()), int(array.max())
            if low < info.min or high > info.max:
                raise IndexedDatasetError(
                    f"token id range [{low}, {high}] does not fit {self._dtype} "
                    f"([{info.min}, {info.max}]) in {self._bin_path}; build with a wider dtype "
                    "(best_fitting_dtype(vocab_size))"
                )
        self._file.write(array.astype(self._dtype, copy=False).tobytes(order="C"))
        self._sizes.append(int(array.size))
        self._num_tokens += int(array.size)

    def end_document(self) -> None:
        """Close the current document (possibly empty) after its items."""
        self._doc_idx.append(len(self._sizes))

    def merge_file_(self, other_prefix: str) -> None:
        """Append every document of an existing dataset (e.g. one shard of a parallel job)."""
        other = MMapIndexedDataset(other_prefix)
        if other.dtype != self._dtype:
            raise IndexedDatasetError(
                f"cannot merge {other_prefix} (dtype {other.dtype}) into a {self._dtype} builder"
            )
        base = len(self._sizes)
        with open(data_file_path(other_prefix), "rb") as src:
            while True:
                block = src.read(1 << 24)
                if not block:
                    break
                self._file.write(block)
        self._sizes.extend(int(s) for s in other.sizes)
        self._doc_idx.extend(int(d) + base for d in other.doc_idx[1:])
        self._num_tokens += int(other.sizes.sum())

    def discard(self) -> None:
        """Abandon the build: close and delete the partial ``.bin`` (no ``.idx`` was written)."""
        self._file.close()
        if os.path.exists(self._bin_path):
            os.remove(self._bin_path)

    def finalize(self, idx_path: str) -> None:
        """Flush ``.bin`` and write the ``.idx`` (under a temporary name, then renamed)."""
        self._file.close()
        if self._doc_idx[-1] != len(self._sizes):
            # Trailing items without end_document() still belong to a document.
            self._doc_idx.append(len(self._sizes))
        payload = encode_index(self._index_format, self._dtype, self._sizes, self._doc_idx)
        tmp_path = idx_path + ".tmp"
        with open(tmp_path, "wb") as out:
            out.write(payload)
        os.replace(tmp_path, idx_path)


# ------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------
class MMapIndexedDataset:
    """Lazy, memory-mapped view of ``PREFIX.bin`` + ``PREFIX.idx`` (any layout in
    :mod:`.index_formats`, recognised from the file).

    ``ds[i]`` is the token array of item (sentence) ``i``; ``ds.get(i, offset, length)`` a part
    of it; ``ds.get_document(d, offset, length)`` a token range of document ``d`` spanning its
    sentences. Arrays returned are read-only views into the mapped file: copy before editing.
    The object pickles by prefix, so DataLoader workers reopen the files instead of copying them.

    ``skip_warmup=False`` reads both files through once at opening, as Megatron and LiBai do, so
    that the first epoch finds them in the page cache; the default skips it (pages are read on
    demand, which is what a corpus larger than memory needs anyway).
    """

    def __init__(self, path_prefix: str, skip_warmup: bool = True) -> None:
        self._prefix = path_prefix
        self._open()
        if not skip_warmup:
            for path in (index_file_path(path_prefix), data_file_path(path_prefix)):
                _read_through(path)

    # ----------------------------------------------------------------- opening and checks
    def _open(self) -> None:
        prefix = self._prefix
        idx_path, bin_path = index_file_path(prefix), data_file_path(prefix)
        for path, what in ((idx_path, ".idx"), (bin_path, ".bin")):
            if not os.path.isfile(path):
                raise IndexedDatasetError(
                    f"indexed dataset {prefix!r}: missing {what} file {path}. Create the pair with "
                    "`python tools/preprocess_data.py --input corpus.jsonl --output-prefix ...` and "
                    "pass the prefix without extension (e.g. .../corpus_text_document)"
                )
        self._index_map = np.memmap(idx_path, dtype=np.uint8, mode="r")
        self._read_index()
        self._check_bin(bin_path)
        if self._num_tokens:
            self._bin_map = np.memmap(bin_path, dtype=self._dtype, mode="r")
        else:  # mmap cannot map an empty file
            self._bin_map = np.zeros(0, dtype=self._dtype)
        self._doc_sizes: Optional[np.ndarray] = None

    def _corrupt(self, problem: str) -> IndexedDatasetError:
        return IndexedDatasetError(
            f"indexed dataset {self._prefix!r}: corrupt index {index_file_path(self._prefix)}: "
            f"{problem}. Re-run tools/preprocess_data.py to rebuild it"
        )

    def _read_index(self) -> None:
        try:
            fmt, arrays = decode_index(self._index_map)
        except IndexFormatError as exc:
            raise self._corrupt(str(exc)) from None
        self._index_format = fmt.name
        self._dtype = arrays.dtype
        self._sizes, self._pointers, self._doc_idx = arrays.sizes, arrays.pointers, arrays.doc_idx
        self._num_tokens = arrays.num_tokens
        n_items = len(self._sizes)
        if len(self._doc_idx) < 1 or self._doc_idx[0] != 0 or self._doc_idx[-1] != n_items:
            raise self._corrupt("document index does not start at 0 and end at the item count")
        if len(self._doc_idx) > 1 and np.any(np.diff(self._doc_idx) < 0):
            raise self._corrupt("document index is not non-decreasing")
        if n_items and (
            self._pointers[0] != 0
            or int(self._pointers[-1]) + int(self._sizes[-1]) * self._dtype.itemsize
            != self._num_tokens * self._dtype.itemsize
        ):
            # get_document reads a document as one slice: items must lie back to back.
            raise self._corrupt("item pointers do not lay the items back to back from byte 0")

    def _check_bin(self, bin_path: str) -> None:
        expected = self._num_tokens * self._dtype.itemsize
        actual = os.path.getsize(bin_path)
        if actual != expected:
            raise IndexedDatasetError(
                f"indexed dataset {self._prefix!r}: data file {bin_path} is {actual} bytes but its "
                f"index describes {self._num_tokens} {self._dtype} tokens ({expected} bytes); the "
                ".bin is truncated or belongs to another index. Re-run tools/preprocess_data.py"
            )

    # ----------------------------------------------------------------- pickling
    def __getstate__(self) -> dict:
        return {"_prefix": self._prefix}

    def __setstate__(self, state: dict) -> None:
        self._prefix = state["_prefix"]
        self._open()

    # ----------------------------------------------------------------- access
    def __len__(self) -> int:
        return len(self._sizes)

    def __getitem__(self, idx: Union[int, slice]) -> Union[np.ndarray, List[np.ndarray]]:
        if isinstance(idx, slice):
            return [self.get(i) for i in range(*idx.indices(len(self)))]
        return self.get(int(idx))

    def get(self, idx: int, offset: int = 0, length: Optional[int] = None) -> np.ndarray:
        """Tokens ``offset : offset + length`` of item ``idx`` (to its end when ``length`` is None)."""
        n = len(self)
        if not -n <= idx < n:
            raise IndexError(f"item {idx} out of range for {self._prefix!r} with {n} items")
        idx %= n
        size = int(self._sizes[idx])
        return self._slice(int(self._pointers[idx]), size, offset, length, f"item {idx}")

    def get_document(self, doc: int, offset: int = 0, length: Optional[int] = None) -> np.ndarray:
        """Tokens ``offset : offset + length`` of document ``doc``, across its sentences."""
        n = self.num_documents
        if not -n <= doc < n:
            raise IndexError(f"document {doc} out of range for {self._prefix!r} with {n} documents")
        doc %= n
        first = int(self._doc_idx[doc])
        size = int(self.document_sizes[doc])
        if size == 0:
            return self._bin_map[0:0]
        return self._slice(int(self._pointers[first]), size, offset, length, f"document {doc}")

    def _slice(self, pointer: int, size: int, offset: int, length: Optional[int], what: str) -> np.ndarray:
        if length is None:
            length = size - offset
        if offset < 0 or length < 0 or offset + length > size:
            raise IndexError(
                f"{what} of {self._prefix!r} has {size} tokens; cannot read {length} from offset {offset}"
            )
        start = pointer // self._dtype.itemsize + offset
        return self._bin_map[start : start + length]

    # ----------------------------------------------------------------- metadata
    @property
    def sizes(self) -> np.ndarray:
        """Tokens per item (int32, read-only)."""
        return self._sizes

    @property
    def doc_idx(self) -> np.ndarray:
        """Item index where each document starts, plus the item count at the end."""
        return self._doc_idx

    def get_doc_idx(self) -> np.ndarray:
        """Same as :attr:`doc_idx` (LiBai's spelling)."""
        return self._doc_idx

    def set_doc_idx(self, doc_idx: Union[Sequence[int], np.ndarray]) -> None:
        """Regroup the items into other documents (LiBai's dataset splitting does this).

        ``doc_idx`` must start at 0, end at the item count and never decrease.
        """
        array = np.asarray(doc_idx, dtype=np.int64)
        if len(array) < 1 or array[0] != 0 or array[-1] != len(self) or np.any(np.diff(array) < 0):
            raise ValueError(
                f"doc_idx must start at 0, end at the item count {len(self)} and never decrease; "
                f"got {len(array)} entries from {array[:1].tolist()} to {array[-1:].tolist()}"
            )
        self._doc_idx = array
        self._doc_sizes = None

    @property
    def index_format(self) -> str:
        """Layout of the ``.idx`` file: ``"MMIDIDX"``, ``"TNTIDX"`` or ``"LBTXTIDX"``."""
        return self._index_format

    @property
    def num_documents(self) -> int:
        return len(self._doc_idx) - 1

    @property
    def document_sizes(self) -> np.ndarray:
        """Tokens per document (int64), computed once."""
        if self._doc_sizes is None:
            csum = np.zeros(len(self._sizes) + 1, dtype=np.int64)
            np.cumsum(self._sizes, out=csum[1:])
            self._doc_sizes = csum[self._doc_idx[1:]] - csum[self._doc_idx[:-1]]
        return self._doc_sizes

    @property
    def dtype(self) -> np.dtype:
        return self._dtype

    @property
    def num_tokens(self) -> int:
        return self._num_tokens

    @property
    def path_prefix(self) -> str:
        return self._prefix

    @property
    def supports_prefetch(self) -> bool:
        return False

    @staticmethod
    def exists(prefix: str) -> bool:
        return os.path.isfile(index_file_path(prefix)) and os.path.isfile(data_file_path(prefix))

    def __repr__(self) -> str:
        return (
            f"MMapIndexedDataset({self._prefix!r}, items={len(self)}, documents={self.num_documents}, "
            f"tokens={self._num_tokens}, dtype={self._dtype}, index={self._index_format})"
        )


class IndexedDataset(MMapIndexedDataset):
    """LiBai's name for the reader of ``data_impl="lazy"`` corpora; the same reader (it reads
    every layout, recognised from the file)."""

    def __init__(self, path: str) -> None:
        super().__init__(path)


class IndexedCachedDataset(IndexedDataset):
    """LiBai's name for the reader of ``data_impl="cached"`` corpora. Reading is memory-mapped,
    so the operating system's page cache does the caching."""


def _read_through(path: str, block: int = 64 << 20) -> None:
    with open(path, "rb") as handle:
        while handle.read(block):
            pass


def get_indexed_dataset(
    data_prefix: str, data_impl: str = "mmap", skip_warmup: bool = False
) -> MMapIndexedDataset:
    """Open the corpus ``data_prefix`` (``.bin``/``.idx`` without the extension); the LiBai and
    Megatron-LM entry point of configs.

    The index layout is read from the file's magic, so ``data_impl`` (``"mmap"``, ``"lazy"``,
    ``"cached"``, ``"infer"``) only has to be one of the names those tools use: a corpus made by
    Megatron-LM's or LiBai's ``preprocess_data.py`` with any of them, or by ours, opens unchanged.
    ``skip_warmup=False`` reads the files through once first (see :class:`MMapIndexedDataset`).
    """
    if data_impl not in _READ_IMPLS:
        raise ValueError(
            f"data_impl={data_impl!r} is not supported; use one of {list(_READ_IMPLS)} (the layout "
            f"itself is read from the file). Readable index layouts: {supported_formats()}"
        )
    dataset = MMapIndexedDataset(data_prefix, skip_warmup=skip_warmup)
    logger.info(
        "indexed dataset %s: %s index, %d documents, %d sentences, %d tokens", data_prefix,
        dataset.index_format, dataset.num_documents, len(dataset), dataset.num_tokens,
    )
    return dataset


def make_builder(out_file: str, impl: str = "mmap", vocab_size: Optional[int] = None) -> MMapIndexedDatasetBuilder:
    """A builder writing ``out_file`` (the ``.bin``) in the layout LiBai's ``impl`` names.

    As in LiBai, ``mmap`` stores tokens in :func:`best_fitting_dtype` of ``vocab_size`` and
    ``lazy``/``cached`` in int32; ``libai`` writes the LBTXTIDX layout with the fitting dtype.
    """
    if impl not in DATA_IMPLS:
        raise ValueError(f"impl={impl!r} is not supported; use one of {sorted(DATA_IMPLS)}")
    index_format = DATA_IMPLS[impl]
    dtype = np.int32 if index_format == "TNTIDX" else best_fitting_dtype(vocab_size)
    return MMapIndexedDatasetBuilder(out_file, dtype, index_format=index_format)
