"""LiBai's ``build_model`` / ``build_graph``: a model or graph from the config's nodes.

``DefaultTrainer`` has its own ``build_model``/``build_graph`` classmethods; these functions are
the stand-alone spellings LiBai projects call. They only instantiate config nodes (the graph
class is whatever ``cfg.graph`` names, usually ``libai.engine.graph.GraphBase``), so this module
imports nothing above the models.
"""
from typing import Any, Dict, Optional

from oneflow import nn

from libai.config import instantiate, instantiate_with, try_get_key
from libai.utils import distributed as dist

__all__ = ["build_model", "build_graph"]


def build_model(cfg: Any) -> nn.Module:
    """Build ``cfg`` (the ``model`` node) under the current layout; no weights are loaded.

    As in LiBai, without a layout (entered, or set with ``setup_dist_util``) a one-process
    layout is set up first, with a warning.
    """
    dist.get_dist_util()
    return instantiate(cfg)


def build_graph(cfg: Any, model: nn.Module, optimizer: Any = None, lr_scheduler: Any = None,
                is_train: bool = False) -> Optional[nn.Graph]:
    """The ``nn.Graph`` of ``cfg.graph.train_graph`` (``is_train``) or ``cfg.graph.eval_graph``,
    with the training techniques of ``cfg.train`` (AMP, accumulation, ZeRO, activation
    checkpointing) passed under LiBai's keyword names."""
    layout = dist.current_layout() if dist.has_layout() else None
    if not is_train:
        return instantiate_with(cfg.graph.eval_graph, model=model, layout=layout,
                                **_newer_oneflow_settings(cfg))
    if optimizer is None or lr_scheduler is None:
        raise ValueError("a training graph needs the optimizer and the lr_scheduler")
    return instantiate_with(
        cfg.graph.train_graph, model=model, optimizer=optimizer, lr_scheduler=lr_scheduler,
        layout=layout,
        fp16=bool(try_get_key(cfg, "train.amp.enabled", default=False)),
        activation_checkpoint=bool(try_get_key(cfg, "train.activation_checkpoint.enabled", default=False)),
        zero_optim=bool(try_get_key(cfg, "train.zero_optimization.enabled", default=False)),
        zero_stage=int(try_get_key(cfg, "train.zero_optimization.stage", default=1)),
        grad_acc_steps=int(try_get_key(cfg, "train.num_accumulation_steps", default=1) or 1),
        **_newer_oneflow_settings(cfg),
    )


def _newer_oneflow_settings(cfg: Any) -> Dict[str, Any]:
    """``graph.global_mode`` / ``graph.auto_parallel`` as LiBai passes them, only when the config
    switches them on (LiBai's configs carry both, disabled): the graph then refuses them, since
    OneFlow 0.9 has neither; graph classes that predate them need not accept the keywords."""
    settings = {
        "global_mode": try_get_key(cfg, "graph.global_mode", default=None),
        "auto_parallel_conf": try_get_key(cfg, "graph.auto_parallel", default=None),
    }
    return {k: v for k, v in settings.items() if _switched_on(v)}


def _switched_on(setting: Any) -> bool:
    """Whether a ``dict(enabled=...)`` setting (or a bare flag) is on."""
    if setting is None:
        return False
    if hasattr(setting, "get"):
        return bool(setting.get("enabled", False))
    return bool(setting)
