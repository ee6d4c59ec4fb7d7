#!/usr/bin/env python
"""The ops of a GPT-2 training step, one at a time, in OneFlow (under libai) and in torch.

    HF_ENV=/path/to/hf_env .venv/bin/python benchmarks/bound_ops.py [--repeats 2]
    .venv/bin/python benchmarks/bound_ops.py --quick        # OneFlow side only without HF_ENV

Issue 38, item 3: which ops make libai's training step slower than torch's? Each op runs at the
shapes of ``vs_torch.py``'s GPT-2 (batch 4 x 128 tokens = 512 rows, hidden 256, 8 heads of 32,
FFN 1024, vocabulary 8192), forward and backward with a fixed upstream gradient, the same code
for both libraries (their functional APIs agree on these ops): the four products of a block and
the LM head (``linear`` with bias), the attention's two batched products, layer norm, softmax,
exact GELU, dropout 0.1, cross entropy over the vocabulary, and one AdamW update of all of
GPT-2's parameters (torch's default, the multi-tensor ``foreach`` path). OneFlow also runs
libai's written-out CPU layer norm and cross entropy (``*_libai`` rows).

One child process per library, alternating (``--repeats`` turns); in each, every op is timed
over ``--iters`` calls followed by one wait for the queued work, rounds interleaving the ops,
median of ``--rounds``; CPU time of the process (all threads) and wall. ``OMP_NUM_THREADS=1``
and ``torch.set_num_threads(1)``. Prints CPU ms per call and OneFlow / torch.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import REPO_ROOT, ChildFailed, format_table, read_result  # noqa: E402

TOKENS, HIDDEN, HEADS, FFN, VOCAB, BATCH, SEQ, LAYERS = 512, 256, 8, 1024, 8192, 4, 128, 4
QUICK = dict(TOKENS=32, HIDDEN=32, HEADS=2, FFN=64, VOCAB=128, BATCH=2, SEQ=16, LAYERS=1)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=2, help="turns, each library once (default: 2)")
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--iters", type=int, default=5)
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--quick", action="store_true", help="tiny shapes, 1 round of 1 call, 1 turn")
    p.add_argument("--child", choices=("oneflow", "torch"), help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.rounds, args.iters = 1, 1, 1
    return args


def build_ops(lib: Any, sizes: Dict[str, int], extra: Dict[str, Callable]) -> Dict[str, Callable]:
    """Name -> a call doing one op forward and backward (``lib`` is ``oneflow`` or ``torch``)."""
    F = lib.nn.functional
    t, h, heads, ffn, vocab, b, s = (sizes[k] for k in ("TOKENS", "HIDDEN", "HEADS", "FFN", "VOCAB", "BATCH", "SEQ"))

    def leaf(*shape):
        return (lib.randn(*shape) * 0.1).requires_grad_()

    def fwd_bwd(fn, *inputs):
        out = fn(*inputs)
        grad = lib.ones_like(out) * 0.01

        def call():
            fn(*inputs).backward(grad)
        return call

    def linear(rows, n_in, n_out):
        return fwd_bwd(lambda x, w, bias: F.linear(x, w, bias), leaf(rows, n_in), leaf(n_out, n_in), leaf(n_out))

    q, k, v = (leaf(b, heads, s, h // heads) for _ in range(3))
    x_h, x_f, scores = leaf(t, h), leaf(t, ffn), leaf(b, heads, s, s)
    w_h, b_h = leaf(h), leaf(h)
    logits = leaf(t, vocab)
    labels = lib.randint(0, vocab, (t,))
    ops = {
        "linear qkv (x3 h)": linear(t, h, 3 * h),
        "linear out (h)": linear(t, h, h),
        "linear fc1 (h->ffn)": linear(t, h, ffn),
        "linear fc2 (ffn->h)": linear(t, ffn, h),
        "LM head (h->vocab)": fwd_bwd(lambda x, w: F.linear(x, w), leaf(t, h), leaf(vocab, h)),
        "attention bmm x2": fwd_bwd(lambda q, k, v: lib.matmul(lib.matmul(q, k.transpose(-1, -2)), v), q, k, v),
        "layer norm": fwd_bwd(lambda x, w, bb: F.layer_norm(x, (h,), w, bb, 1e-5), x_h, w_h, b_h),
        "softmax (scores)": fwd_bwd(lambda x: lib.softmax(x, dim=-1), scores),
        "gelu (ffn)": fwd_bwd(lambda x: F.gelu(x), x_f),
        "dropout (ffn)": fwd_bwd(lambda x: F.dropout(x, p=0.1, training=True), x_f),
        "cross entropy": fwd_bwd(lambda x: F.cross_entropy(x, labels), logits),
    }
    for name, make in extra.items():
        ops[name] = make(fwd_bwd, x_h, w_h, b_h, logits, labels, h)
    ops["AdamW update (all params)"] = _adamw(lib, sizes)
    return ops


def _adamw(lib: Any, sizes: Dict[str, int]) -> Callable:
    """One AdamW step over GPT-2's parameter shapes, gradients in place."""
    h, ffn, vocab, seq = sizes["HIDDEN"], sizes["FFN"], sizes["VOCAB"], sizes["SEQ"]
    shapes = [(vocab, h), (seq, h), (h,), (h,)]
    shapes += sizes["LAYERS"] * [(h,), (h,), (3 * h, h), (3 * h,), (h, h), (h,), (h,), (h,),
                                 (ffn, h), (ffn,), (h, ffn), (h,)]
    params = [lib.nn.Parameter(lib.randn(*shape) * 0.02) for shape in shapes]
    for p in params:
        p.grad = lib.randn(*p.shape) * 1e-3
    opt = lib.optim.AdamW(params, lr=1e-4, weight_decay=0.01)
    return opt.step


