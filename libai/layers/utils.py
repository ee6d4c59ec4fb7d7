"""Where a layer's tensors live: the one place that asks ``layout.is_global``.

Every libai layer reads the current :class:`~libai.utils.distributed.ParallelLayout` when it is
built and keeps it. Layers never test ``is_global`` themselves; they call the helpers below.
Tensors are OneFlow *global* tensors in every run, one process included (a one-rank placement),
as in LiBai: parameters, batches and activations answer ``.sbp`` and ``.placement``, and code
written for LiBai runs unchanged. What that costs in one process is measured in
docs/benchmarks.md ("Global tensors in one process"). Two exceptions: :func:`local_tensors`
holds a one-process model in plain local tensors for code that needs them and that no user code
watches (ONNX export), and there the helpers only move tensors to the layout's device; and
:class:`OneProcessLocal` lets a layer compute a stretch of its forward (attention's heads) on
the local tensors of a one-process run, where OneFlow gives views instead of copies, handing
back global tensors.

Vocabulary: layers speak of a global tensor's SBP as the logical pair ``[over data parallel,
over tensor parallel]``; the layout maps it to its placements' physical nd-SBP (one axis under
pure data parallelism, two otherwise). Parameters are always broadcast over the data axis;
activations keep whatever the data axis already is (normally ``split(0)``, the batch) and only
change the tensor axis. In a one-process run a *local* tensor handed to a layer (say
``model(input_ids=flow.tensor(...))``) is unambiguous, the full value, and is made global
(broadcast) on the layer's placement; with several processes it is an error, since it could be
either this rank's piece or the whole.

Initialisation is layout-independent: :func:`make_parameter` draws the *full* tensor on every
rank from OneFlow's default CPU generator, in construction order, and only then places it and
keeps this rank's shard. So ``flow.manual_seed(s)`` yields the same model in one process and
under any data/tensor/pipeline layout. The price is memory and time at construction: each rank
transiently materialises one full parameter at a time (peak extra memory = the largest single
parameter, e.g. the word embedding), plus one broadcast of that parameter over its stage.
"""
import contextlib
from typing import Any, Callable, Iterator, List, Optional, Sequence, Tuple, Union

import oneflow as flow
from oneflow import nn

from libai.utils.distributed import ParallelLayout

