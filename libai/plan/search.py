"""``--suggest``: rank the DP×TP×PP layouts (with micro-batch, checkpointing, ZeRO) that fit.

Every layout of ``world_size`` devices is tried whose tensor-parallel size divides every split
size of the model and stays inside a node, whose pipeline has at most one stage per layer, and
whose micro-batch divides the global batch; for each, activation checkpointing off/on and ZeRO
0/1/2 (when data parallel). Each candidate is a memory and a time plan (sums over per-layer
costs), so 1,024 devices (636 candidates for GPT-3) take 1.5 s of CPU time. Candidates that
fit are ranked by estimated step time; the global batch, sequence length, AMP and optimizer stay as
configured.
"""
from dataclasses import dataclass
from typing import List, Optional, Sequence

from libai.plan.costs import LayerCost
from libai.plan.hardware import Device
from libai.plan.layout_checks import tp_compatible
from libai.plan.memory import memory_plan
from libai.plan.run_shape import RunShape
from libai.plan.shapes import ModelShape
from libai.plan.timing import TimePlan, time_plan

__all__ = ["Candidate", "suggest"]


@dataclass(frozen=True)
class Candidate:
    run: RunShape
    peak_bytes: float
    time: TimePlan
    fits: bool


def _divisors(n: int) -> List[int]:
    return [d for d in range(1, n + 1) if n % d == 0]


def even_stages(num_layers: int, pp: int) -> tuple:
    """Layers split evenly over ``pp`` stages, earlier stages taking the remainder (the
    layout's default assignment)."""
    base, extra = divmod(num_layers, pp)
    out: List[int] = []
    for s in range(pp):
        out += [s] * (base + (1 if s < extra else 0))
    return tuple(out)


def suggest(shape: ModelShape, costs: Sequence[LayerCost], base: RunShape, device: Device,
            world_size: int, headroom: float = 0.95, top: Optional[int] = 10,
            micro_batches: Sequence[int] = (1, 2, 4, 8, 16)) -> List[Candidate]:
    """Candidates ranked: fitting ones by step time (ties: less memory first), then the rest by
    peak memory."""
    num_layers = len(costs)
    glob = base.global_batch
    tps = [t for t in _divisors(world_size) if t <= base.devices_per_node and tp_compatible(shape, t)]
    out = []
    limit = device.memory * headroom
    tied = shape.tied_embedding_bytes
    for tp in tps:
        for pp in _divisors(world_size // tp):
            if pp > num_layers:
                continue
            dp = world_size // (tp * pp)
            stages = even_stages(num_layers, pp)
            for micro in micro_batches:
                if glob % (micro * dp):
                    continue
                acc = glob // (micro * dp)
                for ckpt in (False, True):
                    for zero in ((0, 1, 2) if dp > 1 else (0,)):
                        run = base.with_(dp=dp, tp=tp, pp=pp, micro_batch=micro, accumulation=acc,
                                         stage_of_layer=stages, checkpointing=ckpt, zero_stage=zero)
                        peak = max(m.total for m in memory_plan(costs, run, shape.buffer_bytes, tied))
                        out.append(Candidate(run, peak, time_plan(costs, run, device), peak <= limit))
    out.sort(key=lambda c: (not c.fits, c.time.step_seconds if c.fits else c.peak_bytes, c.peak_bytes))
    return out if top is None else out[:top]
