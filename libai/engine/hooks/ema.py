"""An exponential moving average (EMA) of the model's weights, updated after every step.

The averaged weights are smoother than the live ones: evaluating (or exporting) them often
gives a better model than the last step's weights, at the cost of one more copy of the
parameters. The update after step ``t`` (``t`` = updates already made, from 0) is::

    d_t = min(decay, (1 + t) / (10 + t))    # with warmup (the default)
    d_t = decay                              # warmup=False
    ema = d_t * ema + (1 - d_t) * param

The warm-up keeps the first averages close to the trained weights instead of to the random
initial ones (``d_0 = 0.1``, ``d_10 = 0.55``, ``d_100 ≈ 0.92``), which matters for short runs or
a ``decay`` near 1. Buffers (e.g. BatchNorm statistics, which are averages already) are not
averaged: their current values are copied, so the EMA state is a complete ``state_dict`` of
the model that ``model.load_state_dict`` accepts.
"""
import contextlib
import logging
from typing import Any, ContextManager, Dict, Iterator, Mapping, Optional, Tuple

import oneflow as flow

from libai.engine.trainer import HookBase

__all__ = ["EMAHook", "EMA_CONFIG_ALIASES"]

logger = logging.getLogger(__name__)

# Spellings of ``train.ema`` used by the TrainFramework, and the libai name each stands for.
EMA_CONFIG_ALIASES: Dict[str, str] = {"enable": "enabled", "decay_rate": "decay"}

_DEFAULT_DECAY = 0.9999


