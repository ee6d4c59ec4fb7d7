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
* Engines: ``libai`` (its default BLAS choice), ``LiBai`` as shipped (OpenBLAS detects the CPU
  itself), and ``LiBai+BLAS`` (the same ``OPENBLAS_CORETYPE`` libai chose).
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
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUR_PYTHON = os.path.join(REPO, ".venv", "bin", "python")
ITER_LINE = re.compile(r"\biter(?:ation)?: (\d+)/(\d+)")
OVERALL = re.compile(r"Overall training speed: (\d+) iterations in \S+ \(([\d.]+) s / it\)")


# ---------------------------------------------------------------------------------------------
# Sizes and FLOPs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Size:
    layers: int = 4
    hidden: int = 256
    heads: int = 8
    ffn: int = 1024
    seq: int = 128
    vocab: int = 8192
    micro_batch: int = 4


def gpt_step_flops(s: Size, global_batch: int) -> float:
    """Multiply-adds x 2 of one training step (forward + backward = 3 x forward)."""
    tokens = global_batch * s.seq
    per_layer = 2 * tokens * (4 * s.hidden * s.hidden + 2 * s.hidden * s.ffn) \
        + 2 * 2 * global_batch * s.seq * s.seq * s.hidden
    forward = s.layers * per_layer + 2 * tokens * s.hidden * s.vocab
    return 3.0 * forward


# ---------------------------------------------------------------------------------------------
# Data: one corpus for both engines
# ---------------------------------------------------------------------------------------------
def prepare_data(folder: str, vocab_size: int) -> Dict[str, str]:
    """Python's documentation as JSON lines, a byte-level BPE and a WordPiece vocabulary of
    ``vocab_size``, and both corpora tokenized (MMIDIDX) by libai's tools."""
    os.makedirs(folder, exist_ok=True)
    done = os.path.join(folder, "paths.json")
    if os.path.exists(done):
        with open(done) as f:
            return json.load(f)
    corpus = os.path.join(folder, "corpus.jsonl")
    import pydoc_data.topics as topics

    with open(corpus, "w") as out:
        for name, text in sorted(topics.topics.items()):
            out.write(json.dumps({"title": name, "text": text}) + "\n")

    def tool(*args: str) -> None:
        subprocess.run([OUR_PYTHON, *args], cwd=REPO, check=True, stdout=subprocess.DEVNULL)

    for kind in ("bpe", "wordpiece"):
        tool("tools/train_vocab.py", "--input", corpus, "--json-key", "text", "--type", kind,
             "--vocab-size", str(vocab_size), "--output-dir", os.path.join(folder, kind))
    bpe, wp = os.path.join(folder, "bpe"), os.path.join(folder, "wordpiece")
    tool("tools/preprocess_data.py", "--input", corpus, "--output-prefix", os.path.join(folder, "gpt"),
         "--tokenizer-name", "GPT2Tokenizer", "--vocab-file", os.path.join(bpe, "vocab.json"),
         "--merges-file", os.path.join(bpe, "merges.txt"), "--append-eod")
    tool("tools/preprocess_data.py", "--input", corpus, "--output-prefix", os.path.join(folder, "bert"),
         "--tokenizer-name", "BertTokenizer", "--vocab-file", os.path.join(wp, "vocab.txt"),
         "--do-lower-case", "--split-sentences")
    paths = dict(
        gpt_vocab=os.path.join(bpe, "vocab.json"), gpt_merges=os.path.join(bpe, "merges.txt"),
        gpt_prefix=os.path.join(folder, "gpt_text_document"),
        bert_vocab=os.path.join(wp, "vocab.txt"), bert_prefix=os.path.join(folder, "bert_text_sentence"),
    )
    with open(done, "w") as f:
        json.dump(paths, f)
    return paths


