"""Run a model over a test loader and feed an evaluator: :func:`inference_on_dataset`.

The padding contract with the test loaders: so that every data-parallel rank gets a full batch,
the last global batch may be padded *at its end* with repeated samples. Knowing the true number
of samples (``len(data_loader.dataset)``), this function drops those rows again, so every sample
is evaluated exactly once whatever the number of ranks.
"""
import contextlib
import datetime
import logging
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any, Callable, Dict, Iterator, Optional, Sequence, Tuple, Union

import oneflow as flow

from libai.data.structures import DistTensorData, Instance
from libai.evaluation.evaluator import DatasetEvaluator, DatasetEvaluators
from libai.utils.distributed import ttol

__all__ = ["inference_on_dataset"]

logger = logging.getLogger(__name__)

LOG_INTERVAL_SECONDS = 5.0  # how often progress is logged
_WARMUP_BATCHES = 2  # left out of the speed estimate (graph compilation, allocator warm-up)


def inference_on_dataset(
    model: Any,
    data_loader: Any,
    evaluator: Union[DatasetEvaluator, Sequence[DatasetEvaluator], None],
    get_batch: Optional[Callable[[Instance], Any]] = None,
    eval_iter: Optional[int] = None,
    layout: Any = None,
) -> "OrderedDict[str, Any]":
    """Evaluate ``model`` on every sample of ``data_loader`` once and return the results.

    For each batch (an :class:`~libai.data.structures.Instance`): ``get_batch(instance)``
    makes the model inputs (default: ``instance.to_global(layout)``, or the plain tensors
    without a layout), ``outputs = model(**inputs)``; inputs and outputs are converted to full
    local tensors (:func:`~libai.utils.distributed.ttol`), the padding rows of the last batch
    are dropped, and ``evaluator.process(inputs, outputs)`` is called.

    The model runs in eval mode under ``flow.no_grad()``; its previous mode is restored after.

    Args:
        model: an ``nn.Module`` (or an evaluation ``nn.Graph``) returning a dict.
        data_loader: yields batch Instances; ``len(data_loader.dataset)`` is the true sample
            count used to drop padding (without it nothing is dropped).
        evaluator: one evaluator, a list of them, or ``None`` (run the model only).
        get_batch: turns a batch Instance into the model's keyword inputs (dict or Instance).
        eval_iter: evaluate at most this many batches.
        layout: the run's :class:`~libai.utils.distributed.ParallelLayout`.

    Returns:
        ``evaluator.evaluate()`` (an empty dict when ``evaluator`` is ``None``).
    """
    evaluator = _as_evaluator(evaluator)
    if eval_iter is not None and (isinstance(eval_iter, bool) or int(eval_iter) < 0):
        raise ValueError(f"eval_iter must be None or a non-negative integer, got {eval_iter!r}")
    total_samples = _dataset_length(data_loader)
    num_batches = _planned_batches(data_loader, eval_iter)
    to_inputs = get_batch or (lambda instance: default_get_batch(instance, layout))
    evaluator.reset()
    progress = _Progress(num_batches)
    seen = 0
    with _eval_mode(model), flow.no_grad():
        for idx, instance in enumerate(data_loader):
            if (eval_iter is not None and idx >= eval_iter) or (
                total_samples is not None and seen >= total_samples
            ):
                break
            inputs, outputs = _run_batch(model, to_inputs, instance)
            inputs, outputs, rows = _drop_padding(inputs, outputs, seen, total_samples)
            seen += rows
            evaluator.process(inputs, outputs)
            progress.done(idx + 1)
    progress.finish(seen)
    return evaluator.evaluate()


def _run_batch(model: Any, to_inputs: Callable, instance: Any) -> Tuple[Dict, Dict]:
    """One forward pass; inputs and outputs returned as full local tensors."""
    inputs = _as_dict(to_inputs(instance), "get_batch")
    outputs = model(**inputs)
    if not isinstance(outputs, Mapping):
        raise TypeError(
            f"inference_on_dataset needs the model to return a dict (e.g. "
            f"{{'prediction_scores': logits}}), got {type(outputs).__name__}"
        )
    return _to_local(inputs), _to_local(outputs)


def _drop_padding(
    inputs: Dict[str, Any], outputs: Dict[str, Any], seen: int, total: Optional[int]
) -> Tuple[Dict, Dict, int]:
    """Cut the batch to the samples not yet evaluated; returns the rows kept."""
    rows = _batch_rows(inputs, outputs)
    if rows is None:
        return inputs, outputs, 0
    if total is not None and seen + rows > total:
        keep = total - seen
        return _truncate(inputs, rows, keep), _truncate(outputs, rows, keep), keep
    return inputs, outputs, rows


