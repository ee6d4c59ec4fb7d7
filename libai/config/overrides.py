"""Command-line overrides: ``train.train_iter=100 optim.lr=1e-3 +train.note='first try'``.

Overrides are strict. A path must already exist in the config, because a typo that silently
adds a new key (``train.train_itr=100``) would leave the real setting untouched and the run
would look fine. The error suggests the closest existing paths. A new key is added only on
purpose, with a leading ``+``, and only under an existing parent.

Values are read as Python literals (``1``, ``1e-4``, ``True``, ``None``, ``[1, 2]``, ``(0.9, 0.99)``,
``{'a': 1}``, ``'text'``); anything that does not parse stays the string it is (``./output``).
The YAML/JSON spellings ``true``, ``false`` and ``null`` are also understood, because
``enabled=false`` read as the (truthy!) string ``"false"`` would silently do the opposite.
"""
import ast
from collections.abc import Mapping
from typing import Any, List, Sequence, Tuple

from omegaconf import DictConfig, ListConfig

from libai.config.errors import OverrideError, OverrideKeyError
from libai.config.paths import closest_paths, format_path, iter_paths, lookup, split_path

__all__ = ["parse_value", "parse_override", "apply_overrides"]

_WORDS = {"true": True, "false": False, "null": None}


def parse_value(text: str) -> Any:
    """``text`` as a Python literal, or unchanged when it is not one."""
    stripped = text.strip()
    if stripped.lower() in _WORDS:
        return _WORDS[stripped.lower()]
    try:
        return ast.literal_eval(stripped)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return text


def parse_override(override: str) -> Tuple[str, Any, bool]:
    """``"+a.b=1"`` -> ``("a.b", 1, True)``: the path, the value and whether it adds a key."""
    if not isinstance(override, str) or "=" not in override:
        raise OverrideError(
            f"Override {override!r} is not of the form key=value (e.g. train.train_iter=100)"
        )
    key, text = override.split("=", 1)
    key = key.strip()
    adding = key.startswith("+")
    if adding:
        key = key[1:]
    if not key:
        raise OverrideError(f"Override {override!r} has no key before '='")
    return key, parse_value(text), adding


def _container_and_key(cfg: Any, parts: List[str], override: str) -> Tuple[Any, Any]:
    """The container that holds the last component of a path, and that component's key."""
    parent_path = format_path(parts[:-1])
    parent = cfg
    if parent_path:
        found, parent = lookup(cfg, parent_path)
        if found and not isinstance(parent, (DictConfig, ListConfig, Mapping, list)):
            raise OverrideKeyError(
                f"Override {override!r}: '{parent_path}' is a {type(parent).__name__} "
                f"({parent!r}), not a dict or list, so it has no key '{parts[-1]}'. "
                f"To replace the value itself, write '{parent_path}=...'.",
                format_path(parts),
            )
        if not found:
            suggestions = closest_paths(parent_path, iter_paths(cfg))
            hint = f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""
            raise OverrideKeyError(
                f"Override {override!r}: '{parent_path}' is not a dict or list in the config.{hint}",
                format_path(parts),
                suggestions,
            )
    last: Any = parts[-1]
    if isinstance(parent, (ListConfig, list)):
        if not last.lstrip("-").isdigit():
            raise OverrideError(
                f"Override {override!r}: '{parent_path}' is a list; index it with a number"
            )
        last = int(last)
    elif last not in parent and last.lstrip("-").isdigit() and int(last) in parent:
        last = int(last)
    return parent, last


def _has(parent: Any, key: Any) -> bool:
    """Whether ``parent`` has ``key``; a ``???`` (missing) omegaconf value counts as present,
    since filling it in is exactly what an override is for."""
    if isinstance(parent, (ListConfig, list)):
        return -len(parent) <= key < len(parent)
    return key in (parent.keys() if isinstance(parent, DictConfig) else parent)


def _apply_one(cfg: Any, override: str) -> None:
    key, value, adding = parse_override(override)
    parts = split_path(key)
    key = format_path(parts)
    parent, last = _container_and_key(cfg, parts, override)
    exists = _has(parent, last)
    if adding and exists:
        raise OverrideError(
            f"Override {override!r}: '{key}' already exists; drop the '+' to change its value"
        )
    if not adding and not exists:
        suggestions = closest_paths(key, iter_paths(cfg))
        hint = f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""
        raise OverrideKeyError(
            f"Override {override!r}: key '{key}' does not exist in the config.{hint} "
            f"To add a new key on purpose, write '+{override}'.",
            key,
            suggestions,
        )
    if adding and isinstance(parent, (ListConfig, list)):
        raise OverrideError(f"Override {override!r}: '+' adds dict keys; lists cannot grow this way")
    parent[last] = value


def apply_overrides(cfg: Any, overrides: Sequence[str]) -> Any:
    """Apply ``key=value`` overrides to ``cfg`` in order, in place; return ``cfg``.

    Raises:
        OverrideKeyError: an override names a missing path (with suggestions); it is both an
            ``OverrideError`` and a ``KeyError``.
        OverrideError: an override is malformed, or uses ``+`` on a key that exists.
    """
    if isinstance(overrides, str):
        raise OverrideError(
            f"apply_overrides takes a list of 'key=value' strings, got the string {overrides!r}"
        )
    for override in overrides or ():
        _apply_one(cfg, override)
    return cfg