class EMAHook(HookBase):
    """Keeps ``ema = d * ema + (1 - d) * param`` for every parameter (see the module docstring).

    Place it after the optimizer update and before the hooks that save or evaluate (in
    ``DefaultTrainer``: right after ``LRScheduler``), so that a checkpoint or an evaluation at
    iteration ``k`` sees the average including step ``k``. Works for local and global tensors
    (the averages keep each parameter's placement and SBP) and in Graph mode, where the
    compiled graph updates the eager module's parameters in place.

    Args:
        model: the eager module being trained (``trainer.model``).
        decay: the decay rate, ``0 <= decay < 1``; closer to 1 averages over more steps
            (about ``1 / (1 - decay)``). Default 0.9999.
        warmup: use ``min(decay, (1 + t) / (10 + t))`` instead of ``decay``.
        eval_with_ema: whether evaluation during training should use the averaged weights
            (read by the trainer through :meth:`evaluation_context`).
        decay_rate: the TrainFramework spelling of ``decay``; give one or the other.
    """

    def __init__(self, model: flow.nn.Module, decay: Optional[float] = None, warmup: bool = True,
                 eval_with_ema: bool = True, decay_rate: Optional[float] = None) -> None:
        if not isinstance(model, flow.nn.Module):
            raise TypeError(f"EMAHook needs the oneflow.nn.Module being trained, got {type(model).__name__}")
        self.model = model
        self.decay = _resolve_decay(decay, decay_rate)
        self.warmup = bool(warmup)
        self.eval_with_ema = bool(eval_with_ema)
        self.num_updates = 0
        self._weights: Optional[Dict[str, flow.Tensor]] = None

    @classmethod
    def from_config(cls, model: flow.nn.Module, ema_cfg: Mapping[str, Any]) -> Optional["EMAHook"]:
        """The hook described by ``train.ema``, or None when it is disabled.

        Reads ``enabled``/``decay`` and their TrainFramework spellings ``enable``/``decay_rate``.
        An alias set to a value (not None) wins: after the config is merged with the defaults the
        libai key is always there, so only the alias can tell what the user wrote. Other keys
        (``warmup``, ``eval_with_ema``) are passed through when present.
        """
        def setting(alias: str) -> Any:
            value = ema_cfg.get(alias)
            return ema_cfg.get(EMA_CONFIG_ALIASES[alias]) if value is None else value

        if not setting("enable"):
            return None
        options = {k: ema_cfg[k] for k in ("warmup", "eval_with_ema") if k in ema_cfg}
        return cls(model, decay=setting("decay_rate"), **options)

    # ------------------------------------------------------------------ the average
    def current_decay(self) -> float:
        """The decay the next update will use."""
        if not self.warmup:
            return self.decay
        t = self.num_updates
        return min(self.decay, (1.0 + t) / (10.0 + t))

    def _live(self) -> Tuple[Dict[str, flow.Tensor], Dict[str, flow.Tensor]]:
        """The model's parameters and buffers by name (tied parameters appear once)."""
        return dict(self.model.named_parameters()), dict(self.model.named_buffers())

    def _ensure_initialized(self) -> Dict[str, flow.Tensor]:
        """Start the average from the current weights (unless a checkpoint already set it)."""
        if self._weights is None:
            params, buffers = self._live()
            with flow.no_grad():
                self._weights = {n: t.detach().clone() for n, t in {**params, **buffers}.items()}
        return self._weights

    def update(self) -> None:
        """Fold the model's current parameters into the average (and copy its buffers)."""
        weights = self._ensure_initialized()
        d = self.current_decay()
        params, buffers = self._live()
        with flow.no_grad():
            for name, param in params.items():
                if param.dtype.is_floating_point:
                    weights[name].mul_(d).add_(param.detach(), alpha=1.0 - d)
                else:
                    weights[name].copy_(param.detach())
            for name, buf in buffers.items():
                weights[name].copy_(buf)
        self.num_updates += 1

    def before_train(self) -> None:
        self._ensure_initialized()

    def after_step(self) -> None:
        self.update()

    # ------------------------------------------------------------------ using the average
    @contextlib.contextmanager
    def apply_to_model(self) -> Iterator[flow.nn.Module]:
        """Inside the ``with`` block the model holds the averaged weights; afterwards (also on
        an exception) its own weights are back, bit for bit.

        The copy is in place, so anything sharing the module's tensors (an evaluation
        ``nn.Graph`` built on it) sees the averaged weights too::

            with ema_hook.apply_to_model() as model:
                results = evaluate(model)
        """
        weights = self._ensure_initialized()
        params, buffers = self._live()
        live = {**params, **buffers}
        with flow.no_grad():
            saved = {n: t.detach().clone() for n, t in live.items()}
            for name, tensor in live.items():
                tensor.copy_(weights[name])
        try:
            yield self.model
        finally:
            with flow.no_grad():
                for name, tensor in live.items():
                    tensor.copy_(saved[name])

    def evaluation_context(self) -> ContextManager[Any]:
        """What evaluation during training runs inside: :meth:`apply_to_model` when
        ``eval_with_ema``, else nothing."""
        return self.apply_to_model() if self.eval_with_ema else contextlib.nullcontext(self.model)

    def ema_state_dict(self) -> Dict[str, flow.Tensor]:
        """The averaged weights as a model ``state_dict`` (for export or evaluation)."""
        return dict(self._ensure_initialized())

    # ------------------------------------------------------------------ checkpoints
    def state_dict(self) -> Dict[str, Any]:
        """``{"num_updates", "decay", "weights": {name: tensor}}``: enough to resume exactly.

        The hook's state is saved with the trainer's (``TrainerBase.state_dict`` collects hook
        states); it can also be registered on its own: ``Checkpointer(model, d, ema=hook)``.
        """
        return {"num_updates": self.num_updates, "decay": self.decay,
                "weights": dict(self._ensure_initialized())}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Restore the average saved by :meth:`state_dict`, under any parallel layout."""
        saved = state["weights"]
        weights = self._ensure_initialized()
        missing = sorted(set(weights) - set(saved))
        unexpected = sorted(set(saved) - set(weights))
        if missing or unexpected:
            raise ValueError(
                f"the EMA state does not fit {type(self.model).__name__}: missing {missing}, "
                f"unexpected {unexpected}. It was saved for another model; load it into the "
                "model it was trained with (or drop the EMA part to start a fresh average)"
            )
        with flow.no_grad():
            for name, target in weights.items():
                value = saved[name]
                if tuple(value.shape) != tuple(target.shape):
                    raise ValueError(
                        f"EMA weight {name!r} has shape {tuple(value.shape)} in the checkpoint but "
                        f"{tuple(target.shape)} in the model; build the model it was trained with"
                    )
                target.copy_(_like(value, target))
        self.num_updates = int(state.get("num_updates", 0))
        saved_decay = state.get("decay")
        if saved_decay is not None and float(saved_decay) != self.decay:
            logger.info(f"EMA: the checkpoint used decay {saved_decay}; continuing with {self.decay}")


def _resolve_decay(decay: Optional[float], decay_rate: Optional[float]) -> float:
    if decay is not None and decay_rate is not None and float(decay) != float(decay_rate):
        raise ValueError(
            f"EMAHook got decay={decay} and decay_rate={decay_rate}; they are two names for one "
            "setting (decay_rate is the TrainFramework spelling): give only one"
        )
    value = decay if decay is not None else decay_rate
    value = _DEFAULT_DECAY if value is None else float(value)
    if not 0.0 <= value < 1.0:
        raise ValueError(
            f"EMA decay must be in [0, 1), got {value}: 1 would freeze the average at the initial "
            "weights. Typical values are 0.999 (short runs) to 0.9999 (long runs)"
        )
    return value


def _like(value: flow.Tensor, target: flow.Tensor) -> flow.Tensor:
    """``value`` with ``target``'s dtype and placement/SBP (or device), ready for ``copy_``.

    A checkpoint loads as local tensors in one process and as broadcast global tensors in
    several; either way the saved value is the full tensor, re-split here like the parameter.
    """
    value = value.to(dtype=target.dtype)
    if target.is_global:
        if not value.is_global:
            broadcast = [flow.sbp.broadcast] * len(target.sbp)
            value = value.to(target.placement.type).to_global(placement=target.placement, sbp=broadcast)
        return value.to_global(placement=target.placement, sbp=target.sbp)
    if value.is_global:
        value = value.to_global(sbp=[flow.sbp.broadcast] * len(value.sbp)).to_local()
    return value.to(target.device)
