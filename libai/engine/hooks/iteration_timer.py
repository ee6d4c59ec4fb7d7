"""Per-iteration wall time, and the total training time at the end."""
import datetime
import logging
import time
from typing import Callable, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class IterationTimer(HookBase):
    """Puts ``time`` (seconds of the last iteration, hooks after this one excluded) into the
    event storage, and logs the total and per-iteration time when training ends.

    Place it first so that its ``before_step`` starts the clock before other hooks run. The
    first ``warmup_iter`` iterations (graph compilation, allocator warm-up) are left out of the
    reported average.
    """

    def __init__(self, warmup_iter: int = 3, clock: Callable[[], float] = time.perf_counter) -> None:
        self._warmup_iter = warmup_iter
        self._clock = clock
        self._step_start: Optional[float] = None
        self._train_start: Optional[float] = None
        self._timed_total = 0.0
        self._timed_iters = 0

    def before_train(self) -> None:
        self._train_start = self._clock()
        self._timed_total = 0.0
        self._timed_iters = 0

    def before_step(self) -> None:
        self._step_start = self._clock()

    def after_step(self) -> None:
        elapsed = self._clock() - self._step_start
        iters_done = self.trainer.iter - self.trainer.start_iter + 1
        if iters_done > self._warmup_iter:
            self._timed_total += elapsed
            self._timed_iters += 1
        self.trainer.storage.put_scalars(time=elapsed)

    def after_train(self) -> None:
        if self._train_start is None:
            return
        total = self._clock() - self._train_start
        if self._timed_iters:
            per_iter = self._timed_total / self._timed_iters
            logger.info(
                f"Overall training speed: {self._timed_iters} iterations in "
                f"{datetime.timedelta(seconds=int(self._timed_total))} ({per_iter:.4f} s / it)"
            )
        logger.info(f"Total training time: {datetime.timedelta(seconds=int(total))}")
