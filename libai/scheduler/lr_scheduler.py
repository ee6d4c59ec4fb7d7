"""Learning-rate schedules with a warmup: LiBai's six schedulers, curve for curve.

Why these are compositions of OneFlow's own schedulers: in static-graph mode the schedule is
compiled into the ``nn.Graph`` (``graph.add_optimizer(optimizer, lr_sch=scheduler)``), and the
graph only understands OneFlow's built-in ``flow.optim.lr_scheduler`` classes (it asks each for its
``_generate_conf_for_graph``). A Python-only ``get_lr`` would be silently ignored there. Each
class below is therefore a thin subclass of ``SequentialLR`` that chains a ``LinearLR`` or
``ConstantLR`` warmup with a built-in decay scheduler, so eager and graph runs follow the same
numbers.

The schedule, with ``base`` the learning rate of a parameter group, ``t`` the iteration (0-based),
``W = warmup_iter``, ``f = warmup_factor`` and ``decay(t)`` the decay formula each class
documents (computed on the run's own clock ``t``, not restarted after the warmup):

* warmup, ``t < W``:
  ``"linear"``: ``lr(t) = base * (f + (decay(W) / base - f) * t / W)``, a straight line from
  ``f * base`` to where the decay stands at ``W``, so the curve has no jump;
  ``"constant"``: ``lr(t) = base * f``.
* decay, ``t >= W``: ``lr(t) = decay(t)``.

With ``warmup_iter=0`` there is no warmup. This is LiBai's schedule (OneFlow's ``WarmUpLR``
around the decay), argument for argument, including the positional order.
"""
import logging
import math
import numbers
from typing import Any, List, Sequence

import oneflow as flow
from oneflow.optim.lr_scheduler import (
    ConstantLR,
    CosineAnnealingLR,
    CosineDecayLR,
    ExponentialLR,
    LinearLR,
    MultiStepLR,
    PolynomialLR,
    SequentialLR,
    StepLR,
)

__all__ = [
    "WarmupCosineLR",
    "WarmupCosineAnnealingLR",
    "WarmupMultiStepLR",
    "WarmupExponentialLR",
    "WarmupPolynomialLR",
    "WarmupStepLR",
]

logger = logging.getLogger(__name__)

_WARMUP_METHODS = ("linear", "constant")


class _WarmupThenDecay(SequentialLR):
    """The one warmup + decay core: a warmup for the first ``warmup_iter`` iterations, then a decay.

    Every public scheduler is a parameterisation of this class: its ``__init__`` keeps LiBai's
    signature and hands its decay arguments here by keyword, and its ``_build_decay`` validates
    them, keeps them as attributes and returns OneFlow's built-in decay scheduler. The decay
    keeps the run's clock (``interval_rescaling=False``): at iteration ``t >= warmup_iter`` it is
    at its step ``t``.
    """

    def __init__(
        self,
        optimizer: flow.optim.Optimizer,
        max_iter: int,
        warmup_factor: float,
        warmup_iter: int,
        warmup_method: str,
        **decay_args: Any,
    ) -> None:
        name = type(self).__name__
        _check_common(name, optimizer, max_iter, warmup_factor, warmup_iter, warmup_method)
        self.max_iter = max_iter
        self.warmup_factor = warmup_factor
        self.warmup_iter = warmup_iter
        self.warmup_method = warmup_method
        decay = self._build_decay(optimizer, **decay_args)
        if warmup_iter == 0:
            schedulers, milestones, rescale = [decay], [], []
        else:
            warmup = _build_warmup(
                name, optimizer, decay, warmup_factor, warmup_iter, warmup_method
            )
            schedulers, milestones, rescale = [warmup, decay], [warmup_iter], [False]
        super().__init__(
            optimizer, schedulers=schedulers, milestones=milestones, interval_rescaling=rescale
        )

    def _build_decay(self, optimizer: flow.optim.Optimizer, **decay_args: Any) -> Any:
        """Validate and keep the decay's own arguments; return OneFlow's decay scheduler."""
        raise NotImplementedError(f"{type(self).__name__} must define _build_decay")

    def load_state_dict(self, state_dict: dict) -> None:
        """Restore the position in the schedule and re-apply its current lr to the optimizer.

        Re-applying matters when the optimizer was rebuilt without its own state: otherwise the
        first resumed iteration would still run at the lr of iteration 0.
        """
        saved_phases = len(state_dict.get("schedulers", ()))
        if saved_phases != len(self.schedulers):
            raise ValueError(
                f"{type(self).__name__}: the saved schedule has {saved_phases} phase(s) but this "
                f"one has {len(self.schedulers)} (warmup_iter={self.warmup_iter}); a schedule "
                "with a warmup cannot resume one without (or the reverse). Keep "
                "train.warmup_ratio as it was when the checkpoint was written"
            )
        changed = [
            f"{key}: {getattr(self, key)} -> {state_dict[key]}"
            for key in ("max_iter", "warmup_iter")
            if key in state_dict and state_dict[key] != getattr(self, key)
        ]
        if changed:
            logger.warning(
                f"{type(self).__name__}: resuming the saved schedule, whose settings differ "
                f"from the config ({', '.join(changed)}); the saved ones are used"
            )
        super().load_state_dict(state_dict)
        self.update_lrs(list(self._last_lr))

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(max_iter={self.max_iter}, warmup_iter={self.warmup_iter}, "
            f"warmup_factor={self.warmup_factor}, warmup_method={self.warmup_method!r}, "
            f"last_step={self.last_step})"
        )


