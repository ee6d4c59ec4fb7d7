"""The plan as text: what ``tools/train_net.py --dry-run`` prints."""
from typing import List, Sequence

from libai.plan.hardware import format_bytes
from libai.plan.placement import layer_stages, stage_ranks

__all__ = ["format_plan", "format_suggestions"]


def _table(rows: Sequence[Sequence[str]], header: Sequence[str]) -> str:
    from tabulate import tabulate

    return tabulate(rows, headers=header, tablefmt="github", disable_numparse=True)


def _si(x: float, unit: str) -> str:
    for prefix, size in (("P", 1e15), ("T", 1e12), ("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if abs(x) >= size:
            return f"{x / size:.2f} {prefix}{unit}"
    return f"{x:.2f} {unit}"


def _seconds(x: float) -> str:
    """``29.093 s``; under 0.1 s in ms or µs, so a small model's step does not print as 0."""
    if x >= 0.1 or x == 0:
        return f"{x:.3f} s"
    return f"{x * 1e3:.3f} ms" if x >= 1e-4 else f"{x * 1e6:.3f} µs"


def format_plan(plan) -> str:
    """Problems, placement, memory, time and advice, in that order."""
    out: List[str] = []
    errors = plan.errors
    warnings = [p for p in plan.problems if p.severity != "error"]
    nodes = f" = {plan.nodes} node(s) × {plan.devices_per_node}" if plan.nodes else ""
    device = plan.device.name if plan.device else "?"
    out.append(f"== preflight: {plan.world_size} device(s){nodes}, device {device}")
    if plan.model is not None:
        out.append(f"model {plan.model.model_class}: {plan.model.num_params:,} parameters "
                   f"({plan.model.num_layers} layer indices), built without weights")
    out.append(f"\n-- validation: {len(errors)} error(s), {len(warnings)} warning(s)")
    out += [f"  {p}" for p in errors + warnings] or ["  all checks passed"]
    if plan.run is None:
        return "\n".join(out)
    run = plan.run
    out.append(f"\n-- layout: {run.describe()}, {run.seq} tokens per sample, global batch "
               f"{run.global_batch}, AMP {'on' if run.amp else 'off'}, "
               f"{'Graph' if run.graph else 'Eager'} mode")
    if plan.iters_per_epoch is not None:
        out.append(f"   {plan.iters_per_epoch} iterations per epoch; {plan.max_iter} iterations in all")
    out.append(_table(_stage_rows(plan), ["stage", "layers", "ranks", "params/rank"]))
    out.append("\n-- parameter groups (SBP is [over data, over tensor])")
    rows = []
    for g in plan.groups:
        stages = f"{g.stages[0]}" if g.stages[0] == g.stages[1] else f"{g.stages[0]}..{g.stages[1]}"
        rows.append([g.pattern, str(g.count), "×".join(map(str, g.shape)), g.sbp,
                     "×".join(map(str, g.local_shape)), stages])
    out.append(_table(rows, ["parameters", "n", "shape", "sbp", "per rank", "stages"]))
    out.append("\n-- memory per rank")
    mrows = []
    for m in plan.memory:
        r0, r1 = stage_ranks(m.stage, run)
        mrows.append([f"{m.stage} ({r0}..{r1})", format_bytes(m.parameters), format_bytes(m.gradients),
                      format_bytes(m.optimizer),
                      f"{format_bytes(m.activations_per_micro_batch)} × {m.micro_batches_in_flight}",
                      format_bytes(m.transient + m.allocator), format_bytes(m.amp_copies + m.communication + m.buffers),
                      format_bytes(m.total)])
    out.append(_table(mrows, ["stage (ranks)", "params", "grads", "optimizer", "activations",
                              "transient", "amp/comm/buffers", "total"]))
    if plan.device is not None:
        verdict = "fits" if plan.fits else "does NOT fit"
        out.append(f"peak {format_bytes(plan.peak_bytes)} per rank {verdict} in "
                   f"{format_bytes(plan.device.memory)} (planning uses at most 95% of it)")
    out += [f"  - {line}" for line in plan.advice]
    t = plan.time
    if t is None:
        out.append("\n-- time per step: not planned (the model's FLOPs are unknown, see the warnings)")
    else:
        out.append("\n-- time per step (estimate)")
        out.append(f"  FLOPs per rank {_si(t.flops_per_rank, 'FLOP')}; comm per rank: TP "
                   f"{format_bytes(t.tp_bytes_per_rank)}, PP {format_bytes(t.pp_bytes_per_rank)}, DP "
                   f"{format_bytes(t.dp_bytes_per_rank)}; pipeline bubble {t.bubble_fraction:.1%}")
        out.append(f"  compute {_seconds(t.compute_seconds)} + TP {_seconds(t.tp_seconds)}, × (1 + bubble), "
                   f"+ PP {_seconds(t.pp_seconds)} + DP {_seconds(t.dp_seconds)} = {_seconds(t.step_seconds)} per step")
        out.append(f"  {t.samples_per_second:,.1f} samples/s, {t.tokens_per_second:,.0f} tokens/s, "
                   f"{_si(t.flops_per_device, 'FLOP/s')} per device")
    return "\n".join(out)


def _stage_rows(plan) -> List[List[str]]:
    """Stage, its layers, its ranks and the parameter bytes one of its ranks holds."""
    run, rows = plan.run, []
    for stage, first, last in layer_stages(run):
        r0, r1 = stage_ranks(stage, run)
        params = sum(plan.costs[i].param_rep + plan.costs[i].param_split / run.tp
                     for i in run.layers_of_stage(stage))
        rows.append([str(stage), f"{first}..{last}", f"{r0}..{r1}", f"{params:,.0f} B"])
    return rows


def format_suggestions(candidates, limit_bytes: float) -> str:
    rows = []
    for i, c in enumerate(candidates, 1):
        r = c.run
        rows.append([str(i), f"{r.dp}×{r.tp}×{r.pp}", str(r.micro_batch), str(r.accumulation),
                     "on" if r.checkpointing else "off", str(r.zero_stage) if r.zero_stage else "off",
                     format_bytes(c.peak_bytes), "yes" if c.fits else "no",
                     f"{c.time.bubble_fraction:.1%}", _seconds(c.time.step_seconds),
                     f"{c.time.samples_per_second:,.1f}"])
    head = f"-- layouts ranked by estimated step time (memory limit {format_bytes(limit_bytes)})"
    return head + "\n" + _table(rows, ["#", "DP×TP×PP", "micro", "acc", "ckpt", "ZeRO", "peak/rank",
                                       "fits", "bubble", "step", "samples/s"])
