"""Command-line overrides: ``train.train_iter=100 optim.lr=1e-3 +train.note='first try'``.

Values are read by hydra-core's override grammar, as upstream LiBai reads them
(:mod:`libai.config.override_grammar`: ``[a,b]`` is a list, ``{a: 1}`` a dict, ``null`` None).
What libai adds is care about where a value goes:

- **Strict keys.** A path must already exist in the config, because a typo that silently adds a
  new key (``train.train_itr=100``) would leave the real setting untouched and the run would look
  fine. The error suggests the closest existing paths. A key is added only on purpose, with
  ``+key=value`` (the key must be new) or ``++key=value`` (set or add), under an existing parent.
- **Kinds are kept.** A value may not silently turn a list or a config node into a string or a
  number, or the reverse (``data_paths=data/a.tsv`` where a list is expected would make the
  dataset open a file per character). Such an override is refused with the key, both kinds and
  the spelling that was probably meant; ``null`` may clear anything, and ``++key=value`` changes
  a kind on purpose.
- **Dicts merge.** ``model={hidden_size: 64, layers: 2}`` sets those fields of the node and keeps
  the others (hydra's and LiBai's semantics), each field checked like an override of its own.
- **Deletion.** ``~key`` removes a key; ``~key=value`` removes it only if it holds that value.
"""
import math
from collections.abc import Mapping
from typing import Any, List, Sequence, Tuple

from omegaconf import DictConfig, ListConfig, OmegaConf

from libai.config.errors import OverrideError, OverrideKeyError
from libai.config.override_grammar import Override, parse_override_text
from libai.config.paths import closest_paths, format_path, iter_paths, join_path, lookup, split_path

__all__ = ["parse_value", "parse_override", "apply_overrides"]

_CONTAINERS = (DictConfig, ListConfig, Mapping, list)
_UNSET = object()  # a '???' value or an interpolation: any kind may fill it


def parse_value(text: str) -> Any:
    """The value ``key=text`` sets (hydra's grammar with libai's extras)."""
    return parse_override_text(f"_={text}").value


def parse_override(override: str) -> Tuple[str, Any, bool]:
    """``"+a.b=1"`` -> ``("a.b", 1, True)``: the path, the value and whether it adds a key."""
    parsed = parse_override_text(override)
    return parsed.key, parsed.value, parsed.action == "add"


def _suggest(cfg: Any, key: str) -> Tuple[str, List[str]]:
    suggestions = closest_paths(key, iter_paths(cfg))
    return (f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""), suggestions


def _container_and_key(cfg: Any, parts: List[str], override: str) -> Tuple[Any, Any]:
    """The container that holds the last component of a path, and that component's key."""
    parent_path = format_path(parts[:-1])
    parent = cfg
    if parent_path:
        found, parent = lookup(cfg, parent_path)
        if found and not isinstance(parent, _CONTAINERS):
            raise OverrideKeyError(
                f"Override {override!r}: '{parent_path}' is a {type(parent).__name__} "
                f"({parent!r}), not a dict or list, so it has no key '{parts[-1]}'. "
                f"To replace the value itself, write '{parent_path}=...'.",
                format_path(parts),
            )
        if not found:
            hint, suggestions = _suggest(cfg, parent_path)
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


def _current(parent: Any, key: Any) -> Any:
    """The value at ``parent[key]`` without resolving it: containers as they are, ``_UNSET``
    for a ``???`` or an interpolation (their kind is not known yet)."""
    if isinstance(parent, (DictConfig, ListConfig)):
        node = parent._get_node(key)
        if isinstance(node, (DictConfig, ListConfig)):
            return None if node._is_none() else node
        raw = node._value()
        if OmegaConf.is_missing(parent, key) or node._is_interpolation():
            return _UNSET
        return raw
    return parent[key]


def _kind(value: Any) -> str:
    if isinstance(value, (DictConfig, Mapping)):
        return "node"
    if isinstance(value, (ListConfig, list, tuple)):
        return "list"
    return "value"


def _describe(value: Any) -> str:
    if isinstance(value, (DictConfig, Mapping)):
        target = value.get("_target_") if "_target_" in value else None
        fields = [str(k) for k in value.keys() if k != "_target_"][:6]
        what = f"a config node building {target}" if target else "a config node"
        return f"{what} (fields: {', '.join(fields) or 'none'})"
    if isinstance(value, (ListConfig, list, tuple)):
        items = OmegaConf.to_container(value) if isinstance(value, ListConfig) else list(value)
        return f"a list ({items!r})"
    return f"a {type(value).__name__} ({value!r})"


