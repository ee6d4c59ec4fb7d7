#!/usr/bin/env python
"""The matrix products of one cached decoding step: OneFlow against NumPy (and torch).

    .venv/bin/python benchmarks/bench_decode_matmul.py                       # OneFlow, NumPy
    HF_ENV=/work/hf_env .venv/bin/python benchmarks/bench_decode_matmul.py   # and torch
    .venv/bin/python benchmarks/bench_decode_matmul.py --quick               # smoke-test size

Why: on the GPT-2 of ``vs_transformers_generation.py`` (6 layers, hidden 512, FFN 2048,
vocabulary 8192) libai decodes 2-3x slower than transformers + torch. A cached step multiplies
1 to 8 rows by every weight: 4 linear layers per transformer layer plus the LM head. This
times each of those products alone, one thread, on ``[rows, in]`` and (OneFlow only) the 3-D
``[rows, 1, in]`` a decoding step feeds, against NumPy's ``x @ W.T`` in the same process and,
when ``HF_ENV`` names an environment with torch, ``torch.nn.functional.linear`` in a child
process; then sums one step's products. It also times what handing a OneFlow value to NumPy
costs (an op followed by ``.numpy()``, against the op alone): that wait is why computing the
products in NumPy from inside a OneFlow decoding step does not pay (docs/benchmarks.md,
"Generation: where a decoding step's time goes").

Every figure is CPU milliseconds per call (the process's CPU time of ``2 x --calls`` calls queued
back to back minus that of ``--calls``, each ending with one wait), the robust figure on a
shared machine; the report prints the
load average. All three compute the same products (OneFlow's and NumPy's agree to float32
rounding, checked here).
"""
import argparse
import json
import os
import subprocess
import sys
import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import REPO_ROOT, format_table  # noqa: E402


