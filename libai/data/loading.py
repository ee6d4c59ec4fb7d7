"""How one data loader is put together, once for every builder in :mod:`libai.data.build`.

A loader is a batch sampler over one dataset, wrapped in a :class:`CheckedDataLoader` whose
workers are seeded from ``(seed, rank, worker id)``, whose batches are stacked
:class:`~libai.data.structures.Instance`\\ s and whose memory pinning follows the device.
:class:`LoaderRecipe` holds what every loader of one builder call shares (rank, seed, workers,
collate, pinning, extra ``DataLoader`` keywords) and makes the training loader, the evaluation
loader and the held-out pair from it, so the four builders differ only in how they find their
datasets.
"""
import functools
import logging
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple

import numpy as np
import oneflow as flow
from oneflow.utils.data import ConcatDataset, DataLoader, Dataset
from oneflow.utils.data._utils.collate import default_collate as _flow_default_collate

from libai.config import instantiate, is_node
from libai.data.dataset_parts import mix_datasets
from libai.data.mixup import mix_batch
from libai.data.samplers import CyclicSampler, SingleRoundSampler
from libai.data.structures import Instance
from libai.data.worker_failures import StopSignalGuard, explain_worker_exit, reporting_context
from libai.utils import distributed as dist

__all__ = [
    "CheckedDataLoader",
    "LoaderRecipe",
    "MixupDataLoader",
    "default_collate",
    "resolve_data_parallel",
]

# The builders' log name since they were one module; kept so that log filters keep working.
logger = logging.getLogger("libai.data.build")

Loaders = Tuple[DataLoader, Optional[DataLoader], Optional[DataLoader]]


def default_collate(samples: List[Any]) -> Any:
    """Stack Instances field by field (:meth:`Instance.stack`); anything else goes to OneFlow's
    default collate (tuples of tensors, numbers, ...)."""
    if samples and isinstance(samples[0], Instance):
        return Instance.stack(samples)
    return _flow_default_collate(samples)


def resolve_data_parallel(rank: Optional[int], size: Optional[int]) -> Tuple[int, int]:
    """The data-parallel ``(rank, size)`` a loader serves.

    Explicit values win; otherwise the current layout answers; a one-process run without a
    layout is rank 0 of 1. Several processes without a layout cannot be guessed (the world may
    also hold tensor or pipeline ranks), so that is an error.
    """
    if (rank is None) != (size is None):
        raise ValueError(
            "pass both data_parallel_rank and data_parallel_size, or neither "
            f"(got rank={rank}, size={size})"
        )
    if rank is not None:
        return int(rank), int(size)  # type: ignore[arg-type]
    if dist.has_layout():
        layout = dist.current_layout()
        return layout.data_parallel_rank, layout.data_parallel_size
    if dist.get_world_size() == 1:
        return 0, 1
    raise RuntimeError(
        f"this run has {dist.get_world_size()} processes but no parallel layout is active, so the "
        "loader cannot tell its data-parallel rank. Pass data_parallel_rank= and "
        "data_parallel_size=, or build the loader inside `with layout:` "
        "(DefaultTrainer does this for you)."
    )


# ---------------------------------------------------------------------------------------------
# Memory pinning and worker seeds
# ---------------------------------------------------------------------------------------------
def _device_type() -> str:
    return dist.current_layout().device_type if dist.has_layout() else dist.default_device_type()


@functools.lru_cache(maxsize=None)
def _warn_pin_memory_once() -> None:
    logger.warning(
        "pin_memory=True has no effect when the device is the CPU; it is ignored "
        "(leave pin_memory unset to have it follow the device)"
    )


def _resolve_pin_memory(pin_memory: Optional[bool]) -> bool:
    on_cuda = _device_type() == "cuda"
    if pin_memory is None:
        return on_cuda
    if pin_memory and not on_cuda:
        _warn_pin_memory_once()
        return False
    return bool(pin_memory)


class _WorkerSeeder:
    """Seeds NumPy, Python and OneFlow in each loader worker from (seed, rank, worker id), so that
    random augmentations repeat run to run yet differ between workers and ranks."""

    def __init__(self, seed: int, rank: int) -> None:
        self.seed, self.rank = int(seed), int(rank)

    def __call__(self, worker_id: int) -> None:
        import random

        value = int(np.random.SeedSequence([self.seed, self.rank, worker_id]).generate_state(1)[0])
        random.seed(value)
        np.random.seed(value)
        flow.manual_seed(value)


