#!/usr/bin/env python
"""Matrix products of decoding and training: OneFlow with and without libai's BLAS route,
against NumPy (and torch).

    .venv/bin/python benchmarks/bench_decode_matmul.py                       # OneFlow, NumPy
    HF_ENV=/work/hf_env .venv/bin/python benchmarks/bench_decode_matmul.py   # and torch
    .venv/bin/python benchmarks/bench_decode_matmul.py --quick               # smoke-test size

Why: on the GPT-2 of ``vs_transformers_generation.py`` (6 layers, hidden 512, FFN 2048,
vocabulary 8192) a cached decoding step multiplies 1 to 8 rows by every weight: 4 linear layers
per transformer layer plus the LM head. OneFlow 0.9 sends every CPU product to ``cblas_sgemm`` of
its bundled OpenBLAS, which has no matrix-vector path; ``import libai`` routes those calls to the
current OpenBLAS of ``scipy-openblas32``, one-row and one-column products as GEMV
(``libai._blas.route_matrix_products``; docs/benchmarks.md, "OneFlow's matrix products on a
current OpenBLAS"). This shows what the route gives, measured in the same run: OneFlow runs in
two fresh child processes, one with the route (libai's default) and one with
``LIBAI_CBLAS_ROUTE=0`` (OneFlow's own sgemm), each reporting which BLAS it used.

Two tables: each product of a decoding step alone, on ``[rows, in]`` and on the 3-D
``[rows, 1, in]`` a decoding step feeds, then one step's sum; and the forward products of the
GPT-2 of ``vs_libai.py`` at micro-batch 4, sequence 128 (512 rows, hidden 256, FFN 1024,
vocabulary 8192) plus a 1024^3 product, in GFLOP/s. Each row has the ratio "OneFlow own /
route" (above 1: the route is faster). NumPy's ``x @ W.T`` is timed in the route child and,
when ``HF_ENV`` names an environment with torch, ``torch.nn.functional.linear`` in a third
child. It also times what handing a OneFlow value to NumPy costs (an op followed by
``.numpy()``, against the op alone): that wait is why computing the products in NumPy from
inside a OneFlow decoding step does not pay (docs/benchmarks.md, "Generation: where a decoding
step's time goes").

Every figure comes from CPU time per call (the process's CPU time of ``2 x N`` calls queued
back to back minus that of ``N``, each run ending with one wait), the robust figure on a shared
machine; the report prints the load average. Both OneFlow children compute the same products as
NumPy: each result is checked against NumPy's (float32 rounding, relative 1e-4 of the largest
entry; a larger difference stops the benchmark) and the largest difference is printed.
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

ROUTE_VARIABLE = "LIBAI_CBLAS_ROUTE"  # libai._blas.ROUTE_VARIABLE (not imported: no OneFlow here)
ONEFLOW_SIDES = ("route", "own")  # libai's default, and LIBAI_CBLAS_ROUTE=0


def step_shapes(hidden: int, ffn: int, vocab: int) -> List[Tuple[str, int, int, int]]:
    """``(name, out, in, times per step)`` of the products of one decoding step."""
    return [("query_key_value", 3 * hidden, hidden, 1), ("attention dense", hidden, hidden, 1),
            ("dense_h_to_4h", ffn, hidden, 1), ("dense_4h_to_h", hidden, ffn, 1),
            ("LM head", vocab, hidden, 0)]


def large_shapes(args: argparse.Namespace) -> List[Tuple[str, int, int, int]]:
    """``(name, rows, out, in)`` of the large products: the forward products of a training step
    of ``vs_libai.py``'s GPT-2 (``--train-rows`` tokens, ``--train-hidden``) and a cube."""
    rows, h, cube = args.train_rows, args.train_hidden, args.cube
    return [("query_key_value", rows, 3 * h, h), ("dense_h_to_4h", rows, 4 * h, h),
            ("dense_4h_to_h", rows, h, 4 * h), ("LM head", rows, args.vocab, h),
            ("cube", cube, cube, cube)]


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--batches", default="1,8", help="rows per step (default: 1,8)")
    p.add_argument("--calls", type=int, default=40, help="calls per timing (default: 40)")
    p.add_argument("--train-rows", type=int, default=512,
                   help="rows of the training products: micro-batch x sequence (default: 512)")
    p.add_argument("--train-hidden", type=int, default=256,
                   help="hidden size of the training products (default: 256)")
    p.add_argument("--cube", type=int, default=1024, help="size of the square product (default: 1024)")
    p.add_argument("--large-calls", type=int, default=10,
                   help="calls per timing of the large products (default: 10)")
    p.add_argument("--quick", action="store_true", help="tiny sizes, few calls (smoke test)")
    p.add_argument("--child", choices=ONEFLOW_SIDES + ("torch",), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.layers, args.hidden, args.vocab, args.calls, args.batches = 1, 32, 256, 3, "1,2"
        args.train_rows, args.train_hidden, args.cube, args.large_calls = 16, 32, 64, 2
    args.batch_sizes = [int(b) for b in args.batches.split(",") if b.strip()]
    sizes = (args.layers, args.calls, args.train_rows, args.train_hidden, args.cube, args.large_calls)
    if not args.batch_sizes or min(args.batch_sizes) < 1 or min(sizes) < 1:
        p.error("--batches, --layers, --calls, --train-rows, --train-hidden, --cube and "
                "--large-calls must be positive")
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


def _checked_difference(what: str, ours: Any, reference: Any) -> float:
    """The largest absolute difference of OneFlow's result from NumPy's; stop the benchmark
    when it exceeds float32 rounding (relative 1e-4 of the largest entry)."""
    import numpy as np

    diff = float(np.abs(ours - reference).max())
    scale = float(np.abs(reference).max())
    if not diff <= 1e-4 * scale:  # also catches NaN
        raise SystemExit(f"bench_decode_matmul: OneFlow's {what} differs from NumPy's by "
                         f"{diff:.2e} (largest entry {scale:.2e}): not float32 rounding; "
                         f"compare with {ROUTE_VARIABLE}=0 and see libai._blas.check_blas_kernels")
    return diff


def child_oneflow(args: argparse.Namespace) -> Dict[str, Any]:
    """OneFlow's products (and, in the route child, NumPy's and the hand-off cost)."""
    import libai  # noqa: F401  (BLAS route, kernels and VM threading chosen before OneFlow loads)
    from libai._runtime import gemv_products, matrix_route
    import numpy as np
    import oneflow as flow

    with_numpy = args.child == "route"
    rng, linear = np.random.RandomState(0), flow.nn.functional.linear
    results: Dict[str, Any] = {"matrix_route": matrix_route()}
    wait = lambda t: t.numpy()  # noqa: E731
    for name, out, inp, _ in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
        w_np = rng.randn(out, inp).astype(np.float32)
        w = flow.tensor(w_np)
        for b in args.batch_sizes:
            x_np = rng.randn(b, inp).astype(np.float32)
            x2, x3 = flow.tensor(x_np), flow.tensor(x_np.reshape(b, 1, inp))
            before = gemv_products()
            y2, y3 = linear(x2, w).numpy(), linear(x3, w).numpy().reshape(b, out)
            gemv = gemv_products() - before
            reference = x_np @ w_np.T
            got = {"2-D": _cpu_ms(lambda: linear(x2, w), wait, args.calls),
                   "3-D": _cpu_ms(lambda: linear(x3, w), wait, args.calls),
                   "gemv": gemv,
                   "diff": max(_checked_difference(f"{name} ({b} rows, 2-D)", y2, reference),
                               _checked_difference(f"{name} ({b} rows, 3-D)", y3, reference))}
            if with_numpy:
                got["numpy"] = _cpu_ms(lambda: x_np @ w_np.T, lambda a: a, args.calls)
            results[f"{name}|{b}"] = got
    for name, rows, out, inp in large_shapes(args):
        w_np, x_np = (rng.randn(out, inp).astype(np.float32),
                      rng.randn(rows, inp).astype(np.float32))
        w, x = flow.tensor(w_np), flow.tensor(x_np)
        got = {"2-D": _cpu_ms(lambda: linear(x, w), wait, args.large_calls),
               "diff": _checked_difference(f"{name} ({rows} rows)", linear(x, w).numpy(),
                                           x_np @ w_np.T)}
        if with_numpy:
            got["numpy"] = _cpu_ms(lambda: x_np @ w_np.T, lambda a: a, args.large_calls)
        results[f"large|{name}"] = got
    if with_numpy:
        x = flow.randn(1, args.hidden)
        results["sync"] = {"op": _cpu_ms(lambda: x + 1, wait, 10 * args.calls),
                           "op + .numpy()": _cpu_ms(lambda: (x + 1).numpy(), lambda a: a,
                                                    args.calls)}
    return results


def child_torch(args: argparse.Namespace) -> Dict[str, Any]:
    import numpy as np
    import torch

    torch.set_num_threads(1)
    rng, results, linear = np.random.RandomState(0), {}, torch.nn.functional.linear
    with torch.no_grad():
        for name, out, inp, _ in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
            w = torch.tensor(rng.randn(out, inp).astype(np.float32))
            for b in args.batch_sizes:
                x = torch.tensor(rng.randn(b, 1, inp).astype(np.float32))
                results[f"{name}|{b}"] = {
                    "torch": _cpu_ms(lambda: linear(x, w), lambda t: t, args.calls)}
        for name, rows, out, inp in large_shapes(args):
            w = torch.tensor(rng.randn(out, inp).astype(np.float32))
            x = torch.tensor(rng.randn(rows, inp).astype(np.float32))
            results[f"large|{name}"] = {
                "torch": _cpu_ms(lambda: linear(x, w), lambda t: t, args.large_calls)}
    return results


def _child(python: str, args: argparse.Namespace, side: str) -> Dict[str, Any]:
    cmd = [python, os.path.abspath(__file__), "--child", side, "--layers", str(args.layers),
           "--hidden", str(args.hidden), "--vocab", str(args.vocab), "--batches", args.batches,
           "--calls", str(args.calls), "--train-rows", str(args.train_rows),
           "--train-hidden", str(args.train_hidden), "--cube", str(args.cube),
           "--large-calls", str(args.large_calls)]
    env = dict(os.environ, OMP_NUM_THREADS="1")
    env.pop(ROUTE_VARIABLE, None)
    if side == "own":
        env[ROUTE_VARIABLE] = "0"
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT)
    if proc.returncode != 0:
        raise SystemExit(f"bench_decode_matmul: the {side} child failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def check_routes(results: Dict[str, Any]) -> None:
    """Stop, naming the reason, unless the route child ran on libai's route and the other on
    OneFlow's own sgemm: otherwise the two columns would compare nothing."""
    for side, wanted in (("route", "yes"), ("own", "no")):
        route = results[side]["matrix_route"]
        if route.get("active") != wanted:
            raise SystemExit(
                f"bench_decode_matmul: the {side} child {'did not get' if wanted == 'yes' else 'got'}"
                f" libai's BLAS route: {route.get('reason', route)}"
                + (" (build the adapter with `pip install -e .` or tools/setup_env.sh)"
                   if wanted == "yes" else ""))


def _ratio(own: float, route: float) -> str:
    return f"{own / route:.2f}x" if route > 0 else "n/a"


def _gflops(flop: float, ms: float) -> str:
    return f"{flop / ms / 1e6:.1f}" if ms > 0 else "n/a"


def decode_table(args: argparse.Namespace, results: Dict[str, Any]) -> Tuple[str, Dict[int, str]]:
    """The decoding-step table and, per batch, one step's "own / route" ratio."""
    has_torch = "torch" in results
    columns = [("route", "2-D"), ("route", "3-D"), ("own", "2-D"), ("own", "3-D"),
               ("route", "numpy")] + ([("torch", "torch")] if has_torch else [])
    headers = (["product", "rows", "route 2-D", "route 3-D", "own 2-D", "own 3-D", "numpy"]
               + (["torch"] if has_torch else [])
               + ["own / route", "route GEMV", "max |oneflow - numpy|"])
    rows, totals = [], {(c, b): 0.0 for c in columns for b in args.batch_sizes}
    for name, out, inp, per_layer in step_shapes(args.hidden, 4 * args.hidden, args.vocab):
        times = args.layers if per_layer else 1
        for b in args.batch_sizes:
            got = {c: results[c[0]][f"{name}|{b}"][c[1]] for c in columns}
            for c in columns:
                totals[(c, b)] += times * got[c]
            diff = max(results[s][f"{name}|{b}"]["diff"] for s in ONEFLOW_SIDES)
            rows.append([f"{name} [{out}x{inp}] x{times}", b] + [f"{got[c]:.3f}" for c in columns]
                        + [_ratio(got[("own", "3-D")], got[("route", "3-D")]),
                           results["route"][f"{name}|{b}"]["gemv"], f"{diff:.1e}"])
    step_ratios = {}
    for b in args.batch_sizes:
        step_ratios[b] = _ratio(totals[(("own", "3-D"), b)], totals[(("route", "3-D"), b)])
        rows.append([f"one decoding step ({args.layers} layers + head)", b]
                    + [f"{totals[(c, b)]:.2f}" for c in columns] + [step_ratios[b], "", ""])
    return format_table(headers, rows), step_ratios


def large_table(args: argparse.Namespace, results: Dict[str, Any]) -> Tuple[str, List[str]]:
    """The training-size products in GFLOP/s (from CPU time) and their "own / route" ratios."""
    sources = {"route": ("route", "2-D"), "own": ("own", "2-D"), "numpy": ("route", "numpy")}
    if "torch" in results:
        sources["torch"] = ("torch", "torch")
    sides = list(sources)
    rows, ratios = [], []
    for name, n, out, inp in large_shapes(args):
        key = f"large|{name}"
        ms = {s: results[child][key][figure] for s, (child, figure) in sources.items()}
        ratios.append(_ratio(ms["own"], ms["route"]))
        diff = max(results[s][key]["diff"] for s in ONEFLOW_SIDES)
        rows.append([f"{name} [{n}x{inp}] -> {out}"] + [_gflops(2.0 * n * out * inp, ms[s])
                                                       for s in sides]
                    + [ratios[-1], f"{diff:.1e}"])
    return format_table(["product"] + sides + ["own / route", "max |oneflow - numpy|"], rows), ratios


def report(args: argparse.Namespace, results: Dict[str, Any]) -> str:
    decode, step_ratios = decode_table(args, results)
    large, large_ratios = large_table(args, results)
    sync = results["route"]["sync"]
    steps = ", ".join(f"{r} at {b} row{'s' if b > 1 else ''}" for b, r in step_ratios.items())
    return "\n".join([
        f"OneFlow's BLAS, route (libai's default): {results['route']['matrix_route']['reason']}",
        f"OneFlow's BLAS, own: {results['own']['matrix_route']['reason']}",
        f"one thread; load average {os.getloadavg()[0]:.1f}",
        "",
        f"decoding-step matrix products, CPU ms per call; GPT-2 {args.layers} layers, "
        f"hidden {args.hidden}, FFN {4 * args.hidden}, vocabulary {args.vocab}. 2-D: linear on "
        "[rows, in]; 3-D: on [rows, 1, in] (what a decoding step feeds); own / route: the 3-D "
        "figures' ratio; route GEMV: of the route child's two checking calls (2-D, 3-D), those "
        "that took the GEMV path",
        "",
        decode,
        "",
        f"training-size products (GPT-2 hidden {args.train_hidden}, {args.train_rows} rows = "
        f"micro-batch x sequence) and a {args.cube}^3 product, linear, GFLOP/s of CPU time",
        "",
        large,
        "",
        f"OneFlow own / route, same run: one decoding step {steps}; training-size products "
        + ", ".join(large_ratios),
        f"handing a OneFlow value to NumPy: an op {sync['op'] * 1e3:.0f} us, the op followed by "
        f".numpy() {sync['op + .numpy()'] * 1e3:.0f} us of CPU per call",
    ])


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        run = child_torch if args.child == "torch" else child_oneflow
        print(json.dumps(run(args)))
        return
    results = {side: _child(sys.executable, args, side) for side in ONEFLOW_SIDES}
    check_routes(results)
    hf = os.environ.get("HF_ENV", "").strip()
    if hf:
        results["torch"] = _child(os.path.join(hf, "bin", "python"), args, "torch")
    else:
        print("(HF_ENV not set: no torch column; see vs_transformers_generation.py for the "
              "environment)")
    print(report(args, results))


if __name__ == "__main__":
    main()
