"""Eager against Graph mode, with and without AMP and activation checkpointing, on a small GPT.

    python benchmarks/bench_graph_vs_eager.py              # about 3 minutes on 2 CPU cores
    python benchmarks/bench_graph_vs_eager.py --repeats 5 --iters 20
    python benchmarks/bench_graph_vs_eager.py --quick      # tiny model, seconds of training

The model is a GPT with hidden size 256, 4 layers, 8 heads, sequence length 128 and a
vocabulary of 1024 (3.45 M parameters), dropout ``--dropout`` (0), trained on
``SyntheticLMDataset`` with AdamW (the default parameter groups, gradient clipping at 1.0),
batch ``--batch-size`` (8), through
``DefaultTrainer`` with its default hooks except the periodic checkpointer (writers every
10,000 iterations, evaluation off). Five configurations:

* ``eager``: the default;
* ``graph``: ``graph.enabled=True``, the step compiled into an ``nn.Graph``;
* ``graph+amp``: plus ``train.amp.enabled=True``;
* ``graph+ckpt``: plus ``train.activation_checkpoint.enabled=True`` (on the 4 blocks);
* ``eager+amp``: ``train.amp.enabled=True`` in Eager mode.

Each configuration runs in its own child process (``OMP_NUM_THREADS=--threads``, 1 by default,
like the multi-process launcher), so that each one's peak resident memory (which never goes
down within a process) is its own. In a child, ``--warmup`` iterations (the first one compiles
the graph) are left out, then ``--iters`` iterations are timed. ``--repeats`` rounds run every
configuration once, in alternating order, and the ratios to ``eager`` are taken within a round,
so that a change of the machine's load hits both sides of a ratio alike.

The last column says what precision each step really computed in: for Graph mode, read from
the compiled job (fp16 tensors and casts to fp16 that the AMP pass inserted); for Eager mode, the
dtype of the logits of a forward pass under the run's own autocast context.
"""
import argparse
import os
import statistics
import sys
import tempfile
from typing import Any, Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import (  # noqa: E402
    SMOKE_SIZE, GPTSize, RunSpec, Spread, add_child_arguments,
    add_shared_options, benchmark_main, graph_float_blobs, measure_training, parse_choices,
    report_text, round_parser, require_positive, run_child, write_child_result)

SCRIPT = os.path.abspath(__file__)

# name -> (graph.enabled, train.amp.enabled, train.activation_checkpoint.enabled)
CONFIGS: Dict[str, Dict[str, bool]] = {
    "eager": dict(graph=False, amp=False, activation_checkpoint=False),
    "graph": dict(graph=True, amp=False, activation_checkpoint=False),
    "graph+amp": dict(graph=True, amp=True, activation_checkpoint=False),
    "graph+ckpt": dict(graph=True, amp=False, activation_checkpoint=True),
    "eager+amp": dict(graph=False, amp=True, activation_checkpoint=False),
}
BASELINE = "eager"


def parse_args(argv: Optional[List[str]] = None) -> argparse.Namespace:
    parser = round_parser(
        "Samples/s, ratio to Eager mode, compile time and peak memory of a small GPT "
        "trained in Eager and Graph mode, with and without AMP and activation checkpointing.",
        iters=5, warmup=2, repeats=3, repeats_help="rounds of all configurations, in alternating order")
    add_shared_options(parser, "--batch-size", "--dropout", "--threads")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated subset of: " + ", ".join(CONFIGS) + " (default: all)")
    add_shared_options(parser, "--device")
    add_child_arguments(parser, "a tiny GPT, 1 warm-up + 2 timed iterations, 1 round (for smoke tests)",
                        timeout=600, timeout_help="seconds allowed per child")
    args = parser.parse_args(argv)
    require_positive(parser, args, ("iters", "warmup", "repeats", "batch_size", "threads"))
    args.configs = parse_choices(parser, "--configs", args.configs, list(CONFIGS), "configuration(s)")
    if BASELINE not in args.configs:
        args.configs.insert(0, BASELINE)  # every ratio is to Eager mode
    if args.quick:
        args.iters, args.warmup, args.repeats = 2, 1, 1
    return args


