"""Export a libai model (GPT-2, BERT, ...) to an ONNX file that onnxruntime runs.

The model is traced by OneFlow itself: :func:`export_onnx` wraps it in an ``nn.Graph`` that
calls ``model(**inputs)`` and keeps one output (the logits), compiles it on the example inputs,
and hands the compiled graph to OneFlow's converter (``oneflow-onnx``, completed for libai's
ops by :mod:`libai.models.utils.onnx_ops`). So the ONNX graph is made from the very modules
the model runs, not from a second description of its maths. The file's inputs are named after
the ``forward`` arguments (``input_ids``, ``attention_mask``, ...) and its output ``logits``.

Shapes are fixed: OneFlow records every reshape with concrete sizes, so the file takes inputs of
the example's shape only (serve with a fixed batch and pad to a fixed length, masking the
padding; export once per shape you need). Export runs on one process: load the model without
tensor or pipeline parallelism first; it traces a local-tensor view of the model, which keeps
its own global tensors. See docs/onnx_export.md.
"""
import inspect
import os
import re
import tempfile
from dataclasses import dataclass
from typing import Any, Dict, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import oneflow as flow
from oneflow import nn

from libai.layers.embedding import VocabEmbedding
from libai.layers.utils import local_tensors
from libai.models.utils.onnx_ops import MAX_OPSET, MIN_OPSET, REQUIREMENT, load_converter

__all__ = [
    "OnnxExport",
    "OnnxExportError",
    "example_token_inputs",
    "export_onnx",
    "run_onnx",
]

Inputs = Union[Mapping[str, flow.Tensor], Sequence[flow.Tensor]]

# forward() argument -> what an example holds (token ids are drawn below the vocabulary size)
_TOKEN_INPUTS = {"input_ids": "ids", "attention_mask": "ones", "tokentype_ids": "zeros",
                 "token_type_ids": "zeros", "position_ids": "positions"}


class OnnxExportError(RuntimeError):
    """The converter could not express the model in ONNX, or the file computes other values."""


@dataclass(frozen=True)
class OnnxExport:
    """What :func:`export_onnx` wrote.

    ``max_abs_diff`` is onnxruntime's output against the libai model's on the example inputs
    (None when the export ran with ``check=False``).
    """

    path: str
    input_names: Tuple[str, ...]
    input_shapes: Tuple[Tuple[int, ...], ...]
    output_name: str
    opset: int
    max_abs_diff: Optional[float]


class _OneOutput(nn.Graph):
    """``model(**dict(zip(names, inputs)))`` reduced to the one output to export."""

    def __init__(self, model: nn.Module, names: Tuple[str, ...], output_key: Optional[str]) -> None:
        super().__init__()
        self.model = model
        self.input_names = names
        self.output_key = output_key

    def build(self, *tensors: flow.Tensor) -> flow.Tensor:
        return _select_output(self.model(**dict(zip(self.input_names, tensors))), self.output_key)


def _select_output(output: Any, key: Optional[str] = None) -> flow.Tensor:
    """The tensor to export from a model's output: ``output[key]``; without a key, a dict's
    ``prediction_scores`` (libai's name for logits) or its only entry, a tuple's first element."""
    if isinstance(output, Mapping):
        if key is None:
            if "prediction_scores" in output:
                key = "prediction_scores"
            elif len(output) == 1:
                key = next(iter(output))
            else:
                raise ValueError(f"the model returns {sorted(output)}; pass output_key= to choose one")
        if key not in output:
            raise KeyError(f"output_key={key!r} is not among the model's outputs {sorted(output)}")
        return output[key]
    if key is not None:
        raise ValueError(f"output_key={key!r} given, but the model returns {type(output).__name__}, not a dict")
    if isinstance(output, (tuple, list)):
        return output[0]
    return output


def _named_inputs(model: nn.Module, example_inputs: Inputs) -> Dict[str, flow.Tensor]:
    if isinstance(example_inputs, Mapping):
        named = dict(example_inputs)
    else:
        params = list(inspect.signature(model.forward).parameters)
        if len(example_inputs) > len(params):
            raise ValueError(f"{len(example_inputs)} example inputs for forward{tuple(params)}")
        named = dict(zip(params, example_inputs))
    for name, tensor in named.items():
        if not isinstance(tensor, flow.Tensor):
            raise TypeError(f"example input {name!r} is a {type(tensor).__name__}; give oneflow tensors")
        if tensor.is_global:
            if tensor.placement.ranks.size != 1:
                raise ValueError(f"example input {name!r} is spread over several ranks; export runs in "
                                 "one process: give local tensors")
            named[name] = tensor.to_local()  # one process: the full value
    return named


