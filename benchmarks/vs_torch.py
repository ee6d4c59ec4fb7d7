#!/usr/bin/env python
"""libai's training step (Graph and Eager) against transformers' models on torch eager.

    HF_ENV=/path/to/hf_env .venv/bin/python benchmarks/vs_torch.py [--repeats 3]
    .venv/bin/python benchmarks/vs_torch.py --quick        # smoke run; libai only without HF_ENV

torch and transformers are never part of this project: ``HF_ENV`` names a Python environment
built outside the repository (see ``vs_transformers_generation.BUILD_HINT``); its ``bin/python``
runs the torch side as a subprocess. Without ``HF_ENV`` the full run says how to build it and
exits; ``--quick`` then runs the libai side alone.

What runs (issue 38, item 1), each model at the same shapes on both sides, fp32, AdamW
(lr 1e-4, weight decay 0.01, every parameter), one fixed random batch of ``--batch-size``
sequences of ``--seq`` tokens made from ``--seed`` by NumPy (the same ids on both sides):

* ``gpt2``: transformers' ``GPT2LMHeadModel`` / libai's ``GPTForPreTraining``: 4 layers, hidden
  256, 8 heads, FFN 1024, vocabulary 8192, dropout 0.1 (embeddings, attention, residual);
* ``bert``: ``BertForMaskedLM`` / ``BertForPreTraining`` without the binary head and pooler,
  post-layernorm (BERT's arrangement), 4 layers, hidden 256, 4 heads (BERT-base's 64 per head),
  FFN 1024, vocabulary 8192, dropout 0.1, 15% of positions labelled;
* ``llama``: ``LlamaForCausalLM`` on both sides at libai's ``llama_cfg("tiny")`` shapes
  (4 layers, hidden 128, 4 heads, 2 key/value heads, SwiGLU 352, vocabulary 2048), no dropout.

How it is timed: one fresh process per (model, side); the order of the sides rotates per turn.
Each process builds the model, runs ``--warmup`` steps (the first compiles libai's graph), then
``--iters`` steps timed by the wall clock and by the process's CPU time (all threads); the timed
span ends by reading the loss, which waits for OneFlow's queued work. With
``OMP_NUM_THREADS=--threads`` and ``torch.set_num_threads`` both sides compute on one thread.
The report gives s/step and the speed ratios libai / torch (> 1: libai faster), per turn.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import REPO_ROOT, ChildFailed, Spread, format_table, read_result  # noqa: E402
from _isa import add_isa_argument, apply_isa  # noqa: E402

MODELS = ("gpt2", "bert", "llama")
LIBAI_MODES = ("graph", "eager")
# model -> shapes shared by both sides (llama: libai's tiny preset, configs/common/models/llama.py)
SHAPES: Dict[str, Dict[str, Any]] = {
    "gpt2": dict(layers=4, hidden=256, heads=8, ffn=1024, vocab=8192, dropout=0.1),
    "bert": dict(layers=4, hidden=256, heads=4, ffn=1024, vocab=8192, dropout=0.1),
    "llama": dict(layers=4, hidden=128, heads=4, kv_heads=2, ffn=352, vocab=2048, dropout=0.0),
}
QUICK_SHAPES: Dict[str, Dict[str, Any]] = {
    "gpt2": dict(SHAPES["gpt2"], layers=1, hidden=32, heads=2, ffn=64, vocab=128),
    "bert": dict(SHAPES["bert"], layers=1, hidden=32, heads=2, ffn=64, vocab=128),
    "llama": dict(SHAPES["llama"], layers=1, hidden=32, heads=2, kv_heads=1, ffn=64, vocab=128),
}
LR, WEIGHT_DECAY, MASKED = 1e-4, 0.01, 0.15


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(MODELS), help="comma-separated, of %(default)s")
    p.add_argument("--modes", default=",".join(LIBAI_MODES), help="libai modes (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=3, help="turns; each side once per turn (default: 3)")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps first (default: 3)")
    p.add_argument("--iters", type=int, default=10, help="timed steps per process (default: 10)")
    p.add_argument("--batch-size", type=int, default=4)
    p.add_argument("--seq", type=int, default=128)
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the batch")
    p.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both sides (default: 1)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: 1-layer models of width 32, sequence 16, 2 steps, one turn; "
                        "the libai side alone when HF_ENV is unset")
    add_isa_argument(p)
    p.add_argument("--child", choices=("torch",) + LIBAI_MODES, help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        args.repeats, args.warmup, args.iters, args.seq, args.batch_size = 1, 1, 1, 16, 2
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    args.mode_list = [m.strip() for m in args.modes.split(",") if m.strip()]
    for flag, chosen, allowed in (("--models", args.model_list, MODELS),
                                  ("--modes", args.mode_list, LIBAI_MODES)):
        bad = sorted(set(chosen) - set(allowed))
        if not chosen or bad:
            p.error(f"{flag} must name some of {', '.join(allowed)}; got {bad or 'none'}")
    for name in ("repeats", "warmup", "iters", "batch_size", "seq", "threads"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    args.shapes = QUICK_SHAPES if args.quick else SHAPES
    return args


def make_batch(model: str, batch: int, seq: int, vocab: int, seed: int) -> Dict[str, Any]:
    """The token ids (and BERT's masked positions) of the one batch both sides train on."""
    import numpy as np

    rng = np.random.RandomState(seed)
    ids = rng.randint(0, vocab, size=(batch, seq)).astype(np.int64)
    out = {"ids": ids}
    if model == "bert":
        masked = rng.rand(batch, seq) < MASKED
        masked[:, 0] = True  # at least one labelled position per row
        out["masked"] = masked
    return out


# ---------------------------------------------------------------------------------------------
# Children: one side's steady-state step
# ---------------------------------------------------------------------------------------------
def thread_cpu() -> Dict[str, float]:
    """CPU seconds used so far by each thread of this process, keyed ``name/tid`` (Linux's
    ``/proc``; empty elsewhere)."""
    out: Dict[str, float] = {}
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return out
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name, fields = stat[stat.index("(") + 1:stat.rindex(")")], stat[stat.rindex(")") + 2:].split()
        out[f"{name}/{tid}"] = (int(fields[11]) + int(fields[12])) / tick  # utime + stime
    return out


def by_thread(before: Dict[str, float], after: Dict[str, float], steps: int) -> Dict[str, float]:
    """CPU seconds per step of each thread between two ``thread_cpu`` readings: ``main`` (the
    Python thread), then the others busiest first as ``other 1``, ``other 2``... (OneFlow leaves
    its threads unnamed, so the order is all that tells them apart)."""
    main_tid = str(os.getpid())
    spent = {key: (value - before.get(key, 0.0)) / steps for key, value in after.items()}
    main = sum(v for k, v in spent.items() if k.rsplit("/", 1)[1] == main_tid)
    others = sorted((v for k, v in spent.items() if k.rsplit("/", 1)[1] != main_tid and v > 0), reverse=True)
    return {"main": main, **{f"other {i + 1}": v for i, v in enumerate(others)}}


def _time_steps(step: Any, wait: Any, warmup: int, iters: int) -> Dict[str, Any]:
    """Warm up, then time ``iters`` steps (wall, CPU, CPU by thread); ``wait`` reads the last loss."""
    start = time.perf_counter()
    wait(step())
    first = time.perf_counter() - start
    for _ in range(warmup - 1):
        step()
    loss = wait(step())
    threads = thread_cpu()
    wall, cpu = time.perf_counter(), time.process_time()
    for _ in range(iters):
        out = step()
    loss = wait(out)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    return {"step_s": wall / iters, "cpu_step_s": cpu / iters, "first_step_s": first, "loss": loss,
            "cpu_by_thread": by_thread(threads, thread_cpu(), iters)}


def _torch_model(name: str, s: Dict[str, Any], seq: int) -> Any:
    import transformers as tf

    if name == "gpt2":
        return tf.GPT2LMHeadModel(tf.GPT2Config(
            vocab_size=s["vocab"], n_positions=seq, n_embd=s["hidden"], n_layer=s["layers"],
            n_head=s["heads"], n_inner=s["ffn"], resid_pdrop=s["dropout"],
            embd_pdrop=s["dropout"], attn_pdrop=s["dropout"]))
    if name == "bert":
        return tf.BertForMaskedLM(tf.BertConfig(
            vocab_size=s["vocab"], hidden_size=s["hidden"], num_hidden_layers=s["layers"],
            num_attention_heads=s["heads"], intermediate_size=s["ffn"], max_position_embeddings=seq,
            hidden_dropout_prob=s["dropout"], attention_probs_dropout_prob=s["dropout"]))
    return tf.LlamaForCausalLM(tf.LlamaConfig(
        vocab_size=s["vocab"], hidden_size=s["hidden"], intermediate_size=s["ffn"],
        num_hidden_layers=s["layers"], num_attention_heads=s["heads"],
        num_key_value_heads=s["kv_heads"], max_position_embeddings=max(seq, 256),
        rms_norm_eps=1e-6, tie_word_embeddings=False, attention_dropout=s["dropout"]))


def _child_torch(args: argparse.Namespace, name: str) -> Dict[str, Any]:
    import torch

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    s = args.shapes[name]
    model = _torch_model(name, s, args.seq).train()
    data = make_batch(name, args.batch_size, args.seq, s["vocab"], args.seed)
    ids = torch.from_numpy(data["ids"])
    inputs: Dict[str, Any] = {"input_ids": ids}
    if name == "bert":
        inputs["labels"] = torch.where(torch.from_numpy(data["masked"]), ids, torch.full_like(ids, -100))
        inputs["attention_mask"] = torch.ones_like(ids)
    else:
        inputs["labels"] = ids  # transformers shifts the labels itself
    opt = torch.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)

    def step() -> Any:
        loss = model(**inputs).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
        return loss

    result = _time_steps(step, lambda loss: float(loss.item()), args.warmup, args.iters)
    result.update(version=f"torch {torch.__version__}, transformers {__import__('transformers').__version__}",
                  torch_threads=torch.get_num_threads(), capability=torch.backends.cpu.get_cpu_capability(),
                  attention=getattr(model.config, "_attn_implementation", "?"))
    return result


