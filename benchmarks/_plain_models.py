"""The plain OneFlow GPT-2, BERT and Llama of ``bound_oneflow_step.py``.

Each is one ``nn.Module`` of plain parameters whose forward is a loop of functional ops on local
tensors, doing the work of libai's model at ``vs_torch.py``'s shapes (the same products, norms,
activations, masks and loss positions; the weights are initialised differently). No libai layer,
model, graph or engine code runs; ``ops="libai"`` imports only libai's written-out CPU layer norm,
mean (of the RMS norm) and cross entropy as functions, ``ops="oneflow"`` uses OneFlow's own ops.

Every model calls ``forward(*inputs)`` with the tensors of :func:`plain_inputs` and returns the
scalar loss. Query/key/value come out of their projections laid out per head
(``[heads, parts * head_size]``), as libai's attention lays them out.
"""
from typing import Any, Dict, List, Optional

import numpy as np


class PlainOps:
    """The op formulations that differ between ``--ops oneflow`` and ``--ops libai``."""

    def __init__(self, flow: Any, ops: str) -> None:
        self.flow, self.F, self.ops = flow, flow.nn.functional, ops
        if ops == "libai":
            from libai.layers.cross_entropy import _cpu_softmax_cross_entropy
            from libai.layers.layer_norm import _affine_layer_norm, trailing_mean

            self._ce, self._ln, self._mean = _cpu_softmax_cross_entropy, _affine_layer_norm, trailing_mean

    def norm(self, x: Any, w: Any, b: Any, eps: float) -> Any:
        if self.ops == "libai":
            return self._ln(eps).apply(x, w, b)
        return self.F.layer_norm(x, (x.shape[-1],), w, b, eps)

    def rms_norm(self, x: Any, w: Any, eps: float) -> Any:
        if self.ops == "libai":
            return x * self.flow.rsqrt(self._mean(x * x, [x.ndim - 1]) + eps) * w
        return x * self.flow.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w

    def cross_entropy(self, logits: Any, labels: Any, weights: Optional[Any] = None) -> Any:
        """Mean token loss of ``logits [..., vocab]``; with ``weights``, the mean over the
        positions weighted 1 (libai's LMLoss: every position's loss, then the weighted mean)."""
        logits, labels = logits.view(-1, logits.shape[-1]), labels.view(-1)
        if weights is None:
            if self.ops == "libai":
                return self._ce(logits, labels).mean()
            return self.F.cross_entropy(logits, labels)
        per_token = (self._ce(logits, labels) if self.ops == "libai"
                     else self.F.cross_entropy(logits, labels, reduction="none"))
        weights = weights.view(-1)
        return (per_token * weights).sum() / self.flow.clamp(weights.sum(), min=1.0)