# ---------------------------------------------------------------------------------------------
# The DataLoader that reports its workers' failures
# ---------------------------------------------------------------------------------------------
class CheckedDataLoader(DataLoader):
    """A DataLoader whose worker failures end the epoch with an error that names the worker.

    Its iterator re-raises what a worker raised (OneFlow does that) and also the two failures
    OneFlow leaves vague or silent: a batch the worker could not send (it would wait forever)
    and a worker killed by a signal (see :mod:`libai.data.worker_failures`). Its workers ignore
    the stop signals (Ctrl-C, SIGTERM, SIGUSR1) while this process lives, so that a run told to
    stop finishes its evaluation and saves instead of losing its workers. ``mixup_func``,
    when given, is applied to every batch in the main process (:func:`libai.data.mixup.mix_batch`),
    so its randomness stays in one seeded generator whatever ``num_workers`` is.
    """

    def __init__(self, *args: Any, mixup_func: Optional[Callable[..., Any]] = None, **kwargs: Any) -> None:
        if kwargs.get("num_workers", 0) > 0:
            if kwargs.get("multiprocessing_context") is None:
                kwargs["multiprocessing_context"] = reporting_context()
            # workers leave stop signals (Ctrl-C, SIGTERM to the job) to this process
            kwargs["worker_init_fn"] = StopSignalGuard(kwargs.get("worker_init_fn"))
        super().__init__(*args, **kwargs)
        self.mixup_func = mixup_func

    def __iter__(self) -> Iterator[Any]:
        return _CheckedIterator(super().__iter__(), self.mixup_func)


