"""The four loader builders that configs call: image/NLP × train/test.

Each builder takes one dataset or a list (combined by ``dataset_mixer``), picks a data-parallel
aware batch sampler (:class:`~libai.data.samplers.CyclicSampler` for training,
:class:`~libai.data.samplers.SingleRoundSampler` for evaluation) and wraps it in a
``oneflow.utils.data.DataLoader`` whose batches are :class:`~libai.data.structures.Instance`\\ s.

The keywords the trainer passes (resolved values; the builders never read or change the config):

* ``train_batch_size`` — samples each data-parallel rank receives in one training batch, which
  is one optimizer step: ``train_micro_batch_size × num_accumulation_steps`` (the step runner
  splits the batch into the micro-batches it accumulates over). It becomes the training
  sampler's ``batch_size_per_rank``; one step consumes ``train_batch_size × data_parallel_size``
  samples in all.
* ``test_batch_size`` — samples each data-parallel rank receives per evaluation batch
  (``test_micro_batch_size``); used by the test builders and by the held-out loaders that
  ``build_nlp_train_loader`` makes from ``splits``; ignored otherwise.
* ``seed`` — the training order (each epoch is a permutation drawn from ``seed + epoch``) and the
  random streams of the loader workers (seeded from ``seed``, the rank and the worker id).
* ``consumed_samples`` — samples already trained on, summed over data-parallel ranks (the resume
  point, ``train.consumed_train_samples``): training resumes exactly after them.

The data-parallel rank and size come from the current :class:`ParallelLayout` unless given;
a one-process run without a layout is rank 0 of 1. A worker that fails (raises, dies, or cannot
send its batch) ends iteration with its error (:class:`CheckedDataLoader`).

The train builders return ``(train_loader, None, None)``, the shape LiBai configs expect
(the NLP one may fill the other two from ``splits``); the test builders return one loader.
"""
import functools
import logging
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np
import oneflow as flow
from oneflow.utils.data import ConcatDataset, DataLoader, Dataset, Subset
from oneflow.utils.data._utils.collate import default_collate as _flow_default_collate
from omegaconf import ListConfig

from libai.config import instantiate, is_node
from libai.data.mixup import mix_batch
from libai.data.samplers import CyclicSampler, SingleRoundSampler
from libai.data.structures import Instance
from libai.data.worker_failures import StopSignalGuard, explain_worker_exit, reporting_context
from libai.utils import distributed as dist

__all__ = [
    "build_image_train_loader",
    "build_image_test_loader",
    "build_nlp_train_loader",
    "build_nlp_test_loader",
    "build_nlp_train_val_test_loader",
    "default_collate",
    "resolve_data_parallel",
]

logger = logging.getLogger(__name__)

DatasetArg = Union[Dataset, Sequence[Dataset]]
Loaders = Tuple[DataLoader, Optional[DataLoader], Optional[DataLoader]]


# ---------------------------------------------------------------------------------------------
# Shared pieces
# ---------------------------------------------------------------------------------------------
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


def _mix(dataset: DatasetArg, dataset_mixer: Callable[..., Dataset], role: str) -> Dataset:
    datasets = list(dataset) if isinstance(dataset, (list, tuple)) else [dataset]
    if not datasets:
        raise ValueError(f"the {role} dataset list is empty; give at least one dataset")
    mixed = datasets[0] if len(datasets) == 1 else dataset_mixer(datasets)
    if len(mixed) == 0:
        raise ValueError(
            f"the {role} dataset is empty (0 samples); check its path and that its files hold data"
        )
    return mixed


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


