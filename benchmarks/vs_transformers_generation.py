#!/usr/bin/env python
"""libai's ``generate`` against Hugging Face ``transformers`` + torch on the same GPT-2 checkpoint.

    HF_ENV=/path/to/hf_env .venv/bin/python benchmarks/vs_transformers_generation.py [--repeats 3]
    HF_ENV=/path/to/hf_env .venv/bin/python benchmarks/vs_transformers_generation.py --quick

``transformers`` and torch are never part of this project: ``HF_ENV`` names a Python
environment built outside the repository (see :data:`BUILD_HINT`); its ``bin/python`` runs the
transformers side as a subprocess. Without ``HF_ENV`` the script says how to build it and exits.

What runs (issue 23, item 5): ``transformers`` builds a GPT-2 (6 layers, hidden 512, 8 heads,
vocabulary 8192, 128 positions; seed 0) and ``save_pretrained``s it to a temporary folder; libai
loads that folder with ``GPTForPreTraining.from_pretrained``. Both continue the same random
32-token prompts greedily by 64 new tokens (key/value cache on, no end-of-sequence token, so
every row gets all 64) at batch 1 and batch 8, with ``OMP_NUM_THREADS=1`` on both sides.
``--model llama`` makes a Llama instead (rotary positions, RMS norm, SwiGLU, grouped-query
attention with ``--kv-heads`` key/value heads; ``LlamaForCausalLM`` on both sides) and
``--beams 3`` searches with 3 beams instead of greedily (issue 38, item 2).

How it is timed: every measurement is a fresh process (``--repeats`` turns; the side that goes
first alternates per turn) that loads the model, warms up with a short generation, then times
one ``generate`` call by the wall clock and by the process's CPU time (all threads; the robust
figure on a shared machine). libai's timed call ends by reading the tokens back, which waits
for OneFlow's queued work. A full forward over prompt + new tokens (batch 1) is timed too: it
separates per-token overhead from arithmetic. The tokens of both sides must be identical;
the report prints new tokens/s and the ratios libai / transformers per turn.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import REPO_ROOT, ChildFailed, Spread, format_table, read_result  # noqa: E402
from _isa import add_isa_argument, apply_isa  # noqa: E402

SIDES = ("libai", "transformers")
BUILD_HINT = (
    "build the transformers side outside the repository (never in requirements.txt), e.g.\n"
    "    python3.11 -m venv /work/hf_env\n"
    "    /work/hf_env/bin/pip install torch --index-url https://download.pytorch.org/whl/cpu\n"
    "    /work/hf_env/bin/pip install transformers\n"
    "(or a local CPU wheel of torch instead of the index), then run with HF_ENV=/work/hf_env"
)


# ---------------------------------------------------------------------------------------------
# Command line
# ---------------------------------------------------------------------------------------------
def add_generation_arguments(p: argparse.ArgumentParser) -> None:
    """The turns, batches, prompt, model and search of a generation comparison (defaults: the
    issue's greedy GPT-2 run); also used by ``bound_oneflow_decode.py``."""
    p.add_argument("--repeats", type=int, default=3, help="turns; each side once per turn (default: 3)")
    p.add_argument("--batches", default="1,8", help="comma-separated batch sizes (default: 1,8)")
    p.add_argument("--prompt-len", type=int, default=32)
    p.add_argument("--new-tokens", type=int, default=64)
    p.add_argument("--layers", type=int, default=6)
    p.add_argument("--hidden", type=int, default=512)
    p.add_argument("--heads", type=int, default=8)
    p.add_argument("--vocab", type=int, default=8192)
    p.add_argument("--model", choices=("gpt2", "llama"), default="gpt2",
                   help="gpt2, or llama (RMS norm, rotary positions, SwiGLU, grouped-query "
                        "attention with --kv-heads key/value heads) (default: gpt2)")
    p.add_argument("--kv-heads", type=int, default=2, help="key/value heads of --model llama (default: 2)")
    p.add_argument("--beams", type=int, default=1, help="beam search width; 1 = greedy (default: 1)")


def check_generation_arguments(p: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """Parse ``--batches`` into ``args.batch_sizes`` and refuse sizes no model could have (with
    ``p.error``); the checks of :func:`add_generation_arguments`' options."""
    try:
        args.batch_sizes = [int(b) for b in args.batches.split(",") if b.strip()]
    except ValueError:
        p.error(f"--batches must be comma-separated integers, got {args.batches!r}")
    for name in ("repeats", "prompt_len", "new_tokens", "layers", "hidden", "heads", "vocab"):
        if getattr(args, name) < 1:
            p.error(f"--{name.replace('_', '-')} must be >= 1, got {getattr(args, name)}")
    if not args.batch_sizes or min(args.batch_sizes) < 1:
        p.error(f"--batches must list batch sizes >= 1, got {args.batches!r}")
    if args.hidden % args.heads:
        p.error(f"--hidden {args.hidden} is not divisible by --heads {args.heads}")
    if args.model == "llama" and (args.kv_heads < 1 or args.heads % args.kv_heads):
        p.error(f"--heads {args.heads} is not a multiple of --kv-heads {args.kv_heads}")
    if args.beams < 1:
        p.error(f"--beams must be >= 1, got {args.beams}")


def llama_intermediate_size(hidden: int) -> int:
    """The SwiGLU width of the comparison's Llama: about 8/3 x hidden, a multiple of 8 (as Llama's)."""
    return (8 * hidden // 3 + 7) // 8 * 8


def shrink_for_quick(args: argparse.Namespace, batches: str = "1,2") -> None:
    """The ``--quick`` smoke run's sizes: one turn, a 2-layer model of width 64, 8 new tokens."""
    args.repeats, args.batches, args.layers, args.hidden, args.heads = 1, batches, 2, 64, 4
    args.vocab, args.prompt_len, args.new_tokens = 256, 8, 8


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_generation_arguments(p)
    p.add_argument("--positions", type=int, default=128, help="learned positions (>= prompt + new)")
    p.add_argument("--seed", type=int, default=0, help="seed of the weights and the prompts")
    p.add_argument("--threads", type=int, default=1, help="OMP_NUM_THREADS of both sides (default: 1)")
    p.add_argument("--timeout", type=float, default=900.0, help="seconds per child process")
    p.add_argument("--quick", action="store_true",
                   help="smoke run: a 2-layer model, 8 new tokens, batches 1 and 2, one turn")
    add_isa_argument(p)
    p.add_argument("--child", choices=("make",) + SIDES, help=argparse.SUPPRESS)
    p.add_argument("--model-dir", help=argparse.SUPPRESS)
    p.add_argument("--prompts-file", help=argparse.SUPPRESS)
    p.add_argument("--batch", type=int, help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.quick:
        shrink_for_quick(args)
    check_generation_arguments(p, args)
    if args.threads < 1:
        p.error(f"--threads must be >= 1, got {args.threads}")
    if args.positions < args.prompt_len + args.new_tokens:
        p.error(f"--positions {args.positions} < --prompt-len + --new-tokens "
                f"({args.prompt_len + args.new_tokens}): the model could not place every token")
    return args


def hf_python(env: Optional[Dict[str, str]] = None, who: str = "vs_transformers_generation") -> str:
    """The Python of the transformers environment named by ``HF_ENV``; exits with the recipe to
    build one when it is unset or holds no Python (``who`` names the script in the message)."""
    env = os.environ if env is None else env
    root = env.get("HF_ENV", "").strip()
    if not root:
        raise SystemExit(f"{who}: HF_ENV is not set; " + BUILD_HINT)
    python = os.path.join(root, "bin", "python")
    if not os.access(python, os.X_OK):
        raise SystemExit(f"{who}: HF_ENV={root} has no {python}; " + BUILD_HINT)
    return python


def make_prompts(batch: int, length: int, vocab: int, seed: int) -> List[List[int]]:
    """``batch`` random prompts of ``length`` token ids (the first rows are the same for any batch)."""
    rng = random.Random(seed)
    return [[rng.randrange(vocab) for _ in range(length)] for _ in range(batch)]


def first_difference(a: Sequence[Sequence[int]], b: Sequence[Sequence[int]]) -> Optional[str]:
    """None when the token rows are identical, else where they first differ (in words)."""
    if len(a) != len(b):
        return f"{len(a)} rows against {len(b)}"
    for row, (x, y) in enumerate(zip(a, b)):
        for pos in range(max(len(x), len(y))):
            left = x[pos] if pos < len(x) else None
            right = y[pos] if pos < len(y) else None
            if left != right:
                return f"row {row}, position {pos}: {left} against {right}"
    return None


# ---------------------------------------------------------------------------------------------
# Children: the model maker and the two generating sides
# ---------------------------------------------------------------------------------------------
def _child_make(args: argparse.Namespace) -> Dict[str, Any]:
    import torch
    import transformers as tf

    torch.manual_seed(args.seed)
    if args.model == "llama":
        config = tf.LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden,
                                intermediate_size=llama_intermediate_size(args.hidden),
                                num_hidden_layers=args.layers, num_attention_heads=args.heads,
                                num_key_value_heads=args.kv_heads, max_position_embeddings=args.positions,
                                tie_word_embeddings=False, bos_token_id=None, eos_token_id=None,
                                pad_token_id=None)
        model = tf.LlamaForCausalLM(config)
    else:
        config = tf.GPT2Config(vocab_size=args.vocab, n_positions=args.positions, n_embd=args.hidden,
                               n_layer=args.layers, n_head=args.heads, bos_token_id=None,
                               eos_token_id=None)  # no end-of-sequence: every row gets every token
        model = tf.GPT2LMHeadModel(config)
    model.eval().save_pretrained(args.model_dir)
    return {"torch": torch.__version__, "transformers": __import__("transformers").__version__}


def _timed(generate: Any, forward: Any, prompts: Any, full: Any, new_tokens: int) -> Dict[str, Any]:
    """Warm up, then time one generation and one full forward (wall and CPU)."""
    generate(prompts, 4)
    forward(full)
    wall, cpu = time.perf_counter(), time.process_time()
    tokens = generate(prompts, new_tokens)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    fwd = time.perf_counter()
    forward(full)
    fwd = time.perf_counter() - fwd
    return {"seconds": wall, "cpu_seconds": cpu, "tokens": tokens, "forward_s": fwd}


def _child_transformers(args: argparse.Namespace, prompts: List[List[int]],
                        full: List[List[int]]) -> Dict[str, Any]:
    import torch
    import transformers as tf

    torch.set_num_threads(args.threads)
    model_class = tf.LlamaForCausalLM if args.model == "llama" else tf.GPT2LMHeadModel
    model = model_class.from_pretrained(args.model_dir).eval()

    @torch.no_grad()
    def generate(ids, n):
        ids = torch.tensor(ids, dtype=torch.long)
        out = model.generate(ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                             do_sample=False, num_beams=args.beams)
        return out.tolist()

    @torch.no_grad()
    def forward(ids):
        return model(torch.tensor(ids, dtype=torch.long)).logits.sum().item()

    result = _timed(generate, forward, prompts, full, args.new_tokens)
    result.update(version=__import__("transformers").__version__, torch_threads=torch.get_num_threads())
    return result


def _child_libai(args: argparse.Namespace, prompts: List[List[int]],
                 full: List[List[int]]) -> Dict[str, Any]:
    import libai  # noqa: F401  (loads OneFlow's libraries and picks the BLAS kernels first)
    import oneflow as flow

    from libai.models import GPTForPreTraining, LlamaForCausalLM

    model_class = LlamaForCausalLM if args.model == "llama" else GPTForPreTraining
    model = model_class.from_pretrained(args.model_dir).eval()

    def generate(ids, n):
        return model.generate(flow.tensor(ids, dtype=flow.int64), max_new_tokens=n,
                              num_beams=args.beams).numpy().tolist()

    def forward(ids):
        with flow.no_grad():
            out = model(flow.tensor(ids, dtype=flow.int64))
            out = out["prediction_scores"] if "prediction_scores" in out else out["logits"]
        return float(out.sum().numpy())  # waits for OneFlow's queued work

    result = _timed(generate, forward, prompts, full, args.new_tokens)
    result.update(version=getattr(libai, "__version__", "?"),
                  blas=os.environ.get("OPENBLAS_CORETYPE", ""))
    return result


def child_main(args: argparse.Namespace) -> None:
    if args.child == "make":
        result = _child_make(args)
    else:
        prompts = make_prompts(args.batch, args.prompt_len, args.vocab, args.seed)
        full = make_prompts(1, args.prompt_len + args.new_tokens, args.vocab, args.seed + 1)
        run = _child_libai if args.child == "libai" else _child_transformers
        result = run(args, prompts, full)
    result["threads"] = os.environ.get("OMP_NUM_THREADS")
    with open(args.result_file, "w") as f:
        json.dump(result, f)


# ---------------------------------------------------------------------------------------------
# Parent: turns, checks, report
# ---------------------------------------------------------------------------------------------
def _run(python: str, args: argparse.Namespace, child: str, workdir: str,
         batch: int = 0) -> Dict[str, Any]:
    result_file = os.path.join(workdir, f"{child}-{batch}.json")
    if os.path.exists(result_file):
        os.remove(result_file)
    cmd = [python, os.path.abspath(__file__), "--child", child, "--model-dir",
           os.path.join(workdir, "model"), "--result-file", result_file, "--batch", str(batch)]
    for name in ("prompt_len", "new_tokens", "layers", "hidden", "heads", "vocab", "positions",
                 "seed", "threads", "model", "kv_heads", "beams"):
        cmd += [f"--{name.replace('_', '-')}", str(getattr(args, name))]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=REPO_ROOT,
                          timeout=args.timeout)
    output = proc.stdout + proc.stderr
    what = f"the {child} child" + (f" (batch {batch})" if batch else "")
    if proc.returncode != 0:
        raise ChildFailed(f"{what} failed (exit code {proc.returncode}); its output ends with:\n"
                          f"{output[-4000:]}")
    return read_result(result_file, what, output)


def run_turns(args: argparse.Namespace, python: str, workdir: str) -> Dict[Any, List[Dict[str, Any]]]:
    """(side, batch) -> the results of every turn, sides alternating who goes first."""
    runs: Dict[Any, List[Dict[str, Any]]] = {}
    pythons = {"libai": sys.executable, "transformers": python}
    for turn in range(args.repeats):
        order = SIDES if turn % 2 == 0 else SIDES[::-1]
        for batch in args.batch_sizes:
            for side in order:
                result = _run(pythons[side], args, side, workdir, batch)
                runs.setdefault((side, batch), []).append(result)
                rate = batch * args.new_tokens / result["seconds"]
                print(f"  turn {turn + 1}, batch {batch}, {side}: {rate:.1f} tokens/s", flush=True)
    return runs


def check_tokens(runs: Dict[Any, List[Dict[str, Any]]], batches: Sequence[int]) -> None:
    """Every turn of both sides must have produced the same tokens."""
    for batch in batches:
        reference = runs[("transformers", batch)][0]["tokens"]
        for side in SIDES:
            for turn, result in enumerate(runs[(side, batch)]):
                diff = first_difference(result["tokens"], reference)
                if diff:
                    raise SystemExit(f"vs_transformers_generation: batch {batch}, {side} turn "
                                     f"{turn + 1} differs from transformers: {diff}")


def report(args: argparse.Namespace, runs: Dict[Any, List[Dict[str, Any]]], made: Dict[str, Any]) -> str:
    new = args.new_tokens
    rows, ratio_rows = [], []
    for batch in args.batch_sizes:
        for side in SIDES:
            rs = runs[(side, batch)]
            rows.append([side, batch, Spread.of([batch * new / r["seconds"] for r in rs]).format(),
                         Spread.of([batch * new / r["cpu_seconds"] for r in rs]).format(),
                         Spread.of([1000 * r["forward_s"] for r in rs]).format()])
        pairs = list(zip(runs[("libai", batch)], runs[("transformers", batch)]))
        ratio_rows.append([batch, Spread.of([t["seconds"] / o["seconds"] for o, t in pairs]).format(2),
                           Spread.of([t["cpu_seconds"] / o["cpu_seconds"] for o, t in pairs]).format(2)])
    libai_run = runs[("libai", args.batch_sizes[0])][0]
    family = f"Llama ({args.kv_heads} key/value heads)" if args.model == "llama" else "GPT-2"
    head = [
        f"{family} {args.layers} layers, hidden {args.hidden}, {args.heads} heads, vocabulary "
        f"{args.vocab} (made by transformers {made['transformers']}, torch {made['torch']}, "
        f"seed {args.seed}; loaded by libai with from_pretrained)",
        f"{'greedy' if args.beams == 1 else f'beam search of {args.beams}'}, prompt {args.prompt_len} tokens, {new} new tokens, key/value cache; "
        f"OMP_NUM_THREADS={args.threads} both sides; {args.repeats} turn(s), one fresh process "
        f"per measurement; libai OPENBLAS_CORETYPE={libai_run.get('blas') or '(unset)'}",
        "tokens: identical on both sides in every turn", getattr(args, "isa_line", ""), "",
    ]
    table = format_table(["side", "batch", "new tokens/s (wall)", "new tokens per CPU s",
                          f"forward {args.prompt_len + new} tokens, ms"], rows)
    ratios = format_table(["batch", "libai / transformers (wall)", "libai / transformers (CPU)"],
                          ratio_rows)
    notes = ["", "mean (min-max) over turns; ratios are tokens/s of libai over transformers, "
             "per turn (> 1: libai faster)"]
    return "\n".join(head + [table, ""] + [ratios] + notes)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    python = hf_python()
    args.isa_line = apply_isa(args.isa)
    print(f"transformers side: {python}; {args.repeats} turn(s) at batch(es) "
          f"{', '.join(map(str, args.batch_sizes))}", flush=True)
    with tempfile.TemporaryDirectory(prefix="vs_transformers_") as workdir:
        try:
            made = _run(python, args, "make", workdir)
            runs = run_turns(args, python, workdir)
        except ChildFailed as e:
            raise SystemExit(f"vs_transformers_generation: {e}")
    check_tokens(runs, args.batch_sizes)
    print()
    print(report(args, runs, made))


if __name__ == "__main__":
    main()
