"""OneFlow's own CPU elementwise kernels against oneDNN's: single ops, then whole GPT-2 steps.

    .venv/bin/python benchmarks/bench_cpu_kernels.py              # 5-10 minutes on 2 busy cores
    .venv/bin/python benchmarks/bench_cpu_kernels.py --quick      # the smoke test's size

OneFlow 0.9 sends CPU broadcasting arithmetic, comparisons, n-ary add and softmax to its bundled
oneDNN when ``ONEFLOW_ENABLE_ONEDNN_OPTS`` is on (its default), and oneDNN falls back to a
one-element-at-a-time reference loop for several broadcast patterns (``ref_binary_t`` in a
profile). ``import libai`` therefore turns it off on a machine with no GPU unless the user set
it (``libai._runtime.choose_cpu_elementwise_kernels``). This benchmark measures both settings,
each in its own child process (the variable is read when OneFlow loads), taking turns:

* single ops at the sizes of a GPT-2 step (4 layers, hidden 256, 8 heads, sequence 128,
  vocabulary 8192, micro-batch 4): CPU milliseconds per call, the best of ``--repeats``;
* a whole training step of that GPT-2 (dropout 0.1, AdamW) in Eager and in Graph mode: CPU and
  wall seconds per step over ``--iters`` steps after ``--warmup``, mean of ``--repeats``, and the
  first step's loss under both settings (the kernels change the speed, not the result).

Ratios are oneDNN / OneFlow's own: above 1, oneDNN is slower. The machine is shared, so the
CPU-time figures are the ones to read; the report prints the load average. Results and how to
read them: docs/benchmarks.md ("oneDNN's reference loops").
"""
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Callable, Dict, List, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from _common import (QUICK_SIZE, ChildFailed, Spread, add_child_arguments,  # noqa: E402
                     add_shared_options, benchmark_main, format_table, parse_choices,
                     read_result, require_positive, round_parser)

VARIABLE = "ONEFLOW_ENABLE_ONEDNN_OPTS"
SETTINGS = (("1", "oneDNN"), ("0", "own"))
PARTS = ("ops", "eager", "graph")


# ---------------------------------------------------------------------------------------------
# Child side
# ---------------------------------------------------------------------------------------------
def op_cases(quick: bool) -> List[Tuple[str, Callable[[], Any]]]:
    """The single ops, named with their shapes; ``quick`` shrinks every shape (same patterns)."""
    import oneflow as flow

    b, h, s, v, heads = (2, 32, 16, 256, 2) if quick else (4, 256, 128, 8192, 8)
    tokens = b * s
    logits, row = flow.randn(tokens, v), flow.randn(tokens, 1)
    x, col = flow.randn(b, s, h), flow.randn(b, s, 1)
    ffn, bias = flow.randn(b, s, 4 * h), flow.randn(4 * h)
    scores, key_bias = flow.randn(b, heads, s, s), flow.randn(b, 1, 1, s)
    causal = (flow.arange(s).view(1, s) > flow.arange(s).view(s, 1)).view(1, 1, s, s)
    y, z = flow.randn(b, s, h), flow.randn(b, s, h)
    return [
        (f"logits - row max [{tokens},{v}]-[{tokens},1]", lambda: logits - row),
        (f"x * per-token scale [{b},{s},{h}]*[{b},{s},1]", lambda: x * col),
        (f"x > 0, bool out [{b},{s},{h}]", lambda: x > 0),
        (f"bias add [{b},{s},{4 * h}]+[{4 * h}]", lambda: ffn + bias),
        (f"same-shape add [{b},{s},{4 * h}]", lambda: ffn + ffn),
        (f"add of 3 (add_n) [{b},{s},{h}]", lambda: flow._C.add([x, y, z])),
        (f"scores + key bias [{b},{heads},{s},{s}]+[{b},1,1,{s}]", lambda: scores + key_bias),
        (f"causal masked_fill [{b},{heads},{s},{s}], [1,1,{s},{s}]",
         lambda: scores.masked_fill(causal, -10000.0)),
        (f"softmax [{b},{heads},{s},{s}]", lambda: flow.softmax(scores, dim=-1)),
    ]


