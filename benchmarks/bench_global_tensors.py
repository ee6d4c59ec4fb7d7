"""What global tensors cost in a one-process run: the small GPT with global and with local tensors.

    python benchmarks/bench_global_tensors.py                 # about 4 minutes on 2 CPU cores
    python benchmarks/bench_global_tensors.py --repeats 6 --iters 20
    python benchmarks/bench_global_tensors.py --quick         # tiny model, seconds

In one process libai keeps batches, parameters and activations as OneFlow *global* tensors on a
one-rank placement, as LiBai does, so that code written for LiBai can read ``.sbp`` and
``.placement``. This script measures what that costs against plain *local* tensors, the mode
libai used before (and still uses, invisibly, to export ONNX): the same GPT as
``bench_graph_vs_eager.py`` (hidden 256, 4 layers, sequence 128, batch 8) through
``DefaultTrainer``, Eager and Graph, each variant in a fresh child process with
``OMP_NUM_THREADS=--threads``. The local variant builds the trainer's layout with
``ParallelLayout.local_copy()``; nothing else differs.

Timing: ``--warmup`` untimed iterations (the first compiles the graph), then ``--iters`` timed
ones between two reads of the loss (``time.perf_counter``; reading the loss waits for OneFlow's
queued work). The variants of a mode run back to back in each round, in alternating order, and
the global/local ratio is taken within a round, so that a change of the machine's load hits both
sides of a ratio alike.
"""
import argparse
import os
import statistics
import sys
import tempfile
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import (  # noqa: E402
    QUICK_SIZE, SMOKE_SIZE, GPTSize, RunSpec, Spread, add_child_arguments,
    add_shared_options, benchmark_main, measure_training, parse_choices, report_text, round_parser,
    require_positive, run_child, write_child_result)

SCRIPT = os.path.abspath(__file__)
TENSORS = ("local", "global")
MODES = ("eager", "graph")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = round_parser(
        "Samples/s of a small GPT in one process with global tensors (libai's way, "
        "LiBai's too) and with plain local tensors, Eager and Graph, and their ratio.",
        iters=10, warmup=3, repeats=4, repeats_help="rounds; each runs every variant once")
    add_shared_options(parser, "--batch-size", "--threads")
    parser.add_argument("--modes", default=",".join(MODES),
                        help="comma-separated subset of: eager, graph (default: both)")
    parser.add_argument("--small", action="store_true",
                        help="a tiny GPT (hidden 64, 2 layers, sequence 32) with the given "
                        "iterations and rounds: per-op overheads weigh more in a short step")
    add_child_arguments(parser, "a tiny GPT, 1 warm-up + 2 timed iterations, 1 round (for smoke tests)",
                        timeout=600, timeout_help="seconds allowed per child")
    args = parser.parse_args(argv)
    require_positive(parser, args, ("iters", "warmup", "repeats", "batch_size", "threads"))
    args.modes = parse_choices(parser, "--modes", args.modes, MODES, "mode(s)")
    if args.quick:
        args.iters, args.warmup, args.repeats = 2, 1, 1
    return args


# ---------------------------------------------------------------------------------------------
# Child: one variant
# ---------------------------------------------------------------------------------------------
def child_main(args: argparse.Namespace) -> None:
    mode, tensors = args.child.split(":")
    import libai  # noqa: F401  (before oneflow; OMP_NUM_THREADS is already set by the parent)
    from libai.utils.parallel_layout import ParallelLayout

    if tensors == "local":
        # The trainer resolves its layout here; the local variant takes its local copy.
        resolve = ParallelLayout.from_config.__func__

        def local_from_config(cls: Any, *a: Any, **k: Any) -> ParallelLayout:
            return resolve(cls, *a, **k).local_copy()

        ParallelLayout.from_config = classmethod(local_from_config)

    def probe(trainer: Any) -> Dict[str, Any]:
        param = next(trainer.model.parameters())
        return {"parameter_is_global": bool(param.is_global)}

    size = SMOKE_SIZE if args.quick else QUICK_SIZE if args.small else GPTSize()
    batch = min(args.batch_size, 4) if args.quick else args.batch_size
    spec = RunSpec(size=size, global_batch=batch, warmup=args.warmup, iters=args.iters,
                   graph=(mode == "graph"))
    with tempfile.TemporaryDirectory(prefix="bench_global_tensors_") as out:
        result = measure_training(spec, out, probe=probe)
    if result["parameter_is_global"] != (tensors == "global"):
        raise RuntimeError(f"variant {args.child}: parameters are not {tensors} tensors")
    write_child_result(args.result_file, result, variant=args.child)