def run_spec(args: argparse.Namespace, name: str) -> RunSpec:
    size = SMOKE_SIZE if args.quick else GPTSize()
    batch = min(args.batch_size, 4) if args.quick else args.batch_size
    return RunSpec(size=size, global_batch=batch, warmup=args.warmup, iters=args.iters,
                   dropout=args.dropout, device_type=args.device, **CONFIGS[name])


# ---------------------------------------------------------------------------------------------
# Child: one configuration
# ---------------------------------------------------------------------------------------------
def precision_probe(trainer: Any) -> Dict[str, Any]:
    """What the step computed in: the compiled graph's float tensors, or the eager logits' dtype."""
    if trainer.graph_train is not None:
        return {"graph_blobs": graph_float_blobs(trainer.graph_train)}
    import oneflow as flow

    layout, seq = trainer.layout, int(trainer.cfg.model.cfg.max_seq_length)
    ids = layout.to_global(flow.zeros((1, seq), dtype=flow.int64), [flow.sbp.split(0), flow.sbp.broadcast])
    with flow.no_grad(), trainer.optimizer_step.autocast():
        logits = trainer.model(input_ids=ids)["prediction_scores"]
    return {"eager_logits_dtype": str(logits.dtype).replace("oneflow.", "")}


def child_main(args: argparse.Namespace) -> None:
    import libai  # noqa: F401  (before oneflow; OMP_NUM_THREADS is already set by the parent)

    with tempfile.TemporaryDirectory(prefix="bench_graph_eager_") as out:
        result = measure_training(run_spec(args, args.child), out, probe=precision_probe)
    write_child_result(args.result_file, result, config=args.child)


# ---------------------------------------------------------------------------------------------
# Parent: rounds and report
# ---------------------------------------------------------------------------------------------
def run_rounds(args: argparse.Namespace) -> List[Dict[str, Dict[str, Any]]]:
    """``repeats`` rounds of every configuration, each in a fresh child; odd rounds run the
    configurations in reverse order."""
    rounds = []
    with tempfile.TemporaryDirectory(prefix="bench_graph_eager_results_") as tmp:
        for r in range(args.repeats):
            order = args.configs if r % 2 == 0 else list(reversed(args.configs))
            results = {}
            for name in order:
                path = os.path.join(tmp, f"{r}_{name}.json")
                child = [SCRIPT, "--child", name, "--result-file", path, "--iters", str(args.iters),
                         "--warmup", str(args.warmup), "--batch-size", str(args.batch_size),
                         "--dropout", str(args.dropout)]
                if args.quick:
                    child.append("--quick")
                if args.device:
                    child += ["--device", args.device]
                results[name] = run_child(child, path, f"configuration {name!r}", args.threads, args.timeout)
                print(f"  round {r + 1}/{args.repeats}: {name:<11} {results[name]['samples_per_s']:8.1f} samples/s",
                      flush=True)
            rounds.append(results)
    return rounds


def precision_label(result: Dict[str, Any]) -> str:
    """``fp32``/``fp16`` and the evidence, for the last column."""
    blobs = result.get("graph_blobs")
    if blobs is None:
        dtype = result.get("eager_logits_dtype", "?")
        label = "fp32" if dtype == "float32" else "fp16 mixed" if dtype in ("float16", "bfloat16") else dtype
        return f"{label} (logits {dtype})"
    half = blobs.get("float16", 0) + blobs.get("bfloat16", 0)
    floats = half + blobs.get("float32", 0)
    label = "fp16 mixed" if half or blobs.get("half_casts", 0) else "fp32"
    return f"{label} ({half}/{floats} tensors fp16)"


def _ratio_cells(rounds: List[Dict[str, Dict[str, Any]]], name: str, key: str) -> List[str]:
    """Mean (min-max) of ``key`` over rounds, and its ratio to eager's mean."""
    values = Spread.of([r[name][key] for r in rounds])
    base = statistics.fmean(r[BASELINE][key] for r in rounds)
    return [values.format(1), f"{values.mean / base:.3f}"]


