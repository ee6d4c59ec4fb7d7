"""The training loop: hooks, a loop that calls them, and the two step runners.

This module knows nothing of configs, models or files. :class:`TrainerBase` owns the hook list,
the iteration counter and ``train(start_iter, max_iter)``; :class:`EagerTrainer` and
:class:`GraphTrainer` each implement one ``run_step``: fetch a batch, place it, run the model
(or the compiled graph), and let an :class:`~libai.engine.optimizer_step.OptimizerStep` apply
the update. ``DefaultTrainer`` (in :mod:`libai.engine.default`) composes them from a config.
"""
import inspect
import logging
import time
import weakref
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Sequence

import oneflow as flow

from libai.engine.optimizer_step import OptimizerStep
from libai.utils import distributed as dist
from libai.utils.events import EventStorage, get_event_storage

__all__ = ["HookBase", "TrainerBase", "EagerTrainer", "GraphTrainer", "sum_losses"]

logger = logging.getLogger(__name__)


class HookBase:
    """Something that observes (or steers) training at fixed points of the loop.

    Order of events: ``before_train``, then per iteration ``before_step``, ``after_backward``
    (Eager mode: gradients are ready, the optimizer has not stepped; Graph mode: after the
    compiled step, as gradients live inside the graph), ``after_step``; finally ``after_train``
    (also when training stops early or fails). ``self.trainer`` is a weak proxy to the trainer,
    set when the hook is registered. A hook that has state worth resuming returns it from
    ``state_dict`` and it is saved in checkpoints.
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


class TrainerBase:
    """A loop over iterations that calls hooks around an abstract ``run_step``.

    Attributes:
        iter: the current iteration (after ``train`` returns: the number of iterations run).
        start_iter, max_iter: the bounds given to ``train``.
        storage: the :class:`EventStorage` in use during ``train``.
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

    def __init__(self, data_loader: Iterable, layout: Optional[dist.ParallelLayout] = None,
                 get_batch: Optional[Callable[[Any], Dict[str, Any]]] = None) -> None:
        super().__init__()
        self.data_loader = data_loader
        self._data_iter: Optional[Any] = None
        self.layout = layout
        self.get_batch = get_batch
        self._fields_checked = False

    def next_batch(self) -> Any:
        """The next batch from the loader (the iterator is created on first use, so the loader's
        sampler can be positioned by a checkpoint before any batch is drawn)."""
        if self._data_iter is None:
            self._data_iter = iter(self.data_loader)
        return next(self._data_iter)

    def forward_module(self) -> Optional[flow.nn.Module]:
        """The module whose ``forward`` receives the batch (for the field-name check)."""
        return None

    def place(self, batch: Any) -> Dict[str, Any]:
        """Turn a loader batch into the keyword arguments of the model."""
        if self.get_batch is not None:
            inputs = self.get_batch(batch)
        elif hasattr(batch, "to_global"):
            if self.layout is None:
                raise RuntimeError("the step runner has no layout to place the batch with; pass layout=")
            inputs = batch.to_global(self.layout).get_fields()
        elif isinstance(batch, Mapping):
            inputs = dict(batch)
        else:
            raise TypeError(
                f"cannot turn a batch of type {type(batch).__name__} into model inputs; yield "
                "libai.data.Instance batches or pass get_batch="
            )
        if not self._fields_checked:
            check_fields_match(self.forward_module(), list(inputs))
            self._fields_checked = True
        return inputs

    def write_metrics(self, loss_dict: Mapping[str, Any], data_time: float) -> None:
        """Put the losses and data time into the current event storage.

        Loss tensors are stored as they are (converted to numbers only when a writer reads
        them), so logging does not force a device synchronisation every step.
        """
        storage = get_event_storage()
        storage.put_scalar("data_time", data_time)
        losses = {k: v for k, v in loss_dict.items() if "loss" in k}
        local = {k: _scalar_for_logging(v) for k, v in losses.items()}
        if len(local) > 1 or "total_loss" not in local:
            total = None
            for v in local.values():
                total = v if total is None else total + v
            storage.put_scalar("total_loss", total)
        for k, v in local.items():
            storage.put_scalar(k, v)