def _check_one_process(model: nn.Module) -> None:
    spread = [name for name, p in model.named_parameters() if p.is_global and p.placement.ranks.size != 1]
    if spread:
        raise ValueError(
            f"the model's parameters are spread over several ranks (e.g. {spread[0]}): ONNX export "
            "needs a one-process model; build or load it in a single process without tensor or "
            "pipeline parallelism (e.g. from_pretrained, or a checkpoint loaded with train.dist at 1)"
        )


def export_onnx(
    model: nn.Module,
    path: str,
    example_inputs: Inputs,
    output_key: Optional[str] = None,
    output_name: str = "logits",
    opset: int = MIN_OPSET,
    check: bool = True,
    atol: float = 1e-4,
) -> OnnxExport:
    """Write ``model`` as an ONNX graph to ``path`` and return what was written.

    Args:
        model: a libai model (any ``nn.Module`` whose ops the converter knows) of local tensors.
        path: the ``.onnx`` file to write (written under a temporary name, then renamed).
        example_inputs: ``{forward argument: tensor}`` (or tensors in ``forward``'s order); they
            fix the input shapes of the file (see the module docstring).
        output_key: which entry of a dict output to export (default: ``prediction_scores``).
        output_name: the name of the file's output.
        opset: ONNX opset, 13 to 17.
        check: run the file with onnxruntime on the example inputs and compare with the model.
        atol: the largest absolute difference ``check`` accepts.

    Raises:
        OnnxExportError: an op the converter cannot map (named), or ``check`` found a difference.
    """
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"opset={opset}; oneflow-onnx 0.6.2 exports libai models at opsets "
                         f"{MIN_OPSET} to {MAX_OPSET}")
    export = load_converter()
    _check_one_process(model)
    named = _named_inputs(model, example_inputs)
    names = tuple(named)
    was_training = model.training
    model.eval()
    # OneFlow's converter reads a graph of local tensors: trace a local view of the model
    # (the user's model keeps its global tensors; see libai.layers.utils.local_tensors)
    with local_tensors(model):
        try:
            expected, shapes = _convert(model, named, names, output_key, path, export, opset,
                                        output_name)
        finally:
            model.train(was_training)
    diff = None
    if check:
        got = run_onnx(path, {n: t.numpy() for n, t in named.items()})
        diff = float(np.abs(got - expected).max()) if got.shape == expected.shape else float("inf")
        if not diff <= atol:
            os.remove(path)
            raise OnnxExportError(
                f"{path}: onnxruntime's output differs from the model's by {diff:g} (> atol={atol:g}; "
                f"shapes {got.shape} vs {expected.shape}), so the file was removed; export with "
                "check=False to keep it for inspection, and please report the model and opset"
            )
    return OnnxExport(path=path, input_names=names, input_shapes=shapes,
                      output_name=output_name, opset=opset, max_abs_diff=diff)


def _convert(model: nn.Module, named: Dict[str, flow.Tensor], names: Tuple[str, ...],
             output_key: Optional[str], path: str, export: Any, opset: int,
             output_name: str) -> Tuple[np.ndarray, Tuple[Tuple[int, ...], ...]]:
    """Compile ``model`` on the example inputs, convert it and write ``path``; the model's
    output on the examples and the input shapes."""
    with flow.no_grad():
        expected = _select_output(model(**named), output_key).numpy()
    graph = _OneOutput(model, names, output_key)
    graph(*named.values())  # compile on the example shapes
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="onnx_export_") as work:
        weights = os.path.join(work, "weights")
        flow.save(graph.state_dict(), weights)
        raw = os.path.join(work, "converted.onnx")
        export(graph, weights, raw, opset=opset)
        _finish(raw, path, names, output_name)
    return expected, tuple(tuple(int(d) for d in t.shape) for t in named.values())


_GRAPH_INPUT = re.compile(r"input\.0\.(\d+)_")


