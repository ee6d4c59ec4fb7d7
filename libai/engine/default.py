"""LiBai's import path for the config-driven engine: ``from libai.engine.default import ...``.

The pieces live in modules with one job each, and this module only re-exports them:

* :class:`DefaultTrainer` (and :class:`TrainingFailed`): :mod:`libai.engine.default_trainer`;
* :func:`default_setup`: :mod:`libai.engine.setup`;
* :func:`main`, :func:`launch_main`, :func:`evaluate_only`, :func:`exit_now_on_failure`: the
  command-line program, :mod:`libai.engine.cli`;
* :func:`default_argument_parser`: :mod:`libai.config`;
* ``_check_batch_size`` (LiBai's private name, used by its projects):
  :func:`libai.engine.train_plan.check_batch_size`.
"""
from libai.config import default_argument_parser
from libai.engine.cli import evaluate_only, exit_now_on_failure, launch_main, main
from libai.engine.default_trainer import DefaultTrainer, TrainingFailed
from libai.engine.setup import default_setup
from libai.engine.train_plan import check_batch_size as _check_batch_size  # noqa: F401

__all__ = [
    "DefaultTrainer",
    "TrainingFailed",
    "default_argument_parser",
    "default_setup",
    "evaluate_only",
    "exit_now_on_failure",
    "launch_main",
    "main",
]
