"""Checks of the model against the layout: sizes against tensor parallelism, layers against
pipeline stages; and the stage of every layer for a layout."""
from typing import Any, List, Optional, Tuple

from libai.plan.problems import Problem
from libai.plan.shapes import ModelShape
from libai.utils.distributed import ParallelLayout

__all__ = ["check_tensor_parallel", "stages_for", "check_pipeline", "tp_compatible"]


def check_tensor_parallel(shape: ModelShape, tp: int) -> List[Problem]:
    """Every size tensor parallelism splits must be divisible by ``tp`` (one problem per kind)."""
    if tp == 1:
        return []
    found = {}
    for m in shape.modules:
        d = m.dims
        if m.kind == "attention":
            if d["heads"] % tp:
                found.setdefault(("heads", d["heads"]), Problem("model", (
                    f"num_attention_heads={d['heads']} ({m.name}) is not divisible by "
                    f"tensor_parallel_size={tp}; use a tensor-parallel size that divides it")))
            elif d["kv_heads"] % tp:
                found.setdefault(("kv", d["kv_heads"]), Problem("model", (
                    f"num_key_value_heads={d['kv_heads']} ({m.name}) is not divisible by "
                    f"tensor_parallel_size={tp}")))
        elif m.kind == "linear" and m.dims["parallel"] != "data":
            size = d["out"] if d["parallel"] == "col" else d["inp"]
            what = "output" if d["parallel"] == "col" else "input"
            if size % tp:
                found.setdefault(("linear", size), Problem("model", (
                    f"{m.name}: {what} size {size} (hidden/ffn size) is split over "
                    f"tensor_parallel_size={tp}, which does not divide it")))
        elif m.kind == "embedding" and d["vocab"] % tp:
            found.setdefault(("vocab", d["vocab"]), Problem("model.cfg.vocab_size", (
                f"vocabulary {d['vocab']} is split over tensor_parallel_size={tp}, which does not "
                f"divide it; pad it to a multiple of {tp} (tokenization.make_vocab_size_divisible_by)")))
    return list(found.values())


def tp_compatible(shape: ModelShape, tp: int) -> bool:
    return not check_tensor_parallel(shape, tp)


def check_pipeline(dist: Any, shape: ModelShape, pp: int) -> Tuple[Optional[int], List[Problem]]:
    """The number of layers to spread over ``pp`` stages, or the problems."""
    configured = dist.get("pipeline_num_layers")
    model_layers = shape.num_layers
    if pp == 1:
        return (int(configured) if configured else model_layers), []
    if configured is None:
        return None, [Problem("train.dist.pipeline_num_layers", (
            f"pipeline_parallel_size={pp} needs the number of layers to spread over the stages; "
            f"the model uses layer indices 0..{model_layers - 1}: set "
            f"train.dist.pipeline_num_layers={model_layers}"))]
    configured = int(configured)
    problems = []
    if configured < model_layers:
        problems.append(Problem("train.dist.pipeline_num_layers", (
            f"is {configured} but the model has layers up to index {model_layers - 1}; set it to "
            f"{model_layers}")))
    if configured < pp:
        problems.append(Problem("train.dist.pipeline_parallel_size", (
            f"{pp} stages for {configured} layers: every stage needs at least one layer; use at "
            f"most {configured} stages")))
    return (None if problems else configured), problems


def stages_for(
    dist: Any, num_layers: int, dp: int, tp: int, pp: int
) -> Tuple[Optional[Tuple[int, ...]], List[Problem]]:
    """The stage of every layer as ``ParallelLayout`` assigns it (custom stage ids included)."""
    custom = dist.get("custom_pipeline_stage_id") if hasattr(dist, "get") else None
    spec = dict(data_parallel_size=dp, tensor_parallel_size=tp, pipeline_parallel_size=pp,
                pipeline_num_layers=num_layers, custom_pipeline_stage_id=custom, device_type="cpu")
    try:
        layout = ParallelLayout.from_config(spec, world_size=dp * tp * pp, rank=0)
    except (ValueError, IndexError) as exc:
        return None, [Problem("train.dist", str(exc))]
    stages = layout.stage_of_each_layer or tuple([0] * num_layers)
    return tuple(stages), []
