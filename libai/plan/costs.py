"""Per-layer costs: parameters, activation coefficients and FLOPs of each ``layer_idx``.

The memory and time plans of any layout are sums of these over the layers of a stage, so the
model is read once and a layout search only adds numbers.

Activations are the tensors OneFlow's autograd keeps for the backward pass of libai's layers
(composite CPU/GPU-agnostic ops; the fused CUDA kernels keep slightly less), per token:

- attention: the input of the projection (replicated over tensor parallelism), the q/k/v
  projections and the context fed to the output projection (split over heads), the softmax
  output per query/key pair and head (plus dropout's output and 1-byte mask when attention
  dropout is on), the output dropout's 1-byte mask;
- MLP: its input, what the activation function keeps (``ACTIVATION_KEEPS``) and the second
  projection's input (split); a gated MLP also both factors of its product; the dropout mask;
- each norm: one normalised tensor; the composite norms (RMSNorm, a layer norm without shift, and
  under tensor parallelism every layer norm off CUDA, see ``libai.layers.LayerNorm``) keep two;
  embeddings: the int64 ids and the dropout mask;
- the LM head: its input, the logits (compute dtype) and the fp32 softmax the cross entropy
  keeps, and during backward one fp32 gradient of the logits (a transient). Under tensor
  parallelism the cross entropy over the split vocabulary runs as separate max / subtract /
  exp / sum / divide steps with all-reduces between them, and holds three more fp32 copies
  of the local logits in the forward and one more in the backward (measured on OneFlow 0.9,
  GPT-2 tiny at TP=2: the loss grows the footprint by 4 × and its backward by 2 × the local
  logits' bytes, against 2 × and 0 × at TP=1, where the backward reuses the forward's);
- any other libai ``Linear``: its input;
- while a layer runs backward, two gradients of its widest intermediate live at once (the
  attention scores, or the MLP's inner activations): a workspace counted once, not per layer.
  A masked attention without the fused kernel adds what OneFlow 0.9's ``masked_fill`` gradient
  makes, ``where(mask, zeros_like(x), dy)``: a zero-filled score tensor (compute dtype) and the
  boolean mask broadcast to the scores' full shape (1 byte each).

Where the layers fall back to composite ops (any device but CUDA: ``libai.layers`` picks fused
kernels on CUDA only), OneFlow 0.9 keeps more, measured module by module on the CPU: batched
matmuls keep contiguous copies of their permuted q/k/v inputs. Unless the fused
scale-mask-softmax kernel runs (CUDA with ``scale_mask_softmax_fusion``), a masked attention
keeps one more score tensor and a full-size boolean mask (measured: scale → masked_fill →
softmax keeps 9 bytes per fp32 score, not 4).

Each term is a number of elements per token (``*_e``, in the compute dtype: 4 bytes, 2 with
AMP), of bytes per token (``*_1``: masks, ids), or of elements per token and key (``score_*``:
attention matrices). "rep" terms are replicated over the tensor-parallel ranks, "split" terms
are divided among them.
"""
from dataclasses import dataclass, field
from typing import Dict, List

from libai.plan.shapes import ModelShape, ModuleInfo

__all__ = ["Activation", "LayerCost", "layer_costs"]


