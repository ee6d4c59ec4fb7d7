"""Data-parallel batch samplers: which dataset indices each rank reads at each step.

Both samplers share one rule, so that a run's data does not depend on how many data-parallel
ranks it has: a *global* batch of ``G = micro_batch_size × data_parallel_size`` indices is a run
of ``G`` consecutive entries of an order over the dataset, and data-parallel rank ``r`` takes the
contiguous slice ``[r × micro, (r + 1) × micro)`` of it. Concatenating every rank's batch in rank
order therefore gives exactly the batch a one-process run with the same global size reads, and
splitting that global batch along dimension 0 (what ``split(0)`` SBP does) hands each rank back
its own slice.

* :class:`CyclicSampler` is the training sampler: endless, reshuffled every epoch from
  ``seed + epoch``, resumable at any number of consumed samples.
* :class:`SingleRoundSampler` is the evaluation sampler: one ordered pass, every index once,
  each batch padded to full size so that every step has one shape.
"""
from typing import Any, Dict, Iterator, List, Sized

import numpy as np

__all__ = ["CyclicSampler", "SingleRoundSampler"]


def _check_parallel_args(micro_batch_size: int, rank: int, size: int) -> None:
    if int(micro_batch_size) < 1:
        raise ValueError(f"micro_batch_size must be >= 1, got {micro_batch_size}")
    if int(size) < 1:
        raise ValueError(f"data_parallel_size must be >= 1, got {size}")
    if not 0 <= int(rank) < int(size):
        raise ValueError(
            f"data_parallel_rank {rank} is outside 0..{int(size) - 1} "
            f"(data_parallel_size is {size})"
        )


def _dataset_length(dataset: Sized) -> int:
    try:
        return len(dataset)
    except TypeError as err:
        raise TypeError(
            f"the samplers need a map-style dataset with __len__; got {type(dataset).__name__}"
        ) from err


