"""The training engine: the loop and its step runners (``trainer``), hooks (one per module in
``hooks``), and the config-driven glue (``default``: ``DefaultTrainer``, ``default_setup``,
``main``)."""
from libai.engine import hooks
from libai.engine.default import DefaultTrainer, default_argument_parser, default_setup, launch_main, main
from libai.engine.trainer import EagerTrainer, GraphTrainer, HookBase, TrainerBase

__all__ = [
    "DefaultTrainer",
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
