"""Stops training when the evaluation metric stops improving."""
import logging
import operator
from typing import Any, Dict, Mapping, Optional

from libai.engine.trainer import HookBase

logger = logging.getLogger(__name__)


class EarlyStopping(HookBase):
    """After each evaluation, counts evaluations without improvement of ``val_metric``; after
    ``patience`` of them, asks the trainer to stop (a checkpoint is saved, ``after_train`` runs).

    Place it after :class:`EvalHook`: it reacts to the results the evaluation publishes
    (``eval_period`` is kept for reference). ``min_delta`` is the smallest change that counts.
    The evaluation after the last iteration cannot stop anything and is not counted.
    """

    def __init__(self, eval_period: int, val_metric: str, mode: str = "max", patience: int = 5,
                 min_delta: float = 0.0) -> None:
        if mode not in ("max", "min"):
            raise ValueError(f"mode must be 'max' or 'min', got {mode!r}")
        if patience < 1:
            raise ValueError(f"patience must be >= 1, got {patience}")
        self.eval_period = int(eval_period)
        self.val_metric = val_metric
        self.patience = int(patience)
        self.min_delta = float(min_delta)
        self._better = operator.gt if mode == "max" else operator.lt
        self._sign = 1.0 if mode == "max" else -1.0
        self.best: Optional[float] = None
        self.bad_evals = 0

    def after_step(self) -> None:
        results = self.evaluation_results()
        if results is None or self.val_metric not in results:
            return
        value = float(results[self.val_metric])
        if self.best is None or self._better(value - self._sign * self.min_delta, self.best):
            self.best, self.bad_evals = value, 0
            return
        self.bad_evals += 1
        if self.bad_evals >= self.patience:
            self.trainer.request_stop(
                f"early stopping: {self.val_metric} has not improved on {self.best:.4f} for "
                f"{self.bad_evals} evaluations"
            )

    def state_dict(self) -> Dict[str, Any]:
        return {"best": self.best, "bad_evals": self.bad_evals}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.best = state.get("best")
        self.bad_evals = int(state.get("bad_evals", 0))