def _linear_end_factor(name: str, decay: Any, warmup_iter: int) -> float:
    """``decay(W) / base``, the factor a linear warmup must reach to meet the decay.

    One ``LinearLR`` scales every param group by the same factor, so the ratio must be the same
    for every group. It is for the decays proportional to ``base`` (cosine, step, multi-step,
    exponential); a decay towards an absolute lr (polynomial's ``end_learning_rate``, cosine
    annealing's ``eta_min``) gives different ratios when the groups' base lrs differ.
    """
    ratios = [decay.get_lr(base, warmup_iter) / base for base in decay.base_lrs if base != 0]
    if not ratios:
        return 1.0
    if any(not math.isclose(r, ratios[0], rel_tol=1e-9, abs_tol=1e-12) for r in ratios):
        raise ValueError(
            f"{name}: a linear warmup into this decay needs every param group to have the same "
            f"base lr (groups have {sorted(set(decay.base_lrs))}), because the warmup must end "
            f"where the decay stands at warmup_iter={warmup_iter}, which here is not a fixed "
            "fraction of the base lr. Use warmup_method='constant', one base lr, or "
            "end_learning_rate/eta_min=0"
        )
    return ratios[0]


def _build_warmup(
    name: str,
    optimizer: flow.optim.Optimizer,
    decay: Any,
    warmup_factor: float,
    warmup_iter: int,
    warmup_method: str,
) -> Any:
    if warmup_method == "linear":
        end_factor = _linear_end_factor(name, decay, warmup_iter)
        return LinearLR(
            optimizer, start_factor=warmup_factor, end_factor=end_factor, total_iters=warmup_iter
        )
    return ConstantLR(optimizer, factor=warmup_factor, total_iters=warmup_iter)


def _check_common(
    name: str, optimizer: Any, max_iter: Any, warmup_factor: Any, warmup_iter: Any, warmup_method: Any
) -> None:
    """Validate the arguments every warmup scheduler shares, naming the fix in the message."""
    if not isinstance(optimizer, flow.optim.Optimizer):
        raise TypeError(
            f"{name}: optimizer must be a oneflow.optim.Optimizer, got {type(optimizer).__name__}"
        )
    if not _is_int(max_iter) or max_iter < 1:
        raise ValueError(
            f"{name}: max_iter must be a positive integer (the total number of training "
            f"iterations; the trainer fills it in), got {max_iter!r}"
        )
    if not _is_int(warmup_iter) or not 0 <= warmup_iter <= max_iter:
        raise ValueError(
            f"{name}: warmup_iter must be an integer in [0, max_iter={max_iter}], got "
            f"{warmup_iter!r}; lower train.warmup_ratio (warmup_iter = warmup_ratio × max_iter)"
        )
    if warmup_method not in _WARMUP_METHODS:
        raise ValueError(
            f"{name}: warmup_method must be 'linear' or 'constant', got {warmup_method!r}"
        )
    if not isinstance(warmup_factor, numbers.Real) or not 0.0 <= warmup_factor <= 1.0:
        raise ValueError(
            f"{name}: warmup_factor must be a number in [0, 1] (the fraction of the base lr the "
            f"warmup starts from), got {warmup_factor!r}"
        )


def _is_int(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _positive(name: str, arg: str, value: Any) -> Any:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or value <= 0:
        raise ValueError(f"{name}: {arg} must be a positive number, got {value!r}")
    return value


def _non_negative_lr(name: str, arg: str, value: Any) -> Any:
    if not isinstance(value, numbers.Real) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name}: {arg} must be a non-negative lr, got {value!r}")
    return value


