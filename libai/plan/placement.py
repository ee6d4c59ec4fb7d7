"""Where things live: the stage of every layer and the placement and SBP of each parameter group."""
import re
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

from libai.plan.run_shape import RunShape
from libai.plan.shapes import ParamInfo

__all__ = ["ParamGroup", "parameter_groups", "stage_ranks", "layer_stages"]


@dataclass(frozen=True)
class ParamGroup:
    """Parameters whose names differ only in layer numbers (``layers.*.mlp.dense_4h_to_h.weight``)."""

    pattern: str
    count: int
    shape: Tuple[int, ...]
    sbp: str  # logical [over data, over tensor]
    stages: Tuple[int, int]  # first and last stage holding one of them
    local_shape: Tuple[int, ...]
    bytes_per_rank: Dict[int, float]  # stage -> bytes one rank of that stage holds of this group


def stage_of(layer_idx: int, run: RunShape) -> int:
    n = len(run.stage_of_layer)
    if n == 0:
        return 0
    return run.stage_of_layer[layer_idx if -n <= layer_idx < n else -1]


def stage_ranks(stage: int, run: RunShape) -> Tuple[int, int]:
    """First and last rank of ``stage`` (ranks are tensor-fastest, then data, then stage)."""
    per_stage = run.dp * run.tp
    return stage * per_stage, (stage + 1) * per_stage - 1


def layer_stages(run: RunShape) -> List[Tuple[int, int, int]]:
    """``(stage, first layer, last layer)`` for every stage."""
    out = []
    for st in range(run.pp):
        layers = run.layers_of_stage(st)
        if layers:
            out.append((st, layers[0], layers[-1]))
    return out


def _sbp(p: ParamInfo, run: RunShape) -> str:
    tensor = "B" if p.split_axis is None or run.tp == 1 else f"S({p.split_axis})"
    return f"[B, {tensor}]"


def parameter_groups(params: Sequence[ParamInfo], run: RunShape) -> List[ParamGroup]:
    """Parameters grouped by name pattern, in model order."""
    groups: Dict[Tuple[str, Tuple[int, ...], str], List[ParamInfo]] = {}
    for p in params:
        key = (re.sub(r"\.\d+\.", ".*.", p.name), p.shape, _sbp(p, run))
        groups.setdefault(key, []).append(p)
    out = []
    for (pattern, shape, sbp), members in groups.items():
        stages = [stage_of(p.layer_idx, run) for p in members]
        per_rank: Dict[int, float] = {}
        for p, st in zip(members, stages):
            per_rank[st] = per_rank.get(st, 0.0) + p.local_numel(run.tp) * p.itemsize
        first = members[0]
        local = list(shape)
        if first.split_axis is not None and run.tp > 1:
            local[first.split_axis] //= run.tp
        out.append(ParamGroup(pattern, len(members), shape, sbp, (min(stages), max(stages)),
                              tuple(local), per_rank))
    return out
