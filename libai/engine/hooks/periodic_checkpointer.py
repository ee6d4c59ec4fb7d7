"""Saves a checkpoint every ``period`` iterations and at the end of training."""
import logging
from typing import Any, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class PeriodicCheckpointer(HookBase):
    """Writes ``{prefix}_{iter:07d}`` every ``period`` iterations and ``{prefix}_final`` after
    the last one, then keeps only the newest ``max_to_keep`` periodic checkpoints.

    ``iter`` in the name is the zero-based iteration just finished; resuming starts at
    ``iter + 1``. A run that a hook stops early (early stopping, preemption) is saved under its
    last iteration, unless the hook asked not to (a NaN loss keeps the last good checkpoint).
    """

    def __init__(self, checkpointer: Any, period: int, max_to_keep: Optional[int] = None,
                 file_prefix: str = "model") -> None:
        if period < 1:
            raise ValueError(f"train.checkpointer.period must be >= 1, got {period}")
        self.checkpointer = checkpointer
        self.period = int(period)
        self.max_to_keep = max_to_keep
        self.file_prefix = file_prefix
        self._last_saved: Optional[int] = None

    def save(self, name: str, iteration: int) -> None:
        with self.watchdog_phase("checkpoint save", iteration):
            self.checkpointer.save(name, iteration=iteration)
        self._last_saved = iteration
        if self.max_to_keep:
            self.checkpointer.keep_last(self.max_to_keep, prefix=f"{self.file_prefix}_")

    def keeps_weights(self) -> bool:
        return self.is_last_iter() or self.every_n_iters(self.period)

    def after_step(self) -> None:
        it = self.trainer.iter
        if self.weights_discarded():
            return  # this iteration's weights are not to be kept (e.g. a NaN loss)
        if self.is_last_iter():
            self.save(f"{self.file_prefix}_final", it)
        elif self.every_n_iters(self.period):
            self.save(f"{self.file_prefix}_{it:07d}", it)

    def after_train(self) -> None:
        last = self.trainer.iter - 1
        stopped = self.trainer.stop_reason is not None and not self.weights_discarded()
        if stopped and last >= self.trainer.start_iter and self._last_saved != last:
            self.save(f"{self.file_prefix}_{last:07d}", last)
