"""Sample index for sentence-based (BERT/T5-style) datasets.

Each sample is a run of whole consecutive sentences of one document whose length reaches a
*target*: usually the maximum, but with probability ``short_seq_prob`` a random shorter one,
so the model also sees short inputs (as fine-tuning will show it). The mapping is one row per
sample, ``(first_sentence, end_sentence, target_length)``, built epoch after epoch (each epoch
draws fresh targets, so sentence groupings differ) and finally shuffled.
"""
from typing import List, Optional

import numpy as np

__all__ = ["build_sentence_samples"]


def _epoch_samples(
    sizes: np.ndarray, doc_idx: np.ndarray, documents: np.ndarray, max_num_tokens: int,
    short_seq_prob: float, min_sentences: int, rng: np.random.Generator,
) -> List[List[int]]:
    def draw_target() -> int:
        if short_seq_prob > 0 and rng.random() < short_seq_prob:
            return int(rng.integers(2, max_num_tokens + 1))
        return max_num_tokens

    rows: List[List[int]] = []
    for doc in documents:
        first, end = int(doc_idx[doc]), int(doc_idx[doc + 1])
        if end - first < min_sentences:
            continue
        target = draw_target()
        start, length = first, 0
        for sentence in range(first, end):
            length += int(sizes[sentence])
            last = sentence == end - 1
            if length >= target or last:
                if sentence + 1 - start >= min_sentences and length > 0:
                    rows.append([start, sentence + 1, target])
                    target = draw_target()
                    start, length = sentence + 1, 0
                elif last:
                    break
    return rows


def build_sentence_samples(
    sizes: np.ndarray,
    doc_idx: np.ndarray,
    documents: np.ndarray,
    max_num_tokens: int,
    num_samples: Optional[int],
    seed: int,
    short_seq_prob: float = 0.1,
    min_sentences: int = 1,
    max_epochs: int = 1000,
    allow_empty: bool = False,
) -> np.ndarray:
    """``[n, 3]`` int64 rows ``(first_sentence, end_sentence, target_length)``.

    Args:
        sizes, doc_idx: of the indexed dataset (tokens per sentence, document starts).
        documents: ids of the documents of this split.
        max_num_tokens: the token budget of one sample's text (without special tokens).
        num_samples: rows wanted; ``None`` is one epoch.
        min_sentences: a sample needs this many sentences (2 for a sentence pair).
        allow_empty: give no rows, instead of an error, when no document of the split has
            ``min_sentences`` sentences (a tiny held-out part, which LiBai leaves empty).
    """
    if max_num_tokens < 2:
        raise ValueError(f"max_num_tokens must be >= 2, got {max_num_tokens}")
    rng = np.random.default_rng(seed)
    rows: List[List[int]] = []
    for _ in range(max_epochs):
        epoch = _epoch_samples(sizes, doc_idx, documents, max_num_tokens, short_seq_prob, min_sentences, rng)
        if not epoch and allow_empty:
            return np.zeros((0, 3), dtype=np.int64)
        if not epoch:
            raise ValueError(
                f"no document of the split has {min_sentences} non-empty sentence(s); a sentence-pair "
                "dataset needs a corpus made with --split-sentences and multi-sentence documents"
            )
        rows.extend(epoch)
        if num_samples is None or len(rows) >= num_samples:
            break
    else:
        raise ValueError(f"{max_epochs} epochs give only {len(rows)} samples, fewer than {num_samples}")
    mapping = np.asarray(rows, dtype=np.int64)
    mapping = mapping[rng.permutation(len(mapping))]
    return mapping if num_samples is None else mapping[:num_samples]
