"""The model as the planner sees it: every parameter's shape, split and layer, built without weights.

``cfg.model`` is instantiated inside a one-process layout (tensor and pipeline sizes 1, device
CPU) under :func:`libai.layers.utils.record_parameter_shapes`, so each parallel layer receives a
zero-storage stand-in (a stride-0 view of one element) instead of a drawn weight, and reports
its shape, its tensor-parallel SBP and its ``layer_idx``. A GPT-3 175B model is built this way in
a few seconds and a few megabytes. Nothing depends on the layout: logical shapes are the same
for every data/tensor/pipeline size, so one build serves every layout the planner considers
(the stage of each parameter comes from its ``layer_idx`` and the layout, the per-rank share
from its split). Plain ``oneflow.nn`` modules keep their real (small) parameters; they are
counted the same way, replicated on the first stage, which is where the trainer places them.
"""
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Tuple

import oneflow as flow

from libai.config import instantiate
from libai.layers.utils import record_parameter_shapes
from libai.utils.distributed import ParallelLayout

__all__ = ["ParamInfo", "ModuleInfo", "ModelShape", "build_model_shape"]


@dataclass(frozen=True)
class ParamInfo:
    """One parameter: logical shape, bytes per element, tensor-parallel split axis (``None`` =
    replicated), the ``layer_idx`` that picks its stage, and whether it is trained."""

    name: str
    shape: Tuple[int, ...]
    itemsize: int
    split_axis: Optional[int]
    layer_idx: int
    trainable: bool

    @property
    def numel(self) -> int:
        n = 1
        for d in self.shape:
            n *= int(d)
        return n

    def local_numel(self, tp: int) -> int:
        """Elements one tensor-parallel rank holds (OneFlow splits evenly; divisibility is
        validated separately)."""
        return self.numel // tp if self.split_axis is not None else self.numel


@dataclass(frozen=True)
class ModuleInfo:
    """A module the activation and FLOP models read: its kind and the sizes they need."""

    kind: str  # "block" | "attention" | "mlp" | "norm" | "linear" | "logits" | "embedding"
    name: str
    layer_idx: int
    dims: Dict[str, Any] = field(default_factory=dict)


@dataclass
class ModelShape:
    """What :func:`build_model_shape` found."""

    model_class: str
    params: List[ParamInfo]
    modules: List[ModuleInfo]
    buffer_bytes: int  # registered buffers (masks, tables): replicated on their stage
    num_layers: int  # layer indices the model uses (max index + 1)
    training_params: int = 0
    module: Any = field(default=None, repr=False, compare=False)  # the model built with stand-ins
    trace: Any = field(default=None, repr=False, compare=False)  # libai.plan.trace.Trace, if run

    @property
    def num_params(self) -> int:
        return sum(p.numel for p in self.params)

    def of_kind(self, kind: str) -> List[ModuleInfo]:
        return [m for m in self.modules if m.kind == kind]

    @property
    def tied_embedding_bytes(self) -> float:
        """Bytes of the word embedding an LM head reuses (copied to the last stage under PP)."""
        vocabs = {m.dims["vocab"] for m in self.of_kind("logits")}
        for p in self.params:
            if p.split_axis == 0 and len(p.shape) == 2 and p.shape[0] in vocabs:
                return float(p.numel * p.itemsize)
        return 0.0


def _split_axis(tensor_sbp: Any) -> Optional[int]:
    if tensor_sbp is None or tensor_sbp == flow.sbp.broadcast:
        return None
    axis = getattr(tensor_sbp, "axis", None)
    if axis is None:  # oneflow 0.9 spells it in the repr only: "oneflow.sbp.split(dim=0)"
        text = str(tensor_sbp)
        axis = int(text[text.index("=") + 1:text.index(")")]) if "split" in text else None
    return axis


def _itemsize(dtype: flow.dtype) -> int:
    return flow.empty(0, dtype=dtype).element_size()


