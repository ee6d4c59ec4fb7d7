"""Learning-rate schedules: warmup followed by a decay (LiBai's curves), valid in eager and graph mode.

See ``docs/optim_and_schedulers.md`` for the formulas and a table of values.
"""
from libai.scheduler.build import build_lr_scheduler
from libai.scheduler.graph_step import set_graph_schedule_step
from libai.scheduler.lr_scheduler import (WarmupCosineAnnealingLR, WarmupCosineLR,
                                          WarmupExponentialLR, WarmupMultiStepLR,
                                          WarmupPolynomialLR, WarmupStepLR)

__all__ = [
    "WarmupCosineLR",
    "WarmupCosineAnnealingLR",
    "WarmupExponentialLR",
    "WarmupMultiStepLR",
    "WarmupPolynomialLR",
    "WarmupStepLR",
    "set_graph_schedule_step",
    "build_lr_scheduler",
]
