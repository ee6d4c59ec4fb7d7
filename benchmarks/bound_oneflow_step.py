#!/usr/bin/env python
"""The smallest OneFlow program doing a GPT-2 training step's work, against libai's step.

    .venv/bin/python benchmarks/bound_oneflow_step.py [--repeats 3] [--iters 20]
    .venv/bin/python benchmarks/bound_oneflow_step.py --quick          # smoke run

Issue 38, item 5: where libai trails torch, is the gap libai's or OneFlow's? This script writes
``vs_torch.py``'s GPT-2 step (4 layers, hidden 256, 8 heads, FFN 1024, vocabulary 8192, tied
LM head, dropout 0.1, batch 4 x 128, AdamW lr 1e-4 / weight decay 0.01, fp32) directly on
OneFlow: local tensors, one ``nn.Module`` of plain parameters, a loop of functional ops
(embedding, layer norm, one fused query/key/value ``linear``, scores, a causal bias of 0 and
-inf, softmax, dropout, exact GELU, cross entropy). No libai layer, model, graph or engine code
runs in it. It is timed in Eager and as an ``nn.Graph`` (with the three update fusions libai's
graphs turn on) against libai's own Graph and Eager steps (``vs_torch.py``'s libai child), one
fresh process per (program, mode), the order rotating per turn.

``--ops`` chooses the OneFlow formulation of two ops: ``oneflow`` (``nn.functional.layer_norm``
and ``cross_entropy``, what a OneFlow user writes) or ``libai`` (the written-out CPU layer norm
and cross entropy that libai's layers use, imported as functions). Both variants ``import libai``
first by default, so they get the same runtime choices as libai (the BLAS route, OneFlow's
threading and oneDNN settings); ``--bare`` skips that import and measures OneFlow as shipped.
"""
import argparse
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from _common import ChildFailed, Spread, format_table  # noqa: E402
import vs_torch  # noqa: E402

PROGRAMS = ("bound-oneflow", "bound-libai", "libai")


def parse_args(argv: Optional[Sequence[str]] = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--programs", default=",".join(PROGRAMS),
                   help="bound-oneflow / bound-libai (the plain program with --ops oneflow / "
                        "libai) and libai (its own model) (default: %(default)s)")
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
    if not args.program_list or set(args.program_list) - set(PROGRAMS):
        p.error(f"--programs must name some of {', '.join(PROGRAMS)}, got {args.programs!r}")
    if not args.mode_list or set(args.mode_list) - set(vs_torch.LIBAI_MODES):
        p.error(f"--modes must name some of graph, eager, got {args.modes!r}")
    if args.quick:
        args.repeats, args.warmup, args.iters = 1, 1, 1
    return args


def _torch_args(args: argparse.Namespace, mode: str) -> argparse.Namespace:
    """The arguments ``vs_torch``'s children read, for GPT-2 at this script's settings."""
    flags = ["--models", "gpt2", "--warmup", str(args.warmup), "--iters", str(args.iters),
             "--threads", str(args.threads)] + (["--quick"] if args.quick else [])
    theirs = vs_torch.parse_args(flags)
    theirs.child, theirs.warmup, theirs.iters = mode, args.warmup, args.iters
    return theirs


