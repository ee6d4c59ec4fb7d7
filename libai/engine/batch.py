"""How a loader batch becomes the model's keyword arguments.

A loader yields an :class:`~libai.data.structures.Instance` whose fields are
:class:`~libai.data.structures.DistTensorData`; the model is called as ``model(**fields)`` with
global tensors placed by the run's :class:`~libai.utils.distributed.ParallelLayout` (in every
run, one process included, so a ``get_batch`` override or a model can read ``.sbp`` and
``.placement`` as LiBai code does). This module holds
that conversion (:func:`place_batch`, which ``DefaultTrainer.get_batch`` is, under LiBai's name
and signature), the split of a step's batch into micro-batches for Eager accumulation, and the
early check that field names fit ``forward``.

LiBai's ``input_placement_device`` maps onto the layout (:func:`input_layout`): the layout
decides where inputs go, and the setting only matters where it can differ from the layout's
device, i.e. ``"cpu"`` in a CUDA run (inputs stay on the host and the model moves them itself).
"""
import dataclasses
import inspect
import logging
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

import oneflow as flow

from libai.data.mixup import mix_batch
from libai.data.structures import DistTensorData, Instance
from libai.utils import distributed as dist

__all__ = ["place_batch", "input_layout", "split_batch", "check_fields_match"]

logger = logging.getLogger(__name__)

_REPORTED: Set[Tuple[str, str]] = set()


def input_layout(layout: dist.ParallelLayout, input_placement_device: Optional[str]) -> dist.ParallelLayout:
    """The layout that places a batch, given LiBai's ``train.input_placement_device``.

    ``None`` (libai's default) or the layout's own device type: the layout itself. ``"cpu"`` in a
    CUDA run: the same layout with CPU placements (LiBai's way of keeping inputs on the host in
    pipeline-parallel runs). Another device the run does not use (LiBai's default ``"cuda"`` on a
    machine without GPUs) cannot be honoured: the layout's device is used, said once.
    """
    wanted = input_placement_device
    if not wanted or wanted == layout.device_type:
        return layout
    if wanted == "cpu":
        return dataclasses.replace(layout, device_type="cpu")
    key = (layout.device_type, str(wanted))
    if key not in _REPORTED:
        _REPORTED.add(key)
        logger.info(
            f"input_placement_device={wanted!r}: this run's layout places everything on "
            f"{layout.device_type!r}, so inputs go there (set train.input_placement_device=None "
            "to follow the layout without this note)"
        )
    return layout


def place_batch(
    data: Any,
    layout: Optional[dist.ParallelLayout],
    input_placement_device: Optional[str] = None,
    mixup_func: Optional[Callable[..., Any]] = None,
) -> Dict[str, Any]:
    """A loader batch as the model's keyword arguments, placed by ``layout``.

    An :class:`Instance` has its ``DistTensorData`` fields made global tensors on their
    pipeline stage (one process included, as in LiBai: user code may read ``.sbp``); a plain mapping is passed through (it needs no layout). ``mixup_func`` (LiBai passes the loader's
    ``mixup_func``) is applied to a batch whose labels are still class indices; libai's loaders
    mix in the main process already, and a batch that carries soft targets is not mixed twice.
    """
    if isinstance(data, flow.utils.data._utils.worker.ExceptionWrapper):
        data.reraise()
    if mixup_func is not None and isinstance(data, Instance) and not _already_mixed(data, mixup_func):
        data = mix_batch(data, mixup_func)
    if isinstance(data, Instance):
        if layout is None:
            raise RuntimeError(
                "no parallel layout to place the batch with: give the step runner layout=, or "
                "call run_step inside `with layout:` (DefaultTrainer does both)"
            )
        return data.to_global(input_layout(layout, input_placement_device)).get_fields()
    if isinstance(data, Mapping):
        return dict(data)
    raise TypeError(
        f"cannot turn a batch of type {type(data).__name__} into model inputs: the loader must "
        "yield libai.data.Instance batches (or dicts of tensors), or override get_batch"
    )


def _already_mixed(batch: Instance, mixup_func: Any) -> bool:
    """Soft targets (more than one dimension) in the label field: the loader mixed this batch."""
    name = getattr(mixup_func, "label_field", "labels")
    if not batch.has(name):
        return False
    labels = batch.get(name)
    labels = labels.tensor if isinstance(labels, DistTensorData) else labels
    return isinstance(labels, flow.Tensor) and labels.ndim > 1


def split_batch(batch: Any, parts: int) -> List[Any]:
    """Split an Instance batch into ``parts`` equal micro-batches along the batch dimension."""
    if parts == 1:
        return [batch]
    if not isinstance(batch, Instance):
        raise TypeError("gradient accumulation in eager mode needs Instance batches to split")
    size = batch.batch_size()
    if size is None or size % parts != 0:
        raise ValueError(
            f"a batch of {size} samples cannot be split into {parts} equal micro-batches; the "
            "loader must yield train_micro_batch_size × num_accumulation_steps samples per rank"
        )
    step = size // parts
    return [_slice(batch, i * step, (i + 1) * step) for i in range(parts)]


def _slice(batch: Instance, start: int, stop: int) -> Instance:
    micro = Instance()
    for name, value in batch.get_fields().items():
        if isinstance(value, DistTensorData):
            micro.set(name, DistTensorData(value.tensor[start:stop], value.sbp_list, value.placement_idx))
        elif isinstance(value, (flow.Tensor, list)):
            micro.set(name, value[start:stop])
        else:
            micro.set(name, value)
    return micro


def check_fields_match(module: Optional[flow.nn.Module], names: Sequence[str]) -> None:
    """Fail early, listing both sides, when batch field names do not fit ``module.forward``."""
    if module is None:
        return
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    accepted = [p.name for p in params if p.kind in named]
    required = [p.name for p in params if p.default is inspect.Parameter.empty and p.kind in named]
    unknown = [n for n in names if n not in accepted]
    missing = [n for n in required if n not in names]
    if unknown or missing:
        raise TypeError(
            f"the batch fields {list(names)} do not match {type(module).__name__}.forward"
            f"({', '.join(accepted)}): "
            + (f"no argument for {unknown}" if unknown else "")
            + ("; " if unknown and missing else "")
            + (f"no field for required {missing}" if missing else "")
            + ". The Dataset's Instance keyword names must equal forward's argument names."
        )
