"""Stops training (or skips the update) when the loss becomes NaN or infinite.

A non-finite loss means the update just made, or about to be made, is garbage: once a NaN
reaches the weights every later step is NaN too, and a checkpoint saved from then on is
worthless. Two ways to react, chosen by ``train.nan_check.action``:

* ``"stop"`` (Eager and Graph mode): end training at that iteration *without* saving its
  weights, so ``last_checkpoint`` keeps naming the last good checkpoint (if one was saved).
* ``"skip"`` (Eager mode only): the :class:`~libai.engine.optimizer_step.OptimizerStep` checks
  the loss and the gradients before updating and drops a non-finite step (weights and optimizer
  state unchanged); training goes on. In Graph mode the update is compiled into the graph and
  cannot be skipped from Python, so ``"skip"`` is refused at start-up.
"""
import logging
import math
from typing import Any, Mapping, Optional

from libai.engine.support import NAN_ACTIONS, check_nan_action
from libai.engine.trainer import GraphTrainer, HookBase

__all__ = ["NaNLossHook", "check_nan_action", "NAN_ACTIONS"]

logger = logging.getLogger(__name__)

class NaNLossHook(HookBase):
    """Watches ``total_loss`` (put in the event storage by the step runner every iteration).

    Args:
        action: ``"stop"`` or ``"skip"`` (see the module docstring).
        period: with ``"stop"``, check every ``period`` iterations (and after the last one).
            Reading the loss waits for the device, so a larger period saves a sync per step;
            every loss since the previous check is examined, and a check also runs on every
            iteration where a checkpoint is saved or an evaluation runs, so a NaN is never
            saved. ``"skip"`` checks every step regardless.
        max_consecutive_skips: with ``"skip"``, stop (saving the unchanged weights) after this
            many skipped steps in a row: a loss that stays non-finite is not a passing glitch.
        graph_enabled: the run's mode, when known at construction: an impossible combination
            is then refused right away instead of at ``before_train``.

    Place it before :class:`PeriodicCheckpointer`, so that a stop requested at iteration ``k``
    is seen before that hook would save iteration ``k``.
    """

    def __init__(self, action: str = "stop", period: int = 1, max_consecutive_skips: int = 10,
                 graph_enabled: Optional[bool] = None) -> None:
        check_nan_action(action, bool(graph_enabled))
        if int(period) < 1:
            raise ValueError(f"NaNLossHook period must be >= 1, got {period}")
        if int(max_consecutive_skips) < 1:
            raise ValueError(f"max_consecutive_skips must be >= 1, got {max_consecutive_skips}")
        self.action = action
        self.period = int(period)
        self.max_consecutive_skips = int(max_consecutive_skips)
        self._last_seq = 0
        self._step: Any = None
        self._skips_seen = 0
        self.consecutive_skips = 0

    @classmethod
    def from_config(cls, nan_cfg: Mapping[str, Any], graph_enabled: bool) -> Optional["NaNLossHook"]:
        """The hook described by ``train.nan_check`` (None when disabled)."""
        if not nan_cfg.get("enabled"):
            return None
        options = {k: nan_cfg[k] for k in ("period", "max_consecutive_skips")
                   if nan_cfg.get(k) is not None}
        return cls(action=nan_cfg.get("action") or "stop", graph_enabled=graph_enabled, **options)

    # ------------------------------------------------------------------ set-up
    def before_train(self) -> None:
        self._last_seq = 0
        self.consecutive_skips = 0
        if self.action == "skip":
            self._step = self._enable_skipping()
            self._skips_seen = self._step.nonfinite_steps

    def _enable_skipping(self) -> Any:
        """Switch on the step runner's check before the update; refuse Graph mode."""
        runner = self.trainer.runner
        check_nan_action(self.action, isinstance(runner, GraphTrainer))
        step = getattr(runner, "optimizer_step", None)
        if step is None or not hasattr(step, "skip_nonfinite"):
            raise TypeError(
                f"nan_check.action='skip' needs a step runner whose optimizer_step supports "
                f"skip_nonfinite (libai's EagerTrainer does); {type(runner).__name__} has "
                f"{type(step).__name__}. Use action='stop', or run with an OptimizerStep"
            )
        step.skip_nonfinite = True
        return step

    # ------------------------------------------------------------------ each step
    def after_step(self) -> None:
        if self.action == "skip":
            self._report_skip()
            return
        if self._must_check():
            self._check_losses()

    def _must_check(self) -> bool:
        """Every ``period`` iterations, at the end, and before any hook keeps the weights of this
        iteration (a periodic checkpoint, an evaluation that may save ``model_best``), so a NaN
        is never saved however long the period. Reading the losses is a device sync, which is
        why it is not done every step by default."""
        if self.every_n_iters(self.period) or self.is_last_iter():
            return True
        return any(hook.keeps_weights() for hook in self.trainer.hooks if hook is not self)

    def _loss_history(self) -> Any:
        storage = self.trainer.storage
        if not storage.has_history("total_loss"):
            raise RuntimeError(
                f"NaNLossHook found no 'total_loss' in the event storage at iteration "
                f"{self.trainer.iter}. libai's step runners put it every iteration; a custom "
                "run_step must call get_event_storage().put_scalar('total_loss', loss)"
            )
        return storage.history("total_loss")

    def _check_losses(self) -> None:
        """Look at every loss put since the last check; stop at the first non-finite one."""
        history = self._loss_history()
        entries = history.entries_after(self._last_seq)
        self._last_seq = history.latest_seq()
        for value, iteration, _, _ in entries:
            if not math.isfinite(value):
                self.trainer.request_stop(
                    f"the loss is {value} at iteration {iteration}. Training stops without saving "
                    "the weights of this or any later iteration",
                    save_checkpoint=False, failed=True,
                )
                return

    def _report_skip(self) -> None:
        skipped = self._step.nonfinite_steps
        if skipped == self._skips_seen:
            self.consecutive_skips = 0
            return
        self._skips_seen = skipped
        self.consecutive_skips += 1
        it = self.trainer.iter
        loss = self._loss_history().latest()
        logger.warning(f"Iteration {it}: non-finite loss ({loss}) or gradients; the update was "
                       f"skipped, weights unchanged ({skipped} skipped so far)")
        if self.consecutive_skips >= self.max_consecutive_skips:
            self.trainer.request_stop(
                f"{self.consecutive_skips} steps in a row up to iteration {it} had a non-finite "
                "loss or gradients and were skipped; the weights are unchanged since and are "
                "saved. Check the data and the learning rate before resuming",
                failed=True,
            )
