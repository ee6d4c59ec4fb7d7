"""``libai.plan(cfg, ...)``: validate a run and plan its placement, memory and time.

Nothing here trains, draws weights or starts OneFlow's multi-process runtime: the model is built
with zero-storage stand-ins (:mod:`libai.plan.shapes`) in one process, and every layout is
arithmetic over its shapes.
"""
import copy
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional, Sequence

from libai.plan import config_checks, data_checks, layout_checks
from libai.plan.advice import advise
from libai.plan.costs import LayerCost, layer_costs
from libai.plan.hardware import DEFAULT_DEVICE, Device, device_preset, parse_bytes, parse_rate
from libai.plan.memory import StageMemory, memory_plan
from libai.plan.placement import ParamGroup, parameter_groups
from libai.plan.problems import PlanProblems, Problem
from libai.plan.run_shape import RunShape, optimizer_slots
from libai.plan.sequence import tokens_per_sample
from libai.plan.shapes import ModelShape, build_model_shape
from libai.plan.timing import TimePlan, forward_flops_per_sample, time_plan

__all__ = ["Plan", "plan", "device_from_options", "MEMORY_HEADROOM"]

#: Share of a device's memory a plan may use: the rest is for the framework (CUDA context,
#: kernels' workspaces) and the allocator's fragmentation.
MEMORY_HEADROOM = 0.95


@dataclass
class Plan:
    """The result of :func:`plan`: problems, placement, memory per stage, time per step."""

    problems: List[Problem]
    world_size: int
    nodes: Optional[int] = None
    devices_per_node: Optional[int] = None
    device: Optional[Device] = None
    run: Optional[RunShape] = None
    model: Optional[ModelShape] = None
    costs: List[LayerCost] = field(default_factory=list)
    groups: List[ParamGroup] = field(default_factory=list)
    memory: List[StageMemory] = field(default_factory=list)
    time: Optional[TimePlan] = None
    iters_per_epoch: Optional[int] = None
    max_iter: Optional[int] = None
    tied_embedding_bytes: float = 0.0
    advice: List[str] = field(default_factory=list)

    @property
    def errors(self) -> List[Problem]:
        return [p for p in self.problems if p.severity == "error"]

    @property
    def ok(self) -> bool:
        """No errors (warnings allowed) and every rank fits when a device memory was given."""
        return not self.errors

    @property
    def peak_bytes(self) -> float:
        return max((m.total for m in self.memory), default=0.0)

    @property
    def fits(self) -> Optional[bool]:
        if not self.memory or self.device is None:
            return None
        return self.peak_bytes <= self.device.memory * MEMORY_HEADROOM

    def check(self) -> "Plan":
        """Raise :class:`PlanProblems` listing every problem if there is an error."""
        if self.errors:
            raise PlanProblems(self.problems)
        return self

    def as_dict(self) -> Dict[str, Any]:
        """Plain numbers, for JSON and for comparing the CLI with the API."""
        return {
            "world_size": self.world_size,
            "problems": [str(p) for p in self.problems],
            "layout": None if self.run is None else self.run.describe(),
            "num_params": None if self.model is None else self.model.num_params,
            "memory": [m.as_dict() for m in self.memory],
            "time": None if self.time is None else self.time.as_dict(),
            "fits": self.fits,
            "iters_per_epoch": self.iters_per_epoch,
        }

    def format(self) -> str:
        from libai.plan.report import format_plan

        return format_plan(self)


def device_from_options(device: Optional[str] = None, device_memory: Any = None, device_flops: Any = None,
                        link_bandwidth: Any = None, inter_node_bandwidth: Any = None) -> Device:
    """A device preset with the given figures overriding it (strings like ``"80GiB"`` accepted)."""
    base = device_preset(device or DEFAULT_DEVICE)
    return base.with_overrides(
        memory=None if device_memory is None else parse_bytes(device_memory),
        flops=None if device_flops is None else parse_rate(device_flops, "flops"),
        link_bandwidth=None if link_bandwidth is None else parse_rate(link_bandwidth, "bytes"),
        inter_node_bandwidth=(None if inter_node_bandwidth is None
                              else parse_rate(inter_node_bandwidth, "bytes")),
    )


