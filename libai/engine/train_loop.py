"""The training loop: the hook interface and the loop that calls hooks around each step.

This module knows nothing of configs, models, files or how a step is made. :class:`HookBase`
is what observes (or steers) training at fixed points; :class:`TrainerBase` owns the hook list,
the iteration counter, the event storage and ``train(start_iter, max_iter)``, and leaves
``run_step`` to a subclass (the step runners in :mod:`libai.engine.step_runners`, or
``DefaultTrainer``, which delegates to one). LiBai's import path for both is
:mod:`libai.engine.trainer`.
"""
import logging
import weakref
from typing import Any, Dict, Iterable, List, Mapping, Optional

import oneflow as flow

from libai.engine.watchdog import NO_WATCHDOG
from libai.utils import distributed as dist
from libai.utils.events import EventStorage, get_event_storage

__all__ = ["HookBase", "TrainerBase"]

# the loop's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.engine.trainer")


class HookBase:
    """Something that observes (or steers) training at fixed points of the loop.

    Order of events: ``before_train``, then per iteration ``before_step``, ``after_backward``
    (Eager mode: gradients are ready, the optimizer has not stepped; Graph mode: after the
    compiled step, as gradients live inside the graph), ``after_step``; finally ``after_train``
    (also when training stops early or fails). ``self.trainer`` is a weak proxy to the trainer,
    set when the hook is registered. A hook that has state worth resuming returns it from
    ``state_dict`` and it is saved in checkpoints.

    The cadence questions every periodic hook asks ("is this the n-th iteration", "is it the
    last", "did an evaluation just run", "are this iteration's weights being thrown away") are
    answered by the helpers below, about the iteration in progress (in ``after_train``: the
    last one completed), so that all hooks mean the same by them.
    """

    trainer: Any = None

    def watchdog_phase(self, phase: str, index: int) -> Any:
        """A context marking ``phase`` for the trainer's hang watchdog (a checkpoint save...);
        nothing when the hook is not registered or the trainer has no watchdog."""
        return getattr(self.trainer, "watchdog", NO_WATCHDOG).phase(phase, index)

    @property
    def name(self) -> str:
        """The name other hooks are ordered against (the class name)."""
        return type(self).__name__

    def before_train(self) -> None:
        pass

    def after_train(self) -> None:
        pass

    def before_step(self) -> None:
        pass

    def after_backward(self) -> None:
        pass

    def after_step(self) -> None:
        pass

    def state_dict(self) -> Dict[str, Any]:
        return {}

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        pass

    # ------------------------------------------------------------------ cadence helpers
    def every_n_iters(self, n: int) -> bool:
        """Whether the iteration in progress completes a multiple of ``n`` iterations (counted
        from iteration 0, so a resumed run keeps the schedule). ``n <= 0`` means never."""
        return n > 0 and (self.trainer.iter + 1) % n == 0

    def is_last_iter(self) -> bool:
        """Whether the iteration in progress is the last one of the run (``max_iter - 1``)."""
        return self.trainer.iter + 1 >= self.trainer.max_iter

    def weights_discarded(self) -> bool:
        """Whether a stop asked not to keep this iteration's weights (e.g. a NaN loss): nothing
        should save or evaluate them."""
        return self.trainer.stop_reason is not None and not self.trainer.checkpoint_on_stop

    def evaluation_results(self) -> Optional[Dict[str, float]]:
        """The results an evaluation published for the iteration in progress (see
        :meth:`TrainerBase.publish_evaluation`), or None when none ran for it. Hooks placed after
        :class:`~libai.engine.hooks.EvalHook` react to evaluations through this."""
        trainer = self.trainer
        if trainer.latest_eval_iter is None or trainer.latest_eval_iter != trainer.storage.iter:
            return None
        return trainer.latest_eval_results

    def keeps_weights(self) -> bool:
        """Whether this hook saves or evaluates the weights of the iteration in progress (in its
        ``after_step``, or in ``after_train`` after the last iteration). Hooks that must look at
        a step before its weights are kept (the NaN check) ask every hook this; a hook that
        saves or evaluates on its own schedule answers it."""
        return False


