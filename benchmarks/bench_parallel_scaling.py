"""The same GPT and global batch in 1 process and in 2 processes under each parallel layout.

    python benchmarks/bench_parallel_scaling.py            # about 3 minutes on 2 CPU cores
    python benchmarks/bench_parallel_scaling.py --repeats 2    # about 6 minutes
    python benchmarks/bench_parallel_scaling.py --quick    # tiny model, 1 process and DP=2 only

The model and data are those of ``bench_graph_vs_eager.py`` (a GPT with hidden size 256,
4 layers, 8 heads, sequence 128, vocabulary 1024, on ``SyntheticLMDataset``, through
``DefaultTrainer``). The global batch is fixed (``--global-batch``, 8) and every run makes
``--micro-batches`` (4) micro-batches per step (``train.num_accumulation_steps``), so every row
does the same work in the same pieces. Tensor- and pipeline-parallel graphs on the CPU need
several: OneFlow 0.9 aborts with one (``register.cpp:75 Check failed:
separated_header_mem_ptr() == nullptr``), and here the tensor-parallel graph of this GPT aborted
the same way with 2 micro-batches too (the tiny GPT of the tests, sequence 16, runs with 2);
with 4 it ran. Layouts:

* ``1 process``: the baseline;
* ``DP=2``: data parallel, each process takes half of every micro-batch;
* ``TP=2``: tensor parallel, each process holds half of every weight matrix;
* ``PP=2``: pipeline parallel, layers 0-1 on one process, 2-3 on the other.

Every run, the 1-process one included, is started with ``python -m oneflow.distributed.launch``
on a free port and ``OMP_NUM_THREADS=1`` (the launcher's own default for several processes), so
the only difference between rows is the layout. Each launch trains in Eager mode and then in
Graph mode (the other way round in odd rounds), from scratch each time, and every rank writes
its steady-state samples/s to a file (rank 0's is reported; the loss read that ends each timing
window waits for every rank). Memory is not compared here: both modes run in one process, whose
peak never goes down (``bench_graph_vs_eager.py`` measures memory, one process per mode).
``--repeats`` rounds alternate the order of the layouts; ratios to the 1-process run are taken
within a round.

On a machine with fewer free cores than processes, expect no speed-up: the table then shows what
each layout costs in communication and coordination.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import tempfile
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import (  # noqa: E402
    SMOKE_SIZE, ChildFailed, GPTSize, RunSpec, Spread, add_child_arguments,
    add_shared_options, benchmark_main, measure_training, parse_choices, report_text, round_parser,
    require_positive, write_child_result)

SCRIPT = os.path.abspath(__file__)

# name -> (processes, data, tensor, pipeline parallel sizes)
LAYOUTS: Dict[str, Dict[str, int]] = {
    "1 process": dict(nproc=1, dp=1, tp=1, pp=1),
    "DP=2": dict(nproc=2, dp=2, tp=1, pp=1),
    "TP=2": dict(nproc=2, dp=1, tp=2, pp=1),
    "PP=2": dict(nproc=2, dp=1, tp=1, pp=2),
}
BASELINE = "1 process"
MODES = ("eager", "graph")


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = round_parser(
        "Samples/s of a small GPT in 1 process and in 2 processes under data, tensor "
        "and pipeline parallelism (Eager and Graph mode), with the ratios to 1 process.",
        iters=3, warmup=2, repeats=1, repeats_help="rounds of all layouts, in alternating order")
    parser.add_argument("--global-batch", type=int, default=8,
                        help="samples per step, the same in every layout; a multiple of 2 × --micro-batches "
                        "(default: %(default)s)")
    parser.add_argument("--micro-batches", type=int, default=4,
                        help="micro-batches per step in every run (train.num_accumulation_steps); tensor- and "
                        "pipeline-parallel graphs on the CPU need several (default: %(default)s)")
    add_shared_options(parser, "--dropout")
    parser.add_argument("--layouts", default=",".join(LAYOUTS),
                        help="comma-separated subset of: " + ", ".join(LAYOUTS) + " (default: all)")
    parser.add_argument("--modes", default=",".join(MODES), help="eager, graph or both (default: both)")
    add_shared_options(parser, "--device")
    add_child_arguments(parser, "a tiny GPT, 1 warm-up + 2 timed iterations, 1 round, 1 process and DP=2 only",
                        timeout=900, timeout_help="seconds allowed per launch", result_flag="--result-dir")
    args = parser.parse_args(argv)
    require_positive(parser, args, ("iters", "warmup", "repeats", "global_batch", "micro_batches"))
    if args.global_batch % (2 * args.micro_batches):
        parser.error(f"--global-batch must be a multiple of {2 * args.micro_batches} (2 data-parallel ranks × "
                     f"{args.micro_batches} micro-batches), got {args.global_batch}")
    if args.quick:
        args.iters, args.warmup, args.repeats, args.layouts = 2, 1, 1, f"{BASELINE},DP=2"
    args.layouts = parse_choices(parser, "--layouts", args.layouts, list(LAYOUTS), "value(s)")
    args.modes = parse_choices(parser, "--modes", args.modes, MODES, "value(s)")
    if BASELINE not in args.layouts:
        args.layouts.insert(0, BASELINE)  # every ratio is to the 1-process run
    return args


# ---------------------------------------------------------------------------------------------
# Child: every rank of one launch
# ---------------------------------------------------------------------------------------------
def child_main(args: argparse.Namespace) -> None:
    import libai  # noqa: F401  (before oneflow)
    from libai.utils import distributed as dist

    layout = LAYOUTS[args.child]
    size = SMOKE_SIZE if args.quick else GPTSize()
    rank = dist.get_rank()
    for mode in args.modes:
        spec = RunSpec(size=size, global_batch=args.global_batch, micro_batches=args.micro_batches,
                       dp=layout["dp"], tp=layout["tp"], pp=layout["pp"], graph=(mode == "graph"),
                       warmup=args.warmup, iters=args.iters, dropout=args.dropout,
                       device_type=args.device)
        with tempfile.TemporaryDirectory(prefix=f"bench_scaling_{rank}_") as out:
            result = measure_training(spec, out)
        write_child_result(os.path.join(args.result_dir, f"{mode}_rank{rank}.json"), result,
                           layout=args.child, mode=mode, rank=rank)
        dist.synchronize()


def run_child_launch(args: argparse.Namespace, name: str, modes: List[str], result_dir: str) -> Dict[str, Any]:
    """Launch one layout; return ``{mode: rank 0's result}`` (after checking every rank wrote one)."""
    from libai.utils.testing import launch

    child = ["--child", name, "--result-dir", result_dir, "--modes", ",".join(modes),
             "--iters", str(args.iters), "--warmup", str(args.warmup), "--global-batch", str(args.global_batch),
             "--dropout", str(args.dropout), "--micro-batches", str(args.micro_batches)]
    if args.quick:
        child.append("--quick")
    if args.device:
        child += ["--device", args.device]
    proc = launch(SCRIPT, LAYOUTS[name]["nproc"], child, timeout=args.timeout, env={"OMP_NUM_THREADS": "1"})
    if proc.returncode != 0:
        raise ChildFailed(f"the {name} launch failed (exit code {proc.returncode}); its output ends with:\n"
                          f"{proc.stdout[-4000:]}")
    results = {}
    for mode in modes:
        ranks = []
        for path in sorted(glob.glob(os.path.join(result_dir, f"{mode}_rank*.json"))):
            with open(path) as f:
                ranks.append(json.load(f))
        if len(ranks) != LAYOUTS[name]["nproc"]:
            raise ChildFailed(f"the {name} launch wrote {len(ranks)} result file(s) for {mode}, expected "
                              f"{LAYOUTS[name]['nproc']}; its output ends with:\n{proc.stdout[-4000:]}")
        main = next(r for r in ranks if r["rank"] == 0)
        # CPU time of every process together: what the layout costs in total work.
        samples = main["spec"]["global_batch"] * main["spec"]["iters"]
        main["samples_per_cpu_s_all"] = samples / sum(r["window_cpu_s"] for r in ranks)
        results[mode] = main
    return results


def run_rounds(args: argparse.Namespace) -> List[Dict[str, Dict[str, Any]]]:
    """``repeats`` rounds: every layout once (reversed in odd rounds), modes alternating too."""
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench_scaling_results_") as tmp:
        for r in range(args.repeats):
            order = args.layouts if r % 2 == 0 else list(reversed(args.layouts))
            modes = args.modes if r % 2 == 0 else list(reversed(args.modes))
            results: Dict[str, Dict[str, Any]] = {}
            for name in order:
                result_dir = os.path.join(tmp, f"{r}_{name.replace(' ', '_').replace('=', '')}")
                os.makedirs(result_dir)
                for mode, res in run_child_launch(args, name, modes, result_dir).items():
                    results[f"{name}|{mode}"] = res
                    print(f"  round {r + 1}/{args.repeats}: {name:<9} {mode:<5} "
                          f"{res['samples_per_s']:8.1f} samples/s", flush=True)
            rounds.append(results)
    return rounds


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
def report(args: argparse.Namespace, rounds: List[Dict[str, Dict[str, Any]]]) -> str:
    first = rounds[0][f"{BASELINE}|{args.modes[0]}"]
    size = GPTSize(**first["spec"]["size"])
    spec = first["spec"]
    head = [
        f"model: {size.describe()}, dropout {spec['dropout']} ({first['parameters']:,} parameters), "
        f"global batch {spec['global_batch']} "
        f"in {spec['micro_batches']} micro-batches per step, AdamW, DefaultTrainer",
        f"device: {first['device_type']}, OMP_NUM_THREADS={first['threads']} in every process (1-process run "
        f"included), every run started by oneflow.distributed.launch; {spec['warmup']} warm-up + "
        f"{spec['iters']} timed iterations; {len(rounds)} round(s), alternating order",
        "",
    ]
    rows = []
    for mode in args.modes:
        base = [r[f"{BASELINE}|{mode}"]["samples_per_s"] for r in rounds]
        for name in args.layouts:
            key = f"{name}|{mode}"
            runs = [r[key] for r in rounds]
            speed = Spread.of([x["samples_per_s"] for x in runs])
            per_round = Spread.of([x["samples_per_s"] / b for x, b in zip(runs, base)])
            cpu = Spread.of([x["samples_per_cpu_s_all"] for x in runs])
            cpu_base = statistics.fmean(r[f"{BASELINE}|{mode}"]["samples_per_cpu_s_all"] for r in rounds)
            rows.append([
                name, mode, LAYOUTS[name]["nproc"], speed.format(1),
                f"{speed.mean / statistics.fmean(base):.3f}", per_round.format(3),
                cpu.format(1), f"{cpu.mean / cpu_base:.3f}",
                f"{statistics.median(x['step_s'] for x in runs) * 1000:.0f}",
                f"{statistics.median(x['first_iter_s'] for x in runs):.2f}",
            ])
    headers = ["layout", "mode", "processes", "samples/s (min-max)", "vs 1 process",
               "per round (min-max)", "samples/CPU-s (min-max)", "vs 1 process (CPU)", "step ms",
               "first iter s"]
    notes = [
        "",
        "samples/s: mean over rounds (min-max). vs 1 process: that mean over the 1-process mean of the same",
        "mode; per round: the ratio within each round. samples/CPU-s: samples per second of CPU time of all",
        "processes together (all threads; waiting in a collective can spin and count too): the total work a",
        "layout spends, little disturbed by other jobs. step ms, first iter s (graph compilation and the first",
        "collectives included): medians over rounds. Perfect scaling on 2 free cores would be a wall-clock",
        "ratio of 2 at a CPU ratio of 1; below 1, the layout's communication and coordination cost more than",
        "the second process gave.",
    ]
    return report_text(head, headers, rows, notes)


def child_main_or_end_every_rank(args: argparse.Namespace) -> None:
    """``child_main``; on an error in a multi-process launch, end every rank instead of leaving
    the others hanging in the next collective."""
    try:
        child_main(args)
    except Exception:
        from libai.engine.default import exit_now_on_failure
        from libai.utils import distributed as dist

        if dist.get_world_size() > 1:
            exit_now_on_failure()
        raise


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    announce = (f"Measuring {', '.join(args.layouts)} in {' and '.join(args.modes)} mode"
                f": {args.repeats} round(s)")
    benchmark_main("bench_parallel_scaling", args, child_main_or_end_every_rank, announce,
                   run_rounds, report)


if __name__ == "__main__":
    main()
