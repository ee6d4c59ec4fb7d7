"""The three ``.idx`` layouts an indexed token corpus can have, each encoded and decoded here.

A corpus is always ``PREFIX.bin`` (every token id back to back, in one integer dtype) plus
``PREFIX.idx``; only the index layout differs between tools. The reader recognises the layout by
its leading magic bytes, so a corpus from any of these tools opens unchanged:

``MMIDIDX`` — Megatron-LM's and LiBai's memory-mapped index (their ``--dataset-impl mmap``, and
the default of ``tools/preprocess_data.py``); all integers little-endian::

    offset   size             field
    0        9                magic b"MMIDIDX\\x00\\x00"
    9        8   uint64       version (1)
    17       1   uint8        dtype code (table _MEGATRON_DTYPES)
    18       8   uint64       n = number of items (sentences)
    26       8   uint64       m = number of doc_idx entries (documents + 1)
    34       4*n int32        sizes     (tokens per item)
    ..       8*n int64        pointers  (byte offset of each item in .bin)
    ..       8*m int64        doc_idx   (item where each document starts; last = n)

``TNTIDX`` — Megatron's older index (``--dataset-impl lazy`` or ``cached``; the same bytes)::

    0        8                magic b"TNTIDX\\x00\\x00"
    8        8   uint64       version (1)
    16       8   uint64       dtype code (table _MEGATRON_DTYPES)
    24       8   uint64       element size in bytes
    32       8   uint64       n = number of items
    40       8   uint64       s = number of size entries (one per dimension of each item)
    48       8   uint64       m = number of doc_idx entries
    56       8*(n+1) int64    dim_offsets  (where each item's dimensions start in sizes)
    ..       8*(n+1) int64    data_offsets (element offset of each item in .bin)
    ..       8*s int64        sizes
    ..       8*m int64        doc_idx

``LBTXTIDX`` — libai's first layout (still read, and written on request)::

    0        8                magic b"LBTXTIDX"
    8        4   uint32       version (1)
    12       1   uint8        dtype code (table _LIBAI_DTYPES)
    13       3                zero padding (keeps the arrays below 8-byte aligned)
    16       8   uint64       n = number of items
    24       8   uint64       m = number of doc_idx entries
    32       8   uint64       total tokens in .bin
    40       8*n int64        pointers
    ..       8*m int64        doc_idx
    ..       4*n int32        sizes

Every layout decodes to the same :class:`IndexArrays`, which is all the reader uses.
"""
import struct
from dataclasses import dataclass
from typing import Callable, Dict, Sequence, Tuple

import numpy as np

__all__ = [
    "FORMATS",
    "IndexArrays",
    "IndexFormat",
    "IndexFormatError",
    "decode_index",
    "detect_format",
    "encode_index",
    "supported_formats",
]


class IndexFormatError(ValueError):
    """An ``.idx`` whose bytes do not follow the layout its magic announces."""


@dataclass(frozen=True)
class IndexArrays:
    """What every index layout says about a corpus.

    ``pointers`` are byte offsets into ``.bin``; ``sizes`` are tokens per item; ``doc_idx`` holds
    the item index where each document starts, followed by the item count.
    """

    dtype: np.dtype
    sizes: np.ndarray  # int32
    pointers: np.ndarray  # int64
    doc_idx: np.ndarray  # int64

    @property
    def num_tokens(self) -> int:
        return int(self.sizes.sum(dtype=np.int64))


# Megatron's dtype codes (shared by MMIDIDX and TNTIDX). Codes 6 and 7 are float32 and float64,
# which hold no token ids; they are refused when read and never written.
_MEGATRON_DTYPES: Dict[int, type] = {
    1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 8: np.uint16,
}
_MEGATRON_FLOAT_CODES = {6: "float32", 7: "float64"}
# libai's own codes for LBTXTIDX; never renumber one (files written earlier would change meaning).
_LIBAI_DTYPES: Dict[int, type] = {
    1: np.uint8, 2: np.int8, 3: np.int16, 4: np.int32, 5: np.int64, 6: np.uint16, 7: np.uint32,
}


def _code_of(table: Dict[int, type], dtype: np.dtype, format_name: str) -> int:
    for code, candidate in table.items():
        if np.dtype(candidate) == dtype:
            return code
    names = sorted(str(np.dtype(d)) for d in table.values())
    raise IndexFormatError(f"token dtype {dtype} cannot be stored in a {format_name} index; use one of {names}")


def _dtype_of(table: Dict[int, type], code: int) -> np.dtype:
    if code in table:
        return np.dtype(table[code])
    if table is _MEGATRON_DTYPES and code in _MEGATRON_FLOAT_CODES:
        raise IndexFormatError(
            f"dtype code {code} means {_MEGATRON_FLOAT_CODES[code]}, but a token corpus holds integer ids"
        )
    raise IndexFormatError(f"unknown dtype code {code}")