def _finish(raw: str, path: str, names: Tuple[str, ...], output_name: str) -> None:
    """Check every node is an ONNX op, give inputs/output their names, write ``path`` atomically."""
    import onnx

    model = onnx.load(raw)
    unmapped = sorted({node.op_type for node in model.graph.node
                       if not node.domain and not onnx.defs.has(node.op_type)})
    if unmapped:
        raise OnnxExportError(
            f"oneflow-onnx has no ONNX mapping for the OneFlow op(s) {unmapped}; a layer of this "
            "model uses an op the converter does not know (libai.models.utils.onnx_ops adds the "
            "missing ones libai's GPT-2 and BERT need: add one there the same way)"
        )
    renames: Dict[str, str] = {}
    for position, graph_input in enumerate(model.graph.input):
        found = _GRAPH_INPUT.search(graph_input.name)
        index = int(found.group(1)) if found else position
        if index < len(names):
            renames[graph_input.name] = names[index]
    if len(model.graph.output) != 1:
        raise OnnxExportError(f"expected one graph output, the converter wrote {len(model.graph.output)}")
    renames[model.graph.output[0].name] = output_name
    for value in list(model.graph.input) + list(model.graph.output) + list(model.graph.value_info):
        value.name = renames.get(value.name, value.name)
    for node in model.graph.node:
        node.input[:] = [renames.get(n, n) for n in node.input]
        node.output[:] = [renames.get(n, n) for n in node.output]
    onnx.checker.check_model(model)
    partial = f"{path}.partial"
    onnx.save(model, partial)
    os.replace(partial, path)


def run_onnx(path: str, inputs: Mapping[str, np.ndarray]) -> np.ndarray:
    """The first output of the ONNX file at ``path`` for ``inputs``, computed by onnxruntime.

    Inputs are matched by name and must have the shapes the file was exported with.
    """
    try:
        import onnxruntime as ort
    except ImportError as err:
        raise ImportError(f"running an ONNX file needs onnxruntime ({REQUIREMENT})") from err
    session = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    feed = {}
    for declared in session.get_inputs():
        if declared.name not in inputs:
            raise KeyError(f"{path} needs input {declared.name!r}; got {sorted(inputs)}")
        value = np.asarray(inputs[declared.name])
        if list(value.shape) != list(declared.shape):
            raise ValueError(
                f"{path} was exported for {declared.name} of shape {tuple(declared.shape)}, got "
                f"{value.shape}; export again with example inputs of the shape you need (or pad)"
            )
        feed[declared.name] = value.astype(np.int64) if "int" in declared.type else value
    return session.run(None, feed)[0]


def example_token_inputs(
    model: nn.Module, batch_size: int, seq_length: int, vocab_size: Optional[int] = None,
    names: Optional[Sequence[str]] = None, seed: int = 0,
) -> Dict[str, flow.Tensor]:
    """Example inputs of a text model for :func:`export_onnx`: random token ids below
    ``vocab_size`` (default: the rows of the model's first :class:`VocabEmbedding`), an all-ones
    ``attention_mask``, zero token types.

    ``names`` defaults to the ``forward`` arguments without a default value (``input_ids`` for
    GPT, ``input_ids, attention_mask`` for BERT).
    """
    if vocab_size is None:
        tables = [m.num_embeddings for m in model.modules() if isinstance(m, VocabEmbedding)]
        if not tables:
            raise ValueError("the model has no VocabEmbedding to take the vocabulary size from; "
                             "pass vocab_size=")
        vocab_size = int(tables[0])
    if names is None:
        names = [n for n, p in inspect.signature(model.forward).parameters.items()
                 if p.default is inspect.Parameter.empty
                 and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [n for n in names if n not in _TOKEN_INPUTS]
    if unknown:
        raise ValueError(f"no example rule for input(s) {unknown}; known: {sorted(_TOKEN_INPUTS)}")
    rng = np.random.default_rng(seed)
    shape = (batch_size, seq_length)
    made = {
        "ids": lambda: rng.integers(0, vocab_size, size=shape),
        "ones": lambda: np.ones(shape, dtype=np.int64),
        "zeros": lambda: np.zeros(shape, dtype=np.int64),
        "positions": lambda: np.broadcast_to(np.arange(seq_length), shape).copy(),
    }
    return {n: flow.tensor(made[_TOKEN_INPUTS[n]]().astype(np.int64)) for n in names}