@dataclass
class Activation:
    """Activation coefficients (see the module docstring)."""

    rep_e: float = 0.0
    split_e: float = 0.0
    rep_1: float = 0.0
    split_1: float = 0.0
    split_4: float = 0.0
    score_e: float = 0.0
    score_1: float = 0.0
    split_4_tp: float = 0.0  # fp32 elements per token kept only when tensor parallel, split
    rep_e_tp: float = 0.0  # elements per token kept only when tensor parallel, replicated
    sample_e: float = 0.0  # elements per sample (modules counted by the shape pass), replicated
    sample_1: float = 0.0  # bytes per sample (their masks, indices), replicated

    def bytes(self, batch: int, seq: int, elem: int, tp: int) -> float:
        """Bytes one tensor-parallel rank keeps for ``batch`` samples of ``seq`` tokens."""
        per_token = (elem * (self.rep_e + self.split_e / tp) + self.rep_1 + self.split_1 / tp
                     + 4 * self.split_4 / tp
                     + ((4 * self.split_4_tp / tp + elem * self.rep_e_tp) if tp > 1 else 0.0))
        scores = (elem * self.score_e + self.score_1) / tp
        per_sample = elem * self.sample_e + self.sample_1
        return batch * seq * per_token + batch * seq * seq * scores + batch * per_sample

    def add(self, other: "Activation", tokens: float = 1.0, pairs: float = 1.0) -> None:
        """Add ``other``, its per-token terms × ``tokens`` and its score terms × ``pairs`` (the
        share of the planned tokens and query·key pairs a module saw in the shape pass)."""
        for name in self.__dataclass_fields__:
            k = pairs if name.startswith("score") else 1.0 if name.startswith("sample") else tokens
            setattr(self, name, getattr(self, name) + k * getattr(other, name))


@dataclass
class LayerCost:
    """What layer index ``layer`` costs (``block``: inside a transformer block, which activation
    checkpointing recomputes; ``other``: embeddings, heads, norms outside blocks)."""

    layer: int
    param_rep: float = 0.0  # bytes of parameters replicated over tensor parallelism
    param_split: float = 0.0  # bytes of parameters split over it (logical total)
    train_rep: float = 0.0  # bytes of trainable parameters (replicated / split)
    train_split: float = 0.0
    block: Activation = field(default_factory=Activation)
    other: Activation = field(default_factory=Activation)
    block_hidden: int = 0  # a checkpointed block keeps only its input: hidden elements per token
    num_blocks: int = 0
    flops_rep: float = 0.0  # forward FLOPs per token, replicated matmuls
    flops_split: float = 0.0  # forward FLOPs per token, tensor-parallel matmuls
    block_flops_rep: float = 0.0  # the part of the three above inside blocks (recomputed)
    block_flops_split: float = 0.0
    block_flops_score: float = 0.0
    flops_head: float = 0.0  # forward FLOPs per token of the LM head (never recomputed), split
    flops_sample: float = 0.0  # forward FLOPs per sample of modules the shape pass counted
    block_flops_sample: float = 0.0  # the part of it inside blocks (recomputed)
    flops_score: float = 0.0  # forward FLOPs per token and key (attention), split
    logits_transient: float = 0.0  # fp32 elements per token of the logits' gradient, split
    logits_transient_tp: float = 0.0  # more of them when tensor parallel (split vocabulary)
    vocab_table: float = 0.0  # bytes of a trainable [vocab, hidden] table an LM head reads (split)
    tp_allreduce_e: float = 0.0  # elements per token all-reduced over tensor parallelism (fwd)
    work_score: float = 0.0  # backward workspace: heads of the widest attention (2 score grads)
    work_split: float = 0.0  # backward workspace: inner size of the widest MLP (2 grads)
    work_mask: float = 0.0  # backward workspace: heads of the widest composite masked attention
    work_sample: float = 0.0  # backward workspace of the traced modules, elements per sample (workspace)
    traced: bool = False  # the shape pass planned modules of this layer (libai.plan.trace)

    def workspace(self, batch: int, seq: int, elem: int, tp: int) -> float:
        """Bytes of the gradients that live together while this layer runs backward: two
        score-sized ones in attention (a composite masked one also ``masked_fill``'s zeros and
        full-size mask), or two inner-sized ones in the MLP; in the modules the shape pass planned,
        the gradient of a module's output and the one it computes for its input (two of the
        output's size) on top of what the modules up to it keep (the later ones' kept tensors are
        freed when it runs backward), beyond the forward's kept total: ``work_sample``."""
        scores = batch * seq * seq * (2.0 * elem * self.work_score + (elem + 1.0) * self.work_mask)
        traced = elem * batch * self.work_sample
        return max(scores / tp, 2.0 * elem * batch * self.work_split * seq / tp, traced)


