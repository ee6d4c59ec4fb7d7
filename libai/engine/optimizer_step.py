"""The one place that knows how an update is made: accumulation, AMP, clipping, ZeRO.

Both step runners use an :class:`OptimizerStep`, so each ``train`` switch means the same thing in
Eager and Graph mode:

* Eager: :meth:`autocast` wraps the forward, :meth:`backward` scales and accumulates,
  :meth:`step` unscales, checks for overflow, clips and updates.
* Graph: :meth:`configure_graph` applies the same switches to an ``nn.Graph`` (gradient
  accumulation steps, AMP with a dynamic grad scaler, ZeRO); clipping comes from the optimizer's
  param-group keys ``clip_grad_max_norm``/``clip_grad_norm_type``, which OneFlow honours in both.

Where OneFlow cannot do a technique in a mode, :func:`libai.engine.support.check_supported` fails
at start-up naming the combination that works.
"""
import contextlib
import logging
from typing import Any, ContextManager, List, Optional, Tuple

import oneflow as flow

from libai.engine.support import zero_applies

__all__ = ["OptimizerStep", "DynamicLossScaler", "all_finite", "clip_grad_norm_global"]

logger = logging.getLogger(__name__)


class DynamicLossScaler:
    """Loss scaling for eager fp16 training (OneFlow 0.9's ``flow.amp.GradScaler`` is graph-only).

    The loss is multiplied by ``scale`` before backward; gradients are divided by it before the
    update. A step whose gradients hold inf/NaN is skipped and the scale halves; after
    ``growth_interval`` clean steps it doubles.
    """

    def __init__(self, init_scale: float = 2.0 ** 16, growth_factor: float = 2.0,
                 backoff_factor: float = 0.5, growth_interval: int = 2000) -> None:
        self.scale = float(init_scale)
        self.growth_factor = growth_factor
        self.backoff_factor = backoff_factor
        self.growth_interval = growth_interval
        self._clean_steps = 0

    def unscale_and_check(self, params: List[flow.Tensor]) -> bool:
        """Divide gradients by the scale; return True when all of them are finite."""
        finite = True
        inv = 1.0 / self.scale
        for p in params:
            if p.grad is None:
                continue
            p.grad.mul_(inv)
            if finite and not bool(flow.isfinite(p.grad).all().item()):
                finite = False
        return finite

    def update(self, finite: bool) -> None:
        if finite:
            self._clean_steps += 1
            if self._clean_steps >= self.growth_interval:
                self.scale *= self.growth_factor
                self._clean_steps = 0
        else:
            self.scale *= self.backoff_factor
            self._clean_steps = 0

    def state_dict(self) -> dict:
        return {"scale": self.scale, "clean_steps": self._clean_steps}

    def load_state_dict(self, state: dict) -> None:
        self.scale = float(state["scale"])
        self._clean_steps = int(state["clean_steps"])


def _placement_key(t: flow.Tensor) -> Any:
    return (str(t.placement), tuple(str(s) for s in t.sbp)) if t.is_global else str(t.device)


def _to_everyone(t: flow.Tensor) -> flow.Tensor:
    """A global scalar made broadcast on every rank (a no-op for local tensors)."""
    if not t.is_global:
        return t
    ranks = list(range(flow.env.get_world_size()))
    return t.to_global(placement=flow.placement(t.placement.type, ranks=ranks), sbp=flow.sbp.broadcast)


def _sum_of_powers(g: flow.Tensor, norm_type: float) -> flow.Tensor:
    """``sum(|g| ** norm_type)`` (``max(|g|)`` for inf). The usual 2-norm takes one squaring
    pass: ``abs`` then ``** 2.0`` costs two passes and a general ``pow`` per element, 5x the
    time of ``square`` on the CPU (80-106 ms against 15-20 ms per step for GPT-2 tiny's
    gradients), for the same sum."""
    if norm_type == float("inf"):
        return g.abs().max()
    if norm_type == 2.0:
        return flow.square(g).sum()
    if norm_type == 1.0:
        return g.abs().sum()
    return (g.abs() ** norm_type).sum()


