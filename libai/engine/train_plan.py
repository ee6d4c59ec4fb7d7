"""How long and how wide a run is: the batch-size triple, iterations and warmup, derived once.

API rules: ``global_batch_size = train_micro_batch_size × num_accumulation_steps ×
data_parallel_size`` (any two determine the third, the micro batch always being given; an
inconsistent triple is an error); total iterations = ``max(train_iter, train_epoch ×
iterations per epoch, train_samples / global_batch_size)``; warmup iterations =
``warmup_ratio × total``.
"""
import logging
import math
from dataclasses import dataclass
from typing import Any, Optional

from libai.utils.distributed import current_layout

logger = logging.getLogger(__name__)

__all__ = [
    "BatchSizes", "TrainPlan", "check_batch_size", "resolve_batch_sizes", "resolve_iterations",
]


@dataclass(frozen=True)
class BatchSizes:
    micro_batch_size: int
    num_accumulation_steps: int
    data_parallel_size: int

    @property
    def global_batch_size(self) -> int:
        return self.micro_batch_size * self.num_accumulation_steps * self.data_parallel_size

    @property
    def per_rank_step_batch(self) -> int:
        """Samples each data-parallel rank loads per iteration (all micro-batches)."""
        return self.micro_batch_size * self.num_accumulation_steps


@dataclass(frozen=True)
class TrainPlan:
    batch: BatchSizes
    max_iter: int
    warmup_iter: int
    iters_per_epoch: Optional[int]

    def describe(self) -> str:
        b = self.batch
        epoch = f", {self.iters_per_epoch} iterations per epoch" if self.iters_per_epoch else ""
        return (
            f"global batch {b.global_batch_size} = micro batch {b.micro_batch_size} × "
            f"{b.num_accumulation_steps} accumulation step(s) × {b.data_parallel_size} data-parallel "
            f"rank(s); {self.max_iter} iterations{epoch}; {self.warmup_iter} warmup iterations"
        )


def resolve_batch_sizes(train: Any, data_parallel_size: int) -> BatchSizes:
    """Complete the triple from ``train`` (see module docstring)."""
    micro = train.train_micro_batch_size
    acc = train.num_accumulation_steps
    glob = train.global_batch_size
    if micro is None or int(micro) < 1:
        raise ValueError(f"train.train_micro_batch_size must be a positive integer, got {micro}")
    micro, dp = int(micro), int(data_parallel_size)
    if glob is None:
        acc = 1 if acc is None else int(acc)
    elif acc is None:
        glob = int(glob)
        if glob % (micro * dp) != 0:
            raise ValueError(
                f"train.global_batch_size ({glob}) is not a multiple of train_micro_batch_size ({micro}) "
                f"× data_parallel_size ({dp}) = {micro * dp}; choose a global batch that is, or set "
                "num_accumulation_steps"
            )
        acc = glob // (micro * dp)
    else:
        acc, glob = int(acc), int(glob)
        if micro * acc * dp != glob:
            raise ValueError(
                f"inconsistent batch sizes: global_batch_size ({glob}) must equal "
                f"train_micro_batch_size ({micro}) × num_accumulation_steps ({acc}) × "
                f"data_parallel_size ({dp}) = {micro * acc * dp}. Set any two of them and leave "
                "the third as None"
            )
    if acc < 1:
        raise ValueError(f"train.num_accumulation_steps must be >= 1, got {acc}")
    return BatchSizes(micro, acc, dp)


def check_batch_size(cfg: Any, data_parallel_size: Optional[int] = None) -> BatchSizes:
    """Resolve ``cfg.train``'s batch sizes and write the completed triple back into it.

    LiBai's ``_check_batch_size(cfg)`` (``libai.engine.default``) is this function: it fills
    ``train.num_accumulation_steps`` from the global and micro batch sizes, or checks the three
    agree. ``data_parallel_size`` defaults to the current layout's (the one ``setup_dist_util``
    or an entered :class:`~libai.utils.distributed.ParallelLayout` made), or 1 without one.
    """
    if data_parallel_size is None:
        try:
            data_parallel_size = current_layout().data_parallel_size
        except RuntimeError:
            data_parallel_size = 1
    batch = resolve_batch_sizes(cfg.train, data_parallel_size)
    cfg.train.num_accumulation_steps = batch.num_accumulation_steps
    cfg.train.global_batch_size = batch.global_batch_size
    return batch


def resolve_iterations(train: Any, batch: BatchSizes, dataset_size: Optional[int]) -> TrainPlan:
    """Total and warmup iterations from ``train_iter``/``train_epoch``/``train_samples``."""
    glob = batch.global_batch_size
    candidates = [int(train.train_iter or 0)]
    named = {"train.train_iter": candidates[0]}
    iters_per_epoch = None
    if dataset_size is not None:
        iters_per_epoch = dataset_size // glob
    if train.train_epoch:
        if iters_per_epoch is None:
            raise ValueError("train.train_epoch needs a training dataset whose length is known")
        if iters_per_epoch == 0:
            raise ValueError(
                f"the training dataset has {dataset_size} samples, fewer than one global batch "
                f"({glob}); lower the batch size or use more data"
            )
        candidates.append(int(train.train_epoch) * iters_per_epoch)
        named[f"train.train_epoch={int(train.train_epoch)}"] = candidates[-1]
    if train.get("train_samples"):
        candidates.append(math.ceil(int(train.train_samples) / glob))
        named[f"train.train_samples={int(train.train_samples)}"] = candidates[-1]
    max_iter = max(candidates)
    _say_which_length_wins(named, max_iter)
    if max_iter < 1:
        raise ValueError(
            "nothing to train: set train.train_iter, train.train_epoch or train.train_samples"
        )
    ratio = float(train.warmup_ratio or 0.0)
    if not 0.0 <= ratio <= 1.0:
        raise ValueError(f"train.warmup_ratio must be in [0, 1], got {ratio}")
    return TrainPlan(batch=batch, max_iter=max_iter, warmup_iter=int(ratio * max_iter),
                     iters_per_epoch=iters_per_epoch)


def _say_which_length_wins(named: dict, max_iter: int) -> None:
    """Several lengths set (e.g. ``train.train_iter=6`` on the command line of a recipe that
    sets ``train_epoch``): the longest wins, as in LiBai. Say so, and how to get the other."""
    given = {k: v for k, v in named.items() if v > 0}
    if len(given) < 2 or len(set(given.values())) < 2:
        return
    parts = ", ".join(f"{k} ({v:,} iterations)" if "=" in k else f"{k}={v}" for k, v in given.items())
    shorter = [k.split("=")[0] for k, v in given.items() if v != max_iter]
    longer = [k.split("=")[0] for k, v in given.items() if v == max_iter]
    logger.warning(
        f"Training length set several ways: {parts}. The longest wins (LiBai's rule): {max_iter:,} "
        f"iterations. To train for {' / '.join(shorter)} instead, also set "
        + " ".join(f"{k}=0" for k in longer)
        + " (or use --smoke for a quick try)"
    )
