"""Optimizer building: parameter groups (weight decay, overrides, clipping) and the factory.

See ``docs/optim_and_schedulers.md``.
"""
from libai.optim.build import build_optimizer
from libai.optim.param_groups import (
    expand_param_groups,
    get_default_optimizer_params,
    is_norm_module,
    reduce_param_groups,
)

__all__ = [
    "build_optimizer",
    "get_default_optimizer_params",
    "expand_param_groups",
    "reduce_param_groups",
    "is_norm_module",
]
