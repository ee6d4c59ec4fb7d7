"""The two step runners: how one training step is made, in Eager or in Graph mode.

:class:`EagerTrainer` and :class:`GraphTrainer` each implement one ``run_step``: fetch a batch,
place it, run the model (or the compiled graph), and let an
:class:`~libai.engine.optimizer_step.OptimizerStep` apply the update. ``DefaultTrainer`` (in
:mod:`libai.engine.default_trainer`) builds one from a config and drives it.

The runners follow LiBai's contract, so a runner written from LiBai's "Training" guide works:
``run_step(get_batch, input_placement_device)`` receives ``DefaultTrainer.get_batch`` (which
turns a loader batch into the model's keyword arguments), and a subclass finds ``model``,
``data_loader``, ``_data_loader_iter``, ``optimizer``, ``grad_acc_steps`` and
``write_metrics(loss_dict, data_time)``. Called without arguments, ``run_step()`` places batches
with the runner's own layout. LiBai's import path for them is :mod:`libai.engine.trainer`.
"""
import contextlib
import inspect
import time
from typing import Any, Callable, Dict, Iterable, Iterator, Mapping, Optional

import oneflow as flow

from libai.engine.batch import check_fields_match, place_batch, split_batch
from libai.engine.optimizer_step import OptimizerStep
from libai.engine.train_loop import TrainerBase
from libai.utils import distributed as dist

__all__ = ["EagerTrainer", "GraphTrainer", "sum_losses", "call_run_step", "GetBatch"]

# ``get_batch(data, input_placement_device, mixup_func) -> model keyword arguments``
GetBatch = Callable[..., Dict[str, Any]]


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
