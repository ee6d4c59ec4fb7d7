"""Build the optimizer of a config: ``build_optimizer(cfg.optim, model)``.

Why a function: the optimizer config cannot name the model's parameters (the model does not
exist when the config is written), so ``optim.params`` is a node of
:func:`~libai.optim.get_default_optimizer_params` whose ``model`` is filled in here.
"""
from collections.abc import Mapping
from typing import Any

import oneflow as flow

from libai.optim.param_groups import (
    expand_param_groups,
    get_default_optimizer_params,
    reduce_param_groups,
)

__all__ = ["build_optimizer", "get_default_optimizer_params", "reduce_param_groups"]

# LiBai's private name for the same function; LiBai code and tests import it from here.
_expand_param_groups = expand_param_groups


def build_optimizer(cfg: Any, model: flow.nn.Module) -> flow.optim.Optimizer:
    """Instantiate the optimizer node ``cfg`` with its ``params`` built for ``model``.

    Args:
        cfg: a LazyCall node of an optimizer class, e.g.
            ``LazyCall(flow.optim.AdamW)(params=LazyCall(get_default_optimizer_params)(
            weight_decay_norm=0.0), lr=1e-4, weight_decay=0.01)``.
        model: the model whose parameters are optimised.

    The config itself is left untouched (the model is given to a copy of the ``params`` node),
    so it can still be saved as YAML afterwards.
    """
    # Imported on use: libai.optim stays importable without the config package's dependencies.
    from libai.config.instantiate import instantiate_with, is_node

    if not isinstance(cfg, Mapping):
        raise TypeError(
            f"build_optimizer needs an optimizer config node (LazyCall(...)(...)), got "
            f"{type(cfg).__name__}"
        )
    if not is_node(cfg):  # a LazyCall node, or a registry node dict(name="AdamW", ...)
        raise ValueError(
            "the optimizer config has no _target_ (nor a registered name=); write it as "
            "optim = LazyCall(flow.optim.AdamW)(params=LazyCall(get_default_optimizer_params)(), lr=...)"
        )
    if "params" not in cfg or cfg["params"] is None:
        raise ValueError(
            "the optimizer config has no 'params'; set "
            "optim.params = LazyCall(get_default_optimizer_params)(...) so that the parameters "
            "of the model can be filled in"
        )
    params = cfg["params"]
    if not hasattr(params, "keys") or not is_node(params):
        raise ValueError(
            f"optim.params must be a LazyCall node (of get_default_optimizer_params or a "
            f"function taking model=...), got {params!r}"
        )
    return instantiate_with(cfg, params=instantiate_with(params, model=model))
