"""The training loop: hooks, a loop that calls them, and the two step runners.

This module knows nothing of configs, models or files. :class:`TrainerBase` owns the hook list,
the iteration counter and ``train(start_iter, max_iter)``; :class:`EagerTrainer` and
:class:`GraphTrainer` each implement one ``run_step``: fetch a batch, place it, run the model
(or the compiled graph), and let an :class:`~libai.engine.optimizer_step.OptimizerStep` apply
the update. ``DefaultTrainer`` (in :mod:`libai.engine.default_trainer`) composes them from a config.

The runners follow LiBai's contract, so a runner written from LiBai's "Training" guide works:
``run_step(get_batch, input_placement_device)`` receives ``DefaultTrainer.get_batch`` (which
turns a loader batch into the model's keyword arguments), and a subclass finds ``model``,
``data_loader``, ``_data_loader_iter``, ``optimizer``, ``grad_acc_steps`` and
``write_metrics(loss_dict, data_time)``. Called without arguments, ``run_step()`` places batches
with the runner's own layout.
"""
import contextlib
import inspect
import logging
import time
import weakref
from typing import Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional

import oneflow as flow

from libai.engine.batch import check_fields_match, place_batch, split_batch
from libai.engine.optimizer_step import OptimizerStep
from libai.utils import distributed as dist
from libai.utils.events import EventStorage, get_event_storage

__all__ = ["HookBase", "TrainerBase", "EagerTrainer", "GraphTrainer", "sum_losses", "call_run_step"]

logger = logging.getLogger(__name__)

# ``get_batch(data, input_placement_device, mixup_func) -> model keyword arguments``
GetBatch = Callable[..., Dict[str, Any]]


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
                for self.iter in range(start_iter, max_iter):
                    self.before_step()
                    self.run_step()
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


def call_run_step(runner: Any, get_batch: GetBatch, input_placement_device: Optional[str]) -> None:
    """Call ``runner.run_step`` the way its signature asks for.

    LiBai's contract passes ``(get_batch, input_placement_device)``; LiBai's guide also shows
    ``run_step(self, get_batch)``, and libai's own runners and older subclasses take nothing.
    Each receives as many of the two as it has positional parameters for.
    """
    run_step = runner.run_step
    args = (get_batch, input_placement_device)
    run_step(*args[:_positional_count(run_step)])


def _positional_count(function: Callable[..., Any]) -> int:
    """Positional parameters of a bound method or function (at most the two LiBai passes)."""
    params = inspect.signature(function).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_POSITIONAL for p in params):
        return 2
    positional = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)
    return min(2, sum(p.kind in positional for p in params))


def sum_losses(outputs: Any) -> flow.Tensor:
    """The total loss of a model's training output: the sum of every ``*loss*`` entry.

    A model must return a dict holding at least one entry whose name contains ``loss``
    when it is training and labels are given.
    """
    if not isinstance(outputs, Mapping):
        raise TypeError(
            f"the model returned a {type(outputs).__name__} in training; it must return a dict with "
            "its loss, e.g. {'losses': loss} (or several '*loss*' entries, which are summed)"
        )
    losses = [v for k, v in outputs.items() if "loss" in k]
    if not losses:
        raise ValueError(
            f"the model's training output has keys {sorted(outputs)} but no loss. In training mode "
            "with labels given, forward must return e.g. {'losses': loss}; check that the labels "
            "field reaches forward (Instance field names must equal forward's argument names)"
        )
    total = losses[0]
    for v in losses[1:]:
        total = total + v
    return total