# ---------------------------------------------------------------------------------------------
# The plain OneFlow GPT-2
# ---------------------------------------------------------------------------------------------
def build_plain_gpt(flow: Any, s: Dict[str, Any], seq: int, ops: str) -> Any:
    """A GPT-2 as one module of parameters and a forward of functional ops."""
    nn, F = flow.nn, flow.nn.functional
    if ops == "libai":
        from libai.layers.cross_entropy import _cpu_softmax_cross_entropy
        from libai.layers.layer_norm import _affine_layer_norm

        def norm(x, w, b):
            return _affine_layer_norm(1e-5).apply(x, w, b)

        def cross_entropy(logits, labels):
            return _cpu_softmax_cross_entropy(logits, labels).mean()
    else:
        def norm(x, w, b):
            return F.layer_norm(x, (x.shape[-1],), w, b, 1e-5)

        def cross_entropy(logits, labels):
            return F.cross_entropy(logits, labels)

    h, heads, ffn, vocab, p = s["hidden"], s["heads"], s["ffn"], s["vocab"], s["dropout"]

    def param(*shape, value=None):
        t = flow.full(shape, value) if value is not None else flow.randn(*shape) * 0.02
        return nn.Parameter(t)

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln1_w, self.ln1_b = param(h, value=1.0), param(h, value=0.0)
            self.qkv_w, self.qkv_b = param(3 * h, h), param(3 * h, value=0.0)
            self.out_w, self.out_b = param(h, h), param(h, value=0.0)
            self.ln2_w, self.ln2_b = param(h, value=1.0), param(h, value=0.0)
            self.fc1_w, self.fc1_b = param(ffn, h), param(ffn, value=0.0)
            self.fc2_w, self.fc2_b = param(h, ffn), param(h, value=0.0)

        def forward(self, x, causal):
            b, t, _ = x.shape
            qkv = F.linear(norm(x, self.ln1_w, self.ln1_b), self.qkv_w, self.qkv_b)
            qkv = qkv.view(b, t, 3, heads, h // heads).permute(2, 0, 3, 1, 4)
            scores = flow.matmul(qkv[0], qkv[1], transpose_b=True, alpha=(h // heads) ** -0.5)
            probs = F.dropout(flow.softmax(scores + causal, dim=-1), p=p, training=self.training)
            ctx = flow.matmul(probs, qkv[2]).permute(0, 2, 1, 3).reshape(b, t, h)
            x = x + F.dropout(F.linear(ctx, self.out_w, self.out_b), p=p, training=self.training)
            inner = F.gelu(F.linear(norm(x, self.ln2_w, self.ln2_b), self.fc1_w, self.fc1_b))
            return x + F.dropout(F.linear(inner, self.fc2_w, self.fc2_b), p=p, training=self.training)

    class PlainGPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = param(vocab, h), param(seq, h)
            self.blocks = nn.ModuleList([Block() for _ in range(s["layers"])])
            self.lnf_w, self.lnf_b = param(h, value=1.0), param(h, value=0.0)
            bias = flow.zeros(seq, seq).masked_fill(~flow.tril(flow.ones(seq, seq, dtype=flow.bool)),
                                                    float("-inf"))
            self.register_buffer("causal", bias.view(1, 1, seq, seq))

        def forward(self, ids, labels):
            pos = flow.arange(ids.shape[1])
            x = F.dropout(F.embedding(ids, self.wte) + F.embedding(pos, self.wpe), p=p,
                          training=self.training)
            for block in self.blocks:
                x = block(x, self.causal)
            logits = F.linear(norm(x, self.lnf_w, self.lnf_b), self.wte)
            return cross_entropy(logits.view(-1, vocab), labels.view(-1))

    return PlainGPT()


def _child_bound(args: argparse.Namespace, ops: str, mode: str) -> Dict[str, Any]:
    if not args.bare:
        import libai  # noqa: F401  (the runtime choices only: BLAS route, threading, oneDNN)
    import numpy as np
    import oneflow as flow

    t = _torch_args(args, mode)
    s = t.shapes["gpt2"]
    flow.manual_seed(t.seed)
    model = build_plain_gpt(flow, s, t.seq, ops)
    model.train()
    data = vs_torch.make_batch("gpt2", t.batch_size, t.seq, s["vocab"], t.seed)
    ids, labels = flow.tensor(data["ids"]), flow.tensor(np.roll(data["ids"], -1, axis=1))
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

            def build(self, ids, labels):
                loss = self.model(ids, labels)
                loss.backward()
                return loss

        graph = Step()

        def step() -> Any:
            return graph(ids, labels)
    else:
        def step() -> Any:
            loss = model(ids, labels)
            loss.backward()
            opt.step()
            opt.zero_grad()
            return loss

    result = vs_torch._time_steps(step, lambda loss: float(loss.numpy()), t.warmup, t.iters)
    result["parameters"] = sum(p.numel() for p in model.parameters())
    return result


def child_main(args: argparse.Namespace) -> None:
    import json

    program, mode = args.child.split(":")
    if program == "libai":
        result = vs_torch._child_libai(_torch_args(args, mode), "gpt2")
    else:
        result = _child_bound(args, program.split("-")[1], mode)
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
        for kind in kinds[shift:] + kinds[:shift]:
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
    rows = []
    for kind, rs in runs.items():
        rows.append([kind, Spread.of([r["step_s"] for r in rs]).format(3),
                     Spread.of([r["cpu_step_s"] for r in rs]).format(3), f"{rs[0]['loss']:.4f}"])
    ratio_rows = []
    for mode in args.mode_list:
        ours = runs.get(f"libai:{mode}")
        for program in args.program_list:
            if program == "libai" or ours is None:
                continue
            pairs = list(zip(runs[f"{program}:{mode}"], ours))
            ratio_rows.append([f"libai / {program} ({mode})",
                               Spread.of([b["step_s"] / a["step_s"] for b, a in pairs]).format(2),
                               Spread.of([b["cpu_step_s"] / a["cpu_step_s"] for b, a in pairs]).format(2)])
    out = [f"GPT-2 training step of vs_torch.py{' (--quick sizes)' if args.quick else ''}; "
           f"OMP_NUM_THREADS={args.threads}; {args.repeats} turn(s) of {args.iters} steps after "
           f"{args.warmup}; bound programs {'without' if args.bare else 'after'} `import libai`", "",
           format_table(["program:mode", "s/step (wall)", "s/step (CPU)", "first timed loss"], rows)]
    if ratio_rows:
        out += ["", format_table(["speed ratio", "wall", "CPU"], ratio_rows),
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
