#!/usr/bin/env python
"""The smallest OneFlow programs doing vs_torch.py's training steps' work, against libai's steps.

    .venv/bin/python benchmarks/bound_oneflow_step.py [--models gpt2,bert,llama] [--repeats 3] [--iters 20]
    .venv/bin/python benchmarks/bound_oneflow_step.py --quick          # smoke run

Issue 38, item 5: where libai trails torch, is the gap libai's or OneFlow's? This script writes
each model step of ``vs_torch.py`` (its shapes, batch 4 x 128 from ``vs_torch.make_batch``,
AdamW lr 1e-4 / weight decay 0.01, fp32) directly on OneFlow: local tensors, one ``nn.Module``
of plain parameters, a loop of functional ops (``_plain_models.py``). No libai layer, model,
graph or engine code runs in it. Each does the work of libai's model:

* ``gpt2``: token + position embeddings, pre-LN blocks (one fused query/key/value ``linear``,
  a causal bias of 0 and -inf, softmax, exact GELU MLP), final LN, tied LM head, dropout 0.1,
  cross entropy at every position;
* ``bert``: post-LN (eps 1e-12) with word + position + token-type embeddings, the padding mask
  of an all-ones ``attention_mask`` filled into the scores, the masked-LM head (dense, GELU,
  LN, tied logits plus a vocabulary bias), dropout 0.1, cross entropy at every position
  averaged over the 15% marked by ``loss_mask``;
* ``llama``: RMS norm (eps 1e-6), separate query and key/value projections without biases,
  rotary embeddings on queries and keys, grouped-query causal attention (key/value heads
  repeated), SwiGLU MLP, final RMS norm, untied LM head, no dropout, cross entropy.

It is timed in Eager and as an ``nn.Graph`` (with the three update fusions libai's graphs turn
on) against libai's own Graph and Eager steps (``vs_torch.py``'s libai child), one fresh
process per (model, program, mode), the order of the (program, mode) pairs rotating per turn.

The programs ``bound-oneflow`` and ``bound-libai`` differ in the formulation of three ops:
``oneflow`` (``nn.functional.layer_norm`` and ``cross_entropy``, and the RMS norm's mean as a
reduction: what a OneFlow user writes) or ``libai`` (the written-out CPU layer norm, mean and
cross entropy that libai's layers use, imported as functions). Both variants ``import libai`` first by default, so they get the same
runtime choices as libai (the BLAS route, OneFlow's threading and oneDNN settings); ``--bare``
skips that import and measures OneFlow as shipped.
"""
import argparse
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ChildFailed, Spread, format_table  # noqa: E402
from _plain_models import BUILDERS, plain_inputs  # noqa: E402
import vs_torch  # noqa: E402

