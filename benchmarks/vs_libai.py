"""libai against upstream LiBai on the same training runs, read by the same wall clock.

    LIBAI_REF=/work/libai_ref .venv/bin/python benchmarks/vs_libai.py [--repeats 2] [--quick]

Upstream LiBai is never part of this repository: ``LIBAI_REF`` names a folder built outside it
(``$LIBAI_REF/src`` the source, ``$LIBAI_REF/venv`` its environment, and ``run_libai.py`` from
``../shared/libai_reference/`` beside it or in ``$LIBAI_REF_RUNNER``, which applies the two
shims upstream needs on a CPU). See docs/benchmarks.md for the method and the results.

What runs (each its own command, as a user would type it):

* GPT-2: 4 layers, hidden 256, 8 heads, FFN 1024, sequence 128, vocabulary 8192, micro-batch 4,
  dropout 0.1, AdamW, fp32, 40 iterations, ``OMP_NUM_THREADS=1``; BERT: the same sizes, with
  its masked-LM and sentence-order heads. Both engines read one Megatron-format corpus
  (Python's own documentation, tokenized once by ``tools/preprocess_data.py``) through their
  own ``gpt2_pretrain.py`` / ``bert_large_pretrain.py`` configs, resized by a generated config.
* 1 process Eager, 1 process Graph, 2 processes data parallel (Graph and Eager).
* Engines: ``libai`` (its default start-up choices), ``LiBai`` as shipped (OpenBLAS detects the
  CPU itself), ``LiBai+BLAS`` (the same ``OPENBLAS_CORETYPE`` libai chose) and ``LiBai+env`` (every
  variable ``import libai`` sets, so what differs is the engine alone).
* Repeats interleave the engines (the order rotates each repeat), so a change of load on a
  shared machine falls on all of them.

How time is read, the same way for every engine: the parent stamps each output line with its
own monotonic clock as it arrives; steady state is the time from the console line of iteration
9 to that of iteration 29 (with ``--iters 40``), divided by the 20 iterations (the last line is
left out: it also waits for the final checkpoint). Each engine prints that
line after reading the iteration's loss, so both ends of the window sit at the same point of a
step. Start-up is the time from starting the command to the line of iteration 0 in a separate
run that logs every iteration. Peak memory is the largest resident set of any process of the
run (``getrusage`` of the children). Each engine's own ``Overall training speed`` is shown next
to the wall clock, as a check on what it reports.

The machine's matmul peak is measured in the same sitting: a 1024x1024 fp32 product on one
thread in NumPy (and in OneFlow with and without libai's BLAS choice), before and after the
runs. A GPT-2 step is about 17 GFLOP (forward 2·params·tokens plus attention and the vocabulary
projection, backward twice that): achieved GFLOP/s over NumPy's peak is the fraction of the
machine used.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Callable, Dict, List, Optional, Sequence, Tuple

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

# The pieces live in two modules beside this one; their names stay importable from here.
from _vs_libai_run import (  # noqa: E402,F401
    ITER_LINE, OVERALL, PEAK_WRAPPER, RunResult, _kill_descendants, _lines_until_exit,
    matmul_peak, run)
from _vs_libai_setup import (  # noqa: E402,F401
    CONFIG_TEMPLATE, OUR_PYTHON, REPO, Engine, Size, chosen_coretype, engines, gpt_step_flops,
    prepare_data, write_config)

# (model, setup, engine name) -> measurements over the repeats
Series = Dict[Tuple[str, str, str], List[float]]
NATIVE_BLAS = {"OPENBLAS_CORETYPE": None, "LIBAI_OPENBLAS_CORETYPE_CHOSEN": None}


def fmt(values: Sequence[float], digits: int = 3) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


# ---------------------------------------------------------------------------------------------
# Command line and plan
# ---------------------------------------------------------------------------------------------
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--iters", type=int, default=40)
    parser.add_argument("--models", default="gpt2,bert")
    parser.add_argument("--setups", default="1-eager,1-graph,2-eager,2-graph",
                        help="process count and mode, comma-separated; 'NxK-mode' runs K "
                             "independent N-process runs at once (1x2-graph: two one-process "
                             "runs sharing the cores, no communication), the time their mean")
    parser.add_argument("--window-start", type=int, default=9,
                        help="the console line of the iteration that opens the steady-state "
                             "window (default 9; data-parallel Graph steps settle by ~20)")
    parser.add_argument("--bert-setups", default="1-graph",
                        help="the setups BERT runs in (GPT-2 runs in all of --setups)")
    parser.add_argument("--engines", default="libai,LiBai,LiBai+BLAS,LiBai+env")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up runs")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "libai_vs_libai"))
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 2 layers, hidden 64, 12 iterations, 1 repeat, GPT-2 1-eager")
    return parser.parse_args(argv)


def find_reference() -> Optional[Tuple[str, str]]:
    """``(LIBAI_REF, run_libai.py)``, or None after saying on stderr what is missing."""
    ref = os.environ.get("LIBAI_REF")
    if not ref or not os.path.isdir(os.path.join(ref, "src")):
        print("LIBAI_REF must name an upstream LiBai build (src/ and venv/), made as "
              "../shared/libai_reference/README.md describes", file=sys.stderr)
        return None
    runner = os.environ.get("LIBAI_REF_RUNNER") or os.path.join(
        os.path.dirname(REPO), "shared", "libai_reference", "run_libai.py")
    if not os.path.exists(runner):
        print(f"run_libai.py not found at {runner}: set LIBAI_REF_RUNNER", file=sys.stderr)
        return None
    return ref, runner


@dataclass
class Plan:
    """What the command line asks for: sizes, iterations, models and setups, and the timing
    window (console lines ``first`` to ``last``)."""

    size: Size
    iters: int
    repeats: int
    models: List[str]
    setups_of: Dict[str, List[str]]
    log_period: int
    first: int
    last: int


def make_plan(args: argparse.Namespace) -> Plan:
    size = Size()
    iters, repeats = args.iters, args.repeats
    models, setups = args.models.split(","), args.setups.split(",")
    if args.quick:
        size = Size(layers=2, hidden=64, heads=4, ffn=256, seq=32, vocab=8192, micro_batch=2)
        iters, repeats, models, setups = 14, 1, ["gpt2"], ["1-eager"]
    # The line of the last iteration also waits for the final checkpoint (both engines save
    # model_final before their writer runs): the window ends one log period earlier.
    log_period = 10 if not args.quick else 1
    return Plan(size, iters, repeats, models, {"gpt2": setups, "bert": args.bert_setups.split(",")},
                log_period, first=args.window_start if not args.quick else 9,
                last=iters - 1 - log_period)


def config_writer(args: argparse.Namespace, ref: str, plan: Plan,
                  paths: Dict[str, str]) -> Callable[[Engine, str, bool, int, int], str]:
    """``config_for(engine, model, graph, iters, log_period)``: the generated config's path."""
    bases = {("libai", "gpt2"): os.path.join(REPO, "configs", "gpt2_pretrain.py"),
             ("libai", "bert"): os.path.join(REPO, "configs", "bert_large_pretrain.py"),
             ("ref", "gpt2"): os.path.join(ref, "src", "configs", "gpt2_pretrain.py"),
             ("ref", "bert"): os.path.join(ref, "src", "configs", "bert_large_pretrain.py")}
    cfg_dir = os.path.join(args.scratch, "configs")
    os.makedirs(cfg_dir, exist_ok=True)

    def config_for(engine: Engine, model: str, graph: bool, n_iters: int, period: int) -> str:
        side = "libai" if engine.python == OUR_PYTHON else "ref"
        return write_config(cfg_dir, side, model, bases[(side, model)], paths, plan.size, n_iters,
                            period, graph)

    return config_for


