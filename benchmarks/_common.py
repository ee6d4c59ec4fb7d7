"""Shared pieces of ``bench_graph_vs_eager.py``, ``bench_parallel_scaling.py`` and
``bench_global_tensors.py``.

The three benchmarks train the same small GPT on synthetic tokens through ``DefaultTrainer`` in child
processes and report steady-state samples/s. This module holds what they share:

* the parent side (no OneFlow import, so the parent stays small): running a child and reading
  the JSON it writes, summary statistics, and a plain-text table;
* the child side: the training config, a hook that times the steady state, peak memory, and the
  precision the step really computed in. OneFlow is imported inside these functions only, so the
  caller can set ``OMP_NUM_THREADS`` before OneFlow sizes its thread pools.
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Callable, Dict, List, Optional, Sequence

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
    sys.path.insert(0, REPO_ROOT)


# ---------------------------------------------------------------------------------------------
# The model
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GPTSize:
    """Sizes of the benchmarked GPT (``intermediate`` is 4 × ``hidden``, as in GPT-2)."""

    hidden: int = 256
    layers: int = 4
    heads: int = 8
    seq: int = 128
    vocab: int = 1024

    def describe(self) -> str:
        return (f"GPT hidden {self.hidden}, {self.layers} layers, {self.heads} heads, "
                f"sequence {self.seq}, vocabulary {self.vocab}")


# The ``--quick`` model of the smoke tests: every code path, a fraction of the arithmetic.
QUICK_SIZE = GPTSize(hidden=64, layers=2, heads=4, seq=32, vocab=128)
# ``--quick`` of the timing benchmarks (the test suite's smoke runs): one block is every code path
# of a step, and its graph compiles in about two thirds of the time of two.
SMOKE_SIZE = GPTSize(hidden=64, layers=1, heads=4, seq=32, vocab=128)


# ---------------------------------------------------------------------------------------------
# Parent side: statistics, tables, children
# ---------------------------------------------------------------------------------------------
@dataclass
class Spread:
    """Mean, minimum and maximum of repeated measurements."""

    mean: float
    low: float
    high: float

    @classmethod
    def of(cls, values: Sequence[float]) -> "Spread":
        if not values:
            raise ValueError("no measurements to summarise")
        return cls(statistics.fmean(values), min(values), max(values))

    def format(self, digits: int = 1) -> str:
        if len({round(self.low, digits), round(self.high, digits)}) == 1:
            return f"{self.mean:.{digits}f}"
        return f"{self.mean:.{digits}f} ({self.low:.{digits}f}-{self.high:.{digits}f})"


def format_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """Columns padded to their widest cell; the first column left-aligned, the rest right."""
    cells = [[str(h) for h in headers]] + [[str(c) for c in row] for row in rows]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]

    def line(row: List[str]) -> str:
        parts = [row[0].ljust(widths[0])] + [c.rjust(w) for c, w in zip(row[1:], widths[1:])]
        return "  ".join(parts).rstrip()

    rule = "  ".join("-" * w for w in widths)
    return "\n".join([line(cells[0]), rule] + [line(r) for r in cells[1:]])


class ChildFailed(RuntimeError):
    """A measuring child process exited with an error; the message holds its output's tail."""