class _StepRunner(TrainerBase):
    """What the Eager and Graph runners share: the data iterator, placing a batch, metrics."""

    def __init__(self, data_loader: Iterable, layout: Optional[dist.ParallelLayout] = None) -> None:
        super().__init__()
        self.data_loader = data_loader
        self._data_iter: Optional[Iterator[Any]] = None
        self.layout = layout
        self._fields_checked = False
        self.grad_acc_steps = 1
        self._grad_acc_from_owner = False

    @property
    def _data_loader_iter(self) -> Iterator[Any]:
        """The loader's iterator (LiBai's name), created on first use so that a checkpoint can
        position the loader's sampler before any batch is drawn."""
        if self._data_iter is None:
            self._data_iter = iter(self.data_loader)
        return self._data_iter

    @_data_loader_iter.setter
    def _data_loader_iter(self, iterator: Iterator[Any]) -> None:
        self._data_iter = iterator

    def next_batch(self) -> Any:
        """The next batch from the loader."""
        return next(self._data_loader_iter)

    def connect(self, owner: TrainerBase) -> None:
        """Become ``owner``'s step runner: its hooks receive ``after_backward``, batches are
        placed with its layout unless this runner was given one, and ``grad_acc_steps=None``
        becomes the accumulation ``owner`` resolved (LiBai code passes
        ``cfg.train.num_accumulation_steps``, which libai leaves ``None`` to be derived)."""
        self.hook_owner = owner
        if self.layout is None:
            self.layout = getattr(owner, "layout", None)
        resolved = getattr(getattr(owner, "optimizer_step", None), "grad_acc_steps", None)
        if self._grad_acc_from_owner and resolved is not None:
            self._grad_acc_from_owner = False
            self._set_grad_acc_steps(int(resolved))

    def _set_grad_acc_steps(self, steps: int) -> None:
        self.grad_acc_steps = steps

    def forward_module(self) -> Optional[flow.nn.Module]:
        """The module whose ``forward`` receives the batch (for the field-name check)."""
        return None

    def place(self, batch: Any, get_batch: Optional[GetBatch] = None,
              input_placement_device: Optional[str] = None) -> Dict[str, Any]:
        """Turn a loader batch into the keyword arguments of the model: with ``get_batch``
        (LiBai's ``get_batch(data, input_placement_device, mixup_func)``), else by this
        runner's layout."""
        if get_batch is not None:
            with self.layout if self.layout is not None else contextlib.nullcontext():
                inputs = get_batch(batch, input_placement_device, getattr(self.data_loader, "mixup_func", None))
        else:
            inputs = place_batch(batch, self.layout, input_placement_device)
        if not self._fields_checked:
            check_fields_match(self.forward_module(), list(inputs))
            self._fields_checked = True
        return inputs


def _scalar_for_logging(value: Any) -> Any:
    if isinstance(value, flow.Tensor):
        value = value.detach()
        if value.is_global:
            value = dist.ttol(value)
        if value.numel() != 1:
            value = value.mean()
    return value


