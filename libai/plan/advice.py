"""What to change when a rank does not fit: each single change that is allowed, re-planned."""
from typing import List, Sequence

from libai.plan.costs import LayerCost
from libai.plan.hardware import Device, format_bytes
from libai.plan.memory import memory_plan
from libai.plan.run_shape import RunShape

__all__ = ["advise", "single_changes"]


def single_changes(run: RunShape) -> List[tuple]:
    """``(description, changed run, config override)`` for each one-step change that keeps the
    world size and the global batch."""
    out = []
    if not run.checkpointing:
        out.append(("turn activation checkpointing on", run.with_(checkpointing=True),
                    "train.activation_checkpoint.enabled=True"))
    if run.dp > 1:
        for stage in (1, 2):
            if run.zero_stage < stage:
                out.append((f"shard optimizer state{' and gradients' if stage == 2 else ''} (ZeRO-{stage})",
                            run.with_(zero_stage=stage),
                            f"train.zero_optimization.enabled=True train.zero_optimization.stage={stage}"))
    if not run.amp:
        out.append(("turn AMP on", run.with_(amp=True), "train.amp.enabled=True"))
    if run.micro_batch > 1 and run.micro_batch % 2 == 0:
        out.append(("halve the micro-batch (twice the accumulation steps)",
                    run.with_(micro_batch=run.micro_batch // 2, accumulation=run.accumulation * 2),
                    f"train.train_micro_batch_size={run.micro_batch // 2}"))
    return out


def advise(costs: Sequence[LayerCost], run: RunShape, device: Device, buffer_bytes: float,
           tied_bytes: float, headroom: float) -> List[str]:
    """Sentences naming each single change and the peak it gives (fitting ones first), and a
    pointer to ``--suggest`` for other layouts."""
    limit = device.memory * headroom
    lines = []
    for text, changed, override in single_changes(run):
        peak = max(m.total for m in memory_plan(costs, changed, buffer_bytes, tied_bytes))
        verdict = "fits" if peak <= limit else "still too much"
        lines.append((peak > limit, peak, f"{text} ({override}): peak {format_bytes(peak)}, {verdict}"))
    lines.sort(key=lambda x: (x[0], x[1]))
    return [text for _, _, text in lines] + [
        "or let --suggest rank the DP×TP×PP layouts that fit this device count and memory"]
