"""Training hooks, one per module. Their order in a trainer is the order they are registered
(``DefaultTrainer.build_hooks`` declares it; ``register_hooks(..., before=/after=)`` places
user hooks by name)."""
from libai.engine.hooks.best_checkpointer import BestCheckpointer
from libai.engine.hooks.early_stopping import EarlyStopping
from libai.engine.hooks.ema import EMAHook
from libai.engine.hooks.eval_hook import EvalHook
from libai.engine.hooks.iteration_timer import IterationTimer
from libai.engine.hooks.live_plots import LivePlots
from libai.engine.hooks.lr_scheduler import LRScheduler
from libai.engine.hooks.model_summary import ModelSummaryHook
from libai.engine.hooks.nan_check import NaNLossHook
from libai.engine.hooks.periodic_checkpointer import PeriodicCheckpointer
from libai.engine.hooks.periodic_writer import PeriodicWriter
from libai.engine.hooks.preemption import PreemptionHandler
from libai.engine.hooks.tensorboard_visuals import TensorboardVisuals
from libai.engine.trainer import HookBase

__all__ = [
    "HookBase",
    "IterationTimer",
    "LRScheduler",
    "PeriodicCheckpointer",
    "BestCheckpointer",
    "EvalHook",
    "EarlyStopping",
    "PeriodicWriter",
    "PreemptionHandler",
    "EMAHook",
    "NaNLossHook",
    "TensorboardVisuals",
    "LivePlots",
    "ModelSummaryHook",
]