class MixupDataLoader(CheckedDataLoader):
    """A :class:`CheckedDataLoader` that always mixes (``mixup_func`` is required)."""

    def __init__(self, *args: Any, mixup_func: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(*args, mixup_func=mixup_func, **kwargs)


class _CheckedIterator:
    """Wraps the loader's own iterator (a plain iterator, not a generator, so that dropping it
    early shuts the workers down through the wrapped iterator's normal path)."""

    def __init__(self, inner: Any, mixup_func: Optional[Callable[..., Any]]) -> None:
        self._inner = inner
        self._mixup_func = mixup_func

    def __iter__(self) -> "_CheckedIterator":
        return self

    def __next__(self) -> Any:
        try:
            batch = next(self._inner)
        except RuntimeError as error:
            clearer = explain_worker_exit(error, self._inner)
            if clearer is None:
                raise
            raise clearer from error
        return batch if self._mixup_func is None else mix_batch(batch, self._mixup_func)

    def __len__(self) -> int:
        return len(self._inner)

    def __getattr__(self, name: str) -> Any:  # only called for names not found on the wrapper
        if name.startswith("__") or name == "_inner":
            raise AttributeError(name)
        return getattr(self._inner, name)


def _make_loader(
    dataset: Dataset,
    batch_sampler: Any,
    num_workers: int,
    collate_fn: Optional[Callable[..., Any]],
    pin_memory: Optional[bool],
    seed: int,
    rank: int,
    mixup_func: Optional[Callable[..., Any]] = None,
    **kwargs: Any,
) -> DataLoader:
    if int(num_workers) < 0:
        raise ValueError(f"num_workers must be >= 0, got {num_workers}")
    kwargs.setdefault("worker_init_fn", _WorkerSeeder(seed, rank))
    # The loader draws its workers' base seed from this generator each time it is iterated;
    # its own generator keeps that draw out of the global OneFlow stream (which dropout uses
    # and checkpoints restore), so creating an iterator after a resume changes nothing.
    generator = flow.Generator()
    generator.manual_seed(int(seed) * 1000003 + int(rank))
    kwargs.setdefault("generator", generator)
    options = dict(
        batch_sampler=batch_sampler,
        num_workers=int(num_workers),
        collate_fn=collate_fn or default_collate,
        pin_memory=_resolve_pin_memory(pin_memory),
        **kwargs,
    )
    return CheckedDataLoader(dataset, mixup_func=mixup_func, **options)


# ---------------------------------------------------------------------------------------------
# Batch samplers
# ---------------------------------------------------------------------------------------------
def _check_train_batch(dataset: Dataset, batch_size: int, dp_size: int) -> None:
    if int(batch_size) < 1:
        raise ValueError(f"train_batch_size must be >= 1, got {batch_size}")
    global_batch = int(batch_size) * dp_size
    if global_batch > len(dataset):
        raise ValueError(
            f"train_batch_size {batch_size} × data_parallel_size {dp_size} = {global_batch} "
            f"samples per step, but the training dataset has only {len(dataset)}; training drops "
            "incomplete batches, so lower the batch size or use more data"
        )


def _train_sampler(
    dataset: Dataset, batch_size: int, consumed_samples: int, seed: int, rank: int, size: int
) -> CyclicSampler:
    _check_train_batch(dataset, batch_size, size)
    return CyclicSampler(
        dataset,
        batch_size_per_rank=batch_size,
        shuffle=True,
        consumed_samples=consumed_samples,
        data_parallel_rank=rank,
        data_parallel_size=size,
        seed=seed,
    )


def _test_sampler(
    dataset: Dataset, batch_size: Optional[int], rank: int, size: int
) -> SingleRoundSampler:
    if batch_size is None or int(batch_size) < 1:
        raise ValueError(
            f"test_batch_size must be a positive integer, got {batch_size} "
            "(the trainer fills it from train.test_micro_batch_size)"
        )
    return SingleRoundSampler(
        dataset, int(batch_size), data_parallel_rank=rank, data_parallel_size=size, drop_last=False
    )


def _sampler_from(
    node: Any, dataset: Dataset, batch_size: Optional[int], rank: int, size: int, seed: int,
    **extra: Any,
) -> Any:
    """A sampler node completed with the loader's dataset and sizes; a built sampler (or None)
    as is."""
    if node is None or not is_node(node):
        return node
    if batch_size is None or int(batch_size) < 1:
        raise ValueError(f"a sampler needs a positive batch size, got {batch_size}")
    return instantiate(
        node, dataset=dataset, batch_size_per_rank=int(batch_size), data_parallel_rank=rank,
        data_parallel_size=size, seed=seed, **extra,
    )


# ---------------------------------------------------------------------------------------------
# One builder call's loaders
# ---------------------------------------------------------------------------------------------
@dataclass
class LoaderRecipe:
    """What every loader made by one builder call shares.

    Args:
        rank / size: the data-parallel rank and size the loaders serve
            (:func:`resolve_data_parallel`).
        seed: shuffling order and worker seeds.
        num_workers: loader worker processes (0 loads in the main process).
        collate_fn: batch assembly; None stacks Instances (:func:`default_collate`).
        pin_memory: None follows the device (see the builders).
        options: further ``DataLoader`` keywords, ``mixup_func`` included, given to every loader.
    """

    rank: int
    size: int
    seed: int = 0
    num_workers: int = 4
    collate_fn: Optional[Callable[..., Any]] = None
    pin_memory: Optional[bool] = None
    options: Dict[str, Any] = field(default_factory=dict)

    def loader(self, dataset: Dataset, batch_sampler: Any) -> DataLoader:
        """A :class:`CheckedDataLoader` over ``dataset`` drawing batches from ``batch_sampler``."""
        return _make_loader(dataset, batch_sampler, self.num_workers, self.collate_fn,
                            self.pin_memory, self.seed, self.rank, **self.options)

    def train_loader(self, dataset: Dataset, batch_size: int, sampler: Any = None,
                     consumed_samples: int = 0) -> DataLoader:
        """The endless shuffled loader; ``sampler`` may be a built sampler, a sampler node to
        complete, or None for a :class:`CyclicSampler`."""
        sampler = _sampler_from(sampler, dataset, batch_size, self.rank, self.size, self.seed,
                                consumed_samples=consumed_samples)
        if sampler is None:
            sampler = _train_sampler(dataset, batch_size, consumed_samples, self.seed,
                                     self.rank, self.size)
        return self.loader(dataset, sampler)

    def test_loader(self, dataset: Dataset, batch_size: Optional[int], sampler: Any = None) -> DataLoader:
        """One ordered pass; ``sampler`` as in :meth:`train_loader`, default
        :class:`SingleRoundSampler`."""
        sampler = _sampler_from(sampler, dataset, batch_size, self.rank, self.size, self.seed)
        if sampler is None:
            sampler = _test_sampler(dataset, batch_size, self.rank, self.size)
        return self.loader(dataset, sampler)

    def split_loaders(
        self,
        parts: Sequence[Sequence[Dataset]],
        mixer: Callable[..., Dataset],
        train_batch_size: int,
        test_batch_size: Optional[int],
        consumed_samples: int = 0,
        train_sampler: Any = None,
        test_sampler: Any = None,
    ) -> Loaders:
        """``(train, valid, test)`` loaders over ``parts`` (three lists of datasets): the train
        list mixed by ``mixer``, each held-out list concatenated (empty datasets dropped); a
        held-out list with nothing in it gives None."""
        train_set = mix_datasets(parts[0], mixer, "training")
        train = self.train_loader(train_set, train_batch_size, train_sampler, consumed_samples)
        held_out: List[Optional[DataLoader]] = []
        for role, subsets in (("validation", parts[1]), ("test", parts[2])):
            subsets = [d for d in subsets if len(d) > 0]
            if not subsets:
                held_out.append(None)
                continue
            mixed = mix_datasets(subsets, ConcatDataset, role)
            held_out.append(self.test_loader(mixed, test_batch_size, test_sampler))
        return train, held_out[0], held_out[1]
