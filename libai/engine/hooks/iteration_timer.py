"""Per-iteration wall time, and the total training time at the end."""
import datetime
import logging
import time
from collections import deque
from typing import Callable, Deque, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class IterationTimer(HookBase):
    """Puts ``time`` (seconds per iteration) into the event storage, and logs the total and
    per-iteration time when training ends.

    OneFlow runs eager work asynchronously: a step's Python code returns before its kernels
    finish, and the wait surfaces later (when a writer reads a loss). Timing each step alone
    would therefore look several times too fast. ``time`` is instead the wall time between the
    ends of consecutive iterations (everything included: data, step, hooks), averaged over the
    last ``window`` iterations, so any wait lands inside the window and the average, ETA and
    throughput are right. The first ``warmup_iter`` iterations (graph compilation, allocator
    warm-up) are left out of the final average.
    """

    def __init__(self, warmup_iter: int = 3, window: int = 20,
                 clock: Callable[[], float] = time.perf_counter) -> None:
        self._warmup_iter = warmup_iter
        self._window = max(1, int(window))
        self._clock = clock
        self._ends: Deque[float] = deque(maxlen=self._window + 1)
        self._train_start: Optional[float] = None
        self._timed_total = 0.0
        self._timed_iters = 0

    def before_train(self) -> None:
        self._train_start = self._clock()
        self._ends.clear()
        self._ends.append(self._train_start)
        self._timed_total = 0.0
        self._timed_iters = 0

    def after_step(self) -> None:
        now = self._clock()
        iters_done = self.trainer.iter - self.trainer.start_iter + 1
        if iters_done > self._warmup_iter:
            self._timed_total += now - self._ends[-1]
            self._timed_iters += 1
        self._ends.append(now)
        per_iter = (now - self._ends[0]) / (len(self._ends) - 1)
        self.trainer.storage.put_scalar("time", per_iter, smoothing_hint=False)

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
