"""Runs the evaluation every ``eval_period`` iterations and at the end."""
import logging
from typing import Any, Callable, Dict, Mapping

from libai.engine.trainer import HookBase
from libai.utils import distributed as dist

logger = logging.getLogger(__name__)


def flatten_results(results: Mapping[str, Any], prefix: str = "") -> Dict[str, float]:
    """``{"ds": {"Acc@1": 90}}`` → ``{"ds/Acc@1": 90}``; a single level stays as is."""
    flat: Dict[str, float] = {}
    for key, value in results.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(flatten_results(value, prefix=f"{name}/"))
        else:
            flat[name] = float(value)
    return flat


class EvalHook(HookBase):
    """Calls ``eval_function()`` every ``eval_period`` iterations and after the last one, and
    puts the (flattened) results into the event storage under their metric names, tagged with
    the iteration they belong to.

    Every process runs the evaluation (it is collective in a parallel run).
    """

    def __init__(self, eval_period: int, eval_function: Callable[[], Mapping[str, Any]],
                 eval_after_train: bool = True) -> None:
        self._period = int(eval_period)
        self._func = eval_function
        self._eval_after_train = eval_after_train
        self.last_results: Dict[str, float] = {}

    def _do_eval(self, iteration: int) -> None:
        results = self._func()
        if not results:
            return
        if not isinstance(results, Mapping):
            raise TypeError(f"the evaluation function returned {type(results).__name__}, expected a dict")
        flat = flatten_results(results)
        self.last_results = flat
        self.trainer.storage.put_scalars(smoothing_hint=False, cur_iter=iteration, **flat)
        dist.synchronize()

    def after_step(self) -> None:
        nxt = self.trainer.iter + 1
        if self._period > 0 and nxt % self._period == 0 and nxt != self.trainer.max_iter:
            self._do_eval(self.trainer.iter)

    def after_train(self) -> None:
        finished = self.trainer.iter >= self.trainer.max_iter
        stopped = self.trainer.stop_reason is not None
        if stopped and not self.trainer.checkpoint_on_stop:
            return  # the weights are broken (e.g. a NaN loss): nothing worth evaluating
        if self._eval_after_train and (finished or stopped):
            # After the loop ``iter`` counts completed iterations; the results belong to the last.
            self._do_eval(self.trainer.iter - 1)
