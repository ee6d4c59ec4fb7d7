#!/usr/bin/env python
"""The smallest OneFlow program decoding greedily with a key/value cache, against libai's
``generate`` on the same GPT-2 weights.

    .venv/bin/python benchmarks/bound_oneflow_decode.py [--repeats 3]
    .venv/bin/python benchmarks/bound_oneflow_decode.py --quick        # smoke run

Issue 38, item 5, for generation: the GPT-2 of ``vs_transformers_generation.py`` (6 layers,
hidden 512, 8 heads, FFN 2048, vocabulary 8192, tied LM head), built by libai with a seed; the
plain program takes its weights as local tensors and decodes with nothing but OneFlow ops (a
prefill over the prompt with a causal bias, then one token at a time: layer norm, the fused
per-head query/key/value product, the cache concatenation, scores, softmax, the two products
of the MLP with exact GELU, the LM head, argmax). Both sides ``import libai`` first (the same
BLAS route and threading). One fresh process per (side, batch), the first side alternating per
turn; each warms up with 4 tokens, then times one generation of ``--new-tokens`` tokens by the
wall clock and the process's CPU time. The tokens of both sides must agree.
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
    add_generation_arguments, first_difference, make_prompts, shrink_for_quick)

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
    args.batch_sizes = [int(b) for b in args.batches.split(",") if b.strip()]
    return args


def _libai_model(args: argparse.Namespace) -> Any:
    import oneflow as flow

    from libai.models import GPTForPreTraining

    flow.manual_seed(0)
    model = GPTForPreTraining(dict(
        vocab_size=args.vocab, hidden_size=args.hidden, hidden_layers=args.layers,
        num_attention_heads=args.heads, intermediate_size=4 * args.hidden,
        max_seq_length=args.prompt_len + args.new_tokens + 4, embedding_dropout_prob=0.0,
        attention_dropout_prob=0.0, hidden_dropout_prob=0.0))
    return model.eval()


def plain_generator(flow: Any, weights: Dict[str, Any], heads: int, layers: int) -> Any:
    """Greedy decoding with a key/value cache, from ``weights`` (libai's GPT-2 names)."""
    F = flow.nn.functional
    w = {k.replace("GPT_model.", ""): v for k, v in weights.items()}
    wte, wpe = w["embeddings.word_embeddings.weight"], w["embeddings.position_embeddings.weight"]
    hidden = wte.shape[1]
    d = hidden // heads

    def norm(x, name):
        return F.layer_norm(x, (hidden,), w[name + ".weight"], w[name + ".bias"], 1e-5)

    def lin(x, name):
        return F.linear(x, w[name + ".weight"], w[name + ".bias"])

    def step(ids, start, cache):
        b, t = ids.shape
        x = F.embedding(ids, wte) + F.embedding(flow.arange(start, start + t), wpe)
        bias = None
        if t > 1:
            keep = flow.tril(flow.ones(t, t, dtype=flow.bool))
            bias = flow.zeros(t, t).masked_fill(~keep, float("-inf")).view(1, 1, t, t)
        for i in range(layers):
            p = f"transformer.layers.{i}."
            qkv = lin(norm(x, p + "input_layernorm"), p + "self_attention.query_key_value")
            q, k, v = flow.chunk(qkv.view(b, t, heads, 3 * d).permute(0, 2, 1, 3), 3, dim=-1)
            if cache[i] is not None:
                k, v = flow.cat([cache[i][0], k], dim=2), flow.cat([cache[i][1], v], dim=2)
            cache[i] = (k, v)
            scores = flow.matmul(q, k, transpose_b=True, alpha=d ** -0.5)
            if bias is not None:
                scores = scores + bias
            ctx = flow.matmul(flow.softmax(scores, dim=-1), v).permute(0, 2, 1, 3).reshape(b, t, hidden)
            x = x + lin(ctx, p + "self_attention.dense")
            inner = F.gelu(lin(norm(x, p + "post_attention_layernorm"), p + "mlp.dense_h_to_4h"))
            x = x + lin(inner, p + "mlp.dense_4h_to_h")
        last = norm(x[:, -1], "transformer.final_layernorm")
        return F.linear(last, wte).argmax(dim=-1)

    def generate(prompts, new_tokens):
        with flow.no_grad():
            ids = flow.tensor(prompts, dtype=flow.int64)
            cache = [None] * layers
            out, start, token = [ids], 0, None
            feed = ids
            for _ in range(new_tokens):
                token = step(feed, start, cache).view(-1, 1)
                start += feed.shape[1]
                out.append(token)
                feed = token
            return flow.cat(out, dim=1).numpy().tolist()

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
        del model
        generate = plain_generator(flow, weights, args.heads, args.layers)
    else:
        def generate(prompts, n):
            return model.generate(flow.tensor(prompts, dtype=flow.int64), max_new_tokens=n).numpy().tolist()
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
                        for name in ("prompt_len", "new_tokens", "layers", "hidden", "heads", "vocab"):
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
    print(f"GPT-2 {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocabulary {args.vocab}; "
          f"greedy, prompt {args.prompt_len}, {args.new_tokens} new tokens, key/value cache; "
          f"OMP_NUM_THREADS=1; {args.repeats} turn(s)")
    print(format_table(["batch", "plain tok/s (wall)", "plain tok/CPU s", "libai tok/s (wall)",
                        "libai tok/CPU s", "libai / plain (wall)", "libai / plain (CPU)", "tokens"], rows))


if __name__ == "__main__":
    main()