class TrainerBase:
    """A loop over iterations that calls hooks around an abstract ``run_step``.

    Attributes:
        iter: the current iteration (after ``train`` returns: the number of iterations run).
        start_iter, max_iter: the bounds given to ``train``.
        storage: the :class:`EventStorage` in use during ``train``.
        latest_eval_results, latest_eval_iter: what the latest evaluation reported, and the
            iteration whose weights it evaluated (set by :meth:`publish_evaluation`).
    """

    # marks each training step (``before_step`` and ``run_step``) for hang detection
    # (:mod:`libai.engine.watchdog`); a no-op unless a trainer sets one (DefaultTrainer does)
    watchdog: Any = NO_WATCHDOG

    def __init__(self) -> None:
        self._hooks: List[HookBase] = []
        self.iter: int = 0
        self.start_iter: int = 0
        self.max_iter: int = 0
        self.storage: Optional[EventStorage] = None
        self.stop_reason: Optional[str] = None
        self.checkpoint_on_stop: bool = True
        self.stop_failed: bool = False
        self.latest_eval_results: Dict[str, float] = {}
        self.latest_eval_iter: Optional[int] = None
        # Metric histories from a checkpoint, applied when ``train`` opens its storage, so that
        # smoothed values logged after a resume equal those of the uninterrupted run.
        self._storage_state: Optional[Mapping[str, Any]] = None
        # The object whose hooks receive ``after_backward``; a composing trainer points this
        # at itself so that its hooks see events from the step runner it holds.
        self.hook_owner: Any = self

    # ------------------------------------------------------------------ hooks
    @property
    def hooks(self) -> List[HookBase]:
        return list(self._hooks)

    def register_hooks(
        self,
        hooks: Iterable[Optional[HookBase]],
        before: Optional[str] = None,
        after: Optional[str] = None,
    ) -> None:
        """Add hooks at the end, or just before/after the hook named ``before``/``after``.

        Order is what you declare: ``register_hooks([MyHook()], after="LRScheduler")``.
        """
        hooks = [h for h in hooks if h is not None]
        if before is not None and after is not None:
            raise ValueError("give at most one of before= and after=")
        for h in hooks:
            if not isinstance(h, HookBase):
                raise TypeError(f"{type(h).__name__} is not a HookBase; subclass libai.engine.trainer.HookBase")
            h.trainer = weakref.proxy(self)
        anchor = before or after
        if anchor is None:
            self._hooks.extend(hooks)
            return
        names = [h.name for h in self._hooks]
        if anchor not in names:
            raise ValueError(f"no registered hook named {anchor!r}; registered hooks are {names}")
        index = names.index(anchor) + (1 if after is not None else 0)
        self._hooks[index:index] = hooks

    def get_hook(self, name: str) -> Optional[HookBase]:
        for h in self._hooks:
            if h.name == name:
                return h
        return None

    @property
    def runner(self) -> "TrainerBase":
        """The object whose ``run_step`` makes the updates: this trainer itself, unless it
        delegates steps to a step runner (``DefaultTrainer``)."""
        return self

    # ------------------------------------------------------------------ what hooks publish
    def publish_evaluation(self, iteration: int, results: Mapping[str, float]) -> None:
        """Record that the weights of ``iteration`` were evaluated with ``results`` (flat metric
        names), for the hooks that react to evaluations (best checkpoint, early stopping)."""
        self.latest_eval_results = dict(results)
        self.latest_eval_iter = int(iteration)

    # ------------------------------------------------------------------ stopping
    def request_stop(self, reason: str, save_checkpoint: bool = True, failed: bool = False) -> None:
        """Ask the loop to end after the current iteration; ``after_train`` still runs.

        The clean way for a hook to stop training (early stopping, preemption, a NaN loss).
        ``save_checkpoint=False`` keeps the weights of this iteration out of the checkpoints
        (a NaN loss): the last good checkpoint stays the newest. ``failed=True`` marks the run
        as failed (a NaN loss), so that the program ends with an error (``stop_failed``).
        """
        if self.stop_reason is None:
            self.stop_reason = reason
            self.checkpoint_on_stop = save_checkpoint
            self.stop_failed = failed
            logger.warning(f"Stopping training after iteration {self.iter}: {reason}")

    # ------------------------------------------------------------------ the loop
    def train(self, start_iter: int, max_iter: int) -> None:
        """Run iterations ``start_iter .. max_iter - 1`` with hooks around each."""
        logger.info(f"Starting training from iteration {start_iter}")
        self.iter = self.start_iter = start_iter
        self.max_iter = max_iter
        self.stop_reason = None
        self.checkpoint_on_stop = True
        self.stop_failed = False
        self.latest_eval_results, self.latest_eval_iter = {}, None
        with EventStorage(start_iter) as self.storage:
            if self._storage_state is not None:
                self.storage.load_state_dict(self._storage_state)
                self.storage.iter = start_iter
                self._storage_state = None
            try:
                self.before_train()
                watchdog = self.watchdog
                for self.iter in range(start_iter, max_iter):
                    watchdog.begin("training step", self.iter)
                    self.before_step()
                    self.run_step()
                    watchdog.end()
                    self.after_step()
                    if self.stop_reason is not None:
                        break
                # After the loop, ``iter`` counts completed iterations (hooks read it).
                self.iter += 1
            except Exception:
                logger.exception("Exception during training:")
                raise
            finally:
                self.after_train()

    def before_train(self) -> None:
        for h in self._hooks:
            h.before_train()

    def after_train(self) -> None:
        # The last completed iteration: what end-of-training writes belong to.
        self.storage.iter = self.iter - 1
        for h in self._hooks:
            h.after_train()

    def before_step(self) -> None:
        self.storage.iter = self.iter
        for h in self._hooks:
            h.before_step()

    def after_backward(self) -> None:
        for h in self._hooks:
            h.after_backward()

    def after_step(self) -> None:
        for h in self._hooks:
            h.after_step()

    def run_step(self) -> None:
        raise NotImplementedError("a trainer must implement run_step()")

    @staticmethod
    def write_metrics(loss_dict: Mapping[str, Any], data_time: float, prefix: str = "") -> None:
        """Put the losses (every ``*loss*`` entry, and ``total_loss``, their sum) and the data
        time into the current event storage; ``prefix`` is put before ``total_loss``.

        Loss tensors are stored as they are (converted to numbers only when a writer reads
        them), so logging does not force a device synchronisation every step.
        """
        storage = get_event_storage()
        storage.put_scalar("data_time", data_time)
        local = {k: _scalar_for_logging(v) for k, v in loss_dict.items() if "loss" in k}
        if len(local) > 1 or "total_loss" not in local:
            total = None
            for v in local.values():
                total = v if total is None else total + v
            storage.put_scalar(f"{prefix}total_loss", total)
        for k, v in local.items():
            storage.put_scalar(k, v)

    # ------------------------------------------------------------------ state
    def state_dict(self) -> Dict[str, Any]:
        state: Dict[str, Any] = {"iteration": self.iter}
        if self.storage is not None:
            state["storage"] = self.storage.state_dict()
        hooks_state = {}
        for h in self._hooks:
            s = h.state_dict()
            if s:
                hooks_state[h.name] = s
        if hooks_state:
            state["hooks"] = hooks_state
        return state

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        self.iter = int(state["iteration"])
        self._storage_state = state.get("storage")
        for name, value in state.get("hooks", {}).items():
            hook = self.get_hook(name)
            if hook is None:
                logger.warning(f"checkpoint has state for hook {name!r}, which this run does not have")
            else:
                hook.load_state_dict(value)



def _scalar_for_logging(value: Any) -> Any:
    if isinstance(value, flow.Tensor):
        value = value.detach()
        if value.is_global:
            value = dist.ttol(value)
        if value.numel() != 1:
            value = value.mean()
    return value