def _libai_model(name: str, s: Dict[str, Any], seq: int) -> Any:
    from libai.models import BertForPreTraining, GPTForPreTraining, LlamaForCausalLM

    body = dict(vocab_size=s["vocab"], hidden_size=s["hidden"], hidden_layers=s["layers"],
                num_attention_heads=s["heads"], intermediate_size=s["ffn"],
                hidden_dropout_prob=s["dropout"], attention_dropout_prob=s["dropout"])
    if name == "gpt2":
        return GPTForPreTraining(dict(body, max_seq_length=seq, embedding_dropout_prob=s["dropout"]))
    if name == "bert":
        return BertForPreTraining(dict(body, max_position_embeddings=seq, add_pooler=False,
                                       add_binary_head=False, layernorm_position="post",
                                       layernorm_epsilon=1e-12))
    return LlamaForCausalLM(dict(body, num_key_value_heads=s["kv_heads"],
                                 max_position_embeddings=max(seq, 256), rms_norm_eps=1e-6))


def _libai_inputs(name: str, data: Dict[str, Any]) -> Dict[str, Any]:
    import numpy as np

    ids = data["ids"]
    if name == "bert":
        return {"input_ids": ids, "attention_mask": np.ones_like(ids), "tokentype_ids": np.zeros_like(ids),
                "lm_labels": ids, "loss_mask": data["masked"].astype(np.int64)}
    # libai's causal models take labels already shifted; the last position predicts token 0
    return {"input_ids": ids, "labels": np.roll(ids, -1, axis=1)}


