"""Fitting a checkpoint's model state into the model, and the report of what a load did.

:func:`load_model_state` is the one place a read state dict meets the model: LiBai's parameter
names and tensor layouts are translated (:mod:`libai.utils.checkpoint_upstream`), tensors take
the model's placement, a tensor of another shape is refused with a table of them all, and the
keys the model lacks or the checkpoint lacks are logged. :class:`LoadReport` records it, for
logs and for callers that check (``Checkpointer.last_load_report``).
"""
import logging
from dataclasses import dataclass, field
from typing import Any, Dict, List

import oneflow as flow
from tabulate import tabulate

from libai.utils import checkpoint_upstream as upstream
from libai.utils.checkpoint_files import CheckpointError

__all__ = ["LoadReport", "load_model_state"]

# the Checkpointer's log records keep the name they had before this module was split out
logger = logging.getLogger("libai.utils.checkpoint")


@dataclass
class LoadReport:
    """What the last load did, for logs and for callers that want to check."""

    missing_keys: List[str] = field(default_factory=list)
    unexpected_keys: List[str] = field(default_factory=list)
    loaded_parts: List[str] = field(default_factory=list)
    skipped_parts: List[str] = field(default_factory=list)
    absent_parts: List[str] = field(default_factory=list)
    #: the format read: ``"libai"``, ``"libai-upstream"`` (LiBai's Checkpointer) or ``"state_dict"``
    format: str = ""
    #: checkpoint keys loaded under another name (LiBai's name -> the model's)
    renamed_keys: Dict[str, str] = field(default_factory=dict)


def load_model_state(model: flow.nn.Module, state: Dict[str, Any], path: str, report: LoadReport) -> None:
    """Load ``state`` (read from checkpoint ``path``) into ``model``, filling ``report``'s
    renamed, missing and unexpected keys; raise :class:`CheckpointError` when it is not a state
    dict or a tensor's shape differs from the model's."""
    if not isinstance(state, dict):
        raise CheckpointError(f"{path} does not hold a state dict (found "
                              f"{type(state).__name__}); expected model weights")
    own = model.state_dict()
    state, report.renamed_keys = upstream.to_model_names(state, own)
    fitted = upstream.fit_shapes(state, own)
    fitted += upstream.swin_qkv_from_libai(state, own)
    for key in state:
        if key in own:
            state[key] = upstream.like(state[key], own[key])
    if report.renamed_keys or fitted:
        logger.info("%s: %d key(s) loaded under the model's names (LiBai's names differ), "
                    "%d in LiBai's tensor layout rearranged", path, len(report.renamed_keys),
                    len(fitted))
    mismatched = [
        (k, tuple(v.shape), tuple(own[k].shape)) for k, v in state.items()
        if k in own and hasattr(v, "shape") and tuple(v.shape) != tuple(own[k].shape)
    ]
    if mismatched:
        table = tabulate(mismatched, headers=["key", "checkpoint shape", "model shape"])
        raise CheckpointError(
            f"checkpoint {path} does not fit the model: {len(mismatched)} tensor(s) have "
            f"another shape:\n{table}\nBuild the model with the configuration the "
            "checkpoint was trained with, or remove those keys before loading."
        )
    report.missing_keys = sorted(k for k in own if k not in state)
    report.unexpected_keys = sorted(k for k in state if k not in own)
    model.load_state_dict({k: v for k, v in state.items() if k in own}, strict=False)
    if report.missing_keys:
        logger.warning("Model keys not found in %s (left as initialized):\n%s", path,
                       _key_table(report.missing_keys, own, "model shape"))
    if report.unexpected_keys:
        logger.warning("Checkpoint keys the model does not have (ignored) in %s:\n%s", path,
                       _key_table(report.unexpected_keys, state, "checkpoint shape"))


def _key_table(keys: List[str], state: Dict[str, Any], shape_header: str) -> str:
    rows = [(k, tuple(state[k].shape) if hasattr(state[k], "shape") else "-") for k in keys]
    return tabulate(rows, headers=["key", shape_header])