__all__ = [
    "KEEP",
    "broadcast",
    "split",
    "make_parameter",
    "skip_weight_init",
    "record_parameter_shapes",
    "place_constant",
    "to_layer",
    "to_sbp",
    "adopt_local",
    "local_tensors",
    "arange",
    "sbp_equal",
    "split_like",
    "cumsum_keeping_split",
    "active_dropout",
    "output_dropout",
    "OneProcessLocal",
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


_shape_recorders: List[Callable[..., None]] = []


@contextlib.contextmanager
def record_parameter_shapes(record: Callable[..., None]) -> Iterator[None]:
    """Build layers with zero-storage stand-ins instead of their parameters (for planning).

    Inside, :func:`make_parameter` returns a parameter of the right shape and dtype that is a
    stride-0 view of one element (it holds 4 bytes, whatever its shape) and calls
    ``record(parameter, shape, tensor_sbp, layer_idx, dtype)``; it neither draws nor places
    anything. This is how ``libai.plan`` builds a 175B-parameter model in a laptop's memory and
    reads every parameter's shape, stage and tensor-parallel split. The stand-ins cannot be
    trained (they all alias one element); plain ``oneflow.nn`` modules still allocate theirs.
    """
    _shape_recorders.append(record)
    try:
        yield
    finally:
        _shape_recorders.pop()


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
    if _shape_recorders:
        stand_in = nn.Parameter(flow.zeros(1, dtype=dtype).expand(*shape))
        _shape_recorders[-1](stand_in, tuple(int(d) for d in shape), tensor_sbp, layer_idx, dtype)
        return stand_in
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

    Local layout (:func:`local_tensors`): moved to the layout's device. Otherwise: broadcast on the placement of
    ``layer_idx``'s stage, then re-boxed to ``[data_sbp, tensor_sbp]`` (``None`` = broadcast);
    going from broadcast to split only slices, so each rank keeps its shard without
    communication.
    """
    if not layout.is_global:
        return tensor.to(layout.device)
    placement = layout.layer_placement(layer_idx)
    placed = _made_global(tensor, layout, placement, layout.nd_sbp())
    target = layout.nd_sbp(data_sbp, tensor_sbp)
    if not sbp_equal(placed.sbp, target):
        placed = placed.to_global(sbp=target)
    return placed


def to_layer(x: flow.Tensor, layout: ParallelLayout, layer_idx: int) -> flow.Tensor:
    """Move ``x`` onto the pipeline stage of ``layer_idx``, keeping its SBP.

    This is how activations (and tied weights) cross pipeline stages. A local ``x`` in a
    one-process run is taken as the full value and broadcast. Local layout (see
    :func:`local_tensors`): only a device move, when needed.
    """
    if layout.local_tensors:
        return x if x.device == layout.device else x.to(layout.device)
    x = adopt_local(x, layout, layer_idx)
    _check_global(x, layout)
    placement = layout.layer_placement(layer_idx)
    if x.placement != placement:
        x = x.to_global(placement=placement)
    return x


def adopt_local(x: flow.Tensor, layout: ParallelLayout, layer_idx: int) -> flow.Tensor:
    """A local ``x`` handed to a layer of a one-process global layout, as a global tensor on
    ``layer_idx``'s placement (a local tensor is the full value when there is one process);
    anything else unchanged. For layers that follow their inputs' placement instead of moving
    them (:func:`to_layer` calls it too)."""
    if x.is_global or not layout.is_global or layout.world_size != 1:
        return x
    return _made_global(x, layout, layout.layer_placement(layer_idx), layout.nd_sbp())


def _made_global(x: flow.Tensor, layout: ParallelLayout, placement: flow.placement,
                 sbp: Sequence[Any]) -> flow.Tensor:
    """A local tensor whose value every rank holds, as a global tensor. Inside ``nn.Graph``
    (lazy mode), where ``to_global`` of a local tensor is not supported, an eager local tensor
    (a constant a module made in ``forward``) becomes a new global constant instead."""
    if flow._oneflow_internal.lazy_mode.is_enabled() and not x.is_lazy:
        return flow.tensor(x.numpy(), dtype=x.dtype, placement=placement, sbp=sbp)
    return x.to(layout.device).to_global(placement=placement, sbp=sbp)


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

    A no-op on the SBP under :func:`local_tensors`. Converting ``partial_sum`` to ``broadcast``
    here is what performs the tensor-parallel all-reduce.
    """
    if layout.local_tensors:  # the local copy's check first: it runs per layer per token
        return x if x.device == layout.device else x.to(layout.device)
    x = to_layer(x, layout, layer_idx)
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


def split_like(tensor: flow.Tensor, reference: flow.Tensor) -> flow.Tensor:
    """``tensor`` (global, broadcastable to ``reference``) made as deep as ``reference`` along
    the dimensions on which ``reference`` is split, and given ``reference``'s SBP.

    OneFlow 0.9 replicates the output of ``masked_fill``, ``where`` and ``cat`` when an operand
    is replicated (broadcast) along a dimension on which another operand is split: every rank
    then gathers the split operand and computes the whole result, e.g. the whole batch under
    data parallelism (twice the work with two ranks, invisible in the values). An operand with
    the reference's shape along those dimensions and the reference's SBP keeps the output
    split; from broadcast the conversion is a local slice, no communication. Dimensions of
    size 1 in ``tensor`` are expanded (a view); ``tensor`` is returned as it is when
    ``reference`` is not split.
    """
    if not (tensor.is_global and reference.is_global):
        return tensor
    split_dims = {d for d in range(reference.ndim) for s in reference.sbp if s == flow.sbp.split(d)}
    if not split_dims:
        return tensor  # the reference is whole on every rank: nothing to match
    if tensor.ndim != reference.ndim:
        raise ValueError(
            f"split_like: a tensor of shape {tuple(tensor.shape)} cannot follow the split of "
            f"one of shape {tuple(reference.shape)}; give it as many dimensions (size 1 where "
            "it is the same for every row)"
        )
    shape = [reference.shape[d] if d in split_dims else tensor.shape[d] for d in range(tensor.ndim)]
    if shape != list(tensor.shape):
        tensor = tensor.expand(*shape)
    if not sbp_equal(tensor.sbp, reference.sbp):
        tensor = tensor.to_global(sbp=reference.sbp)
    return tensor


def cumsum_keeping_split(x: flow.Tensor, dim: int) -> flow.Tensor:
    """``flow.cumsum(x, dim)`` that keeps a split of ``x`` on its other dimensions.

    OneFlow 0.9's ``cumsum`` always returns a replicated (broadcast) tensor: on a batch split
    over data parallelism every rank would gather the whole batch, and everything computed
    from the result afterwards (for RoBERTa's position ids: the whole model) would run on the
    whole batch on every rank. For a global ``x`` split on another dimension the sum is a
    doubling scan instead (``ceil(log2(n))`` shifted adds along ``dim``, slices and adds that
    keep the split; exact for integers, for floats the same terms summed in another order);
    otherwise it is ``flow.cumsum``.
    """
    dim = dim % x.ndim
    split_elsewhere = x.is_global and any(
        s != flow.sbp.broadcast and s != flow.sbp.split(dim) for s in x.sbp)
    if not split_elsewhere:
        return flow.cumsum(x, dim=dim)
    length, shift = x.shape[dim], 1
    while shift < length:
        head = x.narrow(dim, 0, shift) * 0  # an op, not zeros_like, which nn.Graph flags
        x = x + flow.cat([head, x.narrow(dim, 0, length - shift)], dim=dim)
        shift *= 2
    return x


def active_dropout(dropout: nn.Dropout, x: flow.Tensor) -> flow.Tensor:
    """``dropout(x)``, skipping the call when it would return ``x`` as it is (evaluation mode or
    ``p == 0``: OneFlow then neither computes anything nor draws random numbers, so skipping
    changes no value and no generator state; it saves a dispatch per call when decoding)."""
    if dropout.training and dropout.p > 0:
        return dropout(x)
    return x


def output_dropout(
    dropout: nn.Dropout, output: Union[flow.Tensor, Tuple[flow.Tensor, Optional[flow.Tensor]]],
    fused: bool,
) -> flow.Tensor:
    """The dropout that closes a branch (attention output, MLP output).

    ``fused``: ``output`` is the ``(x Wᵀ, bias)`` pair of a ``skip_bias_add`` Linear, and the
    bias add and the dropout run as one CUDA kernel (a layer enables it only on CUDA); else
    ``output`` is the biased tensor and this is :func:`active_dropout`.
    """
    if not fused:
        return active_dropout(dropout, output)
    x, bias = output
    if bias is None:  # a bias-free projection: nothing to fuse
        return active_dropout(dropout, x)
    p = dropout.p if dropout.training else 0.0
    return flow._C.fused_bias_add_dropout(x, bias, p=p, axis=x.ndim - 1)


class OneProcessLocal:
    """A stretch of a layer's forward computed on the local tensors of a one-process run.

    OneFlow 0.9 gives views only to local tensors: on a global tensor every ``view``,
    ``permute``, slice and ``chunk`` is a copy, and one more op in backward. In a one-process run
    a global tensor's local tensor is its whole value, so a layer whose work between two
    products is mostly such reshaping (attention: heads, rotation, grouping, the context back to
    rows) does it on the local tensors and hands back global ones: the same numbers, with views
    instead of copies (a tiny Llama's eager training step: about 4% less CPU time). Gradients
    flow through both conversions. What the layer returns is global as before; user code never
    sees the local stretch.

    Inactive, every method the identity, with more than one process (a local tensor is then
    only this rank's piece, or empty), on local tensors, and in ``nn.Graph`` (lazy tensors have
    no views and the compiler plans the copies).

    ``like`` is a global tensor of the stretch; its placement is where results go back.
    """

    def __init__(self, layout: ParallelLayout, like: flow.Tensor) -> None:
        # the processes, not the layout's count: a launched test builds one-process layouts in
        # every process, and there a rank outside the placement holds an empty local tensor
        self.active = (layout.world_size == 1 and like.is_global and not like.is_lazy
                       and flow.env.get_world_size() == 1)
        self.placement = like.placement if self.active else None

    def enter(self, x: Optional[flow.Tensor]) -> Optional[flow.Tensor]:
        """``x``'s local tensor (``x`` itself when inactive, local already, or None)."""
        if not self.active or x is None or not x.is_global:
            return x
        return x.to_local()

    def leave(self, x: flow.Tensor, sbp: Sequence[Any]) -> flow.Tensor:
        """The local ``x`` as a global tensor of SBP ``sbp`` on the stretch's placement."""
        if not self.active or x.is_global:
            return x
        # one rank: no other rank's shape to check, nothing to broadcast
        return x.local_to_global(placement=self.placement, sbp=sbp, check_meta=False)


@contextlib.contextmanager
def local_tensors(model: nn.Module) -> Iterator[nn.Module]:
    """Hold a one-process ``model`` in plain local tensors inside the ``with`` block.

    For code that needs local tensors and whose tensors no user code sees, such as ONNX export
    (OneFlow's converter reads a graph of local tensors). Inside, every libai layer uses its
    layout's :meth:`~libai.utils.distributed.ParallelLayout.local_copy`, and every global
    parameter, buffer and tensor attribute is replaced by its local value (shared parameters
    stay shared; ``requires_grad`` is kept). Leaving the block puts the original layouts and
    tensor objects back, so optimizers and hooks that hold them are unaffected; values written
    to the local stand-ins inside (there should be none) are not copied back.

    Raises:
        ValueError: the model was built for more than one process (a local tensor would be
            only this rank's piece).
    """
    saved: List[Any] = []  # (module, dict name, key, original value)
    local_of: dict = {}  # id(original parameter) -> its local stand-in, to keep ties
    try:
        for module in model.modules():
            layout = getattr(module, "layout", None)
            if isinstance(layout, ParallelLayout) and layout.is_global:
                local = layout.local_copy()  # raises for a multi-process layout
                saved.append((module, "__dict__", "layout", layout))
                module.__dict__["layout"] = local
            for store in ("_parameters", "_buffers"):
                entries = module.__dict__.get(store, {})
                for key, value in list(entries.items()):
                    if isinstance(value, flow.Tensor) and value.is_global:
                        _check_one_rank(value)
                        if id(value) not in local_of:
                            plain = value.to_local().detach()
                            if isinstance(value, nn.Parameter):
                                plain = nn.Parameter(plain, requires_grad=value.requires_grad)
                            local_of[id(value)] = plain
                        saved.append((module, store, key, value))
                        entries[key] = local_of[id(value)]
            for key, value in list(vars(module).items()):
                if isinstance(value, flow.Tensor) and value.is_global:
                    _check_one_rank(value)
                    saved.append((module, "__dict__", key, value))
                    module.__dict__[key] = value.to_local()
        yield model
    finally:
        for module, store, key, value in reversed(saved):
            target = module.__dict__ if store == "__dict__" else module.__dict__[store]
            target[key] = value


def _check_one_rank(tensor: flow.Tensor) -> None:
    if tensor.placement.ranks.size != 1:
        raise ValueError(
            f"a tensor of shape {tuple(tensor.shape)} is placed on ranks "
            f"{tensor.placement.ranks.tolist()}: local tensors hold the full value only in a "
            "one-process model; build or load the model in one process first"
        )


def _check_global(x: flow.Tensor, layout: ParallelLayout) -> None:
    if not x.is_global:
        raise ValueError(
            f"a local tensor of shape {tuple(x.shape)} reached a libai layer in a "
            f"{layout.world_size}-process run; inputs must be global tensors. Batches from "
            "libai's loaders are made global by Instance.to_global(layout); for your own "
            "tensors use layout.to_global(tensor, sbp=[flow.sbp.split(0), flow.sbp.broadcast])"
        )
