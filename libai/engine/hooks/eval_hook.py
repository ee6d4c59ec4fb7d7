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
    """Calls ``eval_function()`` every ``eval_period`` iterations and after the last one, puts
    the (flattened) results into the event storage under their metric names, tagged with the
    iteration they belong to, and publishes them on the trainer
    (:meth:`~libai.engine.trainer.TrainerBase.publish_evaluation`) for the hooks that react to
    an evaluation (:class:`BestCheckpointer`, :class:`EarlyStopping`).

    Weights a stop asked not to keep (a NaN loss) are not evaluated, and an iteration is
    evaluated once even when training stops right after a periodic evaluation.
    Every process runs the evaluation (it is collective in a parallel run).
    """

    def __init__(self, eval_period: int, eval_function: Callable[[], Mapping[str, Any]],
                 eval_after_train: bool = True) -> None:
        self.eval_period = int(eval_period)
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
        self.trainer.publish_evaluation(iteration, flat)
        dist.synchronize()

    def _periodic_now(self) -> bool:
        # The last iteration is evaluated by ``after_train`` instead (also when stopped early).
        return self.every_n_iters(self.eval_period) and not self.is_last_iter()

    def keeps_weights(self) -> bool:
        return self._periodic_now() or (self._eval_after_train and self.is_last_iter())

    def after_step(self) -> None:
        if self._periodic_now() and not self.weights_discarded():
            self._do_eval(self.trainer.iter)

    def after_train(self) -> None:
        finished = self.trainer.iter >= self.trainer.max_iter
        stopped = self.trainer.stop_reason is not None
        if self.weights_discarded() or not (self._eval_after_train and (finished or stopped)):
            return
        last = self.trainer.iter - 1  # after the loop ``iter`` counts completed iterations
        if self.trainer.latest_eval_iter != last:
            self._do_eval(last)
