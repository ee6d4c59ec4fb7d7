"""Where a layer's tensors live: the one place that asks ``layout.is_global``.

Every libai layer reads the current :class:`~libai.utils.distributed.ParallelLayout` when it is
built and keeps it. Layers never test ``is_global`` themselves; they call the helpers below,
which do nothing (beyond moving a tensor to the layout's device) in a one-process run and
convert SBP/placement in a multi-process one. Keeping the branch here means a one-process run
pays no global-tensor overhead, and a multi-process run has exactly one code path to trust.

Vocabulary: layers speak of a global tensor's SBP as the logical pair ``[over data parallel,
over tensor parallel]``; the layout maps it to its placements' physical nd-SBP (one axis under
pure data parallelism, two otherwise). Parameters are always broadcast over the data axis;
activations keep whatever the data axis already is (normally ``split(0)``, the batch) and only
change the tensor axis.

Initialisation is layout-independent: :func:`make_parameter` draws the *full* tensor on every
rank from OneFlow's default CPU generator, in construction order, and only then places it and
keeps this rank's shard. So ``flow.manual_seed(s)`` yields the same model in one process and
under any data/tensor/pipeline layout. The price is memory and time at construction: each rank
transiently materialises one full parameter at a time (peak extra memory = the largest single
parameter, e.g. the word embedding), plus one broadcast of that parameter over its stage.
"""
import contextlib
from typing import Any, Callable, Iterator, Sequence

import oneflow as flow
from oneflow import nn

from libai.utils.distributed import ParallelLayout

__all__ = [
    "KEEP",
    "broadcast",
    "split",
    "make_parameter",
    "skip_weight_init",
    "place_constant",
    "to_layer",
    "to_sbp",
    "arange",
    "sbp_equal",
]


class _Keep:
    """Marker: leave this SBP axis as the tensor already has it."""

    def __repr__(self) -> str:
        return "KEEP"


KEEP = _Keep()


def broadcast() -> Any:
    """``flow.sbp.broadcast`` (a function so call sites read the same as :func:`split`)."""
    return flow.sbp.broadcast


def split(dim: int) -> Any:
    """``flow.sbp.split(dim)``."""
    return flow.sbp.split(dim)


def sbp_equal(a: Sequence[Any], b: Sequence[Any]) -> bool:
    """Whether two nd-SBP sequences are the same."""
    return len(a) == len(b) and all(x == y for x, y in zip(a, b))


_skip_init_depth = 0


@contextlib.contextmanager
def skip_weight_init() -> Iterator[None]:
    """Build layers without drawing their initial weights (values are left uninitialised).

    For building a model only to look at its structure (parameter counts, a summary, a module
    graph) or to overwrite every weight right away: drawing the weights of a large preset costs
    far more than allocating them (BERT-large: 11 s against 3 s on two CPU cores; OneFlow queues
    the work asynchronously, so it is paid at the next synchronisation, often somewhere else).
    Only libai's parallel layers honour it; plain ``oneflow.nn`` modules keep their own initialisation. The default
    generator is not advanced, so a model built inside is not the one ``manual_seed`` would give.
    Nested uses are fine; leaving the outermost one restores normal initialisation.
    """
    global _skip_init_depth
    _skip_init_depth += 1
    try:
        yield
    finally:
        _skip_init_depth -= 1


def make_parameter(
    shape: Sequence[int],
    init_method: Callable[[flow.Tensor], Any],
    layout: ParallelLayout,
    layer_idx: int,
    tensor_sbp: Any = None,
    dtype: flow.dtype = flow.float32,
) -> nn.Parameter:
    """A parameter of ``shape`` initialised by ``init_method`` and placed for ``layer_idx``.

    ``init_method`` fills a full local CPU tensor in place (like ``nn.init.normal_``). The full
    value is drawn on every rank, whatever the layout, so every rank's default generator
    advances identically and the model does not depend on the parallel sizes. ``tensor_sbp``
    is the SBP over the tensor-parallel axis (``None`` = replicated).
    """
    full = flow.empty(*shape, dtype=flow.float32)
    if not _skip_init_depth:
        with flow.no_grad():
            init_method(full)
    full = full.to(dtype)
    placed = place_constant(full, layout, layer_idx, tensor_sbp=tensor_sbp)
    return nn.Parameter(placed)