class CyclicSampler:
    """Endless, data-parallel-aware, exactly resumable training batch sampler.

    Each epoch visits the dataset in an order drawn from a private generator seeded with
    ``seed + epoch`` (the global RNG is never touched, so user code cannot shift the order).
    The tail of an epoch that cannot fill a whole global batch is dropped, so every global batch
    has the same shape and epochs start at known sample counts: epoch ``e`` covers consumed
    samples ``[e × L, (e + 1) × L)`` with ``L = (len(dataset) // G) × G``.

    ``consumed_samples`` counts *global* samples (summed over data-parallel ranks), the number the
    trainer stores as ``train.consumed_train_samples``. A sampler built with
    ``consumed_samples=k`` yields exactly what an uninterrupted one yields after ``k`` samples.

    ``len(sampler)`` is the number of steps in one epoch (the iterator itself never ends).

    Args:
        dataset: a map-style dataset (only its length is used).
        micro_batch_size: the batch of one data-parallel rank.
        shuffle: draw a new permutation each epoch; ``False`` walks ``0..n-1`` every epoch.
        consumed_samples: global samples already consumed (resume point).
        data_parallel_rank: this process's rank among data-parallel ranks.
        data_parallel_size: number of data-parallel ranks.
        seed: base seed of the per-epoch permutations; must be equal on every rank.
    """

    def __init__(
        self,
        dataset: Sized,
        micro_batch_size: int,
        shuffle: bool = True,
        consumed_samples: int = 0,
        data_parallel_rank: int = 0,
        data_parallel_size: int = 1,
        seed: int = 0,
    ) -> None:
        _check_parallel_args(micro_batch_size, data_parallel_rank, data_parallel_size)
        if int(consumed_samples) < 0:
            raise ValueError(f"consumed_samples must be >= 0, got {consumed_samples}")
        self.dataset = dataset
        self.data_size = _dataset_length(dataset)
        self.micro_batch_size = int(micro_batch_size)
        self.data_parallel_rank = int(data_parallel_rank)
        self.data_parallel_size = int(data_parallel_size)
        self.global_batch_size = self.micro_batch_size * self.data_parallel_size
        if self.data_size < self.global_batch_size:
            raise ValueError(
                f"the dataset has {self.data_size} samples, fewer than one global batch of "
                f"{self.global_batch_size} (micro batch {self.micro_batch_size} × data parallel "
                f"size {self.data_parallel_size}); use a smaller batch or a larger dataset"
            )
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.consumed_samples = int(consumed_samples)

    @property
    def samples_per_epoch(self) -> int:
        """Global samples in one epoch once the incomplete tail is dropped."""
        return (self.data_size // self.global_batch_size) * self.global_batch_size

    def __len__(self) -> int:
        """Steps in one epoch (the sampler itself cycles forever)."""
        return self.data_size // self.global_batch_size

    def epoch_order(self, epoch: int) -> np.ndarray:
        """The order of dataset indices in ``epoch`` (identical on every rank)."""
        if not self.shuffle:
            return np.arange(self.data_size, dtype=np.int64)
        return np.random.default_rng(self.seed + int(epoch)).permutation(self.data_size)

    def __iter__(self) -> Iterator[List[int]]:
        lo = self.data_parallel_rank * self.micro_batch_size
        hi = lo + self.micro_batch_size
        while True:
            epoch, offset = divmod(self.consumed_samples, self.samples_per_epoch)
            order = self.epoch_order(epoch)
            for start in range(offset, self.samples_per_epoch, self.global_batch_size):
                if start + self.global_batch_size > self.samples_per_epoch:
                    # A resume point that is not a multiple of the global batch (the batch size
                    # changed between runs) leaves a partial batch; it belongs to the dropped tail.
                    break
                batch = order[start + lo : start + hi]
                self.consumed_samples += self.global_batch_size
                yield [int(i) for i in batch]
            # Move to the start of the next epoch even if the loop broke early.
            self.consumed_samples = (epoch + 1) * self.samples_per_epoch

    def state_dict(self) -> Dict[str, Any]:
        """The resume point: global samples handed out so far.

        With a multi-worker ``DataLoader`` the sampler runs ahead of training by the prefetched
        batches; for an exact resume store the trainer's own count of consumed samples and build
        the sampler with it (what ``DefaultTrainer`` does with ``train.consumed_train_samples``).
        """
        return {"consumed_samples": self.consumed_samples, "seed": self.seed}

    def load_state_dict(self, state: Dict[str, Any]) -> None:
        """Resume from :meth:`state_dict` (takes effect at the next ``iter()``)."""
        if "consumed_samples" not in state:
            raise KeyError(
                f"sampler state has no 'consumed_samples' entry (keys: {sorted(state)}); "
                "pass what CyclicSampler.state_dict() returned"
            )
        self.consumed_samples = int(state["consumed_samples"])
        if "seed" in state:
            self.seed = int(state["seed"])


class SingleRoundSampler:
    """One ordered pass over the dataset, split across data-parallel ranks, for evaluation.

    Global batch ``b`` covers indices ``[b × G, (b + 1) × G)``; rank ``r`` takes its contiguous
    slice. Indices past the end of the dataset are replaced by the last valid index, so every
    rank's batch has ``micro_batch_size`` entries: a static graph sees a single shape and a global
    tensor has equal local shapes on every rank. Because the valid indices form a prefix of each
    global batch, padding only ever sits at the end of the last global batch; an evaluator keeps
    the first ``len(dataset)`` predictions of the whole pass and drops the rest.

    Args:
        dataset: a map-style dataset (only its length is used).
        micro_batch_size: the batch of one data-parallel rank.
        data_parallel_rank: this process's rank among data-parallel ranks.
        data_parallel_size: number of data-parallel ranks.
        drop_last: skip the final incomplete global batch instead of padding it.
    """

    def __init__(
        self,
        dataset: Sized,
        micro_batch_size: int,
        data_parallel_rank: int = 0,
        data_parallel_size: int = 1,
        drop_last: bool = False,
    ) -> None:
        _check_parallel_args(micro_batch_size, data_parallel_rank, data_parallel_size)
        self.dataset = dataset
        self.data_size = _dataset_length(dataset)
        if self.data_size == 0:
            raise ValueError("cannot evaluate on an empty dataset (it has 0 samples)")
        self.micro_batch_size = int(micro_batch_size)
        self.data_parallel_rank = int(data_parallel_rank)
        self.data_parallel_size = int(data_parallel_size)
        self.global_batch_size = self.micro_batch_size * self.data_parallel_size
        self.drop_last = bool(drop_last)
        if self.drop_last and self.data_size < self.global_batch_size:
            raise ValueError(
                f"drop_last=True with {self.data_size} samples and a global batch of "
                f"{self.global_batch_size} leaves no batch at all; use drop_last=False or a "
                "smaller batch"
            )

    def __len__(self) -> int:
        """Number of (global) batches in the pass."""
        if self.drop_last:
            return self.data_size // self.global_batch_size
        return -(-self.data_size // self.global_batch_size)

    def __iter__(self) -> Iterator[List[int]]:
        last = self.data_size - 1
        for b in range(len(self)):
            start = b * self.global_batch_size + self.data_parallel_rank * self.micro_batch_size
            yield [min(i, last) for i in range(start, start + self.micro_batch_size)]