def _world(cfg: Any, world_size: Optional[int], nodes: Optional[int], per_node: Optional[int]) -> int:
    if world_size is not None:
        return int(world_size)
    if nodes is not None and per_node is not None:
        return int(nodes) * int(per_node)
    launched = int(os.environ.get("WORLD_SIZE") or 1)  # importing oneflow sets it to 1
    if launched > 1:
        return launched
    d = cfg.train.dist
    return int(d.get("data_parallel_size") or 1) * int(d.get("tensor_parallel_size") or 1) * int(
        d.get("pipeline_parallel_size") or 1)


def plan(cfg: Any, *, world_size: Optional[int] = None, nodes: Optional[int] = None,
         devices_per_node: Optional[int] = None, device: Optional[str] = None,
         device_memory: Any = None, device_flops: Any = None, link_bandwidth: Any = None,
         inter_node_bandwidth: Any = None, check_data: bool = True,
         overrides: Sequence[str] = (), seq_length: Optional[int] = None) -> Plan:
    """Validate ``cfg`` and plan its run on ``world_size`` devices (or ``nodes`` ×
    ``devices_per_node``; default: the sizes in ``cfg.train.dist``).

    Returns a :class:`Plan` even when there are problems (``plan.ok`` is False, ``plan.check()``
    raises :class:`PlanProblems` listing all of them). ``cfg`` is not changed. Device figures
    come from a preset (``device="a100"`` by default, see :mod:`libai.plan.hardware`) with any
    of ``device_memory``/``device_flops``/``link_bandwidth`` overriding it. ``seq_length``
    sets the tokens per sample planned (default: the data's, else :func:`libai.plan.sequence.tokens_per_sample`).
    """
    from libai.config import LazyConfig

    cfg, problems = config_checks.complete(copy.deepcopy(cfg))  # defaults first, as the trainer
    for override in overrides:  # one at a time, so every bad one is reported
        try:
            cfg = LazyConfig.apply_overrides(cfg, [override])
        except Exception as exc:  # noqa: BLE001 - a bad override is one more problem
            problems.append(Problem(override.split("=", 1)[0].lstrip("+~"), str(exc).strip()))
    dev = device_from_options(device, device_memory, device_flops, link_bandwidth, inter_node_bandwidth)
    if any(p.key in ("train", "model") and "defines no" in p.message for p in problems):
        return Plan(problems, world_size=int(world_size or 1), device=dev)
    world = _world(cfg, world_size, nodes, devices_per_node)
    per_node = int(devices_per_node) if devices_per_node else min(world, 8)
    result = Plan(problems, world, nodes, per_node, dev)
    problems += config_checks.check_world(world, nodes, devices_per_node)
    problems += config_checks.check_unknown_keys(cfg)
    dist = cfg.train.dist
    tp = int(dist.get("tensor_parallel_size") or 1)
    pp = int(dist.get("pipeline_parallel_size") or 1)
    dp, found = config_checks.resolve_dp(dist, world)
    problems += found
    batch, found = config_checks.check_batch(cfg.train, dp or 1)
    problems += found
    tokenizer, found = data_checks.build_tokenizer_for_plan(cfg, tp)
    problems += found
    shape = _build_shape(cfg, problems)
    problems += config_checks.check_evaluation(cfg)
    if shape is None:
        return result
    result.model = shape
    problems += layout_checks.check_tensor_parallel(shape, tp)
    num_layers, found = layout_checks.check_pipeline(dist, shape, pp)
    problems += found
    facts = data_checks.DataFacts()
    if check_data:
        facts, found = data_checks.check_data(cfg, tokenizer, _model_class(cfg, shape), _limits(cfg, shape))
        problems += found
    problems += _check_iterations(cfg, facts, batch, result)
    if dp is None or batch is None or num_layers is None:
        return result
    if pp > 1 and batch[1] == 1:
        problems.append(Problem("train.num_accumulation_steps", (
            f"{pp} pipeline stages with one micro-batch per step leave all but one stage idle "
            "(bubble (p-1)/1); and OneFlow 0.9 aborted such a Graph on the CPU (register.cpp:75). "
            "Use several micro-batches: train.num_accumulation_steps >= 2"), "warning"))
    stages, found = layout_checks.stages_for(dist, num_layers, dp, tp, pp)
    problems += found
    if stages is not None:
        seq, found = tokens_per_sample(cfg, facts, shape, seq_length)
        problems += found
        run = _run_shape(cfg, (dp, tp, pp), batch, seq, stages, per_node)
        _fill(result, cfg, shape, run, num_layers, facts)
    return result


