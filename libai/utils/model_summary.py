"""A model summary: one row per module with its type, output shape and parameter count.

The table answers the questions asked before a long run: is the model the size I expect, which
part holds the parameters, and does each layer produce the shape I think it does. Output shapes
come from one real forward pass, recorded by forward hooks (:func:`record_output_shapes`); the
parameter counts come from the modules alone.

Counts are of *unique* parameters (a weight shared by two modules, such as tied embeddings, is
counted once in the total, and once in each module that holds it), and of the full (global)
shape, so a tensor-parallel model reports the size of the whole model on every rank.
"""
import contextlib
from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any, Dict, Iterator, List, Mapping, Optional, Sequence

from oneflow import nn

__all__ = ["ModuleRow", "ModelSummary", "summarize_model", "record_output_shapes", "describe_shape"]


@dataclass(frozen=True)
class ModuleRow:
    """One module of the summary.

    Attributes:
        name: the module's qualified name (``""`` for the model itself).
        type: the module's class name.
        depth: 0 for the model, 1 for its children, ...
        num_params: parameters held by this module and its descendants (each counted once).
        output_shape: the output's shape seen in the recorded forward pass, ``""`` if not seen.
    """

    name: str
    type: str
    depth: int
    num_params: int
    output_shape: str = ""


@dataclass(frozen=True)
class ModelSummary:
    """The rows and totals of :func:`summarize_model`; ``str()`` gives the printed table."""

    rows: List[ModuleRow]
    total_params: int
    trainable_params: int
    hidden_rows: int = 0  # modules deeper than ``max_depth`` (counted in their ancestors' rows)
    notes: List[str] = field(default_factory=list)

    @property
    def non_trainable_params(self) -> int:
        return self.total_params - self.trainable_params

    def format(self) -> str:
        """The table (qualified module names, so ``blocks.0.attn`` shows where a module sits)
        and the totals below it."""
        from tabulate import tabulate

        table = [
            [row.name or "(model)", row.type, row.output_shape or "-", f"{row.num_params:,}"]
            for row in self.rows
        ]
        lines = [tabulate(table, headers=["module", "type", "output shape", "parameters"],
                          tablefmt="simple", colalign=("left", "left", "left", "right"),
                          disable_numparse=True)]
        if self.hidden_rows:
            lines.append(f"({self.hidden_rows} deeper modules are not listed; their parameters "
                         "are counted in their parents' rows)")
        lines.append(f"Total parameters: {self.total_params:,}")
        lines.append(f"Trainable parameters: {self.trainable_params:,}")
        lines.append(f"Non-trainable parameters: {self.non_trainable_params:,}")
        lines.extend(self.notes)
        return "\n".join(lines)

    def __str__(self) -> str:
        return self.format()


def summarize_model(
    model: nn.Module,
    output_shapes: Optional[Mapping[str, str]] = None,
    max_depth: Optional[int] = None,
    notes: Sequence[str] = (),
) -> ModelSummary:
    """The summary of ``model``.

    Args:
        model: any OneFlow module.
        output_shapes: module name -> shape text, as filled by :func:`record_output_shapes`;
            ``None`` leaves the column empty.
        max_depth: list modules down to this depth (0 = the model only); ``None`` lists all.
            Deeper modules still count in their ancestors' rows and in the totals.
        notes: lines printed under the totals (e.g. why shapes are missing).
    """
    if max_depth is not None and max_depth < 0:
        raise ValueError(f"max_depth must be >= 0 or None, got {max_depth}")
    shapes = output_shapes or {}
    rows: List[ModuleRow] = []
    hidden = 0
    for name, module in model.named_modules():
        depth = 0 if not name else name.count(".") + 1
        if max_depth is not None and depth > max_depth:
            hidden += 1
            continue
        count = sum(p.numel() for p in _unique_parameters(module))
        rows.append(ModuleRow(name, type(module).__name__, depth, int(count), shapes.get(name, "")))
    params = list(_unique_parameters(model))
    total = int(sum(p.numel() for p in params))
    trainable = int(sum(p.numel() for p in params if p.requires_grad))
    return ModelSummary(rows, total, trainable, hidden, list(notes))


def _unique_parameters(module: nn.Module) -> Iterator[Any]:
    seen = set()
    for p in module.parameters():
        if id(p) not in seen:
            seen.add(id(p))
            yield p


@contextlib.contextmanager
def record_output_shapes(model: nn.Module) -> Iterator[Dict[str, str]]:
    """Record the output shape of every module of ``model`` during the forward passes run
    inside the ``with`` block; yields the (filling) dict ``module name -> shape text``.

    Only the first call of each module is recorded (a module called twice, or once per
    accumulated micro-batch, keeps its first shape). The hooks only read ``.shape``, so the
    computation is unchanged; they are removed on leaving the block. OneFlow 0.9's
    ``register_forward_hook`` returns no handle, so removal rebuilds each module's hook table
    without ours (keeping any other hooks, renumbered as OneFlow numbers them).
    """
    shapes: "OrderedDict[str, str]" = OrderedDict()
    installed = []
    for name, module in model.named_modules():
        hook = _shape_hook(shapes, name)
        module.register_forward_hook(hook)
        installed.append((module, hook))
    try:
        yield shapes
    finally:
        for module, hook in installed:
            kept = [h for h in module._forward_hooks.values() if h is not hook]
            module._forward_hooks = OrderedDict(enumerate(kept))


def _shape_hook(shapes: Dict[str, str], name: str) -> Any:
    def hook(module: nn.Module, inputs: Any, output: Any) -> None:
        if name not in shapes:
            shapes[name] = describe_shape(output)

    return hook


def describe_shape(value: Any) -> str:
    """Shape text of a module output: ``[8, 16]`` for a tensor, ``(.., ..)`` for tuples and
    lists, ``{key: ..}`` for dicts, the type name for anything else."""
    shape = getattr(value, "shape", None)
    if shape is not None and not isinstance(value, type):
        return "[" + ", ".join(str(int(d)) for d in shape) + "]"
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {describe_shape(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (tuple, list)):
        return "(" + ", ".join(describe_shape(v) for v in value) + ")"
    return "None" if value is None else type(value).__name__