def place_constant(
    tensor: flow.Tensor,
    layout: ParallelLayout,
    layer_idx: int,
    tensor_sbp: Any = None,
    data_sbp: Any = None,
) -> flow.Tensor:
    """Place a tensor whose value is the same on every rank (a weight, a constant).

    Local layout: moved to the layout's device. Global layout: broadcast on the placement of
    ``layer_idx``'s stage, then re-boxed to ``[data_sbp, tensor_sbp]`` (``None`` = broadcast);
    going from broadcast to split only slices, so each rank keeps its shard without
    communication.
    """
    if not layout.is_global:
        return tensor.to(layout.device)
    placement = layout.layer_placement(layer_idx)
    placed = tensor.to(layout.device).to_global(placement=placement, sbp=layout.nd_sbp())
    target = layout.nd_sbp(data_sbp, tensor_sbp)
    if not sbp_equal(placed.sbp, target):
        placed = placed.to_global(sbp=target)
    return placed


def to_layer(x: flow.Tensor, layout: ParallelLayout, layer_idx: int) -> flow.Tensor:
    """Move ``x`` onto the pipeline stage of ``layer_idx``, keeping its SBP.

    This is how activations (and tied weights) cross pipeline stages. Local layout: only a
    device move, when needed.
    """
    if not layout.is_global:
        return x if x.device == layout.device else x.to(layout.device)
    _check_global(x, layout)
    placement = layout.layer_placement(layer_idx)
    if x.placement != placement:
        x = x.to_global(placement=placement)
    return x


def to_sbp(
    x: flow.Tensor,
    layout: ParallelLayout,
    layer_idx: int,
    tensor_sbp: Any = KEEP,
    data_sbp: Any = KEEP,
) -> flow.Tensor:
    """Move ``x`` to ``layer_idx``'s stage and give it the requested SBP.

    Args:
        tensor_sbp: SBP over the tensor-parallel axis, or :data:`KEEP`.
        data_sbp: SBP over the data-parallel axis, or :data:`KEEP` (activations normally keep
            their batch split).

    A no-op on the SBP in a one-process layout. Converting ``partial_sum`` to ``broadcast``
    here is what performs the tensor-parallel all-reduce.
    """
    x = to_layer(x, layout, layer_idx)
    if not layout.is_global:
        return x
    data, tensor = layout.logical_sbp(x.sbp)
    target = layout.nd_sbp(data if data_sbp is KEEP else data_sbp,
                           tensor if tensor_sbp is KEEP else tensor_sbp)
    if not sbp_equal(x.sbp, target):
        x = x.to_global(sbp=target)
    return x


def arange(
    start: int, end: int, layout: ParallelLayout, layer_idx: int, dtype: flow.dtype = flow.int64
) -> flow.Tensor:
    """``[start, end)`` as a tensor on ``layer_idx``'s stage, replicated on every rank.

    Built directly where it is needed (no broadcast): used for position ids and causal masks.
    """
    if not layout.is_global:
        return flow.arange(start, end, dtype=dtype, device=layout.device)
    return flow.arange(
        start, end, dtype=dtype, placement=layout.layer_placement(layer_idx), sbp=layout.nd_sbp()
    )


def _check_global(x: flow.Tensor, layout: ParallelLayout) -> None:
    if not x.is_global:
        raise ValueError(
            f"a local tensor of shape {tuple(x.shape)} reached a libai layer in a "
            f"{layout.world_size}-process run; inputs must be global tensors. Batches from "
            "libai's loaders are made global by Instance.to_global(layout); for your own "
            "tensors use layout.to_global(tensor, sbp=[flow.sbp.split(0), flow.sbp.broadcast])"
        )