CONFIG_TEMPLATE = '''# generated by benchmarks/vs_libai.py: {engine} {model}
from libai.config import LazyConfig

_base = LazyConfig.load({base!r})
model, train, optim, dataloader, tokenization, graph = (
    _base.model, _base.train, _base.optim, _base.dataloader, _base.tokenization, _base.graph)

tokenization.tokenizer.vocab_file = {vocab!r}
{merges}
for _ds in [dataloader.train.dataset[0], dataloader.test[0].dataset]:
    _ds.data_prefix = {prefix!r}
    if "indexed_dataset" in _ds:
        _ds.indexed_dataset.data_prefix = {prefix!r}
    _ds.max_seq_length = {seq}
tokenization.make_vocab_size_divisible_by = 128
# Each engine's config names some sizes its own way: set the name the config already has.
for _names, _value in [(("hidden_layers", "num_layers"), {layers}), (("hidden_size",), {hidden}),
                       (("num_attention_heads",), {heads}),
                       (("ffn_hidden_size", "intermediate_size"), {ffn}),
                       (("max_seq_length", "max_position_embeddings"), {seq}),
                       (("vocab_size",), {vocab_size}),
                       (("bias_gelu_fusion",), False), (("bias_dropout_fusion",), False),
                       (("scale_mask_softmax_fusion",), False), (("amp_enabled",), False),
                       (("embedding_dropout_prob", "hidden_dropout_prob"), 0.1),
                       (("attention_dropout_prob", "attention_probs_dropout_prob"), 0.1),
                       (("output_dropout_prob",), 0.1)]:
    _present = [_n for _n in _names if _n in model.cfg]
    for _n in _present or ([_names[0]] if _names[0] in ("hidden_layers", "hidden_size") else []):
        model.cfg[_n] = _value
optim.lr = 1.5e-4
train.update(dict(train_micro_batch_size={micro}, test_micro_batch_size={micro},
                  train_iter={iters}, log_period={log_period}, warmup_ratio=0.0,
                  input_placement_device="cpu"))
train.amp.enabled = False
train.evaluation.enabled = False
train.checkpointer.period = 1000000
train.dist.pipeline_num_layers = {layers}
train.dist.device_type = "cpu"
graph.enabled = {graph}
'''


def write_config(folder: str, engine: str, model: str, base: str, paths: Dict[str, str],
                 s: Size, iters: int, log_period: int, graph: bool) -> str:
    gpt = model == "gpt2"
    text = CONFIG_TEMPLATE.format(
        engine=engine, model=model, base=base,
        vocab=paths["gpt_vocab" if gpt else "bert_vocab"],
        merges=f"tokenization.tokenizer.merges_file = {paths['gpt_merges']!r}" if gpt else "",
        prefix=paths["gpt_prefix" if gpt else "bert_prefix"],
        layers=s.layers, hidden=s.hidden, heads=s.heads, ffn=s.ffn, seq=s.seq,
        vocab_size=s.vocab, micro=s.micro_batch, iters=iters, log_period=log_period, graph=graph,
    )
    path = os.path.join(folder, f"{engine}_{model}_{'graph' if graph else 'eager'}_{iters}_{log_period}.py")
    with open(path, "w") as f:
        f.write(text)
    return path


# ---------------------------------------------------------------------------------------------
# Engines and runs
# ---------------------------------------------------------------------------------------------
@dataclass
class Engine:
    name: str
    python: str
    entry: str  # the training script
    configs: str  # its configs folder
    env: Dict[str, str] = field(default_factory=dict)
    drop_env: Tuple[str, ...] = ()