# ---------------------------------------------------------------------------------------------
# Parent: rounds and report
# ---------------------------------------------------------------------------------------------
def run_rounds(args: argparse.Namespace) -> List[Dict[str, Dict[str, Any]]]:
    """``repeats`` rounds; in each, every mode runs local and global back to back (which goes
    first alternates between rounds, as does the order of the modes)."""
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench_global_tensors_results_") as tmp:
        for r in range(args.repeats):
            modes = args.modes if r % 2 == 0 else list(reversed(args.modes))
            tensors = TENSORS if r % 2 == 0 else tuple(reversed(TENSORS))
            results = {}
            for mode in modes:
                for kind in tensors:
                    name = f"{mode}:{kind}"
                    path = os.path.join(tmp, f"{r}_{mode}_{kind}.json")
                    child = [SCRIPT, "--child", name, "--result-file", path, "--iters", str(args.iters),
                             "--warmup", str(args.warmup), "--batch-size", str(args.batch_size)]
                    if args.quick:
                        child.append("--quick")
                    if args.small:
                        child.append("--small")
                    results[name] = run_child(child, path, f"variant {name!r}", args.threads, args.timeout)
                    print(f"  round {r + 1}/{args.repeats}: {name:<13} "
                          f"{results[name]['samples_per_s']:8.1f} samples/s", flush=True)
            rounds.append(results)
    return rounds


def report(args: argparse.Namespace, rounds: List[Dict[str, Dict[str, Any]]]) -> str:
    first = next(iter(rounds[0].values()))
    spec = first["spec"]
    size = GPTSize(**spec["size"])
    head = [
        f"model: {size.describe()} ({first['parameters']:,} parameters), batch {spec['global_batch']}, "
        "AdamW, DefaultTrainer (no periodic checkpoints, evaluation off), one process",
        f"device: {first['device_type']}, OMP_NUM_THREADS={first['threads']}; each variant in its own process; "
        f"{spec['warmup']} warm-up + {spec['iters']} timed iterations; {len(rounds)} round(s)",
        "",
    ]
    headers = ["mode", "local samples/s", "global samples/s", "global/local (per round)",
               "local samples/CPU-s", "global samples/CPU-s", "global/local CPU (per round)",
               "local step ms", "global step ms", "local compile s", "global compile s"]
    rows = []
    for mode in args.modes:
        def values(kind: str, key: str) -> List[float]:
            return [r[f"{mode}:{kind}"][key] for r in rounds]

        wall = [g / l for g, l in zip(values("global", "samples_per_s"), values("local", "samples_per_s"))]
        cpu = [g / l for g, l in zip(values("global", "samples_per_cpu_s"), values("local", "samples_per_cpu_s"))]
        compile_s = {k: statistics.median(max(f - s, 0.0) for f, s in zip(values(k, "first_iter_s"),
                                                                           values(k, "step_s")))
                     for k in TENSORS}
        rows.append([
            mode,
            Spread.of(values("local", "samples_per_s")).format(1),
            Spread.of(values("global", "samples_per_s")).format(1),
            f"{statistics.median(wall):.3f} ({min(wall):.3f}-{max(wall):.3f})",
            Spread.of(values("local", "samples_per_cpu_s")).format(1),
            Spread.of(values("global", "samples_per_cpu_s")).format(1),
            f"{statistics.median(cpu):.3f} ({min(cpu):.3f}-{max(cpu):.3f})",
            f"{statistics.median(values('local', 'step_s')) * 1000:.0f}",
            f"{statistics.median(values('global', 'step_s')) * 1000:.0f}",
            f"{compile_s['local']:.2f}", f"{compile_s['global']:.2f}",
        ])
    notes = [
        "",
        "samples/s: mean over rounds (min-max). global/local: median (min-max) over rounds of the ratio",
        "within a round (below 1: global tensors are slower). samples/CPU-s: per second of the child's",
        "CPU time (all threads), less disturbed by other jobs. step ms, compile s: medians over rounds;",
        "compile s = first iteration - steady step.",
    ]
    return report_text(head, headers, rows, notes)


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    announce = (f"Measuring {', '.join(args.modes)} with local and global tensors"
                f": {args.repeats} round(s)")
    benchmark_main("bench_global_tensors", args, child_main, announce, run_rounds, report)


if __name__ == "__main__":
    main()
