"""The training loop and its step runners, at LiBai's import path ``libai.engine.trainer``.

The pieces live in modules with one job each, and this module re-exports them:

* :class:`HookBase` and :class:`TrainerBase` (the hooks and the loop that calls them):
  :mod:`libai.engine.train_loop`. It knows nothing of configs, models or files.
* :class:`EagerTrainer` and :class:`GraphTrainer` (one ``run_step`` each: fetch a batch, place
  it, run the model or the compiled graph, let an
  :class:`~libai.engine.optimizer_step.OptimizerStep` apply the update), :func:`sum_losses` and
  :func:`call_run_step`: :mod:`libai.engine.step_runners`.

``DefaultTrainer`` (in :mod:`libai.engine.default_trainer`) composes them from a config.
"""
from libai.engine.step_runners import GetBatch  # noqa: F401  (a type name code may import from here)
from libai.engine.step_runners import EagerTrainer, GraphTrainer, call_run_step, sum_losses
from libai.engine.train_loop import HookBase, TrainerBase

__all__ = ["HookBase", "TrainerBase", "EagerTrainer", "GraphTrainer", "sum_losses", "call_run_step"]