def _run_shape(cfg: Any, sizes: tuple, batch: tuple, seq: int, stages: tuple, per_node: int) -> RunShape:
    """The knobs of the configured run (see :class:`RunShape`)."""
    train = cfg.train
    return RunShape(
        dp=sizes[0], tp=sizes[1], pp=sizes[2], micro_batch=batch[0], accumulation=batch[1],
        seq=seq, stage_of_layer=stages, amp=bool(train.amp.enabled),
        checkpointing=bool(train.activation_checkpoint.enabled),
        zero_stage=int(train.zero_optimization.stage) if train.zero_optimization.enabled else 0,
        optimizer_slots=optimizer_slots(cfg.optim), graph=bool(cfg.graph.get("enabled", False)),
        devices_per_node=per_node,
        fusion_buffer_bytes=float(train.get("nccl_fusion_threshold_mb") or 16) * 2 ** 20,
    )


def _model_setting(node: Any, key: str) -> Any:
    """``key`` of the model node, its ``cfg`` dict, or a wrapped ``model`` node."""
    if not hasattr(node, "get"):
        return None
    for where in (node, node.get("cfg", None)):
        if hasattr(where, "get") and where.get(key, None) is not None:
            return where.get(key)
    return _model_setting(node.get("model", None), key)


def _mark_masks(shape: ModelShape, model_cls: Any, facts: data_checks.DataFacts) -> None:
    """Attention is masked (``masked_fill`` on the scores) when it is given a mask: the model's
    ``forward`` takes one and the samples carry it (when no samples were read: whenever the
    ``forward`` takes one). A causal attention given no mask adds its own as a small bias
    (``libai.layers.MultiheadAttention``), which keeps nothing score-sized."""
    names, _, _ = data_checks.forward_arguments(model_cls)
    masks = [n for n in names if "mask" in n and "loss" not in n]
    if facts.checked:
        masks = [n for n in masks if n in facts.sample_shapes]
    for m in shape.of_kind("attention"):
        m.dims["masked"] = bool(masks)


def _fill(result: Plan, cfg: Any, shape: ModelShape, run: RunShape, num_layers: int,
          facts: data_checks.DataFacts) -> None:
    """Costs, placement, memory, time and (when a rank does not fit) advice of ``run``.

    Composite ops (any device but CUDA) and an unfused softmax keep more (:mod:`costs`)."""
    composite = cfg.train.dist.get("device_type") == "cpu" or result.device.name == "CPU"
    _mark_masks(shape, _model_class(cfg, shape), facts)
    fused = not composite and bool(_model_setting(cfg.model, "scale_mask_softmax_fusion"))
    for m in shape.of_kind("attention"):
        m.dims["fused_softmax"] = fused
    if composite:  # the all-reduce fusion buffer is NCCL's: off CUDA gradients reduce in place
        run = run.with_(fusion_buffer_bytes=0.0)
    result.run = run
    shape_pass(cfg, shape, facts, run.seq, result.problems)
    result.costs = layer_costs(shape, num_layers, composite)
    result.tied_embedding_bytes = shape.tied_embedding_bytes
    result.groups = parameter_groups(shape.params, run)
    result.memory = memory_plan(result.costs, run, shape.buffer_bytes, result.tied_embedding_bytes)
    result.time = _time(result, shape, run)
    if result.fits is False:
        result.advice = advise(result.costs, run, result.device, shape.buffer_bytes,
                               result.tied_embedding_bytes, MEMORY_HEADROOM)


