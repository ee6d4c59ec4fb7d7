"""Train/valid/test splits of a corpus by documents, from a ratio string like ``"949,50,1"``.

Splitting by *documents* (not samples) keeps every document in exactly one split, so no
validation text leaks into training through a sample that straddles the boundary.
"""
from typing import List, Sequence, Tuple, Union

import numpy as np

__all__ = ["SPLIT_NAMES", "parse_splits_string", "split_boundaries", "split_documents"]

SPLIT_NAMES = {"train": 0, "valid": 1, "validation": 1, "val": 1, "test": 2}

SplitsSpec = Union[str, Sequence[float]]


def parse_splits_string(splits: SplitsSpec) -> List[float]:
    """Three non-negative weights (train, valid, test) from ``"949,50,1"``, ``"98/2"`` or a list.

    Missing trailing weights are 0 (``"98,2"`` has no test split).
    """
    if isinstance(splits, str):
        parts = [p.strip() for p in splits.replace("/", ",").split(",") if p.strip()]
        try:
            weights = [float(p) for p in parts]
        except ValueError:
            raise ValueError(
                f"splits_string {splits!r} must be numbers separated by ',' or '/', e.g. '949,50,1'"
            ) from None
    else:
        weights = [float(w) for w in splits]
    if not 1 <= len(weights) <= 3:
        raise ValueError(f"splits_string {splits!r} needs 1 to 3 weights (train, valid, test)")
    if any(w < 0 for w in weights) or sum(weights) <= 0:
        raise ValueError(f"splits_string {splits!r} needs non-negative weights with a positive sum")
    return weights + [0.0] * (3 - len(weights))


def split_boundaries(splits: SplitsSpec, num_documents: int) -> List[int]:
    """Document boundaries ``[0, end_train, end_valid, num_documents]`` (contiguous, covering)."""
    weights = np.asarray(parse_splits_string(splits), dtype=np.float64)
    cumulative = np.concatenate([[0.0], np.cumsum(weights) / weights.sum()])
    bounds = [int(round(c * num_documents)) for c in cumulative]
    bounds[-1] = num_documents
    return bounds


def split_documents(splits: SplitsSpec, split: Union[str, int], num_documents: int) -> Tuple[int, int]:
    """The document range ``[start, end)`` of ``split`` (``"train"``, ``"valid"``, ``"test"`` or 0-2)."""
    if isinstance(split, str):
        if split not in SPLIT_NAMES:
            raise ValueError(f"split {split!r} is unknown; use one of 'train', 'valid', 'test'")
        index = SPLIT_NAMES[split]
    else:
        index = int(split)
        if index not in (0, 1, 2):
            raise ValueError(f"split index {split} is unknown; use 0 (train), 1 (valid) or 2 (test)")
    bounds = split_boundaries(splits, num_documents)
    return bounds[index], bounds[index + 1]
