#!/usr/bin/env python
"""The smallest plain OneFlow decoder (key/value cache) against libai's ``generate``, same weights.

GPT-2 or Llama, greedy or beam search:

    .venv/bin/python benchmarks/bound_oneflow_decode.py [--repeats 3]
    .venv/bin/python benchmarks/bound_oneflow_decode.py --model llama --kv-heads 2
    .venv/bin/python benchmarks/bound_oneflow_decode.py --beams 3
    .venv/bin/python benchmarks/bound_oneflow_decode.py --quick        # smoke run

Issue 38, item 5, for generation: every configuration ``vs_transformers_generation.py``
measures (its options: ``--model``, ``--kv-heads``, ``--beams`` and the sizes), built by libai
with a seed; the plain program takes its weights as local tensors and decodes with nothing but
OneFlow ops: a prefill over the prompt with a causal bias, then one token at a time.

- GPT-2 (6 layers, hidden 512, 8 heads, FFN 2048, vocabulary 8192, tied LM head): layer norm,
  the fused per-head query/key/value product, exact GELU.
- Llama (``--model llama``; the same sizes, SwiGLU width about 8/3 x hidden, untied LM head):
  RMS norm, the query and key/value products, rotary positions, grouped-query attention whose
  cache holds ``--kv-heads`` heads (a group's query heads share one product with their key/value
  head), SwiGLU.
- Greedy: the argmax of the last position's logits. Beam search (``--beams N``): each prompt
  repeated N times; per step log-softmax, plus the beam's running score, the best N over
  N x vocabulary per prompt, the cache rows reordered to their parent beams by ``index_select``;
  the best beam at the end. That is libai's beam search (Hugging Face's) with no end-of-sequence
  id, which is what both sides run here: libai's extra bookkeeping only matters when a
  hypothesis ends early. Its top 2N candidates, of which the N best unfinished keep running, are
  the top N when none ends; its finished set takes every beam at the maximum length, scored by
  ``sum log p / generated ** length_penalty``, one divisor for all, so the order (and the best
  beam) is the running order; its early stop cannot trigger before that (no finished hypothesis).

Both sides ``import libai`` first (the same BLAS route and threading). One fresh process per
(side, batch), the first side alternating per turn; each warms up with 4 tokens, then times one
generation of ``--new-tokens`` tokens by the wall clock and the process's CPU time. The tokens of
both sides must agree (the last column: "same", or where they first differ).
"""
import argparse
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ChildFailed, Spread, format_table, run_child  # noqa: E402
from vs_transformers_generation import (  # noqa: E402
    add_generation_arguments, check_generation_arguments, first_difference, llama_intermediate_size,
    make_prompts, shrink_for_quick)