class EagerTrainer(_StepRunner):
    """Eager-mode steps: forward, backward and the optimizer update in Python.

    With ``grad_acc_steps > 1`` the loader's batch (``micro × grad_acc_steps`` samples per
    data-parallel rank) is split into micro-batches whose gradients accumulate before one update;
    the losses logged are the average over the micro-batches (``grad_acc_steps=None``: as many
    as the ``DefaultTrainer`` holding this runner resolved). The update is made by
    ``optimizer_step`` (AMP, accumulation, clipping, skipping non-finite steps); a runner built
    without one gets a plain one, which ``DefaultTrainer`` replaces with its configured one when
    both drive the same optimizer with the same accumulation.
    """

    def __init__(
        self,
        model: flow.nn.Module,
        data_loader: Iterable,
        optimizer: flow.optim.Optimizer,
        grad_acc_steps: Optional[int] = 1,
        optimizer_step: Optional[OptimizerStep] = None,
        layout: Optional[dist.ParallelLayout] = None,
    ) -> None:
        super().__init__(data_loader, layout=layout)
        model.train()
        self.model = model
        self.optimizer = optimizer
        self._grad_acc_from_owner = grad_acc_steps is None and optimizer_step is None
        if grad_acc_steps is None:
            grad_acc_steps = optimizer_step.grad_acc_steps if optimizer_step is not None else 1
        self.grad_acc_steps = int(grad_acc_steps)
        self._default_optimizer_step = optimizer_step is None
        self.optimizer_step = optimizer_step or OptimizerStep(optimizer, grad_acc_steps=self.grad_acc_steps)
        if self.optimizer_step.grad_acc_steps != self.grad_acc_steps:
            raise ValueError(
                f"grad_acc_steps ({self.grad_acc_steps}) differs from the OptimizerStep's "
                f"({self.optimizer_step.grad_acc_steps})"
            )

    def connect(self, owner: TrainerBase) -> None:
        """Also take ``owner``'s configured :class:`OptimizerStep` in place of the plain one
        this runner made for itself, when it updates the same optimizer the same way."""
        super().connect(owner)
        step = getattr(owner, "optimizer_step", None)
        if (self._default_optimizer_step and isinstance(step, OptimizerStep)
                and step.optimizer is self.optimizer and step.grad_acc_steps == self.grad_acc_steps):
            self.optimizer_step = step
            self._default_optimizer_step = False

    def _set_grad_acc_steps(self, steps: int) -> None:
        super()._set_grad_acc_steps(steps)
        if self._default_optimizer_step:
            self.optimizer_step = OptimizerStep(self.optimizer, grad_acc_steps=steps)

    def forward_module(self) -> Optional[flow.nn.Module]:
        return self.model

    def run_step(self, get_batch: Optional[GetBatch] = None, input_placement_device: Optional[str] = None) -> None:
        """One update: a loader batch, split into ``grad_acc_steps`` micro-batches, each placed
        (by ``get_batch`` when given), forward and backward; then the optimizer step."""
        start = time.perf_counter()
        batch = self.next_batch()
        data_time = time.perf_counter() - start
        micro_batches = split_batch(batch, self.grad_acc_steps)
        summed: Dict[str, Any] = {}
        for micro in micro_batches:
            inputs = self.place(micro, get_batch, input_placement_device)
            with self.optimizer_step.autocast():
                outputs = self.model(**inputs)
            loss = sum_losses(outputs)
            self.optimizer_step.backward(loss)
            for k, v in outputs.items():
                if "loss" in k:
                    v = v.detach()
                    summed[k] = v if k not in summed else summed[k] + v
        self.hook_owner.after_backward()
        self.optimizer_step.step()
        n = len(micro_batches)
        self.write_metrics({k: v / n for k, v in summed.items()} if n > 1 else summed, data_time)


class GraphTrainer(_StepRunner):
    """Static-graph steps: the compiled ``nn.Graph`` runs forward, backward and the update.

    ``graph`` is a training graph (see :class:`libai.engine.graph.GraphBase`) whose call
    returns the model's loss dict. Gradient accumulation, AMP and clipping are configured in
    the graph by the same :class:`OptimizerStep` the Eager path uses, and the loader yields
    the whole step (``micro × grad_acc_steps`` samples per rank), so one batch is one call;
    ``grad_acc_steps`` is kept for code that reads it (``None``: what the trainer resolved).
    """

    def __init__(
        self,
        graph: flow.nn.Graph,
        data_loader: Iterable,
        grad_acc_steps: Optional[int] = 1,
        layout: Optional[dist.ParallelLayout] = None,
    ) -> None:
        super().__init__(data_loader, layout=layout)
        self.graph = graph
        self._grad_acc_from_owner = grad_acc_steps is None
        self.grad_acc_steps = 1 if grad_acc_steps is None else int(grad_acc_steps)

    def forward_module(self) -> Optional[flow.nn.Module]:
        model = getattr(self.graph, "model", None)
        return model.to(flow.nn.Module) if model is not None and hasattr(model, "to") else None

    def run_step(self, get_batch: Optional[GetBatch] = None, input_placement_device: Optional[str] = None) -> None:
        """One call of the compiled step on the next loader batch."""
        start = time.perf_counter()
        batch = self.next_batch()
        data_time = time.perf_counter() - start
        inputs = self.place(batch, get_batch, input_placement_device)
        loss_dict = self.graph(**inputs)
        self.hook_owner.after_backward()
        self.write_metrics(loss_dict, data_time)