# ---------------------------------------------------------------------------------------------
# Image loaders
# ---------------------------------------------------------------------------------------------
def build_image_train_loader(
    dataset: DatasetArg,
    train_batch_size: int,
    test_batch_size: Optional[int] = None,
    sampler: Optional[Any] = None,
    num_workers: int = 4,
    consumed_samples: int = 0,
    seed: int = 0,
    collate_fn: Optional[Callable[..., Any]] = None,
    dataset_mixer: Callable[..., Dataset] = ConcatDataset,
    mixup_func: Optional[Callable[..., Any]] = None,
    data_parallel_rank: Optional[int] = None,
    data_parallel_size: Optional[int] = None,
    pin_memory: Optional[bool] = None,
    **kwargs: Any,
) -> Loaders:
    """An endless, shuffled, data-parallel training loader over image datasets.

    Args:
        dataset: one dataset or a list, combined by ``dataset_mixer`` (concatenation).
        train_batch_size: samples per optimizer step on each data-parallel rank (micro batch ×
            accumulation steps; see the module docstring).
        test_batch_size: unused here; accepted so one config can carry both sizes.
        sampler: a ready batch sampler to use instead of the default :class:`CyclicSampler`.
        num_workers: loader worker processes (0 loads in the main process).
        consumed_samples: samples already trained on, summed over data-parallel ranks (resume point).
        seed: seed of the shuffling order and of the workers' augmentation RNGs.
        collate_fn: batch assembly; default stacks Instances (:func:`default_collate`).
        dataset_mixer: combines a list of datasets into one.
        mixup_func: e.g. :class:`libai.data.mixup.Mixup`; applied to every batch as it leaves
            the loader, replacing hard ``labels`` by soft targets.
        data_parallel_rank / data_parallel_size: default to the current layout.
        pin_memory: default True only on CUDA; ignored (with one log line) on the CPU.
        **kwargs: passed on to ``oneflow.utils.data.DataLoader`` (e.g. ``prefetch_factor``).

    Returns:
        ``(train_loader, None, None)``.
    """
    del test_batch_size  # the trainer fills it for symmetry with the test builders
    dataset = _mix(dataset, dataset_mixer, "training")
    rank, size = resolve_data_parallel(data_parallel_rank, data_parallel_size)
    if sampler is None:
        sampler = _train_sampler(dataset, train_batch_size, consumed_samples, seed, rank, size)
    loader = _make_loader(
        dataset, sampler, num_workers, collate_fn, pin_memory, seed, rank, mixup_func, **kwargs
    )
    return loader, None, None


def build_image_test_loader(
    dataset: DatasetArg,
    test_batch_size: int,
    sampler: Optional[Any] = None,
    num_workers: int = 4,
    seed: int = 0,
    collate_fn: Optional[Callable[..., Any]] = None,
    data_parallel_rank: Optional[int] = None,
    data_parallel_size: Optional[int] = None,
    pin_memory: Optional[bool] = None,
    dataset_mixer: Callable[..., Dataset] = ConcatDataset,
    **kwargs: Any,
) -> DataLoader:
    """A single ordered pass over an evaluation dataset, split across data-parallel ranks.

    Every rank's batch has ``test_batch_size`` entries; the last global batch is padded by
    repeating the final sample (see :class:`SingleRoundSampler`), so evaluators keep the first
    ``len(loader.dataset)`` predictions. Other arguments are as in
    :func:`build_image_train_loader`.
    """
    dataset = _mix(dataset, dataset_mixer, "test")
    rank, size = resolve_data_parallel(data_parallel_rank, data_parallel_size)
    if sampler is None:
        sampler = _test_sampler(dataset, test_batch_size, rank, size)
    return _make_loader(dataset, sampler, num_workers, collate_fn, pin_memory, seed, rank, **kwargs)


# ---------------------------------------------------------------------------------------------
# NLP loaders
# ---------------------------------------------------------------------------------------------
def build_nlp_train_loader(
    dataset: DatasetArg,
    train_batch_size: int,
    test_batch_size: Optional[int] = None,
    sampler: Optional[Any] = None,
    num_workers: int = 4,
    consumed_samples: int = 0,
    seed: int = 0,
    collate_fn: Optional[Callable[..., Any]] = None,
    dataset_mixer: Callable[..., Dataset] = ConcatDataset,
    splits: Optional[Sequence[Any]] = None,
    weights: Optional[Sequence[float]] = None,
    data_parallel_rank: Optional[int] = None,
    data_parallel_size: Optional[int] = None,
    pin_memory: Optional[bool] = None,
    **kwargs: Any,
) -> Loaders:
    """The training loader for text datasets; same contract as :func:`build_image_train_loader`.

    Without ``splits`` it returns ``(train_loader, None, None)``. With ``splits`` (three
    proportions ``[train, valid, test]``, or one such triple per dataset), each dataset is cut
    into three contiguous parts; the train parts feed the training loader and the valid and test
    parts become single-pass loaders of ``test_batch_size`` (``None`` when a part is empty).

    ``weights`` (one per dataset) are handed to ``dataset_mixer(datasets, weights)``; the default
    concatenation cannot weight, so with it they must all be equal.
    """
    datasets = list(dataset) if isinstance(dataset, (list, tuple)) else [dataset]
    mixer = _weighted_mixer(dataset_mixer, weights, len(datasets))
    parts = _split_datasets(datasets, splits) if splits is not None else [datasets, [], []]
    rank, size = resolve_data_parallel(data_parallel_rank, data_parallel_size)
    train_set = _mix(parts[0], mixer, "training")
    if sampler is None:
        sampler = _train_sampler(train_set, train_batch_size, consumed_samples, seed, rank, size)
    train_loader = _make_loader(
        train_set, sampler, num_workers, collate_fn, pin_memory, seed, rank, **kwargs
    )
    extra: List[Optional[DataLoader]] = []
    for role, subsets in (("validation", parts[1]), ("test", parts[2])):
        subsets = [s for s in subsets if len(s) > 0]
        if not subsets:
            extra.append(None)
            continue
        held_out = _mix(subsets, ConcatDataset, role)
        extra.append(
            _make_loader(
                held_out, _test_sampler(held_out, test_batch_size, rank, size), num_workers,
                collate_fn, pin_memory, seed, rank, **kwargs,
            )
        )
    return train_loader, extra[0], extra[1]