def _oneflow_extra() -> Dict[str, Callable]:
    """libai's written-out CPU formulations (what its layers use on the CPU)."""
    from libai.layers.cross_entropy import _cpu_softmax_cross_entropy
    from libai.layers.layer_norm import _affine_layer_norm

    def norm(fwd_bwd, x, w, b, logits, labels, h):
        return fwd_bwd(lambda x, w, b: _affine_layer_norm(1e-5).apply(x, w, b), x, w, b)

    def xent(fwd_bwd, x, w, b, logits, labels, h):
        return fwd_bwd(lambda x: _cpu_softmax_cross_entropy(x, labels).mean(), logits)

    return {"layer norm (libai's)": norm, "cross entropy (libai's)": xent}


def child_main(args: argparse.Namespace) -> None:
    sizes = QUICK if args.quick else dict(TOKENS=TOKENS, HIDDEN=HIDDEN, HEADS=HEADS, FFN=FFN,
                                          VOCAB=VOCAB, BATCH=BATCH, SEQ=SEQ, LAYERS=LAYERS)
    if args.child == "oneflow":
        import libai  # noqa: F401  (libai's runtime choices: BLAS route, threading)
        import oneflow as lib

        from libai.utils.process import wait_for_queued_work as wait
        extra = _oneflow_extra()
        version = f"oneflow {lib.__version__}, OPENBLAS_CORETYPE={os.environ.get('OPENBLAS_CORETYPE', '')}"
    else:
        import torch as lib

        lib.set_num_threads(1)

        def wait() -> None:
            pass  # torch's CPU ops are synchronous
        extra = {}
        version = f"torch {lib.__version__} ({lib.backends.cpu.get_cpu_capability()})"
    lib.manual_seed(0)
    ops = build_ops(lib, sizes, extra)
    for fn in ops.values():
        fn()
    wait()
    cpu: Dict[str, List[float]] = {name: [] for name in ops}
    wall: Dict[str, List[float]] = {name: [] for name in ops}
    for _ in range(args.rounds):
        for name, fn in ops.items():
            w0, c0 = time.perf_counter(), time.process_time()
            for _ in range(args.iters):
                fn()
            wait()
            cpu[name].append((time.process_time() - c0) / args.iters)
            wall[name].append((time.perf_counter() - w0) / args.iters)
    result = {"version": version, "cpu_ms": {n: 1000 * statistics.median(v) for n, v in cpu.items()},
              "wall_ms": {n: 1000 * statistics.median(v) for n, v in wall.items()}}
    with open(args.result_file, "w") as f:
        json.dump(result, f)


def _run(python: str, side: str, args: argparse.Namespace, workdir: str) -> Dict[str, Any]:
    path = os.path.join(workdir, side + ".json")
    cmd = [python, os.path.abspath(__file__), "--child", side, "--result-file", path,
           "--rounds", str(args.rounds), "--iters", str(args.iters)] + (["--quick"] if args.quick else [])
    proc = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO_ROOT, timeout=args.timeout,
                          env=dict(os.environ, OMP_NUM_THREADS="1"))
    if proc.returncode != 0:
        raise ChildFailed(f"the {side} child failed:\n{(proc.stdout + proc.stderr)[-4000:]}")
    return read_result(path, f"the {side} child", proc.stdout + proc.stderr)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    from vs_transformers_generation import hf_python

    torch_python = hf_python(who="bound_ops") if (os.environ.get("HF_ENV") or not args.quick) else None
    sides = {"oneflow": sys.executable, **({"torch": torch_python} if torch_python else {})}
    runs: Dict[str, List[Dict[str, Any]]] = {side: [] for side in sides}
    with tempfile.TemporaryDirectory(prefix="bound_ops_") as workdir:
        try:
            for turn in range(args.repeats):
                for side in (list(sides) if turn % 2 == 0 else list(sides)[::-1]):
                    runs[side].append(_run(sides[side], side, args, workdir))
                    print(f"  turn {turn + 1}: {side} done", flush=True)
        except ChildFailed as e:
            raise SystemExit(f"bound_ops: {e}")
    names = list(runs["oneflow"][0]["cpu_ms"])
    rows = []
    for name in names:
        of = statistics.fmean(r["cpu_ms"][name] for r in runs["oneflow"])
        row = [name, f"{of:.2f}"]
        if "torch" in runs:
            base = name.split(" (libai's)")[0]
            th = statistics.fmean(r["cpu_ms"][base] for r in runs["torch"])
            row += [f"{th:.2f}", f"{of / th:.2f}"]
        rows.append(row)
    headers = ["op (forward + backward)", "OneFlow CPU ms"] + (["torch CPU ms", "OneFlow / torch"] if "torch" in runs else [])
    print()
    print(f"OneFlow: {runs['oneflow'][0]['version']}" +
          (f"; torch: {runs['torch'][0]['version']}" if "torch" in runs else "; torch not run (HF_ENV unset)"))
    print(f"mean over {args.repeats} turn(s) of the median of {args.rounds} rounds of {args.iters} calls; "
          f"OMP_NUM_THREADS=1")
    print(format_table(headers, rows))


if __name__ == "__main__":
    main()