def _time(result: Plan, shape: ModelShape, run: RunShape) -> Optional[TimePlan]:
    """The time plan, or none (said so) when the model's FLOPs are unknown: nothing counted, or
    fewer than 2 per dense parameter per sample (every weight outside embeddings takes part in
    at least one multiply-add per sample), which means modules were not counted."""
    uncounted = shape.trace.uncounted_summary() if shape.trace is not None else ""
    if uncounted:
        result.problems.append(Problem("model", (
            f"not counted: {uncounted} (the FLOPs and activations of modules no rule knows are "
            "missing from the plan; libai.plan.module_costs lists the rules)"), "warning"))
    per_sample = forward_flops_per_sample(result.costs, run.seq)
    floor = 2.0 * dense_params(shape)
    if per_sample <= 0 or per_sample < floor:
        result.problems.append(Problem("model", (
            f"no time plan: the model's FLOPs are unknown ({per_sample:.3g} counted per sample "
            f"for {dense_params(shape):,} parameters outside embeddings"
            f"{'; not counted: ' + uncounted if uncounted else ''})"), "warning"))
        return None
    return time_plan(result.costs, run, result.device, uncounted, floor)


def shape_pass(cfg: Any, shape: ModelShape, facts: data_checks.DataFacts, seq: int,
               problems: List[Problem]) -> None:
    """Run :mod:`libai.plan.trace` when the model has modules libai's layer rules do not plan
    (convolutions, pooling, a user's modules) and give each libai module the share of the
    planned tokens it saw. A pass that fails is a warning: those modules stay uncounted."""
    from libai.plan import trace as tr

    if shape.module is None or shape.trace is not None:
        return
    planned = [m.name for m in shape.modules if m.kind != "block"]
    inside = [m.name for m in shape.modules if m.kind in ("attention", "mlp", "logits", "embedding", "block")]
    if not tr.needs_trace(shape.module, planned, inside):
        return
    try:
        names, required, _ = data_checks.forward_arguments(type(shape.module))
        loader = cfg.dataloader.get("train", None) if cfg.get("dataloader", None) is not None else None
        setting = lambda key: _model_setting(cfg.model, key)  # noqa: E731
        try:
            inputs = tr.sample_inputs(shape.module, names, required, facts.sample_shapes, setting, loader, seq)
            shape.trace = tr.trace_model(shape.module, inputs, planned, inside, training=True)
        except Exception:  # noqa: BLE001 - some models refuse one training sample: evaluation
            inputs = tr.sample_inputs(shape.module, names, required, facts.sample_shapes, setting, loader,
                                      seq, labels=False)
            shape.trace = tr.trace_model(shape.module, inputs, planned, inside, training=False)
    except Exception as exc:  # noqa: BLE001 - the plan goes on with what it could count
        text = " ".join(str(exc).strip().splitlines()[-2:])
        problems.append(Problem("model", (
            f"the shape pass (one sample through the model, libai.plan.trace) failed: "
            f"{type(exc).__name__}: {text}; convolutions, pooling and the model's own modules are "
            "not counted"), "warning"))
        return
    for m in shape.modules:
        if m.name in shape.trace.tokens:
            m.dims["token_share"] = shape.trace.tokens[m.name] / max(seq, 1)
        if m.kind == "attention" and m.name in shape.trace.pairs:
            m.dims["pair_share"] = shape.trace.pairs[m.name] / max(seq, 1) ** 2


def dense_params(shape: ModelShape) -> int:
    """Parameters outside embedding tables (lookups, which compute nothing)."""
    tables = [m.name for m in shape.of_kind("embedding")]
    if shape.module is not None:
        tables += [n for n, mod in shape.module.named_modules() if "embedding" in type(mod).__name__.lower()
                   and hasattr(mod, "weight") and getattr(mod.weight, "ndim", 0) == 2]
    vocabs = {m.dims["vocab"] for m in shape.of_kind("logits")}
    return sum(p.numel for p in shape.params if not any(p.name.startswith(t + ".") for t in tables)
               and not (p.split_axis == 0 and len(p.shape) == 2 and p.shape[0] in vocabs))