def step_shapes(hidden: int, ffn: int, vocab: int) -> List[Tuple[str, int, int, int]]:
    """``(name, out, in, times per step)`` of the products of one decoding step."""
    return [("query_key_value", 3 * hidden, hidden, 1), ("attention dense", hidden, hidden, 1),
            ("dense_h_to_4h", ffn, hidden, 1), ("dense_4h_to_h", hidden, ffn, 1),
            ("LM head", vocab, hidden, 0)]


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batches", default="1,8", help="rows per step (default: 1,8)")
    p.add_argument("--calls", type=int, default=40, help="calls per timing (default: 40)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, few calls (smoke test)")
    p.add_argument("--child", choices=("oneflow", "torch"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.layers, args.hidden, args.vocab, args.calls, args.batches = 1, 32, 256, 3, "1,2"
    args.batch_sizes = [int(b) for b in args.batches.split(",") if b.strip()]
    if not args.batch_sizes or min(args.batch_sizes) < 1 or min(args.layers, args.calls) < 1:
        p.error("--batches, --layers and --calls must be positive")
    return args


def _cpu_ms(run: Callable[[], Any], wait: Callable[[Any], Any], calls: int) -> float:
    """CPU ms per call: ``2 * calls`` calls minus ``calls`` calls, each run ending with one
    wait, so the cost of that wait (a thread hand-off in OneFlow) cancels out."""
    wait(run())  # warm-up

    def timed(n: int) -> float:
        start = time.process_time()
        for _ in range(n):
            out = run()
        wait(out)
        return time.process_time() - start

    return max(timed(2 * calls) - timed(calls), 0.0) / calls * 1e3


def child_oneflow(args: argparse.Namespace) -> Dict[str, Any]:
    import libai  # noqa: F401  (BLAS kernels and VM threading chosen before OneFlow loads)
    import numpy as np
    import oneflow as flow

    rng, results = np.random.RandomState(0), {}
    wait = lambda t: t.numpy()  # noqa: E731
    for name, out, inp, _ in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
        w_np = rng.randn(out, inp).astype(np.float32)
        w = flow.tensor(w_np)
        for b in args.batch_sizes:
            x_np = rng.randn(b, inp).astype(np.float32)
            x2, x3 = flow.tensor(x_np), flow.tensor(x_np.reshape(b, 1, inp))
            linear = flow.nn.functional.linear
            diff = np.abs(linear(x2, w).numpy() - x_np @ w_np.T).max()
            results[f"{name}|{b}"] = {
                "oneflow 2-D": _cpu_ms(lambda: linear(x2, w), wait, args.calls),
                "oneflow 3-D": _cpu_ms(lambda: linear(x3, w), wait, args.calls),
                "numpy": _cpu_ms(lambda: x_np @ w_np.T, lambda a: a, args.calls),
                "max |oneflow - numpy|": float(diff),
            }
    x = flow.randn(1, args.hidden)
    results["sync"] = {"op": _cpu_ms(lambda: x + 1, wait, 10 * args.calls),
                       "op + .numpy()": _cpu_ms(lambda: (x + 1).numpy(), lambda a: a,
                                                args.calls)}
    return results


def child_torch(args: argparse.Namespace) -> Dict[str, Any]:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    rng, results = np.random.RandomState(0), {}
    for name, out, inp, _ in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
        w = torch.tensor(rng.randn(out, inp).astype(np.float32))
        for b in args.batch_sizes:
            x = torch.tensor(rng.randn(b, 1, inp).astype(np.float32))
            with torch.no_grad():
                results[f"{name}|{b}"] = {
                    "torch": _cpu_ms(lambda: torch.nn.functional.linear(x, w), lambda t: t,
                                     args.calls)}
    return results


def _child(python: str, args: argparse.Namespace, side: str) -> Dict[str, Any]:
    cmd = [python, os.path.abspath(__file__), "--child", side, "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--vocab", str(args.vocab), "--batches", args.batches,
           "--calls", str(args.calls)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"bench_decode_matmul: the {side} child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def report(args: argparse.Namespace, results: Dict[str, Any]) -> str:
    sides = ["oneflow 2-D", "oneflow 3-D", "numpy"] + (["torch"] if "torch" in results else [])
    rows, totals = [], {(s, b): 0.0 for s in sides for b in args.batch_sizes}
    for name, out, inp, per_layer in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
        times = args.layers if per_layer else 1
        for b in args.batch_sizes:
            got = dict(results["oneflow"][f"{name}|{b}"])
            got.update(results.get("torch", {}).get(f"{name}|{b}", {}))
            for s in sides:
                totals[(s, b)] += times * got[s]
            rows.append([f"{name} [{out}x{inp}] x{times}", b] + [f"{got[s]:.3f}" for s in sides]
                        + [f"{got['max |oneflow - numpy|']:.1e}"])
    for b in args.batch_sizes:
        rows.append([f"one decoding step ({args.layers} layers + head)", b]
                    + [f"{totals[(s, b)]:.2f}" for s in sides] + [""])
    sync = results["oneflow"]["sync"]
    return "\n".join([
        f"decoding-step matrix products, CPU ms per call, one thread; GPT-2 {args.layers} layers, "
        f"hidden {args.hidden}, FFN {4 * args.hidden}, vocabulary {args.vocab}; "
        f"load average {os.getloadavg()[0]:.1f}",
        "",
        format_table(["product", "rows"] + sides + ["max |oneflow - numpy|"], rows),
        "",
        f"handing a OneFlow value to NumPy: an op {sync['op'] * 1e3:.0f} us, the op followed by "
        f".numpy() {sync['op + .numpy()'] * 1e3:.0f} us of CPU per call",
    ])


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        run = child_oneflow if args.child == "oneflow" else child_torch
        print(json.dumps(run(args)))
        return
    results = {"oneflow": _child(sys.executable, args, "oneflow")}
    hf = os.environ.get("HF_ENV", "").strip()
    if hf:
        results["torch"] = _child(os.path.join(hf, "bin", "python"), args, "torch")
    else:
        print("(HF_ENV not set: no torch column; see vs_transformers_generation.py for the "
              "environment)")
    print(report(args, results))


if __name__ == "__main__":
    main()
