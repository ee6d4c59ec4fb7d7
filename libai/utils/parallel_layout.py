"""The parallel layout of a run (a value) and the stack of layouts entered around model building.

See :mod:`libai.utils.distributed` for the whole story; this module holds the value
(:class:`ParallelLayout`: sizes, device type, rank, world size and the stage of every layer) and
which layout is *current*: the innermost one entered with ``with layout:``, else the *process
layout* that LiBai's ``setup_dist_util`` sets.
"""
import contextlib
import dataclasses
import functools
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple

import oneflow as flow

from libai.utils.process import (check_launch, default_device_type, get_local_rank, get_num_nodes,
                                 get_rank, get_world_size)

__all__ = [
    "ParallelLayout",
    "current_layout",
    "has_layout",
    "process_layout",
    "replace_current_layout",
    "reset_layouts",
    "set_process_layout",
    "use_layout",
]


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
    # Plain local tensors instead of global ones (see :meth:`local_copy`); one process only.
    local_tensors: bool = False
    # stage -> its placement: made once, since building a flow.placement costs about 20 us and
    # every layer asks for its stage's at every call (a tiny Llama's step asked 64 times)
    _placements: Dict[int, flow.placement] = field(
        default_factory=dict, init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if self.local_tensors and self.world_size != 1:
            raise ValueError(
                f"local_tensors=True needs a one-process layout, this one has {self.world_size} "
                "processes: local tensors are the full value only in a one-process run"
            )

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
        replace_current_layout(device_type=_checked_device_type(device_type))

    # ----------------------------------------------------------------- queries
    @property
    def is_global(self) -> bool:
        """Whether tensors are OneFlow global tensors: always, one process included, unless this
        is a :meth:`local_copy` (see :attr:`local_tensors`)."""
        return not self.local_tensors

    def local_copy(self) -> "ParallelLayout":
        """This one-process layout with plain local tensors on its device (no SBP, no placement).

        Not for training: LiBai code reads ``.sbp``/``.placement`` of what a layout makes, and a
        local tensor has neither. It serves code that needs local tensors and whose tensors no
        user code sees: ONNX export traces the model under it, and launched test scripts build
        their one-process reference under it on every rank. Only a one-process
        layout has one: a local tensor is the full value only when there is one process.
        """
        if self.world_size != 1:
            raise ValueError(
                f"a layout of {self.world_size} processes has no local copy: local tensors are "
                "the full value only in a one-process run"
            )
        return dataclasses.replace(self, local_tensors=True)

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
        return _device(self.device_type, get_local_rank() if self.device_type == "cuda" else 0)

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
        placement = self._placements.get(stage)
        if placement is None:
            placement = flow.placement(self.device_type, ranks=self.stage_ranks(stage))
            self._placements[stage] = placement
        return placement

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

        A local tensor is treated as this rank's piece (in one process, the whole value) and a
        global one is re-boxed. Under a :meth:`local_copy` the tensor is only moved to this
        process's device.
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


@functools.lru_cache(maxsize=None)
def _device(device_type: str, index: int) -> flow.device:
    """One ``flow.device`` per (type, index): layers ask for the layout's device on every call
    (a generated token asks about 70 times), and building one each time was a measurable part of
    decoding."""
    return flow.device(device_type, index) if device_type == "cuda" else flow.device(device_type)


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


def set_process_layout(layout: Optional[ParallelLayout]) -> None:
    """Make ``layout`` the process layout (``None`` forgets it): LiBai's ``setup_dist_util``."""
    global _PROCESS_LAYOUT
    _PROCESS_LAYOUT = layout


def process_layout() -> Optional[ParallelLayout]:
    """The layout ``setup_dist_util`` set, if any."""
    return _PROCESS_LAYOUT


def replace_current_layout(**changes: Any) -> ParallelLayout:
    """Replace the layout in use (the innermost entered one, else the process layout) by a copy
    with ``changes`` (layouts are values); return the new one."""
    global _PROCESS_LAYOUT
    if _LAYOUT_STACK:
        _LAYOUT_STACK[-1] = dataclasses.replace(_LAYOUT_STACK[-1], **changes)
        return _LAYOUT_STACK[-1]
    _PROCESS_LAYOUT = dataclasses.replace(current_layout(), **changes)
    return _PROCESS_LAYOUT
