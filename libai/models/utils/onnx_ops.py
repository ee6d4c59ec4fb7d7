"""OneFlow's ONNX converter (``oneflow-onnx`` 0.6.2), loaded and completed for libai's models.

The converter turns a compiled ``nn.Graph`` into ONNX op by op, through a registry of handlers
(``oneflow_onnx.oneflow2onnx.handler.flow_op``). Exporting libai's GPT-2 and BERT with it on
OneFlow 0.9.0 meets five gaps, each fixed here once, through that same registry, so that the
models keep a single implementation of their maths (the layers are not changed for export):

- ``oneflow_onnx.util`` names ``np.bool`` at import, an alias NumPy 1.24 removed: the import
  runs with the alias lent for its duration only.
- ``masked_fill`` (the attention's score masking) has no handler: mapped to ``Where``.
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
from typing import Any, Callable, Iterator

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


def _register_fixes() -> None:
    """Add or replace the handlers listed in the module docstring (once per process)."""
    global _registered
    if _registered:
        return
    from onnx import TensorProto
    from oneflow_onnx import util
    from oneflow_onnx.oneflow2onnx.handler import flow_op

    def unique(name: str) -> str:
        import oneflow

        return oneflow._oneflow_internal.UniqueStr(name)

    def constant(ctx: Any, name: str, value: Any, like: str) -> str:
        dtype = util.Onnx2NumpyDtype(ctx.get_dtype(like))
        return ctx.MakeConst(unique(name), np.array(value, dtype=dtype)).output_tensor_names[0]

    def as_bool_input(ctx: Any, node: Any, name: str) -> str:
        if ctx.get_dtype(name) == TensorProto.BOOL:
            return name
        cast = ctx.InsertNewNodeOnInput(node, "Cast", name, to=TensorProto.BOOL)
        ctx.CopyShape(name, cast.output_tensor_names[0])
        ctx.set_dtype(cast.output_tensor_names[0], TensorProto.BOOL)
        return cast.output_tensor_names[0]

    def then_op(ctx: Any, node: Any, op_type: str, **attrs: Any) -> None:
        """Insert ``op_type`` after ``node``'s output (its consumers read the new output)."""
        out = node.output_tensor_names[0]
        dtype = attrs.get("to", ctx.get_dtype(out))
        after = ctx.InsertNewNodeOnOutput(op_type, out, unique(op_type.lower()), **attrs)
        ctx.CopyShape(out, after.output_tensor_names[0])
        ctx.set_dtype(after.output_tensor_names[0], dtype)

    def scalar_operand(node: Any) -> Any:
        if node.attrs.get("has_float_operand"):
            return float(node.attrs["float_operand"])
        if node.attrs.get("has_bool_operand"):
            return bool(node.attrs["bool_operand"])
        return int(node.attrs.get("int_operand", 0))

    @flow_op("masked_fill", onnx_op="Where", flow_ibns=["x", "mask"])
    class MaskedFill:
        @classmethod
        def Version_9(cls, ctx: Any, node: Any, **kwargs: Any) -> None:
            x, mask = node.input_tensor_names
            mask = as_bool_input(ctx, node, mask)
            fill = constant(ctx, "fill_value", scalar_operand(node), like=x)
            out, shapes, dtypes = node.output_tensor_names[0], node.output_shapes, node.output_dtypes
            ctx.RemoveNode(node.name)
            ctx.MakeNode("Where", [mask, fill, x], outputs=[out], op_name_scope=node.name,
                         name="where", shapes=shapes, dtypes=dtypes)

    @flow_op("logical_not", onnx_op="Not")
    class LogicalNot:
        @classmethod
        def Version_1(cls, ctx: Any, node: Any, **kwargs: Any) -> None:
            as_bool_input(ctx, node, node.input_tensor_names[0])
            out = node.output_tensor_names[0]
            if ctx.get_dtype(out) != TensorProto.BOOL:
                then_op(ctx, node, "Cast", to=ctx.get_dtype(out))
                ctx.set_dtype(out, TensorProto.BOOL)

    def compare_with_scalar(ctx: Any, node: Any) -> None:
        x = node.input_tensor_names[0]
        node.input_tensor_names.append(constant(ctx, "operand", scalar_operand(node), like=x))

    @flow_op("scalar_logical_equal", onnx_op="Equal")
    class ScalarEqual:
        @classmethod
        def Version_11(cls, ctx: Any, node: Any, **kwargs: Any) -> None:
            compare_with_scalar(ctx, node)

    @flow_op("scalar_logical_not_equal", onnx_op="Equal")
    class ScalarNotEqual:
        @classmethod
        def Version_11(cls, ctx: Any, node: Any, **kwargs: Any) -> None:
            compare_with_scalar(ctx, node)
            then_op(ctx, node, "Not")

    @flow_op("reduce_sum", onnx_op="ReduceSum")
    class ReduceSumAxesInput:
        @classmethod
        def Version_13(cls, ctx: Any, node: Any, **kwargs: Any) -> None:
            rank = len(ctx.get_shape(node.input_tensor_names[0]))
            axes = [a + rank if a < 0 else a for a in node.attrs.pop("axis", [])]
            if axes:  # no axes input = reduce over every axis, as OneFlow's empty list means
                axes_const = ctx.MakeConst(unique("axes"), np.array(axes, dtype=np.int64))
                node.input_tensor_names.append(axes_const.output_tensor_names[0])

    _registered = True
