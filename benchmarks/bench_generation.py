#!/usr/bin/env python
"""Generation speed with and without the key/value cache, on a small randomly initialised GPT.

With the cache, each new token costs one forward pass over one token (attention over the
cached keys); without it, every step re-runs the whole sequence, so the cost of n tokens grows
like n². The script generates ``--new-tokens`` tokens greedily for a batch of prompts both ways,
in alternating turns (a fresh process for each measurement, so that nothing one leaves
behind, allocations or queued asynchronous work, is charged to the next), checks that both
produce the same tokens, and prints new tokens per second by wall and by CPU time (median,
min and max over ``--repeats`` turns), their ratio, and the token positions each mode fed
the model (a clock-free measure of the work).

    .venv/bin/python benchmarks/bench_generation.py            # a few minutes on 2 cores
    .venv/bin/python benchmarks/bench_generation.py --quick    # smoke run
"""
import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OMP_NUM_THREADS", "1")  # like the launcher; compare like with like
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


def _build(hidden: int, layers: int, vocab: int, positions: int):
    import oneflow as flow

    from libai.models import GPTForPreTraining
    from libai.utils.distributed import ParallelLayout

    flow.manual_seed(0)
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):
        model = GPTForPreTraining(dict(
            vocab_size=vocab, hidden_size=hidden, hidden_layers=layers,
            num_attention_heads=max(hidden // 32, 1), intermediate_size=4 * hidden,
            max_seq_length=positions, hidden_dropout_prob=0.0, attention_dropout_prob=0.0,
            embedding_dropout_prob=0.0,
        ))
    return model.eval()


def _timed(model, prompts, new_tokens: int, use_cache: bool):
    start = time.perf_counter()
    out = model.generate(prompts, max_new_tokens=new_tokens, use_cache=use_cache)
    tokens = out.numpy()  # OneFlow runs ops asynchronously: wait for the result before timing
    return time.perf_counter() - start, tokens


def _count_positions(embeddings) -> list:
    """Token positions the model is fed per call (a clock-free measure of the work)."""
    fed, forward = [], embeddings.forward

    def counting(input_ids, *rest, **kwargs):
        fed.append(int(input_ids.shape[1]))
        return forward(input_ids, *rest, **kwargs)

    embeddings.forward = counting
    return fed


def _child(args) -> int:
    """One measurement in this fresh process: warm up, then time one generation."""
    import json

    import numpy as np

    import libai  # noqa: F401  (makes OneFlow's libraries loadable)

    use_cache = args.child == "cache"
    model = _build(args.hidden, args.layers, args.vocab, args.prompt_len + args.new_tokens)
    prompts = np.random.RandomState(0).randint(0, args.vocab, (args.batch, args.prompt_len))
    _timed(model, prompts, 4, use_cache)  # warm-up: first kernel launches, allocations
    fed = _count_positions(model.GPT_model.embeddings)
    cpu = time.process_time()
    seconds, tokens = _timed(model, prompts, args.new_tokens, use_cache)
    cpu = time.process_time() - cpu
    print(json.dumps({"seconds": seconds, "cpu_seconds": cpu, "tokens": tokens.tolist(),
                      "positions": sum(fed)}))
    return 0


def _measure(args, mode: str) -> dict:
    import json
    import subprocess

    cmd = [sys.executable, os.path.abspath(__file__), "--child", mode]
    for name in ("hidden", "layers", "vocab", "batch", "prompt_len", "new_tokens"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def _row(name: str, values) -> str:
    return (f"{name:<10}  {statistics.median(values):>10.1f}  {min(values):>8.1f}  "
            f"{max(values):>8.1f}")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--vocab", type=int, default=1024)
    p.add_argument("--batch", type=int, default=4)
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=128)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--quick", action="store_true", help="tiny sizes, one repeat (a smoke run)")
    p.add_argument("--child", choices=["cache", "no-cache"], help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.child:
        return _child(args)
    if args.quick:
        args.hidden, args.layers, args.vocab, args.new_tokens, args.repeats = 64, 2, 128, 16, 1
        args.prompt_len = 8
    new = args.batch * args.new_tokens
    rates = {"cache": [], "no-cache": []}
    cpu_rates = {"cache": [], "no-cache": []}
    ratios, cpu_ratios = [], []
    for _ in range(args.repeats):  # alternate, one fresh process per measurement
        runs = {mode: _measure(args, mode) for mode in ("cache", "no-cache")}
        if runs["cache"]["tokens"] != runs["no-cache"]["tokens"]:
            print("cached and uncached generation produced different tokens", file=sys.stderr)
            return 1
        for mode, run in runs.items():
            rates[mode].append(new / run["seconds"])
            cpu_rates[mode].append(new / run["cpu_seconds"])
        ratios.append(rates["cache"][-1] / rates["no-cache"][-1])
        cpu_ratios.append(cpu_rates["cache"][-1] / cpu_rates["no-cache"][-1])
    print(f"GPT hidden {args.hidden}, {args.layers} layers, vocabulary {args.vocab}; batch "
          f"{args.batch}, prompt {args.prompt_len} tokens, {args.new_tokens} new tokens (greedy); "
          f"{args.repeats} alternating repeat(s), one process each, OMP_NUM_THREADS="
          f"{os.environ['OMP_NUM_THREADS']}")
    print()
    print(f"{'mode':<10}  {'median':>10}  {'min':>8}  {'max':>8}   new tokens/s (wall)")
    print("-" * 44)
    for mode in ("cache", "no-cache"):
        print(_row(mode, rates[mode]))
    print()
    print(f"{'mode':<10}  {'median':>10}  {'min':>8}  {'max':>8}   new tokens per CPU second")
    print("-" * 44)
    for mode in ("cache", "no-cache"):
        print(_row(mode, cpu_rates[mode]))
    print()
    fed = {mode: runs[mode]["positions"] for mode in runs}
    print(f"positions fed to the model per prompt: cache {fed['cache']}, no cache "
          f"{fed['no-cache']} ({fed['no-cache'] / fed['cache']:.1f}x)")
    print(f"cache / no cache (wall): median {statistics.median(ratios):.2f}x "
          f"(per repeat {min(ratios):.2f} - {max(ratios):.2f}); by CPU time: median "
          f"{statistics.median(cpu_ratios):.2f}x; identical tokens: yes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
