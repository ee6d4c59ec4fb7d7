"""Draw a model's module graph: one box per module (name, type, parameters), an edge from each
module to the modules it contains.

Drawing uses the ``graphviz`` Python package to write the DOT text and Graphviz's ``dot``
program to lay it out as SVG or PNG. ``dot`` is a system program (Debian: ``apt-get install
graphviz``); where it is missing, :func:`render_module_graph` writes an indented text tree
instead and says so, so the tool is useful on any machine.
"""
import os
import shutil
from dataclasses import dataclass
from typing import List, Optional

from oneflow import nn

from libai.utils.model_summary import summarize_model

__all__ = ["module_graph_source", "module_tree_text", "render_module_graph", "RenderResult"]

FORMATS = ("svg", "png")


@dataclass(frozen=True)
class RenderResult:
    """What :func:`render_module_graph` wrote: ``path``, and ``fallback`` (a text tree was
    written because ``dot`` is missing) with ``message`` saying why."""

    path: str
    fallback: bool
    message: str = ""


def module_graph_source(model: nn.Module, max_depth: Optional[int] = None) -> str:
    """The graph in Graphviz's DOT language (needs the ``graphviz`` package, not ``dot``)."""
    try:
        import graphviz
    except ImportError as e:
        raise ImportError("drawing the module graph needs the graphviz package: "
                          "`pip install graphviz==0.21`") from e
    summary = summarize_model(model, max_depth=max_depth)
    graph = graphviz.Digraph(name=type(model).__name__, graph_attr={"rankdir": "TB", "fontname": "Helvetica"},
                             node_attr={"shape": "box", "style": "rounded", "fontname": "Helvetica"})
    ids = {row.name: f"m{index}" for index, row in enumerate(summary.rows)}
    for row in summary.rows:
        label = f"{row.name or '(model)'}\\n{row.type}\\n{row.num_params:,} params"  # DOT line breaks
        graph.node(ids[row.name], label=label)
        if row.name:
            parent = row.name.rsplit(".", 1)[0] if "." in row.name else ""
            graph.edge(ids[parent], ids[row.name])
    graph.attr(label=f"{type(model).__name__}: {summary.total_params:,} parameters "
                     f"({summary.trainable_params:,} trainable)", labelloc="t")
    return graph.source


def module_tree_text(model: nn.Module, max_depth: Optional[int] = None) -> str:
    """The same information as an indented text tree (one module per line)."""
    summary = summarize_model(model, max_depth=max_depth)
    lines: List[str] = []
    for row in summary.rows:
        label = row.name.rsplit(".", 1)[-1] if row.name else "(model)"
        lines.append(f"{'    ' * row.depth}{label}: {row.type} ({row.num_params:,} params)")
    lines.append(f"Total parameters: {summary.total_params:,} "
                 f"({summary.trainable_params:,} trainable)")
    return "\n".join(lines) + "\n"


def render_module_graph(model: nn.Module, output: str, max_depth: Optional[int] = None,
                        dot_binary: Optional[str] = None) -> RenderResult:
    """Write the module graph of ``model`` to ``output`` (``.svg`` or ``.png``).

    When Graphviz's ``dot`` is not on the PATH (or ``dot_binary`` names none), the text tree is
    written to ``output`` with ``.txt`` in place of its extension, and the result says so.
    """
    extension = os.path.splitext(output)[1].lower().lstrip(".")
    if extension not in FORMATS:
        raise ValueError(f"--output must end in .svg or .png, got {output!r}")
    folder = os.path.dirname(os.path.abspath(output))
    os.makedirs(folder, exist_ok=True)
    dot = dot_binary if dot_binary is not None else shutil.which("dot")
    if not dot or not os.path.exists(dot):
        text_path = os.path.splitext(output)[0] + ".txt"
        with open(text_path, "w", encoding="utf-8") as f:
            f.write(module_tree_text(model, max_depth))
        return RenderResult(text_path, True,
                            f"Graphviz's `dot` program is not installed, so no {extension.upper()} "
                            f"was drawn; wrote the module tree as text to {text_path} instead "
                            "(install it with `apt-get install graphviz` to get the drawing)")
    import subprocess

    source = module_graph_source(model, max_depth)
    completed = subprocess.run([dot, f"-T{extension}", "-o", output], input=source.encode("utf-8"),
                               capture_output=True, check=False)
    if completed.returncode != 0:
        raise RuntimeError(f"`dot -T{extension}` failed ({completed.returncode}): "
                           f"{completed.stderr.decode(errors='replace').strip()}")
    return RenderResult(output, False)