def time_op(fn: Callable[[], Any], budget: float) -> float:
    """CPU milliseconds per call: enough calls for about ``budget`` CPU seconds (3 at least)."""
    fn().numpy()
    start = time.process_time()
    fn().numpy()
    once = max(time.process_time() - start, 1e-5)
    calls = int(min(max(budget / once, 3), 500))
    start = time.process_time()
    for _ in range(calls):
        out = fn()
    out.numpy()
    return (time.process_time() - start) / calls * 1e3


def measure_ops(quick: bool) -> Dict[str, float]:
    budget = 0.02 if quick else 0.3
    return {name: time_op(fn, budget) for name, fn in op_cases(quick)}


def gpt_size(quick: bool) -> Tuple[Any, int, int]:
    """(size, FFN width, micro-batch): vs_libai.py's GPT-2, or the smoke tests' tiny GPT."""
    from _vs_libai_setup import Size

    if quick:
        return QUICK_SIZE, 4 * QUICK_SIZE.hidden, 2
    size = Size()
    return size, size.ffn, size.micro_batch


def measure_step(graph: bool, quick: bool, warmup: int, iters: int) -> Dict[str, float]:
    """CPU and wall seconds per training step of the GPT, and the first step's loss."""
    import numpy as np
    import oneflow as flow

    from libai.engine.graph import GraphBase
    from libai.models import GPTForPreTraining
    from libai.utils import distributed as dist

    size, ffn, batch = gpt_size(quick)
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        flow.manual_seed(0)
        model = GPTForPreTraining(dict(
            vocab_size=size.vocab, hidden_size=size.hidden, hidden_layers=size.layers,
            num_attention_heads=size.heads, intermediate_size=ffn, max_seq_length=size.seq,
            embedding_dropout_prob=0.1, attention_dropout_prob=0.1, hidden_dropout_prob=0.1))
        model.train()
        ids = flow.tensor(np.random.RandomState(1).randint(0, size.vocab, (batch, size.seq + 1)))
        inputs = {"input_ids": ids[:, :-1], "labels": ids[:, 1:]}
        optimizer = flow.optim.AdamW(model.parameters(), lr=1e-4)
        if graph:
            scheduler = flow.optim.lr_scheduler.StepLR(optimizer, step_size=10**9)
            step_graph = GraphBase(model, optimizer, scheduler, is_train=True, layout=layout)

            def step() -> Any:
                return step_graph(**inputs)["lm_loss"]
        else:
            def step() -> Any:
                loss = model(**inputs)["lm_loss"]
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()
                return loss

        first_loss = float(step().numpy())
        for _ in range(warmup - 1):
            step()
        step().numpy()
        wall, cpu = time.perf_counter(), time.process_time()
        for _ in range(iters):
            loss = step()
        loss.numpy()
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"cpu_s": cpu / iters, "wall_s": wall / iters, "first_loss": first_loss}


def child_main(args: Any) -> None:
    """Measure the parts named by ``--child`` (comma-separated) and write them as JSON."""
    import libai  # noqa: F401  (before OneFlow; keeps a value set in the environment)

    result: Dict[str, Any] = {"setting": os.environ.get(VARIABLE)}
    for part in args.child.split(","):
        if part == "ops":
            result["ops"] = measure_ops(args.quick)
        else:
            result[part] = measure_step(part == "graph", args.quick, args.warmup, args.iters)
    with open(args.result_file, "w") as f:
        json.dump(result, f)


