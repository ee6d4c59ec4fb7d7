"""Dotted key paths: the one way a place inside a config is named.

Overrides (``train.amp.enabled=True``), error messages, diffs and unknown-key warnings all speak
in the same paths, so a path printed by one can be pasted into another. A path is dot-separated
keys with list indices either as ``[0]`` or as a ``.0`` component:
``dataloader.test[0].batch_size`` and ``dataloader.test.0.batch_size`` name the same value.
Printed paths always use the ``[0]`` form.
"""
import argparse
import difflib
import re
import types
from collections.abc import Mapping
from typing import Any, Iterable, Iterator, List, Sequence, Tuple

from omegaconf import DictConfig, ListConfig, OmegaConf

from libai.config.errors import ConfigKeyError

__all__ = [
    "join_path",
    "split_path",
    "format_path",
    "iter_paths",
    "closest_paths",
    "lookup",
    "try_get_key",
    "get_key",
    "to_plain",
]

# Objects whose attributes are their fields; other objects' attributes are not config keys.
_NAMESPACES = (argparse.Namespace, types.SimpleNamespace)
_INDEX = re.compile(r"\[(-?\d+)\]")
_ABSENT = object()
_MARGIN = 0.1  # suggestions scoring this much below the best are not shown


def join_path(prefix: str, key: Any) -> str:
    """``prefix`` extended by one dict key or list index (``a.b`` + ``c``, ``a.l`` + ``[0]``)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return f"{prefix}[{key}]"
    return f"{prefix}.{key}" if prefix else str(key)


def split_path(path: str) -> List[str]:
    """The components of ``path``; ``"a.l[0].b"`` gives ``["a", "l", "0", "b"]``."""
    if not isinstance(path, str) or not path.strip():
        raise ConfigKeyError(f"A config key path must be a non-empty string, got {path!r}", str(path))
    parts = _INDEX.sub(r".\1", path.strip()).split(".")
    if any(part == "" for part in parts):
        raise ConfigKeyError(
            f"Malformed config key path {path!r}: empty component "
            f"(write keys like 'train.amp.enabled')",
            path,
        )
    return parts


def format_path(parts: Sequence[str]) -> str:
    """The printed form of split components: ``["a", "l", "0"]`` gives ``"a.l[0]"``."""
    path = ""
    for part in parts:
        path = join_path(path, int(part) if part.lstrip("-").isdigit() else part)
    return path


def to_plain(node: Any) -> Any:
    """``node`` as plain dicts and lists, interpolations left unresolved (``${...}`` strings)."""
    if isinstance(node, (DictConfig, ListConfig)):
        return OmegaConf.to_container(node, resolve=False)
    return node


def iter_paths(node: Any, prefix: str = "") -> Iterator[str]:
    """Every path inside ``node``, containers and leaves alike, parents before children."""
    node = to_plain(node)
    if isinstance(node, Mapping):
        items: Iterable[Tuple[Any, Any]] = node.items()
    elif isinstance(node, (list, tuple)):
        items = enumerate(node)
    else:
        return
    for key, value in items:
        path = join_path(prefix, key)
        yield path
        yield from iter_paths(value, path)


def _leaf(path: str) -> str:
    return split_path(path)[-1] if path else path


def _parent(path: str) -> str:
    parts = split_path(path) if path else []
    return ".".join(str(p) for p in parts[:-1])


def _abbreviates(a: str, b: str) -> bool:
    """Whether one name is the initials of the other's words (``lr``/``learning_rate``,
    ``wd``/``weight_decay``)."""
    a, b = str(a), str(b)
    for short, long in ((a, b), (b, a)):
        words = [w for w in long.split("_") if w]
        if len(words) >= 2 and "_" not in short and short == "".join(w[0] for w in words):
            return True
    return False


def closest_paths(wanted: str, candidates: Iterable[str], n: int = 3, cutoff: float = 0.6) -> List[str]:
    """Up to ``n`` candidate paths most similar to ``wanted``, best first.

    A candidate scores by the better of two comparisons: whole path against whole path (catches
    typos such as ``train.train_itr``) and last component against last component (catches a
    key written at the wrong depth, such as ``train.eval_period`` for
    ``train.evaluation.eval_period``). Paths into list elements are only offered when
    ``wanted`` itself indexes a list, and candidates scoring clearly below the best are dropped.
    """
    wanted_leaf = _leaf(wanted)
    indexed = any(part.lstrip("-").isdigit() for part in split_path(wanted))
    scored = []
    for candidate in set(candidates):
        if not indexed and "[" in candidate:
            continue  # list elements only crowd out the keys a user meant
        if _leaf(candidate).startswith("_") and not wanted_leaf.startswith("_"):
            continue  # ``_target_`` and the like: nobody means them by a plain name
        whole = difflib.SequenceMatcher(None, wanted, candidate).ratio()
        leaf = difflib.SequenceMatcher(None, wanted_leaf, _leaf(candidate)).ratio()
        score = max(whole, leaf * 0.98)  # a whole-path match wins ties
        if _abbreviates(wanted_leaf, _leaf(candidate)) and _parent(wanted) == _parent(candidate):
            score = max(score, 0.95)  # ``optim.learning_rate`` for ``optim.lr``, and back
        if score >= cutoff:
            scored.append((-score, len(candidate), candidate))
    scored.sort()
    best = -scored[0][0] if scored else 0.0
    # Candidates clearly worse than the best one are noise next to it.
    return [candidate for score, _, candidate in scored[:n] if -score >= best - _MARGIN]


def _child(node: Any, part: str) -> Any:
    """The child ``part`` of ``node``, or ``_ABSENT``."""
    if isinstance(node, (Mapping, DictConfig)):
        key: Any = part
        if part not in node and part.lstrip("-").isdigit() and int(part) in node:
            key = int(part)
        if key not in node:
            return _ABSENT
        if isinstance(node, DictConfig) and OmegaConf.is_missing(node, key):
            return _ABSENT
        return node[key]
    if isinstance(node, (Sequence, ListConfig)) and not isinstance(node, (str, bytes)):
        if not part.lstrip("-").isdigit():
            return _ABSENT
        index = int(part)
        return node[index] if -len(node) <= index < len(node) else _ABSENT
    if isinstance(node, _NAMESPACES) and part.isidentifier() and hasattr(node, part):
        return getattr(node, part)
    return _ABSENT


def lookup(node: Any, path: str) -> Tuple[bool, Any]:
    """``(True, value)`` when ``path`` exists in ``node``, else ``(False, None)``.

    Works over DictConfig/ListConfig, plain dicts and lists, and objects with attributes (an
    ``argparse.Namespace`` or ``SimpleNamespace``). A ``???`` (missing) omegaconf value counts
    as absent.
    """
    for part in split_path(path):
        node = _child(node, part)
        if node is _ABSENT:
            return False, None
    return True, node


def try_get_key(cfg: Any, key: str, default: Any = None) -> Any:
    """The value at ``key`` in ``cfg``, or ``default`` when it is absent.

    Lenient on purpose: use it for genuinely optional settings. For a key the program needs,
    use :func:`get_key`, which fails with a suggestion instead of hiding a typo.
    """
    found, value = lookup(cfg, key)
    return value if found else default


def get_key(cfg: Any, key: str) -> Any:
    """The value at ``key`` in ``cfg``; a missing key raises :class:`ConfigKeyError`.

    The error names the key and the closest existing keys, so a misspelt path is fixed at once.
    """
    found, value = lookup(cfg, key)
    if found:
        return value
    suggestions = closest_paths(key, iter_paths(cfg))
    hint = f" Did you mean {' or '.join(suggestions)}?" if suggestions else ""
    raise ConfigKeyError(f"Config key '{key}' does not exist.{hint}", key, suggestions)