# ---------------------------------------------------------------------------------------------
# Measuring
# ---------------------------------------------------------------------------------------------
@dataclass
class Results:
    steady: Series = field(default_factory=dict)
    reported: Series = field(default_factory=dict)
    memory: Series = field(default_factory=dict)
    startup: Dict[Tuple[str, str], List[float]] = field(default_factory=dict)
    failures: List[str] = field(default_factory=list)


def parse_setup(setup: str) -> Tuple[int, int, str]:
    """``"2-graph"`` -> (2 processes, 1 run, "graph"); ``"1x2-graph"`` -> (1, 2 runs at once, "graph")."""
    count, mode = setup.split("-")
    nproc, _, copies = count.partition("x")
    return int(nproc), int(copies or 1), mode


def run_copies(engine: Engine, config: str, nproc: int, out: str, copies: int) -> List[RunResult]:
    """``copies`` independent runs of one command started together (each its own output
    folder): what sharing the cores costs without any communication between them."""
    if copies == 1:
        return [run(engine, config, nproc, out)]
    from concurrent.futures import ThreadPoolExecutor

    outs = [os.path.join(out, f"copy{i}") for i in range(copies)]
    for o in outs:
        os.makedirs(o, exist_ok=True)
    with ThreadPoolExecutor(copies) as pool:
        return list(pool.map(lambda o: run(engine, config, nproc, o), outs))