# ---------------------------------------------------------------------------------------------
# Parent side
# ---------------------------------------------------------------------------------------------
def run_setting(args: Any, parts: List[str], value: str, folder: str, tag: str) -> Dict[str, Any]:
    """One child process with ``ONEFLOW_ENABLE_ONEDNN_OPTS=value`` measuring ``parts``."""
    result_path = os.path.join(folder, f"{tag}.json")
    command = [sys.executable, os.path.abspath(__file__), "--child", ",".join(parts),
               "--result-file", result_path, "--iters", str(args.iters), "--warmup", str(args.warmup)]
    if args.quick:
        command.append("--quick")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **{VARIABLE: value})
    what = f"the child measuring {','.join(parts)} with {VARIABLE}={value}"
    proc = subprocess.run(command, capture_output=True, text=True, env=env, timeout=args.timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise ChildFailed(f"{what} failed (exit code {proc.returncode}); its output ends with:\n"
                          f"{output[-4000:]}")
    result = read_result(result_path, what, output)
    if result.get("setting") != value:
        raise ChildFailed(f"{what} ran with {VARIABLE}={result.get('setting')!r}")
    return result


def run_rounds(args: Any) -> Dict[str, List[Dict[str, Any]]]:
    """Every repeat runs both settings, in alternating order; with ``--quick`` one child per
    setting measures every part, otherwise each part has its own child."""
    runs: Dict[str, List[Dict[str, Any]]] = {value: [] for value, _ in SETTINGS}
    groups = [args.parts] if args.quick else [[part] for part in args.parts]
    with tempfile.TemporaryDirectory() as folder:
        for repeat in range(args.repeats):
            order = SETTINGS if repeat % 2 == 0 else SETTINGS[::-1]
            merged = {value: {} for value, _ in SETTINGS}
            for group in groups:
                for value, _ in order:
                    tag = f"r{repeat}-{'-'.join(group)}-{value}"
                    merged[value].update(run_setting(args, group, value, folder, tag))
                    print(f"  repeat {repeat + 1}: {','.join(group)} with {VARIABLE}={value} done",
                          flush=True)
            for value, _ in SETTINGS:
                runs[value].append(merged[value])
    return runs


def _ratio(on: float, off: float) -> str:
    return f"{on / off:.2f}" if off > 0 else "n/a"


def report(args: Any, runs: Dict[str, List[Dict[str, Any]]]) -> str:
    """The op table (best of the repeats) and the step table (mean and spread)."""
    on, off = runs["1"], runs["0"]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg())
    lines = [f"{VARIABLE}=1 (oneDNN) against =0 (OneFlow's own kernels), OMP_NUM_THREADS={args.threads}, "
             f"{args.repeats} repeat(s) in alternating order; load average at the end {load}",
             "ratio = oneDNN / own: above 1, oneDNN is slower", ""]
    if "ops" in args.parts:
        rows = []
        for name in on[0]["ops"]:
            a = min(r["ops"][name] for r in on)
            b = min(r["ops"][name] for r in off)
            rows.append([name, f"{a:.3f}", f"{b:.3f}", _ratio(a, b)])
        lines += ["[single ops] CPU ms per call, best of the repeats",
                  format_table(["op", "oneDNN ms", "own ms", "ratio"], rows), ""]
    step_parts = [p for p in args.parts if p != "ops"]
    if step_parts:
        size, ffn, batch = gpt_size(args.quick)
        rows, notes = [], []
        for part in step_parts:
            cells = [part]
            for key in ("cpu_s", "wall_s"):
                a = Spread.of([r[part][key] for r in on])
                b = Spread.of([r[part][key] for r in off])
                cells += [a.format(3), b.format(3), _ratio(a.mean, b.mean)]
            rows.append(cells)
            diff = max(abs(x[part]["first_loss"] - y[part]["first_loss"]) for x in on for y in off)
            notes.append(f"{part}: first-step loss {on[0][part]['first_loss']:.6f}, "
                         f"largest difference between the settings {diff:.1e}")
        lines += [f"[training step] {size.describe()}, FFN {ffn}, micro-batch {batch}, dropout 0.1, "
                  f"AdamW; seconds per step over {args.iters} steps after {args.warmup}, "
                  f"mean (min-max) of {args.repeats}",
                  format_table(["mode", "oneDNN CPU s", "own CPU s", "CPU ratio",
                                "oneDNN wall s", "own wall s", "wall ratio"], rows)] + notes
    return "\n".join(lines).rstrip()


def main(argv: List[str] = None) -> int:
    parser = round_parser(__doc__.split("\n\n")[0], iters=10, warmup=3, repeats=2,
                          repeats_help="rounds of both settings, alternating which goes first")
    parser.add_argument("--parts", default=",".join(PARTS),
                        help="comma-separated subset of ops,eager,graph (default: %(default)s)")
    add_shared_options(parser, "--threads")
    add_child_arguments(parser, "tiny shapes and a tiny GPT, one child per setting: a smoke test",
                        timeout=1200, timeout_help="seconds allowed to each child process")
    args = parser.parse_args(argv)
    require_positive(parser, args, ["iters", "warmup", "repeats", "threads"])
    args.parts = parse_choices(parser, "--parts", args.parts, PARTS, "part(s)")
    announce = f"measuring {', '.join(args.parts)} with {VARIABLE}=1 and =0 in child processes"
    benchmark_main("bench_cpu_kernels", args, child_main, announce, run_rounds, report)
    return 0

if __name__ == "__main__":
    sys.exit(main())
