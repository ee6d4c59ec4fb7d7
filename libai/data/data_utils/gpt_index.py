"""Sample indices for contiguous-token (GPT-style) datasets.

The training stream is the concatenation of the split's documents, in a fresh random order
each epoch. Sample ``i`` is tokens ``i*L : i*L + L + 1`` of that stream (``L`` = sequence
length; the extra token gives the last label), so samples cross document boundaries and no
token is wasted on padding. Three arrays describe it:

* ``doc_idx``: the document ids of the stream, epoch after epoch;
* ``sample_idx`` (``[num_samples + 1, 2]``): for each sample boundary, the position in
  ``doc_idx`` and the token offset inside that document where the sample starts;
* ``shuffle_idx``: the order in which samples are served. Samples that start in the last
  (partial) epoch are shuffled among themselves and served last, so a ``num_samples`` that
  needs 2.3 epochs sees two full epochs first and a random 0.3 of the third.

Everything is vectorised NumPy (cumulative sums and a binary search), so millions of
documents index in seconds.
"""
from typing import Dict, Optional

import numpy as np

__all__ = ["build_gpt_indices", "num_epochs_needed"]


def num_epochs_needed(tokens_per_epoch: int, seq_length: int, num_samples: Optional[int]) -> int:
    """Epochs whose tokens cover ``num_samples`` samples of ``seq_length + 1`` tokens."""
    if tokens_per_epoch <= 0:
        raise ValueError("the split holds no tokens; check the data prefix and splits_string")
    if num_samples is None:
        return 1
    needed = num_samples * seq_length + 1
    return max(1, -(-needed // tokens_per_epoch))


def _build_doc_idx(documents: np.ndarray, num_epochs: int, rng: np.random.Generator) -> np.ndarray:
    orders = [rng.permutation(documents) for _ in range(num_epochs)]
    return np.concatenate(orders).astype(np.int64)


def _build_sample_idx(
    stream_doc_sizes: np.ndarray, seq_length: int, num_samples: int
) -> np.ndarray:
    cum = np.zeros(len(stream_doc_sizes) + 1, dtype=np.int64)
    np.cumsum(stream_doc_sizes, out=cum[1:])
    starts = np.arange(num_samples + 1, dtype=np.int64) * seq_length
    # The last document whose start is <= the token: skips empty documents at that point.
    position = np.searchsorted(cum, starts, side="right") - 1
    offset = starts - cum[position]
    return np.stack([position, offset], axis=1)


def build_gpt_indices(
    document_sizes: np.ndarray,
    documents: np.ndarray,
    seq_length: int,
    num_samples: Optional[int],
    seed: int,
) -> Dict[str, np.ndarray]:
    """``doc_idx``, ``sample_idx`` and ``shuffle_idx`` for the split ``documents``.

    Args:
        document_sizes: tokens of every document of the corpus (indexed by document id).
        documents: ids of the documents of this split.
        seq_length: tokens of model input per sample (each sample reads one more).
        num_samples: samples wanted; ``None`` means exactly one epoch's worth (at least one
            sample: a split shorter than a sample repeats its documents to fill one).
        seed: fixes the document and sample orders.
    """
    if seq_length < 1:
        raise ValueError(f"seq_length must be >= 1, got {seq_length}")
    documents = np.asarray(documents, dtype=np.int64)
    tokens_per_epoch = int(document_sizes[documents].sum())
    num_epochs = num_epochs_needed(tokens_per_epoch, seq_length, num_samples)
    available = (num_epochs * tokens_per_epoch - 1) // seq_length
    if num_samples is None and available < 1:
        # a split shorter than one sample (a tiny held-out part): as LiBai does, its documents
        # are repeated until one sample is filled, rather than refusing the corpus
        num_samples = 1
        num_epochs = num_epochs_needed(tokens_per_epoch, seq_length, num_samples)
    if num_samples is None:
        num_samples = available
    if num_samples < 1:
        raise ValueError(f"num_samples must be at least 1 (or None for one pass), got {num_samples}")
    rng = np.random.default_rng(seed)
    doc_idx = _build_doc_idx(documents, num_epochs, rng)
    sample_idx = _build_sample_idx(document_sizes[doc_idx], seq_length, num_samples)
    # Samples starting before the last epoch form one block, the rest a second block.
    full_epoch_tokens = (num_epochs - 1) * tokens_per_epoch
    first_block = min(num_samples, -(-full_epoch_tokens // seq_length))
    shuffle_idx = np.concatenate(
        [rng.permutation(first_block), first_block + rng.permutation(num_samples - first_block)]
    ).astype(np.int64)
    return {"doc_idx": doc_idx, "sample_idx": sample_idx, "shuffle_idx": shuffle_idx}