SIDES = ("bound", "libai")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_generation_arguments(p)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--quick", action="store_true", help="2 layers of width 64, 8 new tokens, batch 1, 1 turn")
    p.add_argument("--child", choices=SIDES, help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        shrink_for_quick(args, batches="1")
    check_generation_arguments(p, args)
    return args


def _libai_model(args: argparse.Namespace) -> Any:
    import oneflow as flow

    from libai.models import GPTForPreTraining, LlamaForCausalLM

    flow.manual_seed(0)
    positions = args.prompt_len + args.new_tokens + 4
    if args.model == "llama":
        model = LlamaForCausalLM(dict(
            vocab_size=args.vocab, hidden_size=args.hidden, hidden_layers=args.layers,
            num_attention_heads=args.heads, num_key_value_heads=args.kv_heads,
            intermediate_size=llama_intermediate_size(args.hidden), max_position_embeddings=positions))
    else:
        model = GPTForPreTraining(dict(
            vocab_size=args.vocab, hidden_size=args.hidden, hidden_layers=args.layers,
            num_attention_heads=args.heads, intermediate_size=4 * args.hidden,
            max_seq_length=positions, embedding_dropout_prob=0.0,
            attention_dropout_prob=0.0, hidden_dropout_prob=0.0))
    return model.eval()


# ---------------------------------------------------------------------------------------------
# The plain decoders: ``step(ids, start, cache)`` -> the last position's logits [rows, vocab]
# ---------------------------------------------------------------------------------------------
def _causal_bias(flow: Any, t: int, group: int) -> Any:
    """The prefill's score bias (0, or -inf above the diagonal), [1, 1, group * t, t]: the
    queries of a group's heads are stacked on the rows (see :func:`_attend`); None for t == 1."""
    if t == 1:
        return None
    keep = flow.tril(flow.ones(t, t, dtype=flow.bool))
    return flow.zeros(t, t).masked_fill(~keep, float("-inf")).repeat(group, 1).view(1, 1, group * t, t)


def _attend(flow: Any, q: Any, k: Any, v: Any, cache: Dict[int, Any], i: int, bias: Any) -> Any:
    """Layer ``i``'s attention: queries [b, heads, t, d] over its cache plus the new keys and
    values [b, kv_heads, t, d] (stored in the cache as they are: kv_heads heads). Each key/value
    head serves its group of consecutive query heads: the group's queries become the rows of
    one product instead of the keys being copied per head. Returns [b, t, heads * d]."""
    if i in cache:
        k, v = flow.cat([cache[i][0], k], dim=2), flow.cat([cache[i][1], v], dim=2)
    cache[i] = (k, v)
    b, heads, t, d = q.shape
    scores = flow.matmul(q.reshape(b, k.shape[1], -1, d), k, transpose_b=True, alpha=d ** -0.5)
    if bias is not None:
        scores = scores + bias
    ctx = flow.matmul(flow.softmax(scores, dim=-1), v)
    return ctx.view(b, heads, t, d).permute(0, 2, 1, 3).reshape(b, t, heads * d)


def _gpt2_step(flow: Any, w: Dict[str, Any], args: argparse.Namespace) -> Any:
    """libai's GPT-2 (names ``GPT_model.`` stripped): layer norm, the fused per-head
    query/key/value product, exact GELU, the LM head tied to the word embedding."""
    F = flow.nn.functional
    wte, wpe = w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"]
    hidden, heads = wte.shape[1], args.heads
    d = hidden // heads

    def norm(x, name):
        return F.layer_norm(x, (hidden,), w[name + ".weight"], w[name + ".bias"], 1e-5)

    def lin(x, name):
        return F.linear(x, w[name + ".weight"], w[name + ".bias"])

    def step(ids, start, cache):
        b, t = ids.shape
        x = F.embedding(ids, wte) + F.embedding(flow.arange(start, start + t), wpe)
        bias = _causal_bias(flow, t, 1)
        for i in range(args.layers):
            p = f"transformer.layers.{i}."
            qkv = lin(norm(x, p + "input_layernorm"), p + "self_attention.query_key_value")
            q, k, v = flow.chunk(qkv.view(b, t, heads, 3 * d).permute(0, 2, 1, 3), 3, dim=-1)
            x = x + lin(_attend(flow, q, k, v, cache, i, bias), p + "self_attention.dense")
            inner = F.gelu(lin(norm(x, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h"))
            x = x + lin(inner, p + "mlp.dense_4h_to_h")
        return F.linear(norm(x[:, -1], "transformer.final_layernorm"), wte)

    return step


def _llama_step(flow: Any, w: Dict[str, Any], args: argparse.Namespace, eps: float,
                theta: float) -> Any:
    """libai's Llama (names ``model.`` stripped): RMS norm, bias-free query and key/value
    products (key/value laid out per key/value head), rotary positions (first half of a head
    paired with the second), grouped-query attention, SwiGLU, the untied ``lm_head``."""
    F = flow.nn.functional
    emb = w["embed_tokens.weight"]
    head = w.get("lm_head.weight", emb)
    hidden, heads, kv_heads = emb.shape[1], args.heads, args.kv_heads
    d = hidden // heads
    angles = flow.arange(args.prompt_len + args.new_tokens + 4).to(flow.float32).unsqueeze(1) * (
        1.0 / theta ** (flow.arange(0, d, 2).to(flow.float32) / d)).unsqueeze(0)
    cos, sin = flow.cos(flow.cat([angles, angles], dim=-1)), flow.sin(flow.cat([angles, angles], dim=-1))

    def norm(x, name):
        return x * flow.rsqrt((x * x).mean(dim=-1, keepdim=True) + eps) * w[name + ".weight"]

    def lin(x, name):
        return F.linear(x, w[name + ".weight"])

    def rotate(x, c, s):
        return x * c + flow.cat([-x[..., d // 2:], x[..., : d // 2]], dim=-1) * s

    def step(ids, start, cache):
        b, t = ids.shape
        x = F.embedding(ids, emb)
        c, s = cos[start:start + t], sin[start:start + t]
        bias = _causal_bias(flow, t, heads // kv_heads)
        for i in range(args.layers):
            p = f"layers.{i}."
            h = norm(x, p + "input_layernorm")
            q = lin(h, p + "self_attention.query").view(b, t, heads, d).permute(0, 2, 1, 3)
            kv = lin(h, p + "self_attention.key_value").view(b, t, kv_heads, 2 * d).permute(0, 2, 1, 3)
            k, v = flow.chunk(kv, 2, dim=-1)
            ctx = _attend(flow, rotate(q, c, s), rotate(k, c, s), v, cache, i, bias)
            x = x + lin(ctx, p + "self_attention.dense")
            h = norm(x, p + "post_attention_layernorm")
            gate, up = lin(h, p + "mlp.dense_h_to_4h"), lin(h, p + "mlp.dense_h_to_4h_linear")
            x = x + lin(gate * flow.sigmoid(gate) * up, p + "mlp.dense_4h_to_h")  # SwiGLU
        return F.linear(norm(x[:, -1], "norm"), head)

    return step


def _greedy(flow: Any, step: Any, ids: Any, new_tokens: int, beams: int) -> Any:
    cache: Dict[int, Any] = {}
    out, feed, start = [ids], ids, 0
    for _ in range(new_tokens):
        token = step(feed, start, cache).argmax(dim=-1).view(-1, 1)
        start += feed.shape[1]
        out.append(token)
        feed = token
    return flow.cat(out, dim=1)


_NEG = -1.0e9  # libai's starting score of beams 2..N (identical to beam 1 at first)


def _beam_search(flow: Any, step: Any, ids: Any, new_tokens: int, beams: int) -> Any:
    """Each prompt repeated per beam; per step the beams' scores plus the log-softmax of the
    logits, the best ``beams`` over beams x vocabulary per prompt, the cache rows reordered to
    the beams they extend; the best beam at the end."""
    b, length = ids.shape
    tokens = ids.unsqueeze(1).expand(b, beams, length).reshape(b * beams, length)
    scores = flow.zeros(b, beams)
    scores[:, 1:] = _NEG
    offsets = flow.arange(b).view(b, 1) * beams
    cache: Dict[int, Any] = {}
    feed, start = tokens, 0
    for _ in range(new_tokens):
        log_probs = flow.log_softmax(step(feed, start, cache), dim=-1)
        vocab = log_probs.shape[-1]
        total = (log_probs.view(b, beams, vocab) + scores.unsqueeze(-1)).view(b, beams * vocab)
        scores, index = flow.topk(total, beams, dim=-1)
        parent = (index // vocab + offsets).view(-1)
        start += feed.shape[1]
        feed = (index % vocab).view(-1, 1)
        tokens = flow.cat([flow.index_select(tokens, 0, parent), feed], dim=1)
        for i, (k, v) in cache.items():
            cache[i] = (flow.index_select(k, 0, parent), flow.index_select(v, 0, parent))
    return tokens.view(b, beams, -1)[:, 0]


def plain_generator(flow: Any, weights: Dict[str, Any], args: argparse.Namespace,
                    settings: Dict[str, Any]) -> Any:
    """``generate(prompts, new_tokens)`` -> token rows: greedy (``--beams 1``) or beam search
    with a key/value cache, from libai's ``weights`` (``settings``: the Llama's norm eps and
    rotary base)."""
    if args.model == "llama":
        w = {k[len("model."):] if k.startswith("model.") else k: v for k, v in weights.items()}
        step = _llama_step(flow, w, args, settings["rms_norm_eps"], settings["rope_theta"])
    else:
        step = _gpt2_step(flow, {k.replace("GPT_model.", ""): v for k, v in weights.items()}, args)
    search = _beam_search if args.beams > 1 else _greedy

    def generate(prompts, new_tokens):
        with flow.no_grad():
            ids = flow.tensor(prompts, dtype=flow.int64)
            return search(flow, step, ids, new_tokens, args.beams).numpy().tolist()

    return generate


def child_main(args: argparse.Namespace) -> None:
    import json

    import libai  # noqa: F401  (the BLAS route and threading, for both sides)
    import oneflow as flow

    from libai.utils import distributed as dist

    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        model = _libai_model(args)
    if args.child == "bound":
        weights = {k: v.to_local() if v.is_global else v for k, v in model.state_dict().items()}
        settings = dict(model.config) if args.model == "llama" else {}
        del model
        generate = plain_generator(flow, weights, args, settings)
    else:
        def generate(prompts, n):
            return model.generate(flow.tensor(prompts, dtype=flow.int64), max_new_tokens=n,
                                  num_beams=args.beams).numpy().tolist()
    prompts = make_prompts(args.batch, args.prompt_len, args.vocab, 0)
    generate(prompts, 4)
    wall, cpu = time.perf_counter(), time.process_time()
    tokens = generate(prompts, args.new_tokens)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    with open(args.result_file, "w") as f:
        json.dump({"seconds": wall, "cpu_seconds": cpu, "tokens": tokens}, f)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    runs: Dict[Any, List[Dict[str, Any]]] = {}
    with tempfile.TemporaryDirectory(prefix="bound_decode_") as workdir:
        try:
            for turn in range(args.repeats):
                for batch in args.batch_sizes:
                    for side in (SIDES if turn % 2 == 0 else SIDES[::-1]):
                        path = os.path.join(workdir, f"{side}-{batch}.json")
                        argv = [os.path.abspath(__file__), "--child", side, "--batch", str(batch),
                                "--result-file", path]
                        for name in ("prompt_len", "new_tokens", "layers", "hidden", "heads", "vocab",
                                     "model", "kv_heads", "beams"):
                            argv += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
                        r = run_child(argv, path, f"{side} batch {batch}", 1, args.timeout)
                        runs.setdefault((side, batch), []).append(r)
                        print(f"  turn {turn + 1}, batch {batch}, {side}: "
                              f"{batch * args.new_tokens / r['seconds']:.1f} tokens/s", flush=True)
        except ChildFailed as e:
            raise SystemExit(f"bound_oneflow_decode: {e}")
    rows = []
    for batch in args.batch_sizes:
        reference = runs[("libai", batch)][0]["tokens"]
        diff = [first_difference(r["tokens"], reference) for r in runs[("bound", batch)]]
        pairs = list(zip(runs[("bound", batch)], runs[("libai", batch)]))
        rows.append([batch] + [Spread.of([batch * args.new_tokens / r[key] for r in runs[(side, batch)]]).format()
                               for side in SIDES for key in ("seconds", "cpu_seconds")]
                    + [Spread.of([b["seconds"] / a["seconds"] for b, a in pairs]).format(2),
                       Spread.of([b["cpu_seconds"] / a["cpu_seconds"] for b, a in pairs]).format(2),
                       "same" if not any(diff) else next(d for d in diff if d)])
    print()
    family = f"Llama ({args.kv_heads} key/value heads)" if args.model == "llama" else "GPT-2"
    search = "greedy" if args.beams == 1 else f"beam search of {args.beams}"
    print(f"{family} {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocabulary {args.vocab}; "
          f"{search}, prompt {args.prompt_len}, {args.new_tokens} new tokens, key/value cache; "
          f"OMP_NUM_THREADS=1; {args.repeats} turn(s)")
    print(format_table(["batch", "plain tok/s (wall)", "plain tok/CPU s", "libai tok/s (wall)",
                        "libai tok/CPU s", "libai / plain (wall)", "libai / plain (CPU)", "tokens"], rows))


if __name__ == "__main__":
    main()
