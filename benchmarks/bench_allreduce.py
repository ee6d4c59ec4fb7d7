#!/usr/bin/env python
"""What the all-reduce of one data-parallel step's gradients costs by itself, on this machine.

    .venv/bin/python benchmarks/bench_allreduce.py [--repeats 20]
    .venv/bin/python benchmarks/bench_allreduce.py --quick          # smoke run

Issue 38, item 4: going from one process to data parallel over two adds time to a step; part of
it is the two processes sharing the cores (``vs_libai.py --setups 1x2-graph``: two independent
runs at once), part is the communication and the ranks waiting for each other. This script
measures the communication alone: two ranks (``python -m oneflow.distributed.launch``, one
thread each, as the DP=2 runs) all-reduce buffers of the sizes of the gradients of
``vs_libai.py``'s GPT-2 (4 layers, hidden 256, FFN 1024, vocabulary 8192, sequence 128: the
parameters of libai's ``GPTForPreTraining``), with nothing else running in the ranks:

* ``one buffer``: every gradient in one flat buffer (the least the transfer can cost);
* ``per parameter``: one all-reduce per parameter, as many as the model has.

Each rank reports the wall-clock milliseconds and its process's CPU milliseconds per all-reduce
of all the gradients, after a warm-up; rank 0's figures are printed, with the bytes moved.
"""
import argparse
import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ChildFailed, benchmark_main, format_table  # noqa: E402

SCRIPT = os.path.abspath(__file__)


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=20, help="timed all-reduces of every gradient (default: 20)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="a 1-layer GPT of width 32, 3 repeats")
    p.add_argument("--timeout", type=float, default=600.0)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--result-dir", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.warmup = 3, 1
    if args.repeats < 1 or args.warmup < 0:
        p.error("--repeats must be >= 1 and --warmup >= 0")
    return args


def gradient_sizes(quick: bool) -> List[int]:
    """The element counts of the parameters of vs_libai.py's GPT-2 (libai's model)."""
    from libai.models import GPTForPreTraining
    from libai.utils.distributed import ParallelLayout

    if quick:
        body = dict(hidden_size=32, hidden_layers=1, num_attention_heads=2, intermediate_size=64,
                    vocab_size=256, max_seq_length=16)
    else:
        body = dict(hidden_size=256, hidden_layers=4, num_attention_heads=8, intermediate_size=1024,
                    vocab_size=8192, max_seq_length=128)
    with ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0):  # sizes only
        model = GPTForPreTraining(body)
    return [p.numel() for p in model.parameters()]


def _time(call: Any, warmup: int, repeats: int) -> Dict[str, float]:
    for _ in range(warmup):
        call()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(repeats):
        call()
    return {"wall_ms": (time.perf_counter() - wall) / repeats * 1e3,
            "cpu_ms": (time.process_time() - cpu) / repeats * 1e3}


def child_main(args: argparse.Namespace) -> None:
    import libai  # noqa: F401  (before oneflow: the same runtime choices as a libai run)
    import oneflow as flow

    rank = flow.env.get_rank()
    sizes = gradient_sizes(args.quick)
    flat = flow.ones(sum(sizes))
    pieces = [flow.ones(n) for n in sizes]

    def one_buffer() -> None:
        flow.comm.all_reduce(flat)
        flat.numpy()  # wait for the result, as the step's update does

    def per_parameter() -> None:
        for t in pieces:
            flow.comm.all_reduce(t)
        pieces[-1].numpy()

    result = {"elements": sum(sizes), "tensors": len(sizes),
              "one buffer": _time(one_buffer, args.warmup, args.repeats),
              "per parameter": _time(per_parameter, args.warmup, args.repeats)}
    with open(os.path.join(args.result_dir, f"rank{rank}.json"), "w") as f:
        json.dump(result, f)


def run_launch(args: argparse.Namespace, result_dir: str) -> Dict[str, Any]:
    from libai.utils.testing import launch

    child = ["--child", "--result-dir", result_dir, "--repeats", str(args.repeats), "--warmup", str(args.warmup)]
    proc = launch(SCRIPT, 2, child + (["--quick"] if args.quick else []), timeout=args.timeout,
                  env={"OMP_NUM_THREADS": "1"})
    if proc.returncode != 0:
        raise ChildFailed(f"the two-rank launch failed (exit code {proc.returncode}); its output "
                          f"ends with:\n{(proc.stdout or '')[-4000:]}")
    ranks = []
    for rank in range(2):
        path = os.path.join(result_dir, f"rank{rank}.json")
        if not os.path.exists(path):
            raise ChildFailed(f"rank {rank} wrote no result; the launch's output ends with:\n{(proc.stdout or '')[-4000:]}")
        with open(path) as f:
            ranks.append(json.load(f))
    return {"rank0": ranks[0], "rank1": ranks[1]}


def report(args: argparse.Namespace, result: Dict[str, Any]) -> str:
    r0, r1 = result["rank0"], result["rank1"]
    mb = r0["elements"] * 4 / 1e6
    rows = [[kind, f"{r0[kind]['wall_ms']:.1f}", f"{r0[kind]['cpu_ms']:.1f}", f"{r1[kind]['cpu_ms']:.1f}",
             f"{mb / (r0[kind]['wall_ms'] / 1e3) / 1e3:.2f}"] for kind in ("one buffer", "per parameter")]
    head = [f"all-reduce of {r0['elements']:,} float32 gradients ({mb:.1f} MB) in {r0['tensors']} "
            f"parameters, two ranks of one thread on this machine; {args.repeats} timed after "
            f"{args.warmup}", ""]
    table = format_table(["all-reduce of every gradient", "ms (wall, rank 0)", "CPU ms rank 0",
                          "CPU ms rank 1", "GB/s of gradient"], rows)
    return "\n".join(head + [table])


def run_in_scratch(args: argparse.Namespace) -> Dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench_allreduce_") as result_dir:
        return run_launch(args, result_dir)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    benchmark_main("bench_allreduce", args, child_main,
                   "bench_allreduce: two ranks of one thread, all-reduce only", run_in_scratch, report)


if __name__ == "__main__":
    main()
