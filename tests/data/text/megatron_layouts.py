"""Megatron-LM's index layouts packed by hand with struct, from the published format (its
``indexed_dataset.py``), never through libai's writer: the independent reference the tests read
and compare against."""
import struct

import numpy as np

# Megatron's dtype codes
MEGATRON_CODE = {np.dtype(np.uint16): 8, np.dtype(np.int32): 4}


def _write_bin(prefix, documents, dtype):
    """Write ``PREFIX.bin`` (every sentence's ids back to back); return the sentences and the
    doc_idx list (sentence where each document starts, then the sentence count)."""
    items = [s for doc in documents for s in doc]
    doc_idx = [0]
    for doc in documents:
        doc_idx.append(doc_idx[-1] + len(doc))
    with open(prefix + ".bin", "wb") as f:
        for s in items:
            f.write(np.asarray(s, dtype=dtype).tobytes())
    return items, doc_idx


def write_megatron_mmidx(prefix, documents, dtype):
    """``documents``: list of documents, each a list of sentences (lists of token ids)."""
    dtype = np.dtype(dtype)
    items, doc_idx = _write_bin(prefix, documents, dtype)
    pointers, address = [], 0
    for s in items:
        pointers.append(address)
        address += len(s) * dtype.itemsize
    with open(prefix + ".idx", "wb") as f:
        f.write(b"MMIDIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<B", MEGATRON_CODE[dtype]))
        f.write(struct.pack("<Q", len(items)))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(struct.pack(f"<{len(items)}i", *[len(s) for s in items]))
        f.write(struct.pack(f"<{len(items)}q", *pointers))
        f.write(struct.pack(f"<{len(doc_idx)}q", *doc_idx))


def write_megatron_tntidx(prefix, documents, dtype=np.int32):
    dtype = np.dtype(dtype)
    items, doc_idx = _write_bin(prefix, documents, dtype)
    data_offsets = [0]
    for s in items:
        data_offsets.append(data_offsets[-1] + len(s))
    n = len(items)
    with open(prefix + ".idx", "wb") as f:
        f.write(b"TNTIDX\x00\x00")
        f.write(struct.pack("<Q", 1))
        f.write(struct.pack("<QQ", MEGATRON_CODE[dtype], dtype.itemsize))
        f.write(struct.pack("<QQ", n, n))
        f.write(struct.pack("<Q", len(doc_idx)))
        f.write(struct.pack(f"<{n + 1}q", *range(n + 1)))  # dim_offsets: one dimension per item
        f.write(struct.pack(f"<{n + 1}q", *data_offsets))
        f.write(struct.pack(f"<{n}q", *[len(s) for s in items]))
        f.write(struct.pack(f"<{len(doc_idx)}q", *doc_idx))


def random_documents(num_docs, high, seed=0):
    rng = np.random.default_rng(seed)
    return [
        [rng.integers(0, high, size=int(rng.integers(1, 12))).tolist() for _ in range(int(rng.integers(1, 4)))]
        for _ in range(num_docs)
    ]