def _child_libai(args: argparse.Namespace, name: str) -> Dict[str, Any]:
    import libai  # noqa: F401  (loads OneFlow's libraries and picks the BLAS kernels first)
    import oneflow as flow

    from libai.engine.graph import GraphBase
    from libai.engine.step_runners import sum_losses
    from libai.utils import distributed as dist

    s = args.shapes[name]
    layout = dist.ParallelLayout.from_config({"device_type": "cpu"}, world_size=1, rank=0)
    with layout:
        flow.manual_seed(args.seed)
        model = _libai_model(name, s, args.seq)
        model.train()
        data = make_batch(name, args.batch_size, args.seq, s["vocab"], args.seed)
        inputs = {k: flow.tensor(v) for k, v in _libai_inputs(name, data).items()}
        opt = flow.optim.AdamW(model.parameters(), lr=LR, weight_decay=WEIGHT_DECAY)
        if args.child == "graph":
            sched = flow.optim.lr_scheduler.StepLR(opt, step_size=10**9)
            graph = GraphBase(model, opt, sched, is_train=True, layout=layout)

            def step() -> Any:
                return sum_losses(graph(**inputs))
        else:
            def step() -> Any:
                loss = sum_losses(model(**inputs))
                loss.backward()
                opt.step()
                opt.zero_grad()
                return loss

        result = _time_steps(step, lambda loss: float(loss.numpy()), args.warmup, args.iters)
    result.update(version=getattr(libai, "__version__", "?"), blas=os.environ.get("OPENBLAS_CORETYPE", ""))
    return result