def _attention(d: Dict, composite: bool) -> Activation:
    a, kv, hd, h = d["heads"], d["kv_heads"], d["head_size"], d["hidden"]
    dropout = d["attn_dropout"] > 0
    act = Activation(
        rep_e=h * (2 if d["cross"] else 1),
        split_e=(a + 2 * kv) * hd + a * hd,
        rep_1=h if d["out_dropout"] > 0 else 0.0,
        score_e=a * (2 if dropout else 1),
        score_1=a if dropout else 0.0,
    )
    if composite:
        # measured on OneFlow 0.9 (CPU): the batched matmuls keep contiguous copies of their
        # permuted inputs (q·kᵀ: the whole projection, p·v: the values)
        act.split_e += (a + 2 * kv) * hd + kv * hd
    if d.get("masked", True) and not d.get("fused_softmax"):
        # scale -> masked_fill -> softmax keeps one more score tensor and a full-size bool mask
        act.score_e += a
        act.score_1 += a
    return act


def _norm(d: Dict, composite: bool) -> Activation:
    """A norm keeps its normalised input; OneFlow's composite ops keep one tensor more. Off
    CUDA a layer norm with scale and shift writes its gradient out (one tensor kept) except under
    tensor parallelism, where it runs the composite."""
    dim = d["dim"]
    if d.get("rms") or (composite and not d.get("shift", True)):
        return Activation(rep_e=2 * dim)
    return Activation(rep_e=dim, rep_e_tp=dim if composite else 0.0)


#: Tensors of the inner size an activation function keeps for backward: OneFlow's GELU and
#: ReLU one; libai's composite SiLU (x, sigmoid) and quick GELU two; the tanh GELU five.
ACTIVATION_KEEPS = {"gelu": 1, "relu": 1, "silu": 2, "swish": 2, "quick_gelu": 2, "gelu_tanh": 5,
                    "gelu_new": 5, "tanh": 1, "sigmoid": 1, "identity": 0}


def _mlp(d: Dict) -> Activation:
    """First projection's input, what the activation keeps, the second projection's input; a
    gated MLP also keeps both factors of its product."""
    h, f = d["hidden"], d["ffn"]
    keeps = ACTIVATION_KEEPS.get(d.get("activation", "gelu"), 1)
    inner = keeps + (3 if d["gated"] else 1)
    return Activation(rep_e=h, split_e=f * inner, rep_1=h if d["dropout"] > 0 else 0.0)


def _within(name: str, prefixes: List[str]) -> bool:
    return any(name.startswith(p + ".") for p in prefixes)