def _pointers_of(sizes: np.ndarray, itemsize: int) -> np.ndarray:
    """Byte offset of each item when items are stored back to back."""
    pointers = np.zeros(len(sizes), dtype=np.int64)
    if len(sizes) > 1:
        np.cumsum(sizes[:-1].astype(np.int64) * itemsize, out=pointers[1:])
    return pointers


def _array(raw: np.ndarray, dtype: type, count: int, offset: int) -> np.ndarray:
    return np.frombuffer(raw, dtype=np.dtype(dtype).newbyteorder("<"), count=count, offset=offset)


def _check_length(raw: np.ndarray, expected: int, n_items: int, n_doc_idx: int) -> None:
    if len(raw) != expected:
        raise IndexFormatError(
            f"{len(raw)} bytes but the header announces {n_items} items and {max(n_doc_idx - 1, 0)} "
            f"documents ({expected} bytes); the file is truncated or damaged"
        )


def _read_header(
    raw: np.ndarray, header: struct.Struct, table: Dict[int, type]
) -> Tuple[np.dtype, Tuple[int, ...]]:
    """Unpack a header laid out as (magic, version, dtype code, ...); check that it fits and
    that the version is 1, and return the token dtype and the fields after the code."""
    if len(raw) < header.size:
        raise IndexFormatError(f"file is {len(raw)} bytes, shorter than the {header.size}-byte header")
    _, version, code, *rest = header.unpack(bytes(raw[: header.size]))
    if version != 1:
        raise IndexFormatError(f"format version {version}, this reader understands 1")
    return _dtype_of(table, code), tuple(rest)


# ------------------------------------------------------------------------------------ MMIDIDX
_MMIDIDX_MAGIC = b"MMIDIDX\x00\x00"
_MMIDIDX_HEADER = struct.Struct("<9sQBQQ")  # magic, version, dtype code, n, m


def _encode_mmidx(dtype: np.dtype, sizes: np.ndarray, doc_idx: np.ndarray) -> bytes:
    code = _code_of(_MEGATRON_DTYPES, dtype, "MMIDIDX")
    header = _MMIDIDX_HEADER.pack(_MMIDIDX_MAGIC, 1, code, len(sizes), len(doc_idx))
    pointers = _pointers_of(sizes, dtype.itemsize)
    return b"".join((header, sizes.astype("<i4").tobytes(), pointers.astype("<i8").tobytes(),
                     doc_idx.astype("<i8").tobytes()))


def _decode_mmidx(raw: np.ndarray) -> IndexArrays:
    dtype, (n, m) = _read_header(raw, _MMIDIDX_HEADER, _MEGATRON_DTYPES)
    off = _MMIDIDX_HEADER.size
    _check_length(raw, off + 4 * n + 8 * n + 8 * m, n, m)
    sizes = _array(raw, np.int32, n, off)
    pointers = _array(raw, np.int64, n, off + 4 * n)
    doc_idx = _array(raw, np.int64, m, off + 12 * n)
    return IndexArrays(dtype, sizes, pointers, doc_idx)


# ------------------------------------------------------------------------------------- TNTIDX
_TNTIDX_MAGIC = b"TNTIDX\x00\x00"
_TNTIDX_HEADER = struct.Struct("<8sQQQQQQ")  # magic, version, code, element size, n, s, m


def _encode_tntidx(dtype: np.dtype, sizes: np.ndarray, doc_idx: np.ndarray) -> bytes:
    code = _code_of(_MEGATRON_DTYPES, dtype, "TNTIDX")
    n = len(sizes)
    header = _TNTIDX_HEADER.pack(_TNTIDX_MAGIC, 1, code, dtype.itemsize, n, n, len(doc_idx))
    dim_offsets = np.arange(n + 1, dtype="<i8")  # every item is one-dimensional
    data_offsets = np.zeros(n + 1, dtype="<i8")
    np.cumsum(sizes.astype(np.int64), out=data_offsets[1:])
    return b"".join((header, dim_offsets.tobytes(), data_offsets.tobytes(),
                     sizes.astype("<i8").tobytes(), doc_idx.astype("<i8").tobytes()))


def _decode_tntidx(raw: np.ndarray) -> IndexArrays:
    dtype, (element_size, n, s, m) = _read_header(raw, _TNTIDX_HEADER, _MEGATRON_DTYPES)
    if element_size != dtype.itemsize:
        raise IndexFormatError(f"element size {element_size} does not match dtype {dtype} ({dtype.itemsize} bytes)")
    off = _TNTIDX_HEADER.size
    _check_length(raw, off + 16 * (n + 1) + 8 * s + 8 * m, n, m)
    dim_offsets = _array(raw, np.int64, n + 1, off)
    data_offsets = _array(raw, np.int64, n + 1, off + 8 * (n + 1))
    sizes = _array(raw, np.int64, s, off + 16 * (n + 1))
    doc_idx = _array(raw, np.int64, m, off + 16 * (n + 1) + 8 * s)
    if s != n or np.any(dim_offsets != np.arange(n + 1)):
        raise IndexFormatError("items have more than one dimension; a token corpus stores 1-D sequences")
    if len(sizes) and int(sizes.max()) > np.iinfo(np.int32).max:
        raise IndexFormatError("an item is longer than 2**31 - 1 tokens")
    pointers = data_offsets[:-1] * dtype.itemsize
    return IndexArrays(dtype, sizes.astype(np.int32), pointers, doc_idx)


