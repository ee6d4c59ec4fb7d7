"""Completing a user's config with the defaults, and checking what a run requires.

Defaults live in one place, ``configs/common/*.py``. A user's ``train`` may be partial: a config
that writes ``train.update(dict(evaluation=dict(enabled=True)))`` replaces the whole
``evaluation`` dict, yet still means "the default ``eval_period``, ``evaluator``, ...".
:func:`merge_with_defaults` restores every missing default, recursively, and reports each key
the defaults do not know (a typo, or an old LiBai name) with the nearest known key, so the
trainer can warn once per key instead of silently ignoring it.
"""
import copy
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

from omegaconf import DictConfig

from libai.config.errors import ConfigError, ConfigKeyError
from libai.config.instantiate import TARGET_KEY
from libai.config.loader import CONFIG_FLAGS
from libai.config.paths import closest_paths, iter_paths, join_path, split_path, to_plain

__all__ = [
    "LEGACY_KEYS",
    "REQUIRED_FIELDS",
    "UnknownKey",
    "merge_with_defaults",
    "check_required_fields",
]


# Old LiBai names (relative to ``train``, or a last component) and where the setting lives now.
LEGACY_KEYS: Dict[str, str] = {
    "eval_period": "evaluation.eval_period",
    "topk": "evaluation.evaluator.topk",
    "recompute_grad": "activation_checkpoint.enabled",
}

# The top-level fields of a training config and what each should hold.
REQUIRED_FIELDS: Dict[str, str] = {
    "model": "the model node, e.g. model = LazyCall(MyModel)(hidden_size=64)",
    "train": "the training settings, e.g. from configs.common.train import train",
    "optim": "the optimizer node, e.g. from configs.common.optim import optim",
    "dataloader": "the data: dataloader.train (a loader node) and dataloader.test (a list of "
    "loader nodes), e.g. dataloader = OmegaConf.create(); dataloader.train = LazyCall(...)(...)",
    "graph": "the static-graph settings, e.g. from configs.common.models.graph import graph",
}


@dataclass(frozen=True)
class UnknownKey:
    """A key the defaults do not know, and the known key it most likely meant."""

    key: str
    suggestion: Optional[str] = None
    legacy: bool = False

    def message(self) -> str:
        """The warning the trainer logs for this key."""
        if self.legacy:
            return (
                f"Config key '{self.key}' is an old LiBai name and has no effect; "
                f"set '{self.suggestion}' instead."
            )
        hint = f" Did you mean '{self.suggestion}'?" if self.suggestion else ""
        return f"Config key '{self.key}' is not a known setting and has no effect.{hint}"

    def __str__(self) -> str:
        return self.message()


def _mergeable(value: Any) -> bool:
    """Plain dicts are completed key by key; nodes and other values are taken whole."""
    return isinstance(value, Mapping) and TARGET_KEY not in value


def _merge(user: Mapping, default: Mapping, path: str, unknown: List[str]) -> Dict[Any, Any]:
    merged: Dict[Any, Any] = {}
    for key, default_value in default.items():
        if key not in user:
            merged[key] = copy.deepcopy(default_value)
        elif _mergeable(user[key]) and _mergeable(default_value):
            merged[key] = _merge(user[key], default_value, join_path(path, key), unknown)
        else:
            merged[key] = user[key]
    for key, value in user.items():
        if key not in default:
            unknown.append(join_path(path, key))
            merged[key] = value
    return merged


def _suggest(key: str, path: str, known: Sequence[str]) -> UnknownKey:
    relative = key[len(path) + 1:] if path and key.startswith(path + ".") else key
    leaf = split_path(key)[-1]
    for name in (relative, leaf):
        if name in LEGACY_KEYS:
            return UnknownKey(key, join_path(path, LEGACY_KEYS[name]), legacy=True)
    close = closest_paths(key, known, n=1)
    return UnknownKey(key, close[0] if close else None)


def merge_with_defaults(
    user_node: Any, default_node: Any, path: str = "train"
) -> Tuple[DictConfig, List[UnknownKey]]:
    """The user's node completed with every missing default, and the keys the defaults lack.

    Plain dicts are merged recursively (a user's partial ``evaluation`` dict keeps the other
    default fields); nodes (with ``_target_``), lists and other values from the user replace the
    default whole, since a different target takes different arguments. Unknown keys are kept in
    the result (a custom trainer may read them) and reported with the nearest known key,
    searching nested names too; old LiBai names map to their new place.

    Args:
        user_node: the user's node, e.g. ``cfg.train`` (dict or DictConfig; ``None`` = all defaults).
        default_node: the defaults, e.g. ``get_config("common/train.py").train``.
        path: the node's key path, used in the reported keys (``"train"``).

    Returns:
        ``(merged, unknown_keys)``; ``merged`` is a new DictConfig, neither input is changed.
    """
    user = {} if user_node is None else to_plain(user_node)
    default = to_plain(default_node)
    for name, value in ((path or "the user node", user), ("the defaults", default)):
        if not isinstance(value, Mapping):
            raise ConfigError(f"Cannot merge {name}: expected a dict, got {type(value).__name__}")
    unknown: List[str] = []
    merged = _merge(user, default, path, unknown)
    known = [p for p in iter_paths(default, path) if not p.endswith("." + TARGET_KEY)]
    return DictConfig(merged, flags=CONFIG_FLAGS), [_suggest(k, path, known) for k in unknown]


def check_required_fields(cfg: Any, fields: Sequence[str] = tuple(REQUIRED_FIELDS)) -> None:
    """Fail with one clear message when ``cfg`` lacks any of the top-level ``fields``.

    A field set to ``None`` counts as missing. The message says what each missing field should
    hold, so a newcomer's first incomplete config is fixed without reading the trainer.
    """
    missing = []
    for name in fields:
        present = isinstance(cfg, Mapping) or isinstance(cfg, DictConfig)
        value = cfg.get(name) if present and name in cfg else None
        if value is None:
            missing.append(name)
    if missing:
        lines = [
            f"  {name}: {REQUIRED_FIELDS.get(name, 'required by this program')}" for name in missing
        ]
        raise ConfigKeyError(
            f"The config lacks required top-level field(s) {', '.join(missing)}:\n" + "\n".join(lines),
            missing[0],
        )