def build_nlp_test_loader(
    dataset: DatasetArg,
    test_batch_size: int,
    sampler: Optional[Any] = None,
    num_workers: int = 4,
    seed: int = 0,
    collate_fn: Optional[Callable[..., Any]] = None,
    data_parallel_rank: Optional[int] = None,
    data_parallel_size: Optional[int] = None,
    pin_memory: Optional[bool] = None,
    dataset_mixer: Callable[..., Dataset] = ConcatDataset,
    **kwargs: Any,
) -> DataLoader:
    """A single ordered evaluation pass over text datasets (see :func:`build_image_test_loader`)."""
    return build_image_test_loader(
        dataset, test_batch_size, sampler=sampler, num_workers=num_workers, seed=seed,
        collate_fn=collate_fn, data_parallel_rank=data_parallel_rank,
        data_parallel_size=data_parallel_size, pin_memory=pin_memory,
        dataset_mixer=dataset_mixer, **kwargs,
    )


_ROLES = ("train", "valid", "test")


def build_nlp_train_val_test_loader(
    dataset: Any,
    splits: Sequence[Any],
    weights: Optional[Sequence[float]] = None,
    train_val_test_num_samples: Optional[Sequence[Optional[int]]] = None,
    train_batch_size: int = 1,
    test_batch_size: Optional[int] = None,
    train_sampler: Any = None,
    test_sampler: Any = None,
    num_workers: int = 4,
    consumed_samples: int = 0,
    seed: int = 0,
    collate_fn: Optional[Callable[..., Any]] = None,
    dataset_mixer: Callable[..., Dataset] = ConcatDataset,
    **kwargs: Any,
) -> Loaders:
    """LiBai's loader for a corpus without held-out files: train/valid/test cut from it.

    ``dataset`` is one dataset *node* (``LazyCall(GPT2Dataset)(...)``) or a list of them, with
    one ``[train, valid, test]`` proportion triple per dataset in ``splits``. Each node is
    built three times, as the ``split="train"|"valid"|"test"`` part of its corpus by *document*
    ratios (``splits_string``; every libai text dataset takes both), asking for
    ``train_val_test_num_samples[i]`` samples of part ``i`` (``None``: one pass). The parts are
    mixed across datasets by ``dataset_mixer`` and returned as ``(train_loader, valid_loader,
    test_loader)``; a held-out part with a 0 share gives ``None``. The trainer hands nodes over unbuilt because
    this function says so (``builds_own_datasets``). Already-built datasets are accepted too
    and cut into contiguous sample ranges instead (what :func:`build_nlp_train_loader` does
    with ``splits``).

    ``train_sampler`` / ``test_sampler`` may be sampler nodes (LiBai's defaults are
    ``LazyCall(CyclicSampler)(shuffle=True)`` and ``LazyCall(SingleRoundSampler)(shuffle=False,
    drop_last=False)``); they are completed with the dataset, batch size, data-parallel rank
    and seed. ``weights`` are as in :func:`build_nlp_train_loader`.
    """
    nodes = list(dataset) if isinstance(dataset, (list, tuple, ListConfig)) else [dataset]
    if not any(is_node(n) for n in nodes):
        return build_nlp_train_loader(
            nodes, train_batch_size, test_batch_size, None, num_workers, consumed_samples, seed,
            collate_fn, dataset_mixer, splits=splits, weights=weights, **kwargs,
        )
    triples = [splits] if splits and not isinstance(splits[0], (list, tuple, ListConfig)) else list(splits)
    if len(triples) == 1:
        triples = triples * len(nodes)
    if len(triples) != len(nodes):
        raise ValueError(f"splits has {len(triples)} triples for {len(nodes)} dataset(s)")
    wanted = list(train_val_test_num_samples or (None, None, None))
    if len(wanted) != 3:
        raise ValueError(
            f"train_val_test_num_samples must be [train, valid, test] sample counts, got {wanted}"
        )
    parts: List[List[Dataset]] = [[], [], []]
    for node, triple in zip(nodes, triples):
        if not is_node(node):
            raise TypeError(
                "build_nlp_train_val_test_loader needs every dataset as a LazyCall node (it "
                f"builds each split itself), got a built {type(node).__name__} beside nodes"
            )
        ratios = ",".join(str(float(x)) for x in triple)
        for i, role in enumerate(_ROLES):
            if i > 0 and float(triple[i]) == 0.0:
                continue  # a held-out part given no share: no loader for it
            # the split's sample count; a node that names LiBai's max_num_samples has that
            # key replaced, as LiBai's loader does
            count = ({"max_num_samples": wanted[i]} if "max_num_samples" in node and wanted[i] is not None
                     else {"num_samples": wanted[i]})
            part = instantiate(node, split=role, splits_string=ratios, **count)
            parts[i].append(part)
    rank, size = resolve_data_parallel(kwargs.pop("data_parallel_rank", None),
                                       kwargs.pop("data_parallel_size", None))
    pin_memory = kwargs.pop("pin_memory", None)
    mixer = _weighted_mixer(dataset_mixer, weights, len(nodes))
    train_set = _mix(parts[0], mixer, "training")
    sampler = _sampler_from(train_sampler, train_set, train_batch_size, rank, size, seed,
                            consumed_samples=consumed_samples)
    if sampler is None:
        sampler = _train_sampler(train_set, train_batch_size, consumed_samples, seed, rank, size)
    train_loader = _make_loader(
        train_set, sampler, num_workers, collate_fn, pin_memory, seed, rank, **kwargs
    )
    held_out: List[Optional[DataLoader]] = []
    for role, subsets in (("validation", parts[1]), ("test", parts[2])):
        subsets = [d for d in subsets if len(d) > 0]
        if not subsets:
            held_out.append(None)
            continue
        mixed = _mix(subsets, ConcatDataset, role)
        sampler = _sampler_from(test_sampler, mixed, test_batch_size, rank, size, seed)
        if sampler is None:
            sampler = _test_sampler(mixed, test_batch_size, rank, size)
        held_out.append(
            _make_loader(mixed, sampler, num_workers, collate_fn, pin_memory, seed, rank, **kwargs)
        )
    return train_loader, held_out[0], held_out[1]