def build_model_shape(model_cfg: Any) -> ModelShape:
    """Instantiate ``model_cfg`` with stand-in parameters and read its shapes (see module doc).

    Raises whatever building the model raises (a missing argument, a bad size): the caller turns
    it into a problem of the plan.
    """
    recorded: Dict[int, Tuple[Tuple[int, ...], Any, int, flow.dtype]] = {}

    def record(param: Any, shape: Tuple[int, ...], tensor_sbp: Any, layer_idx: int, dtype: Any) -> None:
        recorded[id(param)] = (shape, tensor_sbp, int(layer_idx), dtype)

    layout = ParallelLayout(device_type="cpu", world_size=1, rank=0)
    if hasattr(layout, "local_copy"):  # plain local tensors: nothing here is trained or shown
        layout = layout.local_copy()
    with layout, record_parameter_shapes(record):
        model = instantiate(model_cfg)
    if not isinstance(model, flow.nn.Module):
        raise TypeError(f"cfg.model built a {type(model).__name__}, not a oneflow.nn.Module")
    modules = _describe_modules(model)
    max_idx = max([m.layer_idx for m in modules] + [rec[2] for rec in recorded.values()] + [0])
    params = []
    for name, p in model.named_parameters():
        if id(p) in recorded:
            shape, sbp, idx, dtype = recorded[id(p)]
            params.append(ParamInfo(name, shape, _itemsize(dtype), _split_axis(sbp), idx, p.requires_grad))
        else:  # a plain oneflow.nn parameter: real, replicated, on the first stage
            params.append(ParamInfo(name, tuple(p.shape), p.element_size(), None, 0, p.requires_grad))
    buffers = sum(b.numel() * b.element_size() for b in model.buffers())
    return ModelShape(type(model).__name__, params, modules, int(buffers), max_idx + 1, module=model)


def _describe_modules(model: flow.nn.Module) -> List[ModuleInfo]:
    """The modules the activation and FLOP models read, from libai's layer classes."""
    from libai.layers import (
        LayerNorm, Linear, MultiheadAttention, RMSLayerNorm, TransformerLayer, VocabEmbedding,
    )
    from libai.layers.lm_logits import LMLogits
    from libai.layers.mlp import MLP

    out: List[ModuleInfo] = []
    for name, m in model.named_modules():
        idx = int(getattr(m, "layer_idx", 0) or 0)
        if isinstance(m, TransformerLayer):
            out.append(ModuleInfo("block", name, idx, dict(hidden=m.self_attention.hidden_size)))
        elif isinstance(m, MultiheadAttention):
            out.append(ModuleInfo("attention", name, idx, dict(
                hidden=m.hidden_size, heads=m.num_heads, kv_heads=m.kv_heads,
                head_size=m.head_size, cross=bool(m.is_cross_attention),
                attn_dropout=float(m.attention_dropout.p), out_dropout=float(m.output_dropout_prob),
                causal=str(getattr(m.attn_mask_type, "value", m.attn_mask_type)) == "causal")))
        elif isinstance(m, MLP):
            out.append(ModuleInfo("mlp", name, idx, dict(
                hidden=m.dense_h_to_4h.in_features, ffn=m.dense_h_to_4h.out_features,
                gated=bool(m.gated), dropout=float(m.output_dropout_prob),
                activation=str(getattr(m.activation_func, "name", "gelu")))))
        elif isinstance(m, (LayerNorm, RMSLayerNorm)):
            shape = getattr(m, "normalized_shape", None)
            dim = int(shape[-1]) if shape else 0
            out.append(ModuleInfo("norm", name, idx, dict(
                dim=dim, rms=isinstance(m, RMSLayerNorm), shift=getattr(m, "bias", None) is not None)))
        elif isinstance(m, LMLogits):
            out.append(ModuleInfo("logits", name, idx, dict(vocab=int(m.vocab_size))))
        elif isinstance(m, VocabEmbedding):
            rows, cols = m.weight.shape
            out.append(ModuleInfo("embedding", name, idx, dict(vocab=int(rows), hidden=int(cols))))
        if isinstance(m, Linear):
            out.append(ModuleInfo("linear", name, idx, dict(
                inp=int(m.in_features), out=int(m.out_features), parallel=m.parallel)))
    hidden_of_vocab = {m.dims["vocab"]: m.dims["hidden"] for m in out if m.kind == "embedding"}
    for m in out:  # LMLogits multiplies by the word embedding: its width is the embedding's
        if m.kind == "logits":
            m.dims["hidden"] = hidden_of_vocab.get(m.dims["vocab"], 0)
    if not any(m.kind == "logits" for m in out):  # an untied head: a Linear onto the vocabulary
        heads = [m for m in out if m.kind == "linear" and m.dims["out"] in hidden_of_vocab]
        if heads:
            h = heads[-1]
            out.append(ModuleInfo("logits", h.name, h.layer_idx, dict(
                vocab=h.dims["out"], hidden=h.dims["inp"], head_linear=True)))
    return out
