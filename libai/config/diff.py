"""What one config changes against another: ``LazyConfig.diff(defaults, cfg)``.

Set-up logs this so a run's log says exactly which settings the user's config and overrides
changed, instead of a wall of 150 values of which 3 matter.
"""
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, List

from libai.config.paths import join_path, to_plain
from libai.config.targets import target_to_string

__all__ = ["ABSENT", "ConfigChange", "diff_configs", "format_diff"]


class _Absent:
    """The value of a key on the side of a diff that does not have it."""

    def __repr__(self) -> str:
        return "<absent>"


ABSENT = _Absent()


@dataclass(frozen=True)
class ConfigChange:
    """One difference: ``key`` (a dotted path) went from ``old`` to ``new``.

    ``old`` is :data:`ABSENT` for an added key and ``new`` is :data:`ABSENT` for a removed one.
    """

    key: str
    old: Any
    new: Any

    @property
    def kind(self) -> str:
        """``"added"``, ``"removed"`` or ``"changed"``."""
        if self.old is ABSENT:
            return "added"
        return "removed" if self.new is ABSENT else "changed"

    def __str__(self) -> str:
        if self.kind == "added":
            return f"{self.key}: added {self.new!r}"
        if self.kind == "removed":
            return f"{self.key}: removed (was {self.old!r})"
        return f"{self.key}: {self.old!r} -> {self.new!r}"


def _comparable(value: Any) -> Any:
    """Classes and functions compare by import path, so ``Cls`` equals ``"pkg.mod.Cls"``."""
    if callable(value) and not isinstance(value, str):
        return target_to_string(value) or value
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, bool) != isinstance(b, bool):
        return False  # True == 1 in Python, but a flag turned into a number is a change
    a, b = _comparable(a), _comparable(b)
    try:
        return bool(a == b)
    except Exception:  # objects whose == is unusual (arrays): fall back to identity
        return a is b


def _walk(a: Any, b: Any, path: str, out: List[ConfigChange]) -> None:
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in a:
            if key in b:
                _walk(a[key], b[key], join_path(path, key), out)
            else:
                out.append(ConfigChange(join_path(path, key), a[key], ABSENT))
        for key in b:
            if key not in a:
                out.append(ConfigChange(join_path(path, key), ABSENT, b[key]))
    elif isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b)):
            _walk(x, y, join_path(path, index), out)
    elif not _same(a, b):
        out.append(ConfigChange(path, a, b))


def diff_configs(old: Any, new: Any) -> List[ConfigChange]:
    """The differences from ``old`` to ``new``, in key order (``old``'s keys, then added ones).

    Dicts are compared key by key and equal-length lists element by element; a list whose length
    changed is reported as one change. Interpolations are compared as written (``${...}``).
    """
    changes: List[ConfigChange] = []
    _walk(to_plain(old), to_plain(new), "", changes)
    return changes


def format_diff(changes: List[ConfigChange]) -> str:
    """The changes one per line, for a log; ``"(no changes)"`` when there are none."""
    return "\n".join(str(change) for change in changes) if changes else "(no changes)"