def check_fields_match(module: Optional[flow.nn.Module], names: Sequence[str]) -> None:
    """Fail early, listing both sides, when batch field names do not fit ``module.forward``."""
    if module is None:
        return
    params = inspect.signature(module.forward).parameters.values()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params):
        return
    accepted = [p.name for p in params if p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                                       inspect.Parameter.KEYWORD_ONLY)]
    required = [p.name for p in params if p.default is inspect.Parameter.empty
                and p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)]
    unknown = [n for n in names if n not in accepted]
    missing = [n for n in required if n not in names]
    if unknown or missing:
        raise TypeError(
            f"the batch fields {list(names)} do not match {type(module).__name__}.forward"
            f"({', '.join(accepted)}): "
            + (f"no argument for {unknown}" if unknown else "")
            + ("; " if unknown and missing else "")
            + (f"no field for required {missing}" if missing else "")
            + ". The Dataset's Instance keyword names must equal forward's argument names."
        )


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
    the losses logged are the average over the micro-batches.
    """

    def __init__(
        self,
        model: flow.nn.Module,
        data_loader: Iterable,
        optimizer: flow.optim.Optimizer,
        grad_acc_steps: int = 1,
        optimizer_step: Optional[OptimizerStep] = None,
        layout: Optional[dist.ParallelLayout] = None,
        get_batch: Optional[Callable[[Any], Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(data_loader, layout=layout, get_batch=get_batch)
        model.train()
        self.model = model
        self.optimizer = optimizer
        self.grad_acc_steps = int(grad_acc_steps)
        self.optimizer_step = optimizer_step or OptimizerStep(optimizer, grad_acc_steps=grad_acc_steps)
        if self.optimizer_step.grad_acc_steps != self.grad_acc_steps:
            raise ValueError(
                f"grad_acc_steps ({self.grad_acc_steps}) differs from the OptimizerStep's "
                f"({self.optimizer_step.grad_acc_steps})"
            )

    def forward_module(self) -> Optional[flow.nn.Module]:
        return self.model

    def run_step(self) -> None:
        start = time.perf_counter()
        batch = self.next_batch()
        data_time = time.perf_counter() - start
        micro_batches = _split_batch(batch, self.grad_acc_steps)
        summed: Dict[str, Any] = {}
        for micro in micro_batches:
            inputs = self.place(micro)
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


def _split_batch(batch: Any, parts: int) -> List[Any]:
    """Split an Instance batch into ``parts`` equal micro-batches along the batch dim."""
    if parts == 1:
        return [batch]
    from libai.data.structures import DistTensorData, Instance

    if not isinstance(batch, Instance):
        raise TypeError("gradient accumulation in eager mode needs Instance batches to split")
    size = batch.batch_size()
    if size is None or size % parts != 0:
        raise ValueError(
            f"a batch of {size} samples cannot be split into {parts} equal micro-batches; the "
            "loader must yield train_micro_batch_size × num_accumulation_steps samples per rank"
        )
    step = size // parts
    out = []
    for i in range(parts):
        micro = Instance()
        for name, value in batch.get_fields().items():
            if isinstance(value, DistTensorData):
                micro.set(name, DistTensorData(value.tensor[i * step:(i + 1) * step], value.sbp_list, value.placement_idx))
            elif isinstance(value, flow.Tensor):
                micro.set(name, value[i * step:(i + 1) * step])
            elif isinstance(value, list):
                micro.set(name, value[i * step:(i + 1) * step])
            else:
                micro.set(name, value)
        out.append(micro)
    return out


class GraphTrainer(_StepRunner):
    """Static-graph steps: the compiled ``nn.Graph`` runs forward, backward and the update.

    ``graph`` is a training graph (see :class:`libai.engine.graph.GraphBase`) whose call
    returns the model's loss dict. Gradient accumulation, AMP and clipping are configured in
    the graph by the same :class:`OptimizerStep` the Eager path uses.
    """

    def __init__(
        self,
        graph: flow.nn.Graph,
        data_loader: Iterable,
        layout: Optional[dist.ParallelLayout] = None,
        get_batch: Optional[Callable[[Any], Dict[str, Any]]] = None,
    ) -> None:
        super().__init__(data_loader, layout=layout, get_batch=get_batch)
        self.graph = graph

    def forward_module(self) -> Optional[flow.nn.Module]:
        model = getattr(self.graph, "model", None)
        return model.to(flow.nn.Module) if model is not None and hasattr(model, "to") else None

    def run_step(self) -> None:
        start = time.perf_counter()
        batch = self.next_batch()
        data_time = time.perf_counter() - start
        inputs = self.place(batch)
        loss_dict = self.graph(**inputs)
        self.hook_owner.after_backward()
        self.write_metrics(loss_dict, data_time)