def measure_steady_state(args: argparse.Namespace, plan: Plan, order: List[Engine], r: int,
                         config_for: Callable, results: Results) -> None:
    """Repeat ``r`` of every model and setup, the engines in ``order``."""
    first, last = plan.first, plan.last
    for model in plan.models:
        for setup in plan.setups_of[model]:
            nproc, copies, mode = parse_setup(setup)
            for engine in order:
                out = os.path.join(args.scratch, "runs", f"{engine.name}_{model}_{setup}_{r}")
                os.makedirs(out, exist_ok=True)
                config = config_for(engine, model, mode == "graph", plan.iters, plan.log_period)
                runs = run_copies(engine, config, nproc, out, copies)
                key = (model, setup, engine.name)
                if any(not res.ok or first not in res.stamps or last not in res.stamps for res in runs):
                    tail = "\n".join(res.tail for res in runs)
                    results.failures.append(f"{key}: failed\n{tail}")
                    print(f"FAILED {key}\n{tail}", file=sys.stderr)
                    continue
                per_iter = statistics.fmean((res.stamps[last] - res.stamps[first]) / (last - first)
                                            for res in runs)
                results.steady.setdefault(key, []).append(per_iter)
                overall = [res.overall for res in runs if res.overall]
                if overall:
                    results.reported.setdefault(key, []).append(statistics.fmean(overall))
                peaks = [res.peak_rss_mb for res in runs if res.peak_rss_mb]
                if peaks:
                    results.memory.setdefault(key, []).append(max(peaks))
                print(f"[{time.strftime('%H:%M:%S')}] {model} {setup} {engine.name}: "
                      f"{per_iter:.3f} s/it wall, reported {overall or None}, peak {peaks or None} MB",
                      flush=True)


def measure_startup(args: argparse.Namespace, plan: Plan, order: List[Engine], r: int,
                    config_for: Callable, results: Results) -> None:
    """Repeat ``r`` of the start-up runs: command to the line of iteration 0."""
    for engine in order:
        for model in plan.models:
            out = os.path.join(args.scratch, "runs", f"{engine.name}_{model}_startup_{r}")
            os.makedirs(out, exist_ok=True)
            res = run(engine, config_for(engine, model, False, 3, 1), 1, out, stop_at=0)
            if res.ok and 0 in res.stamps:
                results.startup.setdefault((model, engine.name), []).append(res.stamps[0])
                print(f"[{time.strftime('%H:%M:%S')}] start-up {model} {engine.name}: "
                      f"{res.stamps[0]:.1f} s", flush=True)
            else:
                results.failures.append(f"start-up {engine.name} {model}\n{res.tail}")


# ---------------------------------------------------------------------------------------------
# Report
# ---------------------------------------------------------------------------------------------
def print_header(started: str, load_before: Sequence[float], load_after: Sequence[float],
                 coretype: str, peaks: List[Dict[str, float]]) -> None:
    print()
    print(f"# libai vs upstream LiBai ({started}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after; {os.cpu_count()} CPUs; OMP_NUM_THREADS=1)")
    print(f"libai's BLAS choice: OPENBLAS_CORETYPE={coretype or '(none)'}")
    print(f"matmul 1024^2 fp32, 1 thread, GFLOP/s: numpy {fmt([p['numpy'] for p in peaks], 1)}; "
          f"OneFlow with libai's choice {fmt([peaks[0]['oneflow'], peaks[2]['oneflow']], 1)}; "
          f"OneFlow as shipped {peaks[1]['oneflow']:.1f}")
    print()