def layer_costs(shape: ModelShape, num_layers: int, composite: bool = False) -> List[LayerCost]:
    """One :class:`LayerCost` per layer index ``0 .. num_layers-1`` (index ``-k`` counts from
    the end, as the layout does). ``composite``: the layers run their composite (non-CUDA)
    ops, which keep more (see the module docstring)."""
    costs = [LayerCost(i) for i in range(num_layers)]

    def at(idx: int) -> LayerCost:
        return costs[idx % num_layers] if -num_layers <= idx < num_layers else costs[-1]

    vocabs = {m.dims["vocab"] for m in shape.of_kind("logits")}
    for p in shape.params:
        c = at(p.layer_idx)
        if p.trainable and p.split_axis == 0 and len(p.shape) == 2 and p.shape[0] in vocabs:
            c.vocab_table += p.numel * p.itemsize
        if p.split_axis is None:
            c.param_rep += p.numel * p.itemsize
            c.train_rep += p.numel * p.itemsize if p.trainable else 0
        else:
            c.param_split += p.numel * p.itemsize
            c.train_split += p.numel * p.itemsize if p.trainable else 0
    blocks = [m.name for m in shape.of_kind("block")]
    for m in shape.of_kind("block"):
        at(m.layer_idx).num_blocks += 1
        at(m.layer_idx).block_hidden += m.dims["hidden"]
    inner = [m.name for m in shape.modules if m.kind in ("attention", "mlp", "logits")]
    for m in shape.modules:
        _add_module(at(m.layer_idx), m, _within(m.name, blocks), _within(m.name, inner), composite)
    traced = shape.trace.modules if shape.trace is not None else []
    total, before = sum(t.kept_e + t.kept_1 / 4 for t in traced), 0.0  # bytes kept as fp32 elements
    for t in traced:  # in the order of the forward
        c, in_block = at(t.layer_idx), _within(t.name, blocks)
        c.traced = True
        # when t runs backward, what the modules after it kept is freed: the workspace is what
        # t's two gradients add to the tensors kept up to t, beyond the forward's total
        before += t.kept_e + t.kept_1 / 4
        c.work_sample = max(c.work_sample, before + t.work_e - total)
        c.flops_sample += t.flops
        c.block_flops_sample += t.flops if in_block else 0.0
        (c.block if in_block else c.other).add(Activation(sample_e=t.kept_e, sample_1=t.kept_1))
    return costs


def _add_module(c: LayerCost, m: ModuleInfo, in_block: bool, in_inner: bool, composite: bool) -> None:
    act = c.block if in_block else c.other
    d = m.dims
    # the share of the planned tokens (and query·key pairs) this module saw in the shape pass:
    # 1 unless the pass ran (Swin's later stages, a classifier head reading one token)
    t, q = float(d.get("token_share", 1.0)), float(d.get("pair_share", 1.0))
    if m.kind == "attention":
        act.add(_attention(d, composite), t, q)
        c.flops_score += 4 * d["heads"] * d["head_size"] * q
        c.block_flops_score += 4 * d["heads"] * d["head_size"] * q if in_block else 0
        c.tp_allreduce_e += d["hidden"]
        c.work_score = max(c.work_score, d["heads"] * q)
        if d.get("masked", True) and not d.get("fused_softmax"):  # scale -> masked_fill -> softmax
            c.work_mask = max(c.work_mask, d["heads"] * q)
    elif m.kind == "mlp":
        c.work_split = max(c.work_split, d["ffn"] * t)
        act.add(_mlp(d), t)
        c.tp_allreduce_e += d["hidden"]
    elif m.kind == "norm":
        act.add(_norm(d, composite), t)
    elif m.kind == "embedding":
        act.add(Activation(rep_1=8 + 1 * d["hidden"]), t)
        c.tp_allreduce_e += d["hidden"]
    elif m.kind == "logits":  # a head that is a Linear counts its input and FLOPs as one
        linear = bool(d.get("head_linear"))
        # the vocabulary-parallel cross entropy (measured, OneFlow 0.9) holds three more fp32
        # copies of the local logits in the forward and one more in the backward
        act.add(Activation(rep_e=0 if linear else d["hidden"], split_e=d["vocab"], split_4=d["vocab"],
                           split_4_tp=3 * d["vocab"]), t)
        c.logits_transient += d["vocab"] * t
        c.logits_transient_tp += d["vocab"] * t
        c.flops_head += 0 if linear else 2 * d["vocab"] * d["hidden"] * t
    elif m.kind == "linear":
        flops = 2 * d["inp"] * d["out"] * t
        if d["parallel"] == "data":
            c.flops_rep += flops
            c.block_flops_rep += flops if in_block else 0
        else:
            c.flops_split += flops
            c.block_flops_split += flops if in_block else 0
        if not in_inner:
            act.add(Activation(rep_e=d["inp"]) if d["parallel"] != "row" else Activation(split_e=d["inp"]), t)