class _Plain:
    """Helpers shared by the three models: parameters, dropout, heads, attention."""

    def __init__(self, flow: Any, ops: PlainOps, s: Dict[str, Any]) -> None:
        self.flow, self.F, self.ops, self.s = flow, flow.nn.functional, ops, s
        self.head_size = s["hidden"] // s["heads"]

    def param(self, *shape: int, value: Optional[float] = None) -> Any:
        flow = self.flow
        t = flow.full(shape, value) if value is not None else flow.randn(*shape) * 0.02
        return flow.nn.Parameter(t)

    def drop(self, x: Any, training: bool) -> Any:
        p = self.s["dropout"]
        return self.F.dropout(x, p=p, training=True) if training and p > 0 else x

    def heads(self, fused: Any, heads: int, parts: int) -> List[Any]:
        """``[b, t, heads * parts * d]`` -> ``parts`` tensors ``[b, heads, t, d]``."""
        b, t = fused.shape[0], fused.shape[1]
        per_head = fused.view(b, t, heads, parts * self.head_size).permute(0, 2, 1, 3)
        return [per_head] if parts == 1 else list(self.flow.chunk(per_head, parts, dim=-1))

    def attend(self, q: Any, k: Any, v: Any, training: bool, bias: Any = None,
               keep: Any = None) -> Any:
        """softmax(q k^T / sqrt(d) + bias, masked where not ``keep``) v -> ``[b, t, heads * d]``.

        ``k`` and ``v`` may have fewer heads than ``q`` (grouped-query attention): with
        ``ops="libai"`` each key/value head multiplies its group of query heads stacked as the
        rows of one product (libai's formulation), with ``ops="oneflow"`` it is repeated for
        each query head of its group first (the usual way)."""
        flow = self.flow
        heads, kv = q.shape[1], k.shape[1]
        if kv != heads and self.ops.ops == "libai":
            def product(a, shared, transpose_b=False):
                b, n, t = a.shape[0], a.shape[1], a.shape[2]
                out = flow.matmul(a.reshape(b, kv, (n // kv) * t, a.shape[3]), shared,
                                  transpose_b=transpose_b)
                return out.view(b, n, t, out.shape[-1])
        else:
            k, v = self._repeat(k, heads), self._repeat(v, heads)
            product = flow.matmul
        scores = product(q, k, transpose_b=True) * self.head_size ** -0.5
        if bias is not None:
            scores = scores + bias
        if keep is not None:
            scores = scores.masked_fill(flow.logical_not(keep), -10000.0)
        probs = self.drop(flow.softmax(scores, dim=-1), training)
        ctx = product(probs, v)
        b, t = ctx.shape[0], ctx.shape[2]
        return ctx.permute(0, 2, 1, 3).reshape(b, t, -1)

    @staticmethod
    def _repeat(x: Any, heads: int) -> Any:
        """``[b, kv, t, d]`` -> ``[b, heads, t, d]``, each head repeated for its group."""
        b, kv, t, size = x.shape
        if kv == heads:
            return x
        return x.unsqueeze(2).expand(b, kv, heads // kv, t, size).reshape(b, heads, t, size)

    def causal_bias(self, seq: int) -> Any:
        flow = self.flow
        lower = flow.tril(flow.ones(seq, seq, dtype=flow.bool))
        return flow.zeros(seq, seq).masked_fill(~lower, float("-inf")).view(1, 1, seq, seq)

    def mlp(self, m: Any, x: Any, act: Any) -> Any:
        """``fc2(act(fc1 x))`` with biases (GPT-2, BERT); dropout on the output."""
        inner = act(self.F.linear(x, m.fc1_w, m.fc1_b))
        return self.drop(self.F.linear(inner, m.fc2_w, m.fc2_b), m.training)


def _module(plain: _Plain, params: Dict[str, Any], forward: Any) -> Any:
    """An ``nn.Module`` holding ``params`` (Parameters and module lists) calling ``forward``."""
    class Plain(plain.flow.nn.Module):
        def __init__(self):
            super().__init__()
            for name, value in params.items():
                setattr(self, name, value)

        def forward(self, *inputs):
            return forward(self, *inputs)

    return Plain()


def _encoder_blocks(p: _Plain, forward: Any) -> Any:
    """GPT-2's / BERT's blocks: fused query/key/value, output and MLP linears with biases, two
    layer norms (``ln1``, ``ln2``); ``forward(block, x, mask)``."""
    h, ffn = p.s["hidden"], p.s["ffn"]

    def block() -> Any:
        return _module(p, dict(qkv_w=p.param(3 * h, h), qkv_b=p.param(3 * h, value=0.0),
                               out_w=p.param(h, h), out_b=p.param(h, value=0.0),
                               fc1_w=p.param(ffn, h), fc1_b=p.param(ffn, value=0.0),
                               fc2_w=p.param(h, ffn), fc2_b=p.param(h, value=0.0),
                               **_norm_params(p, "ln1", "ln2")), forward)

    return p.flow.nn.ModuleList([block() for _ in range(p.s["layers"])])


def _norm_params(p: _Plain, *names: str) -> Dict[str, Any]:
    h = p.s["hidden"]
    out = {}
    for name in names:
        out[f"{name}_w"], out[f"{name}_b"] = p.param(h, value=1.0), p.param(h, value=0.0)
    return out


def _self_attention(p: _Plain, m: Any, x: Any, **mask: Any) -> Any:
    """Fused q/k/v projection, attention, output projection and its dropout."""
    q, k, v = p.heads(p.F.linear(x, m.qkv_w, m.qkv_b), p.s["heads"], 3)
    return p.drop(p.F.linear(p.attend(q, k, v, m.training, **mask), m.out_w, m.out_b), m.training)


def build_plain_gpt(flow: Any, s: Dict[str, Any], seq: int, ops: str) -> Any:
    """GPT-2: token + position embeddings, pre-LN blocks (causal), final LN, tied LM head."""
    p = _Plain(flow, PlainOps(flow, ops), s)
    o = p.ops

    def block_forward(m, x, causal):
        x = x + _self_attention(p, m, o.norm(x, m.ln1_w, m.ln1_b, 1e-5), bias=causal)
        return x + p.mlp(m, o.norm(x, m.ln2_w, m.ln2_b, 1e-5), p.F.gelu)

    params = dict(wte=p.param(s["vocab"], s["hidden"]), wpe=p.param(seq, s["hidden"]),
                  blocks=_encoder_blocks(p, block_forward), **_norm_params(p, "lnf"))

    def forward(m, ids, labels):
        pos = flow.arange(ids.shape[1])
        x = p.drop(p.F.embedding(ids, m.wte) + p.F.embedding(pos, m.wpe), m.training)
        for blk in m.blocks:
            x = blk(x, m.causal)
        return o.cross_entropy(p.F.linear(o.norm(x, m.lnf_w, m.lnf_b, 1e-5), m.wte), labels)

    model = _module(p, params, forward)
    model.register_buffer("causal", p.causal_bias(seq))
    return model


def build_plain_bert(flow: Any, s: Dict[str, Any], seq: int, ops: str) -> Any:
    """BERT (post-LN, eps 1e-12): word + position + token-type embeddings, LN, dropout; blocks of
    ``LN(x + attention(x))``, ``LN(x + MLP(x))`` with the padding mask; the masked-LM head
    (dense, GELU, LN, logits on the tied word embedding plus a vocabulary bias); cross entropy
    at every position, averaged over the positions ``loss_mask`` marks (libai's LMLoss)."""
    p = _Plain(flow, PlainOps(flow, ops), s)
    o, h, eps = p.ops, s["hidden"], 1e-12

    def block_forward(m, x, keep):
        x = o.norm(x + _self_attention(p, m, x, keep=keep), m.ln1_w, m.ln1_b, eps)
        return o.norm(x + p.mlp(m, x, p.F.gelu), m.ln2_w, m.ln2_b, eps)

    params = dict(wte=p.param(s["vocab"], h), wpe=p.param(seq, h), wtt=p.param(2, h),
                  blocks=_encoder_blocks(p, block_forward), dense_w=p.param(h, h),
                  dense_b=p.param(h, value=0.0), vocab_b=p.param(s["vocab"], value=0.0),
                  **_norm_params(p, "lne", "lnh"))

    def forward(m, ids, labels, attention_mask, tokentype_ids, loss_mask):
        pos = flow.arange(ids.shape[1]).unsqueeze(0)
        x = (p.F.embedding(ids, m.wte) + p.F.embedding(pos, m.wpe)
             + p.F.embedding(tokentype_ids, m.wtt))
        x = p.drop(o.norm(x, m.lne_w, m.lne_b, eps), m.training)
        keep = (attention_mask != 0).unsqueeze(1).unsqueeze(1)  # [b, 1, 1, t]
        for blk in m.blocks:
            x = blk(x, keep)
        x = o.norm(p.F.gelu(p.F.linear(x, m.dense_w, m.dense_b)), m.lnh_w, m.lnh_b, eps)
        return o.cross_entropy(p.F.linear(x, m.wte, m.vocab_b), labels, loss_mask)

    return _module(p, params, forward)


def build_plain_llama(flow: Any, s: Dict[str, Any], seq: int, ops: str) -> Any:
    """Llama (RMS norm eps 1e-6, no biases, no dropout at these shapes): embeddings; pre-norm
    blocks of grouped-query causal attention (query and key rotated by rotary embeddings in the
    rotate-half layout, base 10000; grouped as :meth:`_Plain.attend` says)
    and a SwiGLU MLP ``down(silu(gate x) * up x)``; final RMS norm, untied LM head, cross
    entropy at every position."""
    p = _Plain(flow, PlainOps(flow, ops), s)
    o, h, d, eps = p.ops, s["hidden"], p.head_size, 1e-6
    heads, kv, ffn = s["heads"], s["kv_heads"], s["ffn"]
    inv_freq = 1.0 / (10000.0 ** (flow.arange(0, d, 2).to(flow.float32) / d))
    angles = flow.arange(seq).to(flow.float32).unsqueeze(1) * inv_freq.unsqueeze(0)
    angles = flow.cat([angles, angles], dim=-1)

    def rotate(x, cos, sin):
        half = x.shape[-1] // 2
        return x * cos + flow.cat([-x[..., half:], x[..., :half]], dim=-1) * sin

    def block_forward(m, x, causal, cos, sin):
        a = o.rms_norm(x, m.ln1_w, eps)
        q = p.heads(p.F.linear(a, m.q_w), heads, 1)[0]
        k, v = p.heads(p.F.linear(a, m.kv_w), kv, 2)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        x = x + p.F.linear(p.attend(q, k, v, m.training, bias=causal), m.out_w)
        a = o.rms_norm(x, m.ln2_w, eps)
        return x + p.F.linear(p.F.silu(p.F.linear(a, m.gate_w)) * p.F.linear(a, m.up_w), m.down_w)

    def block() -> Any:
        return _module(p, dict(
            ln1_w=p.param(h, value=1.0), q_w=p.param(h, h), kv_w=p.param(2 * kv * d, h),
            out_w=p.param(h, h), ln2_w=p.param(h, value=1.0), gate_w=p.param(ffn, h),
            up_w=p.param(ffn, h), down_w=p.param(h, ffn)), block_forward)

    params = dict(wte=p.param(s["vocab"], h), head_w=p.param(s["vocab"], h),
                  lnf_w=p.param(h, value=1.0),
                  blocks=flow.nn.ModuleList([block() for _ in range(s["layers"])]))

    def forward(m, ids, labels):
        x = p.F.embedding(ids, m.wte)
        for blk in m.blocks:
            x = blk(x, m.causal, m.cos, m.sin)
        return o.cross_entropy(p.F.linear(o.rms_norm(x, m.lnf_w, eps), m.head_w), labels)

    model = _module(p, params, forward)
    model.register_buffer("causal", p.causal_bias(seq))
    model.register_buffer("cos", flow.cos(angles))
    model.register_buffer("sin", flow.sin(angles))
    return model


BUILDERS = {"gpt2": build_plain_gpt, "bert": build_plain_bert, "llama": build_plain_llama}


def plain_inputs(model: str, data: Dict[str, Any]) -> List[Any]:
    """The NumPy arrays the plain ``model`` takes, in order, from ``vs_torch.make_batch``'s batch:
    libai's inputs (causal models: labels shifted by one; BERT: every token labelled, the loss
    kept at the masked positions, an all-ones attention mask and token type 0)."""
    ids = data["ids"]
    if model == "bert":
        return [ids, ids, np.ones_like(ids), np.zeros_like(ids), data["masked"].astype(np.float32)]
    return [ids, np.roll(ids, -1, axis=1)]
