"""Build the scheduler of a config: ``build_lr_scheduler(cfg.train.scheduler, optimizer)``.

Why a function: the scheduler config cannot name the optimizer (it does not exist when the
config is written), so it is handed in here, as LiBai's function of the same name does. Unlike
LiBai's, the config node is left untouched (the optimizer goes to a copy), so it can still be
saved as YAML afterwards.
"""
from typing import Any

import oneflow as flow

from libai.config.instantiate import instantiate_with, is_node

__all__ = ["build_lr_scheduler"]


def build_lr_scheduler(cfg: Any, optimizer: flow.optim.Optimizer, **filled: Any) -> Any:
    """Instantiate the scheduler node ``cfg`` for ``optimizer``.

    Args:
        cfg: a LazyCall node of a scheduler, e.g. ``LazyCall(WarmupCosineLR)(max_iter=1000,
            warmup_factor=0.001, warmup_iter=10)``.
        optimizer: the optimizer whose learning rates it schedules.
        filled: further arguments decided at run time (``max_iter``, ``warmup_iter``); they
            replace the node's values.
    """
    if not is_node(cfg):
        raise TypeError(
            f"build_lr_scheduler needs a scheduler config node (LazyCall(WarmupCosineLR)(...)), "
            f"got {type(cfg).__name__}"
        )
    return instantiate_with(cfg, optimizer=optimizer, **filled)