def _kind_error(override: Override, key: str, old: Any, new: Any) -> OverrideError:
    old_kind, new_kind = _kind(old), _kind(new)
    head = (f"Override {override.text!r}: '{key}' holds {_describe(old)}; the new value is "
            f"{_describe(new)}, which would change its kind.")
    if old_kind == "list":
        shown = new if not isinstance(new, Mapping) else "..."
        fix = f" For a list write '{key}=[{shown}]' (hydra's list syntax, e.g. [a,b])."
    elif old_kind == "node":
        fix = (f" Set one of its fields ('{key}.<field>=...') or several at once "
               f"('{key}={{field: value}}').")
    else:
        fix = (f" If you meant the text, quote it: \"{key}='...'\"." if new_kind == "list"
               else f" Set its fields one by one only if it is a node: here write '{key}=<value>'.")
    return OverrideError(
        head + fix + f" '{key}=null' clears any key; '++{key}=...' changes its kind on purpose."
    )


def _set(cfg: Any, parent: Any, last: Any, key: str, value: Any, override: Override) -> None:
    """Put ``value`` at ``parent[last]``, keeping kinds and merging dicts into nodes."""
    old = _current(parent, last) if _has(parent, last) else None
    if override.action != "force" and old is not None and old is not _UNSET and value is not None:
        if _kind(old) != _kind(value):
            raise _kind_error(override, key, old, value)
        if _kind(old) == "node":
            for field, item in value.items():
                path = join_path(key, field)
                if field not in old:
                    hint, suggestions = _suggest(old, str(field))
                    hint = hint.replace("Did you mean ", f"Did you mean {key}.")
                    raise OverrideKeyError(
                        f"Override {override.text!r}: '{key}' has no field '{field}'.{hint} "
                        f"To add it on purpose, write '+{path}=...'.",
                        path, [f"{key}.{s}" for s in suggestions],
                    )
                _set(cfg, old, field, path, item, override)
            return
    parent[last] = value


def _delete(parent: Any, last: Any, key: str, override: Override) -> None:
    if override.has_value:
        old = _current(parent, last)
        plain = OmegaConf.to_container(old) if isinstance(old, (DictConfig, ListConfig)) else old
        same = plain == override.value or (
            isinstance(plain, float) and isinstance(override.value, float)
            and math.isnan(plain) and math.isnan(override.value)
        )
        if not same:
            raise OverrideError(
                f"Override {override.text!r}: '{key}' holds {_describe(old)}, not "
                f"{override.value!r}, so it is not deleted; write '~{key}' to delete whatever it holds"
            )
    del parent[last]


def _apply_one(cfg: Any, text: str) -> None:
    override = parse_override_text(text)
    parts = split_path(override.key)
    key = format_path(parts)
    parent, last = _container_and_key(cfg, parts, text)
    exists = _has(parent, last)
    if override.action == "add" and exists:
        raise OverrideError(
            f"Override {text!r}: '{key}' already exists; drop the '+' to change its value"
        )
    if not exists and override.action in ("set", "delete"):
        hint, suggestions = _suggest(cfg, key)
        fix = f" To add a new key on purpose, write '+{text}'." if override.action == "set" else ""
        raise OverrideKeyError(
            f"Override {text!r}: key '{key}' does not exist in the config.{hint}{fix}",
            key,
            suggestions,
        )
    if not exists and isinstance(parent, (ListConfig, list)):
        raise OverrideError(f"Override {text!r}: '+' adds dict keys; lists cannot grow this way")
    if override.action == "delete":
        _delete(parent, last, key, override)
    else:
        _set(cfg, parent, last, key, override.value, override)


def apply_overrides(cfg: Any, overrides: Sequence[str]) -> Any:
    """Apply ``key=value`` overrides to ``cfg`` in order, in place; return ``cfg``.

    Raises:
        OverrideKeyError: an override names a missing path (with suggestions); it is both an
            ``OverrideError`` and a ``KeyError``.
        OverrideError: an override does not parse, uses ``+`` on a key that exists, or would
            change a key's kind (list, config node, plain value).
    """
    if isinstance(overrides, str):
        raise OverrideError(
            f"apply_overrides takes a list of 'key=value' strings, got the string {overrides!r}"
        )
    for override in overrides or ():
        _apply_one(cfg, override)
    return cfg