def child_main(args: argparse.Namespace) -> None:
    results = {}
    for name in args.model_list:
        run = _child_torch if args.child == "torch" else _child_libai
        results[name] = run(args, name)
        results[name]["threads"] = os.environ.get("OMP_NUM_THREADS")
    with open(args.result_file, "w") as f:
        json.dump(results, f)


# ---------------------------------------------------------------------------------------------
# Parent: turns, report
# ---------------------------------------------------------------------------------------------
def _run(python: str, args: argparse.Namespace, side: str, models: List[str],
         workdir: str) -> Dict[str, Any]:
    result_file = os.path.join(workdir, f"{side}.json")
    if os.path.exists(result_file):
        os.remove(result_file)
    cmd = [python, os.path.abspath(__file__), "--child", side, "--result-file", result_file,
           "--models", ",".join(models)]
    for name in ("repeats", "warmup", "iters", "batch_size", "seq", "seed", "threads"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    if args.quick:
        cmd.append("--quick")
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=args.timeout)
    output = proc.stdout + proc.stderr
    if proc.returncode != 0:
        raise ChildFailed(f"the {side} child ({', '.join(models)}) failed (exit code "
                          f"{proc.returncode}); its output ends with:\n{output[-4000:]}")
    return read_result(result_file, f"the {side} child", output)


def run_turns(args: argparse.Namespace, torch_python: Optional[str],
              workdir: str) -> Dict[Any, List[Dict[str, Any]]]:
    """(model, side) -> results per turn. One fresh process per (model, side); the order of the
    sides rotates per turn, so a change of the machine's load falls on every side. ``--quick``
    runs every model in one process per side (the smoke run's cost is mostly start-up)."""
    sides = list(args.mode_list) + (["torch"] if torch_python else [])
    pythons = {side: sys.executable for side in args.mode_list}
    pythons["torch"] = torch_python
    groups = [args.model_list] if args.quick else [[m] for m in args.model_list]
    runs: Dict[Any, List[Dict[str, Any]]] = {}
    for turn in range(args.repeats):
        shift = turn % len(sides)
        order = sides[shift:] + sides[:shift]
        for models in groups:
            for side in order:
                result = _run(pythons[side], args, side, models, workdir)
                for name in models:
                    runs.setdefault((name, side), []).append(result[name])
                    print(f"  turn {turn + 1}, {name}, {side}: {result[name]['step_s']:.3f} s/step "
                          f"(CPU {result[name]['cpu_step_s']:.3f})", flush=True)
    return runs