PROGRAMS = ("bound-oneflow", "bound-libai", "libai")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="bound-oneflow / bound-libai (the plain program with --ops oneflow / "
                        "libai) and libai (its own model) (default: %(default)s)")
    p.add_argument("--models", default=",".join(vs_torch.MODELS),
                   help="vs_torch.py's models to run (default: %(default)s)")
    p.add_argument("--modes", default="graph,eager")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--bare", action="store_true", help="the bound programs skip `import libai`")
    p.add_argument("--timeout", type=float, default=900.0)
    p.add_argument("--quick", action="store_true", help="a 1-layer model of width 32, 1 step, 1 turn")
    p.add_argument("--child", help=argparse.SUPPRESS)
    p.add_argument("--result-file", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.program_list = [x.strip() for x in args.programs.split(",") if x.strip()]
    args.mode_list = [x.strip() for x in args.modes.split(",") if x.strip()]
    args.model_list = [x.strip() for x in args.models.split(",") if x.strip()]
    if not args.model_list or set(args.model_list) - set(vs_torch.MODELS):
        p.error(f"--models must name some of {', '.join(vs_torch.MODELS)}, got {args.models!r}")
    if not args.program_list or set(args.program_list) - set(PROGRAMS):
        p.error(f"--programs must name some of {', '.join(PROGRAMS)}, got {args.programs!r}")
    if not args.mode_list or set(args.mode_list) - set(vs_torch.LIBAI_MODES):
        p.error(f"--modes must name some of graph, eager, got {args.modes!r}")
    if args.quick:
        args.repeats, args.warmup, args.iters = 1, 1, 1
    return args


def _torch_args(args: argparse.Namespace, model: str, mode: str) -> argparse.Namespace:
    """The arguments ``vs_torch``'s children read, for ``model`` at this script's settings."""
    flags = ["--models", model, "--warmup", str(args.warmup), "--iters", str(args.iters),
             "--threads", str(args.threads)] + (["--quick"] if args.quick else [])
    theirs = vs_torch.parse_args(flags)
    theirs.child, theirs.warmup, theirs.iters = mode, args.warmup, args.iters
    return theirs


def _child_bound(args: argparse.Namespace, name: str, ops: str, mode: str) -> Dict[str, Any]:
    if not args.bare:
        import libai  # noqa: F401  (the runtime choices only: BLAS route, threading, oneDNN)
    import oneflow as flow

    t = _torch_args(args, name, mode)
    s = t.shapes[name]
    flow.manual_seed(t.seed)
    model = BUILDERS[name](flow, s, t.seq, ops)
    model.train()
    data = vs_torch.make_batch(name, t.batch_size, t.seq, s["vocab"], t.seed)
    inputs = [flow.tensor(x) for x in plain_inputs(name, data)]
    opt = flow.optim.AdamW(model.parameters(), lr=vs_torch.LR, weight_decay=vs_torch.WEIGHT_DECAY)
    if mode == "graph":
        class Step(flow.nn.Graph):
            def __init__(self):
                super().__init__()
                self.model = model
                self.add_optimizer(opt)
                self.config.allow_fuse_model_update_ops(True)
                self.config.allow_fuse_add_to_output(True)
                self.config.allow_fuse_cast_scale(True)

            def build(self, *inputs):
                loss = self.model(*inputs)
                loss.backward()
                return loss

        graph = Step()

        def step() -> Any:
            return graph(*inputs)
    else:
        def step() -> Any:
            loss = model(*inputs)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

    result = vs_torch._time_steps(step, lambda loss: float(loss.numpy()), t.warmup, t.iters)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result


def child_main(args: argparse.Namespace) -> None:
    import json

    name, program, mode = args.child.split(":")
    if program == "libai":
        result = vs_torch._child_libai(_torch_args(args, name, mode), name)
    else:
        result = _child_bound(args, name, program.split("-")[1], mode)
    with open(args.result_file, "w") as f:
        json.dump(result, f)


# ---------------------------------------------------------------------------------------------
# Parent
# ---------------------------------------------------------------------------------------------
def run_turns(args: argparse.Namespace, workdir: str) -> Dict[str, List[Dict[str, Any]]]:
    from _common import run_child

    kinds = [f"{p}:{m}" for m in args.mode_list for p in args.program_list]
    runs: Dict[str, List[Dict[str, Any]]] = {}
    for turn in range(args.repeats):
        shift = turn % len(kinds)
        for kind in [f"{n}:{k}" for n in args.model_list for k in kinds[shift:] + kinds[:shift]]:
            path = os.path.join(workdir, kind.replace(":", "_") + ".json")
            argv = [os.path.abspath(__file__), "--child", kind, "--result-file", path,
                    "--warmup", str(args.warmup), "--iters", str(args.iters), "--threads", str(args.threads)]
            argv += (["--quick"] if args.quick else []) + (["--bare"] if args.bare else [])
            result = run_child(argv, path, kind, args.threads, args.timeout)
            runs.setdefault(kind, []).append(result)
            print(f"  turn {turn + 1}, {kind}: {result['step_s']:.3f} s/step (CPU {result['cpu_step_s']:.3f}), "
                  f"loss {result['loss']:.4f}", flush=True)
    return runs


def report(args: argparse.Namespace, runs: Dict[str, List[Dict[str, Any]]]) -> str:
    rows, ratio_rows = [], []
    for name in args.model_list:
        for kind in (f"{p}:{m}" for m in args.mode_list for p in args.program_list):
            rs = runs[f"{name}:{kind}"]
            rows.append([name, kind, Spread.of([r["step_s"] for r in rs]).format(3),
                         Spread.of([r["cpu_step_s"] for r in rs]).format(3), f"{rs[0]['loss']:.4f}"])
        for mode in args.mode_list:
            ours = runs.get(f"{name}:libai:{mode}")
            for program in args.program_list:
                if program == "libai" or ours is None:
                    continue
                pairs = list(zip(runs[f"{name}:{program}:{mode}"], ours))
                ratio_rows.append([name, f"libai / {program} ({mode})",
                                   Spread.of([b["step_s"] / a["step_s"] for b, a in pairs]).format(2),
                                   Spread.of([b["cpu_step_s"] / a["cpu_step_s"] for b, a in pairs]).format(2)])
    out = [f"training step of vs_torch.py's {', '.join(args.model_list)}"
           f"{' (--quick sizes)' if args.quick else ''}; OMP_NUM_THREADS={args.threads}; "
           f"{args.repeats} turn(s) of {args.iters} steps after {args.warmup}; bound programs "
           f"{'without' if args.bare else 'after'} `import libai`", "",
           format_table(["model", "program:mode", "s/step (wall)", "s/step (CPU)", "first timed loss"], rows)]
    if ratio_rows:
        out += ["", format_table(["model", "speed ratio", "wall", "CPU"], ratio_rows),
                "(> 1: libai faster than the plain program; mean (min-max) of per-turn ratios)"]
    return "\n".join(out)


def main(argv: Optional[Sequence[str]] = None) -> None:
    args = parse_args(argv)
    if args.child:
        child_main(args)
        return
    with tempfile.TemporaryDirectory(prefix="bound_step_") as workdir:
        try:
            runs = run_turns(args, workdir)
        except ChildFailed as e:
            raise SystemExit(f"bound_oneflow_step: {e}")
    print()
    print(report(args, runs))


if __name__ == "__main__":
    main()