def _build_shape(cfg: Any, problems: List[Problem]) -> Optional[ModelShape]:
    node, files = _without_weight_files(cfg.model)
    for key, path in files:
        if path and not os.path.exists(str(path)):
            problems.append(Problem(key, f"{path} does not exist; the run loads weights from it "
                                         "(fine for a plan made away from the files)", "warning"))
    try:
        return build_model_shape(node)
    except Exception as exc:  # noqa: BLE001 - reported as a problem of the plan
        text = str(exc).strip().splitlines()
        problems.append(Problem("model", f"building the model failed: {type(exc).__name__}: "
                                         f"{' '.join(text[-2:]) if text else ''}"))
        return None


_WEIGHT_KEYS = ("base_weights", "adapter", "pretrained_model_path", "load_weight", "checkpoint")


def _without_weight_files(node: Any):
    """A copy of the model node without weight files to load (the plan never loads weights),
    and the ``(key, path)`` pairs removed."""
    node = copy.deepcopy(node)
    found = []

    def walk(n: Any, path: str) -> None:
        if not hasattr(n, "keys"):
            return
        for key in list(n.keys()):
            if key in _WEIGHT_KEYS and isinstance(n[key], str) and n[key]:
                found.append((f"{path}.{key}", n[key]))
                n[key] = None
            else:
                walk(n[key], f"{path}.{key}")

    walk(node, "model")
    return node, found


def _model_class(cfg: Any, shape: ModelShape) -> Any:
    from libai.config.targets import locate

    node = cfg.model
    while hasattr(node, "get") and node.get("model", None) is not None and hasattr(node.get("model"), "get"):
        node = node.get("model")
    target = node.get("_target_")
    cls = locate(target) if isinstance(target, str) else target
    if hasattr(cls, "forward"):
        return cls
    return type(shape.model_class, (), {"forward": lambda self, **kw: None})  # a factory function


def _limits(cfg: Any, shape: ModelShape) -> Dict[str, int]:
    limits: Dict[str, int] = {}
    emb = shape.of_kind("embedding")
    if emb:
        limits["vocab_size"] = int(emb[0].dims["vocab"])
    node = cfg.model.get("cfg", None) or cfg.model
    for key in ("max_seq_length", "max_position_embeddings"):
        if hasattr(node, "get") and node.get(key):
            limits["max_positions"] = int(node.get(key))
            break
    for key in ("num_classes", "num_labels"):
        value = node.get(key, None) if hasattr(node, "get") else None
        if value:
            limits["num_classes"] = int(value)
    img = cfg.model.get("img_size", None) if hasattr(cfg.model, "get") else None
    if isinstance(img, int):
        limits["img_size"] = img
    return limits


def _check_iterations(cfg: Any, facts: data_checks.DataFacts, batch: Any, result: Plan) -> List[Problem]:
    train = cfg.train
    if batch is None:
        return []
    glob = batch[2]
    if facts.train_size is not None:
        result.iters_per_epoch = facts.train_size // glob
    epochs = int(train.get("train_epoch") or 0)
    candidates = [int(train.get("train_iter") or 0)]
    problems = []
    if epochs:
        if result.iters_per_epoch is None:
            problems.append(Problem("train.train_epoch", (
                "counting iterations by epochs needs the training set's size, which the plan could "
                "not read; the run computes it from the data"), "warning"))
        elif result.iters_per_epoch == 0:
            problems.append(Problem("train.train_epoch", (
                f"the training set has {facts.train_size} samples, fewer than one global batch "
                f"({glob}); lower the batch size or use more data")))
        else:
            candidates.append(epochs * result.iters_per_epoch)
    if train.get("train_samples"):
        candidates.append(-(-int(train.train_samples) // glob))
    result.max_iter = max(candidates)
    unknown_epochs = bool(epochs) and result.iters_per_epoch is None
    if result.max_iter < 1 and not unknown_epochs:
        problems.append(Problem("train.train_iter", "nothing to train: set train.train_iter, "
                                                    "train.train_epoch or train.train_samples"))
    return problems