def engines(ref: str, runner: str, coretype: str) -> List[Engine]:
    ref_py = os.path.join(ref, "venv", "bin", "python")
    ref_cfg = os.path.join(ref, "src", "configs")
    blas = ("OPENBLAS_CORETYPE", "LIBAI_OPENBLAS_CORETYPE_CHOSEN")
    # The venv's bin/ first on PATH: upstream compiles its dataset helper with `python3`.
    upstream_env = {"LIBAI_REF": ref, "LIBAI_REF_CAUSAL": "1",
                    "PATH": os.path.dirname(ref_py) + os.pathsep + os.environ.get("PATH", "")}
    result = [
        Engine("libai", OUR_PYTHON, os.path.join(REPO, "tools", "train_net.py"),
               os.path.join(REPO, "configs"), drop_env=blas),
        Engine("LiBai", ref_py, runner, ref_cfg, dict(upstream_env), drop_env=blas),
    ]
    if coretype:
        result.append(Engine("LiBai+BLAS", ref_py, runner, ref_cfg,
                             dict(upstream_env, OPENBLAS_CORETYPE=coretype), drop_env=blas[1:]))
    return result


PEAK_WRAPPER = ("import resource, subprocess, sys\n"
                "code = subprocess.call(sys.argv[1:])\n"
                "print('PEAK_RSS_KB %d' % resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, flush=True)\n"
                "sys.exit(code)\n")


@dataclass
class RunResult:
    ok: bool
    stamps: Dict[int, float]  # iteration -> seconds since the command started
    overall: Optional[float]
    peak_rss_mb: Optional[float]
    tail: str


def run(engine: Engine, config: str, nproc: int, out_dir: str, stop_at: Optional[int] = None,
        timeout: float = 1800) -> RunResult:
    env = {k: v for k, v in os.environ.items() if k not in engine.drop_env}
    env.update(engine.env)
    env["OMP_NUM_THREADS"] = "1"
    env["PYTHONUNBUFFERED"] = "1"
    train = [engine.entry, "--config-file", config, f"train.output_dir={out_dir}"]
    if nproc > 1:
        port = str(20000 + (os.getpid() * 7 + int(time.time())) % 20000)
        cmd = [engine.python, "-m", "oneflow.distributed.launch", "--nproc_per_node", str(nproc),
               "--master_port", port, *train]
    else:
        cmd = [engine.python, *train]
    cmd = [sys.executable, "-c", PEAK_WRAPPER, *cmd]
    start = time.monotonic()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=env, cwd=out_dir if os.path.isdir(out_dir) else None,
                            start_new_session=True)
    stamps: Dict[int, float] = {}
    overall, peak, tail = None, None, []
    assert proc.stdout is not None
    finished_at: Optional[float] = None
    for line in _lines_until_exit(proc, lambda: finished_at):
        if line is None:  # training ended but the process has not exited in 30 s
            _kill_descendants(proc.pid)
            continue
        now = time.monotonic() - start
        if "Total training time" in line:
            finished_at = time.monotonic()
        tail = (tail + [line])[-40:]
        m = ITER_LINE.search(line)
        if m and "Starting" not in line:
            stamps.setdefault(int(m.group(1)), now)
            if stop_at is not None and int(m.group(1)) >= stop_at:
                os.killpg(proc.pid, 9)
                break
        m = OVERALL.search(line)
        if m:
            overall = float(m.group(2))
        if line.startswith("PEAK_RSS_KB"):
            peak = int(line.split()[1]) / 1024
        if now > timeout:
            os.killpg(proc.pid, 9)
            break
    code = proc.wait()
    ok = (code == 0 or stop_at is not None or finished_at is not None) and bool(stamps)
    return RunResult(ok, stamps, overall, peak, "".join(tail))


def _lines_until_exit(proc: subprocess.Popen, finished_at, grace: float = 30.0):
    """The lines of ``proc``'s output; ``None`` once, when training has ended (``finished_at()``
    is set) and no line came for ``grace`` seconds: a process that hangs at exit (seen with
    data-loader workers left waiting) is then ended without losing its timing lines."""
    import selectors

    fd = proc.stdout.fileno()
    sel = selectors.DefaultSelector()
    sel.register(fd, selectors.EVENT_READ)
    hung_reported, pending = False, b""
    while True:
        if not sel.select(timeout=1.0):
            done = finished_at()
            if done is not None and not hung_reported and time.monotonic() - done > grace:
                hung_reported = True
                yield None
            if proc.poll() is not None:
                break
            continue
        chunk = os.read(fd, 1 << 16)  # raw reads: a line is stamped when it arrives
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode("utf-8", "replace") + "\n"
    if pending:
        yield pending.decode("utf-8", "replace")