# ----------------------------------------------------------------------------------- LBTXTIDX
_LBTXTIDX_MAGIC = b"LBTXTIDX"
_LBTXTIDX_HEADER = struct.Struct("<8sIB3xQQQ")  # magic, version, code, n, m, tokens


def _encode_lbtxtidx(dtype: np.dtype, sizes: np.ndarray, doc_idx: np.ndarray) -> bytes:
    code = _code_of(_LIBAI_DTYPES, dtype, "LBTXTIDX")
    tokens = int(sizes.sum(dtype=np.int64))
    header = _LBTXTIDX_HEADER.pack(_LBTXTIDX_MAGIC, 1, code, len(sizes), len(doc_idx), tokens)
    pointers = _pointers_of(sizes, dtype.itemsize)
    return b"".join((header, pointers.astype("<i8").tobytes(), doc_idx.astype("<i8").tobytes(),
                     sizes.astype("<i4").tobytes()))


def _decode_lbtxtidx(raw: np.ndarray) -> IndexArrays:
    dtype, (n, m, tokens) = _read_header(raw, _LBTXTIDX_HEADER, _LIBAI_DTYPES)
    off = _LBTXTIDX_HEADER.size
    _check_length(raw, off + 8 * n + 8 * m + 4 * n, n, m)
    pointers = _array(raw, np.int64, n, off)
    doc_idx = _array(raw, np.int64, m, off + 8 * n)
    sizes = _array(raw, np.int32, n, off + 8 * n + 8 * m)
    arrays = IndexArrays(dtype, sizes, pointers, doc_idx)
    if arrays.num_tokens != tokens:
        raise IndexFormatError("item sizes do not add up to the token count in the header")
    return arrays


# ------------------------------------------------------------------------------------ registry
@dataclass(frozen=True)
class IndexFormat:
    """One ``.idx`` layout: its name, magic, and how to write and read it."""

    name: str
    magic: bytes
    encode: Callable[[np.dtype, np.ndarray, np.ndarray], bytes]
    decode: Callable[[np.ndarray], IndexArrays]
    written_by: str


FORMATS: Dict[str, IndexFormat] = {
    f.name: f
    for f in (
        IndexFormat("MMIDIDX", _MMIDIDX_MAGIC, _encode_mmidx, _decode_mmidx,
                    "Megatron-LM / LiBai --dataset-impl mmap"),
        IndexFormat("TNTIDX", _TNTIDX_MAGIC, _encode_tntidx, _decode_tntidx,
                    "Megatron-LM / LiBai --dataset-impl lazy or cached"),
        IndexFormat("LBTXTIDX", _LBTXTIDX_MAGIC, _encode_lbtxtidx, _decode_lbtxtidx,
                    "libai before MMIDIDX became its default"),
    )
}


def supported_formats() -> str:
    """One line naming every readable layout and its origin (for error messages)."""
    return "; ".join(f"{f.name} (magic {f.magic!r}, {f.written_by})" for f in FORMATS.values())


def detect_format(head: bytes) -> IndexFormat:
    """The layout whose magic ``head`` (the first bytes of an ``.idx``) starts with."""
    for candidate in FORMATS.values():
        if head[: len(candidate.magic)] == candidate.magic:
            return candidate
    raise IndexFormatError(f"bad magic {bytes(head[:8])!r}; readable index layouts are: {supported_formats()}")


def encode_index(format_name: str, dtype: np.dtype, sizes: Sequence[int], doc_idx: Sequence[int]) -> bytes:
    """The complete ``.idx`` bytes of a corpus in layout ``format_name``."""
    if format_name not in FORMATS:
        raise IndexFormatError(f"unknown index format {format_name!r}; use one of {sorted(FORMATS)}")
    sizes_array = np.asarray(sizes, dtype=np.int32)
    doc_array = np.asarray(doc_idx, dtype=np.int64)
    return FORMATS[format_name].encode(np.dtype(dtype), sizes_array, doc_array)


def decode_index(raw: np.ndarray) -> Tuple[IndexFormat, IndexArrays]:
    """Recognise the layout of ``raw`` (the ``.idx`` as uint8) and decode it."""
    fmt = detect_format(bytes(raw[:9]))
    return fmt, fmt.decode(raw)
