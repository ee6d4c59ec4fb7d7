"""Keeps the checkpoint with the best evaluation metric as ``model_best``."""
import logging
import math
import operator
from typing import Any, Dict, Mapping, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class MetricNotReported(KeyError):
    """``train.evaluation.eval_metric`` names a metric the evaluation did not report."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


class BestCheckpointer(HookBase):
    """After each evaluation, saves ``model_best`` when ``val_metric`` improved.

    Place it after :class:`EvalHook`: it reacts to the results the evaluation publishes for
    the iteration just evaluated (whenever one runs), so ``eval_period`` (LiBai's first
    argument) is kept for reference only. ``mode`` is ``"max"`` (accuracy) or ``"min"``
    (perplexity, loss). A ``val_metric`` the evaluation does not report stops training at the
    first evaluation with :class:`MetricNotReported`, which lists the metrics it did report.
    The exception is the common config's default, ``"Acc@1"``, which a config that evaluates
    something else (perplexity) may never have chosen: as in LiBai, no best model is kept then,
    and a warning says why.
    """

    #: ``configs/common/train.py``'s ``train.evaluation.eval_metric`` (LiBai's too).
    DEFAULT_METRIC = "Acc@1"

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
        self._warned_default = False

    def _maybe_save(self) -> None:
        results = self.evaluation_results()
        if results is None or self.weights_discarded():
            return
        if self.val_metric not in results and self.val_metric == self.DEFAULT_METRIC:
            if not self._warned_default:
                self._warned_default = True
                logger.warning(
                    f"train.evaluation.eval_metric is the default {self.val_metric!r}, which the "
                    f"evaluation does not report (it reports {sorted(results)}): no best model "
                    "is kept. Set train.evaluation.eval_metric to one of those to keep one"
                )
            return
        if self.val_metric not in results:
            # A misspelt metric would otherwise train to the end and never keep a best model.
            raise MetricNotReported(
                f"train.evaluation.eval_metric={self.val_metric!r} is not a metric the evaluation "
                f"reports; it reports {sorted(results)}. Set train.evaluation.eval_metric to one of "
                f"them (e.g. train.evaluation.eval_metric={sorted(results)[0]!r} on the command "
                "line), or change train.evaluation.evaluator"
            )
        value, metric_iter = float(results[self.val_metric]), self.trainer.latest_eval_iter
        if math.isnan(value):
            return
        if self.best_metric is None or self._better(value, self.best_metric):
            previous = self.best_metric
            self.best_metric, self.best_iter = value, metric_iter
            with self.watchdog_phase("checkpoint save", metric_iter):
                self.checkpointer.save(self.file_prefix, tag_last_checkpoint=False, iteration=metric_iter)
            logger.info(
                f"Saved {self.file_prefix} at iteration {metric_iter}: {self.val_metric} = {value:.4f}"
                + ("" if previous is None else f" (previous best {previous:.4f})")
            )

    def after_step(self) -> None:
        self._maybe_save()

    def after_train(self) -> None:
        self._maybe_save()

    def state_dict(self) -> Dict[str, Any]:
        return {"best_metric": self.best_metric, "best_iter": self.best_iter}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best_metric = state.get("best_metric")
        self.best_iter = state.get("best_iter")
