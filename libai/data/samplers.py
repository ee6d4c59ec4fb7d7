"""Data-parallel batch samplers: which dataset indices each rank reads at each step.

Both samplers hand each data-parallel rank batches of ``batch_size_per_rank`` indices. For
training that is the rank's share of one optimizer step: the trainer passes
``train_micro_batch_size × num_accumulation_steps`` and splits each batch into the micro-batches
it accumulates over. For evaluation it is ``test_micro_batch_size``. (LiBai calls the parameter
``micro_batch_size``; that keyword is still accepted.)

Both samplers share one rule, so that a run's data does not depend on how many data-parallel
ranks it has: a *global* batch of ``G = batch_size_per_rank × data_parallel_size`` indices is a
run of ``G`` consecutive entries of an order over the dataset, and data-parallel rank ``r`` takes
the contiguous slice ``[r × b, (r + 1) × b)`` of it (``b = batch_size_per_rank``). Concatenating every rank's batch in rank
order therefore gives exactly the batch a one-process run with the same global size reads, and
splitting that global batch along dimension 0 (what ``split(0)`` SBP does) hands each rank back
its own slice.

* :class:`CyclicSampler` is the training sampler: endless, reshuffled every epoch from
  ``seed + epoch``, resumable at any number of consumed samples.
* :class:`SingleRoundSampler` is the evaluation sampler: one ordered pass, every index once,
  each batch padded to full size so that every step has one shape.
"""
from typing import Any, Dict, Iterator, List, Optional, Sized

import numpy as np

__all__ = ["CyclicSampler", "SingleRoundSampler"]


def _batch_size_argument(batch_size_per_rank: Optional[int], micro_batch_size: Optional[int]) -> int:
    """``batch_size_per_rank``, also accepted under LiBai's keyword ``micro_batch_size``."""
    if batch_size_per_rank is not None and micro_batch_size is not None:
        raise TypeError(
            "give batch_size_per_rank or micro_batch_size (LiBai's name for it), not both "
            f"(got {batch_size_per_rank} and {micro_batch_size})"
        )
    value = batch_size_per_rank if batch_size_per_rank is not None else micro_batch_size
    if value is None:
        raise TypeError("missing batch_size_per_rank: the number of indices per batch on each rank")
    return value


