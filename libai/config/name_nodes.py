"""Which registry a ``dict(name=..., **params)`` config node is built from, if any.

Registry-style configs write ``dict(name="MyModel", hidden=64)`` where libai's own configs
write ``LazyCall(MyModel)(hidden=64)``. :func:`libai.config.instantiate` builds both; this
module holds the rule that decides whether a mapping with a ``name`` is such a node and which
registry its name is looked up in. The rule (also in docs/registry_configs.md):

1. Only a mapping **without** ``_target_`` whose ``name`` is a string is a candidate.
2. ``_registry_="MODEL"`` (or ``"model"``, ``"MODEL_REGISTRY"``, a user registry's name) in the
   node picks the registry: the name must be there. ``_registry_=None`` marks the mapping as
   plain data: it is kept as a dict (without the ``_registry_`` key) and never built.
3. Otherwise the node's place in the config decides. Walking its key path from the end,
   list indices ignored, the first key in :data:`SECTION_KEYS` gives the *section* registry
   (``model`` -> MODEL, ``dataloader.train.dataset`` -> DATASET, ``...transforms[2]`` ->
   TRANSFORM, ``train.scheduler`` -> SCHEDULER, ``optim`` -> OPTIMIZER, ...).

   - The node stands *at* the section key (it is ``model``, ``train.scheduler``, one item of
     ``dataset`` or ``transforms``): its name must be in the section registry, else an error
     with the closest names.
   - The node is nested deeper (``model.generator``): the section registry if it has the name,
     otherwise the rule of 4.
4. Anywhere else (or nested, not in the section registry): the node is built when exactly one
   registry knows the name; several -> an error naming them and asking for ``_registry_``;
   none -> the mapping is plain data, kept as a dict (a name close to a registered one is
   logged as a warning, since it is probably a typo).
"""
import difflib
import logging
import re
from collections.abc import Mapping
from typing import Any, List, Optional, Tuple

from omegaconf import DictConfig

from libai.config.errors import InstantiationError
from libai.config.registry import (
    Registry,
    RegistryError,
    find_registry,
    live_registries,
    registries_with,
)

__all__ = [
    "NAME_KEY",
    "REGISTRY_KEY",
    "SECTION_KEYS",
    "is_name_node",
    "resolve_name_node",
    "section_of",
]

logger = logging.getLogger(__name__)

NAME_KEY = "name"
REGISTRY_KEY = "_registry_"

# A key of the config path -> the registry whose objects stand under it.
SECTION_KEYS = {
    "model": "MODEL",
    "dataset": "DATASET",
    "datasets": "DATASET",
    "transform": "TRANSFORM",
    "transforms": "TRANSFORM",
    "pipeline": "TRANSFORM",
    "augmentation": "TRANSFORM",
    "augmentations": "TRANSFORM",
    "loss": "LOSS",
    "losses": "LOSS",
    "criterion": "LOSS",
    "evaluator": "EVALUATOR",
    "evaluators": "EVALUATOR",
    "scheduler": "SCHEDULER",
    "lr_scheduler": "SCHEDULER",
    "optim": "OPTIMIZER",
    "optimizer": "OPTIMIZER",
    "hooks": "HOOK",
    "trainer": "TRAINER",
}

_INDEX = re.compile(r"\[[^\]]*\]")


def _has_name(obj: Any) -> bool:
    return (
        isinstance(obj, (Mapping, DictConfig))
        and "_target_" not in obj
        and NAME_KEY in obj
        and isinstance(obj.get(NAME_KEY), str)
    )


def is_name_node(obj: Any) -> bool:
    """Whether ``obj`` is a ``dict(name=...)`` node wherever it stands: its ``_registry_`` names
    a registry, or some registry knows its name. (Where it stands can make an unregistered
    name an error, see the module docstring; this answers without a place.)"""
    if not _has_name(obj):
        return False
    if REGISTRY_KEY in obj:
        return obj.get(REGISTRY_KEY) not in (None, False)
    return bool(registries_with(obj.get(NAME_KEY)))


def section_of(path: str) -> Optional[Tuple[str, bool]]:
    """``(registry name, at_section_key)`` for a node at ``path``, or None outside sections.

    >>> section_of("dataloader.train.dataset[0]")
    ('DATASET', True)
    >>> section_of("model.generator")
    ('MODEL', False)
    """
    keys = [k for k in _INDEX.sub("", path or "").split(".") if k]
    for depth, key in enumerate(reversed(keys)):
        registry = SECTION_KEYS.get(key)
        if registry is not None:
            return registry, depth == 0
    return None


def resolve_name_node(node: Any, path: str) -> Optional[Tuple[Any, Registry]]:
    """``(callable, registry)`` that builds ``node``, or None when it is plain data.

    Args:
        node: any value; only mappings with a string ``name`` and no ``_target_`` can resolve.
        path: where the node stands in the config (``"model.generator"``), as in errors.

    Raises:
        InstantiationError: the name is unknown where it must be known, ambiguous, or the
            ``_registry_`` is unknown; the message names the path, the candidates and the fix.
    """
    if not _has_name(node):
        return None
    name = node.get(NAME_KEY)
    where = f"'{path}'" if path else "the config root"
    if REGISTRY_KEY in node:
        choice = node.get(REGISTRY_KEY)
        if choice in (None, False):
            return None
        try:
            registry = find_registry(str(choice))
            return registry.get(name), registry
        except RegistryError as error:
            raise InstantiationError(f"Cannot build {where}: {error}", path, name) from error
    section = section_of(path)
    if section is not None:
        registry = find_registry(section[0])
        if name in registry:
            return _get(registry, name, path), registry
        if section[1]:
            raise InstantiationError(
                f"Cannot build {where}: {registry._unknown_message(name)} A dict with a 'name' "
                f"that is plain data, not an object to build, says so with {REGISTRY_KEY}=None.",
                path,
                name,
            )
    found = registries_with(name)
    if len(found) == 1:
        return _get(found[0], name, path), found[0]
    if len(found) > 1:
        names = ", ".join(r.name for r in found)
        raise InstantiationError(
            f"Cannot build {where}: {name!r} is registered in several registries ({names}) and "
            f"its place in the config does not tell which is meant; add "
            f"{REGISTRY_KEY}={found[0].name!r} (or another of them) to the node",
            path,
            name,
        )
    _warn_if_typo(name, path)
    return None


def _get(registry: Registry, name: str, path: str) -> Any:
    try:
        return registry.get(name)
    except Exception as error:  # a declared entry whose module fails to import
        raise InstantiationError(
            f"Cannot build '{path}': {registry.name} registry entry {name!r} failed to load: "
            f"{type(error).__name__}: {error}",
            path,
            name,
        ) from error


_WARNED: set = set()


def _warn_if_typo(name: str, path: str) -> None:
    """Log once when an unresolved ``name`` is close to a registered one."""
    known: List[str] = sorted({n for r in live_registries() for n in r.names()})
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.85)
    if close and (name, path) not in _WARNED:
        _WARNED.add((name, path))
        logger.warning(
            f"'{path or '<root>'}' has name={name!r}, which no registry knows, so it stays a plain "
            f"dict; did you mean {close[0]!r}? (Set {REGISTRY_KEY}=None to silence this.)"
        )