def _milestones(milestones: Any) -> List[int]:
    try:
        values = [m for m in milestones]
    except TypeError:
        raise TypeError(
            f"WarmupMultiStepLR: milestones must be a list of iterations, got {milestones!r}"
        ) from None
    if not all(_is_int(m) for m in values):
        raise TypeError(f"WarmupMultiStepLR: milestones must be integers, got {values}")
    if any(b <= a for a, b in zip(values, values[1:])):
        raise ValueError(f"WarmupMultiStepLR: milestones must be strictly increasing, got {values}")
    return values


# Each scheduler below is LiBai's signature (argument for argument, in LiBai's positional order)
# over the core: ``__init__`` forwards, ``_build_decay`` checks its own arguments and names the
# OneFlow decay. The warmup, the checks they share, resuming and the repr live in the core.


class WarmupCosineLR(_WarmupThenDecay):
    """Warmup, then cosine decay from ``base`` down to ``alpha * base`` at ``max_iter``.

    Decay::

        decay(t) = base * (alpha + (1 - alpha) * 0.5 * (1 + cos(pi * t / max_iter)))   t < max_iter
        decay(t) = base * alpha                                                        after

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (the trainer fills this in).
        warmup_factor: fraction of the base lr the warmup starts from (in [0, 1]).
        warmup_iter: number of warmup iterations (the trainer derives it from
            ``train.warmup_ratio``); 0 disables the warmup.
        alpha: the floor of the cosine as a fraction of the base lr (in [0, 1]).
        warmup_method: ``"linear"`` or ``"constant"``.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int,
                 warmup_factor: float = 0.001, warmup_iter: int = 0, alpha: float = 0.0,
                 warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method, alpha=alpha)

    def _build_decay(self, optimizer: flow.optim.Optimizer, alpha: float) -> CosineDecayLR:
        if not isinstance(alpha, numbers.Real) or not 0.0 <= alpha <= 1.0:
            raise ValueError(
                f"WarmupCosineLR: alpha is the lr floor as a fraction of the base lr and must be "
                f"in [0, 1], got {alpha!r}"
            )
        self.alpha = alpha
        return CosineDecayLR(optimizer, decay_steps=self.max_iter, alpha=alpha)


class WarmupCosineAnnealingLR(_WarmupThenDecay):
    """Warmup, then cosine annealing from ``base`` to ``eta_min`` (an absolute lr) at ``max_iter``.

    Decay::

        decay(t) = eta_min + (base - eta_min) * 0.5 * (1 + cos(pi * t / max_iter))

    The cosine is not clamped: past ``max_iter`` the lr climbs back (OneFlow's and LiBai's
    formula); training normally stops at ``max_iter``. Use :class:`WarmupCosineLR` for a floor
    held after the end.

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (the trainer fills this in).
        eta_min: the lr reached at ``max_iter`` (not a fraction of ``base``).
        warmup_factor, warmup_iter, warmup_method: see :class:`WarmupCosineLR`.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int,
                 warmup_factor: float = 0.001, warmup_iter: int = 0, eta_min: float = 0.0,
                 warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method,
                         eta_min=eta_min)

    def _build_decay(self, optimizer: flow.optim.Optimizer, eta_min: float) -> CosineAnnealingLR:
        self.eta_min = _non_negative_lr(type(self).__name__, "eta_min", eta_min)
        return CosineAnnealingLR(optimizer, T_max=self.max_iter, eta_min=eta_min)