def default_get_batch(instance: Any, layout: Any = None) -> Dict[str, Any]:
    """Model inputs of a batch: placed by ``layout`` when given, else the plain tensors."""
    if not isinstance(instance, Instance):
        return _as_dict(instance, "the data loader")
    if layout is not None:
        return instance.to_global(layout).get_fields()
    return OrderedDict(
        (name, value.tensor if isinstance(value, DistTensorData) else value)
        for name, value in instance.get_fields().items()
    )


def _as_evaluator(evaluator: Any) -> DatasetEvaluator:
    if isinstance(evaluator, DatasetEvaluator):
        return evaluator
    if evaluator is None:
        return DatasetEvaluators([])
    if isinstance(evaluator, (list, tuple)):
        return DatasetEvaluators(evaluator)
    raise TypeError(
        f"evaluator must be a DatasetEvaluator, a list of them or None, got {type(evaluator).__name__}"
    )


def _as_dict(value: Any, source: str) -> Dict[str, Any]:
    if isinstance(value, Instance):
        return value.get_fields()
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(
        f"{source} must give the model's keyword inputs as a dict or an Instance, "
        f"got {type(value).__name__}"
    )


def _dataset_length(data_loader: Any) -> Optional[int]:
    dataset = getattr(data_loader, "dataset", None)
    try:
        return len(dataset) if dataset is not None else None
    except TypeError:  # an iterable dataset without a length
        return None


def _planned_batches(data_loader: Any, eval_iter: Optional[int]) -> Optional[int]:
    try:
        total = len(data_loader)
    except TypeError:
        total = None
    if eval_iter is None:
        return total
    return int(eval_iter) if total is None else min(total, int(eval_iter))


@contextlib.contextmanager
def _eval_mode(model: Any) -> Iterator[None]:
    """Eval mode for the duration; the previous mode is restored even on error."""
    if not isinstance(model, flow.nn.Module):  # an nn.Graph fixes its mode when built
        yield
        return
    was_training = model.training
    model.eval()
    try:
        yield
    finally:
        model.train(was_training)


def _to_local(fields: Dict[str, Any]) -> Dict[str, Any]:
    return OrderedDict(
        (k, ttol(v) if isinstance(v, flow.Tensor) else v) for k, v in fields.items()
    )


def _batch_rows(*field_dicts: Dict[str, Any]) -> Optional[int]:
    """The batch size: the first dimension of the first input (else output) tensor."""
    for fields in field_dicts:
        for value in fields.values():
            if isinstance(value, flow.Tensor) and value.ndim > 0:
                return int(value.shape[0])
    return None


def _truncate(fields: Dict[str, Any], rows: int, keep: int) -> Dict[str, Any]:
    """Keep the first ``keep`` rows of every tensor whose first dimension is the batch."""
    out: Dict[str, Any] = OrderedDict()
    for name, value in fields.items():
        if isinstance(value, flow.Tensor) and value.ndim > 0 and value.shape[0] == rows:
            value = value[:keep]
        out[name] = value
    return out


class _Progress:
    """Logs batches done and an ETA every few seconds, and the total time at the end."""

    def __init__(self, total: Optional[int], clock: Callable[[], float] = time.perf_counter):
        self._total = total
        self._clock = clock
        self._start = clock()
        self._last_log = self._start
        self._timed_from: Optional[float] = None
        self._timed_from_batch = 0

    def done(self, batches: int) -> None:
        now = self._clock()
        if batches == _WARMUP_BATCHES:
            self._timed_from, self._timed_from_batch = now, batches
        if now - self._last_log < LOG_INTERVAL_SECONDS:
            return
        self._last_log = now
        message = f"Inference done {batches}/{self._total if self._total is not None else '?'}."
        if self._timed_from is not None and batches > self._timed_from_batch:
            per_batch = (now - self._timed_from) / (batches - self._timed_from_batch)
            message += f" {per_batch:.4f} s/batch."
            if self._total is not None:
                eta = datetime.timedelta(seconds=int(per_batch * (self._total - batches)))
                message += f" ETA={eta}"
        logger.info(message)

    def finish(self, samples: int) -> None:
        elapsed = self._clock() - self._start
        logger.info(
            f"Total inference time: {datetime.timedelta(seconds=int(elapsed))} "
            f"({elapsed:.3f} s) for {samples} samples"
        )
