"""The five loader builders that configs call: image/NLP × train/test, and the NLP train/valid/test trio.

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

This module answers "which loaders does a config get"; how one loader is assembled lives in
:mod:`libai.data.loading` and how datasets are mixed and split in :mod:`libai.data.dataset_parts`
(names that used to live here are re-exported).
"""
import types
from typing import Any, Callable, Optional, Sequence

from oneflow.utils.data import ConcatDataset, DataLoader, Dataset

from libai.config import is_node
from libai.data.dataset_parts import (
    DatasetArg,
    as_list,
    build_node_parts,
    mix_datasets,
    split_datasets,
    weighted_mixer,
)
from libai.data.loading import (  # noqa: F401  (re-exported: their home was this module)
    CheckedDataLoader,
    LoaderRecipe,
    Loaders,
    MixupDataLoader,
    _warn_pin_memory_once,
    default_collate,
    logger,
    resolve_data_parallel,
)
from libai.data.samplers import CyclicSampler, SingleRoundSampler  # noqa: F401  (LiBai's build has them)
from libai.data.structures import Instance  # noqa: F401  (likewise)

__all__ = [
    "build_image_train_loader",
    "build_image_test_loader",
    "build_nlp_train_loader",
    "build_nlp_test_loader",
    "build_nlp_train_val_test_loader",
    "default_collate",
    "resolve_data_parallel",
]


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
    dataset = mix_datasets(dataset, dataset_mixer, "training")
    recipe = LoaderRecipe(*resolve_data_parallel(data_parallel_rank, data_parallel_size), seed,
                          num_workers, collate_fn, pin_memory, dict(kwargs, mixup_func=mixup_func))
    return recipe.train_loader(dataset, train_batch_size, sampler, consumed_samples), None, None


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
    dataset = mix_datasets(dataset, dataset_mixer, "test")
    recipe = LoaderRecipe(*resolve_data_parallel(data_parallel_rank, data_parallel_size), seed,
                          num_workers, collate_fn, pin_memory, kwargs)
    return recipe.test_loader(dataset, test_batch_size, sampler)


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
    mixer = weighted_mixer(dataset_mixer, weights, len(datasets))
    parts = split_datasets(datasets, splits) if splits is not None else [datasets, [], []]
    recipe = LoaderRecipe(*resolve_data_parallel(data_parallel_rank, data_parallel_size), seed,
                          num_workers, collate_fn, pin_memory, kwargs)
    return recipe.split_loaders(parts, mixer, train_batch_size, test_batch_size,
                                consumed_samples, train_sampler=sampler)


def _second_name(builder: Callable[..., Any], name: str, doc: str) -> Callable[..., Any]:
    """``builder`` under another public name: the same code, defaults and annotations, but its
    own ``__name__``, so a config that calls it by that name is dumped (``config.yaml``) and
    reported under that name, and LiBai's import path keeps working."""
    twin = types.FunctionType(builder.__code__, builder.__globals__, name, builder.__defaults__,
                              builder.__closure__)
    twin.__kwdefaults__ = builder.__kwdefaults__
    twin.__annotations__ = dict(builder.__annotations__)
    twin.__qualname__ = name
    twin.__module__ = builder.__module__
    twin.__doc__ = doc
    return twin


# LiBai has two names for one evaluation loader; text and images need the same pass.
build_nlp_test_loader = _second_name(
    build_image_test_loader, "build_nlp_test_loader",
    """A single ordered evaluation pass over text datasets: the same builder as
    :func:`build_image_test_loader`, under LiBai's NLP name.""",
)


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
    nodes = as_list(dataset)
    if not any(is_node(n) for n in nodes):
        return build_nlp_train_loader(
            nodes, train_batch_size, test_batch_size, None, num_workers, consumed_samples, seed,
            collate_fn, dataset_mixer, splits=splits, weights=weights, **kwargs,
        )
    parts = build_node_parts(nodes, splits, train_val_test_num_samples)
    rank, size = resolve_data_parallel(kwargs.pop("data_parallel_rank", None),
                                       kwargs.pop("data_parallel_size", None))
    recipe = LoaderRecipe(rank, size, seed, num_workers, collate_fn, kwargs.pop("pin_memory", None),
                          kwargs)
    mixer = weighted_mixer(dataset_mixer, weights, len(nodes))
    return recipe.split_loaders(parts, mixer, train_batch_size, test_batch_size, consumed_samples,
                                train_sampler, test_sampler)


build_nlp_train_val_test_loader.builds_own_datasets = True  # type: ignore[attr-defined]