def clip_grad_norm_global(params: List[flow.Tensor], max_norm: float, norm_type: float = 2.0) -> flow.Tensor:
    """Scale all gradients so that their joint ``norm_type``-norm is at most ``max_norm``.

    The norm is over every parameter together (OneFlow's param-group clipping takes each
    group's norm separately). Works for local tensors and for global ones spread over
    pipeline stages: per-placement partial sums are gathered to every rank once per placement.
    Returns the total norm before clipping.
    """
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return flow.tensor(0.0)
    by_place: dict = {}
    for g in grads:
        by_place.setdefault(_placement_key(g), []).append(g)
    partials = []
    for group in by_place.values():
        part = flow.stack([_sum_of_powers(g.detach(), norm_type) for g in group])
        part = part.max() if norm_type == float("inf") else part.sum()
        partials.append(_to_everyone(part))
    if norm_type == float("inf"):
        total = flow.stack(partials).max()
    else:
        total = flow.stack(partials).sum() ** (1.0 / norm_type)
    coef = flow.clamp(max_norm / (total + 1e-6), max=1.0)
    for group in by_place.values():
        c = coef
        if group[0].is_global:
            c = coef.to_global(placement=group[0].placement, sbp=[flow.sbp.broadcast] * len(group[0].sbp))
        for g in group:
            g.mul_(c)
    return total


def all_finite(tensors: List[flow.Tensor]) -> bool:
    """Whether every tensor holds only finite values, the same answer on every rank.

    The per-tensor flags are combined on the device per placement and read once per placement
    (one host sync without pipeline parallelism).
    """
    flags: dict = {}
    for t in tensors:
        ok = flow.isfinite(t).all()
        key = _placement_key(t)
        flags[key] = ok if key not in flags else flow.logical_and(flags[key], ok)
    everyone = [_to_everyone(f) for f in flags.values()]
    return all([bool((f.to_local() if f.is_global else f).item()) for f in everyone])


def _group_options(group: Any) -> dict:
    """A param group's options, whether OneFlow's ``ParamGroup`` or a plain dict."""
    return dict(group.options) if hasattr(group, "options") else dict(group)