def _kill_descendants(pid: int) -> None:
    """SIGKILL every process below ``pid`` (not ``pid`` itself: the wrapper that reports the
    peak memory must live to reap them)."""
    import signal

    children = []
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/children") as f:
                children += [int(c) for c in f.read().split()]
    except OSError:
        return
    for child in children:
        _kill_descendants(child)
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass


def matmul_peak(python: str, env_changes: Dict[str, Optional[str]], n: int = 1024) -> Dict[str, float]:
    """GFLOP/s of an n x n fp32 product on one thread: NumPy, and OneFlow (best of 3 x 10)."""
    code = f"""
import time, json
import numpy as np
def best(f, reps=10):
    f(); b = 1e9
    for _ in range(3):
        t = time.perf_counter()
        for _ in range(reps): f()
        b = min(b, (time.perf_counter() - t) / reps)
    return 2 * {n} ** 3 / b / 1e9
a = np.random.rand({n}, {n}).astype(np.float32); c = np.random.rand({n}, {n}).astype(np.float32)
r = dict(numpy=best(lambda: a @ c))
import sys; sys.path.insert(0, {REPO!r})
import libai, oneflow as flow
fa, fc = flow.tensor(a), flow.tensor(c)
r["oneflow"] = best(lambda: flow.matmul(fa, fc).numpy())
print("PEAK " + json.dumps(r))
"""
    env = dict(os.environ, OMP_NUM_THREADS="1")
    for k, v in env_changes.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    out = subprocess.run([python, "-c", code], capture_output=True, text=True, env=env, check=True).stdout
    return json.loads([x for x in out.splitlines() if x.startswith("PEAK ")][-1][5:])


def chosen_coretype() -> str:
    env = {k: v for k, v in os.environ.items()
           if k not in ("OPENBLAS_CORETYPE", "LIBAI_OPENBLAS_CORETYPE_CHOSEN")}
    out = subprocess.run([OUR_PYTHON, "-c", "import libai, os; print('CT', os.environ.get('OPENBLAS_CORETYPE', ''))"],
                         capture_output=True, text=True, env=env, cwd=REPO, check=True).stdout
    return [x for x in out.splitlines() if x.startswith("CT")][-1][3:].strip()


# ---------------------------------------------------------------------------------------------
# Main
# ---------------------------------------------------------------------------------------------
def fmt(values: Sequence[float], digits: int = 3) -> str:
    if not values:
        return "-"
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ({min(values):.{digits}f}-{max(values):.{digits}f})"


