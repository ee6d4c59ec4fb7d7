"""Seconds per iteration measured by the wall clock, and the total training time at the end."""
import datetime
import logging
import time
from typing import Callable, Optional

from libai.engine.trainer import HookBase
from libai.utils.process import wait_for_queued_work

logger = logging.getLogger(__name__)

__all__ = ["IterationTimer", "wait_for_queued_work"]


class IterationTimer(HookBase):
    """Puts ``time`` (wall seconds per iteration) into the event storage once per ``period``
    iterations, and logs the steady-state speed and the total time when training ends.

    Why not time each step: OneFlow queues work asynchronously, so per-step gaps between
    ``after_step`` calls swing between the time Python takes to queue a step (tens of ms) and
    the time a later wait happens to absorb (seconds), and the work still queued at the end of
    a run is never counted at all. Instead, at the end of every ``period``-th iteration (and of
    the last one) this hook waits for the queued work (:func:`wait_for_queued_work`, one wait
    per period) and reads the clock: ``time`` is the wall time between two such points divided
    by the iterations between them. Everything in between is included: data loading, the step,
    and the hooks (a checkpoint saved or an evaluation run in that period). The figure is put
    with ``smoothing_hint=False``, so writers show it as it is (the period's mean), and the
    ETA and throughput derived from it agree with the wall clock.

    ``period`` should be the writers' period (``DefaultTrainer`` passes ``train.log_period``),
    so the wait happens where the console line reads the losses anyway and costs nothing extra.
    ``Overall training speed`` covers the iterations after the first ``warmup_iter`` (graph
    compilation, allocator warm-up), from a synchronised point at the end of the warm-up (one
    extra wait) to the one at the end of the last iteration.

    Args:
        warmup_iter: iterations left out of the overall speed.
        period: iterations between two measurements (and waits).
        clock: the time source (seconds); tests pass a fake one.
        wait: what waits for queued work (default :func:`wait_for_queued_work`).
        window: accepted for compatibility with earlier versions; ignored.
    """

    def __init__(self, warmup_iter: int = 3, period: int = 20,
                 clock: Callable[[], float] = time.perf_counter,
                 wait: Optional[Callable[[], None]] = None,
                 window: Optional[int] = None) -> None:
        if warmup_iter < 0:
            raise ValueError(f"IterationTimer warmup_iter must be >= 0, got {warmup_iter}")
        if int(period) < 1:
            raise ValueError(f"IterationTimer period must be >= 1 (the log period), got {period}")
        del window
        self._warmup_iter = int(warmup_iter)
        self._period = int(period)
        self._clock = clock
        self._wait = wait or wait_for_queued_work
        self._train_start: Optional[float] = None
        self._mark_time = 0.0  # clock at the last synchronised point
        self._mark_done = 0  # iterations completed at that point
        self._steady_start: Optional[float] = None
        self._steady_from = 0
        self._last_done = 0
        self._last_synced_done = 0
        self._last_synced_time = 0.0

    def before_train(self) -> None:
        self._wait()  # work queued before training (model building) is not the first step's
        self._train_start = self._mark_time = self._clock()
        self._mark_done = 0
        self._steady_start = None
        self._last_done = self._last_synced_done = 0
        self._last_synced_time = self._train_start
        if self._warmup_iter == 0:
            self._steady_start, self._steady_from = self._train_start, 0

    def _synced_now(self) -> float:
        self._wait()
        now = self._clock()
        self._last_synced_done, self._last_synced_time = self._last_done, now
        return now

    def after_step(self) -> None:
        done = self.trainer.iter - self.trainer.start_iter + 1
        self._last_done = done
        boundary = self.every_n_iters(self._period) or self.is_last_iter()
        end_of_warmup = done == self._warmup_iter
        if not (boundary or end_of_warmup):
            return
        now = self._synced_now()
        if end_of_warmup:
            self._steady_start, self._steady_from = now, done
        if boundary and done > self._mark_done:
            per_iter = (now - self._mark_time) / (done - self._mark_done)
            self.trainer.storage.put_scalar("time", per_iter, smoothing_hint=False)
            self._mark_time, self._mark_done = now, done

    def after_train(self) -> None:
        if self._train_start is None:
            return
        if self._last_synced_done != self._last_done:  # stopped early, between two boundaries
            self._synced_now()
        end_done, end_time = self._last_synced_done, self._last_synced_time
        if self._steady_start is not None and end_done > self._steady_from:
            steady = end_time - self._steady_start
            iters = end_done - self._steady_from
            logger.info(
                f"Overall training speed: {iters} iterations in "
                f"{datetime.timedelta(seconds=int(steady))} ({steady / iters:.4f} s / it)"
            )
        self._wait()
        total = self._clock() - self._train_start
        logger.info(f"Total training time: {datetime.timedelta(seconds=int(total))}")
