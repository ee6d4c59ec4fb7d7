"""Who holds what: the parallel layout of a run, and small process helpers.

A :class:`ParallelLayout` is a value: the data, tensor and pipeline parallel sizes, the device
type, this process's rank and the world size, and the stage of every layer. Layers read the
layout that is *current* when they are built (``with layout: model = instantiate(cfg.model)``)
and keep a reference to it, so forward passes need no global state and one process can hold
several layouts (tests build the same model under two of them).

Ranks are arranged as ``[pipeline stage][data parallel][tensor parallel]``: stage ``s`` owns ranks
``s*dp*tp ... (s+1)*dp*tp - 1``. Code speaks of SBP *logically*, as a pair ``[sbp over data
parallel, sbp over tensor parallel]``; the layout alone turns that pair into the *physical*
nd-SBP of its placements: a 2-D ``(dp, tp)`` placement, except for pure data parallelism,
whose placement is 1-D (see :attr:`ParallelLayout.placement_axes`).

Tensors are global in every run, a single process included (a one-rank placement), as in LiBai:
batches, parameters and activations answer ``.sbp``, ``.placement``, ``.to_global(...)`` and
``.to_local()``, and the helpers below answer for one process as LiBai's do. What that costs
against plain local tensors was measured (docs/benchmarks.md, "Global tensors in one process").
Only :meth:`ParallelLayout.local_copy` makes a layout of local tensors, for code whose tensors no
user code sees (ONNX export, through ``libai.layers.utils.local_tensors``); layers and data ask
:attr:`ParallelLayout.is_global` through ``libai.layers.utils`` only.

LiBai's functions, mapped onto the layout. LiBai keeps one mutable global "dist util", set by
``setup_dist_util(cfg.train.dist)`` and read by every layer. Here:

- ``setup_dist_util(cfg)`` builds ``ParallelLayout.from_config(cfg)`` and makes it the *process
  layout*: what :func:`current_layout` answers when no layout is entered (an entered layout
  always wins). It writes the resolved sizes back into ``cfg`` as LiBai does.
- ``get_dist_util()`` returns the current layout, which carries LiBai's attribute names
  (``data_parallel_size``, ``tensor_parallel_size``, ``pipeline_parallel_size``,
  ``model_parallel_size``, ``world_size``, ``num_nodes``, ``num_gpus_per_node``, ``device_type``,
  ``parallel_hierarchy``, ``get_layer_ranks``, ``get_layer_stage_id``, ``is_*_parallel``); with
  no layout at all it sets up a one-process layout with a warning, as LiBai does.
- ``set_device_type`` replaces the layout in use by a copy on the new device (layouts are values).
- ``get_layer_placement``, ``get_nd_sbp``, ``get_hidden_sbp``, the sizes, the data-parallel
  rank and ``convert_to_distributed_default_setting`` read ``get_dist_util()``, i.e. the current
  layout, or, as in LiBai, a one-process layout set up with a warning when there is none;
  ``reset_layouts()`` forgets everything (for tests). libai's own layers never fall back: they
  read :func:`current_layout`, which is an error without a layout.

Deliberate differences: sizes that do not fit the launch are an error (LiBai clamps tensor and
pipeline sizes and re-derives the data-parallel size); nd-SBP lists follow our placements, which
are a ``(dp, tp)`` grid except under pure data parallelism, so ``get_nd_sbp`` returns two entries
where LiBai returns one for a single device or pure tensor parallelism; ``ttol`` without
``ranks`` gives every rank the full value (LiBai only the ranks of the tensor's placement).
"""
import logging
from typing import Any, List, Optional, Sequence

import oneflow as flow

from libai.utils.parallel_layout import (  # noqa: F401  (re-exported: this is their public home)
    ParallelLayout,
    _checked_device_type,
    current_layout,
    has_layout,
    replace_current_layout,
    reset_layouts,
    set_process_layout,
    use_layout,
)
from libai.utils.process import (  # noqa: F401  (re-exported)
    check_launch,
    default_device_type,
    get_local_rank,
    get_num_nodes,
    get_rank,
    get_world_size,
    is_main_process,
    synchronize,
)

logger = logging.getLogger(__name__)

__all__ = [
    "ParallelLayout",
    "current_layout",
    "has_layout",
    "use_layout",
    "get_rank",
    "get_local_rank",
    "get_world_size",
    "is_main_process",
    "synchronize",
    "default_device_type",
    "check_launch",
    "get_layer_placement",
    "get_nd_sbp",
    "get_data_parallel_size",
    "get_tensor_parallel_size",
    "get_pipeline_parallel_size",
    "get_data_parallel_rank",
    "get_tensor_parallel_rank",
    "convert_to_distributed_default_setting",
    "ttol",
    "tton",
    # LiBai's names (thin mappings onto the layout; see "LiBai's module functions" below)
    "setup_dist_util",
    "get_dist_util",
    "get_hidden_sbp",
    "same_sbp",
    "is_last_process",
    "get_num_nodes",
    "set_device_type",
    "broadcast_py_object",
    "tensor_to_rank0",
]


