"""Mix several datasets by weight into one, deterministically.

Sample ``i`` of the blend is taken from the dataset that is furthest behind its share: after
``i`` samples dataset ``d`` should have supplied ``weights[d] * i`` of them, and the rule picks
the ``d`` maximising ``weights[d] * (i + 1) - taken[d]`` (ties to the lowest index). The blend
therefore tracks the weights within one sample at every prefix, not only on average, and needs
no random numbers: the same datasets and weights always give the same blend.
"""
from typing import List, Optional, Sequence, Tuple

import numpy as np
from oneflow.utils.data import Dataset

__all__ = ["BlendableDataset", "build_blending_indices"]


def build_blending_indices(weights: Sequence[float], size: int) -> Tuple[np.ndarray, np.ndarray]:
    """``(dataset_index, dataset_sample_index)`` of each of ``size`` blended samples."""
    w = np.asarray(weights, dtype=np.float64)
    if w.ndim != 1 or len(w) == 0 or np.any(w < 0) or w.sum() <= 0:
        raise ValueError(f"weights must be non-negative with a positive sum, got {list(weights)}")
    w = (w / w.sum()).tolist()
    taken = [0] * len(w)
    dataset_index = np.empty(size, dtype=np.int64)
    sample_index = np.empty(size, dtype=np.int64)
    for i in range(size):
        errors = [w[d] * (i + 1) - taken[d] for d in range(len(w))]
        chosen = errors.index(max(errors))
        dataset_index[i] = chosen
        sample_index[i] = taken[chosen]
        taken[chosen] += 1
    return dataset_index, sample_index


class BlendableDataset(Dataset):
    """``size`` samples drawn from ``datasets`` in proportion to ``weights``.

    Args:
        datasets: the datasets to mix (any indexable with ``len``).
        weights: relative weights, one per dataset (normalised here).
        size: length of the blend; default the largest blend the datasets can supply at these
            weights (the first dataset to run out is read exactly once).

    Each dataset must hold at least the samples its share needs; a shortfall is an error that
    names the dataset, rather than silently repeating its samples.
    """

    def __init__(self, datasets: Sequence[Dataset], weights: Sequence[float], size: Optional[int] = None) -> None:
        if len(datasets) != len(weights):
            raise ValueError(f"{len(datasets)} datasets but {len(weights)} weights; give one weight per dataset")
        self.datasets: List[Dataset] = list(datasets)
        if size is None:
            self.size, (self.dataset_index, self.dataset_sample_index) = self._largest_blend(weights)
        else:
            self.size = int(size)
            self.dataset_index, self.dataset_sample_index = build_blending_indices(weights, self.size)
        self._check_supply()

    def _largest_blend(self, weights: Sequence[float]) -> Tuple[int, Tuple[np.ndarray, np.ndarray]]:
        w = np.asarray(weights, dtype=np.float64)
        w = w / w.sum() if w.sum() > 0 else w
        lengths = np.array([len(d) for d in self.datasets], dtype=np.float64)
        size = int(np.floor(min(lengths[w > 0] / w[w > 0]))) if np.any(w > 0) else 0
        while True:  # the greedy counts stay within one sample of w * size: at most a step or two
            indices = build_blending_indices(weights, size)
            if np.all(np.bincount(indices[0], minlength=len(lengths)) <= lengths):
                return size, indices
            size -= 1

    def _check_supply(self) -> None:
        counts = np.bincount(self.dataset_index, minlength=len(self.datasets))
        for d, (dataset, needed) in enumerate(zip(self.datasets, counts)):
            if needed > len(dataset):
                raise ValueError(
                    f"dataset {d} ({type(dataset).__name__}) has {len(dataset)} samples but the blend of "
                    f"size {self.size} takes {needed} from it; build it with num_samples >= {needed} "
                    "or lower the blend size"
                )

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, idx: int):
        if not -self.size <= idx < self.size:
            raise IndexError(f"sample {idx} out of range for a blend of {self.size}")
        idx %= self.size
        dataset = self.datasets[int(self.dataset_index[idx])]
        return dataset[int(self.dataset_sample_index[idx])]
