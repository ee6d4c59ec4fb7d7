"""Sends the event storage to writers (console, metrics.json, TensorBoard) periodically."""
from typing import Any, Sequence

from libai.engine.trainer import HookBase


class PeriodicWriter(HookBase):
    """Calls every writer's ``write()`` each ``period`` iterations, after the last iteration,
    and once more (then ``close()``) when training ends."""

    def __init__(self, writers: Sequence[Any], period: int = 20) -> None:
        self._writers = list(writers)
        self._period = max(1, int(period))

    def after_step(self) -> None:
        if self.every_n_iters(self._period) or self.is_last_iter():
            for writer in self._writers:
                writer.write()

    def after_train(self) -> None:
        for writer in self._writers:
            # One last write so results put after the final step (the last evaluation) land.
            writer.write()
            writer.close()