def report(args: argparse.Namespace, runs: Dict[Any, List[Dict[str, Any]]]) -> str:
    rows, ratio_rows = [], []
    have_torch = any(side == "torch" for _, side in runs)
    for name in args.model_list:
        for side in args.mode_list + (["torch"] if have_torch else []):
            rs = runs[(name, side)]
            rows.append([name, side, Spread.of([r["step_s"] for r in rs]).format(3),
                         Spread.of([r["cpu_step_s"] for r in rs]).format(3),
                         Spread.of([r["first_step_s"] for r in rs]).format(2),
                         f"{rs[0]['loss']:.4f}"])
        if have_torch:
            for mode in args.mode_list:
                pairs = list(zip(runs[(name, mode)], runs[(name, "torch")]))
                ratio_rows.append([name, f"libai {mode} / torch",
                                   Spread.of([t["step_s"] / o["step_s"] for o, t in pairs]).format(2),
                                   Spread.of([t["cpu_step_s"] / o["cpu_step_s"] for o, t in pairs]).format(2)])
    shapes = "; ".join(f"{m}: " + ", ".join(f"{k} {v}" for k, v in args.shapes[m].items())
                       for m in args.model_list)
    head = [f"training step, batch {args.batch_size} x sequence {args.seq}, fp32, AdamW; {shapes}",
            f"OMP_NUM_THREADS={args.threads} both sides; {args.repeats} turn(s) of {args.iters} "
            f"timed steps after {args.warmup} warm-up, one fresh process per model and side",
            getattr(args, "isa_line", ""), ""]
    out = head + [format_table(["model", "side", "s/step (wall)", "s/step (CPU)", "first step s",
                                "first timed loss"], rows)]
    if ratio_rows:
        out += ["", format_table(["model", "ratio (speed)", "wall", "CPU"], ratio_rows),
                "", "mean (min-max) over turns; ratios are torch's step time over libai's, per turn "
                "(> 1: libai faster)"]
        torch_run = runs[(args.model_list[0], "torch")][0]
        out.append(f"torch side: {torch_run['version']}, {torch_run['torch_threads']} thread(s), "
                   f"CPU capability {torch_run['capability']}, attention {torch_run['attention']}")
    else:
        out += ["", "torch side not run: HF_ENV is not set"]
    libai_run = runs[(args.model_list[0], args.mode_list[0])][0]
    out.append(f"libai side: OPENBLAS_CORETYPE={libai_run.get('blas') or '(unset)'}")
    out += ["", "CPU s/step by thread (first turn):"]
    for (name, side), rs in runs.items():
        parts = ", ".join(f"{k} {v:.3f}" for k, v in rs[0].get("cpu_by_thread", {}).items())
        out.append(f"  {name} {side}: {parts or '(not available)'}")
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    from vs_transformers_generation import hf_python

    args.isa_line = apply_isa(args.isa)

    if not os.environ.get("HF_ENV", "").strip() and args.quick:
        torch_python = None
        print("vs_torch: HF_ENV is not set; --quick runs the libai side alone", flush=True)
    else:
        torch_python = hf_python(who="vs_torch")
    with tempfile.TemporaryDirectory(prefix="vs_torch_") as workdir:
        try:
            runs = run_turns(args, torch_python, workdir)
        except ChildFailed as e:
            raise SystemExit(f"vs_torch: {e}")
    print()
    print(report(args, runs))


if __name__ == "__main__":
    main()