# ---------------------------------------------------------------------------------------------
# LiBai-style module functions, answered by the current layout
# ---------------------------------------------------------------------------------------------
def get_layer_placement(layer_idx: int, device_type: Optional[str] = None) -> flow.placement:
    """Placement of the stage holding ``layer_idx`` under the current layout, on the layout's
    device type or ``device_type``; ``"cuda"`` on a machine without a GPU means ``"cpu"``, as
    in LiBai."""
    layout = get_dist_util()
    if device_type == "cuda" and not flow.cuda.is_available():
        device_type = "cpu"
    if device_type is None or device_type == layout.device_type:
        return layout.layer_placement(layer_idx)
    return flow.placement(device_type, ranks=layout.get_layer_ranks(layer_idx))


def get_nd_sbp(sbp_list: Sequence[Any]) -> List[Any]:
    """The nd-SBP, for the placements of :func:`get_layer_placement`, of the logical pair
    ``[sbp_over_data, sbp_over_tensor]`` (one entry under pure data parallelism, see
    :attr:`ParallelLayout.placement_axes`)."""
    if len(sbp_list) != 2:
        raise ValueError(
            f"get_nd_sbp takes [sbp over data parallel, sbp over tensor parallel]; got {len(sbp_list)} items"
        )
    return get_dist_util().nd_sbp(*sbp_list)


def get_data_parallel_size() -> int:
    return get_dist_util().data_parallel_size


def get_tensor_parallel_size() -> int:
    return get_dist_util().tensor_parallel_size


def get_pipeline_parallel_size() -> int:
    return get_dist_util().pipeline_parallel_size


def get_data_parallel_rank() -> int:
    return get_dist_util().data_parallel_rank


def get_tensor_parallel_rank() -> int:
    return get_dist_util().tensor_parallel_rank


def convert_to_distributed_default_setting(obj: Any) -> Any:
    """Place a tensor or a plain (non-libai) module where the layout puts unsplit values:
    stage 0, broadcast.

    LiBai applies it to tensors (``model._apply(dist.convert_to_distributed_default_setting)``,
    or an input batch); a module is accepted too. A local tensor is taken as the full value
    (every rank holds the same); a global one keeps its ranks and moves to the layout's device
    type. Parameters already global are left as they are (libai layers place themselves).
    Under a layout's ``local_copy()`` (ONNX export) everything is only moved to the device.
    """
    layout = get_dist_util()
    if isinstance(obj, flow.nn.Module):
        if not layout.is_global:
            return obj.to(layout.device)
        placement, sbp = layout.stage_placement(0), layout.nd_sbp()
        # only the local tensors: a model mixing plain modules with libai layers keeps the
        # placement and SBP its libai layers chose (tensor-parallel splits, pipeline stages)
        return obj._apply(lambda t: t if t.is_global else t.to(layout.device).to_global(placement=placement, sbp=sbp))
    if not layout.is_global:
        return obj if obj.device == layout.device else obj.to(layout.device)
    if not obj.is_global:
        return obj.to(layout.device).to_global(placement=layout.stage_placement(0), sbp=layout.nd_sbp())
    return obj.to_global(placement=flow.placement(layout.device_type, ranks=obj.placement.ranks))


def ttol(
    tensor: flow.Tensor, pure_local: bool = False, device: str = "cuda", ranks: Optional[Sequence[Any]] = None
) -> flow.Tensor:
    """Global → local: the full value, on every rank of the world (``pure_local`` keeps only
    this rank's piece). A tensor on a pipeline stage that excludes this rank is broadcast to all
    ranks first, so every process can read it. With ``ranks`` (LiBai's argument) the value is
    gathered on those ranks of ``device`` only (``"cuda"`` means ``"cpu"`` without a GPU), and
    the other ranks get an empty tensor. Local tensors pass through."""
    if not tensor.is_global:
        return tensor
    if ranks:
        if device == "cuda" and not flow.cuda.is_available():
            device = "cpu"
        placement = flow.placement(device, ranks=ranks)
        if pure_local:
            return tensor.to_global(placement=placement).to_local()
        sbp = [flow.sbp.broadcast] * placement.ranks.ndim
        return tensor.to_global(placement=placement, sbp=sbp).to_local()
    if pure_local:
        return tensor.to_local()
    everyone = flow.placement(tensor.placement.type, ranks=list(range(get_world_size())))
    return tensor.to_global(placement=everyone, sbp=flow.sbp.broadcast).to_local()


def tton(tensor: flow.Tensor, local_only: bool = False, ranks: Optional[Sequence[Any]] = None) -> Any:
    """Tensor → NumPy array of its full value (``local_only``: this rank's piece; ``ranks``: see
    :func:`ttol`)."""
    return ttol(tensor, pure_local=local_only, device=tensor.placement.type if tensor.is_global else "cpu",
                ranks=ranks).numpy()


