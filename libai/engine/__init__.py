"""The training engine: the loop (``train_loop``) and its step runners (``step_runners``), both
at LiBai's path ``trainer``; the compiled step (``graph``), what this OneFlow build supports
(``support``), hooks (one per module in ``hooks``), the config-driven trainer
(``default_trainer``, with its pieces from the config in ``builders``, its hook list in
``hook_list``, checkpoint and resume in ``resume``, evaluation in ``eval_wiring``), run set-up
(``setup``) and the command-line program (``cli``). ``default`` is LiBai's import path for
``DefaultTrainer``, ``default_setup`` and the command line."""
from libai.config import default_argument_parser
from libai.engine import hooks
from libai.engine.cli import launch_main, main
from libai.engine.default_trainer import DefaultTrainer, TrainingFailed
from libai.engine.setup import default_setup
from libai.engine.trainer import EagerTrainer, GraphTrainer, HookBase, TrainerBase

__all__ = [
    "DefaultTrainer",
    "TrainingFailed",
    "default_setup",
    "default_argument_parser",
    "main",
    "launch_main",
    "hooks",
    "TrainerBase",
    "HookBase",
    "EagerTrainer",
    "GraphTrainer",
]