build_nlp_train_val_test_loader.builds_own_datasets = True  # type: ignore[attr-defined]


def _sampler_from(
    node: Any, dataset: Dataset, batch_size: Optional[int], rank: int, size: int, seed: int,
    **extra: Any,
) -> Any:
    """A sampler node completed with the loader's dataset and sizes; a built sampler as is."""
    if node is None or not is_node(node):
        return node
    if batch_size is None or int(batch_size) < 1:
        raise ValueError(f"a sampler needs a positive batch size, got {batch_size}")
    return instantiate(
        node, dataset=dataset, batch_size_per_rank=int(batch_size), data_parallel_rank=rank,
        data_parallel_size=size, seed=seed, **extra,
    )


def _weighted_mixer(
    dataset_mixer: Callable[..., Dataset], weights: Optional[Sequence[float]], count: int
) -> Callable[..., Dataset]:
    if weights is None:
        return dataset_mixer
    weights = [float(w) for w in weights]
    if len(weights) != count:
        raise ValueError(
            f"weights has {len(weights)} entries for {count} dataset(s); give one each"
        )
    if dataset_mixer is ConcatDataset:
        if len(set(weights)) > 1:
            raise ValueError(
                f"weights {weights} need a blending dataset_mixer; ConcatDataset (the default) "
                "uses every sample once, so pass dataset_mixer=<a class taking (datasets, weights)>"
            )
        return dataset_mixer
    return functools.partial(_call_with_weights, dataset_mixer, weights)


def _call_with_weights(
    mixer: Callable[..., Dataset], weights: List[float], datasets: List[Dataset]
) -> Dataset:
    return mixer(datasets, weights)


def _split_datasets(datasets: List[Dataset], splits: Sequence[Any]) -> List[List[Dataset]]:
    """Cut each dataset into contiguous train/valid/test Subsets by proportions."""
    triples = [splits] if splits and not isinstance(splits[0], (list, tuple)) else list(splits)
    if len(triples) == 1:
        triples = triples * len(datasets)
    if len(triples) != len(datasets):
        raise ValueError(f"splits has {len(triples)} triples for {len(datasets)} dataset(s)")
    parts: List[List[Dataset]] = [[], [], []]
    for ds, triple in zip(datasets, triples):
        props = np.asarray([float(x) for x in triple], dtype=np.float64)
        if props.shape != (3,) or (props < 0).any() or props.sum() <= 0:
            raise ValueError(
                "each split must be three non-negative proportions [train, valid, test], "
                f"got {triple}"
            )
        fractions = np.cumsum(np.concatenate([[0.0], props / props.sum()]))
        bounds = np.rint(fractions * len(ds)).astype(int)
        for k in range(3):
            parts[k].append(Subset(ds, list(range(bounds[k], bounds[k + 1]))))
    return parts