def add_round_arguments(parser: Any, iters: int, warmup: int, repeats: int, repeats_help: str) -> None:
    """``--iters``, ``--warmup`` and ``--repeats``, the arguments every round-based benchmark takes."""
    parser.add_argument("--iters", type=int, default=iters, help="timed iterations per run (default: %(default)s)")
    parser.add_argument("--warmup", type=int, default=warmup,
                        help="untimed iterations first; the first compiles the graph (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=repeats, help=f"{repeats_help} (default: %(default)s)")


# The options several benchmarks share, by flag: (type, default, help) or, for --device, choices.
_SHARED_OPTIONS: Dict[str, Dict[str, Any]] = {
    "--batch-size": dict(type=int, default=8, help="samples per step (default: %(default)s)"),
    "--dropout": dict(type=float, default=0.0,
                      help="dropout probability of the GPT; 0.1 is GPT-2's (default: %(default)s)"),
    "--threads": dict(type=int, default=1,
                      help="OMP_NUM_THREADS of each child process (default: %(default)s)"),
    "--device": dict(choices=("cpu", "cuda"), default=None,
                     help="device type (default: CUDA when OneFlow sees a GPU, else CPU)"),
}


def round_parser(description: str, iters: int, warmup: int, repeats: int,
                 repeats_help: str) -> argparse.ArgumentParser:
    """The argument parser of a round-based benchmark, with its round arguments."""
    parser = argparse.ArgumentParser(description=description)
    add_round_arguments(parser, iters, warmup, repeats, repeats_help)
    return parser


def add_shared_options(parser: Any, *flags: str) -> None:
    """Add the named options of ``_SHARED_OPTIONS``, in the order given (the ``--help`` order)."""
    for flag in flags:
        parser.add_argument(flag, **_SHARED_OPTIONS[flag])


def require_positive(parser: Any, args: Any, names: Sequence[str]) -> None:
    """Refuse a count below 1, naming its flag."""
    for name in names:
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")


def add_child_arguments(parser: Any, quick_help: str, timeout: float, timeout_help: str,
                        result_flag: str = "--result-file") -> None:
    """``--quick``, ``--timeout`` and the hidden ``--child`` and result flag, which every
    benchmark that measures in child processes takes (in this order, after its own)."""
    parser.add_argument("--quick", action="store_true", help=quick_help)
    parser.add_argument("--timeout", type=float, default=timeout,
                        help=f"{timeout_help} (default: %(default)s)")
    parser.add_argument("--child", default=None, help=argparse.SUPPRESS)
    parser.add_argument(result_flag, default=None, help=argparse.SUPPRESS)


def parse_choices(parser: Any, flag: str, value: str, allowed: Sequence[str], what: str) -> List[str]:
    """The comma-separated ``value`` of ``flag`` as a list, refusing a name not in ``allowed``
    (``what`` names the kind, e.g. ``"mode(s)"``) or an empty list."""
    chosen = [v.strip() for v in value.split(",") if v.strip()]
    unknown = [v for v in chosen if v not in allowed]
    if unknown or not chosen:
        parser.error(f"{flag}: unknown {what} {unknown}; choose from {', '.join(allowed)}")
    return chosen


def measure_in_rounds(name: str, announce: str, run_rounds: Callable[[Any], Any],
                      report: Callable[[Any, Any], str], args: Any) -> None:
    """The parent side every round-based benchmark shares: say what is measured, run the
    rounds (each variant in its own child process), then print the report; a child that failed
    ends the benchmark with its message instead of a traceback."""
    print(announce, flush=True)
    try:
        rounds = run_rounds(args)
    except ChildFailed as e:
        sys.exit(f"{name}: {e}")
    print()
    print(report(args, rounds))


def benchmark_main(name: str, args: Any, child_main: Callable[[Any], None], announce: str,
                   run_rounds: Callable[[Any], Any], report: Callable[[Any, Any], str]) -> None:
    """What a benchmark's ``main`` does with its parsed ``args``: a child measures one variant
    (``child_main``); the parent runs the rounds and prints the report."""
    if args.child:
        child_main(args)
        return
    measure_in_rounds(name, announce, run_rounds, report, args)


def report_text(head: List[str], headers: Sequence[str], rows: Sequence[Sequence[Any]],
                notes: List[str]) -> str:
    """A benchmark's report: the lines saying what ran, the table, then the notes reading it."""
    return "\n".join(head + [format_table(headers, rows)] + notes)


def write_child_result(path: str, result: Dict[str, Any], **extra: Any) -> None:
    """Write a child's ``result`` (plus ``extra`` and its ``OMP_NUM_THREADS``) for the parent."""
    result.update(extra)
    result["threads"] = os.environ.get("OMP_NUM_THREADS")
    with open(path, "w") as f:
        json.dump(result, f)


def read_result(path: str, what: str, output: str) -> Dict[str, Any]:
    """The JSON a child wrote, or :class:`ChildFailed` with the child's output when it did not."""
    if not os.path.exists(path):
        raise ChildFailed(f"{what} wrote no result file {path}; its output ends with:\n{output[-4000:]}")
    with open(path) as f:
        return json.load(f)


def run_child(args: Sequence[str], result_path: str, what: str, threads: int,
              timeout: float) -> Dict[str, Any]:
    """Run ``python <args>`` with ``OMP_NUM_THREADS=threads`` and return the JSON it writes."""
    env = dict(os.environ, OMP_NUM_THREADS=str(threads))
    proc = subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env,
                          cwd=REPO_ROOT, timeout=timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise ChildFailed(f"{what} failed (exit code {proc.returncode}); its output ends with:\n"
                          f"{output[-4000:]}")
    return read_result(result_path, what, output)


# ---------------------------------------------------------------------------------------------
# Child side: memory
# ---------------------------------------------------------------------------------------------
def _proc_status_mb(field: str) -> Optional[float]:
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024.0  # the value is in kB
    except OSError:
        pass
    return None


def peak_rss_mb() -> float:
    """This process's peak resident memory so far, in MB (Linux ``VmHWM``; elsewhere
    ``ru_maxrss``, which Linux also reports in kB). It never decreases within a process."""
    value = _proc_status_mb("VmHWM")
    if value is not None:
        return value
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def current_rss_mb() -> float:
    """This process's resident memory now, in MB (falls back to the peak off Linux)."""
    value = _proc_status_mb("VmRSS")
    return value if value is not None else peak_rss_mb()


# ---------------------------------------------------------------------------------------------
# Child side: the training run
# ---------------------------------------------------------------------------------------------
@dataclass
class RunSpec:
    """One measured training run: layout, mode and techniques, and how long to time it."""

    size: GPTSize
    global_batch: int
    micro_batches: int = 1
    dp: int = 1
    tp: int = 1
    pp: int = 1
    graph: bool = False
    amp: bool = False
    activation_checkpoint: bool = False
    warmup: int = 2
    iters: int = 5
    dropout: float = 0.0  # GPT-2 uses 0.1 (it measured no slower here: --dropout 0.1)
    device_type: Optional[str] = None  # None: what the machine has (CUDA when OneFlow sees a GPU)
    seed: int = 1234


def gpt_training_config(spec: RunSpec, output_dir: str) -> Any:
    """A complete lazy config for ``DefaultTrainer``: the GPT, synthetic data, AdamW with the
    default parameter groups and clipping, no LR warmup, evaluation off, writers every 10,000
    iterations (so no loss is read back inside the timed window)."""
    from omegaconf import OmegaConf

    from libai.config import LazyCall, get_config
    from libai.data.build import build_nlp_train_loader
    from libai.data.datasets.synthetic import SyntheticLMDataset
    from libai.models import GPTForPreTraining

    s = spec.size
    per_rank = spec.global_batch // (spec.dp * spec.micro_batches)
    if per_rank < 1 or per_rank * spec.dp * spec.micro_batches != spec.global_batch:
        raise ValueError(
            f"global batch {spec.global_batch} does not divide into {spec.dp} data-parallel "
            f"rank(s) × {spec.micro_batches} micro-batch(es); pick a multiple of "
            f"{spec.dp * spec.micro_batches}"
        )
    cfg = OmegaConf.create()
    cfg.model = LazyCall(GPTForPreTraining)(cfg=dict(
        vocab_size=s.vocab, hidden_size=s.hidden, hidden_layers=s.layers,
        num_attention_heads=s.heads, intermediate_size=4 * s.hidden, max_seq_length=s.seq,
        embedding_dropout_prob=spec.dropout, attention_dropout_prob=spec.dropout,
        hidden_dropout_prob=spec.dropout))
    cfg.train = get_config("common/train.py").train
    cfg.optim = get_config("common/optim.py").optim
    cfg.graph = get_config("common/models/graph.py").graph
    cfg.graph.enabled = spec.graph
    samples = spec.global_batch * (spec.warmup + spec.iters + 1)
    cfg.dataloader = OmegaConf.create()
    cfg.dataloader.train = LazyCall(build_nlp_train_loader)(
        dataset=[LazyCall(SyntheticLMDataset)(num_samples=samples, seq_length=s.seq, vocab_size=s.vocab)],
        num_workers=0)
    cfg.train.update(dict(
        output_dir=output_dir, train_micro_batch_size=per_rank,
        num_accumulation_steps=spec.micro_batches, global_batch_size=spec.global_batch,
        train_iter=spec.warmup + spec.iters, warmup_ratio=0.0, log_period=10000,
        amp=dict(enabled=spec.amp), activation_checkpoint=dict(enabled=spec.activation_checkpoint),
        evaluation=dict(enabled=False), checkpointer=dict(period=10 ** 9), seed=spec.seed,
        dist=dict(data_parallel_size=spec.dp, tensor_parallel_size=spec.tp,
                  pipeline_parallel_size=spec.pp, pipeline_num_layers=s.layers,
                  device_type=spec.device_type),
    ))
    return cfg


def make_steady_state_timer(warmup: int, iters: int, clock: Callable[[], float] = time.perf_counter,
                            cpu_clock: Callable[[], float] = time.process_time) -> Any:
    """A hook timing iterations ``warmup+1 .. warmup+iters`` (see ``SteadyStateTimer`` inside)
    by the wall clock and by this process's CPU time (all threads). Other jobs on a shared
    machine stretch the wall time far more than the CPU time a step needs.

    Built by a function so that ``libai`` (and OneFlow) is imported only in the child.
    """
    from libai.engine.trainer import HookBase

    class SteadyStateTimer(HookBase):
        """Times the first iteration (graph compilation included) and a steady-state window.

        OneFlow queues work asynchronously, so each boundary waits for the step by reading
        that iteration's loss: the loss of iteration ``i`` needs the update of ``i-1``, so the
        window between two such reads holds exactly ``iters`` steps of work.
        """

        def __init__(self) -> None:
            self.first_iter_s = math.nan
            self.window_s = self.window_cpu_s = math.nan
            self._t0 = self._start = self._start_cpu = 0.0

        def _wait(self) -> float:
            # All queued work, not just the loss: the backward and the update come after it.
            from libai.utils.process import wait_for_queued_work

            wait_for_queued_work()
            return clock()

        def before_train(self) -> None:
            self._t0 = clock()

        def after_step(self) -> None:
            done = self.trainer.iter - self.trainer.start_iter + 1
            if done == 1:
                self.first_iter_s = self._wait() - self._t0
            if done == warmup:
                self._start = self._wait()
                self._start_cpu = cpu_clock()
            if done == warmup + iters:
                self.window_s = self._wait() - self._start
                self.window_cpu_s = cpu_clock() - self._start_cpu

    return SteadyStateTimer()


def measure_training(spec: RunSpec, output_dir: str,
                     probe: Optional[Callable[[Any], Dict[str, Any]]] = None) -> Dict[str, Any]:
    """Build a ``DefaultTrainer`` for ``spec``, train ``warmup + iters`` iterations and return
    samples per second of wall time and of this process's CPU time over the timed ones, the
    first iteration's time, the build time, memory and whatever ``probe(trainer)`` adds.
    Periodic checkpoints are off (nothing is written)."""
    if spec.warmup < 1 or spec.iters < 1:
        raise ValueError(f"warmup and iters must be >= 1, got {spec.warmup} and {spec.iters}")
    from libai.engine import DefaultTrainer, hooks

    class BenchTrainer(DefaultTrainer):
        """The default hooks minus the periodic checkpointer (its final save is not training)."""

        def build_hooks(self) -> List[Any]:
            return [h for h in super().build_hooks() if not isinstance(h, hooks.PeriodicCheckpointer)]

    os.makedirs(output_dir, exist_ok=True)
    start = time.perf_counter()
    trainer = BenchTrainer(gpt_training_config(spec, output_dir))
    build_s = time.perf_counter() - start
    rss_before = current_rss_mb()
    timer = make_steady_state_timer(spec.warmup, spec.iters)
    trainer.register_hooks([timer], before="IterationTimer")
    trainer.train()
    batch = trainer.plan.batch.global_batch_size
    result = dict(
        spec=asdict(spec), samples_per_s=batch * spec.iters / timer.window_s,
        step_s=timer.window_s / spec.iters, window_cpu_s=timer.window_cpu_s,
        samples_per_cpu_s=batch * spec.iters / timer.window_cpu_s,
        first_iter_s=timer.first_iter_s, build_s=build_s,
        rss_before_train_mb=rss_before, peak_rss_mb=peak_rss_mb(),
        device_type=trainer.layout.device_type, world_size=trainer.layout.world_size,
        parameters=sum(p.numel() for p in trainer.model.parameters()),
        last_loss=float(trainer.storage.history("total_loss").latest()),
    )
    if probe is not None:
        result.update(probe(trainer))
    return result


# ---------------------------------------------------------------------------------------------
# Child side: what precision did the step compute in?
# ---------------------------------------------------------------------------------------------
def graph_float_blobs(graph: Any) -> Dict[str, int]:
    """Floating-point tensors of a compiled ``nn.Graph`` counted by data type, and the number
    of ``cast`` ops to half precision and of loss-scaling ops, read from the compiled job. With
    AMP active, the graph's AMP pass inserts such casts and fp16 tensors; none means the step
    ran in fp32 (loss-scaling ops alone only show that AMP was asked for)."""
    from oneflow.core.common import data_type_pb2

    proto = getattr(graph, "_compiled_graph_proto", None)
    if proto is None:
        return {}
    names = {data_type_pb2.kFloat: "float32", data_type_pb2.kFloat16: "float16",
             data_type_pb2.kBFloat16: "bfloat16", data_type_pb2.kDouble: "float64"}
    counts = Counter(names[b.data_type] for b in proto.helper.lbn2logical_blob_desc.values()
                     if b.data_type in names)
    half = (data_type_pb2.kFloat16, data_type_pb2.kBFloat16)
    casts = scaling = 0
    for op in proto.net.op:
        if op.WhichOneof("op_type") != "user_conf":
            continue
        kind = op.user_conf.op_type_name
        scaling += kind in LOSS_SCALING_OPS
        if kind == "cast":
            dtype = op.user_conf.attr["dtype"]
            if dtype.WhichOneof("value") == "at_data_type" and dtype.at_data_type in half:
                casts += 1
    result = dict(counts)
    result.update(half_casts=casts, loss_scaling_ops=scaling)
    return result


# Ops OneFlow adds to a training graph for AMP's dynamic loss scaling (seen in 0.9.0).
LOSS_SCALING_OPS = ("dynamic_loss_scale_schedule", "multi_count_not_finite", "count_not_finite")
