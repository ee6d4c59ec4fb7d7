"""Keeps the checkpoint with the best evaluation metric as ``model_best``."""
import logging
import math
import operator
from typing import Any, Dict, Mapping, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class BestCheckpointer(HookBase):
    """After each evaluation, saves ``model_best`` when ``val_metric`` improved.

    Place it after :class:`EvalHook`: it reads the metric the evaluation just put into the
    event storage. ``mode`` is ``"max"`` (accuracy) or ``"min"`` (perplexity, loss).
    """

    def __init__(self, eval_period: int, checkpointer: Any, val_metric: str, mode: str = "max",
                 file_prefix: str = "model_best") -> None:
        if mode not in ("max", "min"):
            raise ValueError(f"train.evaluation.eval_mode must be 'max' or 'min', got {mode!r}")
        self.eval_period = int(eval_period)
        self.checkpointer = checkpointer
        self.val_metric = val_metric
        self.mode = mode
        self._better = operator.gt if mode == "max" else operator.lt
        self.file_prefix = file_prefix
        self.best_metric: Optional[float] = None
        self.best_iter: Optional[int] = None

    def _maybe_save(self) -> None:
        if self.trainer.stop_reason is not None and not self.trainer.checkpoint_on_stop:
            return
        latest = self.trainer.storage.latest()
        if self.val_metric not in latest:
            names = sorted(k for k in latest if k not in ("time", "data_time", "lr"))
            logger.warning(
                f"BestCheckpointer: metric {self.val_metric!r} was not reported by the evaluation; "
                f"reported: {names}. Set train.evaluation.eval_metric to one of them."
            )
            return
        value, metric_iter = latest[self.val_metric]
        value = float(value)
        if math.isnan(value):
            return
        if self.best_metric is None or self._better(value, self.best_metric):
            previous = self.best_metric
            self.best_metric, self.best_iter = value, metric_iter
            self.checkpointer.save(self.file_prefix, tag_last_checkpoint=False, iteration=metric_iter)
            logger.info(
                f"Saved {self.file_prefix} at iteration {metric_iter}: {self.val_metric} = {value:.4f}"
                + ("" if previous is None else f" (previous best {previous:.4f})")
            )

    def after_step(self) -> None:
        nxt = self.trainer.iter + 1
        if self.eval_period > 0 and nxt % self.eval_period == 0 and nxt != self.trainer.max_iter:
            self._maybe_save()

    def after_train(self) -> None:
        if self.trainer.iter >= self.trainer.max_iter or self.trainer.stop_reason is not None:
            self._maybe_save()

    def state_dict(self) -> Dict[str, Any]:
        return {"best_metric": self.best_metric, "best_iter": self.best_iter}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best_metric = state.get("best_metric")
        self.best_iter = state.get("best_iter")