# ---------------------------------------------------------------------------------------------
# LiBai's module functions. LiBai keeps one mutable global "dist util" that every layer reads;
# here ``setup_dist_util(cfg)`` builds a ParallelLayout from the same config and makes it the
# process layout (what ``current_layout()`` answers when no layout is entered), and
# ``get_dist_util()`` returns that layout, which carries LiBai's attribute names.
# ---------------------------------------------------------------------------------------------
def setup_dist_util(cfg: Any) -> ParallelLayout:
    """LiBai's ``setup_dist_util(cfg.train.dist)``: make the layout of ``cfg`` the process layout.

    The sizes are resolved by :meth:`ParallelLayout.from_config` (a size that does not fit the
    launch is an error; LiBai would silently re-derive it). As in LiBai, the resolved sizes and
    node counts are written back into ``cfg`` when it is a writable dict or config, so code that
    reads ``cfg.train.dist.data_parallel_size`` afterwards sees the real value.
    """
    layout = ParallelLayout.from_config(cfg)
    set_process_layout(layout)
    _write_back(cfg, layout)
    return layout


def _write_back(cfg: Any, layout: ParallelLayout) -> None:
    """Store the resolved sizes into ``cfg`` (LiBai's side effect); silently skipped for
    read-only configs and for objects that are not mappings."""
    resolved = {
        "data_parallel_size": layout.data_parallel_size,
        "tensor_parallel_size": layout.tensor_parallel_size,
        "pipeline_parallel_size": layout.pipeline_parallel_size,
        "num_nodes": layout.num_nodes,
        "num_gpus_per_node": layout.num_gpus_per_node,
    }
    if isinstance(cfg, dict):
        cfg.update(resolved)
        return
    from omegaconf import DictConfig, OmegaConf, open_dict

    if isinstance(cfg, DictConfig) and not OmegaConf.is_readonly(cfg):
        with open_dict(cfg):
            for key, value in resolved.items():
                cfg[key] = value


def get_dist_util() -> ParallelLayout:
    """The current layout; as in LiBai, a one-process layout is set up (with a warning) when
    none was set up or entered."""
    if not has_layout():
        logger.warning(
            "Distributed env is not set up; setting up the default (one process, data/tensor/"
            "pipeline parallel size 1). Call setup_dist_util(cfg.train.dist) to choose a layout."
        )
        setup_dist_util(None)
    return current_layout()


def set_device_type(device_type: str) -> None:
    """Switch the layout in use (the innermost entered one, else the process layout) to
    ``device_type``, checked as ``train.dist.device_type`` is."""
    _checked_device_type(device_type)
    get_dist_util()  # sets up a one-process layout when there is none, as LiBai does
    replace_current_layout(device_type=device_type)


def get_hidden_sbp() -> List[Any]:
    """The nd-SBP of hidden states: split over data parallel, broadcast over tensor parallel."""
    return get_nd_sbp([flow.sbp.split(0), flow.sbp.broadcast])


def same_sbp(lhs_sbp: Sequence[Any], rhs_sbp: Sequence[Any]) -> bool:
    """Whether two nd-SBP signatures are equal entry by entry (they must have one length)."""
    if len(lhs_sbp) != len(rhs_sbp):
        raise ValueError(f"cannot compare SBP signatures of lengths {len(lhs_sbp)} and {len(rhs_sbp)}")
    return all(a == b for a, b in zip(lhs_sbp, rhs_sbp))


def is_last_process() -> bool:
    return get_rank() == get_world_size() - 1


def broadcast_py_object(obj: Any, src: int = 0) -> Any:
    """Rank ``src``'s ``obj`` on every rank (pickled; one process returns ``obj`` itself)."""
    if get_world_size() == 1:
        return obj
    import cloudpickle

    payload = cloudpickle.dumps(obj) if get_rank() == src else None
    return cloudpickle.loads(flow._oneflow_internal.cpu_broadcast(payload, src))


def tensor_to_rank0(tensor: flow.Tensor, device: str = "cuda", to_local: bool = False) -> flow.Tensor:
    """A global tensor gathered whole onto rank 0 (on ``device``; ``"cuda"`` falls back to the
    tensor's own device type where there is no GPU). ``to_local`` then returns the local value
    (see :func:`ttol`). Local tensors pass through."""
    if not tensor.is_global:
        return tensor
    if device == "cuda" and not flow.cuda.is_available():
        device = tensor.placement.type
    ranks = [0] if tensor.placement.ranks.ndim == 1 else [[0]]
    sbp = [flow.sbp.broadcast] * tensor.placement.ranks.ndim
    tensor = tensor.to_global(placement=flow.placement(device, ranks=ranks), sbp=sbp)
    return ttol(tensor) if to_local else tensor