class OptimizerStep:
    """Owns the update: gradient accumulation, AMP (autocast + loss scaling), clipping.

    Args:
        optimizer: a OneFlow optimizer; clipping is read from its param groups
            (``clip_grad_max_norm``), as in Graph mode.
        grad_acc_steps: micro-batches per update; each micro-batch loss is divided by it.
        amp: mixed precision (fp16 on CUDA; reported and ignored on the CPU).
        device_type: ``"cuda"`` or ``"cpu"``, from the layout.
        skip_nonfinite: before updating, check that the step's loss and gradients are finite
            and skip the update (weights and optimizer state unchanged) when they are not
            (``train.nan_check.action="skip"``; one host sync per step).
    """

    def __init__(self, optimizer: flow.optim.Optimizer, grad_acc_steps: int = 1,
                 amp: bool = False, device_type: str = "cpu",
                 loss_scaler: Optional[DynamicLossScaler] = None, skip_nonfinite: bool = False) -> None:
        if int(grad_acc_steps) < 1:
            raise ValueError(f"grad_acc_steps must be >= 1, got {grad_acc_steps}")
        self.optimizer = optimizer
        self.grad_acc_steps = int(grad_acc_steps)
        self.device_type = device_type
        self.amp = bool(amp)
        self.amp_active = self.amp and device_type == "cuda"
        self.loss_scaler = loss_scaler or (DynamicLossScaler() if self.amp_active else None)
        self.skipped_steps = 0
        self.skip_nonfinite = bool(skip_nonfinite)
        self.nonfinite_steps = 0
        self._step_loss: Optional[flow.Tensor] = None

    @property
    def clips_gradients(self) -> bool:
        return self.clip_setting() is not None

    def clip_setting(self) -> Optional[Tuple[float, float]]:
        """``(max_norm, norm_type)`` from the param groups' clip keys, or None.

        Every clipped group must agree: the norm is taken over all parameters together.
        """
        settings = set()
        for g in self.optimizer.param_groups:
            opts = _group_options(g)
            if opts.get("clip_grad_max_norm") is not None:
                settings.add((float(opts["clip_grad_max_norm"]), float(opts.get("clip_grad_norm_type") or 2.0)))
        if not settings:
            return None
        if len(settings) > 1:
            raise ValueError(
                f"parameter groups ask for different gradient clipping {sorted(settings)}; clipping "
                "by global norm takes one (clip_grad_max_norm, clip_grad_norm_type) for all groups"
            )
        return settings.pop()

    def _params(self) -> List[flow.Tensor]:
        params: List[flow.Tensor] = []
        for g in self.optimizer.param_groups:
            params.extend(g.parameters if hasattr(g, "parameters") else g["params"])
        return params

    # ------------------------------------------------------------------ eager
    def autocast(self) -> ContextManager[Any]:
        """The forward's precision context (fp16 autocast on CUDA when AMP is on)."""
        if self.amp_active:
            return flow.autocast(device_type="cuda", dtype=flow.float16)
        return contextlib.nullcontext()

    def backward(self, loss: flow.Tensor) -> None:
        """Backward of one micro-batch's loss, averaged over the accumulation steps."""
        if self.skip_nonfinite:
            d = loss.detach()
            self._step_loss = d if self._step_loss is None else self._step_loss + d
        if self.grad_acc_steps > 1:
            loss = loss / self.grad_acc_steps
        if self.loss_scaler is not None:
            loss = loss * self.loss_scaler.scale
        loss.backward()

    def step(self) -> bool:
        """Apply the update (unscale, overflow check, non-finite check, clip, step, zero grads).

        Returns False when the step was skipped: gradients overflowed (AMP), or with
        ``skip_nonfinite`` the loss or a gradient was NaN/inf.
        """
        take_step = True
        if self.loss_scaler is not None:
            take_step = self.loss_scaler.unscale_and_check(self._params())
            self.loss_scaler.update(take_step)
            if not take_step:
                self.skipped_steps += 1
                logger.warning(f"AMP: gradients overflowed, step skipped (loss scale now {self.loss_scaler.scale:g})")
        if take_step and self.skip_nonfinite and not self._loss_and_grads_finite():
            take_step = False
            self.nonfinite_steps += 1
            logger.info(f"Non-finite loss or gradients: update skipped ({self.nonfinite_steps} so far)")
        self._step_loss = None
        if take_step:
            clip = self.clip_setting()
            if clip is not None:
                clip_grad_norm_global(self._params(), *clip)
            self.optimizer.step()
        self.optimizer.zero_grad()
        return take_step

    def _loss_and_grads_finite(self) -> bool:
        grads = [p.grad for p in self._params() if p.grad is not None]
        loss = [] if self._step_loss is None else [self._step_loss]
        return all_finite(loss + grads)

    # ------------------------------------------------------------------ graph
    def configure_graph(self, graph: flow.nn.Graph, lr_scheduler: Any = None,
                        zero: bool = False, zero_stage: int = 1, data_parallel_size: int = 1,
                        device_type: Optional[str] = None) -> None:
        """Apply the same switches to a training ``nn.Graph`` (call from its ``__init__``).

        ZeRO is applied where :func:`~libai.engine.support.zero_applies` says so (``device_type`` defaults to this
        step's own)."""
        clipped_groups = sum(1 for g in self.optimizer.param_groups
                             if _group_options(g).get("clip_grad_max_norm") is not None)
        if clipped_groups > 1:
            logger.warning(
                f"Graph mode: OneFlow 0.9 clips each of the {clipped_groups} parameter groups by its own "
                "gradient norm, while Eager mode clips by the norm of all parameters together. For the "
                "same clipping in both modes use one group: set optim.params.weight_decay, "
                "weight_decay_norm and weight_decay_bias all equal to optim.weight_decay"
            )
        # Graph-compiler fusions that apply on every device, the CPU included (LiBai turns on
        # the same three): the clipping coefficient and the weight decay folded into the
        # optimizer's update kernel (one op per parameter fewer), a residual add folded into
        # the output of the op that produces it, a cast folded into a following scale.
        # docs/benchmarks.md ("What the profile found") has the op counts and times.
        graph.config.allow_fuse_model_update_ops(True)
        graph.config.allow_fuse_add_to_output(True)
        graph.config.allow_fuse_cast_scale(True)
        if lr_scheduler is not None:
            graph.add_optimizer(self.optimizer, lr_sch=lr_scheduler)
        else:
            graph.add_optimizer(self.optimizer)
        if self.amp:
            graph.config.enable_amp(True)
            graph.set_grad_scaler(
                flow.amp.GradScaler(init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5,
                                    growth_interval=2000)
            )
        if self.grad_acc_steps > 1:
            graph.config.set_gradient_accumulation_steps(self.grad_acc_steps)
        if zero_applies(zero, data_parallel_size, device_type or self.device_type):
            graph.config.enable_zero(True, stage=zero_stage)
            logger.info(f"ZeRO stage {zero_stage}: optimizer state sharded over {data_parallel_size} "
                        "data-parallel ranks")

    # ------------------------------------------------------------------ state
    def state_dict(self) -> dict:
        state = {"skipped_steps": self.skipped_steps, "nonfinite_steps": self.nonfinite_steps}
        if self.loss_scaler is not None:
            state["loss_scaler"] = self.loss_scaler.state_dict()
        return state

    def load_state_dict(self, state: dict) -> None:
        self.skipped_steps = int(state.get("skipped_steps", 0))
        self.nonfinite_steps = int(state.get("nonfinite_steps", 0))
        if self.loss_scaler is not None and "loss_scaler" in state:
            self.loss_scaler.load_state_dict(state["loss_scaler"])
