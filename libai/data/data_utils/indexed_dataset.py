"""Memory-mapped indexed token datasets: one writer, one lazy reader.

A tokenized corpus is two files sharing a *prefix*: ``PREFIX.bin`` holds every token id of
every sentence back to back, and ``PREFIX.idx`` says where each sentence starts, how long it
is, and which sentences form a document. The reader maps both files and never loads the
tokens, so a corpus far bigger than memory opens instantly and any sentence or document is one
slice away (O(1) random access).

``.idx`` format, version 1 (all integers little-endian)::

    offset  size          field
    0       8             magic  b"LBTXTIDX"
    8       4  uint32     version (1)
    12      1  uint8      dtype code of the tokens in .bin (see _DTYPE_CODES)
    13      3             zero padding (keeps the arrays below 8-byte aligned)
    16      8  uint64     num_items       (sentences; a document-level corpus has one per doc)
    24      8  uint64     num_doc_idx     (= num_documents + 1)
    32      8  uint64     num_tokens      (total tokens in .bin; checked against its length)
    40      8*num_items   int64 pointers  (byte offset of each item in .bin)
    ..      8*num_doc_idx int64 doc_idx   (item index where each document starts; last = num_items)
    ..      4*num_items   int32 sizes     (tokens per item)

Items of one document are contiguous in ``.bin``, so a whole document (or any token range of
it) is also a single slice: :meth:`MMapIndexedDataset.get_document`.
"""
import os
import struct
from typing import List, Optional, Sequence, Union

import numpy as np

__all__ = [
    "MMapIndexedDataset",
    "MMapIndexedDatasetBuilder",
    "IndexedDatasetError",
    "best_fitting_dtype",
    "data_file_path",
    "index_file_path",
    "get_indexed_dataset",
]

_MAGIC = b"LBTXTIDX"
_VERSION = 1
_HEADER = struct.Struct("<8sIB3xQQQ")  # magic, version, dtype code, num_items, num_doc_idx, num_tokens
# Our own codes; never renumber one (files written earlier would change meaning).
_DTYPE_CODES = {
    1: np.uint8,
    2: np.int8,
    3: np.int16,
    4: np.int32,
    5: np.int64,
    6: np.uint16,
    7: np.uint32,
}
_CODE_OF_DTYPE = {np.dtype(v): k for k, v in _DTYPE_CODES.items()}


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

    Example::

        builder = MMapIndexedDatasetBuilder("corpus_text_document.bin", dtype=np.uint16)
        builder.add_item([5, 6, 7]); builder.end_document()
        builder.finalize("corpus_text_document.idx")
    """

    def __init__(self, bin_path: str, dtype: Union[type, np.dtype] = np.int32) -> None:
        self._dtype = np.dtype(dtype)
        if self._dtype not in _CODE_OF_DTYPE:
            raise IndexedDatasetError(
                f"token dtype {self._dtype} is not supported; use one of "
                f"{sorted(str(np.dtype(d)) for d in _DTYPE_CODES.values())}"
            )
        self._bin_path = bin_path
        self._file = open(bin_path, "wb")
        self._sizes: List[int] = []
        self._doc_idx: List[int] = [0]
        self._num_tokens = 0

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
        sizes = np.asarray(self._sizes, dtype=np.int32)
        pointers = np.zeros(len(sizes), dtype=np.int64)
        if len(sizes) > 1:
            np.cumsum(sizes[:-1].astype(np.int64) * self._dtype.itemsize, out=pointers[1:])
        doc_idx = np.asarray(self._doc_idx, dtype=np.int64)
        header = _HEADER.pack(
            _MAGIC, _VERSION, _CODE_OF_DTYPE[self._dtype], len(sizes), len(doc_idx), self._num_tokens
        )
        tmp_path = idx_path + ".tmp"
        with open(tmp_path, "wb") as out:
            out.write(header)
            out.write(pointers.tobytes())
            out.write(doc_idx.tobytes())
            out.write(sizes.tobytes())
        os.replace(tmp_path, idx_path)


# ------------------------------------------------------------------------------------------
# Reader
# ------------------------------------------------------------------------------------------
class MMapIndexedDataset:
    """Lazy, memory-mapped view of ``PREFIX.bin`` + ``PREFIX.idx``.

    ``ds[i]`` is the token array of item (sentence) ``i``; ``ds.get(i, offset, length)`` a part
    of it; ``ds.get_document(d, offset, length)`` a token range of document ``d`` spanning its
    sentences. Arrays returned are read-only views into the mapped file: copy before editing.
    The object pickles by prefix, so DataLoader workers reopen the files instead of copying them.
    ``skip_warmup`` is accepted for LiBai/Megatron compatibility; pages are read on demand either way.
    """

    def __init__(self, path_prefix: str, skip_warmup: bool = True) -> None:
        self._prefix = path_prefix
        self._open()

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
        self._read_header(idx_path)
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

    def _read_header(self, idx_path: str) -> None:
        raw = self._index_map
        if len(raw) < _HEADER.size:
            raise self._corrupt(f"file is {len(raw)} bytes, shorter than the {_HEADER.size}-byte header")
        magic, version, code, n_items, n_doc_idx, n_tokens = _HEADER.unpack(bytes(raw[: _HEADER.size]))
        if magic != _MAGIC:
            raise self._corrupt(f"bad magic {magic!r} (expected {_MAGIC!r}); not a libai index file")
        if version != _VERSION:
            raise self._corrupt(f"format version {version}, this reader understands {_VERSION}")
        if code not in _DTYPE_CODES:
            raise self._corrupt(f"unknown dtype code {code}")
        expected = _HEADER.size + 8 * n_items + 8 * n_doc_idx + 4 * n_items
        if len(raw) != expected:
            raise self._corrupt(
                f"{len(raw)} bytes but the header announces {n_items} items and "
                f"{n_doc_idx - 1} documents ({expected} bytes); the file is truncated or damaged"
            )
        self._dtype = np.dtype(_DTYPE_CODES[code])
        self._num_tokens = int(n_tokens)
        off = _HEADER.size
        self._pointers = np.frombuffer(raw, dtype=np.int64, count=n_items, offset=off)
        off += 8 * n_items
        self._doc_idx = np.frombuffer(raw, dtype=np.int64, count=n_doc_idx, offset=off)
        off += 8 * n_doc_idx
        self._sizes = np.frombuffer(raw, dtype=np.int32, count=n_items, offset=off)
        if n_doc_idx < 1 or self._doc_idx[0] != 0 or self._doc_idx[-1] != n_items:
            raise self._corrupt("document index does not start at 0 and end at the item count")
        if n_doc_idx > 1 and np.any(np.diff(self._doc_idx) < 0):
            raise self._corrupt("document index is not non-decreasing")
        if int(self._sizes.sum(dtype=np.int64)) != self._num_tokens:
            raise self._corrupt("item sizes do not add up to the token count in the header")

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
            f"tokens={self._num_tokens}, dtype={self._dtype})"
        )


def get_indexed_dataset(data_prefix: str, data_impl: str = "mmap", skip_warmup: bool = True) -> MMapIndexedDataset:
    """Open an indexed dataset by prefix (the LiBai-style config entry point).

    Only the ``mmap`` implementation exists: it is the one that scales (lazy, O(1) access).
    """
    if data_impl != "mmap":
        raise ValueError(f"data_impl={data_impl!r} is not supported; use 'mmap'")
    return MMapIndexedDataset(data_prefix, skip_warmup=skip_warmup)