class WarmupStepLR(_WarmupThenDecay):
    """Warmup, then multiply the lr by ``gamma`` every ``step_size`` iterations.

    Decay::

        decay(t) = base * gamma ** floor(t / step_size)

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (kept for a uniform signature).
        step_size: iterations between two decays, counted from iteration 0.
        gamma: multiplicative decay.
        warmup_factor, warmup_iter, warmup_method: see :class:`WarmupCosineLR`.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int,
                 warmup_factor: float = 0.001, warmup_iter: int = 0, step_size: int = 1,
                 gamma: float = 0.1, warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method,
                         step_size=step_size, gamma=gamma)

    def _build_decay(self, optimizer: flow.optim.Optimizer, step_size: int, gamma: float) -> StepLR:
        if not _is_int(step_size) or step_size < 1:
            raise ValueError(f"WarmupStepLR: step_size must be a positive integer, got {step_size!r}")
        self.step_size = step_size
        self.gamma = _positive(type(self).__name__, "gamma", gamma)
        return StepLR(optimizer, step_size=step_size, gamma=gamma)


class WarmupMultiStepLR(_WarmupThenDecay):
    """Warmup, then multiply the lr by ``gamma`` at each milestone (an iteration number).

    Decay::

        decay(t) = base * gamma ** (number of milestones m with m <= t)

    A milestone inside the warmup is allowed: the warmup then ends at the already-decayed lr.
    The milestones are kept as ``milestones_abs`` (``milestones`` is the phase boundary list of
    the underlying ``SequentialLR``).

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (kept for a uniform signature).
        milestones: strictly increasing iterations.
        gamma: multiplicative decay at each milestone.
        warmup_factor, warmup_iter, warmup_method: see :class:`WarmupCosineLR`.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int,
                 warmup_factor: float = 0.001, warmup_iter: int = 0,
                 milestones: Sequence[int] = (), gamma: float = 0.1,
                 warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method,
                         milestones=milestones, gamma=gamma)

    def _build_decay(self, optimizer: flow.optim.Optimizer, milestones: Sequence[int],
                     gamma: float) -> MultiStepLR:
        self.gamma = _positive(type(self).__name__, "gamma", gamma)
        self.milestones_abs = _milestones(milestones)
        return MultiStepLR(optimizer, milestones=self.milestones_abs, gamma=gamma)


class WarmupExponentialLR(_WarmupThenDecay):
    """Warmup, then multiply the lr by ``gamma`` every iteration.

    Decay::

        decay(t) = base * gamma ** t

    Note the argument order, LiBai's: ``gamma`` comes right after ``max_iter``.

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (kept for a uniform signature).
        gamma: per-iteration multiplicative decay.
        warmup_factor, warmup_iter, warmup_method: see :class:`WarmupCosineLR`.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int, gamma: float = 0.999,
                 warmup_factor: float = 0.001, warmup_iter: int = 0,
                 warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method,
                         gamma=gamma)

    def _build_decay(self, optimizer: flow.optim.Optimizer, gamma: float) -> ExponentialLR:
        self.gamma = _positive(type(self).__name__, "gamma", gamma)
        return ExponentialLR(optimizer, gamma=gamma)


class WarmupPolynomialLR(_WarmupThenDecay):
    """Warmup, then polynomial decay from ``base`` to ``end_learning_rate`` (an absolute lr).

    Decay (``M = max_iter``, ``e = end_learning_rate``, ``p = power``):

    * ``cycle=False``: ``decay(t) = (base - e) * (1 - min(t, M) / M) ** p + e``, which stays at
      ``e`` from ``max_iter`` on.
    * ``cycle=True``: the decay restarts every ``M`` iterations. With ``c = max(t, 1)`` and
      ``Mc = M * ceil(c / M)``: ``decay(t) = (base - e) * (1 - c / Mc) ** p + e``. (OneFlow's
      formula, followed by its graph too; note that ``t = 0`` is treated as ``t = 1``.)

    Args:
        optimizer: the optimizer whose groups' lr is scheduled.
        max_iter: total training iterations (the trainer fills this in).
        end_learning_rate: the lr reached at ``max_iter`` (not a fraction of ``base``).
        power: the polynomial's exponent; 1 is a linear decay.
        cycle: restart the decay every ``max_iter`` iterations.
        warmup_factor, warmup_iter, warmup_method: see :class:`WarmupCosineLR`.
    """

    def __init__(self, optimizer: flow.optim.Optimizer, max_iter: int,
                 warmup_factor: float = 0.001, warmup_iter: int = 0,
                 end_learning_rate: float = 1e-4, power: float = 1.0, cycle: bool = False,
                 warmup_method: str = "linear") -> None:
        super().__init__(optimizer, max_iter, warmup_factor, warmup_iter, warmup_method,
                         end_learning_rate=end_learning_rate, power=power, cycle=cycle)

    def _build_decay(self, optimizer: flow.optim.Optimizer, end_learning_rate: float,
                     power: float, cycle: bool) -> PolynomialLR:
        name = type(self).__name__
        self.end_learning_rate = _non_negative_lr(name, "end_learning_rate", end_learning_rate)
        self.power = _positive(name, "power", power)
        self.cycle = bool(cycle)
        return PolynomialLR(optimizer, decay_batch=self.max_iter,
                            end_learning_rate=end_learning_rate, power=power, cycle=self.cycle)