def _check_parallel_args(batch_size_per_rank: int, rank: int, size: int) -> None:
    if int(batch_size_per_rank) < 1:
        raise ValueError(f"batch_size_per_rank (micro_batch_size) must be >= 1, got {batch_size_per_rank}")
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
        batch_size_per_rank: indices in each batch of one data-parallel rank; in training, the
            rank's samples of one optimizer step (micro batch × accumulation steps).
            ``micro_batch_size=`` (LiBai's keyword) is the same argument.
        shuffle: draw a new permutation each epoch; ``False`` walks ``0..n-1`` every epoch.
        consumed_samples: global samples already consumed (resume point).
        data_parallel_rank: this process's rank among data-parallel ranks.
        data_parallel_size: number of data-parallel ranks.
        seed: base seed of the per-epoch permutations; must be equal on every rank.
    """

    def __init__(
        self,
        dataset: Sized,
        batch_size_per_rank: Optional[int] = None,
        shuffle: bool = True,
        consumed_samples: int = 0,
        data_parallel_rank: int = 0,
        data_parallel_size: int = 1,
        seed: int = 0,
        *,
        micro_batch_size: Optional[int] = None,
    ) -> None:
        batch_size = _batch_size_argument(batch_size_per_rank, micro_batch_size)
        _check_parallel_args(batch_size, data_parallel_rank, data_parallel_size)
        if int(consumed_samples) < 0:
            raise ValueError(f"consumed_samples must be >= 0, got {consumed_samples}")
        self.dataset = dataset
        self.data_size = _dataset_length(dataset)
        self.batch_size_per_rank = int(batch_size)
        self.data_parallel_rank = int(data_parallel_rank)
        self.data_parallel_size = int(data_parallel_size)
        self.global_batch_size = self.batch_size_per_rank * self.data_parallel_size
        if self.data_size < self.global_batch_size:
            raise ValueError(
                f"the dataset has {self.data_size} samples, fewer than one global batch of "
                f"{self.global_batch_size} (batch per rank {self.batch_size_per_rank} × data parallel "
                f"size {self.data_parallel_size}); use a smaller batch or a larger dataset"
            )
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.consumed_samples = int(consumed_samples)

    @property
    def micro_batch_size(self) -> int:
        """LiBai's name for :attr:`batch_size_per_rank`."""
        return self.batch_size_per_rank

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
        lo = self.data_parallel_rank * self.batch_size_per_rank
        hi = lo + self.batch_size_per_rank
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
    """One pass over the dataset, split across data-parallel ranks, for evaluation.

    Global batch ``b`` covers positions ``[b × G, (b + 1) × G)`` of the pass's order (``0..n-1``,
    or a permutation drawn from ``seed`` when ``shuffle``); rank ``r`` takes its contiguous slice.
    Positions past the end of the dataset repeat the order's last index, so every rank's batch has
    ``batch_size_per_rank`` entries: a static graph sees a single shape and a global tensor has
    equal local shapes on every rank. Because the valid positions form a prefix of each global
    batch, padding only ever sits at the end of the last global batch; an evaluator keeps the
    first ``len(dataset)`` predictions of the whole pass and drops the rest.

    Args:
        dataset: a map-style dataset (only its length is used).
        batch_size_per_rank: indices in each batch of one data-parallel rank (the trainer passes
            ``test_micro_batch_size``). ``micro_batch_size=`` (LiBai's keyword) is the same argument.
        shuffle: visit the dataset in a permutation drawn from ``seed`` instead of in order.
        data_parallel_rank: this process's rank among data-parallel ranks.
        data_parallel_size: number of data-parallel ranks.
        seed: seed of the permutation when ``shuffle``; must be equal on every rank.
        drop_last: skip the final incomplete global batch instead of padding it.

    The positional order is LiBai's: ``(dataset, micro_batch_size, shuffle, data_parallel_rank,
    data_parallel_size, seed, drop_last)``.
    """

    def __init__(
        self,
        dataset: Sized,
        batch_size_per_rank: Optional[int] = None,
        shuffle: bool = False,
        data_parallel_rank: int = 0,
        data_parallel_size: int = 1,
        seed: int = 0,
        drop_last: bool = False,
        *,
        micro_batch_size: Optional[int] = None,
    ) -> None:
        batch_size = _batch_size_argument(batch_size_per_rank, micro_batch_size)
        _check_parallel_args(batch_size, data_parallel_rank, data_parallel_size)
        self.dataset = dataset
        self.data_size = _dataset_length(dataset)
        if self.data_size == 0:
            raise ValueError("cannot evaluate on an empty dataset (it has 0 samples)")
        self.batch_size_per_rank = int(batch_size)
        self.shuffle = bool(shuffle)
        self.seed = int(seed)
        self.data_parallel_rank = int(data_parallel_rank)
        self.data_parallel_size = int(data_parallel_size)
        self.global_batch_size = self.batch_size_per_rank * self.data_parallel_size
        self.drop_last = bool(drop_last)
        if self.drop_last and self.data_size < self.global_batch_size:
            raise ValueError(
                f"drop_last=True with {self.data_size} samples and a global batch of "
                f"{self.global_batch_size} leaves no batch at all; use drop_last=False or a "
                "smaller batch"
            )

    @property
    def micro_batch_size(self) -> int:
        """LiBai's name for :attr:`batch_size_per_rank`."""
        return self.batch_size_per_rank

    def __len__(self) -> int:
        """Number of (global) batches in the pass."""
        if self.drop_last:
            return self.data_size // self.global_batch_size
        return -(-self.data_size // self.global_batch_size)

    def __iter__(self) -> Iterator[List[int]]:
        if self.shuffle:
            order = np.random.default_rng(self.seed).permutation(self.data_size)
        else:
            order = np.arange(self.data_size)
        last = self.data_size - 1
        for b in range(len(self)):
            start = b * self.global_batch_size + self.data_parallel_rank * self.batch_size_per_rank
            yield [int(order[min(i, last)]) for i in range(start, start + self.batch_size_per_rank)]
