"""OneFlow's ONNX converter (``oneflow-onnx`` 0.6.2), loaded and completed for libai's models.

The converter turns a compiled ``nn.Graph`` into ONNX op by op, through a registry of handlers
(``oneflow_onnx.oneflow2onnx.handler.flow_op``). Exporting libai's GPT-2 and BERT with it on
OneFlow 0.9.0 meets six gaps, each fixed here once, through that same registry, so that the
models keep a single implementation of their maths (the layers are not changed for export):

- ``oneflow_onnx.util`` names ``np.bool`` at import, an alias NumPy 1.24 removed: the import
  runs with the alias lent for its duration only.
- ``masked_fill`` (the attention's score masking) has no handler: mapped to ``Where``.
- ``where_scalar_xy`` (``flow.where(mask, 0.0, -inf)``, the causal mask as a score bias) has
  no handler: mapped to ``Where`` of two constants.
- ``logical_not``: OneFlow 0.9 feeds it a float tensor (its functional casts the bool mask to
  float first), which ONNX's ``Not`` refuses: the input is cast back to bool.
- ``scalar_logical_not_equal`` / ``scalar_logical_equal`` (``attention_mask != 0``) have no
  handler: mapped to ``Equal`` with a constant (and ``Not``).
- ``reduce_sum`` from opset 13 on must pass ``axes`` as an input, not an attribute (the stock
  handler keeps the attribute, which ONNX drops, so it silently summed over every axis).
  Opset 13 is the lowest the converter's ``var`` (the LayerNorm variance) supports.

Also required: ``onnx < 1.15`` (later versions refuse the empty list attributes the converter
writes, e.g. ``nd_sbp``). :func:`load_converter` checks it and says what to install.
"""
import contextlib
from typing import Any, Callable, Iterator, List, NamedTuple, Optional

import numpy as np

__all__ = ["REQUIREMENT", "MIN_OPSET", "MAX_OPSET", "load_converter"]

REQUIREMENT = "onnx==1.14.1 onnxruntime==1.20.1 oneflow-onnx==0.6.2"
MIN_OPSET = 13  # the converter's `var` handler exists only from opset 13
MAX_OPSET = 17  # from opset 18 ReduceMean takes axes as an input, which `var` does not emit

_registered = False


@contextlib.contextmanager
def _numpy_bool_alias() -> Iterator[None]:
    """Lend ``np.bool`` (removed in NumPy 1.24) while the converter's modules are imported."""
    if "bool" in np.__dict__:
        yield
        return
    np.bool = np.bool_  # type: ignore[attr-defined]
    try:
        yield
    finally:
        del np.bool  # type: ignore[attr-defined]


def load_converter() -> Callable[..., None]:
    """The converter's ``Export(graph, weights_dir, onnx_path, opset=...)``, with libai's fixes.

    Raises ImportError naming the packages to install when the converter is missing, or when the
    installed ``onnx`` is one the converter cannot write attributes with.
    """
    try:
        import onnx
        with _numpy_bool_alias():
            from oneflow_onnx.oneflow2onnx.flow2onnx import Export
    except ImportError as err:
        raise ImportError(
            f"ONNX export needs {REQUIREMENT} (missing: {err.name}); install them with "
            "`pip install -e '.[onnx]'` or `pip install -r requirements.txt`"
        ) from err
    major, minor = (int(part) for part in onnx.__version__.split(".")[:2])
    if (major, minor) >= (1, 15):
        raise ImportError(
            f"onnx {onnx.__version__} is installed, but oneflow-onnx 0.6.2 writes empty list "
            "attributes that onnx >= 1.15 refuses; install onnx==1.14.1"
        )
    _register_fixes()
    return Export


# --------------------------------------------------------------------- what the fixes build with
def _unique(name: str) -> str:
    import oneflow

    return oneflow._oneflow_internal.UniqueStr(name)


def _constant(ctx: Any, name: str, value: Any, like: str) -> str:
    """A constant node holding ``value`` with the dtype of tensor ``like``; its output's name."""
    from oneflow_onnx import util

    dtype = util.Onnx2NumpyDtype(ctx.get_dtype(like))
    return ctx.MakeConst(_unique(name), np.array(value, dtype=dtype)).output_tensor_names[0]


def _as_bool_input(ctx: Any, node: Any, name: str) -> str:
    """``node``'s input ``name`` as a bool tensor (a Cast inserted when it is not one)."""
    from onnx import TensorProto

    if ctx.get_dtype(name) == TensorProto.BOOL:
        return name
    cast = ctx.InsertNewNodeOnInput(node, "Cast", name, to=TensorProto.BOOL)
    ctx.CopyShape(name, cast.output_tensor_names[0])
    ctx.set_dtype(cast.output_tensor_names[0], TensorProto.BOOL)
    return cast.output_tensor_names[0]


def _then_op(ctx: Any, node: Any, op_type: str, **attrs: Any) -> None:
    """Insert ``op_type`` after ``node``'s output (its consumers read the new output)."""
    out = node.output_tensor_names[0]
    dtype = attrs.get("to", ctx.get_dtype(out))
    after = ctx.InsertNewNodeOnOutput(op_type, out, _unique(op_type.lower()), **attrs)
    ctx.CopyShape(out, after.output_tensor_names[0])
    ctx.set_dtype(after.output_tensor_names[0], dtype)


