"""Steps the learning-rate scheduler and records the learning rate."""
from typing import Any, Optional

from libai.engine.trainer import HookBase


class LRScheduler(HookBase):
    """After each iteration: put ``lr`` (the rate the iteration used) and step the scheduler.

    In Graph mode the schedule is compiled into the graph; stepping the Python scheduler too
    keeps its state (saved in checkpoints) and the logged ``lr`` in step with the graph's.
    """

    def __init__(self, optimizer: Any = None, scheduler: Any = None) -> None:
        self._optimizer = optimizer
        self._scheduler = scheduler

    def before_train(self) -> None:
        self._optimizer = self._optimizer or self.trainer.optimizer
        self._scheduler = self._scheduler or self.trainer.lr_scheduler

    def after_step(self) -> None:
        lr = _first_group_lr(self._optimizer)
        self.trainer.storage.put_scalar("lr", lr, smoothing_hint=False)
        self._scheduler.step()

    @property
    def scheduler(self) -> Any:
        return self._scheduler


def _first_group_lr(optimizer: Any) -> Optional[float]:
    group = optimizer.param_groups[0]
    return float(group["lr"])