def main(argv: Optional[Sequence[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--iters", type=int, default=40)
    parser.add_argument("--models", default="gpt2,bert")
    parser.add_argument("--setups", default="1-eager,1-graph,2-eager,2-graph",
                        help="process count and mode, comma-separated")
    parser.add_argument("--bert-setups", default="1-graph",
                        help="the setups BERT runs in (GPT-2 runs in all of --setups)")
    parser.add_argument("--engines", default="libai,LiBai,LiBai+BLAS")
    parser.add_argument("--no-startup", action="store_true", help="skip the start-up runs")
    parser.add_argument("--scratch", default=os.path.join(tempfile.gettempdir(), "libai_vs_libai"))
    parser.add_argument("--quick", action="store_true",
                        help="a smoke test: 2 layers, hidden 64, 12 iterations, 1 repeat, GPT-2 1-eager")
    args = parser.parse_args(argv)

    ref = os.environ.get("LIBAI_REF")
    if not ref or not os.path.isdir(os.path.join(ref, "src")):
        print("LIBAI_REF must name an upstream LiBai build (src/ and venv/), made as "
              "../shared/libai_reference/README.md describes", file=sys.stderr)
        return 2
    runner = os.environ.get("LIBAI_REF_RUNNER") or os.path.join(
        os.path.dirname(REPO), "shared", "libai_reference", "run_libai.py")
    if not os.path.exists(runner):
        print(f"run_libai.py not found at {runner}: set LIBAI_REF_RUNNER", file=sys.stderr)
        return 2

    size = Size()
    iters, repeats = args.iters, args.repeats
    models, setups = args.models.split(","), args.setups.split(",")
    if args.quick:
        size = Size(layers=2, hidden=64, heads=4, ffn=256, seq=32, vocab=8192, micro_batch=2)
        iters, repeats, models, setups = 14, 1, ["gpt2"], ["1-eager"]
    # The line of the last iteration also waits for the final checkpoint (both engines save
    # model_final before their writer runs): the window ends one log period earlier.
    log_period = 10 if not args.quick else 1
    first, last = 9, iters - 1 - log_period
    setups_of = {"gpt2": setups, "bert": args.bert_setups.split(",")}
    coretype = chosen_coretype()
    all_engines = [e for e in engines(ref, runner, coretype) if e.name in args.engines.split(",")]
    os.makedirs(args.scratch, exist_ok=True)
    paths = prepare_data(os.path.join(args.scratch, "data"), size.vocab)
    load_before = os.getloadavg()
    started = time.strftime("%Y-%m-%d %H:%M:%S")

    peaks = [matmul_peak(OUR_PYTHON, {"OPENBLAS_CORETYPE": None, "LIBAI_OPENBLAS_CORETYPE_CHOSEN": None}),
             matmul_peak(OUR_PYTHON, {"OPENBLAS_CORETYPE": "", "LIBAI_OPENBLAS_CORETYPE_CHOSEN": None})]

    bases = {("libai", "gpt2"): os.path.join(REPO, "configs", "gpt2_pretrain.py"),
             ("libai", "bert"): os.path.join(REPO, "configs", "bert_large_pretrain.py"),
             ("ref", "gpt2"): os.path.join(ref, "src", "configs", "gpt2_pretrain.py"),
             ("ref", "bert"): os.path.join(ref, "src", "configs", "bert_large_pretrain.py")}
    cfg_dir = os.path.join(args.scratch, "configs")
    os.makedirs(cfg_dir, exist_ok=True)

    def config_for(engine: Engine, model: str, graph: bool, n_iters: int, period: int) -> str:
        side = "libai" if engine.name == "libai" else "ref"
        return write_config(cfg_dir, side, model, bases[(side, model)], paths, size, n_iters,
                            period, graph)

    steady: Dict[Tuple[str, str, str], List[float]] = {}
    reported: Dict[Tuple[str, str, str], List[float]] = {}
    memory: Dict[Tuple[str, str, str], List[float]] = {}
    startup: Dict[Tuple[str, str], List[float]] = {}
    failures: List[str] = []
    for r in range(repeats):
        order = all_engines[r % len(all_engines):] + all_engines[:r % len(all_engines)]
        for model in models:
            for setup in setups_of[model]:
                nproc, mode = int(setup.split("-")[0]), setup.split("-")[1]
                for engine in order:
                    out = os.path.join(args.scratch, "runs", f"{engine.name}_{model}_{setup}_{r}")
                    os.makedirs(out, exist_ok=True)
                    res = run(engine, config_for(engine, model, mode == "graph", iters, log_period), nproc, out)
                    key = (model, setup, engine.name)
                    if not res.ok or first not in res.stamps or last not in res.stamps:
                        failures.append(f"{key}: failed\n{res.tail}")
                        print(f"FAILED {key}\n{res.tail}", file=sys.stderr)
                        continue
                    per_iter = (res.stamps[last] - res.stamps[first]) / (last - first)
                    steady.setdefault(key, []).append(per_iter)
                    if res.overall:
                        reported.setdefault(key, []).append(res.overall)
                    if res.peak_rss_mb:
                        memory.setdefault(key, []).append(res.peak_rss_mb)
                    print(f"[{time.strftime('%H:%M:%S')}] {model} {setup} {engine.name}: "
                          f"{per_iter:.3f} s/it wall, reported {res.overall}, peak {res.peak_rss_mb} MB",
                          flush=True)
        if not args.no_startup:
            for engine in order:
                for model in models:
                    out = os.path.join(args.scratch, "runs", f"{engine.name}_{model}_startup_{r}")
                    os.makedirs(out, exist_ok=True)
                    res = run(engine, config_for(engine, model, False, 3, 1), 1, out, stop_at=0)
                    if res.ok and 0 in res.stamps:
                        startup.setdefault((model, engine.name), []).append(res.stamps[0])
                        print(f"[{time.strftime('%H:%M:%S')}] start-up {model} {engine.name}: "
                              f"{res.stamps[0]:.1f} s", flush=True)
                    else:
                        failures.append(f"start-up {engine.name} {model}\n{res.tail}")
    peaks.append(matmul_peak(OUR_PYTHON, {"OPENBLAS_CORETYPE": None, "LIBAI_OPENBLAS_CORETYPE_CHOSEN": None}))
    load_after = os.getloadavg()

    numpy_peak = statistics.fmean([p["numpy"] for p in peaks])
    print()
    print(f"# libai vs upstream LiBai ({started}; load average {load_before[0]:.1f} before, "
          f"{load_after[0]:.1f} after; {os.cpu_count()} CPUs; OMP_NUM_THREADS=1)")
    print(f"libai's BLAS choice: OPENBLAS_CORETYPE={coretype or '(none)'}")
    print(f"matmul 1024^2 fp32, 1 thread, GFLOP/s: numpy {fmt([p['numpy'] for p in peaks], 1)}; "
          f"OneFlow with libai's choice {fmt([peaks[0]['oneflow'], peaks[2]['oneflow']], 1)}; "
          f"OneFlow as shipped {peaks[1]['oneflow']:.1f}")
    print()
    names = [e.name for e in all_engines]
    header = ["model", "setup"] + [f"{n} s/it" for n in names] + \
        [f"{n} / libai" for n in names if n != "libai"] + ["libai GFLOP/s", "of numpy peak"]
    rows = []
    for model in models:
        for setup in setups_of[model]:
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
                nproc = int(setup.split("-")[0])
                gflops = gpt_step_flops(size, size.micro_batch * nproc) / means["libai"] / 1e9
                row += [f"{gflops:.1f}", f"{gflops / (numpy_peak * nproc):.0%}"]
            else:
                row += ["-", "-"]
            rows.append(row)
    widths = [max(len(str(x)) for x in col) for col in zip(header, *rows)]
    for line in [header] + rows:
        print("  ".join(str(c).ljust(w) for c, w in zip(line, widths)))
    print()
    print("reported 'Overall training speed' / wall-clock steady state (1.00 = honest):")
    for key in sorted(steady):
        if key in reported:
            ratio = statistics.fmean(reported[key]) / statistics.fmean(steady[key])
            print(f"  {key[0]} {key[1]} {key[2]}: {ratio:.2f}")
    print()
    print("peak resident memory of the largest process, MB:")
    for key in sorted(memory):
        print(f"  {key[0]} {key[1]} {key[2]}: {fmt(memory[key], 0)}")
    if startup:
        print()
        print("start-up, command to the line of iteration 0 (first step done), s:")
        for model in models:
            cells = [f"{n} {fmt(startup.get((model, n), []), 1)}" for n in names]
            base = statistics.fmean(startup[(model, 'libai')]) if (model, "libai") in startup else None
            ratios = [f"{n}/libai {statistics.fmean(startup[(model, n)]) / base:.2f}"
                      for n in names if n != "libai" and (model, n) in startup and base]
            print(f"  {model}: " + ", ".join(cells + ratios))
    if failures:
        print(f"\n{len(failures)} run(s) failed; see stderr")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