def _scalar_operand(node: Any) -> Any:
    """The scalar a OneFlow ``scalar_*`` op carries in its attributes."""
    if node.attrs.get("has_float_operand"):
        return float(node.attrs["float_operand"])
    if node.attrs.get("has_bool_operand"):
        return bool(node.attrs["bool_operand"])
    return int(node.attrs.get("int_operand", 0))


# --------------------------------------------------------------------- the fixes, one per op
def _masked_fill_as_where(ctx: Any, node: Any) -> None:
    x, mask = node.input_tensor_names
    mask = _as_bool_input(ctx, node, mask)
    fill = _constant(ctx, "fill_value", _scalar_operand(node), like=x)
    out, shapes, dtypes = node.output_tensor_names[0], node.output_shapes, node.output_dtypes
    ctx.RemoveNode(node.name)
    ctx.MakeNode("Where", [mask, fill, x], outputs=[out], op_name_scope=node.name,
                 name="where", shapes=shapes, dtypes=dtypes)


def _where_of_two_scalars(ctx: Any, node: Any) -> None:
    """OneFlow's ``where`` of a condition and two scalars (the causal mask's 0 / -inf bias)."""
    cond = _as_bool_input(ctx, node, node.input_tensor_names[0])
    out, shapes, dtypes = node.output_tensor_names[0], node.output_shapes, node.output_dtypes
    x, y = (_constant(ctx, f"{side}_operand", _side_operand(node, side), like=out)
            for side in ("x", "y"))
    ctx.RemoveNode(node.name)
    ctx.MakeNode("Where", [cond, x, y], outputs=[out], op_name_scope=node.name,
                 name="where", shapes=shapes, dtypes=dtypes)


def _side_operand(node: Any, side: str) -> Any:
    """The scalar ``where_scalar_xy`` carries for its ``x`` or ``y`` side."""
    for kind, cast in (("float", float), ("int", int), ("bool", bool)):
        if node.attrs.get(f"has_{side}_{kind}_operand"):
            return cast(node.attrs[f"{side}_{kind}_operand"])
    raise ValueError(f"{node.name}: where_scalar_xy without a scalar for {side}")


def _logical_not_on_bool(ctx: Any, node: Any) -> None:
    from onnx import TensorProto

    _as_bool_input(ctx, node, node.input_tensor_names[0])
    out = node.output_tensor_names[0]
    if ctx.get_dtype(out) != TensorProto.BOOL:
        _then_op(ctx, node, "Cast", to=ctx.get_dtype(out))
        ctx.set_dtype(out, TensorProto.BOOL)


def _equal_to_scalar(ctx: Any, node: Any) -> None:
    x = node.input_tensor_names[0]
    node.input_tensor_names.append(_constant(ctx, "operand", _scalar_operand(node), like=x))


def _not_equal_to_scalar(ctx: Any, node: Any) -> None:
    _equal_to_scalar(ctx, node)
    _then_op(ctx, node, "Not")


def _reduce_sum_axes_as_input(ctx: Any, node: Any) -> None:
    rank = len(ctx.get_shape(node.input_tensor_names[0]))
    axes = [a + rank if a < 0 else a for a in node.attrs.pop("axis", [])]
    if axes:  # no axes input = reduce over every axis, as OneFlow's empty list means
        axes_const = ctx.MakeConst(_unique("axes"), np.array(axes, dtype=np.int64))
        node.input_tensor_names.append(axes_const.output_tensor_names[0])


class _Fix(NamedTuple):
    """One handler for the converter's registry: OneFlow op -> ONNX op, from an opset on."""

    flow_op: str
    onnx_op: str
    since_opset: int
    convert: Callable[[Any, Any], None]
    flow_ibns: Optional[List[str]] = None  # the OneFlow op's input names, when it has several


#: the gaps listed in the module docstring, in its order
_FIXES = (
    _Fix("masked_fill", "Where", 9, _masked_fill_as_where, flow_ibns=["x", "mask"]),
    _Fix("where_scalar_xy", "Where", 9, _where_of_two_scalars),
    _Fix("logical_not", "Not", 1, _logical_not_on_bool),
    _Fix("scalar_logical_equal", "Equal", 11, _equal_to_scalar),
    _Fix("scalar_logical_not_equal", "Equal", 11, _not_equal_to_scalar),
    _Fix("reduce_sum", "ReduceSum", 13, _reduce_sum_axes_as_input),
)


def _handler_class(fix: _Fix) -> type:
    """The class the registry reads: a ``Version_<opset>`` classmethod calling ``fix.convert``."""

    def version(cls: type, ctx: Any, node: Any, **kwargs: Any) -> None:
        fix.convert(ctx, node)

    return type(f"Fix_{fix.flow_op}", (), {f"Version_{fix.since_opset}": classmethod(version)})


def _register_fixes() -> None:
    """Add or replace the handlers of :data:`_FIXES` (once per process)."""
    global _registered
    if _registered:
        return
    from oneflow_onnx.oneflow2onnx.handler import flow_op

    for fix in _FIXES:
        flow_op(fix.flow_op, onnx_op=fix.onnx_op, flow_ibns=fix.flow_ibns)(_handler_class(fix))
    _registered = True
