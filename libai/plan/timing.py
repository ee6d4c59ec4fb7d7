"""The time plan of one step: FLOPs per rank, communication volumes, the pipeline bubble, and
an estimated step time and throughput from stated device figures.

Model, per step (``m`` micro-batches of ``b`` samples of ``s`` tokens per data-parallel rank):

- FLOPs: forward = 2 × in × out per token for each matmul (divided over TP where split),
  4 × heads × head_size per token and key for attention, 2 × hidden × vocab per token for the
  LM head, and per sample what the shape pass counted (:mod:`libai.plan.trace`: convolutions,
  pooling, norms, a user's modules); training = 3 × forward, plus one more forward of every block with activation
  checkpointing. The slowest stage sets the pace.
- Tensor parallel: two all-reduces of ``b·s·hidden`` per block forward (attention and MLP
  outputs, plus the embedding's), as many backward, one more forward with recomputation;
  a ring all-reduce moves ``2(t-1)/t`` of the bytes over each rank's link.
- Pipeline parallel: one activation forward and one gradient backward of ``b·s·hidden`` per
  micro-batch and stage boundary. Bubble fraction = ``(p-1)/m`` (1F1B and GPipe alike).
- Data parallel: an all-reduce of the local gradients, ``2(d-1)/d`` of their bytes, once per
  step and not overlapped with compute (conservative; ZeRO's reduce-scatter + all-gather move
  the same volume).
- Step time = (compute + TP communication of the slowest stage) × (1 + bubble) + PP transfers +
  DP all-reduce. Compute time = FLOPs / (peak × efficiency).

Links: a group inside one node uses ``intra_node_bandwidth``, one that spans nodes
``inter_node_bandwidth``; ranks are numbered tensor-fastest, then data, then pipeline (libai's
order), so a TP group stays in a node when ``tp <= devices_per_node``.
"""
from dataclasses import asdict, dataclass
from typing import Dict, Sequence

from libai.plan.costs import LayerCost
from libai.plan.hardware import Device
from libai.plan.run_shape import RunShape

__all__ = ["TimePlan", "time_plan"]


@dataclass(frozen=True)
class TimePlan:
    flops_per_rank: float  # per step, the slowest stage's rank
    model_flops: float  # per step, the whole run (all ranks)
    tp_bytes_per_rank: float
    pp_bytes_per_rank: float
    dp_bytes_per_rank: float
    bubble_fraction: float
    compute_seconds: float
    tp_seconds: float
    pp_seconds: float
    dp_seconds: float
    step_seconds: float
    samples_per_second: float
    tokens_per_second: float
    flops_per_device: float  # achieved FLOP/s per device (model FLOPs / step time / devices)

    def as_dict(self) -> Dict[str, float]:
        return asdict(self)


def _stage_flops(layers: Sequence[LayerCost], run: RunShape) -> float:
    s, tp = run.seq, run.tp
    total = 0.0
    for c in layers:
        fwd = ((c.flops_rep + c.flops_split / tp) * s + c.flops_score * s * s / tp + c.flops_head * s / tp
               + c.flops_sample)
        extra = 0.0
        if run.checkpointing:
            extra = ((c.block_flops_rep + c.block_flops_split / tp) * s + c.block_flops_score * s * s / tp
                     + c.block_flops_sample)
        total += 3 * fwd + extra
    return total * run.micro_batch * run.accumulation


def _bandwidth(group_span: int, device: Device, run: RunShape) -> float:
    """Link of a group whose members are ``group_span`` ranks apart at most."""
    inside = group_span <= run.devices_per_node and run.world_size > 1
    return device.intra_node_bandwidth if inside or run.world_size <= run.devices_per_node \
        else device.inter_node_bandwidth


def _ring(bytes_: float, n: int) -> float:
    return 2.0 * (n - 1) / n * bytes_ if n > 1 else 0.0


def forward_flops_per_sample(costs: Sequence[LayerCost], seq: int) -> float:
    """Forward FLOPs of one sample of ``seq`` tokens, whole model."""
    return sum((c.flops_rep + c.flops_split + c.flops_head) * seq + c.flops_score * seq * seq
               + c.flops_sample for c in costs)


def time_plan(costs: Sequence[LayerCost], run: RunShape, device: Device, uncounted: str = "",
              min_flops_per_sample: float = 0.0) -> TimePlan:
    """The time plan of ``run`` on ``device`` (module docstring).

    The caller plans no time for a model whose FLOPs are unknown. A zero step, or a throughput
    whose least possible work (``min_flops_per_sample`` forward, × 3 for training) would need
    more than the devices' peak, is a bug of the FLOP counter: the assertion names the modules
    not counted (``uncounted``)."""
    b, s, e, m = run.micro_batch, run.seq, run.elem, run.accumulation
    stage_flops = [_stage_flops([costs[i] for i in run.layers_of_stage(st)], run) for st in range(run.pp)]
    slowest = max(range(run.pp), key=lambda st: stage_flops[st])
    layers = [costs[i] for i in run.layers_of_stage(slowest)]
    passes = 3 if run.checkpointing else 2
    tp_elems = sum(c.tp_allreduce_e for c in layers) * b * s * m * passes
    tp_bytes = _ring(tp_elems * e, run.tp)
    hidden = max([c.block_hidden // max(c.num_blocks, 1) for c in costs] + [0])
    pp_bytes = 2.0 * m * b * s * hidden * e if run.pp > 1 else 0.0
    grads = sum(c.train_rep + c.train_split / run.tp for c in layers)
    dp_bytes = _ring(grads, run.dp)
    peak = device.flops(run.amp) * device.efficiency
    compute = stage_flops[slowest] / peak
    tp_s = tp_bytes / _bandwidth(run.tp, device, run) if tp_bytes else 0.0
    pp_s = pp_bytes / _bandwidth(run.tp * run.dp + 1, device, run) if pp_bytes else 0.0
    dp_s = dp_bytes / _bandwidth(run.tp * run.dp, device, run) if dp_bytes else 0.0
    bubble = (run.pp - 1) / m
    step = (compute + tp_s) * (1 + bubble) + pp_s + dp_s
    model_flops = sum(stage_flops) * run.tp * run.dp
    least = max(model_flops, 3.0 * min_flops_per_sample * run.global_batch)
    assert step > 0 and least / step / run.world_size <= device.flops(run.amp) * (1 + 1e-9), (
        f"a step of {step:.3g} s for at least {least:.3g} FLOPs on {run.world_size} device(s) "
        f"needs more than the device's peak: modules were not counted "
        f"({uncounted or 'none listed: a rule of libai.plan.module_costs undercounts'})")
    return TimePlan(
        flops_per_rank=stage_flops[slowest], model_flops=model_flops,
        tp_bytes_per_rank=tp_bytes, pp_bytes_per_rank=pp_bytes, dp_bytes_per_rank=dp_bytes,
        bubble_fraction=bubble, compute_seconds=compute, tp_seconds=tp_s, pp_seconds=pp_s,
        dp_seconds=dp_s, step_seconds=step, samples_per_second=run.global_batch / step,
        tokens_per_second=run.global_batch * s / step,
        flops_per_device=model_flops / step / run.world_size,
    )