def config_row(rounds: List[Dict[str, Dict[str, Any]]], name: str) -> List[str]:
    """One table row: throughput by wall and CPU time, their ratios to eager, times, memory."""
    runs = [r[name] for r in rounds]
    per_round = Spread.of([r[name]["samples_per_s"] / r[BASELINE]["samples_per_s"] for r in rounds])
    step = statistics.median(x["step_s"] for x in runs)
    first_iter = statistics.median(x["first_iter_s"] for x in runs)
    peak = statistics.median(x["peak_rss_mb"] for x in runs)
    growth = statistics.median(x["peak_rss_mb"] - x["rss_before_train_mb"] for x in runs)
    return ([name] + _ratio_cells(rounds, name, "samples_per_s") + [per_round.format(3)]
            + _ratio_cells(rounds, name, "samples_per_cpu_s")
            + [f"{step * 1000:.0f}", f"{max(first_iter - step, 0.0):.2f}", f"{peak:.0f}", f"{growth:.0f}",
               precision_label(runs[0])])


def report(args: argparse.Namespace, rounds: List[Dict[str, Dict[str, Any]]]) -> str:
    first = rounds[0][BASELINE]
    spec = first["spec"]
    size = GPTSize(**spec["size"])
    head = [
        f"model: {size.describe()}, dropout {spec['dropout']} ({first['parameters']:,} parameters), "
        f"batch {spec['global_batch']}, AdamW, DefaultTrainer (no periodic checkpoints, evaluation off)",
        f"device: {first['device_type']}, OMP_NUM_THREADS={first['threads']}; each configuration in its own "
        f"process; {spec['warmup']} warm-up + {spec['iters']} timed iterations; {len(rounds)} round(s), "
        "alternating order",
        "",
    ]
    headers = ["configuration", "samples/s (min-max)", "vs eager", "per round (min-max)",
               "samples/CPU-s (min-max)", "vs eager (CPU)", "step ms", "compile s", "peak RSS MB",
               "growth MB", "computes in"]
    rows = [config_row(rounds, name) for name in args.configs]
    notes = [
        "",
        "samples/s: mean over rounds (min-max) of wall-clock throughput; vs eager: that mean over eager's; per",
        "round: the ratio within each round. samples/CPU-s: samples per second of the child's CPU time (all",
        "threads), which other jobs on the machine disturb far less. step ms, compile s, peak RSS, growth:",
        "medians over rounds; compile s = first iteration - steady step. peak RSS: the child's peak resident",
        "memory (VmHWM), start-up included; growth: that peak minus the resident memory just before the first",
        "iteration (what training itself added).",
    ] + amp_notes(args, rounds)
    return report_text(head, headers, rows, notes)


def amp_notes(args: argparse.Namespace, rounds: List[Dict[str, Dict[str, Any]]]) -> List[str]:
    """Say plainly what AMP did, from the evidence the children collected."""
    notes = []
    for name in args.configs:
        result = rounds[0][name]
        if not result["spec"]["amp"]:
            continue
        blobs = result.get("graph_blobs")
        if blobs is not None:
            floats = sum(v for k, v in blobs.items() if k.startswith(("float", "bfloat")))
            precision = "fp16 mixed precision" if blobs.get("half_casts") else "fp32"
            notes.append(
                f"{name}: the compiled graph has {blobs.get('loss_scaling_ops', 0)} loss-scaling op(s) (AMP was "
                f"applied) and {blobs.get('half_casts', 0)} cast(s) to half precision; "
                f"{blobs.get('float16', 0)} of its {floats} float tensors are fp16 -> it computed in {precision}."
            )
        else:
            notes.append(f"{name}: logits under the run's autocast context are {result.get('eager_logits_dtype')} "
                         f"on {result['device_type']}.")
    return [""] + notes if notes else []


def main(argv: Optional[List[str]] = None) -> None:
    args = parse_args(argv)
    announce = (f"Measuring {', '.join(args.configs)}"
                f": {args.repeats} round(s), each configuration in its own process")
    benchmark_main("bench_graph_vs_eager", args, child_main, announce, run_rounds, report)


if __name__ == "__main__":
    main()
