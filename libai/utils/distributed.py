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

When the run is a single process, the layout is *local*: tensors stay ordinary local tensors on
the configured device, with no global-tensor overhead. That is the only place the decision is
made; layers and data ask :attr:`ParallelLayout.is_global` through the helpers below.

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
- ``get_layer_placement``, ``get_nd_sbp``, ``get_hidden_sbp``, the sizes and the data-parallel
  rank read :func:`current_layout`; ``reset_layouts()`` forgets everything (for tests).

Deliberate differences: sizes that do not fit the launch are an error (LiBai clamps tensor and
pipeline sizes and re-derives the data-parallel size); nd-SBP lists follow our placements, which
are a ``(dp, tp)`` grid except under pure data parallelism, so ``get_nd_sbp`` returns two entries
where LiBai returns one for a single device or pure tensor parallelism; ``ttol`` without
``ranks`` gives every rank the full value (LiBai only the ranks of the tensor's placement).
"""
import contextlib
import logging
import os
from dataclasses import dataclass, field
from typing import Any, Iterator, List, Optional, Sequence, Tuple

import oneflow as flow

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
# Process helpers: valid with or without a layout.
# ---------------------------------------------------------------------------------------------
def get_rank() -> int:
    """This process's global rank (0 when not launched)."""
    return flow.env.get_rank()


def get_local_rank() -> int:
    """This process's rank on its node."""
    return flow.env.get_local_rank()


def get_world_size() -> int:
    """Number of processes in the run."""
    return flow.env.get_world_size()


def is_main_process() -> bool:
    """True on rank 0, the process that writes files and logs to the console."""
    return get_rank() == 0


def synchronize() -> None:
    """Barrier across all processes; a no-op in a single process."""
    if get_world_size() > 1:
        flow.comm.barrier()


def check_launch() -> None:
    """Refuse a launch whose ranks OneFlow cannot tell apart, instead of hanging.

    OneFlow counts machines by the addresses its processes connect from. When it sees a single
    machine, every process's ``LOCAL_RANK`` must be its global rank; several launchers
    (``--nnodes``) on one machine give each process ``LOCAL_RANK=0`` instead, and OneFlow then
    hangs or computes wrong collectives. ``import libai`` repairs this before OneFlow starts when
    the master address is a loopback address (:func:`libai._runtime.align_local_rank`); this
    catches what it could not (another address of this machine, or oneflow imported first).
    """
    world, rank, local = get_world_size(), get_rank(), get_local_rank()
    if world > 1 and flow.env.get_node_size() == 1 and local != rank:
        raise RuntimeError(
            f"rank {rank} has LOCAL_RANK={local}, but OneFlow sees all {world} processes on one "
            "machine: several launchers (--nnodes) were started on this machine. Meet at "
            "--master_addr 127.0.0.1 and import libai before oneflow (libai then sets LOCAL_RANK), "
            f"or start one launcher with --nproc_per_node {world}"
        )


def default_device_type() -> str:
    """``"cuda"`` where OneFlow sees a GPU, else ``"cpu"``."""
    return "cuda" if flow.cuda.is_available() else "cpu"


# ---------------------------------------------------------------------------------------------
# The layout value
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParallelLayout:
    """Data × tensor × pipeline placement of one run.

    Build it with :meth:`from_config` from ``cfg.train.dist``; enter it around model building.
    """

    data_parallel_size: int = 1
    tensor_parallel_size: int = 1
    pipeline_parallel_size: int = 1
    device_type: str = "cpu"
    pipeline_num_layers: Optional[int] = None
    custom_pipeline_stage_id: Optional[Tuple[int, ...]] = None
    world_size: int = 1
    rank: int = 0
    _stage_of_layer: Tuple[int, ...] = field(default=(), repr=False)

    # ----------------------------------------------------------------- construction
    @classmethod
    def from_config(
        cls, dist_cfg: Any = None, world_size: Optional[int] = None, rank: Optional[int] = None
    ) -> "ParallelLayout":
        """Resolve ``train.dist`` against the launched world.

        Sizes left as ``None`` are filled in: data parallel takes whatever the other two leave
        of the world size. A product that does not equal the world size is an error.
        """
        get = (lambda k, d=None: _cfg_get(dist_cfg, k, d))
        if world_size is None:
            check_launch()
        world_size = get_world_size() if world_size is None else int(world_size)
        rank = get_rank() if rank is None else int(rank)
        tp = int(get("tensor_parallel_size", 1))  # None (unset) -> 1; 0 is refused below
        pp = int(get("pipeline_parallel_size", 1))
        dp = get("data_parallel_size", None)
        for name, value in (("data", dp), ("tensor", tp), ("pipeline", pp)):
            if value is not None and int(value) < 1:
                raise ValueError(f"train.dist.{name}_parallel_size must be >= 1, got {value}")
        if dp is None:
            if world_size % (tp * pp) != 0:
                raise ValueError(
                    f"world size {world_size} is not divisible by tensor_parallel_size ({tp}) × "
                    f"pipeline_parallel_size ({pp}); launch a multiple of {tp * pp} processes"
                )
            dp = world_size // (tp * pp)
        dp = int(dp)
        if dp * tp * pp != world_size:
            raise ValueError(
                f"train.dist: data_parallel_size ({dp}) × tensor_parallel_size ({tp}) × "
                f"pipeline_parallel_size ({pp}) = {dp * tp * pp}, but the launch has {world_size} "
                f"process(es). Launch {dp * tp * pp} processes (--nproc_per_node × --nnodes) or "
                f"change the sizes so that their product is {world_size}."
            )
        device_type = _checked_device_type(get("device_type", None) or default_device_type())
        num_layers = get("pipeline_num_layers", None)
        custom = get("custom_pipeline_stage_id", None)
        custom = tuple(int(s) for s in custom) if custom is not None else None
        stage_of_layer = _assign_stages(num_layers, pp, custom)
        return cls(
            data_parallel_size=dp,
            tensor_parallel_size=tp,
            pipeline_parallel_size=pp,
            device_type=device_type,
            pipeline_num_layers=None if num_layers is None else int(num_layers),
            custom_pipeline_stage_id=custom,
            world_size=world_size,
            rank=rank,
            _stage_of_layer=stage_of_layer,
        )

    # ----------------------------------------------------------------- context
    def __enter__(self) -> "ParallelLayout":
        _LAYOUT_STACK.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        _LAYOUT_STACK.pop()

    # ----------------------------------------------------------------- LiBai's attribute names
    # What LiBai's ``get_dist_util()`` object offers, so code reading it runs unchanged.
    @property
    def model_parallel_size(self) -> int:
        """LiBai's ``dist_util.model_parallel_size``, which is the *tensor* parallel size (LiBai
        uses it to find the data-parallel rank as ``(rank // tp) % dp``)."""
        return self.tensor_parallel_size

    @property
    def num_nodes(self) -> int:
        """Machines of the run, as OneFlow counts them (1 for a layout made for another world
        size than the launched one, e.g. in a test)."""
        return get_num_nodes() if self.world_size == get_world_size() else 1

    @property
    def num_gpus_per_node(self) -> int:
        """Processes per machine, LiBai's name (one process per device, GPU or not)."""
        return self.world_size // self.num_nodes

    @property
    def parallel_hierarchy(self) -> Optional[Tuple[int, int]]:
        """``(dp, tp)`` when both data and tensor parallelism are on, else ``None`` (LiBai's value;
        our placements' shape is :meth:`stage_ranks`)."""
        if self.is_data_model_parallel():
            return (self.data_parallel_size, self.tensor_parallel_size)
        return None

    def is_tensor_model_parallel(self) -> bool:
        return self.tensor_parallel_size > 1

    def is_data_parallel(self) -> bool:
        return self.data_parallel_size > 1

    def is_pipeline_model_parallel(self) -> bool:
        return self.pipeline_parallel_size > 1

    def is_data_model_parallel(self) -> bool:
        return self.is_tensor_model_parallel() and self.is_data_parallel()

    def get_layer_stage_id(self, layer_idx: int) -> int:
        return self.layer_stage(layer_idx)

    def get_layer_ranks(self, layer_idx: int) -> List[Any]:
        """Ranks of the placement of layer ``layer_idx``, shaped as our placements are (see
        :meth:`stage_ranks`)."""
        return self.stage_ranks(self.layer_stage(layer_idx))

    def set_device_type(self, device_type: str) -> None:
        """LiBai's ``get_dist_util().set_device_type(...)``. A layout is a value, so this replaces
        the layout in use by a copy on ``device_type``; only the layout in use can do that."""
        if not has_layout() or current_layout() is not self:
            raise RuntimeError(
                "set_device_type() changes the layout in use, and this layout is not it; build the "
                "layout you need with dataclasses.replace(layout, device_type=...) instead"
            )
        set_device_type(device_type)

    # ----------------------------------------------------------------- queries
    @property
    def is_global(self) -> bool:
        """Whether tensors are OneFlow global tensors (any run of more than one process)."""
        return self.world_size > 1

    @property
    def ranks_per_stage(self) -> int:
        return self.data_parallel_size * self.tensor_parallel_size

    @property
    def stage(self) -> int:
        """The pipeline stage this process belongs to."""
        return self.rank // self.ranks_per_stage

    @property
    def data_parallel_rank(self) -> int:
        return (self.rank % self.ranks_per_stage) // self.tensor_parallel_size

    @property
    def tensor_parallel_rank(self) -> int:
        return self.rank % self.tensor_parallel_size

    @property
    def device(self) -> flow.device:
        """The local device of this process (``cuda:<local rank>`` or ``cpu``)."""
        if self.device_type == "cuda":
            return flow.device("cuda", get_local_rank())
        return flow.device("cpu")

    @property
    def placement_axes(self) -> Tuple[int, ...]:
        """Which logical axes (0 = data, 1 = tensor) a stage's placement has.

        ``(0,)``, a 1-D placement of the data-parallel ranks, when there is data but no tensor
        parallelism; ``(0, 1)``, a ``(dp, tp)`` grid, otherwise. Why: OneFlow 0.9's ZeRO shards
        optimizer state over the *last* placement axis on which a parameter is broadcast, so on a
        ``(dp, 1)`` grid it would shard over the tensor axis of one rank, i.e. not at all. The
        other layouts keep their grid: they gain nothing from ZeRO's choice of axis, and on the
        CPU, OneFlow 0.9's transport aborted (``register.cpp:75``) pipeline-parallel and
        tensor × pipeline graphs on 1-D placements that trained on grids.
        """
        if self.tensor_parallel_size == 1 and self.data_parallel_size > 1:
            return (0,)
        return (0, 1)

    def stage_ranks(self, stage: int) -> List[Any]:
        """Ranks of pipeline stage ``stage`` as its placement holds them: a ``(dp, tp)`` grid
        (list of lists), or a flat list under pure data parallelism."""
        stage = self._normalize_stage(stage)
        first = stage * self.ranks_per_stage
        tp = self.tensor_parallel_size
        if len(self.placement_axes) == 1:
            return list(range(first, first + self.ranks_per_stage))
        return [
            [first + d * tp + t for t in range(tp)] for d in range(self.data_parallel_size)
        ]

    def stage_placement(self, stage: int) -> flow.placement:
        """The placement of a pipeline stage (``-1`` is the last stage)."""
        return flow.placement(self.device_type, ranks=self.stage_ranks(stage))

    def layer_stage(self, layer_idx: int) -> int:
        """The pipeline stage of layer ``layer_idx`` (negative indices count from the end)."""
        if self.pipeline_parallel_size == 1:
            return 0
        if not self._stage_of_layer:
            raise ValueError(
                "pipeline_parallel_size > 1 needs train.dist.pipeline_num_layers (the number of "
                "layers the model declares) to assign layers to stages"
            )
        n = len(self._stage_of_layer)
        if not -n <= layer_idx < n:
            raise IndexError(
                f"layer_idx {layer_idx} is outside the {n} layers of "
                f"train.dist.pipeline_num_layers"
            )
        return self._stage_of_layer[layer_idx]

    def layer_placement(self, layer_idx: int) -> flow.placement:
        """The placement of the stage that holds layer ``layer_idx``."""
        return self.stage_placement(self.layer_stage(layer_idx))

    @property
    def stage_of_each_layer(self) -> Tuple[int, ...]:
        return self._stage_of_layer

    def nd_sbp(self, data_sbp: Any = None, tensor_sbp: Any = None) -> List[Any]:
        """The physical nd-SBP, for this layout's placements, of the logical pair
        ``(data_sbp, tensor_sbp)``; ``None`` means broadcast on that axis. The entries of axes
        the placement does not keep (:attr:`placement_axes`) are dropped."""
        b = flow.sbp.broadcast
        logical = (b if data_sbp is None else data_sbp, b if tensor_sbp is None else tensor_sbp)
        return [logical[axis] for axis in self.placement_axes]

    def logical_sbp(self, physical: Sequence[Any]) -> List[Any]:
        """The inverse of :meth:`nd_sbp`: ``[sbp over data, sbp over tensor]`` of a tensor on one
        of this layout's placements (broadcast on an axis the placement does not keep)."""
        physical = list(physical)
        if len(physical) != len(self.placement_axes):
            raise ValueError(
                f"a tensor with the {len(physical)}-axis SBP {physical} is not on this layout's "
                f"placements, which have {len(self.placement_axes)} axis/axes (data × tensor = "
                f"{self.data_parallel_size} × {self.tensor_parallel_size}); move it with "
                "layout.to_global(tensor, [data_sbp, tensor_sbp], stage)"
            )
        logical = [flow.sbp.broadcast, flow.sbp.broadcast]
        for axis, sbp in zip(self.placement_axes, physical):
            logical[axis] = sbp
        return logical

    def to_global(
        self, tensor: flow.Tensor, sbp: Sequence[Any], stage: int = 0
    ) -> flow.Tensor:
        """Make ``tensor`` live on ``stage`` with the logical SBP ``sbp`` = ``[over data, over
        tensor]``.

        In a local layout the tensor is only moved to this process's device; in a global one a
        local tensor is treated as this rank's piece and a global one is re-boxed.
        """
        if len(sbp) != 2:
            raise ValueError(
                f"layout.to_global takes the SBP as [over data parallel, over tensor parallel], "
                f"got {len(sbp)} item(s): {list(sbp)}"
            )
        if not self.is_global:
            return tensor.to(self.device) if tensor.device != self.device else tensor
        placement = self.stage_placement(stage)
        physical = self.nd_sbp(*sbp)
        if tensor.is_global:
            return tensor.to_global(placement=placement, sbp=physical)
        return tensor.to(self.device).to_global(placement=placement, sbp=physical)

    def describe(self) -> dict:
        """Resolved values, for logs and ``config.yaml``."""
        return {
            "world_size": self.world_size,
            "data_parallel_size": self.data_parallel_size,
            "tensor_parallel_size": self.tensor_parallel_size,
            "pipeline_parallel_size": self.pipeline_parallel_size,
            "device_type": self.device_type,
            "stage_of_each_layer": list(self._stage_of_layer),
        }

    def _normalize_stage(self, stage: int) -> int:
        pp = self.pipeline_parallel_size
        if not -pp <= stage < pp:
            raise IndexError(f"pipeline stage {stage} does not exist; there are {pp} stages")
        return stage % pp


def _checked_device_type(device_type: str) -> str:
    """``device_type`` if this machine can run it; an error naming the fix otherwise."""
    if device_type not in ("cpu", "cuda"):
        raise ValueError(f"train.dist.device_type must be 'cpu' or 'cuda', got {device_type!r}")
    if device_type == "cuda" and not flow.cuda.is_available():
        raise RuntimeError(
            "train.dist.device_type='cuda' but OneFlow sees no GPU on this machine; "
            "set train.dist.device_type=cpu (or leave it unset to use what the machine has)"
        )
    return device_type


def _cfg_get(cfg: Any, key: str, default: Any) -> Any:
    if cfg is None:
        return default
    if isinstance(cfg, dict):
        value = cfg.get(key, default)
    else:
        value = getattr(cfg, key, default) if not hasattr(cfg, "get") else cfg.get(key, default)
    return default if value is None and default is not None else value


def _assign_stages(
    num_layers: Optional[int], pp: int, custom: Optional[Tuple[int, ...]]
) -> Tuple[int, ...]:
    """Stage of each layer: ``custom`` if given, else an even split (earlier stages take the
    remainder)."""
    if custom is not None:
        if num_layers is not None and len(custom) != int(num_layers):
            raise ValueError(
                f"train.dist.custom_pipeline_stage_id has {len(custom)} entries but "
                f"pipeline_num_layers is {num_layers}; give one stage id per layer"
            )
        bad = [s for s in custom if not 0 <= s < pp]
        if bad:
            raise ValueError(
                f"train.dist.custom_pipeline_stage_id holds stage ids {bad} outside 0..{pp - 1}"
            )
        if list(custom) != sorted(custom):
            raise ValueError("train.dist.custom_pipeline_stage_id must be non-decreasing")
        return tuple(custom)
    if num_layers is None:
        return ()
    num_layers = int(num_layers)
    if num_layers < pp:
        raise ValueError(
            f"pipeline_num_layers ({num_layers}) is smaller than pipeline_parallel_size ({pp}); "
            "every stage needs at least one layer"
        )
    base, extra = divmod(num_layers, pp)
    stages: List[int] = []
    for s in range(pp):
        stages.extend([s] * (base + (1 if s < extra else 0)))
    return tuple(stages)


# ---------------------------------------------------------------------------------------------
# The current layout
# ---------------------------------------------------------------------------------------------
_LAYOUT_STACK: List[ParallelLayout] = []
# The layout LiBai code sets once with ``setup_dist_util(cfg)``: answered when no layout is
# entered. Only an explicit call sets it; nothing falls back to it silently otherwise.
_PROCESS_LAYOUT: Optional[ParallelLayout] = None


def current_layout() -> ParallelLayout:
    """The innermost entered layout, else the one ``setup_dist_util`` set; an error otherwise
    (never a silent one-device fallback)."""
    if not _LAYOUT_STACK and _PROCESS_LAYOUT is not None:
        return _PROCESS_LAYOUT
    if not _LAYOUT_STACK:
        raise RuntimeError(
            "no parallel layout is active. Build parallel layers inside one, e.g.\n"
            "    layout = ParallelLayout.from_config(cfg.train.dist)\n"
            "    with layout:\n"
            "        model = instantiate(cfg.model)\n"
            "(DefaultTrainer does this for you.)"
        )
    return _LAYOUT_STACK[-1]


def has_layout() -> bool:
    return bool(_LAYOUT_STACK) or _PROCESS_LAYOUT is not None


@contextlib.contextmanager
def use_layout(layout: ParallelLayout) -> Iterator[ParallelLayout]:
    """Context manager equivalent of ``with layout:``."""
    with layout:
        yield layout


def reset_layouts() -> None:
    """Forget every entered layout and the one ``setup_dist_util`` set (for tests)."""
    global _PROCESS_LAYOUT
    _LAYOUT_STACK.clear()
    _PROCESS_LAYOUT = None


# ---------------------------------------------------------------------------------------------
# LiBai-style module functions, answered by the current layout
# ---------------------------------------------------------------------------------------------
def get_layer_placement(layer_idx: int, device_type: Optional[str] = None) -> flow.placement:
    """Placement of the stage holding ``layer_idx`` under the current layout, on the layout's
    device type or ``device_type``; ``"cuda"`` on a machine without a GPU means ``"cpu"``, as
    in LiBai."""
    layout = current_layout()
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
    return current_layout().nd_sbp(*sbp_list)


def get_data_parallel_size() -> int:
    return current_layout().data_parallel_size


def get_tensor_parallel_size() -> int:
    return current_layout().tensor_parallel_size


def get_pipeline_parallel_size() -> int:
    return current_layout().pipeline_parallel_size


def get_data_parallel_rank() -> int:
    return current_layout().data_parallel_rank


def get_tensor_parallel_rank() -> int:
    return current_layout().tensor_parallel_rank


def convert_to_distributed_default_setting(obj: Any) -> Any:
    """Place a tensor or a plain (non-libai) module where the layout puts unsplit values:
    stage 0, broadcast.

    LiBai applies it to tensors (``model._apply(dist.convert_to_distributed_default_setting)``,
    or an input batch); a module is accepted too. A local tensor is taken as the full value
    (every rank holds the same); a global one keeps its ranks and moves to the layout's device
    type. Under a local layout everything is only moved to the device. Parameters already global
    are left as they are (libai layers place themselves).
    """
    layout = current_layout()
    if isinstance(obj, flow.nn.Module):
        if not layout.is_global:
            return obj.to(layout.device)
        for param in obj.parameters():
            if not param.is_global:
                obj.to_global(placement=layout.stage_placement(0), sbp=layout.nd_sbp())
                break
        return obj
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
    global _PROCESS_LAYOUT
    _PROCESS_LAYOUT = ParallelLayout.from_config(cfg)
    _write_back(cfg, _PROCESS_LAYOUT)
    return _PROCESS_LAYOUT


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
    global _PROCESS_LAYOUT
    import dataclasses

    _checked_device_type(device_type)
    if _LAYOUT_STACK:
        _LAYOUT_STACK[-1] = dataclasses.replace(_LAYOUT_STACK[-1], device_type=device_type)
    else:
        _PROCESS_LAYOUT = dataclasses.replace(get_dist_util(), device_type=device_type)


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


def get_num_nodes() -> int:
    """Machines in the run, as OneFlow groups processes into nodes."""
    return flow.env.get_node_size()


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