def table_row(plan: Plan, model: str, setup: str, names: List[str], steady: Series,
              numpy_peak: float) -> List[str]:
    """Seconds per iteration of each engine, their ratios to libai, libai's GFLOP/s."""
    row = [model, setup]
    means = {}
    for n in names:
        vals = steady.get((model, setup, n), [])
        row.append(fmt(vals))
        if vals:
            means[n] = statistics.fmean(vals)
    for n in names:
        if n == "libai":
            continue
        row.append(f"{means[n] / means['libai']:.2f}" if n in means and "libai" in means else "-")
    if "libai" in means and model == "gpt2":
        nproc, copies, _ = parse_setup(setup)
        nproc *= copies
        gflops = gpt_step_flops(plan.size, plan.size.micro_batch * nproc) / means["libai"] / 1e9
        row += [f"{gflops:.1f}", f"{gflops / (numpy_peak * nproc):.0%}"]
    else:
        row += ["-", "-"]
    return row


def print_table(plan: Plan, names: List[str], steady: Series, numpy_peak: float) -> None:
    header = ["model", "setup"] + [f"{n} s/it" for n in names] + \
        [f"{n} / libai" for n in names if n != "libai"] + ["libai GFLOP/s", "of numpy peak"]
    rows = [table_row(plan, model, setup, names, steady, numpy_peak)
            for model in plan.models for setup in plan.setups_of[model]]
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))


def print_checks(plan: Plan, names: List[str], results: Results) -> None:
    """Each engine's own speed against the wall clock, peak memory and start-up times."""
    print()
    print("reported 'Overall training speed' / wall-clock steady state (1.00 = honest):")
    for key in sorted(results.steady):
        if key in results.reported:
            ratio = statistics.fmean(results.reported[key]) / statistics.fmean(results.steady[key])
            print(f"  {key[0]} {key[1]} {key[2]}: {ratio:.2f}")
    print()
    print("peak resident memory of the largest process, MB:")
    for key in sorted(results.memory):
        print(f"  {key[0]} {key[1]} {key[2]}: {fmt(results.memory[key], 0)}")
    startup = results.startup
    if startup:
        print()
        print("start-up, command to the line of iteration 0 (first step done), s:")
        for model in plan.models:
            cells = [f"{n} {fmt(startup.get((model, n), []), 1)}" for n in names]
            base = statistics.fmean(startup[(model, 'libai')]) if (model, "libai") in startup else None
            ratios = [f"{n}/libai {statistics.fmean(startup[(model, n)]) / base:.2f}"
                      for n in names if n != "libai" and (model, n) in startup and base]
            print(f"  {model}: " + ", ".join(cells + ratios))


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    found = find_reference()
    if found is None:
        return 2
    ref, runner = found
    plan = make_plan(args)
    coretype = chosen_coretype()
    all_engines = [e for e in engines(ref, runner, coretype) if e.name in args.engines.split(",")]
    os.makedirs(args.scratch, exist_ok=True)
    paths = prepare_data(os.path.join(args.scratch, "data"), plan.size.vocab)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S")

    peaks = [matmul_peak(OUR_PYTHON, NATIVE_BLAS),
             matmul_peak(OUR_PYTHON, {"OPENBLAS_CORETYPE": "", "LIBAI_OPENBLAS_CORETYPE_CHOSEN": None,
                                      "LIBAI_CBLAS_ROUTE": "0"})]
    config_for = config_writer(args, ref, plan, paths)
    results = Results()
    for r in range(plan.repeats):
        order = all_engines[r % len(all_engines):] + all_engines[:r % len(all_engines)]
        measure_steady_state(args, plan, order, r, config_for, results)
        if not args.no_startup:
            measure_startup(args, plan, order, r, config_for, results)
    peaks.append(matmul_peak(OUR_PYTHON, NATIVE_BLAS))
    load_after = os.getloadavg()

    numpy_peak = statistics.fmean([p["numpy"] for p in peaks])
    print_header(started, load_before, load_after, coretype, peaks)
    names = [e.name for e in all_engines]
    print_table(plan, names, results.steady, numpy_peak)
    print_checks(plan, names, results)
    if results.failures:
        print(f"\n{len(results.failures)} run(s) failed; see stderr")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
